! The secular part of a long gyrostat step in double-double arithmetic (module double_double): the
! period T of the motion and the number n of whole periods of a step with its rest tau - n T, from
! the exact inputs, for the long steps that module gyrostat_flow takes in double precision (see
! there, periods_step). The same quantities as gyrostat_periods of the kind-generic code
! (gyrostat_flow_generic.inc), computed in a cheaper wider arithmetic and by a route that needs no
! elementary function beyond the square root in it:
! * the step's data in the pole frame of M0 and the quartic p and its invariants g2, g3 as in
!   gyro_setup and quartic_invariants (docs/exact_flow.rst, "The gyrostat", (G4));
! * the roots of 4 x^3 - g2 x - g3 by Newton's method from their double-precision values: three
!   real roots e1 > e2 > e3: e1 (a simple root, f'(e1) = 4 (e1 - e2)(e1 - e3)), then from the
!   quadratic left after dividing it out, (e1 - e2)(e1 - e3) = 3 e1^2 - g2 / 4 and
!   (e2 - e3)^2 = g2 - 3 e1^2, so lam^2 = e1 - e3 = (3 e1 + (e2 - e3)) / 2 and
!   k'^2 = (e1 - e2)(e1 - e3) / lam^4; one real root e2: H^2 = 3 e2^2 - g2 / 4 and
!   k^2 = 1/2 - 3 e2 / (4 H) written as (3 e2^2 - g2) / (4 H (2 H + 3 e2)) (or k'^2 so, for
!   e2 < 0), lam = 2 sqrt(H);
! * K = pi / (2 AGM(1, k')), the period P = 2 K (three real roots) or 4 K (one) in v = lam G tau / 2.
module gyrostat_flow_dd
   use kinds, only: dp
   use double_double, only: ddouble, cddouble, operator(+), operator(-), operator(*), operator(/), &
                            dd_sqrt, dd_value, dd_floor, dd_abs, cdd_conj, dd_pi
   implicit none
   private

   public :: gyrostat_periods_dd

   !> The largest number of whole periods whose rest the double-double period gives to well
   !> below a double's rounding of the period: n 2^-104 (times the lattice's condition) stays
   !> below 2^-62 for n <= 2^42.
   real(dp), parameter :: n_max = 2.0_dp**42

contains

   !> The whole periods of a scaled step (the arguments of gyrostat_flow's scaled step: m, r of
   !> size about one, the time tau = h 2^e / I_min with the moments inertia): n = floor(tau / T)
   !> and the rest tau - n T in [0, T) rounded to double precision, T the period (double-double:
   !> tper, tper_lo), loss = (P / K + 1) / k'^2 (gyrostat_unit's estimate of a period's loss in
   !> double precision near a separatrix). ok = .false. when the motion has no period (M0 = 0,
   !> an equilibrium, no lattice, a separatrix), the step is shorter than one period, loss
   !> exceeds loss_limit (n and the rest are then not computed), or n exceeds n_max (wider
   !> arithmetic needed: wider = .true.).
   pure subroutine gyrostat_periods_dd(m, r, inertia, imin, h, e, loss_limit, n, rest, tper, tper_lo, &
                                       loss, ok, wider)
      real(dp), intent(in) :: m(3), r(3), inertia(3), imin, h, loss_limit
      integer, intent(in) :: e
      real(dp), intent(out) :: n, rest, tper, tper_lo, loss
      logical, intent(out) :: ok, wider
      type(ddouble) :: dd(3), mm(3), g, gi, fu(3), fa(3), fb(3), w0(3), wp(3), dr(3), q(3), saa, sbb, &
                       sab, bz, kap, g2, g3, tau, s, c, u12, x, lam, kp, quarter, per, v, tt, t
      type(cddouble) :: om, rho, al, com, crho, cal, p(0:4), a1, a2, a3, two_a2
      real(dp) :: sg, e1d
      integer :: i, kind

      n = 0
      rest = 0
      tper = 0
      tper_lo = 0
      loss = huge(1.0_dp)
      wider = .false.
      ok = .false.
      do i = 1, 3
         dd(i) = ddouble(imin, 0.0_dp) / inertia(i)
         call two_sum_dd(m(i), r(i), mm(i))
         w0(i) = dd(i) * m(i)
         dr(i) = dd(i) * r(i)
      end do
      g = dd_sqrt(mm(1) * mm(1) + mm(2) * mm(2) + mm(3) * mm(3))
      if (.not. g%hi > 0) return
      gi = 1.0_dp / g
      fu = mm * gi
      ! the pole frame (a, b, u0) (gyrostat_flow_generic.inc, pole_frame)
      sg = sign(1.0_dp, fu(3)%hi)
      c = -1.0_dp / (fu(3) + sg)
      u12 = fu(1) * fu(2) * c
      fa = [1.0_dp + sg * (fu(1) * fu(1) * c), sg * u12, -sg * fu(1)]
      fb = [u12, sg + fu(2) * fu(2) * c, -fu(2)]
      wp(1) = dot(fa, w0)
      wp(2) = dot(fb, w0)
      wp(3) = dot(fu, w0)
      if (wp(1)%hi == 0 .and. wp(2)%hi == 0) return
      ! G I^-1 / G in the pole frame (its a-b block) and the quartic (gyro_setup, (G4))
      saa = dot(dd, fa * fa)
      sbb = dot(dd, fb * fb)
      sab = dot(dd, fa * fb)
      q = w0 + 2.0_dp * dr
      rho = cddouble(dot(fa, q) * gi, dot(fb, q) * gi)
      bz = dot(fu, dr) * gi
      om = cddouble(wp(1) * gi, wp(2) * gi)
      kap = (saa + sbb) - 2.0_dp * (wp(3) * gi)
      al = cddouble(saa - sbb, -2.0_dp * sab)
      cal = cdd_conj(al); com = cdd_conj(om); crho = cdd_conj(rho)
      p(0) = -(om * om)
      p(1) = 2.0_dp * (cal * com) - 2.0_dp * (kap * om)
      p(2) = cddouble(al%re * al%re + al%im * al%im, ddouble(0.0_dp, 0.0_dp)) - 4.0_dp * (rho * com) &
             - cddouble(kap * kap, ddouble(0.0_dp, 0.0_dp)) + 2.0_dp * (om * crho)
      p(3) = -2.0_dp * (rho * al) + 8.0_dp * (bz * com) + 2.0_dp * (kap * crho)
      p(4) = 4.0_dp * (bz * al) - crho * crho
      ! the invariants (quartic_invariants: a0 = p4, a1 = p3 / 4, a2 = p2 / 6, a3 = p1 / 4, a4 = p0)
      a1 = 0.25_dp * p(3)
      a3 = 0.25_dp * p(1)
      a2 = cddouble(p(2)%re / 6.0_dp, p(2)%im / 6.0_dp)
      two_a2 = a2 * a2
      g2 = re(p(4) * p(0)) - 4.0_dp * re(a1 * a3) + 3.0_dp * re(two_a2)
      g3 = re(p(4) * a2 * p(0)) + 2.0_dp * re(a1 * a2 * a3) - re(two_a2 * a2) - re(p(4) * a3 * a3) &
           - re(a1 * a1 * p(0))
      ! the roots, the modulus and lam
      t = g2 * g2 * g2 - 27.0_dp * (g3 * g3)
      if (t%hi > 0) then
         kind = 3
         e1d = 2 * sqrt(g2%hi / 12) * cos(atan2(sqrt(t%hi / 27), g3%hi) / 3)
      else
         kind = 1
         s = dd_sqrt(-t / 1728.0_dp)
         x = abs(g3%hi) / 8.0_dp + s
         if (.not. x%hi > 0) return
         e1d = sign(x%hi**(1 / 3.0_dp), g3%hi)
         e1d = e1d + g2%hi / (12 * e1d)
      end if
      x = newton_root(g2, g3, newton_root(g2, g3, ddouble(e1d, 0.0_dp)))
      ! (a root far from its double-precision value: Newton's method did not settle on it)
      if (.not. abs(x%hi - e1d) <= 2.0_dp**(-30) * max(abs(e1d), sqrt(abs(g2%hi)))) return
      if (kind == 3) then
         ! x = e1; s = e2 - e3, tt = (e1 - e2)(e1 - e3)
         s = g2 - 3.0_dp * (x * x)
         if (s%hi < 0) s = ddouble(0.0_dp, 0.0_dp)
         s = dd_sqrt(s)
         tt = 3.0_dp * (x * x) - 0.25_dp * g2
         lam = 0.5_dp * (3.0_dp * x + s)
         t = tt / (lam * lam)
         lam = dd_sqrt(lam)
      else
         ! x = e2; tt = H
         tt = dd_sqrt(3.0_dp * (x * x) - 0.25_dp * g2)
         if (.not. tt%hi > 0) return
         s = 3.0_dp * (x * x) - g2
         if (x%hi >= 0) then
            t = 1.0_dp - s / (4.0_dp * tt * (2.0_dp * tt + 3.0_dp * x))
         else
            t = s / (4.0_dp * tt * (2.0_dp * tt - 3.0_dp * x))
         end if
         lam = 2.0_dp * dd_sqrt(tt)
      end if
      ! t = k'^2
      if (.not. (t%hi > 0 .and. t%hi <= 1)) return
      loss = (merge(3.0_dp, 5.0_dp, kind == 3)) / t%hi
      if (loss > loss_limit) return
      kp = dd_sqrt(t)
      quarter = dd_pi / (2.0_dp * agm(kp))
      per = merge(2.0_dp, 4.0_dp, kind == 3) * quarter
      ! T = 2 P / (lam G) in tau; tau = (h / I_min) 2^e
      t = 2.0_dp * per / (lam * g)
      tau = ddouble(h, 0.0_dp) / imin
      tau = ddouble(scale(tau%hi, e), scale(tau%lo, e))
      v = tau / t
      x = dd_abs(v)
      if (x%hi < 1) return
      n = dd_floor(v)
      if (.not. abs(n) <= n_max) then
         wider = .true.
         return
      end if
      x = tau - n * t
      rest = x%hi + x%lo
      tper = t%hi
      tper_lo = t%lo
      ok = .true.
   end subroutine gyrostat_periods_dd

   !> a + b exactly as a double-double number.
   pure subroutine two_sum_dd(a, b, c)
      real(dp), intent(in) :: a, b
      type(ddouble), intent(out) :: c
      real(dp) :: s, e

      s = a + b
      e = s - a
      e = (a - (s - e)) + (b - e)
      c = dd_value(s, e)
   end subroutine two_sum_dd

   pure function dot(a, b) result(c)
      type(ddouble), intent(in) :: a(3), b(3)
      type(ddouble) :: c

      c = a(1) * b(1) + a(2) * b(2) + a(3) * b(3)
   end function dot

   pure function re(a) result(c)
      type(cddouble), intent(in) :: a
      type(ddouble) :: c

      c = a%re
   end function re

   !> One Newton step x - f(x) / f'(x) for f = 4 x^3 - g2 x - g3 (f in double-double, f' in
   !> double: the step's relative error is that of f' times the correction's).
   pure function newton_root(g2, g3, x) result(y)
      type(ddouble), intent(in) :: g2, g3, x
      type(ddouble) :: y, f
      real(dp) :: fp

      f = (4.0_dp * (x * x) - g2) * x - g3
      fp = 12 * x%hi * x%hi - g2%hi
      if (fp == 0) then
         y = x
      else
         y = x - f / fp
      end if
   end function newton_root

   !> The arithmetic-geometric mean of 1 and b (0 < b <= 1), to double-double precision.
   pure function agm(b) result(a)
      type(ddouble), intent(in) :: b
      type(ddouble) :: a, bb, an, d
      integer :: i

      a = ddouble(1.0_dp, 0.0_dp)
      bb = b
      do i = 1, 40
         d = a - bb
         if (abs(d%hi) <= 2.0_dp**(-104) * a%hi) exit
         an = 0.5_dp * (a + bb)
         bb = dd_sqrt(a * bb)
         a = an
      end do
   end function agm

end module gyrostat_flow_dd
