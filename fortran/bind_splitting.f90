! f2py bindings of the compiled splitting loop (module field_splitting), part of frb._core.
! Layout as in bind_core.f90: the attitude travels TRANSPOSED, so that the Fortran arrays
! m_out(3, nk) and qt_out(3, 3, nk) are, seen through .T from numpy, C-ordered arrays of shapes
! (nk, 3) and (nk, 3, 3) holding m and Q (no copies).

! Steps k_first+1 .. k_last of a run of nsteps steps of the compiled splitting loop, in place
! (m, qt the current state): the state after step k goes to m_out(:, j), qt_out(:, :, j),
! j = save_slot(k, nsteps, save_every) of parallel, when j > 0 (field_splitting.split_segment),
! so a run in segments gives the states of one loop bit for bit.
subroutine split_field_segment(nf, nk, m, qt, inertia, u0, kinds, tau, quadrature, nsteps, &
                               save_every, k_first, k_last, m_out, qt_out)
   use iso_c_binding, only: c_double, c_int
   use field_splitting, only: split_segment
   implicit none
   integer(c_int), intent(in) :: nf, nk, quadrature, nsteps, save_every, k_first, k_last
   integer(c_int), intent(in) :: kinds(nf)
   real(c_double), intent(in) :: inertia(3), u0(3), tau(nf)
   real(c_double), intent(inout) :: m(3), qt(3, 3), m_out(3, nk), qt_out(3, 3, nk)
   !f2py threadsafe
   !f2py integer(c_int) intent(hide), depend(tau) :: nf = len(tau)
   !f2py integer(c_int) intent(hide), depend(m_out) :: nk = shape(m_out, 1)

   call split_segment(m, qt, inertia, u0, kinds, tau, quadrature, nsteps, save_every, k_first, &
                      k_last, m_out, qt_out)
end subroutine split_field_segment
