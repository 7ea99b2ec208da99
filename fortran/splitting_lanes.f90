! The splittings of module exact_splittings (E. Celledoni, A. Zanna, ACM TOMS 37(2), 2010,
! section 4.3: A = the exact free flow, B = the torque kick m <- m + tau T_b(t, Q), composed as the
! schedule meth%kinds, meth%frac: STRANG, YOSHIDA4, RKN6_14, ...) with every flow of a chunk in
! lock-step: the free flows in the lanes of exact_flow_lanes (free_flow_chunk, q <- q w), the
! kicks in those of torque_lanes. For a torque of the attitude alone that torque_lanes takes, and
! quaternion attitudes. Each body gets the operations of exact_splitting_flows (exact_free_flows,
! flow_batches.turn_attitudes, torque_flow's kick) in the same order, so the results are those of the
! one-body step bit for bit.
!
! The attitudes of the chunk stay in the lanes' layout (ql(j, :) = q(:, j)) through all the flows
! and kicks of a step; the momenta stay in the flows' layout m(:, j). The torque is a function of
! (t, Q) alone: a schedule that ends and begins with a kick evaluates T_b(t + h, Q) at the end of a
! step and again at the start of the next, from the same attitude. The first is kept in the
! workspace (ws(1:3, j), ws(kept_flag, j) = 1, ws(kept_time, j) its time) and taken as the second
! when the torque does not depend on the time (torque_lanes_steady) or the times are equal: the
! same value, so the same bits.
!
! Compiled once per SIMD target (tools/simd_target_source.py, simd_dispatch.f90): the free flows
! and the kicks run on the target's vectors.
module splitting_lanes
   use kinds, only: dp
   use step_interface
   use torques, only: torque_t, user_torque_cb, torqued
   use wheels, only: wheels_t
   use exact_flow_lanes, only: free_flow_chunk, flow_lanes_width
   use torque_lanes, only: lane_block, torque_lanes_eval, torque_lanes_steady
   implicit none
   private

   public :: splitting_lanes_step

   !> The workspace's slots of the torque kept for the next step: ws(1:3) the torque, ws(kept_flag)
   !> = 1 when it is kept, ws(kept_time) the time at which it was evaluated.
   integer, parameter :: kept_flag = 4, kept_time = 5

contains

   !> One step of a splitting (variant_splitting) of the n bodies of a chunk (step_interface's
   !> method_step) without wheels, its torque of the attitude alone and torque_lanes_per_body
   !> (method_lanes chooses it so).
   subroutine splitting_lanes_step(meth, n, k, t, h, m, q, hw, inertia, ws, tq, wh, cb, info)
      type(method_t), intent(in) :: meth; type(torque_t), intent(in) :: tq; procedure(user_torque_cb) :: cb
      integer, intent(in) :: n, k; integer, intent(inout) :: info(n); real(dp), intent(in) :: t, h, inertia(3, n)
      real(dp), intent(inout) :: m(3, n), q(4, n), ws(nws, n)   ! (step_interface's method_step)
      type(wheels_t), intent(in) :: wh; real(dp), intent(inout) :: hw(wh%nw, n)
      integer :: b0, nl

      do b0 = 1, n, lane_block
         nl = min(lane_block, n - b0 + 1)
         call splitting_block(meth, tq, b0, nl, t, h, m(:, b0:b0 + nl - 1), q(:, b0:b0 + nl - 1), &
                              inertia(:, b0:b0 + nl - 1), ws(:, b0:b0 + nl - 1))
      end do
   end subroutine splitting_lanes_step

   !> One step of the splitting of the bodies b0 .. b0+nl-1 of the chunk, nl <= lane_block.
   subroutine splitting_block(meth, tq, b0, nl, t, h, m, q, inertia, ws)
      type(method_t), intent(in) :: meth
      type(torque_t), intent(in) :: tq
      integer, intent(in) :: b0, nl
      real(dp), intent(in) :: t, h, inertia(3, nl)
      real(dp), intent(inout) :: m(3, nl), q(4, nl), ws(nws, nl)
      real(dp), dimension(lane_block, 4) :: ql
      real(dp), dimension(lane_block, 3) :: il, ml, tb
      real(dp) :: m1(3, flow_lanes_width), w(4, flow_lanes_width), ta, tau
      integer :: i, j, c0, nc, first_kick, last_kick
      logical :: kicks, kept

      kicks = torqued(tq)
      first_kick = 0
      last_kick = 0
      if (kicks) then
         do i = 1, meth%nf
            if (meth%kinds(i) /= 0) then
               if (first_kick == 0) first_kick = i
               last_kick = i
            end if
         end do
      end if
      do i = 1, 4
         do j = 1, nl
            ql(j, i) = q(i, j)
         end do
      end do
      if (kicks) then
         do i = 1, 3
            do j = 1, nl
               il(j, i) = inertia(i, j)
            end do
         end do
         ! (the torque of the attitude alone does not read the momenta)
         ml(1:nl, :) = 0.0_dp
      end if
      ! the torque kept by the previous step, when this step begins with a kick at its time
      kept = first_kick == 1
      if (kept) kept = all(ws(kept_flag, :) == 1.0_dp)
      if (kept .and. .not. torque_lanes_steady(tq)) kept = all(ws(kept_time, :) == t)
      if (kept) then
         do i = 1, 3
            do j = 1, nl
               tb(j, i) = ws(i, j)
            end do
         end do
      end if
      ta = t
      do i = 1, meth%nf
         tau = meth%frac(i) * h
         if (meth%kinds(i) == 0) then
            ! exact_free_flows with one time for all and a moment a body (free_flow_chunk runs a
            ! lone body through free_flow, as free_flow_one does), then q <- q w (qmul)
            do c0 = 1, nl, flow_lanes_width
               nc = min(flow_lanes_width, nl - c0 + 1)
               call free_flow_chunk(nc, 1, 1, nc, m(:, c0:c0 + nc - 1), [tau], &
                                    inertia(:, c0:c0 + nc - 1), meth%quadrature, m1, w)
               m(:, c0:c0 + nc - 1) = m1(:, 1:nc)
               call turn(c0, nc, ql, w)
            end do
            ta = ta + tau
         else if (kicks) then
            if (.not. (i == 1 .and. kept)) call torque_lanes_eval(tq, ta, nl, ql, ml, il, tb, b0)
            do j = 1, nl
               m(1, j) = m(1, j) + tau * tb(j, 1)
               m(2, j) = m(2, j) + tau * tb(j, 2)
               m(3, j) = m(3, j) + tau * tb(j, 3)
            end do
         end if
      end do
      if (last_kick == meth%nf .and. first_kick == 1) then
         do j = 1, nl
            ws(1:3, j) = tb(j, :)
            ws(kept_flag, j) = 1.0_dp
            ws(kept_time, j) = ta
         end do
      end if
      do i = 1, 4
         do j = 1, nl
            q(i, j) = ql(j, i)
         end do
      end do
   end subroutine splitting_block

   !> q <- qmul(q, w) on the lanes c0 .. c0+nc-1, w(:, l) the turn of lane c0 + l - 1
   !> (turn_attitudes' update q <- q w of flow_batches: quaternion_generic's qmul, the same
   !> operations).
   pure subroutine turn(c0, nc, ql, w)
      integer, intent(in) :: c0, nc
      real(dp), intent(inout) :: ql(lane_block, 4)
      real(dp), intent(in) :: w(4, flow_lanes_width)
      real(dp) :: p1, p2, p3, p4
      integer :: j, l

      do l = 1, nc
         j = c0 + l - 1
         p1 = ql(j, 1); p2 = ql(j, 2); p3 = ql(j, 3); p4 = ql(j, 4)
         ql(j, 1) = p1 * w(1, l) - p2 * w(2, l) - p3 * w(3, l) - p4 * w(4, l)
         ql(j, 2) = p1 * w(2, l) + w(1, l) * p2 + p3 * w(4, l) - p4 * w(3, l)
         ql(j, 3) = p1 * w(3, l) + w(1, l) * p3 + p4 * w(2, l) - p2 * w(4, l)
         ql(j, 4) = p1 * w(4, l) + w(1, l) * p4 + p2 * w(3, l) - p3 * w(2, l)
      end do
   end subroutine turn

end module splitting_lanes
