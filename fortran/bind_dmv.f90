! f2py bindings of the preprocessed discrete Moser-Veselov method (module moser_veselov).
! Same batched layout as quat_step_batch (bind_core.f90): m (3, n), q (4, n), h (nh),
! inertia (3, ni), with ni, nh either 1 (shared by all bodies) or n.
! An order other than 2, 4, 6, 8, or a step with no solution of the DMV equation, gives NaN.

subroutine dmv_step_batch(n, ni, nh, m, q, h, inertia, order, threads, m_out, q_out)
   use iso_c_binding, only: c_double, c_int
   implicit none
   integer(c_int), intent(in) :: n, ni, nh, order, threads
   real(c_double), intent(in) :: m(3, n), q(4, n), h(nh), inertia(3, ni)
   real(c_double), intent(out) :: m_out(3, n), q_out(4, n)
   !f2py integer(c_int) intent(hide), depend(m) :: n = shape(m, 1)
   !f2py integer(c_int) intent(hide), depend(inertia) :: ni = shape(inertia, 1)
   !f2py integer(c_int) intent(hide), depend(h) :: nh = len(h)
   !f2py integer(c_int) optional, intent(in) :: threads = 0
   !f2py threadsafe

   call dmv_integrate_batch(n, ni, nh, m, q, h, inertia, order, 1, threads, m_out, q_out)
end subroutine dmv_step_batch

!> nsteps steps of dmv_integrate_many (the kernel the tests compare frb.dmv_integrate with;
!> h may differ between bodies), its blocks of dmv_lanes_width bodies shared among the
!> threads: each block is the same as in one call for the whole batch (blocks start at bodies
!> 1, 1 + dmv_lanes_width, ...), so the results do not depend on the thread count.
subroutine dmv_integrate_batch(n, ni, nh, m, q, h, inertia, order, nsteps, threads, m_out, q_out)
   use iso_c_binding, only: c_double, c_int
   use moser_veselov, only: dmv_lanes_width
   use simd_dispatch, only: dmv_integrate_many
   use parallel, only: thread_count, min_parallel_work
   implicit none
   integer(c_int), intent(in) :: n, ni, nh, order, nsteps, threads
   real(c_double), intent(in) :: m(3, n), q(4, n), h(nh), inertia(3, ni)
   real(c_double), intent(out) :: m_out(3, n), q_out(4, n)
   !f2py integer(c_int) intent(hide), depend(m) :: n = shape(m, 1)
   !f2py integer(c_int) intent(hide), depend(inertia) :: ni = shape(inertia, 1)
   !f2py integer(c_int) intent(hide), depend(h) :: nh = len(h)
   !f2py integer(c_int) optional, intent(in) :: threads = 0
   !f2py threadsafe
   integer, parameter :: nb = 4 * dmv_lanes_width
   integer :: b0, b1, ic

   !$omp parallel do num_threads(thread_count(threads)) &
   !$omp if(real(n, c_double) * max(nsteps, 1) >= min_parallel_work) schedule(dynamic) &
   !$omp default(none) private(b0, b1) shared(n, ni, nh, m, q, h, inertia, order, nsteps, m_out, q_out) &
   !$omp shared(dmv_integrate_many)
   do ic = 1, (n + nb - 1) / nb
      b0 = (ic - 1) * nb + 1
      b1 = min(n, b0 + nb - 1)
      call dmv_integrate_many(b1 - b0 + 1, min(ni, b1 - b0 + 1), min(nh, b1 - b0 + 1), &
                              m(:, b0:b1), q(:, b0:b1), h(min(b0, nh):min(b1, nh)), &
                              inertia(:, min(b0, ni):min(b1, ni)), order, nsteps, &
                              m_out(:, b0:b1), q_out(:, b0:b1))
   end do
   !$omp end parallel do
end subroutine dmv_integrate_batch

subroutine dmv_step_single(m, q, h, inertia, order, m_out, q_out)
   ! One body through the scalar per-body step dmv_step_one (for tests).
   use iso_c_binding, only: c_double, c_int
   use moser_veselov, only: dmv_step_one
   implicit none
   integer(c_int), intent(in) :: order
   real(c_double), intent(in) :: m(3), q(4), h, inertia(3)
   real(c_double), intent(out) :: m_out(3), q_out(4)

   call dmv_step_one(m, q, h, inertia, order, m_out, q_out)
end subroutine dmv_step_single

!> The input checks of quat_step_batch (checks; info, where as there), then the steps of
!> dmv_integrate_batch; nfail counts the bodies whose DMV equation had no solution (NaN results).
!> (The former path of frb.dmv_step, kept for benchmarks/speed.py.)
subroutine dmv_integrate_checked(n, ni, nh, m, q, h, inertia, order, nsteps, tol, threads, &
                                 m_out, q_out, info, where, nfail)
   use iso_c_binding, only: c_double, c_int
   use, intrinsic :: ieee_arithmetic, only: ieee_is_finite
   use checks, only: input_ok
   implicit none
   integer(c_int), intent(in) :: n, ni, nh, order, nsteps, threads
   real(c_double), intent(in) :: m(3, n), q(4, n), h(nh), inertia(3, ni), tol
   real(c_double), intent(out) :: m_out(3, n), q_out(4, n)
   integer(c_int), intent(out) :: info, where, nfail
   !f2py integer(c_int) intent(hide), depend(m) :: n = shape(m, 1)
   !f2py integer(c_int) intent(hide), depend(inertia) :: ni = shape(inertia, 1)
   !f2py integer(c_int) intent(hide), depend(h) :: nh = len(h)
   !f2py integer(c_int) optional, intent(in) :: threads = 0
   !f2py threadsafe
   integer :: b

   nfail = 0
   call dmv_check_batch(n, ni, nh, m, q, h, inertia, tol, threads, info, where)
   if (info /= input_ok) then
      m_out = 0; q_out = 0
      return
   end if
   call dmv_integrate_batch(n, ni, nh, m, q, h, inertia, order, nsteps, threads, m_out, q_out)
   do b = 1, n
      if (.not. (all(ieee_is_finite(m_out(:, b))) .and. all(ieee_is_finite(q_out(:, b))))) nfail = nfail + 1
   end do
end subroutine dmv_integrate_checked

!> One body (shapes (3,) and (4,), h a scalar): the lean path of frb.dmv_step / frb.dmv_integrate,
!> the checks of dmv_check_batch for a batch of one, then the steps of frb.integrate's torque-free
!> DMV for one body (moser_veselov: dmv_prepare_inverse once, then every step dmv_step_scalar with
!> h / 2, which is dmv_blocks_steps for one body; the routines free_step of approximate_free_flows calls), so the results are those of
!> frb.integrate(method="DMV<order>") bit for bit; nfail is 1 when the DMV equation had no
!> solution (NaN results), else 0. The order must be 2, 4, 6 or 8 (checked by the caller).
subroutine dmv_integrate_single(m, q, h, inertia, order, nsteps, tol, m_out, q_out, info, nfail)
   use iso_c_binding, only: c_double, c_int
   use, intrinsic :: ieee_arithmetic, only: ieee_is_finite
   use moser_veselov, only: dmv_prepare_inverse, dmv_step_scalar
   use checks, only: check_body_quat, input_ok
   implicit none
   integer(c_int), intent(in) :: order, nsteps
   real(c_double), intent(in) :: m(3), q(4), h, inertia(3), tol
   real(c_double), intent(out) :: m_out(3), q_out(4)
   integer(c_int), intent(out) :: info, nfail
   real(c_double) :: w(3), hd
   integer :: k

   nfail = 0
   info = check_body_quat(m, h, inertia, q, tol)
   if (info /= input_ok) then
      m_out = 0; q_out = 0
      return
   end if
   m_out = m
   q_out = q
   call dmv_prepare_inverse(1, order, h, m_out, inertia, 3, w)
   hd = h / 2
   do k = 1, nsteps
      call dmv_step_scalar(m_out, q_out, hd, w)
   end do
   if (.not. (all(ieee_is_finite(m_out)) .and. all(ieee_is_finite(q_out)))) nfail = 1
end subroutine dmv_integrate_single

!> The input checks of quat_step_batch (checks) for every body: info = 0, or the code of
!> the first invalid body, whose index (from 0) is where (-1 when all are valid). (The value
!> checks of frb.dmv_step / frb.dmv_integrate for a batch.)
subroutine dmv_check_batch(n, ni, nh, m, q, h, inertia, tol, threads, info, where)
   use iso_c_binding, only: c_double, c_int
   use checks, only: check_body_quat, all_valid, input_ok
   use parallel, only: thread_count, min_parallel_work, first_invalid
   implicit none
   integer(c_int), intent(in) :: n, ni, nh, threads
   real(c_double), intent(in) :: m(3, n), q(4, n), h(nh), inertia(3, ni), tol
   integer(c_int), intent(out) :: info, where
   !f2py integer(c_int) intent(hide), depend(m) :: n = shape(m, 1)
   !f2py integer(c_int) intent(hide), depend(inertia) :: ni = shape(inertia, 1)
   !f2py integer(c_int) intent(hide), depend(h) :: nh = len(h)
   !f2py integer(c_int) optional, intent(in) :: threads = 0
   !f2py threadsafe
   integer :: b, first_bad

   info = input_ok
   where = -1
   ! the usual case (every body valid) in one vectorised pass
   if (all_valid(4, n, 1, ni, nh, m, q, h, inertia, tol)) return
   first_bad = n + 1
   !$omp parallel do num_threads(thread_count(threads)) if(n >= 16 * min_parallel_work) &
   !$omp schedule(static) default(none) reduction(min: first_bad) shared(n, ni, nh, m, q, h, inertia, tol)
   do b = 1, n
      if (check_body_quat(m(:, b), h(min(b, nh)), inertia(:, min(b, ni)), q(:, b), tol) /= input_ok) &
         first_bad = min(first_bad, b)
   end do
   !$omp end parallel do
   info = input_ok
   where = first_invalid(first_bad, n)
   if (where >= 0) &
      info = check_body_quat(m(:, first_bad), h(min(first_bad, nh)), inertia(:, min(first_bad, ni)), &
                             q(:, first_bad), tol)
end subroutine dmv_check_batch
