! The classical fourth-order Runge-Kutta step of module runge_kutta ("RK4": V. Ganapathi,
! "Simulation of rigid body dynamics in Matlab", Stanford University, 2005, sections 3.1-3.4 and 7,
! with the corrections stated in runge_kutta.f90) in lock-step (lane) form: the bodies of a chunk
! held structure-of-arrays in blocks of lane_block, every stage a loop over the bodies, so that the
! compiler vectorises across bodies. For torque-free bodies and the torques of torque_lanes, and
! for torque-free bodies with reaction wheels driven by the compiled law wheel_law_feedback (module
! wheels: the quaternion feedback of F. L. Markley and J. L. Crassidis, Fundamentals of
! Spacecraft Attitude Determination and Control, Springer 2014, eq. (7.10), distributed by the
! pseudo-inverse of section 7.2.2). Each lane performs the SAME floating-point operations, in the
! same order, as runge_kutta_step does for that body (rk4_rates, rotations.quat_normalize,
! torque_batch through torque_lanes, a torque of one field term with torque_lanes_eval's
! operations in the stage's own pass; with wheels rk4_feedback_body and the law's
! feedback_attitude, feedback_rate_torques, body_axes_times and feedback_limits), so that the
! results are those of the one-body step bit for bit: a change to those routines must be made
! here too. (A block with a body whose reference rotates, whose law needs sin and cos, takes
! rk4_feedback_body body by body.)
!
! Compiled once per SIMD target (tools/simd_target_source.py, simd_dispatch.f90).
module runge_kutta_lanes
   use kinds, only: dp
   use step_interface
   use torques, only: torque_t, user_torque_cb, torqued
   use wheels, only: wheels_t, wheels_active, feedback_body_t, feedback_body, max_wheels
   use runge_kutta, only: rk4_feedback_body
   use numbers_table, only: law_q_ref, law_kp, law_kd, law_u_max, law_h_max
   use torque_lanes, only: lane_block, torque_lanes_eval, torque_lanes_one_field
   implicit none
   private

   public :: runge_kutta_lanes_step
   ! (the stages' operations, for the tangent lanes of runge_kutta_tangent_lanes)
   public :: rates, stage_point, normalise, add_twice

   ! the stages of rates_then_point
   integer, parameter :: first_stage = 1, middle_stage_half = 2, middle_stage_full = 3, &
                         last_stage = 4
   ! the torques of rates_then_point: lanes%tb, or one field term with c = e3 or any c
   integer, parameter :: torque_given = 0, field_e3 = 1, field_any = 2

   !> The lanes of a block through an RK4 step: the state q0, w = I^-1 m, the moments il, the
   !> sums aq, aw of the weighted increments, the torque tb of the stage, and the vectors v, c of
   !> a torque of one field term (torque_lanes_one_field).
   type :: rk4_lanes_t
      real(dp), dimension(lane_block, 4) :: q0, aq
      real(dp), dimension(lane_block, 3) :: w, il, aw, tb
      real(dp) :: field_v(3) = 0.0_dp, field_c(3) = 0.0_dp
   end type rk4_lanes_t

   !> A stage point of the lanes: qs = q0 + c k_q, ws = w + c k_w, qn = qs normalised and
   !> ms = I ws (the attitude and momentum where the stage's torque is evaluated).
   type :: rk4_point_t
      real(dp), dimension(lane_block, 4) :: qs, qn
      real(dp), dimension(lane_block, 3) :: ws, ms
   end type rk4_point_t

contains

   !> One RK4 step of the n bodies of a chunk (step_interface's method_step) without wheels, the
   !> torque none or torque_lanes_per_body, or torque-free with wheels and the law
   !> wheel_law_feedback (method_lanes chooses it so).
   subroutine runge_kutta_lanes_step(meth, n, k, t, h, m, q, hw, inertia, ws, tq, wh, cb, info)
      type(method_t), intent(in) :: meth; type(torque_t), intent(in) :: tq; procedure(user_torque_cb) :: cb
      integer, intent(in) :: n, k; integer, intent(inout) :: info(n); real(dp), intent(in) :: t, h, inertia(3, n)
      real(dp), intent(inout) :: m(3, n), q(4, n), ws(nws, n)   ! (step_interface's method_step)
      type(wheels_t), intent(in) :: wh; real(dp), intent(inout) :: hw(wh%nw, n)
      integer :: b0, nl

      do b0 = 1, n, lane_block
         nl = min(lane_block, n - b0 + 1)
         if (wheels_active(wh)) then
            call rk4_feedback_block(wh, b0, nl, t, h, m(:, b0:b0 + nl - 1), q(:, b0:b0 + nl - 1), &
                                    hw(:, b0:b0 + nl - 1), inertia(:, b0:b0 + nl - 1))
            cycle
         end if
         call rk4_block(tq, b0, nl, t, h, m(:, b0:b0 + nl - 1), q(:, b0:b0 + nl - 1), &
                        inertia(:, b0:b0 + nl - 1))
      end do
   end subroutine runge_kutta_lanes_step

   !> One RK4 step of the bodies b0 .. b0+nl-1 of the chunk, nl <= lane_block, in lock-step.
   !> Between two evaluations of the torque one pass over the lanes (rates_then_point) takes the
   !> rates of a stage, adds them to the sums of the increments and forms the next stage point,
   !> so that a lane's divisions and square root overlap with its other operations; a torque of
   !> one field term (torque_lanes_one_field) is evaluated in that pass too.
   pure subroutine rk4_block(tq, b0, nl, t, h, m, q, inertia)
      type(torque_t), intent(in) :: tq
      integer, intent(in) :: b0, nl
      real(dp), intent(in) :: t, h, inertia(3, nl)
      real(dp), intent(inout) :: m(3, nl), q(4, nl)
      type(rk4_lanes_t) :: lanes
      type(rk4_point_t) :: pa, pb
      integer :: i, j, kind_of_torque
      logical :: torque

      torque = torqued(tq)
      kind_of_torque = torque_given
      if (torque_lanes_one_field(tq)) then
         lanes%field_v = tq%par(1:3, 1)
         lanes%field_c = tq%par(4:6, 1)
         kind_of_torque = field_any
         if (lanes%field_c(1) == 0.0_dp .and. lanes%field_c(2) == 0.0_dp .and. &
             lanes%field_c(3) == 1.0_dp) kind_of_torque = field_e3
         torque = .false.
      end if
      do i = 1, 4
         do j = 1, nl
            lanes%q0(j, i) = q(i, j)
         end do
      end do
      do i = 1, 3
         do j = 1, nl
            lanes%il(j, i) = inertia(i, j)
            pb%ms(j, i) = m(i, j)
            lanes%w(j, i) = m(i, j) / inertia(i, j)
         end do
      end do
      lanes%tb = 0.0_dp
      ! stage 1 at (t, q, w): the torque at the state; its rates start the sums aq, aw and give
      ! the stage point q + k_q / 2, w + k_w / 2 (in pa)
      if (torque) call torque_lanes_eval(tq, t, nl, lanes%q0, pb%ms, lanes%il, lanes%tb, b0)
      call stage_pass(nl, h, first_stage, kind_of_torque, lanes, pb, pa)
      ! stages 2 and 3 at t + h/2 (weights 2, the next stage points at c = 1/2 and c = 1)
      if (torque) call torque_lanes_eval(tq, t + 0.5_dp * h, nl, pa%qn, pa%ms, lanes%il, &
                                         lanes%tb, b0)
      call stage_pass(nl, h, middle_stage_half, kind_of_torque, lanes, pa, pb)
      if (torque) call torque_lanes_eval(tq, t + 0.5_dp * h, nl, pb%qn, pb%ms, lanes%il, &
                                         lanes%tb, b0)
      call stage_pass(nl, h, middle_stage_full, kind_of_torque, lanes, pb, pa)
      ! stage 4 at t + h; then q <- (q + (aq + kq4) / 6) normalised, m = I (w + (aw + kw4) / 6)
      ! (in pb%qn, pb%ms)
      if (torque) call torque_lanes_eval(tq, t + h, nl, pa%qn, pa%ms, lanes%il, lanes%tb, b0)
      call stage_pass(nl, h, last_stage, kind_of_torque, lanes, pa, pb)
      do j = 1, nl
         q(:, j) = pb%qn(j, :)
         m(:, j) = pb%ms(j, :)
      end do
   end subroutine rk4_block

   !> rates_then_point of the stage for the kind of torque, one code each (a choice per lane
   !> between the two field torques would keep the compiler from vectorising the pass).
   pure subroutine stage_pass(nl, h, stage, kind_of_torque, lanes, at, next)
      integer, intent(in) :: nl, stage, kind_of_torque
      real(dp), intent(in) :: h
      type(rk4_lanes_t), intent(inout) :: lanes
      type(rk4_point_t), intent(in) :: at
      type(rk4_point_t), intent(inout) :: next

      select case (kind_of_torque)
      case (field_e3)
         call rates_then_point(nl, h, stage, field_e3, lanes, at, next)
      case (field_any)
         call rates_then_point(nl, h, stage, field_any, lanes, at, next)
      case default
         call rates_then_point(nl, h, stage, torque_given, lanes, at, next)
      end select
   end subroutine stage_pass

   !> One pass over the lanes 1 .. nl of an RK4 stage (runge_kutta's rk4_rates and the stage
   !> combination, the same operations in the same order): the rates kq, kw at the stage point
   !> (at) and the torque, then by the stage
   !> * first_stage (the stage point is the state lanes%q0, lanes%w): aq = kq, aw = kw, the next
   !>   stage point at c = 1/2;
   !> * middle_stage_half, middle_stage_full: aq = aq + 2 kq, aw = aw + 2 kw, the next stage point
   !>   at c = 1/2 or c = 1;
   !> * last_stage: the step's end in next%qn = (q0 + (aq + kq) / 6) normalised,
   !>   next%ms = I (w + (aw + kw) / 6).
   !> The next stage point (stage_point): qs = q0 + c kq, ws = w + c kw, qn = qs normalised and
   !> ms = I ws (where the torque of the next stage is evaluated). The torque is lanes%tb
   !> (torque_given), or the field term of lanes%field_v, field_c (field_e3: c = e3, field_any)
   !> at the stage's attitude (at%qn, the state's q0 at the first stage), torque_lanes_eval's
   !> operations.
   pure subroutine rates_then_point(nl, h, stage, kind_of_torque, lanes, at, next)
      integer, intent(in) :: nl, stage, kind_of_torque
      real(dp), intent(in) :: h
      type(rk4_lanes_t), intent(inout) :: lanes
      type(rk4_point_t), intent(in) :: at
      type(rk4_point_t), intent(inout) :: next
      real(dp) :: hh, c, a1, a2, a3, k1, k2, k3, k4, l1, l2, l3, p1, p2, p3, p4, v1, v2, v3, s
      real(dp) :: x1, x2, x3, y1, y2, y3, u1, u2, u3, b1, b2, b3, r1, r2, r3, r4, f1, f2, f3, c1, c2, c3
      integer :: j

      hh = 0.5_dp * h
      c = 0.5_dp
      if (stage == middle_stage_full) c = 1.0_dp
      f1 = lanes%field_v(1)
      f2 = lanes%field_v(2)
      f3 = lanes%field_v(3)
      c1 = lanes%field_c(1)
      c2 = lanes%field_c(2)
      c3 = lanes%field_c(3)
      do j = 1, nl
         if (stage == first_stage) then
            r1 = lanes%q0(j, 1)
            r2 = lanes%q0(j, 2)
            r3 = lanes%q0(j, 3)
            r4 = lanes%q0(j, 4)
            x1 = lanes%w(j, 1)
            x2 = lanes%w(j, 2)
            x3 = lanes%w(j, 3)
         else
            r1 = at%qs(j, 1)
            r2 = at%qs(j, 2)
            r3 = at%qs(j, 3)
            r4 = at%qs(j, 4)
            x1 = at%ws(j, 1)
            x2 = at%ws(j, 2)
            x3 = at%ws(j, 3)
         end if
         if (kind_of_torque /= torque_given) then
            ! torque_lanes_eval's field term: u = qrotate_tr(q, v), then (u2, -u1, 0) for c = e3,
            ! else u x c
            if (stage == first_stage) then
               p1 = r1
               p2 = r2
               p3 = r3
               p4 = r4
            else
               p1 = at%qn(j, 1)
               p2 = at%qn(j, 2)
               p3 = at%qn(j, 3)
               p4 = at%qn(j, 4)
            end if
            y1 = p3 * f3 - p4 * f2
            y2 = p4 * f1 - p2 * f3
            y3 = p2 * f2 - p3 * f1
            u1 = f1 + 2.0_dp * (-p1 * y1 + (p3 * y3 - p4 * y2))
            u2 = f2 + 2.0_dp * (-p1 * y2 + (p4 * y1 - p2 * y3))
            u3 = f3 + 2.0_dp * (-p1 * y3 + (p2 * y2 - p3 * y1))
            if (kind_of_torque == field_e3) then
               b1 = u2
               b2 = -u1
               b3 = 0.0_dp
            else
               b1 = u2 * c3 - u3 * c2
               b2 = u3 * c1 - u1 * c3
               b3 = u1 * c2 - u2 * c1
            end if
         else
            b1 = lanes%tb(j, 1)
            b2 = lanes%tb(j, 2)
            b3 = lanes%tb(j, 3)
         end if
         k1 = -hh * (r2 * x1 + r3 * x2 + r4 * x3)
         k2 = hh * (r1 * x1 + (r3 * x3 - r4 * x2))
         k3 = hh * (r1 * x2 + (r4 * x1 - r2 * x3))
         k4 = hh * (r1 * x3 + (r2 * x2 - r3 * x1))
         a1 = lanes%il(j, 1) * x1
         a2 = lanes%il(j, 2) * x2
         a3 = lanes%il(j, 3) * x3
         l1 = h * ((b1 + (a2 * x3 - a3 * x2)) / lanes%il(j, 1))
         l2 = h * ((b2 + (a3 * x1 - a1 * x3)) / lanes%il(j, 2))
         l3 = h * ((b3 + (a1 * x2 - a2 * x1)) / lanes%il(j, 3))
         if (stage == last_stage) then
            p1 = lanes%q0(j, 1) + (lanes%aq(j, 1) + k1) / 6.0_dp
            p2 = lanes%q0(j, 2) + (lanes%aq(j, 2) + k2) / 6.0_dp
            p3 = lanes%q0(j, 3) + (lanes%aq(j, 3) + k3) / 6.0_dp
            p4 = lanes%q0(j, 4) + (lanes%aq(j, 4) + k4) / 6.0_dp
            s = sqrt(p1 * p1 + p2 * p2 + p3 * p3 + p4 * p4)
            next%qn(j, 1) = p1 / s
            next%qn(j, 2) = p2 / s
            next%qn(j, 3) = p3 / s
            next%qn(j, 4) = p4 / s
            next%ms(j, 1) = lanes%il(j, 1) * (lanes%w(j, 1) + (lanes%aw(j, 1) + l1) / 6.0_dp)
            next%ms(j, 2) = lanes%il(j, 2) * (lanes%w(j, 2) + (lanes%aw(j, 2) + l2) / 6.0_dp)
            next%ms(j, 3) = lanes%il(j, 3) * (lanes%w(j, 3) + (lanes%aw(j, 3) + l3) / 6.0_dp)
            cycle
         end if
         if (stage == first_stage) then
            lanes%aq(j, 1) = k1
            lanes%aq(j, 2) = k2
            lanes%aq(j, 3) = k3
            lanes%aq(j, 4) = k4
            lanes%aw(j, 1) = l1
            lanes%aw(j, 2) = l2
            lanes%aw(j, 3) = l3
         else
            lanes%aq(j, 1) = lanes%aq(j, 1) + 2.0_dp * k1
            lanes%aq(j, 2) = lanes%aq(j, 2) + 2.0_dp * k2
            lanes%aq(j, 3) = lanes%aq(j, 3) + 2.0_dp * k3
            lanes%aq(j, 4) = lanes%aq(j, 4) + 2.0_dp * k4
            lanes%aw(j, 1) = lanes%aw(j, 1) + 2.0_dp * l1
            lanes%aw(j, 2) = lanes%aw(j, 2) + 2.0_dp * l2
            lanes%aw(j, 3) = lanes%aw(j, 3) + 2.0_dp * l3
         end if
         p1 = lanes%q0(j, 1) + c * k1
         p2 = lanes%q0(j, 2) + c * k2
         p3 = lanes%q0(j, 3) + c * k3
         p4 = lanes%q0(j, 4) + c * k4
         v1 = lanes%w(j, 1) + c * l1
         v2 = lanes%w(j, 2) + c * l2
         v3 = lanes%w(j, 3) + c * l3
         next%qs(j, 1) = p1
         next%qs(j, 2) = p2
         next%qs(j, 3) = p3
         next%qs(j, 4) = p4
         next%ws(j, 1) = v1
         next%ws(j, 2) = v2
         next%ws(j, 3) = v3
         s = sqrt(p1 * p1 + p2 * p2 + p3 * p3 + p4 * p4)
         next%qn(j, 1) = p1 / s
         next%qn(j, 2) = p2 / s
         next%qn(j, 3) = p3 / s
         next%qn(j, 4) = p4 / s
         next%ms(j, 1) = lanes%il(j, 1) * v1
         next%ms(j, 2) = lanes%il(j, 2) * v2
         next%ms(j, 3) = lanes%il(j, 3) * v3
      end do
   end subroutine rates_then_point

   !> One RK4 step with wheels and the law wheel_law_feedback (runge_kutta's rk4_feedback_body) of
   !> the bodies b0 .. b0+nl-1 of the chunk, nl <= lane_block, in lock-step.
   subroutine rk4_feedback_block(wh, b0, nl, t, h, m, q, hw, inertia)
      type(wheels_t), intent(in) :: wh
      integer, intent(in) :: b0, nl
      real(dp), intent(in) :: t, h, inertia(3, nl)
      real(dp), intent(inout) :: m(3, nl), q(4, nl), hw(wh%nw, nl)
      type(feedback_body_t) :: fb(lane_block)
      real(dp), dimension(lane_block, 4) :: q0, qs, qn, kq, aq, qr
      real(dp), dimension(lane_block, 3) :: il, w, wst, ms, kw, aw, tb, ah, au, tt
      real(dp), dimension(lane_block, 9) :: kp, kd
      real(dp), dimension(lane_block, 3, max_wheels) :: ax, pinv
      real(dp), dimension(lane_block, max_wheels) :: h0, hs, u, dh
      real(dp), dimension(lane_block) :: u_max, h_max, gyro
      real(dp) :: c, e1, e2, e3, e4, sg, v1, v2, v3, a1, a2, a3, w1, w2, w3, t1, t2, t3
      real(dp) :: x1, x2, x3, excess(max_wheels)
      integer :: i, j, stage, nw

      nw = wh%nw
      do j = 1, nl
         call feedback_body(wh, b0 + j - 1, fb(j))
      end do
      if (any(fb(1:nl)%rotating)) then
         do j = 1, nl
            call rk4_feedback_body(fb(j), t, h, m(:, j), q(:, j), hw(:, j), inertia(:, j))
         end do
         return
      end if
      do j = 1, nl
         ! conj(q_ref): qmul(qconj(qr), q) below
         qr(j, 1) = fb(j)%p(law_q_ref)
         qr(j, 2) = -fb(j)%p(law_q_ref + 1)
         qr(j, 3) = -fb(j)%p(law_q_ref + 2)
         qr(j, 4) = -fb(j)%p(law_q_ref + 3)
         kp(j, :) = fb(j)%p(law_kp:law_kp + 8)
         kd(j, :) = fb(j)%p(law_kd:law_kd + 8)
         u_max(j) = fb(j)%p(law_u_max)
         h_max(j) = fb(j)%p(law_h_max)
         gyro(j) = merge(1.0_dp, 0.0_dp, fb(j)%gyroscopic)
         do i = 1, nw
            ax(j, :, i) = fb(j)%axes(:, i)
            pinv(j, :, i) = fb(j)%pinv(:, i)
         end do
      end do
      do i = 1, 4
         do j = 1, nl
            q0(j, i) = q(i, j)
            qs(j, i) = q(i, j)
            qn(j, i) = q(i, j)
         end do
      end do
      do i = 1, 3
         do j = 1, nl
            il(j, i) = inertia(i, j)
            ms(j, i) = m(i, j)
            w(j, i) = m(i, j) / inertia(i, j)
            wst(j, i) = w(j, i)
         end do
      end do
      do i = 1, nw
         do j = 1, nl
            h0(j, i) = hw(i, j)
            hs(j, i) = hw(i, j)
         end do
      end do
      do stage = 1, 4
         ! ah = A hs (body_axes_times)
         if (stage > 1) then
            do j = 1, nl
               ms(j, 1) = il(j, 1) * wst(j, 1)
               ms(j, 2) = il(j, 2) * wst(j, 2)
               ms(j, 3) = il(j, 3) * wst(j, 3)
            end do
         end if
         call axes_times(nl, nw, ax, hs, ah)
         do j = 1, nl
            ! feedback_attitude: e = conj(q_r) q, -Kp s e_v
            e1 = qr(j, 1) * qn(j, 1) - qr(j, 2) * qn(j, 2) - qr(j, 3) * qn(j, 3) - qr(j, 4) * qn(j, 4)
            e2 = qr(j, 1) * qn(j, 2) + qn(j, 1) * qr(j, 2) + qr(j, 3) * qn(j, 4) - qr(j, 4) * qn(j, 3)
            e3 = qr(j, 1) * qn(j, 3) + qn(j, 1) * qr(j, 3) + qr(j, 4) * qn(j, 2) - qr(j, 2) * qn(j, 4)
            e4 = qr(j, 1) * qn(j, 4) + qn(j, 1) * qr(j, 4) + qr(j, 2) * qn(j, 3) - qr(j, 3) * qn(j, 2)
            sg = merge(-1.0_dp, 1.0_dp, e1 < 0)
            v1 = sg * e2
            v2 = sg * e3
            v3 = sg * e4
            a1 = -(kp(j, 1) * v1 + kp(j, 4) * v2 + kp(j, 7) * v3)
            a2 = -(kp(j, 2) * v1 + kp(j, 5) * v2 + kp(j, 8) * v3)
            a3 = -(kp(j, 3) * v1 + kp(j, 6) * v2 + kp(j, 9) * v3)
            ! feedback_rate_torques at w = m / I of the stage momentum m
            w1 = ms(j, 1) / il(j, 1)
            w2 = ms(j, 2) / il(j, 2)
            w3 = ms(j, 3) / il(j, 3)
            t1 = a1 - (kd(j, 1) * w1 + kd(j, 4) * w2 + kd(j, 7) * w3)
            t2 = a2 - (kd(j, 2) * w1 + kd(j, 5) * w2 + kd(j, 8) * w3)
            t3 = a3 - (kd(j, 3) * w1 + kd(j, 6) * w2 + kd(j, 9) * w3)
            x1 = ms(j, 1) + ah(j, 1)
            x2 = ms(j, 2) + ah(j, 2)
            x3 = ms(j, 3) + ah(j, 3)
            tt(j, 1) = merge(t1 + (w2 * x3 - w3 * x2), t1, gyro(j) > 0)
            tt(j, 2) = merge(t2 + (w3 * x1 - w1 * x3), t2, gyro(j) > 0)
            tt(j, 3) = merge(t3 + (w1 * x2 - w2 * x1), t3, gyro(j) > 0)
         end do
         do i = 1, nw
            do j = 1, nl
               x1 = -(pinv(j, 1, i) * tt(j, 1) + pinv(j, 2, i) * tt(j, 2) + pinv(j, 3, i) * tt(j, 3))
               x1 = min(max(x1, -u_max(j)), u_max(j))
               u(j, i) = merge(0.0_dp, x1, (hs(j, i) >= h_max(j) .and. x1 > 0.0_dp) &
                               .or. (hs(j, i) <= -h_max(j) .and. x1 < 0.0_dp))
            end do
         end do
         ! tb = 0 + ((A h) x w - A u)
         call axes_times(nl, nw, ax, u, au)
         do j = 1, nl
            tb(j, 1) = 0.0_dp + ((ah(j, 2) * wst(j, 3) - ah(j, 3) * wst(j, 2)) - au(j, 1))
            tb(j, 2) = 0.0_dp + ((ah(j, 3) * wst(j, 1) - ah(j, 1) * wst(j, 3)) - au(j, 2))
            tb(j, 3) = 0.0_dp + ((ah(j, 1) * wst(j, 2) - ah(j, 2) * wst(j, 1)) - au(j, 3))
         end do
         call rates(nl, h, qs, wst, il, tb, kq, kw)
         if (stage == 1) then
            aq(1:nl, :) = kq(1:nl, :)
            aw(1:nl, :) = kw(1:nl, :)
            dh(1:nl, 1:nw) = h * u(1:nl, 1:nw)
         else if (stage < 4) then
            aq(1:nl, :) = aq(1:nl, :) + 2.0_dp * kq(1:nl, :)
            aw(1:nl, :) = aw(1:nl, :) + 2.0_dp * kw(1:nl, :)
            dh(1:nl, 1:nw) = dh(1:nl, 1:nw) + 2.0_dp * (h * u(1:nl, 1:nw))
         else
            aq(1:nl, :) = aq(1:nl, :) + kq(1:nl, :)
            aw(1:nl, :) = aw(1:nl, :) + kw(1:nl, :)
            dh(1:nl, 1:nw) = dh(1:nl, 1:nw) + h * u(1:nl, 1:nw)
         end if
         if (stage < 4) then
            c = 0.5_dp
            if (stage == 3) c = 1.0_dp
            call stage_point(nl, c, q0, kq, w, kw, qs, wst, qn)
            do i = 1, nw
               do j = 1, nl
                  hs(j, i) = h0(j, i) + c * (h * u(j, i))
               end do
            end do
         end if
      end do
      ! q <- (q + aq / 6) normalised, m = I (w + aw / 6), h <- h + dh / 6, then the limits
      do j = 1, nl
         qs(j, 1) = q0(j, 1) + aq(j, 1) / 6.0_dp
         qs(j, 2) = q0(j, 2) + aq(j, 2) / 6.0_dp
         qs(j, 3) = q0(j, 3) + aq(j, 3) / 6.0_dp
         qs(j, 4) = q0(j, 4) + aq(j, 4) / 6.0_dp
      end do
      call normalise(nl, qs, qn)
      do j = 1, nl
         wst(j, 1) = il(j, 1) * (w(j, 1) + aw(j, 1) / 6.0_dp)
         wst(j, 2) = il(j, 2) * (w(j, 2) + aw(j, 2) / 6.0_dp)
         wst(j, 3) = il(j, 3) * (w(j, 3) + aw(j, 3) / 6.0_dp)
      end do
      do i = 1, nw
         do j = 1, nl
            hs(j, i) = h0(j, i) + dh(j, i) / 6.0_dp
         end do
      end do
      do j = 1, nl
         q(:, j) = qn(j, :)
         m(:, j) = wst(j, :)
         hw(:, j) = hs(j, 1:nw)
         ! feedback_limits: the wheels beyond h_max back at the limit, the excess to m
         if (all(abs(hw(:, j)) <= h_max(j))) cycle
         excess(1:nw) = hw(:, j)
         hw(:, j) = min(max(hw(:, j), -h_max(j)), h_max(j))
         excess(1:nw) = excess(1:nw) - hw(:, j)
         if (any(excess(1:nw) /= 0.0_dp)) then
            x1 = ax(j, 1, 1) * excess(1)
            x2 = ax(j, 2, 1) * excess(1)
            x3 = ax(j, 3, 1) * excess(1)
            do i = 2, nw
               x1 = x1 + ax(j, 1, i) * excess(i)
               x2 = x2 + ax(j, 2, i) * excess(i)
               x3 = x3 + ax(j, 3, i) * excess(i)
            end do
            m(1, j) = m(1, j) + x1
            m(2, j) = m(2, j) + x2
            m(3, j) = m(3, j) + x3
         end if
      end do
   end subroutine rk4_feedback_block

   !> The stage point qs = q0 + c kq, ws = w + c kw of RK4 and qn, qs normalised.
   pure subroutine stage_point(nl, c, q0, kq, w, kw, qs, ws, qn)
      integer, intent(in) :: nl
      real(dp), intent(in) :: c, q0(lane_block, 4), kq(lane_block, 4), w(lane_block, 3), &
                              kw(lane_block, 3)
      real(dp), intent(inout) :: qs(lane_block, 4), ws(lane_block, 3), qn(lane_block, 4)
      integer :: j

      do j = 1, nl
         qs(j, 1) = q0(j, 1) + c * kq(j, 1)
         qs(j, 2) = q0(j, 2) + c * kq(j, 2)
         qs(j, 3) = q0(j, 3) + c * kq(j, 3)
         qs(j, 4) = q0(j, 4) + c * kq(j, 4)
         ws(j, 1) = w(j, 1) + c * kw(j, 1)
         ws(j, 2) = w(j, 2) + c * kw(j, 2)
         ws(j, 3) = w(j, 3) + c * kw(j, 3)
      end do
      call normalise(nl, qs, qn)
   end subroutine stage_point

   !> aq = aq + 2 kq, aw = aw + 2 kw on the lanes 1 .. nl (the weights 2 of the middle stages).
   pure subroutine add_twice(nl, kq, kw, aq, aw)
      integer, intent(in) :: nl
      real(dp), intent(in) :: kq(lane_block, 4), kw(lane_block, 3)
      real(dp), intent(inout) :: aq(lane_block, 4), aw(lane_block, 3)
      integer :: i, j

      do i = 1, 4
         do j = 1, nl
            aq(j, i) = aq(j, i) + 2.0_dp * kq(j, i)
         end do
      end do
      do i = 1, 3
         do j = 1, nl
            aw(j, i) = aw(j, i) + 2.0_dp * kw(j, i)
         end do
      end do
   end subroutine add_twice

   !> qn = qs / |qs|, lane by lane.
   pure subroutine normalise(nl, qs, qn)
      integer, intent(in) :: nl
      real(dp), intent(in) :: qs(lane_block, 4)
      real(dp), intent(inout) :: qn(lane_block, 4)
      real(dp) :: s
      integer :: j

      do j = 1, nl
         s = sqrt(qs(j, 1) * qs(j, 1) + qs(j, 2) * qs(j, 2) + qs(j, 3) * qs(j, 3) &
                  + qs(j, 4) * qs(j, 4))
         qn(j, 1) = qs(j, 1) / s
         qn(j, 2) = qs(j, 2) / s
         qn(j, 3) = qs(j, 3) / s
         qn(j, 4) = qs(j, 4) / s
      end do
   end subroutine normalise

   !> y = A x of each lane's wheel axes A (3 x nw) and wheel values x (body_axes_times' order).
   pure subroutine axes_times(nl, nw, ax, x, y)
      integer, intent(in) :: nl, nw
      real(dp), intent(in) :: ax(lane_block, 3, max_wheels), x(lane_block, max_wheels)
      real(dp), intent(inout) :: y(lane_block, 3)
      integer :: i, j

      do j = 1, nl
         y(j, 1) = ax(j, 1, 1) * x(j, 1)
         y(j, 2) = ax(j, 2, 1) * x(j, 1)
         y(j, 3) = ax(j, 3, 1) * x(j, 1)
      end do
      do i = 2, nw
         do j = 1, nl
            y(j, 1) = y(j, 1) + ax(j, 1, i) * x(j, i)
            y(j, 2) = y(j, 2) + ax(j, 2, i) * x(j, i)
            y(j, 3) = y(j, 3) + ax(j, 3, i) * x(j, i)
         end do
      end do
   end subroutine axes_times

   !> runge_kutta's rk4_rates for the lanes: kq = (h/2) qs (0, ws), kw = h I^-1 (tb + (I ws) x ws).
   pure subroutine rates(nl, h, qs, ws, il, tb, kq, kw)
      integer, intent(in) :: nl
      real(dp), intent(in) :: h, qs(lane_block, 4), ws(lane_block, 3), il(lane_block, 3), &
                              tb(lane_block, 3)
      real(dp), intent(out) :: kq(lane_block, 4), kw(lane_block, 3)
      real(dp) :: hh, a1, a2, a3
      integer :: j

      hh = 0.5_dp * h
      do j = 1, nl
         kq(j, 1) = -hh * (qs(j, 2) * ws(j, 1) + qs(j, 3) * ws(j, 2) + qs(j, 4) * ws(j, 3))
         kq(j, 2) = hh * (qs(j, 1) * ws(j, 1) + (qs(j, 3) * ws(j, 3) - qs(j, 4) * ws(j, 2)))
         kq(j, 3) = hh * (qs(j, 1) * ws(j, 2) + (qs(j, 4) * ws(j, 1) - qs(j, 2) * ws(j, 3)))
         kq(j, 4) = hh * (qs(j, 1) * ws(j, 3) + (qs(j, 2) * ws(j, 2) - qs(j, 3) * ws(j, 1)))
         a1 = il(j, 1) * ws(j, 1)
         a2 = il(j, 2) * ws(j, 2)
         a3 = il(j, 3) * ws(j, 3)
         kw(j, 1) = h * ((tb(j, 1) + (a2 * ws(j, 3) - a3 * ws(j, 2))) / il(j, 1))
         kw(j, 2) = h * ((tb(j, 2) + (a3 * ws(j, 1) - a1 * ws(j, 3))) / il(j, 2))
         kw(j, 3) = h * ((tb(j, 3) + (a1 * ws(j, 2) - a2 * ws(j, 1))) / il(j, 3))
      end do
   end subroutine rates

end module runge_kutta_lanes
