! f2py bindings of the preprocessed discrete Moser-Veselov method (module frb_dmv).
! Same batched layout as quat_step_batch (bind_core.f90): m (3, n), q (4, n), h (nh),
! inertia (3, ni), with ni, nh either 1 (shared by all bodies) or n.
! An order other than 2, 4, 6, 8, or a step with no solution of the DMV equation, gives NaN.

subroutine dmv_step_batch(n, ni, nh, m, q, h, inertia, order, m_out, q_out)
   use iso_c_binding, only: c_double, c_int
   use frb_dmv, only: dmv_step_many
   implicit none
   integer(c_int), intent(in) :: n, ni, nh, order
   real(c_double), intent(in) :: m(3, n), q(4, n), h(nh), inertia(3, ni)
   real(c_double), intent(out) :: m_out(3, n), q_out(4, n)
   !f2py integer(c_int) intent(hide), depend(m) :: n = shape(m, 1)
   !f2py integer(c_int) intent(hide), depend(inertia) :: ni = shape(inertia, 1)
   !f2py integer(c_int) intent(hide), depend(h) :: nh = len(h)

   call dmv_step_many(n, ni, nh, m, q, h, inertia, order, m_out, q_out)
end subroutine dmv_step_batch

subroutine dmv_integrate_batch(n, ni, nh, m, q, h, inertia, order, nsteps, m_out, q_out)
   use iso_c_binding, only: c_double, c_int
   use frb_dmv, only: dmv_integrate_many
   implicit none
   integer(c_int), intent(in) :: n, ni, nh, order, nsteps
   real(c_double), intent(in) :: m(3, n), q(4, n), h(nh), inertia(3, ni)
   real(c_double), intent(out) :: m_out(3, n), q_out(4, n)
   !f2py integer(c_int) intent(hide), depend(m) :: n = shape(m, 1)
   !f2py integer(c_int) intent(hide), depend(inertia) :: ni = shape(inertia, 1)
   !f2py integer(c_int) intent(hide), depend(h) :: nh = len(h)

   call dmv_integrate_many(n, ni, nh, m, q, h, inertia, order, nsteps, m_out, q_out)
end subroutine dmv_integrate_batch

subroutine dmv_step_single(m, q, h, inertia, order, m_out, q_out)
   ! One body through the scalar per-body step dmv_step_one (for tests).
   use iso_c_binding, only: c_double, c_int
   use frb_dmv, only: dmv_step_one
   implicit none
   integer(c_int), intent(in) :: order
   real(c_double), intent(in) :: m(3), q(4), h, inertia(3)
   real(c_double), intent(out) :: m_out(3), q_out(4)

   call dmv_step_one(m, q, h, inertia, order, m_out, q_out)
end subroutine dmv_step_single

!> The public path of frb.dmv_step / frb.dmv_integrate: the input checks of quat_step_batch
!> (frb_checks; info, where as there) in the compiled loop, then the steps; nfail counts the
!> bodies whose DMV equation had no solution (NaN results).
subroutine dmv_integrate_checked(n, ni, nh, m, q, h, inertia, order, nsteps, tol, m_out, q_out, &
                                 info, where, nfail)
   use iso_c_binding, only: c_double, c_int
   use, intrinsic :: ieee_arithmetic, only: ieee_is_finite
   use frb_dmv, only: dmv_integrate_many
   use frb_checks, only: check_body_quat, input_ok
   implicit none
   integer(c_int), intent(in) :: n, ni, nh, order, nsteps
   real(c_double), intent(in) :: m(3, n), q(4, n), h(nh), inertia(3, ni), tol
   real(c_double), intent(out) :: m_out(3, n), q_out(4, n)
   integer(c_int), intent(out) :: info, where, nfail
   !f2py integer(c_int) intent(hide), depend(m) :: n = shape(m, 1)
   !f2py integer(c_int) intent(hide), depend(inertia) :: ni = shape(inertia, 1)
   !f2py integer(c_int) intent(hide), depend(h) :: nh = len(h)
   !f2py threadsafe
   integer :: b

   where = -1
   nfail = 0
   do b = 1, n
      info = check_body_quat(m(:, b), h(min(b, nh)), inertia(:, min(b, ni)), q(:, b), tol)
      if (info /= input_ok) then
         where = b - 1
         m_out = 0; q_out = 0
         return
      end if
   end do
   info = input_ok
   call dmv_integrate_many(n, ni, nh, m, q, h, inertia, order, nsteps, m_out, q_out)
   do b = 1, n
      if (.not. (all(ieee_is_finite(m_out(:, b))) .and. all(ieee_is_finite(q_out(:, b))))) nfail = nfail + 1
   end do
end subroutine dmv_integrate_checked

!> One body (shapes (3,) and (4,), h a scalar): the lean path of frb.dmv_step / frb.dmv_integrate,
!> the checks and results of dmv_integrate_checked for a batch of one; nfail is 1 when the DMV
!> equation had no solution (NaN results), else 0.
subroutine dmv_integrate_single(m, q, h, inertia, order, nsteps, tol, m_out, q_out, info, nfail)
   use iso_c_binding, only: c_double, c_int
   use, intrinsic :: ieee_arithmetic, only: ieee_is_finite
   use frb_dmv, only: dmv_integrate_many
   use frb_checks, only: check_body_quat, input_ok
   implicit none
   integer(c_int), intent(in) :: order, nsteps
   real(c_double), intent(in) :: m(3), q(4), h, inertia(3), tol
   real(c_double), intent(out) :: m_out(3), q_out(4)
   integer(c_int), intent(out) :: info, nfail
   real(c_double) :: hs(1)

   nfail = 0
   info = check_body_quat(m, h, inertia, q, tol)
   if (info /= input_ok) then
      m_out = 0; q_out = 0
      return
   end if
   hs(1) = h
   call dmv_integrate_many(1, 1, 1, m, q, hs, inertia, order, nsteps, m_out, q_out)
   if (.not. (all(ieee_is_finite(m_out)) .and. all(ieee_is_finite(q_out)))) nfail = 1
end subroutine dmv_integrate_single
