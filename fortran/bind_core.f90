! f2py bindings of the extension module frb._core: plain subroutines over batches.
! Layout: a C-ordered numpy array of shape (n, 3) is passed as its transpose view, seen here as
! (3, n) without a copy; (n, 3, 3) matrices arrive as (3, 3, n) holding each matrix TRANSPOSED.
! inertia is (3, ni) and h is (nh) with ni, nh either 1 (shared by all bodies) or n.

subroutine frb_step_batch(n, ni, nh, m, qt, h, inertia, quadrature, tol, threads, m_out, qt_out, &
                          info, where)
   use iso_c_binding, only: c_double, c_int
   use simd_dispatch, only: flow_batch
   use flow_batches, only: attitude_matrix
   implicit none
   integer(c_int), intent(in) :: n, ni, nh, quadrature, threads
   real(c_double), intent(in) :: m(3, n), qt(3, 3, n), h(nh), inertia(3, ni), tol
   real(c_double), intent(out) :: m_out(3, n), qt_out(3, 3, n)
   integer(c_int), intent(out) :: info, where
   !f2py intent(hide) :: n, ni, nh
   !f2py integer(c_int) optional, intent(in) :: threads = 0
   !f2py threadsafe

   ! info: 0, or the code of checks for the first invalid body, whose index (from 0) is where
   call flow_batch(attitude_matrix, n, ni, nh, m, qt, h, inertia, quadrature, threads, m_out, qt_out, &
                   tol, info, where)
end subroutine frb_step_batch

subroutine quat_step_batch(n, ni, nh, m, q, h, inertia, quadrature, tol, threads, m_out, q_out, &
                           info, where)
   use iso_c_binding, only: c_double, c_int
   use simd_dispatch, only: flow_batch
   use flow_batches, only: attitude_quat
   implicit none
   integer(c_int), intent(in) :: n, ni, nh, quadrature, threads
   real(c_double), intent(in) :: m(3, n), q(4, n), h(nh), inertia(3, ni), tol
   real(c_double), intent(out) :: m_out(3, n), q_out(4, n)
   integer(c_int), intent(out) :: info, where
   !f2py intent(hide) :: n, ni, nh
   !f2py integer(c_int) optional, intent(in) :: threads = 0
   !f2py threadsafe

   call flow_batch(attitude_quat, n, ni, nh, m, q, h, inertia, quadrature, threads, m_out, q_out, tol, &
                   info, where)
end subroutine quat_step_batch

! Steps with their jacobians (flow_derivatives): the states after the step as frb_step_batch and
! quat_step_batch (the same checks, info and where), and for each body phi(6, 6) (the state
! transition matrix), dh(6) and di(6, 3) (the derivatives with respect to h and the three moments),
! rows and columns in the order (dm, dth), dth the attitude perturbation in the body frame.

subroutine frb_jacobian_batch(n, ni, nh, m, qt, h, inertia, quadrature, tol, threads, m_out, qt_out, &
                              phi, dh, di, info, where)
   use iso_c_binding, only: c_double, c_int
   use flow_derivatives, only: flow_jacobian_batch, attitude_matrix
   implicit none
   integer(c_int), intent(in) :: n, ni, nh, quadrature, threads
   real(c_double), intent(in) :: m(3, n), qt(3, 3, n), h(nh), inertia(3, ni), tol
   real(c_double), intent(out) :: m_out(3, n), qt_out(3, 3, n), phi(6, 6, n), dh(6, n), di(6, 3, n)
   integer(c_int), intent(out) :: info, where
   !f2py intent(hide) :: n, ni, nh
   !f2py integer(c_int) optional, intent(in) :: threads = 0
   !f2py threadsafe

   call flow_jacobian_batch(attitude_matrix, n, ni, nh, m, qt, h, inertia, quadrature, tol, threads, &
                            m_out, qt_out, phi, dh, di, info, where)
end subroutine frb_jacobian_batch

subroutine quat_jacobian_batch(n, ni, nh, m, q, h, inertia, quadrature, tol, threads, m_out, q_out, &
                               phi, dh, di, info, where)
   use iso_c_binding, only: c_double, c_int
   use flow_derivatives, only: flow_jacobian_batch, attitude_quat
   implicit none
   integer(c_int), intent(in) :: n, ni, nh, quadrature, threads
   real(c_double), intent(in) :: m(3, n), q(4, n), h(nh), inertia(3, ni), tol
   real(c_double), intent(out) :: m_out(3, n), q_out(4, n), phi(6, 6, n), dh(6, n), di(6, 3, n)
   integer(c_int), intent(out) :: info, where
   !f2py intent(hide) :: n, ni, nh
   !f2py integer(c_int) optional, intent(in) :: threads = 0
   !f2py threadsafe

   call flow_jacobian_batch(attitude_quat, n, ni, nh, m, q, h, inertia, quadrature, tol, threads, &
                            m_out, q_out, phi, dh, di, info, where)
end subroutine quat_jacobian_batch

! The same steps for batches stored body-index-first in Fortran order: a numpy array of shape
! (n, 3), (n, 4) or (n, 3, 3) that is F-contiguous arrives here without a copy as m(n, 3),
! q(n, 4), qf(n, 3, 3) with qf(b, :, :) = Q of body b (not transposed). Outputs use the same layout.

subroutine frb_step_batch_f(n, ni, nh, m, qf, h, inertia, quadrature, tol, threads, m_out, qf_out, &
                            info, where)
   use iso_c_binding, only: c_double, c_int
   use simd_dispatch, only: flow_batch
   use flow_batches, only: attitude_matrix, layout_body_first
   implicit none
   integer(c_int), intent(in) :: n, ni, nh, quadrature, threads
   real(c_double), intent(in) :: m(n, 3), qf(n, 3, 3), h(nh), inertia(3, ni), tol
   real(c_double), intent(out) :: m_out(n, 3), qf_out(n, 3, 3)
   integer(c_int), intent(out) :: info, where
   !f2py intent(hide) :: n, ni, nh
   !f2py integer(c_int) optional, intent(in) :: threads = 0
   !f2py threadsafe

   call flow_batch(attitude_matrix, n, ni, nh, m, qf, h, inertia, quadrature, threads, m_out, qf_out, &
                   tol, info, where, layout=layout_body_first)
end subroutine frb_step_batch_f

subroutine quat_step_batch_f(n, ni, nh, m, q, h, inertia, quadrature, tol, threads, m_out, q_out, &
                             info, where)
   use iso_c_binding, only: c_double, c_int
   use simd_dispatch, only: flow_batch
   use flow_batches, only: attitude_quat, layout_body_first
   implicit none
   integer(c_int), intent(in) :: n, ni, nh, quadrature, threads
   real(c_double), intent(in) :: m(n, 3), q(n, 4), h(nh), inertia(3, ni), tol
   real(c_double), intent(out) :: m_out(n, 3), q_out(n, 4)
   integer(c_int), intent(out) :: info, where
   !f2py intent(hide) :: n, ni, nh
   !f2py integer(c_int) optional, intent(in) :: threads = 0
   !f2py threadsafe

   call flow_batch(attitude_quat, n, ni, nh, m, q, h, inertia, quadrature, threads, m_out, q_out, tol, &
                   info, where, layout=layout_body_first)
end subroutine quat_step_batch_f

! One body: the lean path of frb.frb_step / frb.quat_step for shapes (3,), (3, 3) and (4,) (no
! batch dimension, h a scalar). The checks of the batched bindings (checks, the same codes
! in info), then the step those bindings take for a batch of one (free_flow, whose results the
! lanes of larger batches give bit for bit). qt and qt_out are intent(c): f2py passes the C-ordered
! (3, 3) numpy array as it is, seen here as its transpose, Q^T (the layout of frb_step_batch), and
! returns Q_out C-ordered (no transposes in Python). On invalid input the outputs are 0.
! (The GIL is kept: releasing it would cost more than this call's work.)

subroutine frb_step_single(m, qt, h, inertia, quadrature, tol, m_out, qt_out, info)
   use iso_c_binding, only: c_double, c_int
   use exact_flow, only: frb_step_one
   use checks, only: check_body_matrix, input_ok
   implicit none
   integer(c_int), intent(in) :: quadrature
   real(c_double), intent(in) :: m(3), qt(3, 3), h, inertia(3), tol
   real(c_double), intent(out) :: m_out(3), qt_out(3, 3)
   integer(c_int), intent(out) :: info
   !f2py intent(c) qt
   !f2py intent(c) qt_out

   info = check_body_matrix(m, h, inertia, qt, tol)
   m_out = 0; qt_out = 0
   if (info == input_ok) call frb_step_one(m, qt, h, inertia, quadrature, m_out, qt_out)
end subroutine frb_step_single

subroutine quat_step_single(m, q, h, inertia, quadrature, tol, m_out, q_out, info)
   use iso_c_binding, only: c_double, c_int
   use exact_flow, only: quat_step_one
   use checks, only: check_body_quat, input_ok
   implicit none
   integer(c_int), intent(in) :: quadrature
   real(c_double), intent(in) :: m(3), q(4), h, inertia(3), tol
   real(c_double), intent(out) :: m_out(3), q_out(4)
   integer(c_int), intent(out) :: info

   info = check_body_quat(m, h, inertia, q, tol)
   m_out = 0; q_out = 0
   if (info == input_ok) call quat_step_one(m, q, h, inertia, quadrature, m_out, q_out)
end subroutine quat_step_single

! Value checks of one body for the set-up of frb.integrate and frb.splitting.integrate (shapes and
! types are checked in Python): code 0, or the checks code of the first problem in the order
! m, attitude (finite, then unit norm / rotation), inertia (finite, then positive). qq is the
! C-ordered (3, 3) matrix Q as it is (intent(c): seen here as Q^T, the layout of check_rotation_tr).

subroutine check_single_quat(m, q, inertia, tol, code)
   use iso_c_binding, only: c_double, c_int
   use checks, only: check_state, check_unit_quaternion, input_ok
   implicit none
   real(c_double), intent(in) :: m(3), q(4), inertia(3), tol
   integer(c_int), intent(out) :: code
   real(c_double), parameter :: unit(3) = 1, zero(3) = 0

   code = check_state(m, 0.0_c_double, unit)
   if (code == input_ok) code = check_unit_quaternion(q, tol)
   if (code == input_ok) code = check_state(zero, 0.0_c_double, inertia)
end subroutine check_single_quat

subroutine check_single_matrix(m, qq, inertia, tol, code)
   use iso_c_binding, only: c_double, c_int
   use checks, only: check_state, check_rotation_tr, input_ok
   implicit none
   real(c_double), intent(in) :: m(3), qq(3, 3), inertia(3), tol
   integer(c_int), intent(out) :: code
   !f2py intent(c) qq
   real(c_double), parameter :: unit(3) = 1, zero(3) = 0

   code = check_state(m, 0.0_c_double, unit)
   if (code == input_ok) code = check_rotation_tr(qq, tol)
   if (code == input_ok) code = check_state(zero, 0.0_c_double, inertia)
end subroutine check_single_matrix

!> check_single_matrix, and where the values pass (code 0) the unit quaternion of Q
!> (frb.rotations.matrix_to_quat, bit for bit; zero otherwise): the one-body set-up of
!> frb.integrate from a matrix in one call.
subroutine check_single_matrix_quat(m, qq, inertia, tol, code, q)
   use iso_c_binding, only: c_double, c_int
   use checks, only: input_ok
   use rotations, only: matrix_quat_tr
   implicit none
   real(c_double), intent(in) :: m(3), qq(3, 3), inertia(3), tol
   integer(c_int), intent(out) :: code
   real(c_double), intent(out) :: q(4)
   !f2py intent(c) qq

   call check_single_matrix(m, qq, inertia, tol, code)
   q = 0
   if (code == input_ok) q = matrix_quat_tr(qq)
end subroutine check_single_matrix_quat

!> Whether this build runs the batched loops on several threads (OpenMP), and the default
!> thread count of a parallel loop (OMP_NUM_THREADS, or one per core; 1 without OpenMP).
subroutine openmp_info(enabled, max_threads)
   use iso_c_binding, only: c_int
   use parallel, only: thread_count, openmp_enabled
   implicit none
   integer(c_int), intent(out) :: enabled, max_threads

   enabled = merge(1, 0, openmp_enabled())
   max_threads = thread_count(0)
end subroutine openmp_info

! The SIMD target of this extension's lane kernels (simd_dispatch; frb.cpu): requested (a
! cpu_target_* code), or the best the CPU supports when it lacks it or requested < 0; best: that
! best target.
subroutine cpu_target_select(requested, in_use, best)
   use simd_dispatch, only: select_cpu_target, best_cpu_target
   implicit none
   integer, intent(in) :: requested
   integer, intent(out) :: in_use, best

   best = best_cpu_target()
   in_use = select_cpu_target(requested)
end subroutine cpu_target_select
