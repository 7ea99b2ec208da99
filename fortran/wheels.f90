! Reaction wheels of frb.integrate: the wheel momenta as states of the time loop, the motor-torque
! laws, and the flows the methods compose them from.
!
! The model (F. L. Markley and J. L. Crassidis, Fundamentals of Spacecraft Attitude Determination
! and Control, Springer 2014, eqs. (3.147)-(3.152) and section 7.2; P. C. Hughes, Spacecraft
! Attitude Dynamics, Wiley 1986, chapter 6): a body carries nw wheels of unit spin axes a_i (body
! frame) and axial momenta h_i (each wheel's absolute angular momentum about its axis). With
! A = [a_1 .. a_nw] (3 x nw), m = I w the momentum of the body without the wheels' axial inertia
! and M = m + A h the total momentum in the body frame,
!    M' = M x w + T_ext(t, Q, m),   h' = u,   m' = M x w + T_ext - A u,   Q' = Q hat(w),
! u the motor torques (the body receives -A u). Without T_ext the spatial momentum Q M is conserved.
!
! The law wheel_law_feedback (the quaternion feedback of attitude_control realised by the wheels,
! Markley and Crassidis eq. (7.10) with the distribution by the pseudo-inverse of section 7.2.2):
!    q_r(t) = q_ref exp((t - t_ref) rate / 2),  e = conj(q_r) q,  s = sign(e0) (+1 for e0 = 0),
!    w_r = E(e)^T rate (the reference's rate in the body frame; 0 for a fixed reference),
!    L = -Kp s e_v - Kd (w - w_r) [+ w x (m + A h), the gyroscopic compensation],
!    u = -A^+ L,  u_i clipped to [-u_max, u_max],  u_i = 0 where |h_i| >= h_max and u_i would
!    increase |h_i| (a wheel at its momentum limit gives no more torque that way).
! A step that carries a wheel beyond h_max puts it back at the limit and gives the excess to the
! body (M unchanged): a saturated wheel stays at its limit. A Python law (wheel_law_user) is
! called once per stage for the whole batch through the f2py call-back user_law_cb; its torques'
! limits are the user's, and the momentum limit h_max, when it has one (quaternion_feedback with
! q_ref a Python function), is applied after each step as above.
!
! The flows composed by the splittings, which are split in the total momentum M (so that each
! flow keeps Q M: the splittings keep it to rounding): the free flow of M (the exact free flow, or
! the free method of the approximate flows, on M), and the torque part B, whose pieces all keep Q
! fixed or turn Q and M together. Constant rotors of the torque (frb.torques.rotor, h_r) are
! momentum the body carries as the wheels' is: M = m + A h + h_r, and A h + h_r in P2 and P3
! (carried_momentum); P4 is the flow of the other terms.
!  * gyrostat_turn (P2): the flow of -M . I^-1 A h, h fixed: M <- exp(tau hat v) M,
!    Q <- Q exp(-tau hat v), v = I^-1 A h (exact);
!  * wheel_flow (P3): Q, M fixed, h' = u(t, Q, M - A h, h): one classical Runge-Kutta step (order
!    4, the limits applied after it);
!  * the external torque's flow torque_flow (P4), h fixed.
! The kick of order 2 is the symmetric P4(tau/2) P2(tau/2) P3(tau) P2(tau/2) P4(tau/2), that of
! order 4 its triple jump (H. Yoshida, Phys. Lett. A 150, 1990); a splitting whose kicks b satisfy
! sum b^3 = 0 (STRANG, YOSHIDA4) keeps its order with the kick of order 2. Without P4 the turns
! P2 that meet in the triple jump are one turn (P2 is the flow of a fixed v: P2(a) P2(b) = P2(a + b)).
! Rounding: every flow but P4 keeps the spatial total momentum L = Q M in exact arithmetic, and P4
! changes it by Q dM. The splittings carry L between steps (in ws, changed by P4 only) and take
! M = Q^T L at the start and at the end of each step (total_momenta, body_momenta): the same
! method in exact arithmetic, whose rounding does not accumulate in Q M (the free flows'
! rounding, correlated from step to step when the state moves slowly, would otherwise move Q M
! by some 1e-17 a step). q is normalised after each step, so that E(q) stays orthogonal. P2 is
! applied as an increment, M + sin(a) n x M + (1 - cos a) n x (n x M),
! q + q (cos(a/2) - 1, -sin(a/2) n), whose rounding does not accumulate either.
module wheels
   use kinds, only: dp
   use numbers_table, only: max_wheels, wheel_reals, wheel_law_none, wheel_law_feedback, &
                            wheel_law_user, law_q_ref, law_kp, law_kd, law_rate, law_t_ref, &
                            law_u_max, law_h_max, law_gyroscopic, law_reals
   use rotations, only: cross, qmul, qconj, qrotate, qrotate_tr, quat_matrix_tr, reference_turn
   use torques, only: torque_t, user_torque_cb, torqued, torque_flow, gain_times, has_rotor, &
                      rotor_momentum, without_rotors
   implicit none
   private

   public :: wheels_t, user_law_cb, wheel_torques, wheel_law_batch, wheel_limits, wheels_active
   public :: total_momenta, body_momenta, wheel_kick, wheel_body_torque, axes_times
   public :: feedback_body, feedback_torques, feedback_limits, body_axes_times
   public :: feedback_attitude, feedback_rate_torques
   public :: max_wheels, wheel_reals, wheel_law_none, wheel_law_feedback, wheel_law_user, no_user_law

   !> The rows of the workspace ws (step_interface) that carry the spatial total momentum L = Q M
   !> between the steps of a splitting (see the header), and the row that says it is there.
   integer, parameter, public :: ws_spatial = 1, ws_spatial_kept = 4

   abstract interface
      !> User law: u(:, j) = law(t, Q_j, m_j, h_j) for the n bodies (qt(:, :, j) = Q_j^T); step
      !> is the number (1-based) of the step being taken, for error messages.
      subroutine user_law_cb(n, nw, t, step, qt, m, hw, u)
         import :: dp
         integer, intent(in) :: n, nw, step
         real(dp), intent(in) :: t
         real(dp), intent(in) :: qt(3, 3, n), m(3, n), hw(nw, n)
         real(dp), intent(inout) :: u(nw, n)
      end subroutine user_law_cb
   end interface

   type :: wheels_t
      !> wheels a body (0: none) and the law (wheel_law_*); the order (2 or 4) of the kick of the
      !> splittings
      integer :: nw = 0
      integer :: law = wheel_law_none
      integer :: kick_order = 2
      !> the body of the batch before the first of the chunk
      integer :: offset = 0
      !> axes(1:3, i, b) the axis a_i, axes(4:6, i, b) the row i of the pseudo-inverse A^+ of
      !> body b (b = 1 for all bodies when the last extent is 1); par(:, b) the law's
      !> parameters (slots law_* of numbers_table), for all bodies or per body likewise
      real(dp), pointer, contiguous :: axes(:, :, :) => null()
      real(dp), pointer, contiguous :: par(:, :) => null()
      !> the Python law (wheel_law_user)
      procedure(user_law_cb), pointer, nopass :: cb => null()
   end type wheels_t

   !> The law wheel_law_feedback and the wheels of one body (feedback_body): nw wheels, the
   !> law's parameters p (slots law_*), the axes a_i and the rows of A^+ (no default values, so
   !> that a local one costs no initialisation).
   type, public :: feedback_body_t
      integer :: nw
      logical :: rotating, gyroscopic
      real(dp) :: p(law_reals)
      real(dp) :: axes(3, max_wheels), pinv(3, max_wheels)
   end type feedback_body_t

   !> The triple jump of the kick of order 4: g1 = 1 / (2 - 2^(1/3)), g2 = 1 - 2 g1.
   real(dp), parameter :: jump1 = 1.3512071919596576_dp, jump2 = 1.0_dp - 2.0_dp * jump1

contains

   !> The Python law of a run that has none (never called).
   subroutine no_user_law(n, nw, t, step, qt, m, hw, u)
      integer, intent(in) :: n, nw, step
      real(dp), intent(in) :: t, qt(3, 3, n), m(3, n), hw(nw, n)
      real(dp), intent(inout) :: u(nw, n)
   end subroutine no_user_law

   !> True when the run carries wheel momenta (a law drives them).
   pure logical function wheels_active(wh)
      type(wheels_t), intent(in) :: wh

      wheels_active = wh%nw > 0 .and. wh%law /= wheel_law_none
   end function wheels_active

   !> The column of body j of the chunk in an array of nb columns (1: shared by all bodies).
   pure integer function column(wh, nb, j)
      type(wheels_t), intent(in) :: wh
      integer, intent(in) :: nb, j

      column = 1
      if (nb > 1) column = wh%offset + j
   end function column

   !> A h of body j of the chunk.
   pure function axes_times(wh, j, hw) result(ah)
      type(wheels_t), intent(in) :: wh
      integer, intent(in) :: j
      real(dp), intent(in) :: hw(wh%nw)
      real(dp) :: ah(3)
      integer :: i, b

      b = column(wh, size(wh%axes, 3), j)
      ah = wh%axes(1:3, 1, b) * hw(1)
      do i = 2, wh%nw
         ah = ah + wh%axes(1:3, i, b) * hw(i)
      end do
   end function axes_times

   !> The law wheel_law_feedback at body j of the chunk (see the header): u = feedback_torques
   !> of feedback_body(wh, j).
   pure subroutine wheel_torques(wh, j, t, q, m, hw, inertia, u)
      type(wheels_t), intent(in) :: wh
      integer, intent(in) :: j
      real(dp), intent(in) :: t, q(4), m(3), hw(wh%nw), inertia(3)
      real(dp), intent(out) :: u(wh%nw)
      type(feedback_body_t) :: fb

      call feedback_body(wh, j, fb)
      call feedback_torques(fb, t, q, m, hw, body_axes_times(fb, hw), inertia, u)
   end subroutine wheel_torques

   !> The law wheel_law_feedback and the wheels of body j of the chunk, fetched once for the
   !> stages of its steps.
   pure subroutine feedback_body(wh, j, fb)
      type(wheels_t), intent(in) :: wh
      integer, intent(in) :: j
      type(feedback_body_t), intent(out) :: fb
      integer :: b

      fb%nw = wh%nw
      fb%p = wh%par(:, column(wh, size(wh%par, 2), j))
      b = column(wh, size(wh%axes, 3), j)
      fb%axes(:, 1:fb%nw) = wh%axes(1:3, 1:fb%nw, b)
      fb%pinv(:, 1:fb%nw) = wh%axes(4:6, 1:fb%nw, b)
      fb%rotating = any(fb%p(law_rate:law_rate + 2) /= 0.0_dp)
      fb%gyroscopic = fb%p(law_gyroscopic) /= 0.0_dp
   end subroutine feedback_body

   !> A h of the wheels of fb.
   pure function body_axes_times(fb, hw) result(ah)
      type(feedback_body_t), intent(in) :: fb
      real(dp), intent(in) :: hw(:)
      real(dp) :: ah(3)
      integer :: i

      ah = fb%axes(:, 1) * hw(1)
      do i = 2, fb%nw
         ah = ah + fb%axes(:, i) * hw(i)
      end do
   end function body_axes_times

   !> The motor torques u of the law wheel_law_feedback of fb, at the time t, the unit quaternion
   !> q, the momentum m of the body and the wheel momenta hw, ah = A hw (see the header).
   pure subroutine feedback_torques(fb, t, q, m, hw, ah, inertia, u)
      type(feedback_body_t), intent(in) :: fb
      real(dp), intent(in) :: t, q(4), m(3), hw(:), ah(3), inertia(3)
      real(dp), intent(out) :: u(:)
      real(dp) :: attitude(3), w_ref(3)

      call feedback_attitude(fb, t, q, attitude, w_ref)
      call feedback_rate_torques(fb, attitude, w_ref, m / inertia, m, hw, ah, u)
   end subroutine feedback_torques

   !> The part of the law of fb fixed by t and q: attitude = -Kp s e_v, and w_ref = w_r (zero for
   !> a fixed reference).
   pure subroutine feedback_attitude(fb, t, q, attitude, w_ref)
      type(feedback_body_t), intent(in) :: fb
      real(dp), intent(in) :: t, q(4)
      real(dp), intent(out) :: attitude(3), w_ref(3)
      real(dp) :: qr(4), e(4), ev(3), rate(3)

      qr = fb%p(law_q_ref:law_q_ref + 3)
      rate = fb%p(law_rate:law_rate + 2)
      if (fb%rotating) qr = qmul(qr, reference_turn(t - fb%p(law_t_ref), rate))
      e = qmul(qconj(qr), q)
      ev = merge(-1.0_dp, 1.0_dp, e(1) < 0) * e(2:4)
      attitude = -gain_times(fb%p(law_kp:law_kp + 8), ev)
      w_ref = 0.0_dp
      if (fb%rotating) w_ref = qrotate_tr(e, rate)
   end subroutine feedback_attitude

   !> The motor torques u of the law of fb from its part attitude, w_ref of feedback_attitude, at
   !> the angular velocity w and momentum m = I w of the body and the wheel momenta hw, ah = A hw.
   pure subroutine feedback_rate_torques(fb, attitude, w_ref, w, m, hw, ah, u)
      type(feedback_body_t), intent(in) :: fb
      real(dp), intent(in) :: attitude(3), w_ref(3), w(3), m(3), hw(:), ah(3)
      real(dp), intent(out) :: u(:)
      real(dp) :: werr(3), torque(3), u_max, h_max
      integer :: i

      werr = w
      if (fb%rotating) werr = w - w_ref
      torque = attitude - gain_times(fb%p(law_kd:law_kd + 8), werr)
      if (fb%gyroscopic) torque = torque + cross(w, m + ah)
      u_max = fb%p(law_u_max)
      h_max = fb%p(law_h_max)
      do i = 1, fb%nw
         u(i) = -(fb%pinv(1, i) * torque(1) + fb%pinv(2, i) * torque(2) + fb%pinv(3, i) * torque(3))
         u(i) = min(max(u(i), -u_max), u_max)
         if ((hw(i) >= h_max .and. u(i) > 0.0_dp) .or. (hw(i) <= -h_max .and. u(i) < 0.0_dp)) &
            u(i) = 0.0_dp
      end do
   end subroutine feedback_rate_torques

   !> The limits of the law of fb after a step (see wheel_limits): the wheels beyond h_max back
   !> at the limit, and their excess A (h - h_limited) given to the body momentum m.
   pure subroutine feedback_limits(fb, hw, m)
      type(feedback_body_t), intent(in) :: fb
      real(dp), intent(inout) :: hw(:), m(3)
      real(dp) :: excess(max_wheels), h_max
      integer :: nw

      nw = fb%nw
      h_max = fb%p(law_h_max)
      if (all(abs(hw(1:nw)) <= h_max)) return
      excess(1:nw) = hw(1:nw)
      hw(1:nw) = min(max(hw(1:nw), -h_max), h_max)
      excess(1:nw) = excess(1:nw) - hw(1:nw)
      if (any(excess(1:nw) /= 0.0_dp)) m = m + body_axes_times(fb, excess(1:nw))
   end subroutine feedback_limits

   !> The motor torques u(:, j) of the n bodies of a chunk: the law wheel_law_feedback body by
   !> body, a Python law by one call of wh%cb for the chunk. q(:, j) unit quaternions.
   subroutine wheel_law_batch(wh, n, t, step, q, m, hw, inertia, u)
      type(wheels_t), intent(in) :: wh
      integer, intent(in) :: n, step
      real(dp), intent(in) :: t, q(4, n), m(3, n), hw(wh%nw, n), inertia(3, n)
      real(dp), intent(out) :: u(wh%nw, n)
      real(dp), allocatable :: qt(:, :, :)
      integer :: j

      if (wh%law == wheel_law_user) then
         allocate (qt(3, 3, n))
         do j = 1, n
            qt(:, :, j) = quat_matrix_tr(q(:, j))
         end do
         u = 0.0_dp
         call wh%cb(n, wh%nw, t, step, qt, m, hw, u)
         return
      end if
      do j = 1, n
         call wheel_torques(wh, j, t, q(:, j), m(:, j), hw(:, j), inertia(:, j), u(:, j))
      end do
   end subroutine wheel_law_batch

   !> The limits of the law after a step of body j: a wheel beyond h_max is put back at the
   !> limit; excess(i) the momentum taken from wheel i (for the body, so that M = m + A h is
   !> unchanged). A Python law carries h_max too (infinite for a user's law; that of
   !> quaternion_feedback with q_ref a Python function).
   pure subroutine wheel_limits(wh, j, hw, excess)
      type(wheels_t), intent(in) :: wh
      integer, intent(in) :: j
      real(dp), intent(inout) :: hw(wh%nw)
      real(dp), intent(out) :: excess(wh%nw)
      real(dp) :: h_max

      excess = 0.0_dp
      if (wh%law == wheel_law_none) return
      h_max = wh%par(law_h_max, column(wh, size(wh%par, 2), j))
      if (all(abs(hw) <= h_max)) return
      excess = hw
      hw = min(max(hw, -h_max), h_max)
      excess = excess - hw
   end subroutine wheel_limits

   !> The torque of the wheels on the body j of the chunk: (A h) x w - A u.
   pure function wheel_body_torque(wh, j, hw, w, u) result(tb)
      type(wheels_t), intent(in) :: wh
      integer, intent(in) :: j
      real(dp), intent(in) :: hw(wh%nw), w(3), u(wh%nw)
      real(dp) :: tb(3)

      tb = cross(axes_times(wh, j, hw), w) - axes_times(wh, j, u)
   end function wheel_body_torque

   !> The total momenta mt = M of the chunk at the start of a step of a splitting, and their
   !> spatial values el = Q M: the L that the previous step left in ws (ws(ws_spatial_kept, j) =
   !> 1) and M = Q^T L, else M = m + A h and L = Q M.
   pure subroutine total_momenta(wh, tq, n, m, q, hw, ws, mt, el)
      type(wheels_t), intent(in) :: wh
      type(torque_t), intent(in) :: tq
      integer, intent(in) :: n
      real(dp), intent(in) :: m(3, n), q(4, n), hw(wh%nw, n), ws(:, :)
      real(dp), intent(out) :: mt(3, n), el(3, n)
      integer :: j

      do j = 1, n
         if (ws(ws_spatial_kept, j) == 1.0_dp) then
            el(:, j) = ws(ws_spatial:ws_spatial + 2, j)
            mt(:, j) = qrotate_tr(q(:, j), el(:, j))
         else
            mt(:, j) = m(:, j) + carried_momentum(wh, tq, j, hw(:, j))
            el(:, j) = qrotate(q(:, j), mt(:, j))
         end if
      end do
   end subroutine total_momenta

   !> The end of a step of a splitting: q normalised, M = Q^T L, m = M - A h, L kept in ws.
   pure subroutine body_momenta(wh, tq, n, el, q, hw, ws, m)
      type(wheels_t), intent(in) :: wh
      type(torque_t), intent(in) :: tq
      integer, intent(in) :: n
      real(dp), intent(in) :: el(3, n), hw(wh%nw, n)
      real(dp), intent(inout) :: q(4, n), ws(:, :)
      real(dp), intent(out) :: m(3, n)
      integer :: j

      do j = 1, n
         q(:, j) = q(:, j) / sqrt(q(1, j) * q(1, j) + q(2, j) * q(2, j) + q(3, j) * q(3, j) &
                                  + q(4, j) * q(4, j))
         m(:, j) = qrotate_tr(q(:, j), el(:, j)) - carried_momentum(wh, tq, j, hw(:, j))
         ws(ws_spatial:ws_spatial + 2, j) = el(:, j)
         ws(ws_spatial_kept, j) = 1.0_dp
      end do
   end subroutine body_momenta

   !> The momentum the body carries besides m for body j of the chunk: the wheels' A h and the
   !> constant rotors of the torque (frb.torques.rotor: a wheel at constant speed), which the
   !> splittings keep in the total momentum M = m + A h + h_r and in the turn P2.
   pure function carried_momentum(wh, tq, j, hw) result(ah)
      type(wheels_t), intent(in) :: wh
      type(torque_t), intent(in) :: tq
      integer, intent(in) :: j
      real(dp), intent(in) :: hw(:)
      real(dp) :: ah(3)

      ah = axes_times(wh, j, hw)
      if (has_rotor(tq)) ah = ah + rotor_momentum(tq, j)
   end function carried_momentum

   pure real(dp) function norm3(v)
      real(dp), intent(in) :: v(3)

      norm3 = sqrt(v(1) * v(1) + v(2) * v(2) + v(3) * v(3))
   end function norm3

   !> The torque part B over tau of a splitting with wheels, at the time t (the step k): the kick
   !> of order wh%kick_order (see the header) on the total momenta mt (of spatial values el, which
   !> the torque's flow changes), the quaternions q and the wheel momenta hw of the n bodies of a
   !> chunk.
   subroutine wheel_kick(wh, tq, n, k, t, tau, mt, el, q, hw, inertia, cb)
      type(wheels_t), intent(in) :: wh
      type(torque_t), intent(in) :: tq
      integer, intent(in) :: n, k
      real(dp), intent(in) :: t, tau, inertia(3, n)
      real(dp), intent(inout) :: mt(3, n), el(3, n), q(4, n), hw(wh%nw, n)
      procedure(user_torque_cb) :: cb
      type(torque_t) :: tk

      ! (the rotors are in M and in the turns: the external flow P4 is that of the other terms)
      tk = tq
      if (has_rotor(tq)) tk = without_rotors(tq)
      if (wh%kick_order == 4 .and. .not. torqued(tk)) then
         ! the triple jump of kick2 with the adjacent turns P2 (of the same h) joined
         call gyrostat_turn(wh, tq, n, 0.5_dp * (jump1 * tau), mt, q, hw, inertia)
         call wheel_flow(wh, tq, n, k, t, jump1 * tau, mt, q, hw, inertia)
         call gyrostat_turn(wh, tq, n, 0.5_dp * (jump1 * tau + jump2 * tau), mt, q, hw, inertia)
         call wheel_flow(wh, tq, n, k, t, jump2 * tau, mt, q, hw, inertia)
         call gyrostat_turn(wh, tq, n, 0.5_dp * (jump2 * tau + jump1 * tau), mt, q, hw, inertia)
         call wheel_flow(wh, tq, n, k, t, jump1 * tau, mt, q, hw, inertia)
         call gyrostat_turn(wh, tq, n, 0.5_dp * (jump1 * tau), mt, q, hw, inertia)
      else if (wh%kick_order == 4) then
         call kick2(jump1 * tau)
         call kick2(jump2 * tau)
         call kick2(jump1 * tau)
      else
         call kick2(tau)
      end if

   contains

      !> P4(s/2) P2(s/2) P3(s) P2(s/2) P4(s/2).
      subroutine kick2(s)
         real(dp), intent(in) :: s

         if (torqued(tk)) call external_flow(0.5_dp * s)
         call gyrostat_turn(wh, tq, n, 0.5_dp * s, mt, q, hw, inertia)
         call wheel_flow(wh, tq, n, k, t, s, mt, q, hw, inertia)
         call gyrostat_turn(wh, tq, n, 0.5_dp * s, mt, q, hw, inertia)
         if (torqued(tk)) call external_flow(0.5_dp * s)
      end subroutine kick2

      !> P4: the external torque's flow (torque_flow of the terms but the rotors, on
      !> m = M - A h - h_r with h fixed), and its change Q dM of L.
      subroutine external_flow(s)
         real(dp), intent(in) :: s
         real(dp), allocatable :: m(:, :), m1(:, :), tb(:, :)
         integer :: j

         allocate (m(3, n), m1(3, n), tb(3, n))
         do j = 1, n
            m(:, j) = mt(:, j) - carried_momentum(wh, tq, j, hw(:, j))
         end do
         m1 = m
         call torque_flow(tk, n, t, k, 4, q, m1, inertia, s, tb, cb)
         mt = mt + (m1 - m)
         do j = 1, n
            el(:, j) = el(:, j) + qrotate(q(:, j), m1(:, j) - m(:, j))
         end do
      end subroutine external_flow
   end subroutine wheel_kick

   !> P2: M <- exp(tau hat v) M, q <- q conj(exp(tau v)), v = I^-1 (A h + h_r) (h fixed, h_r the
   !> torque's rotors): the flow of -M . v, which keeps Q M; as increments (see the header), with
   !> a = tau v, theta = |a|:
   !> M + (sin theta / theta) a x M + (2 sin^2(theta/2) / theta^2) a x (a x M),
   !> q + q (-2 sin^2(theta/4), -(sin(theta/2) / theta) a).
   pure subroutine gyrostat_turn(wh, tq, n, tau, mt, q, hw, inertia)
      type(wheels_t), intent(in) :: wh
      type(torque_t), intent(in) :: tq
      integer, intent(in) :: n
      real(dp), intent(in) :: tau, hw(wh%nw, n), inertia(3, n)
      real(dp), intent(inout) :: mt(3, n), q(4, n)
      real(dp) :: a(3), theta, s1, c1, s2, s4, c4, d(4), axm(3)
      integer :: j

      do j = 1, n
         a = tau * (carried_momentum(wh, tq, j, hw(:, j)) / inertia(:, j))
         theta = norm3(a)
         if (theta == 0.0_dp) cycle
         ! from sin and cos of theta/4 only: sin(theta/2) = 2 s4 c4, cos(theta/2) = 1 - 2 s4^2,
         ! sin(theta) = 2 sin(theta/2) cos(theta/2)
         s4 = sin(0.25_dp * theta)
         c4 = cos(0.25_dp * theta)
         s2 = (2.0_dp * s4 * c4) / theta
         d(1) = -2.0_dp * s4 * s4
         s1 = 2.0_dp * s2 * (1.0_dp + d(1))
         c1 = 2.0_dp * s2 * s2
         axm = cross(a, mt(:, j))
         mt(:, j) = mt(:, j) + (s1 * axm + c1 * cross(a, axm))
         d(2:4) = -s2 * a
         q(:, j) = q(:, j) + qmul(q(:, j), d)
      end do
   end subroutine gyrostat_turn

   !> P3: Q and M fixed, h' = u(t, Q, M - A h - h_r, h) over tau by one classical Runge-Kutta
   !> step, then the limits (wheel_limits: the excess stays in M, so in m).
   subroutine wheel_flow(wh, tq, n, k, t, tau, mt, q, hw, inertia)
      type(wheels_t), intent(in) :: wh
      type(torque_t), intent(in) :: tq
      integer, intent(in) :: n, k
      real(dp), intent(in) :: t, tau, mt(3, n), q(4, n), inertia(3, n)
      real(dp), intent(inout) :: hw(wh%nw, n)
      real(dp) :: u(max_wheels), acc(max_wheels), hs(max_wheels), excess(max_wheels), m(3), ah(3)
      real(dp) :: attitude(3), w_ref(3), hr(3)
      type(feedback_body_t) :: fb
      real(dp), allocatable :: ub(:, :), hb(:, :), mb(:, :), accb(:, :)
      integer :: j, nw, stage
      real(dp), parameter :: node(3) = [0.5_dp, 0.5_dp, 1.0_dp], weight(4) = [1.0_dp, 2.0_dp, 2.0_dp, 1.0_dp]

      nw = wh%nw
      if (wh%law == wheel_law_user) then
         ! stage by stage for the chunk: one call of the Python law a stage
         allocate (ub(nw, n), hb(nw, n), mb(3, n), accb(nw, n))
         hb = hw
         do stage = 1, 4
            do j = 1, n
               mb(:, j) = mt(:, j) - carried_momentum(wh, tq, j, hb(:, j))
            end do
            call wheel_law_batch(wh, n, t, k, q, mb, hb, inertia, ub)
            if (stage == 1) then
               accb = ub
            else
               accb = accb + weight(stage) * ub
            end if
            if (stage < 4) hb = hw + (node(stage) * tau) * ub
         end do
         hw = hw + (tau / 6.0_dp) * accb
         do j = 1, n
            call wheel_limits(wh, j, hw(:, j), excess(1:nw))
         end do
         return
      end if
      do j = 1, n
         ! t and q are fixed over the flow: the attitude part of the law once
         call feedback_body(wh, j, fb)
         call feedback_attitude(fb, t, q(:, j), attitude, w_ref)
         hs(1:nw) = hw(:, j)
         hr = 0.0_dp
         if (has_rotor(tq)) hr = rotor_momentum(tq, j)
         do stage = 1, 4
            ! (ah: all the momentum the body carries besides m, for the gyroscopic compensation)
            ah = body_axes_times(fb, hs(1:nw)) + hr
            m = mt(:, j) - ah
            call feedback_rate_torques(fb, attitude, w_ref, m / inertia(:, j), m, hs(1:nw), ah, u(1:nw))
            if (stage == 1) then
               acc(1:nw) = u(1:nw)
            else
               acc(1:nw) = acc(1:nw) + weight(stage) * u(1:nw)
            end if
            if (stage < 4) hs(1:nw) = hw(:, j) + (node(stage) * tau) * u(1:nw)
         end do
         hw(:, j) = hw(:, j) + (tau / 6.0_dp) * acc(1:nw)
         call wheel_limits(wh, j, hw(:, j), excess(1:nw))
      end do
   end subroutine wheel_flow

end module wheels
