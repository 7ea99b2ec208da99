! Batched exact flows: the lock-step (lane) form of the exact short step, double precision, of the
! exact free flow of E. Celledoni, A. Zanna, "FRB-FORTRAN routines for the exact computation of
! free rigid body motions", ACM TOMS 37(2), 2010 (module exact_flow).
!
! This module is compiled with -fno-trapping-math (meson.build): it changes no computed value, but
! lets the compiler evaluate both sides of a merge, which it must to vectorise the lanes. The
! scalar flows (exact_flow) keep the default, under which their well-predicted branches are
! cheaper than selects.
!
! free_flow_lanes advances up to flow_lanes_width bodies together through the path that almost every
! short step takes in free_flow_unit: |v| <= jacobi_series_max, the addition formulas with
! den >= addition_min_den, then the angle either exactly (quadrature = 0) by RJ without duplication,
! or semi-exactly (quadrature = 1..10) by jint_gauss's Gauss-Legendre sum. Each stage is a loop over the
! bodies with the branches of free_flow_unit replaced by merges, so the compiler vectorises across
! bodies and the division and square-root chains of different bodies overlap. Every lane performs
! the SAME floating-point operations, in the same order, as free_flow_unit, jacobi_series,
! jacobi_reduced, jacobi_add, angle_increment, carlson_rj, atan_ratio, atan2_ratio, jint_gauss,
! attitude_from_angle and keep_invariants do for that body (the tests compare the batched and the
! single-body paths bit for bit): a change to one of those routines must be made here too. Their sin, cos, atan and
! atan2 are lane_math's, whose bodies (lane_math_generic.inc) are included here, so that they
! inline into the loops and vectorise.
! A body that needs another path (near an axis or the separatrix, |v| beyond the series, small
! den, RJ duplications) is flagged and stepped by free_flow_unit instead (free_flow_chunk); long
! exact steps (symmetric_long, precise_long) are left to free_flow. Moments out of order
! are sorted in the lanes by flow_prepare's swaps, and the results put back by flow_finish's
! permutation (the same operations).
module exact_flow_lanes
   use kinds, only: dp, wp => dp
   use elliptic_functions, only: jacobi_series_max, sn_series_terms, sn_series_limit, rj_q, gl_node, gl_weight, &
                                 agm_stop, agm_max, half_pi, rc_series_max, carlson_rj
   use exact_flow, only: flow_prep_t, flow_prepare, flow_finish, path_unit, free_flow, free_flow_unit, &
                             symmetric_long, symmetric_step_threshold, keep_invariants, &
                             precise_long, precise_step_threshold, &
                             invariants_min_det, &
                             long_step_threshold, ratio_threshold, norm_sq_min, norm_sq_max, &
                             invariant_floor, addition_min_den, secular_semi_exact, short_change_max
   use numbers_table, only: flow_lanes_width
   implicit none
   private

   public :: free_flow_chunk, keep_invariants_lanes
   ! (the stages the lanes of the derivatives share: flow_tangent_lanes)
   public :: jacobi_agm_lanes, rj_duplications_lanes, sincos_lanes, atan_ratio_lanes, atan2_ratio_lanes
   !> Number of bodies advanced in lock-step by free_flow_chunk (a shared number).
   public :: flow_lanes_width

   ! the constants of lane_math's functions (whose bodies are included below)
   include 'lane_math_table.inc'

contains

   include 'jacobi_series_lanes_table.inc'
   include 'carlson_rj_series_generic.inc'
   include 'lane_math_generic.inc'

   !> free_flow for the bodies b0 .. b0+nc-1 of a batch, nc <= flow_lanes_width: their momenta
   !> m(3, nc) -> m_out(3, nc) and quaternions w(4, nc), the steps h(nh) and moments inertia(3, ni)
   !> of the whole batch (nh, ni either 1, shared, or the batch size). The unit-norm steps, exact
   !> (quadrature = 0) or semi-exact (1..10), run in lock-step through free_flow_lanes; bodies that
   !> need another path run through free_flow_unit. The results are those of free_flow, bit for bit.
   pure subroutine free_flow_chunk(nc, b0, nh, ni, m, h, inertia, quadrature, m_out, w)
      integer, intent(in) :: nc, b0, nh, ni, quadrature
      real(dp), intent(in) :: m(3, nc), h(nh), inertia(3, ni)
      real(dp), intent(out) :: m_out(3, nc), w(4, nc)
      integer, parameter :: nb = flow_lanes_width
      type(flow_prep_t) :: p(nb)
      real(dp) :: ml(nb, 3), tl(nb), cl(nb, 3), m1l(nb, 3), wl(nb, 4), m1s(3), ws(4), gl(nb)
      real(dp) :: hl(nb), il(3, nb), fast(nb), s, imax, symmetric_limit, asymmetric_limit
      real(dp) :: a1, a2, a3, u1, u2, u3
      real(dp) :: p1, p2, p3, t, swap, x(3), y(3), pl(nb, 3), sgl(nb), x1, x2, x3, y1, y2, y3
      real(dp) :: cs(3), h_scaled, al(nb), z1, z2, z3
      logical :: ok(nb), lane(nb), shared, short
      integer :: k

      do k = 1, nc
         hl(k) = h(min(b0 + k - 1, nh))
         il(:, k) = inertia(:, min(b0 + k - 1, ni))
      end do
      if (nc == 1) then
         do k = 1, nc
            call free_flow(m(:, k), hl(k), il(:, k), quadrature, m_out(:, k), w(:, k))
         end do
         return
      end if
      ! one step and one body's moments for the whole batch (the usual call): the quotients of
      ! the moments and the step by the largest moment are the same in every lane, formed once
      ! (the same operations on the same operands as in each lane)
      shared = nh == 1 .and. ni == 1
      if (shared) then
         ! (the moments sorted by the lanes' swaps below)
         cs = inertia(:, 1)
         if (cs(2) < cs(1)) cs(1:2) = cs([2, 1])
         if (cs(3) < cs(2)) cs(2:3) = cs([3, 2])
         if (cs(2) < cs(1)) cs(1:2) = cs([2, 1])
         imax = cs(3)
         h_scaled = h(1) / imax
         cs(1) = cs(1) / imax; cs(2) = cs(2) / imax
      end if
      ! The usual case in lock-step: |m| and the unit momentum (split_norm), the moments put in
      ! order by flow_prepare's insertion sort (its swaps of (1, 2), (2, 3), (1, 2), each flipping
      ! the sign of the third axis; the permutation kept in pl, the sign in sgl), not a long step
      ! (flow_prepare's operations), nor a long exact step of a symmetric body (symmetric_long)
      ! or of another (precise_long)
      symmetric_limit = merge(symmetric_step_threshold, long_step_threshold, quadrature == 0)
      asymmetric_limit = merge(precise_step_threshold, long_step_threshold, quadrature == 0)
      do k = 1, nc
         s = m(1, k) * m(1, k) + m(2, k) * m(2, k) + m(3, k) * m(3, k)
         gl(k) = sqrt(s)
         u1 = m(1, k) / gl(k); u2 = m(2, k) / gl(k); u3 = m(3, k) / gl(k)
         a1 = il(1, k); a2 = il(2, k); a3 = il(3, k)
         p1 = 1; p2 = 2; p3 = 3; t = 1
         swap = merge(1.0_dp, 0.0_dp, a2 < a1)
         call exchange(swap, a1, a2, u1, u2, p1, p2, t)
         swap = merge(1.0_dp, 0.0_dp, a3 < a2)
         call exchange(swap, a2, a3, u2, u3, p2, p3, t)
         swap = merge(1.0_dp, 0.0_dp, a2 < a1)
         call exchange(swap, a1, a2, u1, u2, p1, p2, t)
         ml(k, 1) = u1; ml(k, 2) = u2; ml(k, 3) = t * u3
         pl(k, 1) = p1; pl(k, 2) = p2; pl(k, 3) = p3; sgl(k) = t
         ! (the quotients by imax = a3 below; a3 / imax = 1 exactly)
         cl(k, 1) = a1; cl(k, 2) = a2; cl(k, 3) = 1; al(k) = a3
         fast(k) = merge(1.0_dp, 0.0_dp, s >= norm_sq_min .and. s <= norm_sq_max .and. hl(k) /= 0 &
                         .and. abs(hl(k)) * gl(k) <= merge(symmetric_limit, asymmetric_limit, &
                                                           a1 == a2 .or. a2 == a3) * a1 &
                         .and. abs(hl(k)) * gl(k) <= huge(1.0_dp) &
                         .and. a3 <= ratio_threshold * a1)
      end do
      if (shared) then
         do k = 1, nc
            tl(k) = gl(k) * h_scaled
            cl(k, 1) = cs(1); cl(k, 2) = cs(2)
         end do
      else
         do k = 1, nc
            tl(k) = gl(k) * (hl(k) / al(k))
            cl(k, 1) = cl(k, 1) / al(k); cl(k, 2) = cl(k, 2) / al(k)
         end do
      end if
      ! the other bodies: sorted by flow_prepare into a lane (a unit-norm step), or done here
      do k = 1, nc
         lane(k) = fast(k) > 0
         if (lane(k)) cycle
         call flow_prepare(m(:, k), hl(k), il(:, k), p(k))
         if (p(k)%path == path_unit .and. .not. symmetric_long(hl(k), p(k)%g, il(:, k), quadrature) &
             .and. .not. precise_long(hl(k), p(k)%g, il(p(k)%perm(1), k), il(p(k)%perm(3), k), quadrature)) then
            lane(k) = .true.
            ml(k, :) = p(k)%ms; tl(k) = p(k)%tau; cl(k, :) = p(k)%cs
         else
            call free_flow(m(:, k), hl(k), il(:, k), quadrature, m_out(:, k), w(:, k))
         end if
      end do
      call free_flow_lanes(nc, ml, tl, cl, quadrature, m1l, wl, ok)
      call keep_invariants_lanes(nc, ml, cl, m1l)
      if (all(ok(1:nc)) .and. all(fast(1:nc) > 0)) then
         ! the usual chunk: every body in the lanes, none rescaled (the loops below, without
         ! branches)
         if (all(pl(1:nc, 1) == 1 .and. pl(1:nc, 2) == 2)) then
            ! moments in order
            do k = 1, nc
               ! (flow_finish: a short step moves m by its change)
               short = max(abs(m1l(k, 1) - ml(k, 1)), abs(m1l(k, 2) - ml(k, 2)), &
                           abs(m1l(k, 3) - ml(k, 3))) <= short_change_max
               m_out(1, k) = merge(m(1, k) + (m1l(k, 1) - ml(k, 1)) * gl(k), m1l(k, 1) * gl(k), short)
               m_out(2, k) = merge(m(2, k) + (m1l(k, 2) - ml(k, 2)) * gl(k), m1l(k, 2) * gl(k), short)
               m_out(3, k) = merge(m(3, k) + (m1l(k, 3) - ml(k, 3)) * gl(k), m1l(k, 3) * gl(k), short)
               w(1, k) = wl(k, 1); w(2, k) = wl(k, 2); w(3, k) = wl(k, 3); w(4, k) = wl(k, 4)
            end do
            return
         end if
         ! flow_finish: m_out(perm(i)) = m(perm(i)) + sgn(i) (m1(i) - ms(i)) g for a short step,
         ! sgn(i) m1(i) g for a longer one; w(1 + perm(i)) = sgn(i) w(1 + i)
         do k = 1, nc
            short = max(abs(m1l(k, 1) - ml(k, 1)), abs(m1l(k, 2) - ml(k, 2)), &
                        abs(m1l(k, 3) - ml(k, 3))) <= short_change_max
            x1 = merge(m1l(k, 1) - ml(k, 1), m1l(k, 1), short) * gl(k)
            x2 = merge(m1l(k, 2) - ml(k, 2), m1l(k, 2), short) * gl(k)
            x3 = sgl(k) * merge(m1l(k, 3) - ml(k, 3), m1l(k, 3), short) * gl(k)
            y1 = wl(k, 2); y2 = wl(k, 3); y3 = sgl(k) * wl(k, 4)
            z1 = merge(x1, merge(x2, x3, pl(k, 2) == 1), pl(k, 1) == 1)
            z2 = merge(x1, merge(x2, x3, pl(k, 2) == 2), pl(k, 1) == 2)
            z3 = merge(x1, merge(x2, x3, pl(k, 2) == 3), pl(k, 1) == 3)
            m_out(1, k) = merge(m(1, k) + z1, z1, short)
            m_out(2, k) = merge(m(2, k) + z2, z2, short)
            m_out(3, k) = merge(m(3, k) + z3, z3, short)
            w(1, k) = wl(k, 1)
            w(2, k) = merge(y1, merge(y2, y3, pl(k, 2) == 1), pl(k, 1) == 1)
            w(3, k) = merge(y1, merge(y2, y3, pl(k, 2) == 2), pl(k, 1) == 2)
            w(4, k) = merge(y1, merge(y2, y3, pl(k, 2) == 3), pl(k, 1) == 3)
         end do
         return
      end if
      do k = 1, nc
         if (.not. lane(k)) cycle
         if (ok(k)) then
            m1s = m1l(k, :)
            ws = wl(k, :)
         else
            call free_flow_unit(ml(k, :), tl(k), cl(k, :), quadrature, m1s, ws)
            call keep_invariants(ml(k, :), cl(k, :), m1s)
         end if
         if (fast(k) > 0) then
            short = maxval(abs(m1s - ml(k, :))) <= short_change_max
            if (short) then
               x = [(m1s(1) - ml(k, 1)) * gl(k), (m1s(2) - ml(k, 2)) * gl(k), sgl(k) * (m1s(3) - ml(k, 3)) * gl(k)]
               m_out(nint(pl(k, :)), k) = m(nint(pl(k, :)), k) + x
            else
               m_out(nint(pl(k, :)), k) = [m1s(1) * gl(k), m1s(2) * gl(k), sgl(k) * m1s(3) * gl(k)]
            end if
            y = [ws(2), ws(3), sgl(k) * ws(4)]
            w(1, k) = ws(1)
            w(1 + nint(pl(k, :)), k) = y
         else
            call flow_finish(p(k), m(:, k), m1s, ws, m_out(:, k), w(:, k))
         end if
      end do
   end subroutine free_flow_chunk

   !> One swap of flow_prepare's insertion sort where swap = 1: the moments a, b, the momentum
   !> components u, v and the axes p, q exchanged, the sign t flipped.
   pure subroutine exchange(swap, a, b, u, v, p, q, t)
      real(dp), intent(in) :: swap
      real(dp), intent(inout) :: a, b, u, v, p, q, t
      real(dp) :: r

      r = merge(b, a, swap > 0); b = merge(a, b, swap > 0); a = r
      r = merge(v, u, swap > 0); v = merge(u, v, swap > 0); u = r
      r = merge(q, p, swap > 0); q = merge(p, q, swap > 0); p = r
      t = merge(-t, t, swap > 0)
   end subroutine exchange

   !> keep_invariants(m0(k, :), ci(k, :), m1(k, :)) for the lanes k = 1..nl, the same operations.
   pure subroutine keep_invariants_lanes(nl, m0, ci, m1)
      integer, intent(in) :: nl
      real(dp), intent(in) :: m0(flow_lanes_width, 3), ci(flow_lanes_width, 3)
      real(dp), intent(inout) :: m1(flow_lanes_width, 3)
      real(dp) :: e1, e2, e3, v1, v2, v3, d1, d2, d3, rg, re, a11, a12, a22, det, r, pa, pb
      logical :: both
      integer :: k

      do k = 1, nl
         e1 = ci(k, 2) * ci(k, 3); e2 = ci(k, 1) * ci(k, 3); e3 = ci(k, 1) * ci(k, 2)
         d1 = (m0(k, 1) - m1(k, 1)) * (m0(k, 1) + m1(k, 1))
         d2 = (m0(k, 2) - m1(k, 2)) * (m0(k, 2) + m1(k, 2))
         d3 = (m0(k, 3) - m1(k, 3)) * (m0(k, 3) + m1(k, 3))
         v1 = e1 * m1(k, 1); v2 = e2 * m1(k, 2); v3 = e3 * m1(k, 3)
         rg = d1 + d2 + d3
         re = e1 * d1 + e2 * d2 + e3 * d3
         a11 = m1(k, 1) * m1(k, 1) + m1(k, 2) * m1(k, 2) + m1(k, 3) * m1(k, 3)
         a12 = m1(k, 1) * v1 + m1(k, 2) * v2 + m1(k, 3) * v3
         a22 = v1 * v1 + v2 * v2 + v3 * v3
         det = a11 * a22 - a12 * a12
         both = det > invariants_min_det * (a11 * a22)
         r = 1 / (2 * merge(det, a11, both))
         pa = merge(a22 * rg - a12 * re, rg, both) * r
         pb = merge(a11 * re - a12 * rg, 0.0_dp, both) * r
         m1(k, 1) = m1(k, 1) + (pa * m1(k, 1) + pb * v1)
         m1(k, 2) = m1(k, 2) + (pa * m1(k, 2) + pb * v2)
         m1(k, 3) = m1(k, 3) + (pa * m1(k, 3) + pb * v3)
      end do
   end subroutine keep_invariants_lanes

   !> atan_ratio(w(k), z(k)) for the lanes k = 1..nl (atanc_near, the same bits as lane_atanc,
   !> when every lane is within it).
   pure subroutine atan_ratio_lanes(nl, w, z, val)
      integer, intent(in) :: nl
      real(dp), intent(in) :: w(flow_lanes_width), z(flow_lanes_width)
      real(dp), intent(out) :: val(flow_lanes_width)
      real(dp) :: t(flow_lanes_width)
      integer :: k

      do k = 1, nl
         t(k) = w(k) * z(k)
      end do
      if (all(abs(t(1:nl)) <= tan_pi_8)) then
         do k = 1, nl
            val(k) = z(k) * atanc_near(t(k))
         end do
      else
         do k = 1, nl
            val(k) = z(k) * lane_atanc(t(k))
         end do
      end if
   end subroutine atan_ratio_lanes

   !> lane_sincos(x(k), s(k), c(k)) for the lanes k = 1..nl (sincos_near, the same bits, when
   !> every lane is within it).
   pure subroutine sincos_lanes(nl, x, s, c)
      integer, intent(in) :: nl
      real(dp), intent(in) :: x(flow_lanes_width)
      real(dp), dimension(flow_lanes_width), intent(out) :: s, c
      integer :: k

      if (all(abs(x(1:nl)) * two_over_pi < 0.5_dp)) then
         do k = 1, nl
            call sincos_near(x(k), s(k), c(k))
         end do
      else
         do k = 1, nl
            call lane_sincos(x(k), s(k), c(k))
         end do
      end if
   end subroutine sincos_lanes

   !> atan2_ratio(w(k), y(k), x(k)) for the lanes k = 1..nl (lane_atan2 where x <= 0, if any lane
   !> has one).
   pure subroutine atan2_ratio_lanes(nl, w, y, x, val)
      integer, intent(in) :: nl
      real(dp), intent(in) :: w(flow_lanes_width), y(flow_lanes_width), x(flow_lanes_width)
      real(dp), intent(out) :: val(flow_lanes_width)
      real(dp) :: z(flow_lanes_width), west(flow_lanes_width), angle
      integer :: k

      do k = 1, nl
         z(k) = y(k) / x(k)
         west(k) = merge(0.0_dp, 1.0_dp, x(k) > 0)
      end do
      call atan_ratio_lanes(nl, w, z, val)
      if (any(west(1:nl) > 0)) then
         do k = 1, nl
            angle = lane_atan2(w(k) * y(k), x(k)) / w(k)
            val(k) = merge(angle, val(k), west(k) > 0)
         end do
      end if
   end subroutine atan2_ratio_lanes

   !> sn, cn, dn(v(k) | m = k2(k)) for the lanes k = 1..nl with use(k) = 1 (others: 0), as
   !> free_flow_unit computes them for |v| beyond the series: agm_setup (the Gauss transformations,
   !> each lane through its own number of levels), then jacobi_reduced (lane_sincos, then the
   !> levels back down); kp^2 = kp2n / kp2d. A lane with |v| > K (not
   !> served by the addition formulas) gets use(k) = -1.
   pure subroutine jacobi_agm_lanes(nl, use, k2, kp2n, kp2d, v, s, c, d)
      integer, intent(in) :: nl
      real(dp), dimension(flow_lanes_width), intent(inout) :: use
      real(dp), dimension(flow_lanes_width), intent(in) :: k2, kp2n, kp2d, v
      real(dp), dimension(flow_lanes_width), intent(out) :: s, c, d
      real(dp), dimension(flow_lanes_width) :: kn, kpn, a, levels, w
      real(dp) :: kl(flow_lanes_width, agm_max), oml(flow_lanes_width, agm_max), t, act, kk
      real(dp) :: den, s_new, c_new, d_new, corr
      integer :: k, n, top

      ! agm_setup: k_(n+1) = (k_n / (1 + k'_n))^2, k'_(n+1) = 2 sqrt(k'_n) / (1 + k'_n), ...
      do k = 1, nl
         kn(k) = sqrt(k2(k)); kpn(k) = sqrt(kp2n(k) / kp2d(k)); a(k) = 1; levels(k) = 0
      end do
      top = 0
      do n = 1, agm_max
         act = 0
         do k = 1, nl
            act = max(act, merge(1.0_dp, 0.0_dp, use(k) > 0 .and. kn(k) > agm_stop))
         end do
         if (act == 0) exit
         top = n
         do k = 1, nl
            act = merge(1.0_dp, 0.0_dp, use(k) > 0 .and. kn(k) > agm_stop)
            t = 1 / (1 + kpn(k))
            oml(k, n) = 2 * kpn(k) * t
            a(k) = merge(a(k) * (1 + kpn(k)) / 2, a(k), act > 0)
            kpn(k) = merge(2 * sqrt(kpn(k)) * t, kpn(k), act > 0)
            kn(k) = merge((kn(k) * t)**2, kn(k), act > 0)
            kl(k, n) = kn(k)
            levels(k) = levels(k) + act
         end do
      end do
      ! jacobi_reduced at r = v, where |v| <= K = (pi / 2) / a_N
      do k = 1, nl
         use(k) = merge(-1.0_dp, use(k), use(k) > 0 .and. .not. abs(v(k)) <= half_pi / a(k))
         w(k) = a(k) * v(k)
      end do
      call sincos_lanes(nl, w, s, c)
      do k = 1, nl
         s(k) = merge(s(k), 0.0_dp, use(k) > 0)
         c(k) = merge(c(k), 1.0_dp, use(k) > 0)
      end do
      do k = 1, nl
         kk = kn(k)**2
         corr = kk / 4 * (w(k) - s(k) * c(k))
         d(k) = 1 - kk / 2 * s(k) * s(k)
         s_new = s(k) - corr * c(k)
         c(k) = c(k) + corr * s(k)
         s(k) = s_new
      end do
      do n = top, 1, -1
         do k = 1, nl
            kk = kl(k, n)
            den = 1 / (1 + kk * s(k) * s(k))
            s_new = (1 + kk) * s(k) * den
            c_new = c(k) * d(k) * den
            d_new = (oml(k, n) + kk * c(k) * c(k)) * den
            s(k) = merge(s_new, s(k), n <= levels(k))
            c(k) = merge(c_new, c(k), n <= levels(k))
            d(k) = merge(d_new, d(k), n <= levels(k))
         end do
      end do
   end subroutine jacobi_agm_lanes

   !> carlson_rj(x(k), y(k), 1, p(k), weight(k)) for the lanes k = 1..nl with use(k) > 0, whose
   !> series needs duplications: the duplications of carlson_rj in lock-step, each lane through
   !> its own number (lane_atanc in RC beyond its series). A lane with
   !> delta = (p - x)(p - y)(p - 1) < 0 (not in exact arithmetic: p - x = (1 + a) sn^2 and
   !> p - y = (a + k^2) sn^2), or still duplicating after max_duplications, is computed by
   !> carlson_rj itself.
   pure subroutine rj_duplications_lanes(nl, use, x, y, p, weight, rj)
      integer, intent(in) :: nl
      real(dp), dimension(flow_lanes_width), intent(in) :: use, x, y, p, weight
      real(dp), dimension(flow_lanes_width), intent(out) :: rj
      integer, parameter :: max_duplications = 40
      real(dp), dimension(flow_lanes_width) :: xm, ym, zm, pm, am, a0, q, delta, fourm, sum_rc
      real(dp), dimension(flow_lanes_width) :: act, lam, dm, em, rc, far
      real(dp) :: sx, sy, sz, sp, r, rc_far
      integer :: k, it

      do k = 1, nl
         xm(k) = x(k); ym(k) = y(k); zm(k) = 1.0_dp; pm(k) = p(k)
         a0(k) = (x(k) + y(k) + 1.0_dp + 2 * p(k)) * 0.2_dp
         am(k) = a0(k)
         q(k) = rj_q * max(abs(a0(k) - x(k)), abs(a0(k) - y(k)), abs(a0(k) - 1.0_dp), abs(a0(k) - p(k)))
         delta(k) = (p(k) - x(k)) * (p(k) - y(k)) * (p(k) - 1.0_dp)
         fourm(k) = 1
         sum_rc(k) = 0
      end do
      do it = 1, max_duplications
         do k = 1, nl
            act(k) = merge(1.0_dp, 0.0_dp, use(k) > 0 .and. delta(k) >= 0 &
                           .and. rj_needs_duplication(weight(k), q(k) * fourm(k) / am(k)))
         end do
         if (.not. any(act(1:nl) > 0)) exit
         do k = 1, nl
            sx = sqrt(xm(k)); sy = sqrt(ym(k)); sz = sqrt(zm(k))
            lam(k) = sx * (sy + sz) + sy * sz
            sp = sqrt(pm(k))
            dm(k) = (sp + sx) * (sp + sy) * (sp + sz)
            em(k) = fourm(k)**3 * delta(k) / (dm(k) * dm(k))
            ! rc_one_positive(em) by its series
            rc(k) = 1 - em(k) * (1 / 3.0_dp - em(k) * (0.2_dp - em(k) * (1 / 7.0_dp - em(k) * (1 / 9.0_dp &
                    - em(k) * (1 / 11.0_dp - em(k) / 13.0_dp)))))
            far(k) = merge(1.0_dp, 0.0_dp, act(k) > 0 .and. .not. em(k) < rc_series_max)
         end do
         if (any(far(1:nl) > 0)) then
            do k = 1, nl
               rc_far = lane_atanc(sqrt(em(k)))
               rc(k) = merge(rc_far, rc(k), far(k) > 0)
            end do
         end if
         do k = 1, nl
            sum_rc(k) = merge(sum_rc(k) + fourm(k) * 2 * rc(k) / dm(k), sum_rc(k), act(k) > 0)
            xm(k) = merge((xm(k) + lam(k)) * 0.25_dp, xm(k), act(k) > 0)
            ym(k) = merge((ym(k) + lam(k)) * 0.25_dp, ym(k), act(k) > 0)
            zm(k) = merge((zm(k) + lam(k)) * 0.25_dp, zm(k), act(k) > 0)
            pm(k) = merge((pm(k) + lam(k)) * 0.25_dp, pm(k), act(k) > 0)
            am(k) = merge((am(k) + lam(k)) * 0.25_dp, am(k), act(k) > 0)
            fourm(k) = merge(fourm(k) * 0.25_dp, fourm(k), act(k) > 0)
         end do
      end do
      do k = 1, nl
         r = fourm(k) / am(k)
         rj(k) = r * sqrt(r / fourm(k)) * rj_series((a0(k) - x(k)) * r, (a0(k) - y(k)) * r, &
                                                    (a0(k) - 1.0_dp) * r) + 3 * sum_rc(k)
      end do
      do k = 1, nl
         if (use(k) > 0 .and. (.not. delta(k) >= 0 .or. act(k) > 0)) &
            rj(k) = carlson_rj(x(k), y(k), 1.0_dp, p(k), weight(k))
      end do
   end subroutine rj_duplications_lanes

   !> cos and sin of e x(k) for the lanes k = 1..nl (sincos_lanes).
   pure subroutine cos_sin_lanes(nl, e, x, c, s)
      integer, intent(in) :: nl
      real(dp), intent(in) :: e, x(flow_lanes_width)
      real(dp), dimension(flow_lanes_width), intent(out) :: c, s
      real(dp) :: ex(flow_lanes_width)
      integer :: k

      do k = 1, nl
         ex(k) = e * x(k)
      end do
      call sincos_lanes(nl, ex, s, c)
   end subroutine cos_sin_lanes

   !> The angle psi of the semi-exact short step of free_flow_unit (quadrature = np nodes) for the
   !> lanes k = 1..nl, from the stages of free_flow_lanes: dphi = atan2_ratio(1, ...) of the
   !> amplitude difference, then jint_gauss's sum over the midpoint and the pairs of nodes in
   !> lock-step (cos_sin_lanes).
   !> psi = tau / I_a + D_a / (sigma lambda) jint, the operations of free_flow_unit.
   pure subroutine semi_exact_angle(nl, np, sn0, cn0, s1, cc1, bab, kp2n, kp2d, tau, cia, dcoef, &
                                    sigma, lam, psi)
      integer, intent(in) :: nl, np
      real(dp), dimension(flow_lanes_width), intent(in) :: sn0, cn0, s1, cc1, bab, kp2n, kp2d, tau, &
                                                           cia, dcoef, sigma, lam
      real(dp), intent(out) :: psi(flow_lanes_width)
      real(dp), dimension(flow_lanes_width) :: dphi, kp2, val, ay, ax, sm, cm, cd, sd, one
      real(dp) :: s, c, d, dd, ps, qs, pc, qc, weight, middle
      integer :: k, i

      do k = 1, nl
         ay(k) = s1(k) * cn0(k) - cc1(k) * sn0(k)
         ax(k) = cc1(k) * cn0(k) + s1(k) * sn0(k)
         kp2(k) = kp2n(k) / kp2d(k)
         one(k) = 1
      end do
      ! |dphi| < pi as |v| <= K
      call atan2_ratio_lanes(nl, one, ay, ax, dphi)
      ! the midpoint phi_m = phi0 + dphi/2 and, for odd np, its node (for even np, middle = 0 and
      ! so val = +0, jint_gauss's start)
      middle = merge(gl_weight((np + 1) / 2, np), 0.0_dp, mod(np, 2) == 1)
      call cos_sin_lanes(nl, 0.5_dp, dphi, cd, sd)
      do k = 1, nl
         sm(k) = sn0(k) * cd(k) + cn0(k) * sd(k)
         cm(k) = cn0(k) * cd(k) - sn0(k) * sd(k)
         d = sqrt(cm(k) * cm(k) + kp2(k) * sm(k) * sm(k))
         val(k) = middle / (d * (1 + bab(k) * d))
      end do
      ! the pairs of nodes phi_m -+ e_i dphi
      do i = 1, np / 2
         weight = gl_weight(i, np)
         call cos_sin_lanes(nl, 0.5_dp - gl_node(i, np), dphi, cd, sd)
         do k = 1, nl
            ps = sm(k) * cd(k); qs = cm(k) * sd(k)
            pc = cm(k) * cd(k); qc = sm(k) * sd(k)
            s = ps - qs; c = pc + qc
            d = sqrt(c * c + kp2(k) * s * s)
            s = ps + qs; c = pc - qc
            dd = sqrt(c * c + kp2(k) * s * s)
            val(k) = val(k) + (weight / (d * (1 + bab(k) * d)) + weight / (dd * (1 + bab(k) * dd)))
         end do
      end do
      do k = 1, nl
         ! (jint_gauss returns 0 for an empty interval)
         val(k) = merge(0.0_dp, val(k) * dphi(k), dphi(k) == 0)
      end do
      do k = 1, nl
         psi(k) = tau(k) / cia(k) + dcoef(k) / (sigma(k) * lam(k)) * val(k)
      end do
   end subroutine semi_exact_angle

   !> The step of free_flow_unit, exact (quadrature = 0) or semi-exact (quadrature = 1..10 nodes),
   !> for the bodies k = 1..nl in lock-step:
   !> unit momenta m0(k, :), times tau(k), scaled moments 0 < ci(k, 1) <= ci(k, 2) <= ci(k, 3) = 1.
   !> Returns m1(k, :) and w(k, :) as free_flow_unit does where ok(k); where not ok(k) the body needs
   !> another path of free_flow_unit and its outputs are undefined.
   !> (Flags are kept as reals 1/0: logical arrays set from real comparisons do not vectorise.)
   pure subroutine free_flow_lanes(nl, m0, tau, ci, quadrature, m1, w, ok)
      integer, intent(in) :: nl, quadrature
      real(dp), intent(in) :: m0(flow_lanes_width, 3), tau(flow_lanes_width), ci(flow_lanes_width, 3)
      real(dp), intent(out) :: m1(flow_lanes_width, 3), w(flow_lanes_width, 4)
      logical, intent(out) :: ok(flow_lanes_width)
      integer, parameter :: nb = flow_lanes_width
      ! per-lane quantities carried between the stages
      real(dp), dimension(nb) :: bab, bba, b2a, lam, sigma, c0, c1, k2, sn0, cn0, dn0, v, dcoef, cia, twot
      real(dp), dimension(nb) :: sv, cv, dv, s1, cc1, dd1, wq, third, ay, ax, pw, pz, ap, aa, psi, hc, hs
      real(dp), dimension(nb) :: tsum, tv, nt, okf, case3, big, use_rj, kp2n, kp2d
      real(dp), dimension(nb) :: agm, sva, cva, dva, dup, xra, yra, pra, wra, rjd, ratio, shortf
      real(dp) :: i21, i31, i32, x1, x2, x3, d1, d2, d3, da, db, ia2, ib2, ma, mb, den, r
      real(dp) :: xr, yr, pr, a0, q, rj, z0, z1, val, c, s, b2, a
      real(dp) :: weight, ss, cc, ntmax, p0(4), pd(4), rq(4), wk(4), dm1, dm2, dm3, n0, e, cm, dmv, ds, dc, dd, f
      real(dp) :: la, lb, m11, m13
      logical :: short
      integer :: k, j

      ! --- invariants, moduli and (sn, cn, dn)(u0) (free_flow_unit) ---
      do k = 1, nl
         i21 = ci(k, 2) - ci(k, 1); i31 = ci(k, 3) - ci(k, 1); i32 = ci(k, 3) - ci(k, 2)
         x1 = m0(k, 1) * m0(k, 1); x2 = m0(k, 2) * m0(k, 2); x3 = m0(k, 3) * m0(k, 3)
         ! (ci(k, 3) = 1: no division by it, as in free_flow_unit)
         d1 = x2 * i21 / ci(k, 2) + x3 * i31
         d3 = x1 * i31 / ci(k, 1) + x2 * i32 / ci(k, 2)
         d2 = x3 * i32 - x1 * i21 / ci(k, 1)
         d2 = merge(0.0_dp, d2, abs(d2) < invariant_floor)
         ! not near an axis (uniform rotation), not on the separatrix
         okf(k) = merge(1.0_dp, 0.0_dp, .not. (d1 < invariant_floor .or. d3 < invariant_floor &
                        .or. (m0(k, 1) == 0 .and. m0(k, 3) == 0)) .and. d2 /= 0)
         case3(k) = merge(1.0_dp, 0.0_dp, d2 > 0)
         ma = merge(m0(k, 3), m0(k, 1), d2 > 0)
         mb = merge(m0(k, 1), m0(k, 3), d2 > 0)
         cia(k) = merge(ci(k, 3), ci(k, 1), d2 > 0)
         da = merge(d3, d1, d2 > 0); db = merge(d1, d3, d2 > 0)
         ia2 = merge(i32, i21, d2 > 0); ib2 = merge(i21, i32, d2 > 0)
         dcoef(k) = merge(d3, -d1, d2 > 0) / cia(k)
         bab(k) = sqrt(cia(k) * db / i31)
         bba(k) = sqrt(merge(ci(k, 1), ci(k, 3), d2 > 0) * da / i31)
         b2a(k) = sqrt(ci(k, 2) * da / ia2)
         lam(k) = sqrt(db * ia2 / (ci(k, 1) * ci(k, 2) * ci(k, 3)))
         sigma(k) = sign(1.0_dp, ma)
         c0(k) = bba(k) * bba(k)
         k2(k) = da * ib2 / (db * ia2)
         sn0(k) = m0(k, 2) / b2a(k); cn0(k) = mb / bba(k); dn0(k) = abs(ma) / bab(k)
         c1(k) = bab(k) * bab(k) * k2(k)
         v(k) = sigma(k) * lam(k) * tau(k)
         agm(k) = merge(1.0_dp, 0.0_dp, abs(v(k)) > jacobi_series_max)
         sva(k) = 0; cva(k) = 0; dva(k) = 0
         ! kp^2 = 1 - k^2 without cancellation, as kp2n / kp2d (used by the semi-exact angle)
         kp2n(k) = abs(d2) * i31
         kp2d(k) = db * ia2
      end do

      ! fewer than half the lanes on this path (e.g. steps too long for the series): the lock-step
      ! pass would cost more than it saves, leave them all to free_flow_unit (the same results)
      if (2 * count(okf(1:nl) > 0) < nl) then
         ok(1:nl) = .false.
         return
      end if

      ! --- (sn, cn, dn)(v) from the AGM where |v| is beyond the series (free_flow_unit's longer
      ! steps; the library sin and cos inside, lane by lane): the addition formulas need |v| <= K,
      ! a lane beyond K takes free_flow_unit's other path ---
      if (any(agm(1:nl) > 0)) then
         do k = 1, nl
            agm(k) = agm(k) * okf(k)
         end do
         call jacobi_agm_lanes(nl, agm, k2, kp2n, kp2d, v, sva, cva, dva)
         do k = 1, nl
            okf(k) = okf(k) * merge(0.0_dp, 1.0_dp, agm(k) < 0)
            agm(k) = abs(agm(k))
         end do
      end if

      ! --- (sn, cn, dn)(v) by the Maclaurin series (jacobi_series, sn_series_sum) ---
      ! number of terms of each lane: the limits increase with the number of terms
      ntmax = 1
      do k = 1, nl
         nt(k) = 1
         do j = 1, sn_series_terms - 1
            nt(k) = nt(k) + merge(1.0_dp, 0.0_dp, abs(v(k)) > sn_series_limit(j))
         end do
         tv(k) = v(k) * v(k)
      end do
      ! (the lanes served by the AGM discard their series: they do not count)
      do k = 1, nl
         ntmax = max(ntmax, merge(nt(k), 1.0_dp, okf(k) > 0 .and. agm(k) == 0))
      end do
      call sn_series_sum_lanes(nl, nint(ntmax), nt, tv, k2, tsum)

      ! --- addition formulas (jacobi_add), m(tau), the arguments of the angle increment ---
      ! (the flag of a short step first, in its own loop, as a value: see the angle's flags below)
      do k = 1, nl
         shortf(k) = merge(1.0_dp, 0.0_dp, abs(v(k)) <= short_change_max)
      end do
      do k = 1, nl
         sv(k) = v(k) * tsum(k)
         cv(k) = sqrt((1 - sv(k)) * (1 + sv(k)))
         dv(k) = sqrt(1 - k2(k) * sv(k) * sv(k))
         sv(k) = merge(sva(k), sv(k), agm(k) > 0)
         cv(k) = merge(cva(k), cv(k), agm(k) > 0)
         dv(k) = merge(dva(k), dv(k), agm(k) > 0)
         den = dn0(k) * dn0(k) + k2(k) * (sn0(k) * cv(k)) * (sn0(k) * cv(k))
         r = 1 / den
         ! (the changes of sn, cn, dn over v, jacobi_add)
         e = sv(k) * sv(k)
         cm = e / (1 + cv(k))
         dmv = k2(k) * e / (1 + dv(k))
         q = k2(k) * (sn0(k) * sn0(k)) * e
         ds = (sv(k) * cn0(k) * dn0(k) + sn0(k) * (q - dv(k) * cm - dmv)) * r
         dc = (cn0(k) * (q - cm) - sn0(k) * dn0(k) * sv(k) * dv(k)) * r
         dd = (dn0(k) * (q - dmv) - k2(k) * sn0(k) * cn0(k) * sv(k) * cv(k)) * r
         ! (a longer step: the values whole)
         short = shortf(k) > 0
         s1(k) = merge(sn0(k) + ds, (sn0(k) * cv(k) * dv(k) + sv(k) * cn0(k) * dn0(k)) * r, short)
         cc1(k) = merge(cn0(k) + dc, (cn0(k) * cv(k) - sn0(k) * dn0(k) * sv(k) * dv(k)) * r, short)
         dd1(k) = merge(dn0(k) + dd, (dn0(k) * dv(k) - k2(k) * sn0(k) * cn0(k) * sv(k) * cv(k)) * r, &
                        short)
         okf(k) = merge(okf(k), 0.0_dp, den >= addition_min_den)
         ! (a semi-exact angle with its secular part taken exactly: free_flow_unit's)
         okf(k) = merge(okf(k), 0.0_dp, quadrature == 0 .or. bab(k) * bab(k) >= secular_semi_exact)
         ! m1 in the (a, 2, b) order: a = 1 (b = 3) or a = 3 (b = 1); a short step moves m0
         ma = sigma(k) * bab(k) * dd
         mb = bba(k) * dc
         la = sigma(k) * bab(k) * dd1(k)
         lb = bba(k) * cc1(k)
         m1(k, 1) = merge(m0(k, 1) + merge(mb, ma, case3(k) > 0), merge(lb, la, case3(k) > 0), short)
         m1(k, 2) = merge(m0(k, 2) + b2a(k) * ds, b2a(k) * s1(k), short)
         m1(k, 3) = merge(m0(k, 3) + merge(ma, mb, case3(k) > 0), merge(la, lb, case3(k) > 0), short)
      end do

      if (quadrature == 0) then
         ! --- the exact angle: angle_increment up to its atan arguments ---
         ! (the flags of the two forms first, in their own loop: the vectoriser handles a flag read
         ! from memory, not the same comparison used both as a value and as a mask)
         do k = 1, nl
            big(k) = merge(1.0_dp, 0.0_dp, bab(k) * bab(k) >= 0.25_dp)
            use_rj(k) = max(big(k), merge(1.0_dp, 0.0_dp, k2(k) > 0))
         end do
         ! 2T, for the form B^2 < 1/4 only
         twot(1:nl) = 0
         if (any(big(1:nl) == 0)) then
            do k = 1, nl
               x1 = m0(k, 1) * m0(k, 1); x2 = m0(k, 2) * m0(k, 2); x3 = m0(k, 3) * m0(k, 3)
               twot(k) = x1 / ci(k, 1) + x2 / ci(k, 2) + x3
            end do
         end if
         do k = 1, nl
            b2 = bab(k) * bab(k)
            wq(k) = sqrt(c0(k) * (c0(k) + c1(k)))
            ss = sn0(k) * sv(k) * s1(k)
            cc = cn0(k) * cv(k) * cc1(k)
            a = merge(c0(k), c1(k), big(k) > 0) / merge(b2, c0(k), big(k) > 0)
            ! the quotients of angle_increment's two forms, one division for both: sv^2 / B^2
            ! (the weight of RJ where B^2 >= 1/4), k^2 / c0 (otherwise)
            ratio(k) = merge(sv(k) * sv(k), k2(k), big(k) > 0) / merge(b2, c0(k), big(k) > 0)
            weight = min(1.0_dp, merge(ratio(k), ratio(k) * sv(k) * sv(k), big(k) > 0))
            ! carlson_rj(cv^2, dv^2, 1, 1 + a sv^2, weight) where no duplication is needed
            xr = cv(k) * cv(k); yr = dv(k) * dv(k); pr = 1 + a * sv(k) * sv(k)
            a0 = (xr + yr + 1.0_dp + 2 * pr) * 0.2_dp
            q = rj_q * max(abs(a0 - xr), abs(a0 - yr), abs(a0 - 1.0_dp), abs(a0 - pr))
            ! (a lane whose RJ needs duplications: carlson_rj below)
            dup(k) = merge(1.0_dp, 0.0_dp, rj_needs_duplication(use_rj(k) * weight, q / a0))
            xra(k) = xr; yra(k) = yr; pra(k) = pr; wra(k) = weight
            r = 1 / a0
            rj = r * sqrt(r) * rj_series((a0 - xr) * r, (a0 - yr) * r, (a0 - 1.0_dp) * r)
            third(k) = sv(k)**3 / 3 * rj
            ! pi_addition: -atan_ratio(pw, pz)
            pw(k) = sqrt(a * (1 + a) * (a + k2(k)))
            pz(k) = ss / (1 + a * (1 - cc))
            ! the elementary part: atan2_ratio(wq, ay, ax)
            z0 = sn0(k) * cn0(k) * (c0(k) + c1(k) * sn0(k) * sn0(k)) / ((1 + bab(k) * dn0(k)) &
                 * (c0(k) * bab(k) * dn0(k) * cn0(k) * cn0(k) + (c0(k) + c1(k)) * sn0(k) * sn0(k)))
            z1 = s1(k) * cc1(k) * (c0(k) + c1(k) * s1(k) * s1(k)) / ((1 + bab(k) * dd1(k)) &
                 * (c0(k) * bab(k) * dd1(k) * cc1(k) * cc1(k) + (c0(k) + c1(k)) * s1(k) * s1(k)))
            ay(k) = merge(z1 - z0, s1(k) * cn0(k) - cc1(k) * sn0(k), big(k) > 0)
            ax(k) = merge(1 + wq(k) * wq(k) * z0 * z1, &
                          c0(k) * cc1(k) * cn0(k) + (c0(k) + c1(k)) * s1(k) * sn0(k), big(k) > 0)
         end do
         if (any(dup(1:nl) > 0)) then
            call rj_duplications_lanes(nl, dup, xra, yra, pra, wra, rjd)
            do k = 1, nl
               if (dup(k) > 0) third(k) = sv(k)**3 / 3 * rjd(k)
            end do
         end if
         call atan_ratio_lanes(nl, pw, pz, ap)
         call atan2_ratio_lanes(nl, wq, ay, ax, aa)

         ! --- the angle psi (the quotients of the two forms, one division for both) ---
         do k = 1, nl
            third(k) = merge(third(k) - (-ap(k)), 0.0_dp, use_rj(k) > 0)
            ! third / B^2 (B^2 >= 1/4), B / c0 (otherwise)
            q = merge(third(k), bab(k), big(k) > 0) / merge(bab(k) * bab(k), c0(k), big(k) > 0)
            val = merge(q + bab(k) * aa(k), aa(k) - q * (v(k) - ratio(k) * third(k)), big(k) > 0)
            ! D_a / (sigma lambda), D_a B / (sigma lambda)
            q = merge(dcoef(k), dcoef(k) * bab(k), big(k) > 0) / (sigma(k) * lam(k))
            psi(k) = merge(tau(k) / cia(k) + q * val, twot(k) * tau(k) - q * val, big(k) > 0)
         end do
      else
         ! --- the semi-exact angle (jint_gauss) ---
         call semi_exact_angle(nl, quadrature, sn0, cn0, s1, cc1, bab, kp2n, kp2d, tau, cia, dcoef, &
                               sigma, lam, psi)
      end if

      ! --- the half-angle functions ---
      do k = 1, nl
         psi(k) = psi(k) / 2
      end do
      call sincos_lanes(nl, psi, hs, hc)

      ! --- attitude_from_half_angle: a short step w = |p0|^2 (c, s m0) + conj(p0) Y dp, a longer
      ! one conj(p0) Y p1, normalised ---
      do k = 1, nl
         shortf(k) = merge(1.0_dp, 0.0_dp, max(abs(m1(k, 1) - m0(k, 1)), abs(m1(k, 2) - m0(k, 2)), &
                                               abs(m1(k, 3) - m0(k, 3))) <= short_change_max)
      end do
      do k = 1, nl
         c = hc(k); s = hs(k)
         p0(1) = 1 + abs(merge(m0(k, 3), m0(k, 1), case3(k) > 0))
         p0(2) = merge(sigma(k) * m0(k, 2), 0.0_dp, case3(k) > 0)
         p0(3) = merge(-sigma(k) * m0(k, 1), sigma(k) * m0(k, 3), case3(k) > 0)
         p0(4) = merge(0.0_dp, -sigma(k) * m0(k, 2), case3(k) > 0)
         dm1 = m1(k, 1) - m0(k, 1); dm2 = m1(k, 2) - m0(k, 2); dm3 = m1(k, 3) - m0(k, 3)
         short = shortf(k) > 0
         m11 = m1(k, 1); m13 = m1(k, 3)
         pd(1) = merge(sigma(k) * merge(dm3, dm1, case3(k) > 0), 1 + abs(merge(m13, m11, case3(k) > 0)), short)
         pd(2) = merge(merge(sigma(k) * dm2, 0.0_dp, case3(k) > 0), merge(sigma(k) * m1(k, 2), 0.0_dp, case3(k) > 0), &
                       short)
         pd(3) = merge(merge(-sigma(k) * dm1, sigma(k) * dm3, case3(k) > 0), &
                       merge(-sigma(k) * m11, sigma(k) * m13, case3(k) > 0), short)
         pd(4) = merge(merge(0.0_dp, -sigma(k) * dm2, case3(k) > 0), merge(0.0_dp, -sigma(k) * m1(k, 2), case3(k) > 0), &
                       short)
         n0 = merge(p0(1) * p0(1) + p0(2) * p0(2) + p0(3) * p0(3) + p0(4) * p0(4), 0.0_dp, short)
         rq(1) = c * p0(1)
         rq(2) = s * m0(k, 1) - c * p0(2)
         rq(3) = s * m0(k, 2) - c * p0(3)
         rq(4) = s * m0(k, 3) - c * p0(4)
         rq(2) = merge(rq(2), rq(2) + s * sigma(k), case3(k) > 0)
         rq(4) = merge(rq(4) + s * sigma(k), rq(4), case3(k) > 0)
         ! qmul(rq, dp) or qmul(rq, p1) (rotations), written out (the same operations)
         wk(1) = rq(1) * pd(1) - rq(2) * pd(2) - rq(3) * pd(3) - rq(4) * pd(4)
         wk(2) = rq(1) * pd(2) + pd(1) * rq(2) + rq(3) * pd(4) - rq(4) * pd(3)
         wk(3) = rq(1) * pd(3) + pd(1) * rq(3) + rq(4) * pd(2) - rq(2) * pd(4)
         wk(4) = rq(1) * pd(4) + pd(1) * rq(4) + rq(2) * pd(3) - rq(3) * pd(2)
         wk(1) = merge(wk(1) + c * n0, wk(1), short)
         wk(2) = merge(wk(2) + (s * n0) * m0(k, 1), wk(2), short)
         wk(3) = merge(wk(3) + (s * n0) * m0(k, 2), wk(3), short)
         wk(4) = merge(wk(4) + (s * n0) * m0(k, 3), wk(4), short)
         ! (attitude_from_half_angle's normalisations: a short step by its own norm, its scalar
         ! part from its vector part; a longer one by the norms of p0 and p1)
         f = 1 / sqrt(merge(wk(1) * wk(1) + wk(2) * wk(2) + wk(3) * wk(3) + wk(4) * wk(4), &
                            (p0(1) * p0(1) + p0(2) * p0(2) + p0(3) * p0(3) + p0(4) * p0(4)) &
                            * (pd(1) * pd(1) + pd(2) * pd(2) + pd(3) * pd(3) + pd(4) * pd(4)), short))
         a = wk(1)
         wk(1) = wk(1) * f; wk(2) = wk(2) * f; wk(3) = wk(3) * f; wk(4) = wk(4) * f
         wk(1) = merge(sign(1 - (wk(2) * wk(2) + wk(3) * wk(3) + wk(4) * wk(4)) / (1 + abs(a) * f), a), &
                       wk(1), short)
         w(k, 1) = wk(1); w(k, 2) = wk(2); w(k, 3) = wk(3); w(k, 4) = wk(4)
      end do
      do k = 1, nl
         ok(k) = okf(k) > 0
      end do
   end subroutine free_flow_lanes

end module exact_flow_lanes
