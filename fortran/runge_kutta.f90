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
                      torque_term_reals, has_derivatives
   use rotations, only: cross, hat, quat_normalize
   use variational, only: layout_t
   implicit none
   private

   public :: runge_kutta_step, rk4_feedback_body, runge_kutta_variational_step


contains

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
   !> (step_interface's method_variational_step): the tangent of every stage (forward mode), in the
   !> state's coordinates (q, W = I^-1 m): a column (dm, dtheta) enters as dq = q (0, dtheta/2),
   !> dW = I^-1 (dm - dI W), the torque at a stage by torque_jacobian at its normalised
   !> quaternion qn (dtheta_n = 2 vec(conj(qn) dqn), dqn = (dqs - qn (qn . dqs)) / |qs|) and its
   !> momentum I W, and the step leaves with dtheta1 = 2 vec(conj(q1) dq1) of the normalised q1.
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
   !> wsum = W + aw / 6, q1 the quaternion after the step; s updated in place. Every column at
   !> once: each stage's tangent map is linear in the stage point's tangent (dqs, dws), its
   !> matrices formed once a stage (quaternion products as 4 x 4 and 4 x 3 matrices, the
   !> gyroscopic term's 3 x 3) and applied to the columns; the columns of h and of the moments
   !> add their initial tangents (dhc, di). The columns in blocks of nb.
   subroutine rk4_tangents(tq, k, t, h, inertia, qs, qn, wst, tbs, qsum, wsum, q1, j, lay, s)
      type(torque_t), intent(in) :: tq
      integer, intent(in) :: k, j
      real(dp), intent(in) :: t, h, inertia(3), qs(4, 4), qn(4, 4), wst(3, 4), tbs(3, 4), qsum(4), wsum(3)
      real(dp), intent(in) :: q1(4)
      type(layout_t), intent(in) :: lay
      real(dp), intent(inout) :: s(6, lay%ncol)
      real(dp), parameter :: cs(4) = [0.0_dp, 0.5_dp, 0.5_dp, 1.0_dp]
      real(dp), parameter :: weights(4) = [1.0_dp, 2.0_dp, 2.0_dp, 1.0_dp]
      ! columns a block (fixed shapes: no allocation a call)
      integer, parameter :: nb = 8
      type(torque_jacobian_t) :: jac(4)
      real(dp) :: dq(4, nb), dw(3, nb), dqs(4, nb), dws(3, nb)
      real(dp) :: dkq(4, nb), dkw(3, nb), daq(4, nb), daw(3, nb)
      real(dp) :: dlw(3, nb), di(3, nb), dhc(nb)
      real(dp) :: rw(4, 4, 4), lq(4, 3, 4), cw(3, 3, 4), cdi(3, 3, 4), aq(3, 4, 4), aw(3, 3, 4), ai(3, 3, 4)
      real(dp) :: kq0(4, 4), lw(3, 4), mth(3, 4), lq0(4, 3), ws(3), iw(3), nq, v(3)
      integer :: c, cg, c0, cb, nc, st, i, l
      logical :: torqued_body

      torqued_body = torqued(tq)
      ! the matrices of each stage's tangent map, once for all columns
      lq0 = left_matrix(qs(:, 1))
      do st = 1, 4
         ws = wst(:, st)
         iw = inertia * ws
         lq(:, :, st) = left_matrix(qs(:, st))
         rw(:, :, st) = right_matrix(ws)
         kq0(:, st) = matmul(lq(:, :, st), ws)
         lw(:, st) = tbs(:, st) + cross(iw, ws)
         ! cross(I dws, ws) + cross(I ws, dws) and cross(di ws, ws)
         cw(:, :, st) = hat(iw)
         do i = 1, 3
            cw(:, i, st) = cw(:, i, st) - inertia(i) * cross_unit(ws, i)
            cdi(:, i, st) = -ws(i) * cross_unit(ws, i)
         end do
         if (torqued_body) then
            ! the torque's tangent at the stage: at the normalised quaternion qn (dthn = mth dqs)
            ! and the momentum I W (dms = di W + I dws)
            call torque_jacobian(tq, t + cs(st) * h, j, 4, qn(:, st), iw, inertia, jac(st))
            nq = sqrt(sum(qs(:, st)**2))
            mth = (2 / nq) * conj_vec_matrix(qn(:, st))
            v = matmul(mth, qn(:, st))
            do i = 1, 4
               mth(:, i) = mth(:, i) - v * qn(i, st)
            end do
            aq(:, :, st) = matmul(jac(st)%dth, mth)
            do i = 1, 3
               aw(:, i, st) = jac(st)%dm(:, i) * inertia(i)
               ai(:, i, st) = jac(st)%dm(:, i) * ws(i) + jac(st)%di(:, i)
            end do
         end if
      end do
      nq = sqrt(sum(qsum**2))
      mth = (2 / nq) * conj_vec_matrix(q1)
      v = matmul(mth, q1)
      do i = 1, 4
         mth(:, i) = mth(:, i) - v * q1(i)
      end do
      do cb = 1, lay%ncol, nb
         nc = min(nb, lay%ncol - cb + 1)
         ! the initial tangents: (dm, dtheta) -> (dq, dW); the columns of h and of the moments
         do c = 1, nc
            cg = cb + c - 1
            dhc(c) = merge(1.0_dp, 0.0_dp, cg == lay%h)
            di(:, c) = 0.0_dp
            if (lay%inertia > 0 .and. cg >= lay%inertia .and. cg < lay%inertia + 3) di(cg - lay%inertia + 1, c) = 1.0_dp
            dq(:, c) = matmul(lq0, 0.5_dp * s(4:6, cg))
            dw(:, c) = (s(1:3, cg) - wst(:, 1) * di(:, c)) / inertia
            daq(:, c) = 0.0_dp
            daw(:, c) = 0.0_dp
            dkq(:, c) = 0.0_dp
            dkw(:, c) = 0.0_dp
         end do
         do st = 1, 4
            do c = 1, nc
               ! the stage point's tangent: (q, W) + c_s (kq, kw) of the previous stage
               dqs(:, c) = dq(:, c) + cs(st) * dkq(:, c)
               dws(:, c) = dw(:, c) + cs(st) * dkw(:, c)
               dlw(:, c) = matmul(cw(:, :, st), dws(:, c)) + matmul(cdi(:, :, st), di(:, c))
            end do
            if (torqued_body) then
               do c = 1, nc
                  cg = cb + c - 1
                  dlw(:, c) = dlw(:, c) + matmul(aq(:, :, st), dqs(:, c)) + matmul(aw(:, :, st), dws(:, c)) &
                              + matmul(ai(:, :, st), di(:, c)) + jac(st)%dt * ((k - 1 + cs(st)) * dhc(c))
                  if (lay%torque > 0 .and. cg >= lay%torque) then
                     c0 = cg - lay%torque
                     i = c0 / torque_term_reals + 1
                     l = mod(c0, torque_term_reals) + 1
                     dlw(:, c) = dlw(:, c) + jac(st)%dp(:, l, i)
                  end if
               end do
            end if
            ! kq = (h/2) qs (0, ws), kw = h (tb + (I ws) x ws) / I, and their tangents
            do c = 1, nc
               dkq(:, c) = (0.5_dp * h) * (matmul(rw(:, :, st), dqs(:, c)) + matmul(lq(:, :, st), dws(:, c))) &
                           + (0.5_dp * dhc(c)) * kq0(:, st)
               dkw(:, c) = dhc(c) * lw(:, st) / inertia + h * dlw(:, c) / inertia - h * lw(:, st) * di(:, c) / inertia**2
               daq(:, c) = daq(:, c) + weights(st) * dkq(:, c)
               daw(:, c) = daw(:, c) + weights(st) * dkw(:, c)
            end do
         end do
         ! the step: q1 = qsum / |qsum|, m1 = I wsum
         do c = 1, nc
            cg = cb + c - 1
            s(4:6, cg) = matmul(mth, dq(:, c) + daq(:, c) / 6.0_dp)
            s(1:3, cg) = di(:, c) * wsum + inertia * (dw(:, c) + daw(:, c) / 6.0_dp)
         end do
      end do
   end subroutine rk4_tangents

   !> The matrix of v -> q (0, v) (4 x 3).
   pure function left_matrix(q) result(a)
      real(dp), intent(in) :: q(4)
      real(dp) :: a(4, 3)

      a(1, :) = [-q(2), -q(3), -q(4)]
      a(2, :) = [q(1), -q(4), q(3)]
      a(3, :) = [q(4), q(1), -q(2)]
      a(4, :) = [-q(3), q(2), q(1)]
   end function left_matrix

   !> The matrix of p -> p (0, w) (4 x 4).
   pure function right_matrix(w) result(a)
      real(dp), intent(in) :: w(3)
      real(dp) :: a(4, 4)

      a(1, :) = [0.0_dp, -w(1), -w(2), -w(3)]
      a(2, :) = [w(1), 0.0_dp, w(3), -w(2)]
      a(3, :) = [w(2), -w(3), 0.0_dp, w(1)]
      a(4, :) = [w(3), w(2), -w(1), 0.0_dp]
   end function right_matrix

   !> The matrix of x -> vec(conj(p) x) (3 x 4).
   pure function conj_vec_matrix(p) result(a)
      real(dp), intent(in) :: p(4)
      real(dp) :: a(3, 4)

      a(1, :) = [-p(2), p(1), p(4), -p(3)]
      a(2, :) = [-p(3), -p(4), p(1), p(2)]
      a(3, :) = [-p(4), p(3), -p(2), p(1)]
   end function conj_vec_matrix

   !> v x e_i.
   pure function cross_unit(v, i) result(c)
      real(dp), intent(in) :: v(3)
      integer, intent(in) :: i
      real(dp) :: c(3), e(3)

      e = 0.0_dp
      e(i) = 1.0_dp
      c = cross(v, e)
   end function cross_unit

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
