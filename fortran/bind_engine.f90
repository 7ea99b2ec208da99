! f2py binding of the time loop of frb.integrate (module engine), extension frb._engine.
! Its signature file is fortran/engine.pyf (hand-written: f2py reads call-back signatures
! reliably only from a signature file). Layout: numpy C-ordered (n, 3), (n, 4), (n, nws) arrays
! travel as their .T views (Fortran (3, n), (4, n), (nws, n)); the kept states (3, n, nk),
! (4, n, nk) are, seen through .T, C-ordered (nk, n, 3), (nk, n, 4) arrays. The attitudes have
! natt = 4 reals (quaternions) or 9 (matrices (n, 3, 3) C-ordered, seen as Q^T column by column;
! the exact-flow splittings only). Everything is
! updated in place (see engine_run): Python enters a run in segments of steps and bodies, from
! the initial state m0, q0, the state carried between segments in m, q, ws.
subroutine engine_integrate(family, variant, quadrature, nf, kinds, frac, nt, tkinds, tpar, tuser, &
                            nb, tbody, tbody_term, n, nsteps, save_every, chunk, threads, b_first, b_last, k_first, k_last, &
                            nk, h, t0, natt, m0, q0, m, q, ws, inertia, m_out, q_out, status, &
                            fail_step, fail_body, cb)
   use kinds, only: dp
   use step_interface, only: method_t, max_flows, nws
   use torques, only: torque_t, torque_none, torque_damping, torque_rotor, torque_attitude_control, &
                      max_torque_terms, torque_term_reals, torque_body_reals
   use engine, only: engine_run
   implicit none
   integer, intent(in) :: family, variant, quadrature, nf, nt, tuser, nb, tbody_term
   integer, intent(in) :: kinds(nf), tkinds(nt)
   real(dp), intent(in) :: frac(nf), tpar(torque_term_reals, nt)
   ! the per-body parameters of term tbody_term (0: none)
   real(dp), intent(in) :: tbody(torque_body_reals, nb)
   integer, intent(in) :: n, nsteps, save_every, chunk, threads, b_first, b_last, k_first, k_last, nk, natt
   real(dp), intent(in) :: h, t0, m0(3, n), q0(natt, n), inertia(3, n)
   ! the state carried between segments, and the kept states
   real(dp), intent(inout) :: m(3, n), q(natt, n), ws(nws, n), m_out(3, n, nk), q_out(natt, n, nk)
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
   ! the torque: the built-in terms (none when the first kind is torque_none), a Python torque
   ! (tuser: 0 none, 1 T(t, Q), 2 T(t, Q, m)), the per-body parameters of term tbody_term
   tq%nterms = min(nt, max_torque_terms)
   if (tkinds(1) == torque_none) tq%nterms = 0
   tq%kinds(1:tq%nterms) = tkinds(1:tq%nterms)
   tq%par(:, 1:tq%nterms) = tpar(:, 1:tq%nterms)
   tq%user = tuser
   tq%momentum = tuser == 2 .or. any(tq%kinds(1:tq%nterms) == torque_damping) .or. &
                 any(tq%kinds(1:tq%nterms) == torque_rotor) .or. &
                 any(tq%kinds(1:tq%nterms) == torque_attitude_control)
   if (tbody_term >= 1 .and. tbody_term <= tq%nterms .and. nb >= n) tq%body_term = tbody_term
   call engine_run(meth, tq, n, max(1, b_first), min(n, b_last), k_first, min(k_last, nsteps), &
                   nsteps, save_every, max(1, chunk), threads, h, t0, natt, m0, q0, m, q, ws, inertia, nk, &
                   m_out, q_out, status, fail_step, fail_body, cb, tbody)
end subroutine engine_integrate

!> engine_integrate for a whole run in one call (bodies 1..n, steps 1..nsteps from t0) that
!> calls no Python: a built-in torque, or a run of no step. No call-back to set up and no state
!> between segments to pass (it is allocated here and never touched by a run in one segment), so
!> a short run costs less.
subroutine engine_integrate_builtin(family, variant, quadrature, nf, kinds, frac, nt, tkinds, tpar, &
                                    nb, tbody, tbody_term, n, nsteps, save_every, chunk, threads, nk, h, t0, natt, m0, q0, &
                                    inertia, m_out, q_out, status, fail_step, fail_body)
   use kinds, only: dp
   use step_interface, only: nws
   use torques, only: torque_term_reals, torque_body_reals
   implicit none
   integer, intent(in) :: family, variant, quadrature, nf, nt, nb, tbody_term
   integer, intent(in) :: kinds(nf), tkinds(nt)
   real(dp), intent(in) :: frac(nf), tpar(torque_term_reals, nt), tbody(torque_body_reals, nb)
   integer, intent(in) :: n, nsteps, save_every, chunk, threads, nk, natt
   real(dp), intent(in) :: h, t0, m0(3, n), q0(natt, n), inertia(3, n)
   real(dp), intent(inout) :: m_out(3, n, nk), q_out(natt, n, nk)
   integer, intent(out) :: status, fail_step, fail_body
   real(dp), allocatable :: m(:, :), q(:, :), ws(:, :)

   allocate (m(3, n), q(natt, n), ws(nws, n))
   call engine_integrate(family, variant, quadrature, nf, kinds, frac, nt, tkinds, tpar, 0, nb, tbody, &
                         tbody_term, n, nsteps, &
                         save_every, chunk, threads, 1, n, 0, nsteps, nk, h, t0, natt, m0, q0, &
                         m, q, ws, inertia, m_out, q_out, status, fail_step, fail_body, no_user_torque)

contains

   !> The call-back of a run without a user torque (never called; torques' user_torque_cb).
   subroutine no_user_torque(nu, t, step, qt, m, tb)
      integer, intent(in) :: nu, step; real(dp), intent(in) :: t, qt(3, 3, nu), m(3, nu)
      real(dp), intent(inout) :: tb(3, nu)
   end subroutine no_user_torque
end subroutine engine_integrate_builtin

!> The size nws of the per-body workspace ws of engine_integrate.
subroutine engine_workspace(nws_out)
   use step_interface, only: nws
   implicit none
   integer, intent(out) :: nws_out

   nws_out = nws
end subroutine engine_workspace
