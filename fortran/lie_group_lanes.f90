! The Lie-group steps (exponential and Cayley maps) of frb.integrate with the bodies of a chunk in lock-step lanes
! (structure-of-arrays blocks of lane_block bodies, component i of body j in x(j, i)):
! * TERZE (module lie_stormer_verlet: Z. Terze, A. Mueller, D. Zlatar, J. Comput. Nonlinear
!   Dynam. 10(5):051005, 2015): a = m + (h/2) T_n, Y = exp(-(h/2) Omega_n) a,
!   p = quat_exp(h I^-1 Y), q <- q p, m <- E(p)^T a + (h/2) T_{n+1}, with T_{n+1} kept in the
!   workspace (ws(1:3), flag ws(4) = 1) as the T_n of the next step;
! * SYMROT (module approximate_free_flows: G. Vilmart, "Rigid body dynamics", 2013, Algorithm 2
!   with alpha, beta derived from R and S) as the free part of the Strang splitting eq. (16) of
!   that paper: kick m += (h/2) T_b(t, Q), R(h/2) S(h) R(h/2), kick m += (h/2) T_b(t + h, Q),
!   the kicks without them torque-free;
! * MIDPOINT (module approximate_free_flows: the implicit midpoint rule of Remark 4 of that paper)
!   in the same Strang splitting: Y = y + (h/2) Y x (I^-1 Y) by Newton's method (the exact 3 x 3
!   Jacobian, solved by Cramer's rule as rotations' solve3), y <- 2 Y - y, q <- q cay(h I^-1 Y).
!   The Newton iterations of the lanes run in lock-step until every lane has stopped; a lane
!   stops updating at the iteration where the one-body iteration stops (converged, a singular
!   Jacobian or a non-finite update), so each lane's iterate is the one-body iterate;
! * DMV2 ... DMV8 with a torque (module approximate_free_flows: the preprocessed discrete
!   Moser-Veselov step of E. Hairer, G. Vilmart, J. Phys. A 39, 2006, as restated in Vilmart 2013,
!   Algorithms 3 and 4) in the same Strang splitting: the modified inverse moments of each body
!   from the momentum entering the free step (moser_veselov's dmv_setup, dmv_modified_inverse,
!   lane by lane), then dmv_step_scalar's operations with its Newton iteration of the quartic
!   (14) in lock-step, each lane stopping where the one-body iteration stops (the lock-step DMV
!   lanes of moser_veselov iterate every lane until all have converged: not the one-body bits).
! For the torques of torque_lanes of the attitude alone (parameters shared or per body),
! quaternion attitudes and no wheels (method_lanes chooses these steps so). Each lane performs the operations of the one-body step
! (lie_stormer_verlet_step, approximate_flow_step: rotations' quat_exp, qrotate_tr, qmul,
! quat_normalize; axis_rotation; torques' torque_batch and torque_flow through torque_lanes) in
! the same order, so that the results are those of the one-body step bit for bit: a change to
! those routines must be made here too. The sines and cosines of TERZE and MIDPOINT are the
! library's scalar sin and cos, called lane by lane in loops of their own (the one-body steps
! call them; no vector version of them is called, so every SIMD target gives the same bits);
! SYMROT's are lane_math's lane_sincos (its body included here, so that it inlines into the
! loops and vectorises), as its one-body step's are; the other loops run on the target's
! vectors.
!
! Compiled once per SIMD target (tools/simd_target_source.py, simd_dispatch.f90).
module lie_group_lanes
   use, intrinsic :: ieee_arithmetic, only: ieee_value, ieee_quiet_nan
   use kinds, only: dp
   use step_interface
   use numbers_table, only: variant_terze, variant_symrot, variant_midpoint, variant_dmv2, &
                            variant_dmv4, variant_dmv6, variant_dmv8
   use torques, only: torque_t, user_torque_cb, torqued
   use wheels, only: wheels_t
   use torque_lanes, only: lane_block, torque_lanes_eval
   use moser_veselov, only: dmv_coef_t, dmv_setup, dmv_modified_inverse, dmv_max_iter, r_asym, r_prec
   implicit none
   private

   public :: lie_group_lanes_step, qmul_lanes, quat_exp_lanes

   !> Below this |psi|^2, quat_exp takes its series (rotations.quat_exp).
   real(dp), parameter :: series_bound = 1.0e-4_dp

   ! the constants of lane_math's functions (whose bodies are included below)
   include 'lane_math_table.inc'

contains

   include 'lane_math_generic.inc'

   !> One step of TERZE, SYMROT or MIDPOINT (step_interface's method_step) of the n bodies of a chunk,
   !> without wheels, torque-free or with a torque of the attitude alone that is
   !> torque_lanes_per_body (method_lanes chooses it so).
   subroutine lie_group_lanes_step(meth, n, k, t, h, m, q, hw, inertia, ws, tq, wh, cb, info)
      type(method_t), intent(in) :: meth; type(torque_t), intent(in) :: tq; procedure(user_torque_cb) :: cb
      integer, intent(in) :: n, k; integer, intent(inout) :: info(n); real(dp), intent(in) :: t, h, inertia(3, n)
      real(dp), intent(inout) :: m(3, n), q(4, n), ws(nws, n)   ! (step_interface's method_step)
      type(wheels_t), intent(in) :: wh; real(dp), intent(inout) :: hw(wh%nw, n)
      integer :: b0, nl, b1
      logical :: kept

      ! TERZE's torque T_n: kept by the previous step for every body of the chunk, or evaluated
      kept = torqued(tq) .and. all(ws(4, :) == 1.0_dp)
      do b0 = 1, n, lane_block
         nl = min(lane_block, n - b0 + 1)
         b1 = b0 + nl - 1
         if (meth%variant == variant_terze) then
            call terze_block(tq, kept, b0, nl, t, h, m(:, b0:b1), q(:, b0:b1), inertia(:, b0:b1), &
                             ws(:, b0:b1))
         else if (any(meth%variant == [variant_symrot, variant_midpoint, variant_dmv2, &
                                       variant_dmv4, variant_dmv6, variant_dmv8])) then
            call strang_block(meth%variant, tq, b0, nl, t, h, m(:, b0:b1), q(:, b0:b1), &
                              inertia(:, b0:b1), info(b0:b1))
         else
            info(b0:b1) = info_not_implemented
         end if
      end do
   end subroutine lie_group_lanes_step

   !> Bodies 1 .. nl of a block in lane layout: ml(j, :) = m(:, j), ql(j, :) = q(:, j),
   !> il(j, :) = inertia(:, j).
   pure subroutine load_block(nl, m, q, inertia, ml, ql, il)
      integer, intent(in) :: nl
      real(dp), intent(in) :: m(3, nl), q(4, nl), inertia(3, nl)
      real(dp), intent(out) :: ml(lane_block, 3), ql(lane_block, 4), il(lane_block, 3)
      integer :: i, j

      do i = 1, 4
         do j = 1, nl
            ql(j, i) = q(i, j)
         end do
      end do
      do i = 1, 3
         do j = 1, nl
            il(j, i) = inertia(i, j)
            ml(j, i) = m(i, j)
         end do
      end do
   end subroutine load_block

   !> v = v + c u on the lanes 1 .. nl (a half kick of a torque).
   pure subroutine add_scaled(nl, c, u, v)
      integer, intent(in) :: nl
      real(dp), intent(in) :: c, u(lane_block, 3)
      real(dp), intent(inout) :: v(lane_block, 3)
      integer :: i, j

      do i = 1, 3
         do j = 1, nl
            v(j, i) = v(j, i) + c * u(j, i)
         end do
      end do
   end subroutine add_scaled

   !> One TERZE step (lie_stormer_verlet_step) of the bodies b0 .. b0+nl-1 of the chunk,
   !> nl <= lane_block, in lock-step: the two quat_exp of the step (quat_exp_lanes' operations)
   !> with their sines and cosines in loops of their own (half_angle_sincos_lanes), every other
   !> operation in the passes between them.
   subroutine terze_block(tq, kept, b0, nl, t, h, m, q, inertia, ws)
      type(torque_t), intent(in) :: tq
      logical, intent(in) :: kept
      integer, intent(in) :: b0, nl
      real(dp), intent(in) :: t, h, inertia(3, nl)
      real(dp), intent(inout) :: m(3, nl), q(4, nl), ws(nws, nl)
      real(dp), dimension(lane_block, 4) :: ql, qn
      real(dp), dimension(lane_block, 3) :: il, ml, a, tb, psi, y
      real(dp), dimension(lane_block) :: a2, s, c
      real(dp) :: hh, e1, e2, e3, e4, t1, t2, t3, y1, y2, y3, p1, p2, p3, p4
      integer :: i, j
      logical :: torque

      torque = torqued(tq)
      hh = 0.5_dp * h
      call load_block(nl, m, q, inertia, ml, ql, il)
      if (torque) then
         if (kept) then
            do i = 1, 3
               do j = 1, nl
                  tb(j, i) = ws(i, j)
               end do
            end do
         else
            call torque_lanes_eval(tq, t, nl, ql, ml, il, tb, b0)
         end if
         do i = 1, 3
            do j = 1, nl
               a(j, i) = ml(j, i) + hh * tb(j, i)
            end do
         end do
      else
         a(1:nl, :) = ml(1:nl, :)
      end if
      ! psi = (h/2) omega_n and quat_exp's series of psi
      do j = 1, nl
         psi(j, 1) = hh * (ml(j, 1) / il(j, 1))
         psi(j, 2) = hh * (ml(j, 2) / il(j, 2))
         psi(j, 3) = hh * (ml(j, 3) / il(j, 3))
         call half_angle_series(psi(j, 1), psi(j, 2), psi(j, 3), a2(j), s(j), c(j))
      end do
      call half_angle_sincos_lanes(nl, a2, s, c)
      ! e = quat_exp(psi), Y = E(e)^T a, psi = h I^-1 Y and quat_exp's series of psi
      do j = 1, nl
         e1 = c(j)
         e2 = s(j) * psi(j, 1)
         e3 = s(j) * psi(j, 2)
         e4 = s(j) * psi(j, 3)
         t1 = e3 * a(j, 3) - e4 * a(j, 2)
         t2 = e4 * a(j, 1) - e2 * a(j, 3)
         t3 = e2 * a(j, 2) - e3 * a(j, 1)
         y1 = a(j, 1) + 2.0_dp * (-e1 * t1 + (e3 * t3 - e4 * t2))
         y2 = a(j, 2) + 2.0_dp * (-e1 * t2 + (e4 * t1 - e2 * t3))
         y3 = a(j, 3) + 2.0_dp * (-e1 * t3 + (e2 * t2 - e3 * t1))
         psi(j, 1) = h * (y1 / il(j, 1))
         psi(j, 2) = h * (y2 / il(j, 2))
         psi(j, 3) = h * (y3 / il(j, 3))
         call half_angle_series(psi(j, 1), psi(j, 2), psi(j, 3), a2(j), s(j), c(j))
      end do
      call half_angle_sincos_lanes(nl, a2, s, c)
      ! p = quat_exp(psi), q <- qmul(q, p), m <- E(p)^T a
      do j = 1, nl
         p1 = c(j)
         p2 = s(j) * psi(j, 1)
         p3 = s(j) * psi(j, 2)
         p4 = s(j) * psi(j, 3)
         qn(j, 1) = ql(j, 1) * p1 - ql(j, 2) * p2 - ql(j, 3) * p3 - ql(j, 4) * p4
         qn(j, 2) = ql(j, 1) * p2 + p1 * ql(j, 2) + ql(j, 3) * p4 - ql(j, 4) * p3
         qn(j, 3) = ql(j, 1) * p3 + p1 * ql(j, 3) + ql(j, 4) * p2 - ql(j, 2) * p4
         qn(j, 4) = ql(j, 1) * p4 + p1 * ql(j, 4) + ql(j, 2) * p3 - ql(j, 3) * p2
         t1 = p3 * a(j, 3) - p4 * a(j, 2)
         t2 = p4 * a(j, 1) - p2 * a(j, 3)
         t3 = p2 * a(j, 2) - p3 * a(j, 1)
         y(j, 1) = a(j, 1) + 2.0_dp * (-p1 * t1 + (p3 * t3 - p4 * t2))
         y(j, 2) = a(j, 2) + 2.0_dp * (-p1 * t2 + (p4 * t1 - p2 * t3))
         y(j, 3) = a(j, 3) + 2.0_dp * (-p1 * t3 + (p2 * t2 - p3 * t1))
      end do
      if (torque) then
         ! T_{n+1} = T_b(t + h, R_{n+1}) (with the momentum entering the step, as torque_batch)
         call torque_lanes_eval(tq, t + h, nl, qn, ml, il, tb, b0)
         do j = 1, nl
            q(:, j) = qn(j, :)
            m(1, j) = y(j, 1) + hh * tb(j, 1)
            m(2, j) = y(j, 2) + hh * tb(j, 2)
            m(3, j) = y(j, 3) + hh * tb(j, 3)
            ws(1:3, j) = tb(j, :)
            ws(4, j) = 1.0_dp
         end do
      else
         do j = 1, nl
            q(:, j) = qn(j, :)
            m(:, j) = y(j, :)
         end do
      end if
   end subroutine terze_block

   !> a2 = |psi|^2 and the series of rotations' quat_exp in it: s ~ sin(|psi|/2) / |psi|,
   !> c ~ cos(|psi|/2) (half_angle_sincos_lanes replaces them where a2 is not small).
   pure elemental subroutine half_angle_series(p1, p2, p3, a2, s, c)
      real(dp), intent(in) :: p1, p2, p3
      real(dp), intent(out) :: a2, s, c

      a2 = p1**2 + p2**2 + p3**2
      s = 0.5_dp - a2 * (1.0_dp / 48 - a2 * (1.0_dp / 3840 - a2 / 645120))
      c = 1.0_dp - a2 * (0.125_dp - a2 * (1.0_dp / 384 - a2 / 46080))
   end subroutine half_angle_series

   !> quat_exp_lanes' sines and cosines of every lane: for a2 = |psi|^2 not below series_bound,
   !> s = sin(|psi|/2) / |psi| and c = cos(|psi|/2) in place of the series in s, c (rotations'
   !> quat_exp).
   subroutine half_angle_sincos_lanes(nl, a2, s, c)
      integer, intent(in) :: nl
      real(dp), intent(in) :: a2(lane_block)
      real(dp), intent(inout) :: s(lane_block), c(lane_block)
      real(dp) :: a
      integer :: j

      do j = 1, nl
         if (.not. a2(j) < series_bound) then
            a = sqrt(a2(j))
            s(j) = sin(0.5_dp * a) / a
            c(j) = cos(0.5_dp * a)
         end if
      end do
   end subroutine half_angle_sincos_lanes

   !> One SYMROT, MIDPOINT or DMVn step (approximate_flow_step: the Strang kicks around the free
   !> step of free_step) of the bodies b0 .. b0+nl-1 of the chunk, nl <= lane_block, in lock-step.
   subroutine strang_block(variant, tq, b0, nl, t, h, m, q, inertia, info)
      integer, intent(in) :: variant
      type(torque_t), intent(in) :: tq
      integer, intent(in) :: b0, nl
      real(dp), intent(in) :: t, h, inertia(3, nl)
      real(dp), intent(inout) :: m(3, nl), q(4, nl)
      integer, intent(inout) :: info(nl)
      real(dp), dimension(lane_block, 4) :: ql
      real(dp), dimension(lane_block, 3) :: il, ml, tb
      real(dp) :: hh
      integer :: j
      logical :: torque

      torque = torqued(tq)
      hh = 0.5_dp * h
      call load_block(nl, m, q, inertia, ml, ql, il)
      if (torque) then
         call torque_lanes_eval(tq, t, nl, ql, ml, il, tb, b0)
         call add_scaled(nl, hh, tb, ml)
      end if
      if (variant == variant_midpoint) then
         call midpoint_lanes(nl, h, ml, ql, il, info)
      else if (variant == variant_symrot) then
         call symrot_lanes(nl, h, ml, ql, il)
      else
         call dmv_strang_lanes(variant, nl, h, ml, ql, inertia, info)
      end if
      if (torque) then
         call torque_lanes_eval(tq, t + h, nl, ql, ml, il, tb, b0)
         call add_scaled(nl, hh, tb, ml)
      end if
      do j = 1, nl
         q(:, j) = ql(j, :)
         m(:, j) = ml(j, :)
      end do
   end subroutine strang_block

   !> symrot_one lane by lane: R(h/2) S(h) R(h/2) of the lanes' momenta ml and attitudes ql.
   subroutine symrot_lanes(nl, h, ml, ql, il)
      integer, intent(in) :: nl
      real(dp), intent(in) :: h, il(lane_block, 3)
      real(dp), intent(inout) :: ml(lane_block, 3), ql(lane_block, 4)
      real(dp), dimension(lane_block, 4) :: qn, e
      real(dp), dimension(lane_block, 3) :: psi
      real(dp), dimension(lane_block) :: cr, cs, i2inv, theta
      real(dp) :: hh, s
      integer :: i, j

      hh = 0.5_dp * h
      do j = 1, nl
         i2inv(j) = 1 / il(j, 2)
         cr(j) = 1 / il(j, 1) - i2inv(j)
         cs(j) = 1 / il(j, 3) - i2inv(j)
      end do
      ! R(h/2)
      do j = 1, nl
         theta(j) = hh * cr(j) * ml(j, 1)
      end do
      call axis_rotation_lanes(1, nl, theta, ml, ql)
      ! S(h): q <- q a(h y / I2), then the rotation about axis 3 by beta h
      do i = 1, 3
         do j = 1, nl
            psi(j, i) = (h * i2inv(j)) * ml(j, i)
         end do
      end do
      call quat_exp_sincos_lanes(nl, psi, e)
      call qmul_lanes(nl, ql, e, qn)
      do j = 1, nl
         theta(j) = h * cs(j) * ml(j, 3)
      end do
      call axis_rotation_lanes(3, nl, theta, ml, qn)
      ! R(h/2)
      do j = 1, nl
         theta(j) = hh * cr(j) * ml(j, 1)
      end do
      call axis_rotation_lanes(1, nl, theta, ml, qn)
      ! quat_normalize
      do j = 1, nl
         s = sqrt(qn(j, 1)**2 + qn(j, 2)**2 + qn(j, 3)**2 + qn(j, 4)**2)
         ql(j, 1) = qn(j, 1) / s
         ql(j, 2) = qn(j, 2) / s
         ql(j, 3) = qn(j, 3) / s
         ql(j, 4) = qn(j, 4) / s
      end do
   end subroutine symrot_lanes

   !> midpoint_one lane by lane: Newton's method on Y = y + (h/2) Y x (w Y), w = 1 / I, from the
   !> predictor y + (h/2) y x (w y), in lock-step until every lane has stopped (the one-body
   !> test: |dY|^2 <= newton_rtol^2 |Y|^2 or Y = 0; a singular Jacobian or a non-finite update
   !> stops a lane unconverged). Converged lanes: y <- 2 Y - y, q <- q quat_cayley(h w Y); the
   !> others keep y, q and get info_no_convergence.
   subroutine midpoint_lanes(nl, h, ml, ql, il, info)
      integer, intent(in) :: nl
      real(dp), intent(in) :: h, il(lane_block, 3)
      real(dp), intent(inout) :: ml(lane_block, 3), ql(lane_block, 4)
      integer, intent(inout) :: info(nl)
      real(dp), dimension(lane_block, 3) :: w, yy
      real(dp), dimension(lane_block, 4) :: r, qn
      logical, dimension(lane_block) :: active, done
      real(dp) :: hh, wy1, wy2, wy3, f1, f2, f3, a11, a12, a13, a21, a22, a23, a31, a32, a33
      real(dp) :: c11, c21, c31, c12, c22, c32, c13, c23, c33, det, d1, d2v, d3, n1, n2, n3
      real(dp) :: y2, d2, s, e1, e2, e3
      logical :: update, converged
      integer :: i, j, it

      hh = 0.5_dp * h
      do i = 1, 3
         do j = 1, nl
            w(j, i) = 1 / il(j, i)
         end do
      end do
      do j = 1, nl
         wy1 = w(j, 1) * ml(j, 1)
         wy2 = w(j, 2) * ml(j, 2)
         wy3 = w(j, 3) * ml(j, 3)
         yy(j, 1) = ml(j, 1) + hh * (ml(j, 2) * wy3 - ml(j, 3) * wy2)
         yy(j, 2) = ml(j, 2) + hh * (ml(j, 3) * wy1 - ml(j, 1) * wy3)
         yy(j, 3) = ml(j, 3) + hh * (ml(j, 1) * wy2 - ml(j, 2) * wy1)
         active(j) = .true.
         done(j) = .false.
      end do
      do it = 1, newton_max_iter
         if (.not. any(active(1:nl))) exit
         do j = 1, nl
            wy1 = w(j, 1) * yy(j, 1)
            wy2 = w(j, 2) * yy(j, 2)
            wy3 = w(j, 3) * yy(j, 3)
            f1 = yy(j, 1) - ml(j, 1) - hh * (yy(j, 2) * wy3 - yy(j, 3) * wy2)
            f2 = yy(j, 2) - ml(j, 2) - hh * (yy(j, 3) * wy1 - yy(j, 1) * wy3)
            f3 = yy(j, 3) - ml(j, 3) - hh * (yy(j, 1) * wy2 - yy(j, 2) * wy1)
            ! the Jacobian 1 + hh hat(w Y) - hh hat(Y) diag(w)
            a11 = 1.0_dp
            a22 = 1.0_dp
            a33 = 1.0_dp
            a12 = -hh * wy3 + hh * yy(j, 3) * w(j, 2)
            a13 = hh * wy2 - hh * yy(j, 2) * w(j, 3)
            a21 = hh * wy3 - hh * yy(j, 3) * w(j, 1)
            a23 = -hh * wy1 + hh * yy(j, 1) * w(j, 3)
            a31 = -hh * wy2 + hh * yy(j, 2) * w(j, 1)
            a32 = hh * wy1 - hh * yy(j, 1) * w(j, 2)
            ! solve3: the columns c(:, k) of the cofactors, det = a(:, 1) . c(:, 1) (dot_product
            ! sums from zero), x_k = c(:, k) . f / det
            c11 = a22 * a33 - a32 * a23
            c21 = a32 * a13 - a12 * a33
            c31 = a12 * a23 - a22 * a13
            c12 = a23 * a31 - a33 * a21
            c22 = a33 * a11 - a13 * a31
            c32 = a13 * a21 - a23 * a11
            c13 = a21 * a32 - a31 * a22
            c23 = a31 * a12 - a11 * a32
            c33 = a11 * a22 - a21 * a12
            det = 0.0_dp + a11 * c11 + a21 * c21 + a31 * c31
            n1 = 0.0_dp + c11 * f1 + c21 * f2 + c31 * f3
            n2 = 0.0_dp + c12 * f1 + c22 * f2 + c32 * f3
            n3 = 0.0_dp + c13 * f1 + c23 * f2 + c33 * f3
            d1 = -(n1 / det)
            d2v = -(n2 / det)
            d3 = -(n3 / det)
            update = active(j) .and. det /= 0.0_dp .and. abs(det) <= huge(1.0_dp) .and. &
                     abs(d1) <= huge(1.0_dp) .and. abs(d2v) <= huge(1.0_dp) .and. &
                     abs(d3) <= huge(1.0_dp)
            e1 = yy(j, 1) + d1
            e2 = yy(j, 2) + d2v
            e3 = yy(j, 3) + d3
            y2 = e1**2 + e2**2 + e3**2
            d2 = d1**2 + d2v**2 + d3**2
            converged = update .and. (d2 <= newton_rtol**2 * y2 .or. y2 == 0.0_dp)
            yy(j, 1) = merge(e1, yy(j, 1), update)
            yy(j, 2) = merge(e2, yy(j, 2), update)
            yy(j, 3) = merge(e3, yy(j, 3), update)
            done(j) = done(j) .or. converged
            active(j) = update .and. .not. converged
         end do
      end do
      ! quat_cayley(a), a = h (w Y): (1, a/2) / sqrt(1 + |a|^2 / 4)
      do j = 1, nl
         e1 = h * (w(j, 1) * yy(j, 1))
         e2 = h * (w(j, 2) * yy(j, 2))
         e3 = h * (w(j, 3) * yy(j, 3))
         s = sqrt(1.0_dp + 0.25_dp * (e1**2 + e2**2 + e3**2))
         r(j, 1) = 1.0_dp / s
         r(j, 2) = (0.5_dp * e1) / s
         r(j, 3) = (0.5_dp * e2) / s
         r(j, 4) = (0.5_dp * e3) / s
      end do
      call qmul_lanes(nl, ql, r, qn)
      do j = 1, nl
         if (done(j)) then
            ql(j, :) = qn(j, :)
            ml(j, :) = 2.0_dp * yy(j, :) - ml(j, :)
         else
            info(j) = info_no_convergence
         end if
      end do
   end subroutine midpoint_lanes

   !> free_step's DMVn lane by lane: w = dmv_modified_inverse(dmv_setup(I, variant), h, y), then
   !> dmv_step_inv(y, q, h, w) (dmv_step_scalar with hd = h / 2). A lane whose result is not
   !> finite ((14) without a solution) keeps y, q and gets info_no_solution.
   subroutine dmv_strang_lanes(variant, nl, h, ml, ql, inertia, info)
      integer, intent(in) :: variant, nl
      real(dp), intent(in) :: h, inertia(3, nl)
      real(dp), intent(inout) :: ml(lane_block, 3), ql(lane_block, 4)
      integer, intent(inout) :: info(nl)
      type(dmv_coef_t) :: c
      real(dp), dimension(lane_block) :: p, a2, c2, l1, n0, pc, a, sig, d1, d2, d3
      real(dp) :: w(3), hd, y1, y2, y3, s1, s2, s3, c2y, p1, p2, p3, r, f, fp, ds, sn
      real(dp) :: m1, m2, m3, rden, e1, e2, e3, alpha, g, c1, cc2, c3, q0, q1, q2, q3
      real(dp) :: yn(3), qn(4)
      logical, dimension(lane_block) :: bad, active
      logical :: b
      integer :: j, it

      hd = h / 2
      do j = 1, nl
         c = dmv_setup(inertia(:, j), variant)
         w = dmv_modified_inverse(c, h, ml(j, :))
         d1(j) = hd * w(1)
         d2(j) = hd * w(2)
         d3(j) = hd * w(3)
      end do
      ! the quartic F(sigma), its starting value and one fixed-point correction (dmv_step_scalar)
      do j = 1, nl
         y1 = ml(j, 1); y2 = ml(j, 2); y3 = ml(j, 3)
         s1 = y1 * y1; s2 = y2 * y2; s3 = y3 * y3
         c2y = s1 + s2 + s3
         p1 = d2(j) * d3(j); p2 = d3(j) * d1(j); p3 = d1(j) * d2(j)
         p(j) = p1 * d1(j)
         a2(j) = p1 + p2 + p3
         pc(j) = p(j) * c2y
         n0(j) = (d1(j) * s1 + d2(j) * s2 + d3(j) * s3) + pc(j) * c2y
         l1(j) = 1 + a2(j) * c2y
         c2(j) = (d1(j) + d2(j) + d3(j)) + 2 * pc(j)
         r = 1 / l1(j)
         sig(j) = n0(j) * r
         a(j) = max(1.0_dp, max(abs(d1(j)), abs(d2(j)), abs(d3(j))) * abs(sig(j)) * (r_asym / r_prec))
         sig(j) = sig(j) + (((p(j) * sig(j) - a2(j)) * sig(j) + c2(j)) * sig(j) * sig(j)) * r
         bad(j) = .false.
         active(j) = .true.
      end do
      ! Newton's method, each lane until its own stopping test holds
      do it = 1, dmv_max_iter
         if (.not. any(active(1:nl))) exit
         do j = 1, nl
            f = (((-p(j) * sig(j) + a2(j)) * sig(j) - c2(j)) * sig(j) + l1(j)) * sig(j) - n0(j)
            fp = ((-4 * p(j) * sig(j) + 3 * a2(j)) * sig(j) - 2 * c2(j)) * sig(j) + l1(j)
            ds = f / fp
            sn = sig(j) - ds
            b = abs(ds) * a(j) > r_asym * abs(sn)
            sig(j) = merge(sn, sig(j), active(j))
            bad(j) = merge(b, bad(j), active(j))
            active(j) = active(j) .and. b
         end do
      end do
      do j = 1, nl
         if (bad(j)) sig(j) = ieee_value(1.0_dp, ieee_quiet_nan)
      end do
      do j = 1, nl
         y1 = ml(j, 1); y2 = ml(j, 2); y3 = ml(j, 3)
         m1 = 1 - sig(j) * d1(j); m2 = 1 - sig(j) * d2(j); m3 = 1 - sig(j) * d3(j)
         rden = 1 / (m1 * m2 * m3 + (m1 * (d2(j) * d3(j)) * (y1 * y1) + m2 * (d3(j) * d1(j)) * (y2 * y2) &
                                     + m3 * (d1(j) * d2(j)) * (y3 * y3)))
         e1 = rden * (d1(j) * (m2 * m3 * y1 + (d3(j) - d2(j)) * y2 * y3) + pc(j) * y1)
         e2 = rden * (d2(j) * (m3 * m1 * y2 + (d1(j) - d3(j)) * y3 * y1) + pc(j) * y2)
         e3 = rden * (d3(j) * (m1 * m2 * y3 + (d2(j) - d1(j)) * y1 * y2) + pc(j) * y3)
         alpha = 1 + (e1 * e1 + e2 * e2 + e3 * e3)
         r = 1 / sqrt(alpha)
         g = 2 * r * r
         c1 = y2 * e3 - y3 * e2
         cc2 = y3 * e1 - y1 * e3
         c3 = y1 * e2 - y2 * e1
         yn(1) = y1 + g * (c1 + (cc2 * e3 - c3 * e2))
         yn(2) = y2 + g * (cc2 + (c3 * e1 - c1 * e3))
         yn(3) = y3 + g * (c3 + (c1 * e2 - cc2 * e1))
         q0 = ql(j, 1); q1 = ql(j, 2); q2 = ql(j, 3); q3 = ql(j, 4)
         qn(1) = r * (q0 - q1 * e1 - q2 * e2 - q3 * e3)
         qn(2) = r * (q1 + q0 * e1 + q2 * e3 - q3 * e2)
         qn(3) = r * (q2 + q0 * e2 + q3 * e1 - q1 * e3)
         qn(4) = r * (q3 + q0 * e3 + q1 * e2 - q2 * e1)
         if (all(abs(yn) <= huge(1.0_dp)) .and. all(abs(qn) <= huge(1.0_dp))) then
            ml(j, :) = yn
            ql(j, :) = qn
         else
            info(j) = info_no_solution
         end if
      end do
   end subroutine dmv_strang_lanes

   !> approximate_free_flows' axis_rotation lane by lane: the rotation about body axis ax
   !> (1 or 3) by the angles theta: y <- exp(-theta hat e_ax) y, q <- q (cos(theta/2),
   !> sin(theta/2) e_ax).
   subroutine axis_rotation_lanes(ax, nl, theta, y, q)
      integer, intent(in) :: ax, nl
      real(dp), intent(in) :: theta(lane_block)
      real(dp), intent(inout) :: y(lane_block, 3), q(lane_block, 4)
      real(dp), dimension(lane_block) :: ch, sh
      real(dp), dimension(lane_block, 4) :: r, qr
      real(dp) :: c, s, yb, yd
      integer :: j, b, d

      call half_angle_sincos(nl, theta, sh, ch)
      b = mod(ax, 3) + 1
      d = mod(b, 3) + 1
      do j = 1, nl
         c = (ch(j) - sh(j)) * (ch(j) + sh(j))
         s = 2.0_dp * sh(j) * ch(j)
         yb = y(j, b)
         yd = y(j, d)
         y(j, b) = c * yb + s * yd
         y(j, d) = c * yd - s * yb
      end do
      r(1:nl, :) = 0.0_dp
      r(1:nl, 1) = ch(1:nl)
      r(1:nl, ax + 1) = sh(1:nl)
      call qmul_lanes(nl, q, r, qr)
      q(1:nl, :) = qr(1:nl, :)
   end subroutine axis_rotation_lanes

   !> sh = sin(theta / 2), ch = cos(theta / 2) on the lanes (lane_math's lane_sincos, the
   !> functions of approximate_free_flows' axis_rotation).
   pure subroutine half_angle_sincos(nl, theta, sh, ch)
      integer, intent(in) :: nl
      real(dp), intent(in) :: theta(lane_block)
      real(dp), intent(out) :: sh(lane_block), ch(lane_block)
      integer :: j

      do j = 1, nl
         call lane_sincos(0.5_dp * theta(j), sh(j), ch(j))
      end do
   end subroutine half_angle_sincos

   !> r = rotations' quat_exp(psi) on the lanes where run is true (the others: unspecified), with
   !> the series of its header for |psi|^2 < series_bound.
   subroutine quat_exp_lanes(nl, run, psi, r)
      integer, intent(in) :: nl
      logical, intent(in) :: run(lane_block)
      real(dp), intent(in) :: psi(lane_block, 3)
      real(dp), intent(out) :: r(lane_block, 4)
      real(dp), dimension(lane_block) :: a2, s
      real(dp) :: a
      integer :: j

      do j = 1, nl
         a2(j) = psi(j, 1)**2 + psi(j, 2)**2 + psi(j, 3)**2
         s(j) = 0.5_dp - a2(j) * (1.0_dp / 48 - a2(j) * (1.0_dp / 3840 - a2(j) / 645120))
         r(j, 1) = 1.0_dp - a2(j) * (0.125_dp - a2(j) * (1.0_dp / 384 - a2(j) / 46080))
      end do
      do j = 1, nl
         if (run(j) .and. .not. a2(j) < series_bound) then
            a = sqrt(a2(j))
            s(j) = sin(0.5_dp * a) / a
            r(j, 1) = cos(0.5_dp * a)
         end if
      end do
      do j = 1, nl
         r(j, 2) = s(j) * psi(j, 1)
         r(j, 3) = s(j) * psi(j, 2)
         r(j, 4) = s(j) * psi(j, 3)
      end do
   end subroutine quat_exp_lanes

   !> r = approximate_free_flows' quat_exp_sincos(psi) on the lanes: rotations' quat_exp with
   !> lane_math's lane_sincos, both branches computed and the one of each lane kept (a merge).
   pure subroutine quat_exp_sincos_lanes(nl, psi, r)
      integer, intent(in) :: nl
      real(dp), intent(in) :: psi(lane_block, 3)
      real(dp), intent(out) :: r(lane_block, 4)
      real(dp) :: a2, a, s, c, sh, ch
      integer :: j

      do j = 1, nl
         a2 = psi(j, 1)**2 + psi(j, 2)**2 + psi(j, 3)**2
         s = 0.5_dp - a2 * (1.0_dp / 48 - a2 * (1.0_dp / 3840 - a2 / 645120))
         c = 1.0_dp - a2 * (0.125_dp - a2 * (1.0_dp / 384 - a2 / 46080))
         a = sqrt(a2)
         call lane_sincos(0.5_dp * a, sh, ch)
         s = merge(s, sh / a, a2 < series_bound)
         r(j, 1) = merge(c, ch, a2 < series_bound)
         r(j, 2) = s * psi(j, 1)
         r(j, 3) = s * psi(j, 2)
         r(j, 4) = s * psi(j, 3)
      end do
   end subroutine quat_exp_sincos_lanes

   !> r = qmul(p, q) lane by lane (quaternion_generic's qmul).
   pure subroutine qmul_lanes(nl, p, q, r)
      integer, intent(in) :: nl
      real(dp), intent(in) :: p(lane_block, 4), q(lane_block, 4)
      real(dp), intent(out) :: r(lane_block, 4)
      integer :: j

      do j = 1, nl
         r(j, 1) = p(j, 1) * q(j, 1) - p(j, 2) * q(j, 2) - p(j, 3) * q(j, 3) - p(j, 4) * q(j, 4)
         r(j, 2) = p(j, 1) * q(j, 2) + q(j, 1) * p(j, 2) + p(j, 3) * q(j, 4) - p(j, 4) * q(j, 3)
         r(j, 3) = p(j, 1) * q(j, 3) + q(j, 1) * p(j, 3) + p(j, 4) * q(j, 2) - p(j, 2) * q(j, 4)
         r(j, 4) = p(j, 1) * q(j, 4) + q(j, 1) * p(j, 4) + p(j, 2) * q(j, 3) - p(j, 3) * q(j, 2)
      end do
   end subroutine qmul_lanes

end module lie_group_lanes
