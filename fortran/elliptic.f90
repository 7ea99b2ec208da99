! Elliptic integrals and Jacobi elliptic functions (seed 004, sections 3.2 and 3.3; appendix).
!
! Conventions: modulus k (not the parameter m = k^2); the complementary modulus kp = sqrt(1 - k^2)
! is always passed separately, because near k = 1 it cannot be recovered from k without
! cancellation. The integral of the third kind uses the paper's sign convention,
!     Pi(phi, n, k) = int_0^phi dtheta / ((1 - n sin^2 theta) sqrt(1 - k^2 sin^2 theta)).
!
! Carlson's symmetric integrals RF, RC, RJ follow the duplication algorithms of
! B. C. Carlson, Numer. Algorithms 10 (1995) 13-26, with the error bound r = 2^-53.
module frb_elliptic
   use, intrinsic :: ieee_arithmetic, only: ieee_value, ieee_quiet_nan
   use frb_kinds, only: dp, pi, half_pi
   implicit none
   private

   public :: carlson_rf, carlson_rc, carlson_rj
   public :: agm_t, agm_setup, jacobi_reduced, jacobi_sncndn, jacobi_am
   public :: ellf_landen, ellf_sc, ellk
   public :: ellpi, ellint_pi, eint_gauss, gl_node, gl_weight

   integer, parameter :: agm_max = 64
   ! Stop the Gauss (descending Landen) sequence when k_N < 1e-20: then sn, cn, dn of
   ! modulus k_N equal sin, cos, 1 to far below rounding, even relative to cos near pi/2.
   real(dp), parameter :: agm_stop = 1.0e-20_dp
   ! (3r)^(-1/6), (3r)^(-1/8), (r/4)^(-1/6) with r = 2^-53 (Carlson 1995, section 2)
   real(dp), parameter :: rf_q = 3.882018585588596e2_dp
   real(dp), parameter :: rc_q = 8.707064346049896e1_dp
   real(dp), parameter :: rj_q = 5.851389227296553e2_dp

   include 'gauss_legendre_table.inc'

   !> Gauss transformation (descending Landen) data for one modulus: the AGM of 1 and kp.
   type :: agm_t
      integer :: nlev = 0                    ! number of Gauss transformations N
      real(dp) :: k = 0, kp = 1              ! modulus and complementary modulus
      real(dp) :: a_last = 1                 ! a_N of the AGM
      real(dp) :: quarter = half_pi          ! K(k) = pi / (2 a_N)
      real(dp) :: kn(agm_max) = 0            ! k_n = c_n / a_n, n = 1..N
      real(dp) :: one_minus_kn(agm_max) = 1  ! 1 - k_n = b_(n-1) / a_n, without cancellation
   end type agm_t

contains

   !> Carlson's RF(x, y, z), x, y, z >= 0, at most one of them zero.
   pure elemental function carlson_rf(x, y, z) result(rf)
      real(dp), intent(in) :: x, y, z
      real(dp) :: rf
      real(dp) :: xm, ym, zm, a0, am, q, lam, sx, sy, sz, xx, yy, zz, e2, e3, fourm

      xm = x; ym = y; zm = z
      a0 = (x + y + z) / 3
      am = a0
      q = rf_q * max(abs(a0 - x), abs(a0 - y), abs(a0 - z))
      fourm = 1
      do while (q * fourm >= abs(am))
         sx = sqrt(xm); sy = sqrt(ym); sz = sqrt(zm)
         lam = sx * (sy + sz) + sy * sz
         xm = (xm + lam) * 0.25_dp
         ym = (ym + lam) * 0.25_dp
         zm = (zm + lam) * 0.25_dp
         am = (am + lam) * 0.25_dp
         fourm = fourm * 0.25_dp
      end do
      xx = (a0 - x) * fourm / am
      yy = (a0 - y) * fourm / am
      zz = -(xx + yy)
      e2 = xx * yy - zz * zz
      e3 = xx * yy * zz
      rf = (1 - e2 / 10 + e3 / 14 + e2 * e2 / 24 - 3 * e2 * e3 / 44) / sqrt(am)
   end function carlson_rf

   !> Carlson's RC(x, y) = RF(x, y, y), x >= 0, y /= 0 (Cauchy principal value for y < 0).
   pure elemental recursive function carlson_rc(x, y) result(rc)
      real(dp), intent(in) :: x, y
      real(dp) :: rc
      real(dp) :: xm, ym, a0, am, q, lam, s, fourm

      if (y < 0) then
         rc = sqrt(x / (x - y)) * carlson_rc(x - y, -y)
         return
      end if
      xm = x; ym = y
      a0 = (x + 2 * y) / 3
      am = a0
      q = rc_q * abs(a0 - x)
      fourm = 1
      do while (q * fourm >= abs(am))
         lam = 2 * sqrt(xm) * sqrt(ym) + ym
         xm = (xm + lam) * 0.25_dp
         ym = (ym + lam) * 0.25_dp
         am = (am + lam) * 0.25_dp
         fourm = fourm * 0.25_dp
      end do
      s = (y - a0) * fourm / am
      rc = (1 + s * s * (0.3_dp + s * (1 / 7.0_dp + s * (0.375_dp + s * (9 / 22.0_dp &
           + s * (159 / 208.0_dp + s * 1.125_dp)))))) / sqrt(am)
   end function carlson_rc

   !> RC(alpha, beta) for alpha, beta > 0 in closed form, without cancellation:
   !> atan form for beta > alpha, log form for beta < alpha, Taylor series of
   !> RC = alpha^(-1/2) g(beta/alpha - 1) near alpha = beta.
   pure elemental function rc_positive(alpha, beta) result(rc)
      real(dp), intent(in) :: alpha, beta
      real(dp) :: rc
      real(dp) :: e, t

      e = (beta - alpha) / alpha
      if (abs(e) < 1.0e-3_dp) then
         rc = (1 - e * (1 / 3.0_dp - e * (0.2_dp - e * (1 / 7.0_dp - e * (1 / 9.0_dp &
              - e * (1 / 11.0_dp - e / 13.0_dp)))))) / sqrt(alpha)
      else if (e > 0) then
         t = sqrt(beta - alpha)
         rc = atan(t / sqrt(alpha)) / t
      else
         t = sqrt(alpha - beta)
         rc = log((sqrt(alpha) + t) / sqrt(beta)) / t
      end if
   end function rc_positive

   !> Carlson's RJ(x, y, z, p), x, y, z >= 0 (at most one zero), p > 0 (NaN for p <= 0).
   pure elemental function carlson_rj(x, y, z, p) result(rj)
      real(dp), intent(in) :: x, y, z, p
      real(dp) :: rj
      real(dp) :: xm, ym, zm, pm, a0, am, q, lam, sx, sy, sz, alpha, beta, fourm, sum_rc
      real(dp) :: xx, yy, zz, pp, e2, e3, e4, e5

      if (p <= 0) then
         ! The Cauchy principal value (p < 0) is not needed by the flows and not provided.
         rj = ieee_value(rj, ieee_quiet_nan)
         return
      end if
      xm = x; ym = y; zm = z; pm = p
      a0 = (x + y + z + 2 * p) / 5
      am = a0
      q = rj_q * max(abs(a0 - x), abs(a0 - y), abs(a0 - z), abs(a0 - p))
      fourm = 1
      sum_rc = 0
      do while (q * fourm >= abs(am))
         sx = sqrt(xm); sy = sqrt(ym); sz = sqrt(zm)
         lam = sx * (sy + sz) + sy * sz
         ! duplication: RJ(x,y,z,p) = RJ(x_(m+1),..)/4 + 3 RC(alpha, beta) (Carlson 1979)
         alpha = (pm * (sx + sy + sz) + sx * sy * sz)**2
         beta = pm * (pm + lam)**2
         sum_rc = sum_rc + fourm * rc_positive(alpha, beta)
         xm = (xm + lam) * 0.25_dp
         ym = (ym + lam) * 0.25_dp
         zm = (zm + lam) * 0.25_dp
         pm = (pm + lam) * 0.25_dp
         am = (am + lam) * 0.25_dp
         fourm = fourm * 0.25_dp
      end do
      xx = (a0 - x) * fourm / am
      yy = (a0 - y) * fourm / am
      zz = (a0 - z) * fourm / am
      pp = -(xx + yy + zz) / 2
      e2 = xx * yy + xx * zz + yy * zz - 3 * pp * pp
      e3 = xx * yy * zz + 2 * e2 * pp + 4 * pp**3
      e4 = (2 * xx * yy * zz + e2 * pp + 3 * pp**3) * pp
      e5 = xx * yy * zz * pp * pp
      rj = fourm / (am * sqrt(am)) * (1 - 3 * e2 / 14 + e3 / 6 + 9 * e2 * e2 / 88 - 3 * e4 / 22 &
           - 9 * e2 * e3 / 52 + 3 * e5 / 26) + 3 * sum_rc
   end function carlson_rj

   !> The AGM of 1 and kp, kept as the moduli of successive Gauss transformations
   !> (seed 004, section 3.2: a_0 = 1, b_0 = kp, c_0 = k). Requires 0 < kp <= 1.
   pure function agm_setup(k, kp) result(g)
      real(dp), intent(in) :: k, kp
      type(agm_t) :: g
      real(dp) :: a, b, c, an
      integer :: n

      g%k = k; g%kp = kp
      a = 1; b = kp; c = k
      n = 0
      do while (c > agm_stop * a .and. n < agm_max)
         n = n + 1
         an = (a + b) / 2
         g%one_minus_kn(n) = b / an
         b = sqrt(a * b)
         c = c * c / (4 * an)            ! c_n = (a_(n-1) - b_(n-1))/2 without cancellation
         a = an
         g%kn(n) = c / a
      end do
      g%nlev = n
      g%a_last = a
      g%quarter = half_pi / a
   end function agm_setup

   !> sn, cn, dn(r, k) for |r| <= K (slightly beyond is fine) by the descending Landen (Gauss)
   !> transformation applied to the triple itself rather than to the amplitude:
   !>   sn = (1+k1) s/(1+k1 s^2),  cn = c d/(1+k1 s^2),  dn = ((1-k1) + k1 c^2)/(1+k1 s^2),
   !> where (s, c, d) are the functions of modulus k1 at r/(1+k1). Every operation combines
   !> terms of one sign, so sn, cn and dn all keep full relative accuracy, also near r = K
   !> when k is close to 1 (cn, dn ~ kp there).
   pure subroutine jacobi_reduced(r, g, s, c, d)
      real(dp), intent(in) :: r
      type(agm_t), intent(in) :: g
      real(dp), intent(out) :: s, c, d
      real(dp) :: w, den, kk, s_new, c_new
      integer :: n

      w = g%a_last * r
      s = sin(w); c = cos(w); d = 1
      do n = g%nlev, 1, -1
         kk = g%kn(n)
         den = 1 + kk * s * s
         s_new = (1 + kk) * s / den
         c_new = c * d / den
         d = (g%one_minus_kn(n) + kk * c * c) / den
         s = s_new; c = c_new
      end do
   end subroutine jacobi_reduced

   !> sn, cn, dn(u, k) for any real u (modulus through the AGM data g); also the integer j
   !> with u = 2 j K + r, |r| <= K, and r itself.
   pure subroutine jacobi_sncndn(u, g, s, c, d, j, r)
      real(dp), intent(in) :: u
      type(agm_t), intent(in) :: g
      real(dp), intent(out) :: s, c, d, r
      integer, intent(out) :: j

      j = nint(u / (2 * g%quarter))
      r = u - 2 * j * g%quarter
      call jacobi_reduced(r, g, s, c, d)
      if (mod(j, 2) /= 0) then
         s = -s; c = -c
      end if
   end subroutine jacobi_sncndn

   !> Jacobi amplitude am(u, k) for any real u: am(u) = j pi + am(r), u = 2 j K + r.
   pure elemental function jacobi_am(u, k, kp) result(phi)
      real(dp), intent(in) :: u, k, kp
      real(dp) :: phi
      type(agm_t) :: g
      real(dp) :: s, c, d, r
      integer :: j

      if (kp == 0) then
         phi = 2 * atan(tanh(u / 2))        ! k = 1: the Gudermannian
         return
      end if
      g = agm_setup(k, kp)
      j = nint(u / (2 * g%quarter))
      r = u - 2 * j * g%quarter
      call jacobi_reduced(r, g, s, c, d)
      phi = j * pi + atan2(s, c)
   end function jacobi_am

   !> Complete integral of the first kind K(k) by the AGM.
   pure elemental function ellk(k, kp) result(kk)
      real(dp), intent(in) :: k, kp
      real(dp) :: kk
      type(agm_t) :: g

      g = agm_setup(k, kp)
      kk = g%quarter
   end function ellk

   !> Incomplete integral of the first kind F(phi, k) for any real phi by ascending Landen
   !> steps (seed 004, eqs. (17)-(19)): tan(phi_(n+1) - phi_n) = (b_n/a_n) tan(phi_n),
   !> F = lim phi_n / (2^n a_n). The branch of each step is the one nearest to phi_n.
   pure elemental function ellf_landen(phi, k, kp) result(f)
      real(dp), intent(in) :: phi, k, kp
      real(dp) :: f
      real(dp) :: a, b, c, an, ph, th, scale
      integer :: n

      if (kp == 0) then
         if (abs(phi) >= half_pi) then
            f = sign(huge(1.0_dp), phi)
         else
            f = atanh(sin(phi))
         end if
         return
      end if
      a = 1; b = kp; c = k; ph = phi; scale = 1
      n = 0
      do while (c > agm_stop * a .and. n < agm_max)
         n = n + 1
         th = atan2(b * sin(ph), a * cos(ph))
         th = th + 2 * pi * anint((ph - th) / (2 * pi))
         ph = ph + th
         scale = scale * 2
         an = (a + b) / 2
         b = sqrt(a * b)
         c = c * c / (4 * an)
         a = an
      end do
      f = ph / (scale * a)
   end function ellf_landen

   !> F(phi, k) for |phi| <= pi/2 from s = sin(phi), c = cos(phi) >= 0 and d = sqrt(1 - k^2 s^2),
   !> all three given: F = s RF(c^2, d^2, 1). Accurate when phi is near pi/2 and k near 1.
   pure elemental function ellf_sc(s, c, d) result(f)
      real(dp), intent(in) :: s, c, d
      real(dp) :: f

      f = s * carlson_rf(c * c, d * d, 1.0_dp)
   end function ellf_sc

   !> Incomplete integral of the third kind Pi(phi, n, k) for any real phi:
   !> Pi(phi + j pi) = Pi(phi) + 2 j Pi(pi/2), oddness in phi, and for |phi| <= pi/2
   !> Pi = s RF(c^2, d^2, 1) + (n/3) s^3 RJ(c^2, d^2, 1, 1 - n s^2), d^2 = c^2 + kp^2 s^2.
   !> Requires n sin^2(phi) < 1 (always true for n < 1); otherwise the result is NaN.
   pure elemental function ellpi(phi, n, k, kp) result(val)
      real(dp), intent(in) :: phi, n, k, kp
      real(dp) :: val
      real(dp) :: r, s, c, d2
      integer :: j

      j = nint(phi / pi)
      r = phi - j * pi
      s = sin(r); c = cos(r)
      d2 = c * c + kp * kp * s * s
      val = pi_reduced(s, c, d2, n, k)
      if (j /= 0) val = val + 2 * j * pi_reduced(1.0_dp, 0.0_dp, kp * kp, n, k)
   end function ellpi

   !> Pi(phi, n, k) for |phi| <= pi/2 from s = sin(phi), c = cos(phi), d2 = 1 - k^2 s^2:
   !> Pi = s RF(c^2, d2, 1) + (n/3) s^3 RJ(c^2, d2, 1, 1 - n s^2). For n < -1 the two terms
   !> nearly cancel (Pi ~ |n|^(-1/2)); then DLMF 19.7.9 with n' = k^2/n gives two positive terms,
   !> Pi = -(n'/3) s^3 RJ(c^2, d2, 1, 1 - n' s^2) + s RC(c^2 d2, (1 - n s^2)(1 - n' s^2)).
   pure elemental function pi_reduced(s, c, d2, n, k) result(val)
      real(dp), intent(in) :: s, c, d2, n, k
      real(dp) :: val
      real(dp) :: n2

      if (n < -1) then
         n2 = k * k / n
         val = s * carlson_rc(c * c * d2, (1 - n * s * s) * (1 - n2 * s * s))
         if (n2 /= 0) val = val - n2 / 3 * s**3 * carlson_rj(c * c, d2, 1.0_dp, 1 - n2 * s * s)
      else
         val = s * carlson_rf(c * c, d2, 1.0_dp)
         if (n /= 0) val = val + n / 3 * s**3 * carlson_rj(c * c, d2, 1.0_dp, 1 - n * s * s)
      end if
   end function pi_reduced

   !> The integral of the third kind between two amplitudes, Pi(phi2) - Pi(phi1).
   pure elemental function ellint_pi(phi1, phi2, n, k, kp) result(val)
      real(dp), intent(in) :: phi1, phi2, n, k, kp
      real(dp) :: val

      val = ellpi(phi2, n, k, kp) - ellpi(phi1, n, k, kp)
   end function ellint_pi

   !> The same integral by Gauss-Legendre quadrature with np nodes, 1 <= np <= 10
   !> (order 2 np; seed 004, eq. (20)) applied to the Legendre form of the integrand.
   pure elemental function eint_gauss(phi1, phi2, n, k, kp, np) result(val)
      real(dp), intent(in) :: phi1, phi2, n, k, kp
      integer, intent(in) :: np
      real(dp) :: val
      real(dp) :: th, s2
      integer :: i

      val = 0
      do i = 1, np
         th = phi1 + gl_node(i, np) * (phi2 - phi1)
         s2 = sin(th)**2
         val = val + gl_weight(i, np) / ((1 - n * s2) * sqrt(cos(th)**2 + kp * kp * s2))
      end do
      val = val * (phi2 - phi1)
   end function eint_gauss


end module frb_elliptic
