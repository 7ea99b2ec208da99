! The state transition matrix of the exact step (exact_flow.free_flow) for eight bodies in
! lock-step: the lanes of exact_flow_lanes with one derivative carried beside their values.
!
! The symmetries of the free body give five of the six columns of the matrix Phi of a step (see
! flow_derivatives.f90): the attitude columns (rotations of space: E(w)^T), the radial direction
! of the momentum (its scaling), and the direction of the orbit f0 = m0 x w0 (time: the flow
! commutes with itself, Phi (f0, w0) = (f1, w1), so Phi (f0, 0) = (f1, w1 - E(w)^T w0)). The sixth,
! the direction e = (m0 / |m0|) x (f0 / |f0|) across the orbits (it changes the energy), is the
! derivative of the closed form itself: forward-mode differentiation (L. B. Rall, "Automatic
! Differentiation: Techniques and Applications", LNCS 120, Springer 1981) of free_flow_lanes, the
! tangent of every statement written beside it (free_flow_tangent_lanes): the invariants and
! moduli, sn, cn, dn of the step by their series (its derivative in the parameter from the
! series of d sn/dm, jacobi_series_dm_lanes_table.inc) or the AGM (in the argument by
! (sn, cn, dn)' = (cn dn, -sn dn, -m sn cn), DLMF 22.13.1-3; in the parameter by
! d am/dm = -dn (s^3 / 6) RD(c^2, 1, dn^2), DLMF 19.25.5 and 19.18.1), the addition formulas,
! Carlson's RJ by its series (the derivative of the polynomial), the atan terms (the derivative of
! lane_math's atan(x)/x: 2 x (A + y A'), its polynomial A, y = x^2, within tan(pi/8)) and the
! attitude. The basis (e, f0 / |f0|, m0 / |m0|) is orthonormal, so Phi's momentum columns are
! [Phi e, Phi f^, Phi r^] [e, f^, r^]^T.
!
! Where the orbit direction is ill-conditioned (|m0 x w0| < orbit_min |m0| |w0|: near a principal
! axis, where dividing by |f0| would amplify the rounding of f1, and nearly spherical bodies) the
! lanes run twice, along two unit tangents t1, t2 of the sphere (unit_jacobian's tangent_pair, the
! one-body code's directions), and the momentum columns are [Phi t1, Phi t2, Phi r^] [t1, t2, r^]^T.
!
! The values are those of free_flow_lanes (the same values, the same operations for each: a change
! to either must be made to both; tests/test_derivatives.py compares the states with the step's bit
! for bit). A body that the lanes do not serve, a semi-exact step, and a momentum near the middle
! axis whose orbit direction is ill-conditioned take flow_derivatives.free_flow_jacobian (the
! closed form on dual numbers, two tangent directions).
! Compiled once per SIMD target with the lanes (simd_dispatch), with -fno-trapping-math.
module flow_tangent_lanes
   use kinds, only: dp, wp => dp
   use elliptic_functions, only: jacobi_series_max, sn_series_terms, sn_series_limit, rj_q, rc_series_max
   use exact_flow, only: flow_prep_t, flow_prepare, flow_finish, path_unit, long_step_threshold, &
                         ratio_threshold, norm_sq_min, norm_sq_max, invariant_floor, addition_min_den, &
                         short_change_max, &
                         symmetric_long, symmetric_step_threshold, precise_long, precise_step_threshold
   use exact_flow_lanes, only: jacobi_agm_lanes, rj_duplications_lanes, sincos_lanes, &
                               atan_ratio_lanes, atan2_ratio_lanes, keep_invariants_lanes
   use flow_derivatives, only: free_flow_jacobian, unsorted, short_turn, short_turn_block
   use unit_jacobian, only: tangent_pair, near_saddle
   use rotations, only: cross, quat_matrix
   use numbers_table, only: flow_lanes_width
   implicit none
   private

   public :: state_jacobian_chunk

   !> The orbit direction is used where |m0 x w0| >= orbit_min |m0| |w0| (the sine of the angle
   !> between the momentum and the angular velocity: the rounding of the time column f1 / |f0| is
   !> amplified by at most 1 / orbit_min); elsewhere two tangents of the sphere (pair_served).
   real(dp), parameter :: orbit_min = 2.0_dp**(-6)

   include 'lane_math_table.inc'

contains

   include 'jacobi_series_dm_lanes_table.inc'
   include 'jacobi_series_lanes_table.inc'
   include 'carlson_rj_series_generic.inc'
   include 'lane_math_generic.inc'

   !> One exact step of the nc <= flow_lanes_width bodies m(:, k), h(min(k, nh)), moments
   !> inertia(:, k), with its state transition matrix phi(:, :, k) and its derivative in h
   !> dh(:, k) (flow_derivatives.free_flow_jacobian's, rows and columns (dm, dtheta)): m_out and
   !> the quaternions w (Q(h) = Q E(w), q(h) = q w) are those of free_flow bit for bit.
   pure subroutine state_jacobian_chunk(nc, nh, m, h, inertia, m_out, w, phi, dh)
      integer, intent(in) :: nc, nh
      real(dp), intent(in) :: m(3, nc), h(nh), inertia(3, nc)
      real(dp), intent(out) :: m_out(3, nc), w(4, nc), phi(6, 6, nc), dh(6, nc)
      integer, parameter :: nb = flow_lanes_width
      type(flow_prep_t) :: p(nb)
      real(dp) :: ml(nb, 3), tl(nb), cl(nb, 3), el(nb, 3), m1l(nb, 3), wl(nb, 4), dml(nb, 3), dtl(nb, 3)
      real(dp) :: gl(nb), hl(nb), fast(nb), fnl(nb), f0l(3, nb), s, imax, om(3), di(6, 3)
      real(dp) :: el2(nb, 3), dml2(nb, 3), dtl2(nb, 3), m2l(nb, 3), w2l(nb, 4), t1l(3, nb), t2l(3, nb)
      real(dp) :: tp(3, 2), et(3, 3), etl(nb, 3, 3), phl(nb, 6, 6), dhl(nb, 6)
      logical :: ok(nb), ok2(nb), lane(nb), pair(nb), done(nb), short
      integer :: j
      integer :: k, i

      do k = 1, nc
         hl(k) = h(min(k, nh))
      end do
      ! the lanes' usual case (free_flow_chunk's test and operations)
      do k = 1, nc
         s = m(1, k) * m(1, k) + m(2, k) * m(2, k) + m(3, k) * m(3, k)
         gl(k) = sqrt(s)
         ml(k, 1) = m(1, k) / gl(k); ml(k, 2) = m(2, k) / gl(k); ml(k, 3) = m(3, k) / gl(k)
         imax = inertia(3, k)
         tl(k) = gl(k) * (hl(k) / imax)
         ! (inertia(3, k) / imax = 1 exactly)
         cl(k, 1) = inertia(1, k) / imax; cl(k, 2) = inertia(2, k) / imax; cl(k, 3) = 1
         fast(k) = merge(1.0_dp, 0.0_dp, s >= norm_sq_min .and. s <= norm_sq_max .and. hl(k) /= 0 &
                         .and. inertia(1, k) <= inertia(2, k) .and. inertia(2, k) <= inertia(3, k) &
                         .and. abs(hl(k)) * gl(k) <= merge(symmetric_step_threshold, precise_step_threshold, &
                                                           inertia(1, k) == inertia(2, k) &
                                                           .or. inertia(2, k) == inertia(3, k)) * inertia(1, k) &
                         .and. abs(hl(k)) * gl(k) <= huge(1.0_dp) &
                         .and. inertia(3, k) <= ratio_threshold * inertia(1, k))
      end do
      do k = 1, nc
         lane(k) = fast(k) > 0
         if (.not. lane(k)) then
            call flow_prepare(m(:, k), hl(k), inertia(:, k), p(k))
            ! (small momenta, which free_flow_jacobian rescales, excluded)
            if (p(k)%path == path_unit .and. .not. symmetric_long(hl(k), p(k)%g, inertia(:, k), 0) &
                .and. .not. precise_long(hl(k), p(k)%g, inertia(p(k)%perm(1), k), inertia(p(k)%perm(3), k), 0) &
                .and. p(k)%g * p(k)%g >= norm_sq_min) then
               lane(k) = .true.
               ml(k, :) = p(k)%ms; tl(k) = p(k)%tau; cl(k, :) = p(k)%cs; gl(k) = p(k)%g
            end if
         end if
         ! the orbit direction f0 = m0 x w0 and the direction e across it (sorted frame for el);
         ! where the orbit direction is ill-conditioned, two tangent directions t1, t2 of the
         ! sphere (tangent_pair) in two passes of the lanes (pair), where the one-body code would
         ! take the closed form on dual numbers too (pair_served)
         el(k, :) = 0
         el2(k, :) = 0
         fnl(k) = 0
         f0l(:, k) = 0
         t1l(:, k) = 0
         t2l(:, k) = 0
         pair(k) = .false.
         if (lane(k)) then
            om = m(:, k) / inertia(:, k)
            f0l(:, k) = cross(m(:, k), om)
            fnl(k) = norm2(f0l(:, k))
            if (fnl(k) >= orbit_min * gl(k) * norm2(om)) then
               om = cross(m(:, k) / gl(k), f0l(:, k) / fnl(k))
            else if (pair_served(ml(k, :), cl(k, :))) then
               pair(k) = .true.
               call tangent_pair(m(:, k) / gl(k), tp)
               t1l(:, k) = tp(:, 1)
               t2l(:, k) = tp(:, 2)
               om = tp(:, 1)
            else
               lane(k) = .false.
            end if
            if (lane(k)) then
               if (fast(k) > 0) then
                  el(k, :) = om
                  if (pair(k)) el2(k, :) = t2l(:, k)
               else
                  do i = 1, 3
                     el(k, i) = p(k)%sgn(i) * om(p(k)%perm(i))
                     if (pair(k)) el2(k, i) = p(k)%sgn(i) * t2l(p(k)%perm(i), k)
                  end do
               end if
            end if
         end if
         if (.not. lane(k)) then
            ! (a lane of valid numbers that nothing reads)
            ml(k, :) = [0.6_dp, 0.0_dp, 0.8_dp]; tl(k) = 0; cl(k, :) = [0.5_dp, 0.75_dp, 1.0_dp]
         end if
      end do
      call free_flow_tangent_lanes(nc, ml, tl, cl, el, m1l, wl, dml, dtl, ok)
      ok2(1:nc) = .true.
      dml2(1:nc, :) = 0
      dtl2(1:nc, :) = 0
      if (any(pair(1:nc))) then
         ! (the values of the second pass are those of the first)
         call free_flow_tangent_lanes(nc, ml, tl, cl, el2, m2l, w2l, dml2, dtl2, ok2)
      end if
      ! free_flow_chunk's end of the steps (the derivatives are the flow's: the Newton step onto the
      ! invariants of the start is the identity on the exact flow's values)
      call keep_invariants_lanes(nc, ml, cl, m1l)
      do k = 1, nc
         done(k) = lane(k) .and. ok(k) .and. ok2(k)
         if (done(k)) then
            if (fast(k) > 0) then
               ! (flow_finish: a short step moves m by its change)
               short = maxval(abs(m1l(k, :) - ml(k, :))) <= short_change_max
               m_out(1, k) = merge(m(1, k) + (m1l(k, 1) - ml(k, 1)) * gl(k), m1l(k, 1) * gl(k), short)
               m_out(2, k) = merge(m(2, k) + (m1l(k, 2) - ml(k, 2)) * gl(k), m1l(k, 2) * gl(k), short)
               m_out(3, k) = merge(m(3, k) + (m1l(k, 3) - ml(k, 3)) * gl(k), m1l(k, 3) * gl(k), short)
               w(1, k) = wl(k, 1); w(2, k) = wl(k, 2); w(3, k) = wl(k, 3); w(4, k) = wl(k, 4)
            else
               call flow_finish(p(k), m(:, k), m1l(k, :), wl(k, :), m_out(:, k), w(:, k))
               dml(k, :) = unsorted(p(k), dml(k, :))
               dtl(k, :) = unsorted(p(k), dtl(k, :))
               if (pair(k)) then
                  dml2(k, :) = unsorted(p(k), dml2(k, :))
                  dtl2(k, :) = unsorted(p(k), dtl2(k, :))
               end if
            end if
            ! E(w)^T (rotations' quat_matrix: written in the lanes' loop, GCC 12's SLP vectoriser
            ! fuses its pairs w2 w3 -+ w1 w4 into vfmaddsub despite -ffp-contract=off)
            et = quat_matrix(w(:, k))
            do j = 1, 3
               do i = 1, 3
                  etl(k, i, j) = et(j, i)
               end do
            end do
         else
            call free_flow_jacobian(m(:, k), hl(k), inertia(:, k), 0, m_out(:, k), w(:, k), phi(:, :, k), &
                                    dh(:, k), di)
            etl(k, :, :) = 0
         end if
      end do
      call assemble_lanes(nc, m, hl, inertia, gl, f0l, fnl, pair, t1l, t2l, m_out, etl, dml, dtl, dml2, dtl2, &
                          phl, dhl)
      do k = 1, nc
         if (done(k)) then
            phi(:, :, k) = phl(k, :, :)
            dh(:, k) = dhl(k, :)
            ! (as free_flow_jacobian: the attitude's derivative in the momentum of a short turn)
            if (short_turn(gl(k), hl(k), inertia(:, k))) &
               call short_turn_block(m(:, k), gl(k), hl(k), inertia(:, k), m_out(:, k), phi(4:6, 1:3, k))
         end if
      end do
   end subroutine state_jacobian_chunk

   !> Phi and d/dh of the bodies k = 1..nc (lane-major: phl(k, :, :), dhl(k, :)) from the symmetries
   !> and the lanes' derivatives: m0, h, the moments, g = |m0|, f0 = m0 x w0 and its norm fn, the
   !> momentum after the step m1 and E(w)^T (etl), the derivatives dm1, dth1 (attitude as a
   !> body-frame angle) along e = (m0 / g) x (f0 / fn) across the orbits, and the columns along
   !> the orbit direction f^ = f0 / fn (time: (f1, w1 - E(w)^T w0) / fn) and the radial direction
   !> r^ = m0 / g (scaling: ((m1 + h f1) / g, h w1 / g)); Phi's momentum columns are
   !> [Phi e, Phi f^, Phi r^] [e, f^, r^]^T. For a pair (an ill-conditioned orbit direction) the
   !> derivatives dm1, dth1 and dm2, dth2 along t1, t2 take the places of e and f^.
   pure subroutine assemble_lanes(nc, m0, h, inertia, g, f0, fn, pair, t1, t2, m1, etl, dm1, dth1, dm2, dth2, &
                                  phl, dhl)
      integer, intent(in) :: nc
      real(dp), intent(in) :: m0(3, nc), h(flow_lanes_width), inertia(3, nc), g(flow_lanes_width)
      real(dp), intent(in) :: f0(3, flow_lanes_width), fn(flow_lanes_width), t1(3, flow_lanes_width)
      real(dp), intent(in) :: t2(3, flow_lanes_width), m1(3, nc), etl(flow_lanes_width, 3, 3)
      real(dp), dimension(flow_lanes_width, 3), intent(in) :: dm1, dth1, dm2, dth2
      logical, intent(in) :: pair(flow_lanes_width)
      real(dp), intent(out) :: phl(flow_lanes_width, 6, 6), dhl(flow_lanes_width, 6)
      real(dp) :: r(3), fh(3), e(3), om0(3), om1(3), f1(3), b1(3), b2(3), cm(3, 3), ct(3, 3), rg, rfn, tw(3)
      real(dp) :: pf(flow_lanes_width)
      integer :: i, j, k

      do k = 1, nc
         pf(k) = merge(1.0_dp, 0.0_dp, pair(k))
      end do
      do k = 1, nc
         rg = 1 / g(k)
         rfn = 1 / fn(k)
         do i = 1, 3
            r(i) = m0(i, k) * rg
            fh(i) = f0(i, k) * rfn
            om0(i) = m0(i, k) / inertia(i, k)
            om1(i) = m1(i, k) / inertia(i, k)
         end do
         e(1) = r(2) * fh(3) - r(3) * fh(2)
         e(2) = r(3) * fh(1) - r(1) * fh(3)
         e(3) = r(1) * fh(2) - r(2) * fh(1)
         f1(1) = m1(2, k) * om1(3) - m1(3, k) * om1(2)
         f1(2) = m1(3, k) * om1(1) - m1(1, k) * om1(3)
         f1(3) = m1(1, k) * om1(2) - m1(2, k) * om1(1)
         do i = 1, 3
            tw(i) = om1(i) - (etl(k, i, 1) * om0(1) + etl(k, i, 2) * om0(2) + etl(k, i, 3) * om0(3))
            b1(i) = merge(t1(i, k), e(i), pf(k) > 0)
            b2(i) = merge(t2(i, k), fh(i), pf(k) > 0)
            cm(i, 1) = dm1(k, i)
            ct(i, 1) = dth1(k, i) * rg
            cm(i, 2) = merge(dm2(k, i), f1(i) * rfn, pf(k) > 0)
            ct(i, 2) = merge(dth2(k, i) * rg, tw(i) * rfn, pf(k) > 0)
            cm(i, 3) = (m1(i, k) + h(k) * f1(i)) * rg
            ct(i, 3) = (h(k) * rg) * om1(i)
         end do
         do j = 1, 3
            do i = 1, 3
               phl(k, i, j) = cm(i, 1) * b1(j) + cm(i, 2) * b2(j) + cm(i, 3) * r(j)
               phl(k, 3 + i, j) = ct(i, 1) * b1(j) + ct(i, 2) * b2(j) + ct(i, 3) * r(j)
               phl(k, i, 3 + j) = 0
               phl(k, 3 + i, 3 + j) = etl(k, i, j)
            end do
         end do
         do i = 1, 3
            dhl(k, i) = f1(i)
            dhl(k, 3 + i) = om1(i)
         end do
      end do
   end subroutine assemble_lanes

   !> True where the lanes' tangents serve a momentum whose orbit direction is ill-conditioned
   !> (unit momentum ms, scaled moments cs in order): not within unit_jacobian's near_saddle of
   !> the middle axis, where the one-body derivatives compose short steps (steps_near_saddle).
   !> (Nearly spherical bodies are served: the derivatives in the state are those of the closed
   !> form on dual numbers; the one-body code takes quadruple precision there for the derivatives
   !> in the moments, of the size of 1 / (ci(3) - ci(1)).)
   pure logical function pair_served(ms, cs) result(served)
      real(dp), intent(in) :: ms(3), cs(3)

      served = .not. (ms(1) * ms(1) + ms(3) * ms(3) < near_saddle**2 .and. cs(2) > cs(1) .and. cs(3) > cs(2))
   end function pair_served

   !> g(y) = (d/dx atan(x)/x) / x at y = x^2, the derivative of lane_math's atan(x)/x: within
   !> tan(pi/8), atanc = 1 + y A(y) (A the minimax polynomial atan_poly), so g = 2 (A + y A')
   !> = 2 sum_i (i + 1) a_i y^i (atanc_slope_near); beyond, (1 / (1 + y) - atanc(x)) / y.
   pure elemental function atanc_slope(x) result(g)
      real(dp), intent(in) :: x
      real(dp) :: g
      real(dp) :: y, near, wide

      y = x * x
      near = atanc_slope_near(x)
      wide = (1 / (1 + y) - lane_atanc(x)) / y
      g = merge(near, wide, abs(x) <= tan_pi_8)
   end function atanc_slope

   !> atanc_slope for |x| <= tan(pi/8): 2 (A + y A'), y = x^2.
   pure elemental function atanc_slope_near(x) result(g)
      real(dp), intent(in) :: x
      real(dp) :: g
      real(dp) :: y, y2, y4, y8

      y = x * x
      y2 = y * y
      y4 = y2 * y2
      y8 = y4 * y4
      g = 2 * ((((atan_coef(0) + y * (2 * atan_coef(1))) + y2 * ((3 * atan_coef(2)) + y * (4 * atan_coef(3)))) &
                + y4 * (((5 * atan_coef(4)) + y * (6 * atan_coef(5))) &
                        + y2 * ((7 * atan_coef(6)) + y * (8 * atan_coef(7))))) &
               + y8 * (((9 * atan_coef(8)) + y * (10 * atan_coef(9))) + y2 * (11 * atan_coef(10))))
   end function atanc_slope_near

   !> The tangent of atan_ratio(w(k), z(k)) = z atanc(w z) for the lanes k = 1..nl:
   !> t_val = t_z atanc(t) + z g t (t_w z + w t_z), t = w z (g: atanc_slope), with the tangent of
   !> w^2 given instead of w's (tw2 = 2 w t_w), which stays finite where w vanishes (a symmetric
   !> body): z g t t_w z = z^3 g t_w2 / 2. Within tan(pi/8) (every lane: the near forms only)
   !> atanc = 1 + y A(y) and g = 2 (A + y A').
   pure subroutine atan_ratio_tangent_lanes(nl, w, z, tw2, tz, tv)
      integer, intent(in) :: nl
      real(dp), dimension(flow_lanes_width), intent(in) :: w, z, tw2, tz
      real(dp), dimension(flow_lanes_width), intent(out) :: tv
      real(dp) :: t(flow_lanes_width), g, ac
      integer :: k

      do k = 1, nl
         t(k) = w(k) * z(k)
      end do
      if (all(abs(t(1:nl)) <= tan_pi_8)) then
         do k = 1, nl
            g = atanc_slope_near(t(k))
            ac = atanc_near(t(k))
            tv(k) = tz(k) * (ac + g * t(k) * t(k)) + (z(k) * z(k) * z(k)) * g * (tw2(k) / 2)
         end do
      else
         do k = 1, nl
            g = atanc_slope(t(k))
            ac = lane_atanc(t(k))
            tv(k) = tz(k) * (ac + g * t(k) * t(k)) + (z(k) * z(k) * z(k)) * g * (tw2(k) / 2)
         end do
      end if
   end subroutine atan_ratio_tangent_lanes

   !> The tangent of carlson_rj(x, y, 1, p, weight) (rj_duplications_lanes of exact_flow_lanes, the
   !> same operations for the values: its duplications in lock-step, then the series) along
   !> tx, ty, tp for the lanes with use(k) > 0: rj, trj; bad(k) = 1 where the lane takes
   !> carlson_rj itself (delta < 0, or too many duplications), whose derivative is not written.
   !> Each step differentiated: the square roots, lambda, d_m, e_m = 4^-3m delta / d_m^2, RC(1, 1 +
   !> e_m) by its series (P'(e)) or atan(sqrt(e))/sqrt(e) (its derivative g(e) / 2, atanc_slope),
   !> the sums, the final mean and series (rj_series_tangent).
   pure subroutine rj_duplications_tangent_lanes(nl, use, x, y, p, weight, tx, ty, tp, rj, trj, bad)
      integer, intent(in) :: nl
      real(dp), dimension(flow_lanes_width), intent(in) :: use, x, y, p, weight, tx, ty, tp
      real(dp), dimension(flow_lanes_width), intent(out) :: rj, trj, bad
      integer, parameter :: max_duplications = 40
      real(dp), dimension(flow_lanes_width) :: xm, ym, zm, pm, am, a0, q, delta, fourm, sum_rc
      real(dp), dimension(flow_lanes_width) :: act, lam, dm, em, rc, far
      real(dp), dimension(flow_lanes_width) :: txm, tym, tzm, tpm, tam, ta0, tdelta, tsum_rc, tlam, tdm, tem, trc
      real(dp) :: sx, sy, sz, sp, r, rc_far, tsx, tsy, tsz, tsp, tr, f32
      integer :: k, it

      do k = 1, nl
         xm(k) = x(k); ym(k) = y(k); zm(k) = 1.0_dp; pm(k) = p(k)
         txm(k) = tx(k); tym(k) = ty(k); tzm(k) = 0; tpm(k) = tp(k)
         a0(k) = (x(k) + y(k) + 1.0_dp + 2 * p(k)) * 0.2_dp
         ta0(k) = (tx(k) + ty(k) + 2 * tp(k)) * 0.2_dp
         am(k) = a0(k)
         tam(k) = ta0(k)
         q(k) = rj_q * max(abs(a0(k) - x(k)), abs(a0(k) - y(k)), abs(a0(k) - 1.0_dp), abs(a0(k) - p(k)))
         delta(k) = (p(k) - x(k)) * (p(k) - y(k)) * (p(k) - 1.0_dp)
         tdelta(k) = (tp(k) - tx(k)) * (p(k) - y(k)) * (p(k) - 1.0_dp) &
                     + (p(k) - x(k)) * (tp(k) - ty(k)) * (p(k) - 1.0_dp) + (p(k) - x(k)) * (p(k) - y(k)) * tp(k)
         fourm(k) = 1
         sum_rc(k) = 0
         tsum_rc(k) = 0
      end do
      do it = 1, max_duplications
         do k = 1, nl
            act(k) = merge(1.0_dp, 0.0_dp, use(k) > 0 .and. delta(k) >= 0 &
                           .and. rj_needs_duplication(weight(k), q(k) * fourm(k) / am(k)))
         end do
         if (.not. any(act(1:nl) > 0)) exit
         do k = 1, nl
            sx = sqrt(xm(k)); sy = sqrt(ym(k)); sz = sqrt(zm(k))
            tsx = txm(k) / (2 * sx); tsy = tym(k) / (2 * sy); tsz = tzm(k) / (2 * sz)
            lam(k) = sx * (sy + sz) + sy * sz
            tlam(k) = tsx * (sy + sz) + sx * (tsy + tsz) + tsy * sz + sy * tsz
            sp = sqrt(pm(k))
            tsp = tpm(k) / (2 * sp)
            dm(k) = (sp + sx) * (sp + sy) * (sp + sz)
            tdm(k) = (tsp + tsx) * (sp + sy) * (sp + sz) + (sp + sx) * (tsp + tsy) * (sp + sz) &
                     + (sp + sx) * (sp + sy) * (tsp + tsz)
            em(k) = fourm(k)**3 * delta(k) / (dm(k) * dm(k))
            tem(k) = fourm(k)**3 * tdelta(k) / (dm(k) * dm(k)) - 2 * em(k) * tdm(k) / dm(k)
            rc(k) = 1 - em(k) * (1 / 3.0_dp - em(k) * (0.2_dp - em(k) * (1 / 7.0_dp - em(k) * (1 / 9.0_dp &
                    - em(k) * (1 / 11.0_dp - em(k) / 13.0_dp)))))
            trc(k) = (-1 / 3.0_dp + em(k) * (0.4_dp - em(k) * (3 / 7.0_dp - em(k) * (4 / 9.0_dp &
                     - em(k) * (5 / 11.0_dp - em(k) * (6 / 13.0_dp)))))) * tem(k)
            far(k) = merge(1.0_dp, 0.0_dp, act(k) > 0 .and. .not. em(k) < rc_series_max)
         end do
         if (any(far(1:nl) > 0)) then
            do k = 1, nl
               rc_far = lane_atanc(sqrt(em(k)))
               rc(k) = merge(rc_far, rc(k), far(k) > 0)
               trc(k) = merge(atanc_slope(sqrt(em(k))) * tem(k) / 2, trc(k), far(k) > 0)
            end do
         end if
         do k = 1, nl
            sum_rc(k) = merge(sum_rc(k) + fourm(k) * 2 * rc(k) / dm(k), sum_rc(k), act(k) > 0)
            tsum_rc(k) = merge(tsum_rc(k) + fourm(k) * 2 * (trc(k) - rc(k) * tdm(k) / dm(k)) / dm(k), &
                               tsum_rc(k), act(k) > 0)
            xm(k) = merge((xm(k) + lam(k)) * 0.25_dp, xm(k), act(k) > 0)
            ym(k) = merge((ym(k) + lam(k)) * 0.25_dp, ym(k), act(k) > 0)
            zm(k) = merge((zm(k) + lam(k)) * 0.25_dp, zm(k), act(k) > 0)
            pm(k) = merge((pm(k) + lam(k)) * 0.25_dp, pm(k), act(k) > 0)
            am(k) = merge((am(k) + lam(k)) * 0.25_dp, am(k), act(k) > 0)
            txm(k) = merge((txm(k) + tlam(k)) * 0.25_dp, txm(k), act(k) > 0)
            tym(k) = merge((tym(k) + tlam(k)) * 0.25_dp, tym(k), act(k) > 0)
            tzm(k) = merge((tzm(k) + tlam(k)) * 0.25_dp, tzm(k), act(k) > 0)
            tpm(k) = merge((tpm(k) + tlam(k)) * 0.25_dp, tpm(k), act(k) > 0)
            tam(k) = merge((tam(k) + tlam(k)) * 0.25_dp, tam(k), act(k) > 0)
            fourm(k) = merge(fourm(k) * 0.25_dp, fourm(k), act(k) > 0)
         end do
      end do
      do k = 1, nl
         r = fourm(k) / am(k)
         tr = -r * tam(k) / am(k)
         f32 = r * sqrt(r / fourm(k))
         rj(k) = r * sqrt(r / fourm(k)) * rj_series((a0(k) - x(k)) * r, (a0(k) - y(k)) * r, &
                                                    (a0(k) - 1.0_dp) * r) + 3 * sum_rc(k)
         trj(k) = f32 * (1.5_dp * tr / r) * rj_series((a0(k) - x(k)) * r, (a0(k) - y(k)) * r, &
                                                       (a0(k) - 1.0_dp) * r) &
                  + f32 * rj_series_tangent((a0(k) - x(k)) * r, (a0(k) - y(k)) * r, (a0(k) - 1.0_dp) * r, &
                                            (ta0(k) - tx(k)) * r + (a0(k) - x(k)) * tr, &
                                            (ta0(k) - ty(k)) * r + (a0(k) - y(k)) * tr, &
                                            ta0(k) * r + (a0(k) - 1.0_dp) * tr) &
                  + 3 * tsum_rc(k)
         bad(k) = merge(1.0_dp, 0.0_dp, use(k) > 0 .and. (.not. delta(k) >= 0 .or. act(k) > 0))
      end do
   end subroutine rj_duplications_tangent_lanes

   !> The tangent of rj_series(xx, yy, zz) (the same polynomial, differentiated).
   pure elemental function rj_series_tangent(xx, yy, zz, tx, ty, tz) result(ts)
      real(dp), intent(in) :: xx, yy, zz, tx, ty, tz
      real(dp) :: ts
      real(dp) :: pp, e2, e3, e4, e5, xyz, tp, te2, te3, te4, te5, txyz, tt67

      pp = -(xx + yy + zz) / 2
      tp = -(tx + ty + tz) / 2
      xyz = xx * yy * zz
      txyz = tx * yy * zz + xx * ty * zz + xx * yy * tz
      e2 = xx * yy + xx * zz + yy * zz - 3 * pp * pp
      te2 = tx * (yy + zz) + ty * (xx + zz) + tz * (xx + yy) - 6 * pp * tp
      e3 = xyz + 2 * e2 * pp + 4 * pp**3
      te3 = txyz + 2 * (te2 * pp + e2 * tp) + 12 * pp * pp * tp
      e4 = (2 * xyz + e2 * pp + 3 * pp**3) * pp
      te4 = (2 * txyz + te2 * pp + e2 * tp + 9 * pp * pp * tp) * pp + (2 * xyz + e2 * pp + 3 * pp**3) * tp
      e5 = xyz * pp * pp
      te5 = txyz * pp * pp + 2 * xyz * pp * tp
      tt67 = ((2 * e3 * te3) * (3 / 40.0_wp) + (te2 * e4 + e2 * te4) * (3 / 20.0_wp) &
              - (3 * e2 * e2 * te2) * (1 / 16.0_wp)) &
             + ((2 * e2 * te2 * e3 + e2 * e2 * te3) * (45 / 272.0_wp) &
                - (te3 * e4 + e3 * te4 + te2 * e5 + e2 * te5) * (9 / 68.0_wp))
      ts = ((-te2 * (3 / 14.0_wp)) + (te3 * (1 / 6.0_wp) + (2 * e2 * te2) * (9 / 88.0_wp))) &
           + ((te5 * (3 / 26.0_wp) - te4 * (3 / 22.0_wp)) - (te2 * e3 + e2 * te3) * (9 / 52.0_wp)) + tt67
   end function rj_series_tangent

   !> free_flow_lanes (module exact_flow_lanes), exact (quadrature = 0), for the bodies k = 1..nl
   !> with the derivative of its results along the unit tangent dm0(k, :) of the unit sphere at
   !> m0(k, :) (tau and the moments fixed): m1, w as free_flow_lanes (the same operations) and
   !> dm1(k, :), dth1(k, :) = 2 vec(conj(w) dw), the derivatives of m1 and of the attitude as a
   !> body-frame angle. ok(k) as free_flow_lanes, and false where the derivative needs another
   !> path (RJ by duplications, the AGM where am(v) leaves [-pi/2, pi/2]).
   pure subroutine free_flow_tangent_lanes(nl, m0, tau, ci, dm0, m1, w, dm1, dth1, ok)
      integer, intent(in) :: nl
      real(dp), intent(in) :: m0(flow_lanes_width, 3), tau(flow_lanes_width), ci(flow_lanes_width, 3)
      real(dp), intent(in) :: dm0(flow_lanes_width, 3)
      real(dp), intent(out) :: m1(flow_lanes_width, 3), w(flow_lanes_width, 4)
      real(dp), intent(out) :: dm1(flow_lanes_width, 3), dth1(flow_lanes_width, 3)
      logical, intent(out) :: ok(flow_lanes_width)
      integer, parameter :: nb = flow_lanes_width
      ! per-lane quantities carried between the stages, and their tangents (prefix t)
      real(dp), dimension(nb) :: bab, bba, b2a, lam, sigma, c0, c1, k2, sn0, cn0, dn0, v, dcoef, cia, twot
      real(dp), dimension(nb) :: sv, cv, dv, s1, cc1, dd1, wq, third, ay, ax, pw, pz, ap, aa, psi, hc, hs
      real(dp), dimension(nb) :: tsum, tv, nt, okf, case3, big, use_rj, kp2n, kp2d
      real(dp), dimension(nb) :: agm, sva, cva, dva, dup, xra, yra, pra, wra, rjd
      real(dp), dimension(nb) :: tbab, tbba, tb2a, tlam, tc0, tc1, tk2, tsn0, tcn0, tdn0, tdcoef, ttwot, tvv
      real(dp), dimension(nb) :: tsv, tcv, tdv, ts1, tcc1, tdd1, twq, tthird, tay, tax, tpw2, tpz, tap, taa
      real(dp), dimension(nb) :: tpsi, dsm, rdl, one, rdw, txra, tyra, tpra, trjd, bad, ratio
      real(dp) :: i21, i31, i32, x1, x2, x3, d1, d2, d3, da, db, ia2, ib2, ma, mb, den, r
      real(dp) :: xr, yr, pr, a0, q, rj, z0, z1, val, c, s, b2, a
      real(dp) :: weight, ss, cc, ntmax, p0(4), p1(4), rq(4), wk(4), m11, m13
      real(dp) :: tx1, tx2, tx3, td1, td2, td3, tda, tdb, tma, tmb, tden, tr, txr, tyr, tpr, ta0, tq
      real(dp) :: tss, tcc, ta, tb2, tz0, tz1, n0, n1, q0d, q1d, tn0, tn1, tq0d, tq1d, tval, tsx, tsy, tsz
      real(dp) :: tp0(4), tp1(4), trq(4), twk(4), nrm, tnrm, np0, np1, tnp0, tnp1, tc, ts, trj, dam, xs, ys, sc
      real(dp) :: ang, wv(4), rden, rsl, tl, rc1, rc2, rda, rdb, rnp
      real(dp) :: e, cm, dmv, qk, ds, dc, dd, dm1v, dm2v, dm3v, pd(4), nq0, la, lb
      logical :: short
      integer :: k, j

      ! --- invariants, moduli and (sn, cn, dn)(u0) (free_flow_unit), with their tangents ---
      do k = 1, nl
         i21 = ci(k, 2) - ci(k, 1); i31 = ci(k, 3) - ci(k, 1); i32 = ci(k, 3) - ci(k, 2)
         x1 = m0(k, 1) * m0(k, 1); x2 = m0(k, 2) * m0(k, 2); x3 = m0(k, 3) * m0(k, 3)
         tx1 = 2 * m0(k, 1) * dm0(k, 1); tx2 = 2 * m0(k, 2) * dm0(k, 2); tx3 = 2 * m0(k, 3) * dm0(k, 3)
         ! (ci(k, 3) = 1: no division by it)
         d1 = x2 * i21 / ci(k, 2) + x3 * i31
         d3 = x1 * i31 / ci(k, 1) + x2 * i32 / ci(k, 2)
         d2 = x3 * i32 - x1 * i21 / ci(k, 1)
         ! (the tangents by reciprocals: they need no rounding of their own)
         rc1 = 1 / ci(k, 1); rc2 = 1 / ci(k, 2)
         td1 = tx2 * (i21 * rc2) + tx3 * i31
         td3 = tx1 * (i31 * rc1) + tx2 * (i32 * rc2)
         td2 = tx3 * i32 - tx1 * (i21 * rc1)
         d2 = merge(0.0_dp, d2, abs(d2) < invariant_floor)
         okf(k) = merge(1.0_dp, 0.0_dp, .not. (d1 < invariant_floor .or. d3 < invariant_floor &
                        .or. (m0(k, 1) == 0 .and. m0(k, 3) == 0)) .and. d2 /= 0)
         case3(k) = merge(1.0_dp, 0.0_dp, d2 > 0)
         ma = merge(m0(k, 3), m0(k, 1), d2 > 0)
         mb = merge(m0(k, 1), m0(k, 3), d2 > 0)
         tma = merge(dm0(k, 3), dm0(k, 1), d2 > 0)
         tmb = merge(dm0(k, 1), dm0(k, 3), d2 > 0)
         cia(k) = merge(ci(k, 3), ci(k, 1), d2 > 0)
         da = merge(d3, d1, d2 > 0); db = merge(d1, d3, d2 > 0)
         tda = merge(td3, td1, d2 > 0); tdb = merge(td1, td3, d2 > 0)
         ia2 = merge(i32, i21, d2 > 0); ib2 = merge(i21, i32, d2 > 0)
         dcoef(k) = merge(d3, -d1, d2 > 0) / cia(k)
         tdcoef(k) = merge(td3, -td1, d2 > 0) / cia(k)
         bab(k) = sqrt(cia(k) * db / i31)
         bba(k) = sqrt(merge(ci(k, 1), ci(k, 3), d2 > 0) * da / i31)
         b2a(k) = sqrt(ci(k, 2) * da / ia2)
         lam(k) = sqrt(db * ia2 / (ci(k, 1) * ci(k, 2) * ci(k, 3)))
         ! (sqrt(c x)' = c x' / (2 sqrt(c x)) = sqrt(c x) x' / (2 x))
         rda = 1 / da; rdb = 1 / db
         tbab(k) = bab(k) * (tdb * rdb) / 2
         tbba(k) = bba(k) * (tda * rda) / 2
         tb2a(k) = b2a(k) * (tda * rda) / 2
         tlam(k) = lam(k) * (tdb * rdb) / 2
         sigma(k) = sign(1.0_dp, ma)
         c0(k) = bba(k) * bba(k)
         tc0(k) = 2 * bba(k) * tbba(k)
         k2(k) = da * ib2 / (db * ia2)
         tk2(k) = (tda * ib2 / ia2 - k2(k) * tdb) * rdb
         sn0(k) = m0(k, 2) / b2a(k); cn0(k) = mb / bba(k); dn0(k) = abs(ma) / bab(k)
         tsn0(k) = (dm0(k, 2) - sn0(k) * tb2a(k)) / b2a(k)
         tcn0(k) = (tmb - cn0(k) * tbba(k)) / bba(k)
         tdn0(k) = (sigma(k) * tma - dn0(k) * tbab(k)) / bab(k)
         c1(k) = bab(k) * bab(k) * k2(k)
         tc1(k) = 2 * bab(k) * tbab(k) * k2(k) + bab(k) * bab(k) * tk2(k)
         v(k) = sigma(k) * lam(k) * tau(k)
         tvv(k) = sigma(k) * tlam(k) * tau(k)
         agm(k) = merge(1.0_dp, 0.0_dp, abs(v(k)) > jacobi_series_max)
         sva(k) = 0; cva(k) = 0; dva(k) = 0
         kp2n(k) = abs(d2) * i31
         kp2d(k) = db * ia2
      end do

      ! 2T (the exact angle only)
      do k = 1, nl
         x1 = m0(k, 1) * m0(k, 1); x2 = m0(k, 2) * m0(k, 2); x3 = m0(k, 3) * m0(k, 3)
         twot(k) = x1 / ci(k, 1) + x2 / ci(k, 2) + x3
         ttwot(k) = 2 * (m0(k, 1) * dm0(k, 1) / ci(k, 1) + m0(k, 2) * dm0(k, 2) / ci(k, 2) &
                         + m0(k, 3) * dm0(k, 3))
      end do

      ! (free_flow_lanes' rule: fewer than half the lanes on this path are left to the one-body code)
      if (2 * count(okf(1:nl) > 0) < nl) then
         ok(1:nl) = .false.
         return
      end if

      ! --- (sn, cn, dn)(v) from the AGM where |v| is beyond the series, their derivative in the
      ! parameter by d am/dm = -dn (s^3 / 6) RD(c^2, 1, d^2) (RD = RJ(c^2, d^2, 1, d^2)) ---
      do k = 1, nl
         dsm(k) = 0
      end do
      if (any(agm(1:nl) > 0)) then
         do k = 1, nl
            agm(k) = agm(k) * okf(k)
         end do
         call jacobi_agm_lanes(nl, agm, k2, kp2n, kp2d, v, sva, cva, dva)
         do k = 1, nl
            okf(k) = okf(k) * merge(0.0_dp, 1.0_dp, agm(k) < 0)
            agm(k) = abs(agm(k))
            ! am(v) within [-pi/2, pi/2] (|v| <= K); a rounding beyond takes the one-body code
            okf(k) = okf(k) * merge(0.0_dp, 1.0_dp, agm(k) > 0 .and. cva(k) < 0)
            rdl(k) = merge(1.0_dp, 0.0_dp, agm(k) > 0 .and. okf(k) > 0)
            one(k) = 1
            xra(k) = cva(k) * cva(k); yra(k) = dva(k) * dva(k)
         end do
         call rj_duplications_lanes(nl, rdl, xra, yra, yra, one, rdw)
         do k = 1, nl
            dsm(k) = merge(-dva(k) * (sva(k)**3 / 6) * rdw(k), 0.0_dp, rdl(k) > 0)
         end do
      end if

      ! --- (sn, cn, dn)(v) by the Maclaurin series (jacobi_series, sn_series_sum), and d sn/dm
      ! by the series of its derivative ---
      ntmax = 1
      do k = 1, nl
         nt(k) = 1
         do j = 1, sn_series_terms - 1
            nt(k) = nt(k) + merge(1.0_dp, 0.0_dp, abs(v(k)) > sn_series_limit(j))
         end do
         tv(k) = v(k) * v(k)
      end do
      do k = 1, nl
         ntmax = max(ntmax, merge(nt(k), 1.0_dp, okf(k) > 0))
      end do
      call sn_series_sum_lanes(nl, nint(ntmax), nt, tv, k2, tsum)
      call sn_series_dm_lanes(nl, nint(ntmax), nt, tv, k2, rdw)

      ! --- addition formulas (jacobi_add), m(tau), the arguments of the angle increment ---
      do k = 1, nl
         sv(k) = v(k) * tsum(k)
         cv(k) = sqrt((1 - sv(k)) * (1 + sv(k)))
         dv(k) = sqrt(1 - k2(k) * sv(k) * sv(k))
         ! the series: d sn = cn dn dv + dsn/dm dk2; cn, dn by their formulas from sn
         tsv(k) = cv(k) * dv(k) * tvv(k) - v(k) * tv(k) * rdw(k) * tk2(k)
         tcv(k) = -sv(k) * tsv(k) / cv(k)
         tdv(k) = -(tk2(k) * sv(k) * sv(k) + 2 * k2(k) * sv(k) * tsv(k)) / (2 * dv(k))
         sv(k) = merge(sva(k), sv(k), agm(k) > 0)
         cv(k) = merge(cva(k), cv(k), agm(k) > 0)
         dv(k) = merge(dva(k), dv(k), agm(k) > 0)
      end do
      if (any(agm(1:nl) > 0)) then
         do k = 1, nl
            ! the AGM: d am/dm = dsm (dsm = -dn dF/dm), d sn = cn (dn dv + dam dk2), d cn =
            ! -sn (dn dv + dam dk2), d dn = -m sn cn dv - (sn^2 / 2 + m sn cn dam) / dn dk2
            dam = dsm(k)
            tsx = cva(k) * (dva(k) * tvv(k) + dam * tk2(k))
            tsy = -sva(k) * (dva(k) * tvv(k) + dam * tk2(k))
            tsz = -k2(k) * sva(k) * cva(k) * tvv(k) - (sva(k) * sva(k) / 2 + k2(k) * sva(k) * cva(k) * dam) &
                  / dva(k) * tk2(k)
            tsv(k) = merge(tsx, tsv(k), agm(k) > 0)
            tcv(k) = merge(tsy, tcv(k), agm(k) > 0)
            tdv(k) = merge(tsz, tdv(k), agm(k) > 0)
         end do
      end if
      do k = 1, nl
         den = dn0(k) * dn0(k) + k2(k) * (sn0(k) * cv(k)) * (sn0(k) * cv(k))
         r = 1 / den
         ! (the changes of sn, cn, dn over v, jacobi_add; the tangents below are those of the
         ! addition formulas, the same functions)
         e = sv(k) * sv(k)
         cm = e / (1 + cv(k))
         dmv = k2(k) * e / (1 + dv(k))
         qk = k2(k) * (sn0(k) * sn0(k)) * e
         ds = (sv(k) * cn0(k) * dn0(k) + sn0(k) * (qk - dv(k) * cm - dmv)) * r
         dc = (cn0(k) * (qk - cm) - sn0(k) * dn0(k) * sv(k) * dv(k)) * r
         dd = (dn0(k) * (qk - dmv) - k2(k) * sn0(k) * cn0(k) * sv(k) * cv(k)) * r
         ! (a longer step: the values whole)
         short = abs(v(k)) <= short_change_max
         s1(k) = merge(sn0(k) + ds, (sn0(k) * cv(k) * dv(k) + sv(k) * cn0(k) * dn0(k)) * r, short)
         cc1(k) = merge(cn0(k) + dc, (cn0(k) * cv(k) - sn0(k) * dn0(k) * sv(k) * dv(k)) * r, short)
         dd1(k) = merge(dn0(k) + dd, (dn0(k) * dv(k) - k2(k) * sn0(k) * cn0(k) * sv(k) * cv(k)) * r, &
                        short)
         tden = 2 * dn0(k) * tdn0(k) + tk2(k) * (sn0(k) * cv(k))**2 &
                + 2 * k2(k) * (sn0(k) * cv(k)) * (tsn0(k) * cv(k) + sn0(k) * tcv(k))
         ts1(k) = (tsn0(k) * cv(k) * dv(k) + sn0(k) * tcv(k) * dv(k) + sn0(k) * cv(k) * tdv(k) &
                   + tsv(k) * cn0(k) * dn0(k) + sv(k) * tcn0(k) * dn0(k) + sv(k) * cn0(k) * tdn0(k) &
                   - s1(k) * tden) * r
         tcc1(k) = (tcn0(k) * cv(k) + cn0(k) * tcv(k) - (tsn0(k) * dn0(k) * sv(k) * dv(k) &
                    + sn0(k) * tdn0(k) * sv(k) * dv(k) + sn0(k) * dn0(k) * tsv(k) * dv(k) &
                    + sn0(k) * dn0(k) * sv(k) * tdv(k)) - cc1(k) * tden) * r
         tdd1(k) = (tdn0(k) * dv(k) + dn0(k) * tdv(k) - (tk2(k) * sn0(k) * cn0(k) * sv(k) * cv(k) &
                    + k2(k) * (tsn0(k) * cn0(k) * sv(k) * cv(k) + sn0(k) * tcn0(k) * sv(k) * cv(k) &
                               + sn0(k) * cn0(k) * tsv(k) * cv(k) + sn0(k) * cn0(k) * sv(k) * tcv(k))) &
                    - dd1(k) * tden) * r
         okf(k) = merge(okf(k), 0.0_dp, den >= addition_min_den)
         ! m1 in the (a, 2, b) order: a = 1 (b = 3) or a = 3 (b = 1); a short step moves m0
         ma = sigma(k) * bab(k) * dd
         mb = bba(k) * dc
         la = sigma(k) * bab(k) * dd1(k)
         lb = bba(k) * cc1(k)
         m1(k, 1) = merge(m0(k, 1) + merge(mb, ma, case3(k) > 0), merge(lb, la, case3(k) > 0), short)
         m1(k, 2) = merge(m0(k, 2) + b2a(k) * ds, b2a(k) * s1(k), short)
         m1(k, 3) = merge(m0(k, 3) + merge(ma, mb, case3(k) > 0), merge(la, lb, case3(k) > 0), short)
         tma = sigma(k) * (tbab(k) * dd1(k) + bab(k) * tdd1(k))
         tmb = tbba(k) * cc1(k) + bba(k) * tcc1(k)
         dm1(k, 1) = merge(tmb, tma, case3(k) > 0)
         dm1(k, 2) = tb2a(k) * s1(k) + b2a(k) * ts1(k)
         dm1(k, 3) = merge(tma, tmb, case3(k) > 0)
      end do

      ! --- the exact angle: angle_increment up to its atan arguments ---
      do k = 1, nl
         big(k) = merge(1.0_dp, 0.0_dp, bab(k) * bab(k) >= 0.25_dp)
         use_rj(k) = max(big(k), merge(1.0_dp, 0.0_dp, k2(k) > 0))
      end do
      do k = 1, nl
         b2 = bab(k) * bab(k)
         tb2 = 2 * bab(k) * tbab(k)
         wq(k) = sqrt(c0(k) * (c0(k) + c1(k)))
         twq(k) = (tc0(k) * (c0(k) + c1(k)) + c0(k) * (tc0(k) + tc1(k))) / (2 * wq(k))
         ss = sn0(k) * sv(k) * s1(k)
         cc = cn0(k) * cv(k) * cc1(k)
         tss = tsn0(k) * sv(k) * s1(k) + sn0(k) * tsv(k) * s1(k) + sn0(k) * sv(k) * ts1(k)
         tcc = tcn0(k) * cv(k) * cc1(k) + cn0(k) * tcv(k) * cc1(k) + cn0(k) * cv(k) * tcc1(k)
         a = merge(c0(k), c1(k), big(k) > 0) / merge(b2, c0(k), big(k) > 0)
         ta = (merge(tc0(k), tc1(k), big(k) > 0) - a * merge(tb2, tc0(k), big(k) > 0)) / merge(b2, c0(k), big(k) > 0)
         ratio(k) = merge(sv(k) * sv(k), k2(k), big(k) > 0) / merge(b2, c0(k), big(k) > 0)
         weight = min(1.0_dp, merge(ratio(k), ratio(k) * sv(k) * sv(k), big(k) > 0))
         xr = cv(k) * cv(k); yr = dv(k) * dv(k); pr = 1 + a * sv(k) * sv(k)
         txr = 2 * cv(k) * tcv(k); tyr = 2 * dv(k) * tdv(k); tpr = ta * sv(k) * sv(k) + 2 * a * sv(k) * tsv(k)
         a0 = (xr + yr + 1.0_dp + 2 * pr) * 0.2_dp
         ta0 = (txr + tyr + 2 * tpr) * 0.2_dp
         q = rj_q * max(abs(a0 - xr), abs(a0 - yr), abs(a0 - 1.0_dp), abs(a0 - pr))
         dup(k) = merge(1.0_dp, 0.0_dp, rj_needs_duplication(use_rj(k) * weight, q / a0))
         xra(k) = xr; yra(k) = yr; pra(k) = pr; wra(k) = weight
         txra(k) = txr; tyra(k) = tyr; tpra(k) = tpr
         r = 1 / a0
         tr = -r * r * ta0
         rj = r * sqrt(r) * rj_series((a0 - xr) * r, (a0 - yr) * r, (a0 - 1.0_dp) * r)
         trj = rj * (-1.5_dp * r * ta0) + r * sqrt(r) * rj_series_tangent((a0 - xr) * r, (a0 - yr) * r, &
               (a0 - 1.0_dp) * r, (ta0 - txr) * r + (a0 - xr) * tr, (ta0 - tyr) * r + (a0 - yr) * tr, &
               ta0 * r + (a0 - 1.0_dp) * tr)
         third(k) = sv(k)**3 / 3 * rj
         tthird(k) = sv(k) * sv(k) * tsv(k) * rj + sv(k)**3 / 3 * trj
         ! pi_addition: -atan_ratio(pw, pz); the tangent of pw^2
         pw(k) = sqrt(a * (1 + a) * (a + k2(k)))
         tpw2(k) = ta * (1 + a) * (a + k2(k)) + a * ta * (a + k2(k)) + a * (1 + a) * (ta + tk2(k))
         pz(k) = ss / (1 + a * (1 - cc))
         tpz(k) = (tss - pz(k) * (ta * (1 - cc) - a * tcc)) / (1 + a * (1 - cc))
         ! the elementary part: atan2_ratio(wq, ay, ax)
         n0 = sn0(k) * cn0(k) * (c0(k) + c1(k) * sn0(k) * sn0(k))
         q0d = (1 + bab(k) * dn0(k)) * (c0(k) * bab(k) * dn0(k) * cn0(k) * cn0(k) + (c0(k) + c1(k)) * sn0(k) * sn0(k))
         z0 = sn0(k) * cn0(k) * (c0(k) + c1(k) * sn0(k) * sn0(k)) / ((1 + bab(k) * dn0(k)) &
              * (c0(k) * bab(k) * dn0(k) * cn0(k) * cn0(k) + (c0(k) + c1(k)) * sn0(k) * sn0(k)))
         tn0 = (tsn0(k) * cn0(k) + sn0(k) * tcn0(k)) * (c0(k) + c1(k) * sn0(k) * sn0(k)) &
               + sn0(k) * cn0(k) * (tc0(k) + tc1(k) * sn0(k) * sn0(k) + 2 * c1(k) * sn0(k) * tsn0(k))
         tq0d = (tbab(k) * dn0(k) + bab(k) * tdn0(k)) &
                * (c0(k) * bab(k) * dn0(k) * cn0(k) * cn0(k) + (c0(k) + c1(k)) * sn0(k) * sn0(k)) &
                + (1 + bab(k) * dn0(k)) * ((tc0(k) * bab(k) * dn0(k) + c0(k) * tbab(k) * dn0(k) &
                                            + c0(k) * bab(k) * tdn0(k)) * cn0(k) * cn0(k) &
                                           + c0(k) * bab(k) * dn0(k) * 2 * cn0(k) * tcn0(k) &
                                           + (tc0(k) + tc1(k)) * sn0(k) * sn0(k) &
                                           + (c0(k) + c1(k)) * 2 * sn0(k) * tsn0(k))
         tz0 = (tn0 - n0 / q0d * tq0d) / q0d
         n1 = s1(k) * cc1(k) * (c0(k) + c1(k) * s1(k) * s1(k))
         q1d = (1 + bab(k) * dd1(k)) * (c0(k) * bab(k) * dd1(k) * cc1(k) * cc1(k) + (c0(k) + c1(k)) * s1(k) * s1(k))
         z1 = s1(k) * cc1(k) * (c0(k) + c1(k) * s1(k) * s1(k)) / ((1 + bab(k) * dd1(k)) &
              * (c0(k) * bab(k) * dd1(k) * cc1(k) * cc1(k) + (c0(k) + c1(k)) * s1(k) * s1(k)))
         tn1 = (ts1(k) * cc1(k) + s1(k) * tcc1(k)) * (c0(k) + c1(k) * s1(k) * s1(k)) &
               + s1(k) * cc1(k) * (tc0(k) + tc1(k) * s1(k) * s1(k) + 2 * c1(k) * s1(k) * ts1(k))
         tq1d = (tbab(k) * dd1(k) + bab(k) * tdd1(k)) &
                * (c0(k) * bab(k) * dd1(k) * cc1(k) * cc1(k) + (c0(k) + c1(k)) * s1(k) * s1(k)) &
                + (1 + bab(k) * dd1(k)) * ((tc0(k) * bab(k) * dd1(k) + c0(k) * tbab(k) * dd1(k) &
                                            + c0(k) * bab(k) * tdd1(k)) * cc1(k) * cc1(k) &
                                           + c0(k) * bab(k) * dd1(k) * 2 * cc1(k) * tcc1(k) &
                                           + (tc0(k) + tc1(k)) * s1(k) * s1(k) &
                                           + (c0(k) + c1(k)) * 2 * s1(k) * ts1(k))
         tz1 = (tn1 - n1 / q1d * tq1d) / q1d
         ay(k) = merge(z1 - z0, s1(k) * cn0(k) - cc1(k) * sn0(k), big(k) > 0)
         ax(k) = merge(1 + wq(k) * wq(k) * z0 * z1, &
                       c0(k) * cc1(k) * cn0(k) + (c0(k) + c1(k)) * s1(k) * sn0(k), big(k) > 0)
         tay(k) = merge(tz1 - tz0, ts1(k) * cn0(k) + s1(k) * tcn0(k) - tcc1(k) * sn0(k) - cc1(k) * tsn0(k), &
                        big(k) > 0)
         tax(k) = merge(2 * wq(k) * twq(k) * z0 * z1 + wq(k) * wq(k) * (tz0 * z1 + z0 * tz1), &
                        tc0(k) * cc1(k) * cn0(k) + c0(k) * (tcc1(k) * cn0(k) + cc1(k) * tcn0(k)) &
                        + (tc0(k) + tc1(k)) * s1(k) * sn0(k) + (c0(k) + c1(k)) * (ts1(k) * sn0(k) &
                                                                                  + s1(k) * tsn0(k)), &
                        big(k) > 0)
      end do
      if (any(dup(1:nl) > 0)) then
         call rj_duplications_tangent_lanes(nl, dup, xra, yra, pra, wra, txra, tyra, tpra, rjd, trjd, bad)
         do k = 1, nl
            if (dup(k) > 0) then
               third(k) = sv(k)**3 / 3 * rjd(k)
               tthird(k) = sv(k) * sv(k) * tsv(k) * rjd(k) + sv(k)**3 / 3 * trjd(k)
               ! (carlson_rj itself, in a lane: its derivative is not written here)
               okf(k) = okf(k) * (1 - bad(k))
            end if
         end do
      end if
      call atan_ratio_lanes(nl, pw, pz, ap)
      call atan2_ratio_lanes(nl, wq, ay, ax, aa)
      do k = 1, nl
         ! atan2_ratio(wq, ay, ax): atan_ratio(wq, ay / ax) for ax > 0, else atan2(wq ay, ax) / wq
         xra(k) = ay(k) / ax(k)
         yra(k) = (tay(k) - xra(k) * tax(k)) / ax(k)
         pra(k) = 2 * wq(k) * twq(k)
      end do
      call atan_ratio_tangent_lanes(nl, pw, pz, tpw2, tpz, tap)
      call atan_ratio_tangent_lanes(nl, wq, xra, pra, yra, taa)
      if (any(.not. ax(1:nl) > 0)) then
         do k = 1, nl
            ys = wq(k) * ay(k)
            sc = max(abs(ys), abs(ax(k)))
            ang = ((ax(k) / sc) * (twq(k) * ay(k) + wq(k) * tay(k)) - (ys / sc) * tax(k)) &
                  / (((ax(k) / sc)**2 + (ys / sc)**2) * sc)
            taa(k) = merge(taa(k), (ang - aa(k) * twq(k)) / wq(k), ax(k) > 0)
         end do
      end if

      ! --- the angle psi ---
      do k = 1, nl
         third(k) = merge(third(k) - (-ap(k)), 0.0_dp, use_rj(k) > 0)
         tthird(k) = merge(tthird(k) + tap(k), 0.0_dp, use_rj(k) > 0)
         ! (free_flow_lanes' quotients, one division for both forms; the tangents by the
         ! reciprocals rden of B^2 or c0 and rsl of sigma lambda)
         q = merge(third(k), bab(k), big(k) > 0) / merge(bab(k) * bab(k), c0(k), big(k) > 0)
         val = merge(q + bab(k) * aa(k), aa(k) - q * (v(k) - ratio(k) * third(k)), big(k) > 0)
         rden = 1 / merge(bab(k) * bab(k), c0(k), big(k) > 0)
         tval = merge((tthird(k) - 2 * third(k) * tbab(k) * bab(k) * rden) * rden &
                      + tbab(k) * aa(k) + bab(k) * taa(k), &
                      taa(k) - (tbab(k) - q * tc0(k)) * rden * (v(k) - ratio(k) * third(k)) &
                      - q * (tvv(k) - (tk2(k) - ratio(k) * tc0(k)) * rden * third(k) - ratio(k) * tthird(k)), &
                      big(k) > 0)
         q = merge(dcoef(k), dcoef(k) * bab(k), big(k) > 0) / (sigma(k) * lam(k))
         psi(k) = merge(tau(k) / cia(k) + q * val, twot(k) * tau(k) - q * val, big(k) > 0)
         rsl = 1 / (sigma(k) * lam(k))
         tl = tlam(k) * sigma(k) * rsl
         tpsi(k) = merge((tdcoef(k) * val + dcoef(k) * tval - dcoef(k) * val * tl) * rsl, &
                         ttwot(k) * tau(k) - ((tdcoef(k) * bab(k) + dcoef(k) * tbab(k)) * val &
                                              + dcoef(k) * bab(k) * tval - dcoef(k) * bab(k) * val * tl) * rsl, &
                         big(k) > 0)
      end do

      ! --- the half-angle functions ---
      do k = 1, nl
         psi(k) = psi(k) / 2
      end do
      call sincos_lanes(nl, psi, hs, hc)

      ! --- attitude_from_angle: w = conj(p0) Y p1, normalised, and its tangent ---
      do k = 1, nl
         c = hc(k); s = hs(k)
         tc = -s * tpsi(k) / 2; ts = c * tpsi(k) / 2
         p0(1) = 1 + abs(merge(m0(k, 3), m0(k, 1), case3(k) > 0))
         p0(2) = merge(sigma(k) * m0(k, 2), 0.0_dp, case3(k) > 0)
         p0(3) = merge(-sigma(k) * m0(k, 1), sigma(k) * m0(k, 3), case3(k) > 0)
         p0(4) = merge(0.0_dp, -sigma(k) * m0(k, 2), case3(k) > 0)
         tp0(1) = sigma(k) * merge(dm0(k, 3), dm0(k, 1), case3(k) > 0)
         tp0(2) = merge(sigma(k) * dm0(k, 2), 0.0_dp, case3(k) > 0)
         tp0(3) = merge(-sigma(k) * dm0(k, 1), sigma(k) * dm0(k, 3), case3(k) > 0)
         tp0(4) = merge(0.0_dp, -sigma(k) * dm0(k, 2), case3(k) > 0)
         m11 = m1(k, 1); m13 = m1(k, 3)
         p1(1) = 1 + abs(merge(m13, m11, case3(k) > 0))
         p1(2) = merge(sigma(k) * m1(k, 2), 0.0_dp, case3(k) > 0)
         p1(3) = merge(-sigma(k) * m11, sigma(k) * m13, case3(k) > 0)
         p1(4) = merge(0.0_dp, -sigma(k) * m1(k, 2), case3(k) > 0)
         ! (free_flow_lanes' w: a short step |p0|^2 (c, s m0) + conj(p0) Y dp, a longer one
         ! conj(p0) Y p1; the tangent below is that of conj(p0) Y p1, the same function)
         dm1v = m1(k, 1) - m0(k, 1); dm2v = m1(k, 2) - m0(k, 2); dm3v = m1(k, 3) - m0(k, 3)
         short = max(abs(dm1v), abs(dm2v), abs(dm3v)) <= short_change_max
         pd(1) = merge(sigma(k) * merge(dm3v, dm1v, case3(k) > 0), p1(1), short)
         pd(2) = merge(merge(sigma(k) * dm2v, 0.0_dp, case3(k) > 0), p1(2), short)
         pd(3) = merge(merge(-sigma(k) * dm1v, sigma(k) * dm3v, case3(k) > 0), p1(3), short)
         pd(4) = merge(merge(0.0_dp, -sigma(k) * dm2v, case3(k) > 0), p1(4), short)
         nq0 = merge(p0(1) * p0(1) + p0(2) * p0(2) + p0(3) * p0(3) + p0(4) * p0(4), 0.0_dp, short)
         tp1(1) = sign(1.0_dp, merge(m13, m11, case3(k) > 0)) * merge(dm1(k, 3), dm1(k, 1), case3(k) > 0)
         tp1(2) = merge(sigma(k) * dm1(k, 2), 0.0_dp, case3(k) > 0)
         tp1(3) = merge(-sigma(k) * dm1(k, 1), sigma(k) * dm1(k, 3), case3(k) > 0)
         tp1(4) = merge(0.0_dp, -sigma(k) * dm1(k, 2), case3(k) > 0)
         rq(1) = c * p0(1)
         rq(2) = s * m0(k, 1) - c * p0(2)
         rq(3) = s * m0(k, 2) - c * p0(3)
         rq(4) = s * m0(k, 3) - c * p0(4)
         rq(2) = merge(rq(2), rq(2) + s * sigma(k), case3(k) > 0)
         rq(4) = merge(rq(4) + s * sigma(k), rq(4), case3(k) > 0)
         trq(1) = tc * p0(1) + c * tp0(1)
         trq(2) = ts * m0(k, 1) + s * dm0(k, 1) - tc * p0(2) - c * tp0(2)
         trq(3) = ts * m0(k, 2) + s * dm0(k, 2) - tc * p0(3) - c * tp0(3)
         trq(4) = ts * m0(k, 3) + s * dm0(k, 3) - tc * p0(4) - c * tp0(4)
         trq(2) = merge(trq(2), trq(2) + ts * sigma(k), case3(k) > 0)
         trq(4) = merge(trq(4) + ts * sigma(k), trq(4), case3(k) > 0)
         ! qmul(rq, dp) (rotations), written out (the same operations)
         wk(1) = rq(1) * pd(1) - rq(2) * pd(2) - rq(3) * pd(3) - rq(4) * pd(4)
         wk(2) = rq(1) * pd(2) + pd(1) * rq(2) + rq(3) * pd(4) - rq(4) * pd(3)
         wk(3) = rq(1) * pd(3) + pd(1) * rq(3) + rq(4) * pd(2) - rq(2) * pd(4)
         wk(4) = rq(1) * pd(4) + pd(1) * rq(4) + rq(2) * pd(3) - rq(3) * pd(2)
         wk(1) = merge(wk(1) + c * nq0, wk(1), short)
         wk(2) = merge(wk(2) + (s * nq0) * m0(k, 1), wk(2), short)
         wk(3) = merge(wk(3) + (s * nq0) * m0(k, 2), wk(3), short)
         wk(4) = merge(wk(4) + (s * nq0) * m0(k, 3), wk(4), short)
         twk(1) = trq(1) * p1(1) - trq(2) * p1(2) - trq(3) * p1(3) - trq(4) * p1(4) &
                  + rq(1) * tp1(1) - rq(2) * tp1(2) - rq(3) * tp1(3) - rq(4) * tp1(4)
         twk(2) = trq(1) * p1(2) + p1(1) * trq(2) + trq(3) * p1(4) - trq(4) * p1(3) &
                  + rq(1) * tp1(2) + tp1(1) * rq(2) + rq(3) * tp1(4) - rq(4) * tp1(3)
         twk(3) = trq(1) * p1(3) + p1(1) * trq(3) + trq(4) * p1(2) - trq(2) * p1(4) &
                  + rq(1) * tp1(3) + tp1(1) * rq(3) + rq(4) * tp1(2) - rq(2) * tp1(4)
         twk(4) = trq(1) * p1(4) + p1(1) * trq(4) + trq(2) * p1(3) - trq(3) * p1(2) &
                  + rq(1) * tp1(4) + tp1(1) * rq(4) + rq(2) * tp1(3) - rq(3) * tp1(2)
         np0 = p0(1) * p0(1) + p0(2) * p0(2) + p0(3) * p0(3) + p0(4) * p0(4)
         np1 = p1(1) * p1(1) + p1(2) * p1(2) + p1(3) * p1(3) + p1(4) * p1(4)
         tnp0 = 2 * (p0(1) * tp0(1) + p0(2) * tp0(2) + p0(3) * tp0(3) + p0(4) * tp0(4))
         tnp1 = 2 * (p1(1) * tp1(1) + p1(2) * tp1(2) + p1(3) * tp1(3) + p1(4) * tp1(4))
         ! (attitude_from_half_angle's normalisations: a short step by its own norm, its scalar
         ! part from its vector part; a longer one by the norms of p0 and p1)
         nrm = 1 / sqrt(merge(wk(1) * wk(1) + wk(2) * wk(2) + wk(3) * wk(3) + wk(4) * wk(4), &
                              (p0(1) * p0(1) + p0(2) * p0(2) + p0(3) * p0(3) + p0(4) * p0(4)) &
                              * (p1(1) * p1(1) + p1(2) * p1(2) + p1(3) * p1(3) + p1(4) * p1(4)), short))
         a = wk(1)
         wk(1) = wk(1) * nrm; wk(2) = wk(2) * nrm; wk(3) = wk(3) * nrm; wk(4) = wk(4) * nrm
         wk(1) = merge(sign(1 - (wk(2) * wk(2) + wk(3) * wk(3) + wk(4) * wk(4)) / (1 + abs(a) * nrm), a), &
                       wk(1), short)
         w(k, 1) = wk(1); w(k, 2) = wk(2); w(k, 3) = wk(3); w(k, 4) = wk(4)
         ! |wk| = |p0| |p1| |Y|, so nrm = (np0 np1)^(-1/2) up to rounding: tnrm / nrm =
         ! -(tnp0 / np0 + tnp1 / np1) / 2, with 1 / (np0 np1) = nrm^2; dw = twk nrm + (wk / nrm) tnrm,
         ! and dth1 = 2 vec(conj(w) dw) (a change along w itself leaves it)
         rnp = nrm * nrm
         tnrm = -(tnp0 * np1 + tnp1 * np0) * rnp / 2
         wv = twk * nrm + wk * tnrm
         dth1(k, 1) = 2 * (wk(1) * wv(2) - wv(1) * wk(2) - (wk(3) * wv(4) - wk(4) * wv(3)))
         dth1(k, 2) = 2 * (wk(1) * wv(3) - wv(1) * wk(3) - (wk(4) * wv(2) - wk(2) * wv(4)))
         dth1(k, 3) = 2 * (wk(1) * wv(4) - wv(1) * wk(4) - (wk(2) * wv(3) - wk(3) * wv(2)))
      end do
      do k = 1, nl
         ok(k) = okf(k) > 0
      end do
   end subroutine free_flow_tangent_lanes

end module flow_tangent_lanes
