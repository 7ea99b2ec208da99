! f2py bindings of the compiled splitting loop (module frb_splitting), part of frb._core.
! Layout as in bind_core.f90: the attitude travels TRANSPOSED, so that the Fortran outputs
! m_out(3, nsteps+1) and qt_out(3, 3, nsteps+1) are, seen through .T from numpy, C-ordered arrays
! of shapes (nsteps+1, 3) and (nsteps+1, 3, 3) holding m and Q (no copies).

subroutine split_field_trajectory(nf, nsteps, m0, qt0, inertia, u0, h, kinds, tau, quadrature, &
                                  m_out, qt_out, t_out)
   use iso_c_binding, only: c_double, c_int
   use frb_splitting, only: split_trajectory
   implicit none
   integer(c_int), intent(in) :: nf, nsteps, quadrature
   integer(c_int), intent(in) :: kinds(nf)
   real(c_double), intent(in) :: m0(3), qt0(3, 3), inertia(3), u0(3), h, tau(nf)
   real(c_double), intent(out) :: m_out(3, nsteps + 1), qt_out(3, 3, nsteps + 1), t_out(nsteps + 1)
   !f2py threadsafe
   !f2py integer(c_int) intent(hide), depend(tau) :: nf = len(tau)
   !f2py integer(c_int) intent(in), check(nsteps >= 0) :: nsteps

   call split_trajectory(m0, qt0, inertia, u0, h, kinds, tau, quadrature, m_out, qt_out, t_out)
end subroutine split_field_trajectory
