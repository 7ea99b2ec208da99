! The integrator of V. Ganapathi, "Simulation of rigid body dynamics in Matlab", Stanford
! University, 2005, for frb.integrate: classical fourth-order Runge-Kutta on (unit quaternion q,
! body angular velocity W = I^-1 m) with renormalisation of q after the step (sections 3.1-3.4
! and 7 of the report).
!
! Variant 1 ("RK4"), with two corrections of the report's listing:
! * its quaternion kinematics (eq. (9)), Q' = [0 w] x Q, lacks the factor 1/2; used here is
!   q' = (1/2) q (0, W) (= (1/2) (0, E(q) W) q, the world-frame form with the 1/2).
! * its getWdot is called with the time t instead of the torque; used here is
!   W' = I^-1 (T + (I W) x W) with T = T_b(t_i, E(q_i)) re-evaluated at every stage time
!   t_i (t, t + h/2, t + h/2, t + h) and stage orientation q_i ("recalculate the torque each time
!   we find a new estimate of the orientation", section 7).
! (The report's analytic symmetric-top solution, used by the tests only, has w0 sin(Omega t) as
! its second component, where cos is printed.)
! Stages as in the listing (k_q, k_w are increments dt * rates):
!   k1 = h f(q, W, t), k2 = h f(q + k_q1/2, W + k_w1/2, t + h/2),
!   k3 = h f(q + k_q2/2, W + k_w2/2, t + h/2), k4 = h f(q + k_q3, W + k_w3, t + h),
!   q <- q + (k_q1 + 2 k_q2 + 2 k_q3 + k_q4)/6, W likewise; q <- q / |q|; m = I W.
! Choices (not fixed by the report):
! * The stage quaternions q + k/2 are not unit. The kinematics q' = (1/2) q (0, W) is evaluated at
!   the stage quaternion as it is (as the listing does), but the torque at the NORMALISED stage
!   quaternion (a torque is a function of a rotation; E(q) of a non-unit q is not a rotation).
! * The accumulation order is ((k1 + 2 k2) + 2 k3) + k4, then divided by 6.
! With reaction wheels (module wheels) the state is (q, W, h), h the wheel momenta:
! W' = I^-1 (T + (I W) x W + (A h) x W - A u), h' = u, the torque T and the motor torques u at
! every stage (time, normalised stage quaternion, stage momentum I W and wheel momenta); after
! the step the law's momentum limits (wheels.wheel_limits, the excess to m).
! Properties: explicit, order 4, no invariant exact (|m|, E, Qm drift; |q| = 1 only by the
! projection), not symmetric, not symplectic. Cost: 4 torque evaluations a step (one torque_batch
! per stage); the torque-free path does the whole step body by body.
module runge_kutta
   use kinds, only: dp
   use step_interface
   use wheels, only: wheels_t, wheels_active, wheel_law_batch, wheel_limits, wheel_body_torque, &
                     axes_times, max_wheels, feedback_body_t, feedback_body, feedback_torques, &
                     feedback_limits, body_axes_times
   use numbers_table, only: wheel_law_feedback
   use numbers_table, only: variant_rk4
   use torques, only: torque_t, user_torque_cb, torque_batch, torqued, torque_jacobian_t, torque_jacobian, &
                      torque_term_reals, has_derivatives, torque_field, torque_gravity_gradient, torque_damping, &
                      torque_rotor
   use rotations, only: cross, quat_normalize
   use variational, only: layout_t
   implicit none
   private

   public :: runge_kutta_step, rk4_feedback_body, runge_kutta_variational_step

   !> Bodies of the structure-of-arrays tangent code (rk4_tangent_columns): one.
   integer, parameter :: tangent_width = 1

contains

   include 'rk4_tangent_generic.inc'
   include 'torque_jacobian_lanes_generic.inc'

   !> The increments of one stage: kq = (h/2) qs (0, ws), kw = h I^-1 (tb + (I ws) x ws).
   pure subroutine rk4_rates(h, qs, ws, inertia, tb, kq, kw)
      real(dp), intent(in) :: h, qs(4), ws(3), inertia(3), tb(3)
      real(dp), intent(out) :: kq(4), kw(3)
      real(dp) :: hh
      hh = 0.5_dp * h
      ! qs (0, ws) = (-qv . ws, q0 ws + qv x ws)
      kq(1) = -hh * (qs(2) * ws(1) + qs(3) * ws(2) + qs(4) * ws(3))
      kq(2:4) = hh * (qs(1) * ws + cross(qs(2:4), ws))
      kw = h * ((tb + cross(inertia * ws, ws)) / inertia)
   end subroutine rk4_rates

   !> One torque-free RK4 step of one body.
   pure subroutine rk4_free_body(h, m, q, inertia)
      real(dp), intent(in) :: h, inertia(3)
      real(dp), intent(inout) :: m(3), q(4)
      real(dp), parameter :: zero(3) = 0.0_dp
      real(dp) :: w(3), kq(4), kw(3), aq(4), aw(3)
      w = m / inertia
      call rk4_rates(h, q, w, inertia, zero, kq, kw)
      aq = kq
      aw = kw
      call rk4_rates(h, q + 0.5_dp * kq, w + 0.5_dp * kw, inertia, zero, kq, kw)
      aq = aq + 2.0_dp * kq
      aw = aw + 2.0_dp * kw
      call rk4_rates(h, q + 0.5_dp * kq, w + 0.5_dp * kw, inertia, zero, kq, kw)
      aq = aq + 2.0_dp * kq
      aw = aw + 2.0_dp * kw
      call rk4_rates(h, q + kq, w + kw, inertia, zero, kq, kw)
      aq = aq + kq
      aw = aw + kw
      q = quat_normalize(q + aq / 6.0_dp)
      m = inertia * (w + aw / 6.0_dp)
   end subroutine rk4_free_body

   subroutine runge_kutta_step(meth, n, k, t, h, m, q, hw, inertia, ws, tq, wh, cb, info)
      type(method_t), intent(in) :: meth; type(torque_t), intent(in) :: tq; procedure(user_torque_cb) :: cb
      integer, intent(in) :: n, k; integer, intent(inout) :: info(n); real(dp), intent(in) :: t, h, inertia(3, n)
      real(dp), intent(inout) :: m(3, n), q(4, n), ws(nws, n)   ! (step_interface's method_step)
      type(wheels_t), intent(in) :: wh; real(dp), intent(inout) :: hw(wh%nw, n)
      real(dp), allocatable :: qs(:, :), qn(:, :), wst(:, :), aq(:, :), aw(:, :), tb(:, :), ms(:, :)
      real(dp) :: w(3), kq(4), kw(3), th
      type(feedback_body_t) :: fb
      integer :: j, stage

      if (meth%variant /= variant_rk4) then
         info = info_not_implemented
         return
      end if
      if (wheels_active(wh)) then
         if (wh%law == wheel_law_feedback .and. .not. torqued(tq)) then
            ! the compiled law without torque: body by body, each step in registers
            do j = 1, n
               call feedback_body(wh, j, fb)
               call rk4_feedback_body(fb, t, h, m(:, j), q(:, j), hw(:, j), inertia(:, j))
            end do
         else
            call rk4_wheels_step(n, k, t, h, m, q, hw, inertia, tq, wh, cb)
         end if
         return
      end if
      if (.not. torqued(tq)) then
         do j = 1, n
            call rk4_free_body(h, m(:, j), q(:, j), inertia(:, j))
         end do
         return
      end if

      ! Stage-major with torque: qs, wst the stage point (q + c k_q, W + c k_w), qn its
      ! normalised quaternion (where the torque is evaluated), aq, aw the accumulated increments.
      allocate (qs(4, n), qn(4, n), wst(3, n), aq(4, n), aw(3, n), tb(3, n), ms(3, n))
      th = t + 0.5_dp * h
      call torque_batch(tq, n, t, k, 4, q, m, inertia, tb, cb)
      do j = 1, n
         w = m(:, j) / inertia(:, j)
         call rk4_rates(h, q(:, j), w, inertia(:, j), tb(:, j), kq, kw)
         aq(:, j) = kq
         aw(:, j) = kw
         qs(:, j) = q(:, j) + 0.5_dp * kq
         wst(:, j) = w + 0.5_dp * kw
         qn(:, j) = quat_normalize(qs(:, j))
      end do
      do stage = 2, 3
         if (tq%momentum) ms = inertia * wst   ! the momentum of the stage point
         call torque_batch(tq, n, th, k, 4, qn, ms, inertia, tb, cb)
         do j = 1, n
            call rk4_rates(h, qs(:, j), wst(:, j), inertia(:, j), tb(:, j), kq, kw)
            aq(:, j) = aq(:, j) + 2.0_dp * kq
            aw(:, j) = aw(:, j) + 2.0_dp * kw
            w = m(:, j) / inertia(:, j)
            if (stage == 2) then
               qs(:, j) = q(:, j) + 0.5_dp * kq
               wst(:, j) = w + 0.5_dp * kw
            else
               qs(:, j) = q(:, j) + kq
               wst(:, j) = w + kw
            end if
            qn(:, j) = quat_normalize(qs(:, j))
         end do
      end do
      if (tq%momentum) ms = inertia * wst
      call torque_batch(tq, n, t + h, k, 4, qn, ms, inertia, tb, cb)
      do j = 1, n
         call rk4_rates(h, qs(:, j), wst(:, j), inertia(:, j), tb(:, j), kq, kw)
         w = m(:, j) / inertia(:, j)
         q(:, j) = quat_normalize(q(:, j) + (aq(:, j) + kq) / 6.0_dp)
         m(:, j) = inertia(:, j) * (w + (aw(:, j) + kw) / 6.0_dp)
      end do
   end subroutine runge_kutta_step

   !> One RK4 step (runge_kutta_step's stages and values, bit for bit: with no torque the torque of
   !> torque_batch is 0, and the stages are those of rk4_free_body) with the variational state
   !> (step_interface's method_variational_step): the tangent of every stage (forward mode, in the
   !> state's coordinates (q, W = I^-1 m): rk4_tangent_columns), body by body.
   subroutine runge_kutta_variational_step(meth, n, k, t, nh, h, m, natt, att, inertia, tq, lay, s, info)
      type(method_t), intent(in) :: meth
      integer, intent(in) :: n, k, nh, natt
      real(dp), intent(in) :: t, h(nh), inertia(3, n)
      real(dp), intent(inout) :: m(3, n), att(natt, n)
      type(torque_t), intent(in) :: tq
      type(layout_t), intent(in) :: lay
      real(dp), intent(inout) :: s(6, lay%ncol, n)
      integer, intent(inout) :: info(n)
      real(dp) :: qs(4, n, 4), qn(4, n, 4), wst(3, n, 4), tb(3, n), tbs(3, n, 4), ms(3, n), aq(4, n), aw(3, n)
      real(dp) :: qsum(4, n), wsum(3, n), w(3), kq(4), kw(3), th, hh
      integer :: j, stage

      if (meth%variant /= variant_rk4 .or. natt /= 4 .or. nh /= 1 .or. .not. has_derivatives(tq, n)) then
         info = info_not_implemented
         return
      end if
      hh = h(1)
      ms = m
      ! the values: runge_kutta_step's torqued stages, the stage points recorded (stage 1: q, W)
      th = t + 0.5_dp * hh
      do j = 1, n
         qs(:, j, 1) = att(:, j)
         qn(:, j, 1) = att(:, j)
         wst(:, j, 1) = m(:, j) / inertia(:, j)
      end do
      call torque_batch(tq, n, t, k, 4, att, m, inertia, tb, no_torque)
      tbs(:, :, 1) = tb
      do j = 1, n
         w = m(:, j) / inertia(:, j)
         call rk4_rates(hh, att(:, j), w, inertia(:, j), tb(:, j), kq, kw)
         aq(:, j) = kq
         aw(:, j) = kw
         qs(:, j, 2) = att(:, j) + 0.5_dp * kq
         wst(:, j, 2) = w + 0.5_dp * kw
         qn(:, j, 2) = quat_normalize(qs(:, j, 2))
      end do
      do stage = 2, 3
         if (tq%momentum) ms = inertia * wst(:, :, stage)
         call torque_batch(tq, n, th, k, 4, qn(:, :, stage), ms, inertia, tb, no_torque)
         tbs(:, :, stage) = tb
         do j = 1, n
            call rk4_rates(hh, qs(:, j, stage), wst(:, j, stage), inertia(:, j), tb(:, j), kq, kw)
            aq(:, j) = aq(:, j) + 2.0_dp * kq
            aw(:, j) = aw(:, j) + 2.0_dp * kw
            w = m(:, j) / inertia(:, j)
            if (stage == 2) then
               qs(:, j, 3) = att(:, j) + 0.5_dp * kq
               wst(:, j, 3) = w + 0.5_dp * kw
            else
               qs(:, j, 4) = att(:, j) + kq
               wst(:, j, 4) = w + kw
            end if
            qn(:, j, stage + 1) = quat_normalize(qs(:, j, stage + 1))
         end do
      end do
      if (tq%momentum) ms = inertia * wst(:, :, 4)
      call torque_batch(tq, n, t + hh, k, 4, qn(:, :, 4), ms, inertia, tb, no_torque)
      tbs(:, :, 4) = tb
      do j = 1, n
         call rk4_rates(hh, qs(:, j, 4), wst(:, j, 4), inertia(:, j), tb(:, j), kq, kw)
         w = m(:, j) / inertia(:, j)
         qsum(:, j) = att(:, j) + (aq(:, j) + kq) / 6.0_dp
         wsum(:, j) = w + (aw(:, j) + kw) / 6.0_dp
         att(:, j) = quat_normalize(att(:, j) + (aq(:, j) + kq) / 6.0_dp)
         m(:, j) = inertia(:, j) * (w + (aw(:, j) + kw) / 6.0_dp)
      end do
      ! the tangents, body by body
      do j = 1, n
         call rk4_tangents(tq, k, t, hh, inertia(:, j), qs(:, j, :), qn(:, j, :), wst(:, j, :), tbs(:, j, :), &
                           qsum(:, j), wsum(:, j), att(:, j), j, lay, s(:, :, j))
      end do
   end subroutine runge_kutta_variational_step

   !> The tangents of runge_kutta_variational_step for one body (body j of the chunk): its stage
   !> points qs, qn (normalised), wst and torques tbs (stage 1: q, W), qsum = q + aq / 6 and
   !> wsum = W + aw / 6, q1 the quaternion after the step; s updated in place (rk4_tangent_columns
   !> with one body). The torque's derivatives at each stage point (at the normalised quaternion
   !> qn and the momentum I W): lane_torque_jacobians' for a torque of jacobian_in_lanes (the lanes'
   !> operations), torque_jacobian's for any other and for the parameters' columns.
   subroutine rk4_tangents(tq, k, t, h, inertia, qs, qn, wst, tbs, qsum, wsum, q1, j, lay, s)
      type(torque_t), intent(in) :: tq
      integer, intent(in) :: k, j
      real(dp), intent(in) :: t, h, inertia(3), qs(4, 4), qn(4, 4), wst(3, 4), tbs(3, 4), qsum(4), wsum(3)
      real(dp), intent(in) :: q1(4)
      type(layout_t), intent(in) :: lay
      real(dp), intent(inout) :: s(6, lay%ncol)
      real(dp), parameter :: cs(4) = [0.0_dp, 0.5_dp, 0.5_dp, 1.0_dp]
      type(torque_jacobian_t) :: jac
      real(dp) :: il(1, 3), qs1(1, 4, 4), qn1(1, 4, 4), wst1(1, 3, 4), tbs1(1, 3, 4), qsum1(1, 4), q11(1, 4)
      real(dp) :: wsum1(1, 3), ms1(1, 3), jdth(1, 3, 3, 4), jdm(1, 3, 3, 4), jdt(1, 3, 4), jdi(1, 3, 3, 4)
      real(dp), allocatable :: jdp(:, :, :, :)
      integer :: st, ntc, c, i, l
      logical :: torque

      il(1, :) = inertia
      qs1(1, :, :) = qs
      qn1(1, :, :) = qn
      wst1(1, :, :) = wst
      tbs1(1, :, :) = tbs
      qsum1(1, :) = qsum
      q11(1, :) = q1
      wsum1(1, :) = wsum
      torque = torqued(tq)
      ntc = 1
      if (lay%torque > 0) ntc = lay%ncol - lay%torque + 1
      allocate (jdp(1, 3, ntc, 4))
      if (torque) then
         do st = 1, 4
            if (jacobian_in_lanes(tq)) then
               ms1(1, :) = inertia * wst(:, st)
               call lane_torque_jacobians(1, tq, t + cs(st) * h, qn1(:, :, st), ms1, il, jdth(:, :, :, st), &
                                       jdm(:, :, :, st), jdt(:, :, st), jdi(:, :, :, st))
               if (lay%torque == 0) cycle
            end if
            call torque_jacobian(tq, t + cs(st) * h, j, 4, qn(:, st), inertia * wst(:, st), inertia, jac)
            if (.not. jacobian_in_lanes(tq)) then
               jdth(1, :, :, st) = jac%dth
               jdm(1, :, :, st) = jac%dm
               jdt(1, :, st) = jac%dt
               jdi(1, :, :, st) = jac%di
            end if
            if (lay%torque > 0) then
               do c = 1, ntc
                  i = (c - 1) / torque_term_reals + 1
                  l = mod(c - 1, torque_term_reals) + 1
                  jdp(1, :, c, st) = jac%dp(:, l, i)
               end do
            end if
         end do
      end if
      call rk4_tangent_columns(1, k, h, lay, il, qs1, qn1, wst1, tbs1, qsum1, q11, wsum1, torque, jdth, jdm, &
                               jdt, jdi, ntc, jdp, s)
   end subroutine rk4_tangents

   !> The call-back of a run without a Python torque (never called: torques' user_torque_cb).
   subroutine no_torque(nu, t, step, qt, mu, tb)
      integer, intent(in) :: nu, step
      real(dp), intent(in) :: t, qt(3, 3, nu), mu(3, nu)
      real(dp), intent(inout) :: tb(3, nu)
   end subroutine no_torque

   !> One RK4 step with reaction wheels of one body without torque, its wheels and law
   !> wheel_law_feedback in fb: the operations of rk4_wheels_step for that body.
   pure subroutine rk4_feedback_body(fb, t, h, m, q, hw, inertia)
      type(feedback_body_t), intent(in) :: fb
      real(dp), intent(in) :: t, h, inertia(3)
      real(dp), intent(inout) :: m(3), q(4), hw(:)
      real(dp), parameter :: no_torque(3) = 0.0_dp
      real(dp) :: qs(4), qn(4), wst(3), ms(3), hs(max_wheels), u(max_wheels), ah(3), tb(3)
      real(dp) :: aq(4), aw(3), dh(max_wheels), w(3), kq(4), kw(3), ts, c
      integer :: stage, nw

      nw = fb%nw
      qs = q
      qn = q
      wst = m / inertia
      ms = m
      hs(1:nw) = hw
      w = wst
      do stage = 1, 4
         ts = t
         if (stage == 2 .or. stage == 3) ts = t + 0.5_dp * h
         if (stage == 4) ts = t + h
         if (stage > 1) ms = inertia * wst
         ah = body_axes_times(fb, hs(1:nw))
         call feedback_torques(fb, ts, qn, ms, hs(1:nw), ah, inertia, u(1:nw))
         tb = no_torque + (cross(ah, wst) - body_axes_times(fb, u(1:nw)))
         call rk4_rates(h, qs, wst, inertia, tb, kq, kw)
         if (stage == 1) then
            aq = kq
            aw = kw
            dh(1:nw) = h * u(1:nw)
         else if (stage < 4) then
            aq = aq + 2.0_dp * kq
            aw = aw + 2.0_dp * kw
            dh(1:nw) = dh(1:nw) + 2.0_dp * (h * u(1:nw))
         else
            aq = aq + kq
            aw = aw + kw
            dh(1:nw) = dh(1:nw) + h * u(1:nw)
         end if
         if (stage < 4) then
            c = 0.5_dp
            if (stage == 3) c = 1.0_dp
            qs = q + c * kq
            wst = w + c * kw
            hs(1:nw) = hw + c * (h * u(1:nw))
            qn = quat_normalize(qs)
         end if
      end do
      q = quat_normalize(q + aq / 6.0_dp)
      m = inertia * (w + aw / 6.0_dp)
      hw = hw + dh(1:nw) / 6.0_dp
      call feedback_limits(fb, hw, m)
   end subroutine rk4_feedback_body

   !> One RK4 step with reaction wheels (see the header), stage-major as runge_kutta_step.
   subroutine rk4_wheels_step(n, k, t, h, m, q, hw, inertia, tq, wh, cb)
      integer, intent(in) :: n, k
      real(dp), intent(in) :: t, h, inertia(3, n)
      real(dp), intent(inout) :: m(3, n), q(4, n)
      type(wheels_t), intent(in) :: wh
      real(dp), intent(inout) :: hw(wh%nw, n)
      type(torque_t), intent(in) :: tq
      procedure(user_torque_cb) :: cb
      real(dp), allocatable :: qs(:, :), qn(:, :), wst(:, :), aq(:, :), aw(:, :), tb(:, :), ms(:, :)
      real(dp), allocatable :: hs(:, :), ah(:, :), u(:, :)
      real(dp) :: w(3), kq(4), kw(3), ts, c, excess(max_wheels)
      integer :: j, stage, nw

      nw = wh%nw
      allocate (qs(4, n), qn(4, n), wst(3, n), aq(4, n), aw(3, n), tb(3, n), ms(3, n))
      allocate (hs(nw, n), ah(nw, n), u(nw, n))
      ! the stage point (qs, wst, hs) of stage 1: the state
      do j = 1, n
         qs(:, j) = q(:, j)
         qn(:, j) = q(:, j)
         wst(:, j) = m(:, j) / inertia(:, j)
         ms(:, j) = m(:, j)
      end do
      hs = hw
      do stage = 1, 4
         ts = t
         if (stage == 2 .or. stage == 3) ts = t + 0.5_dp * h
         if (stage == 4) ts = t + h
         if (stage > 1) then
            do j = 1, n
               ms(:, j) = inertia(:, j) * wst(:, j)
            end do
         end if
         if (torqued(tq)) then
            call torque_batch(tq, n, ts, k, 4, qn, ms, inertia, tb, cb)
         else
            tb = 0.0_dp
         end if
         call wheel_law_batch(wh, n, ts, k, qn, ms, hs, inertia, u)
         c = 0.5_dp
         if (stage == 3) c = 1.0_dp
         do j = 1, n
            call rk4_rates(h, qs(:, j), wst(:, j), inertia(:, j), &
                           tb(:, j) + wheel_body_torque(wh, j, hs(:, j), wst(:, j), u(:, j)), kq, kw)
            if (stage == 1) then
               aq(:, j) = kq
               aw(:, j) = kw
               ah(:, j) = h * u(:, j)
            else if (stage < 4) then
               aq(:, j) = aq(:, j) + 2.0_dp * kq
               aw(:, j) = aw(:, j) + 2.0_dp * kw
               ah(:, j) = ah(:, j) + 2.0_dp * (h * u(:, j))
            else
               aq(:, j) = aq(:, j) + kq
               aw(:, j) = aw(:, j) + kw
               ah(:, j) = ah(:, j) + h * u(:, j)
            end if
            if (stage < 4) then
               w = m(:, j) / inertia(:, j)
               qs(:, j) = q(:, j) + c * kq
               wst(:, j) = w + c * kw
               hs(:, j) = hw(:, j) + c * (h * u(:, j))
               qn(:, j) = quat_normalize(qs(:, j))
            end if
         end do
      end do
      do j = 1, n
         w = m(:, j) / inertia(:, j)
         q(:, j) = quat_normalize(q(:, j) + aq(:, j) / 6.0_dp)
         m(:, j) = inertia(:, j) * (w + aw(:, j) / 6.0_dp)
         hw(:, j) = hw(:, j) + ah(:, j) / 6.0_dp
         call wheel_limits(wh, j, hw(:, j), excess(1:nw))
         if (any(excess(1:nw) /= 0.0_dp)) m(:, j) = m(:, j) + axes_times(wh, j, excess(1:nw))
      end do
   end subroutine rk4_wheels_step

end module runge_kutta
