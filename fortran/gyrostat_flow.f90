! Exact flow of the gyrostat: a free rigid body with a constant internal angular momentum r (a
! momentum wheel at constant speed, a dual-spin satellite),
!     M' = M x w,   Q' = Q hat(w),   w = I^-1 m,   M = m + r,
! m the momentum of the rigid part (body frame), integrable for any r (Volterra 1899; Wittenburg,
! Dynamics of Systems of Rigid Bodies, 1977, and Dynamics of Multibody Systems, 2008; for r along
! a principal axis Cochran, Shu and Rew 1982,
! Elipe and Lanchares 2008). Derivation: docs/exact_flow.rst, "The gyrostat".
!
! Method:
! * M moves on the sphere |M| = G and the quadric (M - r) . I^-1 (M - r) = 2E. Its stereographic
!   coordinate zeta from -u0 (u0 = M0 / G, the pole frame (a, b, u0)) is a function of degree 2 on
!   this curve and obeys (dzeta/dz)^2 = p(zeta), z = G t / 2, with an explicit quartic p
!   (gyro_setup); Weierstrass's formula (Whittaker and Watson 1927, section 20.6) gives zeta(z) from
!   zeta(0) = 0 as a rational function of wp(z), wp'(z) with the invariants g2, g3 of p, the same
!   lattice for every component of M. M follows from zeta in homogeneous form (no division by a
!   small number anywhere on the sphere).
! * wp: short steps by its Laurent series (no roots, no AGM); longer ones by Jacobi's functions of
!   the real lattice (three real roots of 4 x^3 - g2 x - g3, or one), with sn, cn, dn by the AGM
!   (elliptic_functions).
! * The attitude: Q(t) = Q0 P(0)^T Y_d(psi) P(t), P the minimal rotation taking u = M / G to a
!   fixed body unit vector d, psi' = w . (u + d) / (1 + u . d). psi by Gauss-Legendre quadrature:
!   short steps in the gauge d = u0 with an error bound from the disk of analyticity of zeta
!   (short_nodes); longer steps in panels, each in the gauge of its start, composed (the Jacobi
!   functions at the second half of a panel's nodes by the addition theorem, jacobi_add); whole
!   periods as one rotation about u0 (the holonomy of a period: the trapezoidal rule over a period
!   in one gauge, period_holonomy, or the panels of one period where no gauge holds) taken n
!   times, and the rest within half a period in panels (panel_step). Every panel's rule
!   is checked on the stereographic coordinate of u from -d, whose change over the panel is
!   known (rule_resolved), and the panels are halved where it fails.
! * Steps with a phase |h| (|m| + |r|) / I_min above long_step_threshold take their secular part
!   from the exact inputs: the number n of whole periods and the rest in double-double arithmetic
!   (gyrostat_flow_dd; in quadruple precision, gyrostat_periods of gyrostat_flow_qp, beyond 2^42
!   periods), the angle Phi of one period in double precision as
!   one integral in the gauge u0 or, when the orbit leaves its hemisphere, a centre of the orbit
!   (period_angle), and the rest in double precision
!   (periods_step); the rounding of n Phi is bounded by n times the integral of |psi'| over a
!   period, which has to stay within long_step_threshold (as for a fast rotor, |r| >> |m|, whose
!   orbit is a small loop: many periods, a small angle). Other long steps run wholly in
!   quadruple precision from the exact inputs (gyrostat_flow_qp, the same code for kind qp). The
!   steps near a separatrix (k'^2 < refine_modulus) whose estimated loss of accuracy exceeds
!   refine_limit rounding errors run in quadruple-precision arithmetic with the rules of
!   double-precision results (gyrostat_flow_qp_dp, double_step): the states carried from panel
!   to panel in it, the nodes inside a panel in double precision (panel_angle_double).
! * r = 0 is the free rigid body: exact_flow.free_flow. A total momentum M = m + r small against
!   |m| + |r| (the wheels holding the body's momentum) takes the quadruple-precision route (the
!   double-precision flow would lose about 2 eps (|m| + |r|) / |M|), and one negligible over the
!   step's phase is the rotation about the constant w = I^-1 m.
module gyrostat_flow
   use kinds, only: dp, qp, wp => dp
   use, intrinsic :: ieee_arithmetic, only: ieee_value, ieee_quiet_nan, ieee_is_finite
   use checks, only: phase_limit, phase_over
   use numbers_table, only: ratio_threshold, long_step_threshold
   use elliptic_functions, only: agm_t, agm_setup, jacobi_reduced, half_pi
   use lane_math, only: lane_sin, lane_cos, lane_sincos, lane_atan2
   use exact_flow, only: free_flow
   use rotations, only: qmul
   use gyrostat_flow_qp, only: gyrostat_unit_qp => gyrostat_unit, gyrostat_periods_qp => gyrostat_periods, &
                               gq_mul_qp => gq_mul
   use gyrostat_flow_qp_dp, only: gyrostat_unit_qp_dp => gyrostat_unit
   use gyrostat_flow_dd, only: gyrostat_periods_dd
   implicit none
   private

   public :: gyrostat_step

   !> A total momentum M = m + hr below this fraction of |m| + |hr| takes the quadruple-precision
   !> route: the double-precision flow loses about 2 eps (|m| + |hr|) / |M| (the lattice and the
   !> pole frame of M0 scale with |M| while the rates scale with |m| + |hr|), 1.4e-14 here.
   real(dp), parameter :: small_total_momentum = 2.0_dp**(-5)
   !> Below this fraction times the step's phase, M is negligible over the step: m and the angular
   !> velocity w = I^-1 m are constant to that fraction, and the step is the rotation about w.
   real(dp), parameter :: negligible_total_momentum = 2.0_dp**(-60)

   integer, parameter :: result_digits = digits(1.0_wp)
   include 'gyrostat_flow_generic.inc'

   !> The gyrostat step for any momenta and positive moments (any order) over h of any sign:
   !> m_out = m(h) and the unit quaternion w with Q(h) = Q E(w), q(h) = q w (the conventions of
   !> exact_flow.free_flow); NaN beyond twice the phase limit (phase |h| (|m| + |hr|) / I_min).
   pure subroutine gyrostat_step(m, hr, h, inertia, m_out, w)
      real(dp), intent(in) :: m(3), hr(3), h, inertia(3)
      real(dp), intent(out) :: m_out(3), w(4)
      real(dp) :: big, imin, dd(3), tau, ms(3), rs(3), m1(3), gs, f, fi, total(3), small
      real(qp) :: ddq(3), m1q(3), wq(4), tq
      integer :: e
      logical :: done

      if (.not. (all(ieee_is_finite(m)) .and. all(ieee_is_finite(hr)) .and. ieee_is_finite(h))) then
         ! (a state that a previous flow of a splitting left non-finite: no step)
         m_out = ieee_value(1.0_dp, ieee_quiet_nan)
         w = m_out(1)
         return
      end if
      if (all(hr == 0)) then
         call free_flow(m, h, inertia, 0, m_out, w)
         return
      end if
      big = max(maxval(abs(m)), maxval(abs(hr)))
      imin = minval(inertia)
      if (h == 0 .or. big == 0) then
         m_out = m
         w = [1.0_dp, 0.0_dp, 0.0_dp, 0.0_dp]
         return
      end if
      ! scaled by powers of two (exact): the largest component in [1/2, 1), the time by 2^e / I_min
      e = exponent(big)
      if (abs(e) < maxexponent(1.0_dp) - 2) then
         f = set_exponent(1.0_dp, 1 - e)     ! 2^-e
         ms = m * f
         rs = hr * f
         fi = imin * f
         tau = (h / f) / imin
      else
         ms = scale(m, -e)
         rs = scale(hr, -e)
         fi = scale(imin, -e)
         tau = scale(h, e) / imin
      end if
      gs = sqrt(ms(1) * ms(1) + ms(2) * ms(2) + ms(3) * ms(3)) + sqrt(rs(1) * rs(1) + rs(2) * rs(2) + rs(3) * rs(3))
      ! (the phase |h| (|m| + |hr|) / I_min = |h| gs / (2^-e I_min))
      if (phase_over(h, gs, fi, 2 * phase_limit)) then
         m_out = ieee_value(1.0_dp, ieee_quiet_nan)
         w = m_out(1)
         return
      end if
      dd = imin / inertia
      ! (m_i + hr_i is exact where the two nearly cancel: Sterbenz's lemma)
      total = ms + rs
      small = sqrt(total(1) * total(1) + total(2) * total(2) + total(3) * total(3)) / gs
      if (small * max(1.0_dp, abs(tau)) <= negligible_total_momentum) then
         m_out = m
         w = constant_spin(m, inertia, h)
         return
      end if
      if (phase_over(h, gs, fi, long_step_threshold) .or. maxval(inertia) > ratio_threshold * imin &
          .or. small < small_total_momentum &
          .or. .not. (abs(tau) >= tiny(1.0_dp) .and. abs(tau) <= huge(1.0_dp))) then
         if (maxval(inertia) <= ratio_threshold * imin .and. abs(tau) >= tiny(1.0_dp) &
             .and. abs(tau) <= huge(1.0_dp) .and. small >= small_total_momentum) then
            call periods_step(ms, rs, dd, inertia, imin, h, e, tau, m1, w, done)
            if (done) then
               m_out = scale(m1, e)
               return
            end if
         end if
         ! in quadruple precision from the exact inputs: the whole periods as one rotation, the
         ! rest in panels (gyrostat_unit)
         ddq = real(imin, qp) / real(inertia, qp)
         tq = scale(real(h, qp), e) / real(imin, qp)
         if (small < small_total_momentum) then
            call small_total_step(real(ms, qp), real(rs, qp), ddq, tq, m1q, wq)
         else
            call gyrostat_unit_qp(real(ms, qp), real(rs, qp), ddq, tq, m1q, wq)
         end if
         m_out = scale(real(m1q, dp), e)
         w = real(wq, dp)
         return
      end if
      call double_step(ms, rs, dd, imin, inertia, tau, m1, w)
      if (abs(e) < maxexponent(1.0_dp) - 2) then
         m_out = m1 / f
      else
         m_out = scale(m1, e)
      end if
   end subroutine gyrostat_step

   !> A quadruple-precision step of a small total momentum M (scaled inputs, tau = h 2^e / I_min):
   !> the n whole periods of the step as one rotation about u0 = M0 / |M0| by n times the angle of
   !> one period (the increment over a period keeps M0: W(n T + r) = W(T)^n W(r)), each period
   !> and the rest r by gyrostat_unit. (Near M = 0 the panels of gyrostat_unit may not keep their
   !> gauges: it then halves the step down to its series, at a cost that grows with the step; the
   !> periods bound it by that of one period.)
   pure subroutine small_total_step(m, r, dd, tau, m1, w)
      real(qp), intent(in) :: m(3), r(3), dd(3), tau
      real(qp), intent(out) :: m1(3), w(4)
      real(qp) :: n, rest, loss, period, mp(3), wp1(4), wr(4), u0(3), c, phi
      logical :: ok

      call gyrostat_periods_qp(m, r, dd, tau, n, rest, loss, ok)
      if (.not. ok .or. abs(n) < 2) then
         call gyrostat_unit_qp(m, r, dd, tau, m1, w)
         return
      end if
      period = (tau - rest) / n
      call gyrostat_unit_qp(m, r, dd, period, mp, wp1)
      call gyrostat_unit_qp(m, r, dd, rest, m1, wr)
      u0 = (m + r) / sqrt(sum((m + r)**2))
      c = wp1(2) * u0(1) + wp1(3) * u0(2) + wp1(4) * u0(3)
      phi = n * 2 * atan2(c, wp1(1))
      w = gq_mul_qp([cos(phi / 2), sin(phi / 2) * u0], wr)
   end subroutine small_total_step

   !> The unit quaternion of the rotation by the angle h |wv| about the constant angular velocity
   !> wv = I^-1 m: its direction and its half angle h |wv| / 2 in quadruple precision from the
   !> exact inputs (in double precision the angle of a long step errs by about |h| |wv| eps).
   pure function constant_spin(m, inertia, h) result(w)
      real(dp), intent(in) :: m(3), inertia(3), h
      real(dp) :: w(4)
      real(qp) :: wv(3), om, half

      wv = real(m, qp) / real(inertia, qp)
      om = sqrt(wv(1) * wv(1) + wv(2) * wv(2) + wv(3) * wv(3))
      w = [1.0_dp, 0.0_dp, 0.0_dp, 0.0_dp]
      if (om > 0) then
         half = real(h, qp) * om / 2
         w = real([cos(half), sin(half) * wv / om], dp)
      end if
   end function constant_spin

   !> A long scaled step in double precision with its secular part from the exact inputs: the
   !> number n of whole periods and the rest s = tau - n T in [-T/2, T/2] in double-double arithmetic
   !> (gyrostat_flow_dd; in quadruple precision, gyrostat_periods, for more than 2^42 periods),
   !> the angle Phi of a period in double precision in a single gauge (period_angle),
   !> w = Y_u0(n Phi) W(s) with the rest W(s) by gyrostat_unit. The rounding of n Phi and of the
   !> rest is at most (|floor(tau / T)| + 1) times spread, the integral of |psi'| over a period in
   !> rounding errors: done = .false. (the caller takes the step in quadruple precision) when that
   !> exceeds long_step_threshold (the budget of a double-precision step's phase; spread taken times the
   !> difference of the double-precision period from the exact one in rounding errors, when
   !> more than one), when no gauge holds for the whole orbit, when a period may lose more than
   !> refine_limit rounding errors near a separatrix, or when the rest asks for the roots of its
   !> exact inputs. (ms, rs, dd, tau: the scaled step; inertia, imin, h, e: its exact inputs,
   !> tau = h 2^e / I_min.)
   pure subroutine periods_step(ms, rs, dd, inertia, imin, h, e, tau, m1, w, done)
      real(dp), intent(in) :: ms(3), rs(3), dd(3), inertia(3), imin, h, tau
      integer, intent(in) :: e
      real(dp), intent(out) :: m1(3), w(4)
      logical, intent(out) :: done
      real(dp) :: phi, axis(3), period, spread, n, rest, w1(4), c, s, drift, tper, tper_lo, loss, dev, &
                  counted
      real(qp) :: nq, restq, lossq, ddq(3), tq, tperq
      logical :: refine, wider

      m1 = 0
      w = 0
      call period_angle(ms, rs, dd, phi, axis, period, spread, done)
      if (.not. done) return
      done = (abs(tau) / period + 1) * spread <= long_step_threshold
      if (.not. done) return
      call gyrostat_periods_dd(ms, rs, inertia, imin, h, e, refine_limit, n, rest, tper, tper_lo, &
                               loss, done, wider)
      if (wider) then
         ddq = real(imin, qp) / real(inertia, qp)
         tq = scale(real(h, qp), e) / real(imin, qp)
         call gyrostat_periods_qp(real(ms, qp), real(rs, qp), ddq, tq, nq, restq, lossq, done)
         if (.not. done) return
         loss = real(lossq, dp)
         tperq = (tq - restq) / nq
         dev = real(abs(tperq - period), dp)
         counted = real(abs(nq), dp) + 1
         if (2 * restq > tperq) then
            restq = restq - tperq
            nq = nq + 1
         end if
         n = real(nq, dp)
         rest = real(restq, dp)
      else
         if (.not. done) return
         dev = abs((tper - period) + tper_lo)
         counted = abs(n) + 1
         if (2 * rest > tper) then
            ! (rest - tper exact: tper / 2 < rest < tper)
            rest = (rest - tper) - tper_lo
            n = n + 1
         end if
      end if
      ! the double-precision lattice's period against the exact one: Phi moves by spread times
      ! their relative difference (near an equilibrium the lattice's rounding grows)
      drift = max(1.0_dp, dev / (epsilon(1.0_dp) * abs(period)))
      done = loss <= refine_limit .and. counted * spread * drift <= long_step_threshold
      if (.not. done) return
      call gyrostat_unit(ms, rs, dd, rest, m1, w1, refine=refine)
      done = .not. refine
      if (.not. done) return
      call lane_sincos(n * phi / 2, s, c)
      w = gq_mul([c, s * axis], w1)
   end subroutine periods_step

   !> The scaled step in double precision (gyrostat_unit); a step that would lose more than
   !> gyrostat_unit's refine_limit rounding errors (near a separatrix: the discriminant of the
   !> lattice's roots cancels and the motion's sensitivity grows like 1 / k'^2) is taken in
   !> quadruple-precision arithmetic from the exact inputs (the moments' ratios I_min / I rounded
   !> in it) with the series and quadrature rules of double-precision results (gyrostat_flow_qp_dp).
   pure subroutine double_step(ms, rs, dd, imin, inertia, tau, m1, w)
      real(dp), intent(in) :: ms(3), rs(3), dd(3), imin, inertia(3), tau
      real(dp), intent(out) :: m1(3), w(4)
      real(qp) :: m1q(3), wq(4), ddq(3)
      logical :: refine

      call gyrostat_unit(ms, rs, dd, tau, m1, w, refine=refine)
      if (.not. refine) return
      ddq = real(imin, qp) / real(inertia, qp)
      call gyrostat_unit_qp_dp(real(ms, qp), real(rs, qp), ddq, real(tau, qp), m1q, wq)
      m1 = real(m1q, dp)
      w = real(wq, dp)
   end subroutine double_step

end module gyrostat_flow
