! f2py bindings of the extension module frb._testing, built only with the meson option testing
! (meson.options): routines used by the tests and the benchmarks, not by the package. Layout of
! the batches as in bind_engine.f90 (C-ordered numpy arrays passed as their transposes).

! nsteps steps of size h of the free flow for every body, returning only the final states
! (the loop over steps runs in Fortran: for benchmarks and long free runs); no checks.

subroutine frb_integrate_batch(n, ni, nh, m, qt, h, inertia, quadrature, nsteps, threads, m_out, qt_out)
   use iso_c_binding, only: c_double, c_int
   use simd_dispatch, only: flow_batch
   use flow_batches, only: attitude_matrix
   implicit none
   integer(c_int), intent(in) :: n, ni, nh, quadrature, nsteps, threads
   real(c_double), intent(in) :: m(3, n), qt(3, 3, n), h(nh), inertia(3, ni)
   real(c_double), intent(out) :: m_out(3, n), qt_out(3, 3, n)
   !f2py intent(hide) :: n, ni, nh
   !f2py integer(c_int) optional, intent(in) :: threads = 0
   !f2py threadsafe

   call flow_batch(attitude_matrix, n, ni, nh, m, qt, h, inertia, quadrature, threads, m_out, qt_out, &
                   nsteps=nsteps)
end subroutine frb_integrate_batch

subroutine quat_integrate_batch(n, ni, nh, m, q, h, inertia, quadrature, nsteps, threads, m_out, q_out)
   use iso_c_binding, only: c_double, c_int
   use simd_dispatch, only: flow_batch
   use flow_batches, only: attitude_quat
   implicit none
   integer(c_int), intent(in) :: n, ni, nh, quadrature, nsteps, threads
   real(c_double), intent(in) :: m(3, n), q(4, n), h(nh), inertia(3, ni)
   real(c_double), intent(out) :: m_out(3, n), q_out(4, n)
   !f2py intent(hide) :: n, ni, nh
   !f2py integer(c_int) optional, intent(in) :: threads = 0
   !f2py threadsafe

   call flow_batch(attitude_quat, n, ni, nh, m, q, h, inertia, quadrature, threads, m_out, q_out, &
                   nsteps=nsteps)
end subroutine quat_integrate_batch

! Elementwise elliptic functions over arrays of equal length n.

subroutine ell_jacobi(n, u, k, kp, sn, cn, dn, am)
   use iso_c_binding, only: c_double, c_int
   use elliptic_functions, only: agm_t, agm_setup, jacobi_sncndn, jacobi_am
   implicit none
   integer(c_int), intent(in) :: n
   real(c_double), intent(in) :: u(n), k(n), kp(n)
   real(c_double), intent(out) :: sn(n), cn(n), dn(n), am(n)
   !f2py integer(c_int) intent(hide), depend(u) :: n = len(u)
   type(agm_t) :: g
   real(c_double) :: r
   integer :: i, j

   do i = 1, n
      if (kp(i) == 0) then
         sn(i) = tanh(u(i)); cn(i) = 1 / cosh(u(i)); dn(i) = cn(i)
      else
         call agm_setup(k(i), kp(i), g)
         call jacobi_sncndn(u(i), g, sn(i), cn(i), dn(i), j, r)
      end if
   end do
   am = jacobi_am(u, k, kp)
end subroutine ell_jacobi

!> sn, cn, dn(v | m) by the Maclaurin series used for short steps (|v| <= jacobi_series_max,
!> returned in vmax; NaN outside).
subroutine ell_jacobi_series(n, v, m, sn, cn, dn, vmax)
   use iso_c_binding, only: c_double, c_int
   use, intrinsic :: ieee_arithmetic, only: ieee_value, ieee_quiet_nan
   use elliptic_functions, only: jacobi_series, jacobi_series_max
   implicit none
   integer(c_int), intent(in) :: n
   real(c_double), intent(in) :: v(n), m(n)
   real(c_double), intent(out) :: sn(n), cn(n), dn(n), vmax
   !f2py integer(c_int) intent(hide), depend(v) :: n = len(v)
   integer :: i

   vmax = jacobi_series_max
   do i = 1, n
      if (abs(v(i)) <= jacobi_series_max .and. m(i) >= 0 .and. m(i) <= 1) then
         call jacobi_series(v(i), m(i), sn(i), cn(i), dn(i))
      else
         sn(i) = ieee_value(vmax, ieee_quiet_nan); cn(i) = sn(i); dn(i) = sn(i)
      end if
   end do
end subroutine ell_jacobi_series

subroutine ell_first_kind(n, phi, k, kp, f_landen, kc)
   use iso_c_binding, only: c_double, c_int
   use elliptic_functions, only: ellf_landen, ellk
   implicit none
   integer(c_int), intent(in) :: n
   real(c_double), intent(in) :: phi(n), k(n), kp(n)
   real(c_double), intent(out) :: f_landen(n), kc(n)
   !f2py integer(c_int) intent(hide), depend(phi) :: n = len(phi)

   f_landen = ellf_landen(phi, k, kp)
   kc = ellk(k, kp)
end subroutine ell_first_kind

subroutine ell_carlson(n, x, y, z, p, rf, rj, rc)
   use iso_c_binding, only: c_double, c_int
   use elliptic_functions, only: carlson_rf, carlson_rj, carlson_rc
   implicit none
   integer(c_int), intent(in) :: n
   real(c_double), intent(in) :: x(n), y(n), z(n), p(n)
   real(c_double), intent(out) :: rf(n), rj(n), rc(n)
   !f2py integer(c_int) intent(hide), depend(x) :: n = len(x)

   rf = carlson_rf(x, y, z)
   rj = carlson_rj(x, y, z, p)
   rc = carlson_rc(x, y)
end subroutine ell_carlson

subroutine ell_third_kind(n, phi1, phi2, nn, k, kp, np, pi1, pi2, pi12, pi_gauss)
   use iso_c_binding, only: c_double, c_int
   use elliptic_functions, only: ellpi, ellint_pi, eint_gauss
   implicit none
   integer(c_int), intent(in) :: n, np
   real(c_double), intent(in) :: phi1(n), phi2(n), nn(n), k(n), kp(n)
   real(c_double), intent(out) :: pi1(n), pi2(n), pi12(n), pi_gauss(n)
   !f2py integer(c_int) intent(hide), depend(phi1) :: n = len(phi1)

   pi1 = ellpi(phi1, nn, k, kp)
   pi2 = ellpi(phi2, nn, k, kp)
   pi12 = ellint_pi(phi1, phi2, nn, k, kp)
   if (np >= 1 .and. np <= 10) then
      pi_gauss = eint_gauss(phi1, phi2, nn, k, kp, np)
   else
      pi_gauss = 0
   end if
end subroutine ell_third_kind

!> lane_math's double-precision functions elementwise (tests/test_lane_math.py): sin and cos
!> (lane_sincos), atan, atan(x)/x (lane_atanc), atan2(y, x), and the variants of the lock-step flows
!> for arguments that need no reduction (sincos_near, atanc_near).
subroutine lane_math_values(n, x, y, s, c, at, atc, at2, s_near, c_near, atc_near)
   use iso_c_binding, only: c_double, c_int
   use lane_math, only: lane_sincos, lane_atan, lane_atanc, lane_atan2, sincos_near, atanc_near
   implicit none
   integer(c_int), intent(in) :: n
   real(c_double), intent(in) :: x(n), y(n)
   real(c_double), intent(out) :: s(n), c(n), at(n), atc(n), at2(n), s_near(n), c_near(n), atc_near(n)
   !f2py integer(c_int) intent(hide), depend(x) :: n = len(x)

   call lane_sincos(x, s, c)
   at = lane_atan(x)
   atc = lane_atanc(x)
   at2 = lane_atan2(y, x)
   call sincos_near(x, s_near, c_near)
   atc_near = atanc_near(x)
end subroutine lane_math_values


! The batched DMV kernel (moser_veselov.dmv_integrate_many, the SIMD target in use): the
! reference the tests compare frb.dmv_integrate and frb.integrate's DMV methods with. Same
! layout as frb_integrate_batch: m (3, n), q (4, n), h (nh), inertia (3, ni), ni and nh 1 or n;
! an order other than 2, 4, 6, 8, or a step with no solution of the DMV equation, gives NaN.

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

!> The step of each body with its derivatives by the closed form on dual numbers alone
!> (flow_derivatives.free_flow_jacobian: two tangent directions, no lanes): m_out, the quaternion
!> w of the step, phi (6, 6, n), dh (6, n), di (6, 3, n); for comparisons with the lanes of
!> flow_tangent_lanes, which frb uses for the exact step.
subroutine dual_flow_jacobian(n, m, h, inertia, quadrature, m_out, w, phi, dh, di)
   use iso_c_binding, only: c_double, c_int
   use flow_derivatives, only: free_flow_jacobian
   implicit none
   integer(c_int), intent(in) :: n, quadrature
   real(c_double), intent(in) :: m(3, n), h(n), inertia(3, n)
   real(c_double), intent(out) :: m_out(3, n), w(4, n), phi(6, 6, n), dh(6, n), di(6, 3, n)
   !f2py integer(c_int) intent(hide), depend(m) :: n = shape(m, 1)
   integer :: b

   do b = 1, n
      call free_flow_jacobian(m(:, b), h(b), inertia(:, b), quadrature, m_out(:, b), w(:, b), phi(:, :, b), &
                              dh(:, b), di(:, :, b))
   end do
end subroutine dual_flow_jacobian

!> The exact gyrostat step (gyrostat_flow.gyrostat_step) of every body, without checks: rigid-body
!> momenta m (3, n), rotor momenta hr (3, nr), steps h (nh), moments (3, ni), nr, nh, ni 1 or n;
!> m_out = m(h) and the quaternion w of each body, q(h) = q w.
subroutine gyrostat_step_batch(n, nr, nh, ni, m, hr, h, inertia, threads, m_out, w)
   use iso_c_binding, only: c_double, c_int
   use parallel, only: thread_count
   use gyrostat_flow, only: gyrostat_step
   implicit none
   integer(c_int), intent(in) :: n, nr, nh, ni, threads
   real(c_double), intent(in) :: m(3, n), hr(3, nr), h(nh), inertia(3, ni)
   real(c_double), intent(out) :: m_out(3, n), w(4, n)
   !f2py integer(c_int) intent(hide), depend(m) :: n = shape(m, 1)
   !f2py integer(c_int) intent(hide), depend(hr) :: nr = shape(hr, 1)
   !f2py integer(c_int) intent(hide), depend(inertia) :: ni = shape(inertia, 1)
   !f2py integer(c_int) intent(hide), depend(h) :: nh = len(h)
   !f2py integer(c_int) optional, intent(in) :: threads = 0
   !f2py threadsafe
   integer :: j

   !$omp parallel do schedule(dynamic, 64) num_threads(thread_count(threads))
   do j = 1, n
      call gyrostat_step(m(:, j), hr(:, min(j, nr)), h(min(j, nh)), inertia(:, min(j, ni)), &
                         m_out(:, j), w(:, j))
   end do
   !$omp end parallel do
end subroutine gyrostat_step_batch

!> The same step with the attitudes: q_out = q w (the benchmark's counterpart of
!> quat_integrate_batch with nsteps = 1).
subroutine gyrostat_quat_batch(n, nr, nh, ni, m, q, hr, h, inertia, threads, m_out, q_out)
   use iso_c_binding, only: c_double, c_int
   use parallel, only: thread_count
   use gyrostat_flow, only: gyrostat_step
   use rotations, only: qmul
   implicit none
   integer(c_int), intent(in) :: n, nr, nh, ni, threads
   real(c_double), intent(in) :: m(3, n), q(4, n), hr(3, nr), h(nh), inertia(3, ni)
   real(c_double), intent(out) :: m_out(3, n), q_out(4, n)
   !f2py integer(c_int) intent(hide), depend(m) :: n = shape(m, 1)
   !f2py integer(c_int) intent(hide), depend(hr) :: nr = shape(hr, 1)
   !f2py integer(c_int) intent(hide), depend(inertia) :: ni = shape(inertia, 1)
   !f2py integer(c_int) intent(hide), depend(h) :: nh = len(h)
   !f2py integer(c_int) optional, intent(in) :: threads = 0
   !f2py threadsafe
   real(c_double) :: w(4)
   integer :: j

   !$omp parallel do schedule(dynamic, 64) num_threads(thread_count(threads)) private(w)
   do j = 1, n
      call gyrostat_step(m(:, j), hr(:, min(j, nr)), h(min(j, nh)), inertia(:, min(j, ni)), m_out(:, j), w)
      q_out(:, j) = qmul(q(:, j), w)
   end do
   !$omp end parallel do
end subroutine gyrostat_quat_batch
