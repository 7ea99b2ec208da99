! The RK4 step with its tangents (runge_kutta's runge_kutta_variational_step: the state and the
! derivatives S of the numerical solution, forward mode through the step) in lock-step (lane)
! form, for the runs runge_kutta_lanes covers without wheels: torque-free or a torque of
! torque_lanes. The values are runge_kutta_lanes' (rates, stage_point and normalise, the torque
! by torque_lanes_eval: runge_kutta_step's bit for bit); the stage points are kept, the torque's
! derivatives taken at each stage point by lane_torque_jacobians (those of the parameters by
! torques.torque_jacobian, body by body), and the columns of S carried through the stages by
! rk4_tangent_columns: the same source (rk4_tangent_generic.inc) as the one-body code's, with the
! bodies of a block in the lanes. So every body's state and tangents are those of
! runge_kutta_variational_step bit for bit.
!
! Compiled once per SIMD target (tools/simd_target_source.py, simd_dispatch.f90).
module runge_kutta_tangent_lanes
   use kinds, only: dp
   use step_interface
   use numbers_table, only: variant_rk4, torque_term_reals
   use torques, only: torque_t, torqued, torque_jacobian, torque_jacobian_t, torque_field, &
                      torque_gravity_gradient, torque_damping, torque_rotor
   use variational, only: layout_t
   use torque_lanes, only: lane_block, torque_lanes_eval
   use runge_kutta_lanes, only: rk4_lane_rates => rates, rk4_lane_stage_point => stage_point, &
                                rk4_lane_normalise => normalise, rk4_lane_add_twice => add_twice
   implicit none
   private

   public :: runge_kutta_tangent_lanes_step

   !> Bodies of the structure-of-arrays tangent code (rk4_tangent_columns): a block of the lanes.
   integer, parameter :: tangent_width = lane_block

contains

   include 'rk4_tangent_generic.inc'
   include 'torque_jacobian_lanes_generic.inc'

   !> One RK4 step with the variational state of the n bodies of a chunk (step_interface's
   !> method_variational_step), a block of lane_block bodies at a time.
   subroutine runge_kutta_tangent_lanes_step(meth, n, k, t, nh, h, m, natt, att, inertia, tq, lay, s, info)
      type(method_t), intent(in) :: meth
      integer, intent(in) :: n, k, nh, natt
      real(dp), intent(in) :: t, h(nh), inertia(3, n)
      real(dp), intent(inout) :: m(3, n), att(natt, n)
      type(torque_t), intent(in) :: tq
      type(layout_t), intent(in) :: lay
      real(dp), intent(inout) :: s(6, lay%ncol, n)
      integer, intent(inout) :: info(n)
      integer :: b0, nl

      if (meth%variant /= variant_rk4 .or. natt /= 4 .or. nh /= 1 .or. .not. jacobian_in_lanes(tq)) then
         info = info_not_implemented
         return
      end if
      do b0 = 1, n, lane_block
         nl = min(lane_block, n - b0 + 1)
         call tangent_block(tq, b0, nl, k, t, h(1), m(:, b0:b0 + nl - 1), att(:, b0:b0 + nl - 1), &
                            inertia(:, b0:b0 + nl - 1), lay, s(:, :, b0:b0 + nl - 1))
      end do
   end subroutine runge_kutta_tangent_lanes_step

   !> The step and tangents of the bodies b0 .. b0+nl-1 of the chunk, nl <= lane_block.
   subroutine tangent_block(tq, b0, nl, k, t, h, m, q, inertia, lay, s)
      type(torque_t), intent(in) :: tq
      integer, intent(in) :: b0, nl, k
      real(dp), intent(in) :: t, h, inertia(3, nl)
      real(dp), intent(inout) :: m(3, nl), q(4, nl)
      type(layout_t), intent(in) :: lay
      real(dp), intent(inout) :: s(6, lay%ncol, nl)
      real(dp), parameter :: cs(4) = [0.0_dp, 0.5_dp, 0.5_dp, 1.0_dp]
      real(dp), dimension(lane_block, 4, 4) :: qs, qn
      real(dp), dimension(lane_block, 3, 4) :: wst, tbs
      real(dp), dimension(lane_block, 4) :: kq, aq, qsum, q1
      real(dp), dimension(lane_block, 3) :: il, w, ms, kw, aw, wsum
      real(dp) :: jdth(lane_block, 3, 3, 4), jdm(lane_block, 3, 3, 4), jdt(lane_block, 3, 4)
      real(dp) :: jdi(lane_block, 3, 3, 4)
      real(dp), allocatable :: jdp(:, :, :, :)
      type(torque_jacobian_t) :: jac
      real(dp) :: c
      integer :: i, j, st, ntc, cc, l, ti
      logical :: torque

      torque = torqued(tq)
      do i = 1, 4
         do j = 1, nl
            qs(j, i, 1) = q(i, j)
            qn(j, i, 1) = q(i, j)
         end do
      end do
      do i = 1, 3
         do j = 1, nl
            il(j, i) = inertia(i, j)
            ms(j, i) = m(i, j)
            w(j, i) = m(i, j) / inertia(i, j)
            wst(j, i, 1) = w(j, i)
         end do
      end do
      ! the values: runge_kutta_lanes' stages, the stage points kept
      tbs = 0.0_dp
      if (torque) call torque_lanes_eval(tq, t, nl, qs(:, :, 1), ms, il, tbs(:, :, 1))
      call rk4_lane_rates(nl, h, qs(:, :, 1), wst(:, :, 1), il, tbs(:, :, 1), kq, kw)
      do j = 1, nl
         aq(j, :) = kq(j, :)
         aw(j, :) = kw(j, :)
      end do
      do st = 2, 4
         c = 0.5_dp
         if (st == 4) c = 1.0_dp
         call rk4_lane_stage_point(nl, c, qs(:, :, 1), kq, w, kw, qs(:, :, st), wst(:, :, st), qn(:, :, st))
         do j = 1, nl
            ms(j, 1) = il(j, 1) * wst(j, 1, st)
            ms(j, 2) = il(j, 2) * wst(j, 2, st)
            ms(j, 3) = il(j, 3) * wst(j, 3, st)
         end do
         if (torque) then
            if (st < 4) then
               call torque_lanes_eval(tq, t + 0.5_dp * h, nl, qn(:, :, st), ms, il, tbs(:, :, st))
            else
               call torque_lanes_eval(tq, t + h, nl, qn(:, :, st), ms, il, tbs(:, :, st))
            end if
         end if
         call rk4_lane_rates(nl, h, qs(:, :, st), wst(:, :, st), il, tbs(:, :, st), kq, kw)
         if (st < 4) then
            call rk4_lane_add_twice(nl, kq, kw, aq, aw)
         end if
      end do
      do i = 1, 4
         do j = 1, nl
            qsum(j, i) = qs(j, i, 1) + (aq(j, i) + kq(j, i)) / 6.0_dp
         end do
      end do
      call rk4_lane_normalise(nl, qsum, q1)
      do i = 1, 3
         do j = 1, nl
            wsum(j, i) = w(j, i) + (aw(j, i) + kw(j, i)) / 6.0_dp
         end do
      end do
      do j = 1, nl
         q(:, j) = q1(j, :)
         m(1, j) = il(j, 1) * wsum(j, 1)
         m(2, j) = il(j, 2) * wsum(j, 2)
         m(3, j) = il(j, 3) * wsum(j, 3)
      end do
      ! the torque's derivatives at the stage points, body by body (runge_kutta's rk4_tangents)
      ntc = 1
      if (lay%torque > 0) ntc = lay%ncol - lay%torque + 1
      allocate (jdp(lane_block, 3, ntc, 4))
      if (torque) then
         do st = 1, 4
            do i = 1, 3
               do j = 1, nl
                  ms(j, i) = il(j, i) * wst(j, i, st)
               end do
            end do
            call lane_torque_jacobians(nl, tq, t + cs(st) * h, qn(:, :, st), ms, il, jdth(:, :, :, st), &
                                    jdm(:, :, :, st), jdt(:, :, st), jdi(:, :, :, st))
            if (lay%torque == 0) cycle
            ! the parameters' columns: torque_jacobian's, body by body
            do j = 1, nl
               call torque_jacobian(tq, t + cs(st) * h, b0 + j - 1, 4, qn(j, :, st), il(j, :) * wst(j, :, st), &
                                    il(j, :), jac)
               do cc = 1, ntc
                  ti = (cc - 1) / torque_term_reals + 1
                  l = mod(cc - 1, torque_term_reals) + 1
                  jdp(j, :, cc, st) = jac%dp(:, l, ti)
               end do
            end do
         end do
      end if
      call rk4_tangent_columns(nl, k, h, lay, il, qs, qn, wst, tbs, qsum, q1, wsum, torque, jdth, jdm, jdt, &
                               jdi, ntc, jdp, s)
   end subroutine tangent_block

end module runge_kutta_tangent_lanes
