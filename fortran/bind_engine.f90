! f2py binding of the time loop of frb.integrate (module frb_engine), extension frb._engine.
! Its signature file is fortran/engine.pyf (hand-written: f2py reads call-back signatures
! reliably only from a signature file). Layout: numpy C-ordered (n, 3), (n, 4) arrays travel as
! their .T views (Fortran (3, n), (4, n)); outputs (3, n, nk), (4, n, nk) are, seen through .T,
! C-ordered (nk, n, 3), (nk, n, 4) arrays.
subroutine engine_integrate(family, variant, quadrature, nf, kinds, frac, tkind, tpar, &
                            n, nsteps, save_every, chunk, nk, h, t0, m0, q0, inertia, &
                            m_out, q_out, t_out, status, fail_step, fail_body, cb)
   use frb_kinds, only: dp
   use frb_step_interface, only: method_t, max_flows
   use frb_torques, only: torque_t
   use frb_engine, only: engine_run
   implicit none
   integer, intent(in) :: family, variant, quadrature, nf, tkind
   integer, intent(in) :: kinds(nf)
   real(dp), intent(in) :: frac(nf), tpar(7)
   integer, intent(in) :: n, nsteps, save_every, chunk, nk
   real(dp), intent(in) :: h, t0, m0(3, n), q0(4, n), inertia(3, n)
   real(dp), intent(out) :: m_out(3, n, nk), q_out(4, n, nk), t_out(nk)
   integer, intent(out) :: status, fail_step, fail_body
   external :: cb
   type(method_t) :: meth
   type(torque_t) :: tq

   meth%family = family
   meth%variant = variant
   meth%quadrature = quadrature
   meth%nf = min(nf, max_flows)
   meth%kinds(1:meth%nf) = kinds(1:meth%nf)
   meth%frac(1:meth%nf) = frac(1:meth%nf)
   tq%kind = tkind
   tq%u0 = tpar(1:3)
   tq%c = tpar(4:6)
   tq%rate = tpar(7)
   call engine_run(meth, tq, n, nsteps, save_every, max(1, chunk), h, t0, m0, q0, inertia, nk, &
                   m_out, q_out, t_out, status, fail_step, fail_body, cb)
end subroutine engine_integrate
