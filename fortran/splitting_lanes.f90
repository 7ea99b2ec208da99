! The splittings of module exact_splittings (E. Celledoni, A. Zanna, ACM TOMS 37(2), 2010,
! section 4.3: A = the exact free flow, B = the torque kick m <- m + tau T_b(t, Q), composed as the
! schedule meth%kinds, meth%frac: STRANG, YOSHIDA4, RKN6_14, ...) with every flow of a chunk in
! lock-step: the free flows in the lanes of exact_flow_lanes (free_flow_chunk, q <- q w), the
! kicks in those of torque_lanes. For a torque of the attitude alone that torque_lanes takes, and
! quaternion attitudes. Each body gets the operations of exact_splitting_flows (exact_free_flows,
! rotate_quaternions, torque_flow's kick) in the same order, so the results are those of the
! one-body step bit for bit.
!
! Compiled once per SIMD target (tools/simd_target_source.py, simd_dispatch.f90): the free flows
! and the kicks run on the target's vectors.
module splitting_lanes
   use kinds, only: dp, wp => dp
   use step_interface
   use torques, only: torque_t, user_torque_cb, torqued
   use wheels, only: wheels_t
   use exact_flow_lanes, only: free_flow_chunk, flow_lanes_width
   use torque_lanes, only: torque_lanes_kick
   implicit none
   private

   public :: splitting_lanes_step

contains

   ! qmul, compiled here too, so that the turns of the quaternions inline it in every target
   include 'quaternion_generic.inc'

   !> One step of a splitting (variant_splitting) of the n bodies of a chunk (step_interface's
   !> method_step) without wheels, its torque of the attitude alone and torque_lanes_per_body
   !> (method_lanes chooses it so).
   subroutine splitting_lanes_step(meth, n, k, t, h, m, q, hw, inertia, ws, tq, wh, cb, info)
      type(method_t), intent(in) :: meth; type(torque_t), intent(in) :: tq; procedure(user_torque_cb) :: cb
      integer, intent(in) :: n, k; integer, intent(inout) :: info(n); real(dp), intent(in) :: t, h, inertia(3, n)
      real(dp), intent(inout) :: m(3, n), q(4, n), ws(nws, n)   ! (step_interface's method_step)
      type(wheels_t), intent(in) :: wh; real(dp), intent(inout) :: hw(wh%nw, n)
      real(dp) :: m1(3, flow_lanes_width), w(4, flow_lanes_width), ta, tau
      integer :: i, b0, nc, j

      ta = t
      do i = 1, meth%nf
         tau = meth%frac(i) * h
         if (meth%kinds(i) == 0) then
            ! exact_free_flows with one time for all and a moment a body (free_flow_chunk runs a
            ! lone body through free_flow, as free_flow_one does)
            do b0 = 1, n, flow_lanes_width
               nc = min(flow_lanes_width, n - b0 + 1)
               call free_flow_chunk(nc, 1, 1, nc, m(:, b0:b0 + nc - 1), [tau], &
                                    inertia(:, b0:b0 + nc - 1), meth%quadrature, m1, w)
               m(:, b0:b0 + nc - 1) = m1(:, 1:nc)
               do j = 1, nc
                  q(:, b0 + j - 1) = qmul(q(:, b0 + j - 1), w(:, j))
               end do
            end do
            ta = ta + tau
         else if (torqued(tq)) then
            call torque_lanes_kick(tq, ta, tau, n, q, m, inertia)
         end if
      end do
   end subroutine splitting_lanes_step

end module splitting_lanes
