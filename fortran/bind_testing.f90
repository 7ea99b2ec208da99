! f2py bindings of the extension module frb._testing, built only with the meson option testing
! (meson.options): routines used by the tests and the benchmarks, not by the package. Layout of
! the batches as in bind_core.f90.

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

!> The SIMD target of this extension's lane kernels (as frb._core.cpu_target_select).
subroutine testing_cpu_target(requested, in_use)
   use simd_dispatch, only: select_cpu_target
   implicit none
   integer, intent(in) :: requested
   integer, intent(out) :: in_use

   in_use = select_cpu_target(requested)
end subroutine testing_cpu_target
