! Exact-flow methods of E. Celledoni, A. Zanna, "FRB-FORTRAN routines for the exact computation of free rigid body
! motions", ACM TOMS 37(2), article 23, 2010 (Algorithm 903),
! for frb.integrate:
! the free body by one exact (or semi-exact) flow a step ("EXACT"), and symmetric splittings of
! a torqued body (section 4.3 and the appendix): A = the exact free flow, B = the torque kick
! m <- m + tau T_b(t, Q) (Q fixed, its exact flow), composed as the schedule meth%kinds,
! meth%frac built by frb.integrate ("STRANG", "RKN6_14" of S. Blanes, P.C. Moan,
! J. Comput. Appl. Math. 142 (2002), as quoted in eq. (23) of Celledoni and Zanna, or user
! coefficients). The time of a torqued body advances with the A flows: a kick B between the
! A flows of total length s h (from the start of the step) uses T_b(t + s h, Q), which keeps a
! symmetric method symmetric for time-dependent torques.
module exact_splittings
   use kinds, only: dp
   use step_interface
   use torques, only: torque_t, user_torque_cb, torque_batch
   use exact_flow_lanes, only: free_flow_chunk, flow_lanes_width
   use rotations, only: qmul
   implicit none
   private

   public :: exact_splitting_step, exact_free_flows

   !> Variants: one free flow per step / the splitting of meth%kinds, meth%frac.
   integer, parameter, public :: cz_exact = 0, cz_splitting = 1

contains

   subroutine exact_splitting_step(meth, n, k, t, h, m, q, inertia, ws, tq, cb, info)
      include 'step_dummies.inc'
      real(dp), allocatable :: tb(:, :)
      real(dp) :: ta, tau
      integer :: i

      if (meth%variant == cz_exact) then
         call exact_free_flows(n, h, meth%quadrature, m, q, inertia)
         return
      end if
      allocate (tb(3, n))
      ta = t
      do i = 1, meth%nf
         tau = meth%frac(i) * h
         if (meth%kinds(i) == 0) then
            call exact_free_flows(n, tau, meth%quadrature, m, q, inertia)
            ta = ta + tau
         else
            call torque_batch(tq, n, ta, k, q, inertia, tb, cb)
            m = m + tau * tb
         end if
      end do
   end subroutine exact_splitting_step

   !> The exact (quadrature = 0) or semi-exact free flow over time tf of the n bodies,
   !> flow_lanes_width bodies in lock-step (free_flow_chunk: the results of free_flow bit for bit).
   subroutine exact_free_flows(n, tf, quadrature, m, q, inertia)
      integer, intent(in) :: n, quadrature
      real(dp), intent(in) :: tf, inertia(3, n)
      real(dp), intent(inout) :: m(3, n), q(4, n)
      real(dp) :: m1(3, flow_lanes_width), w(4, flow_lanes_width), hc(1)
      integer :: b0, nc, j
      hc(1) = tf
      do b0 = 1, n, flow_lanes_width
         nc = min(flow_lanes_width, n - b0 + 1)
         call free_flow_chunk(nc, 1, 1, nc, m(:, b0:b0 + nc - 1), hc, inertia(:, b0:b0 + nc - 1), &
                              quadrature, m1, w)
         do j = 1, nc
            m(:, b0 + j - 1) = m1(:, j)
            q(:, b0 + j - 1) = qmul(q(:, b0 + j - 1), w(:, j))
         end do
      end do
   end subroutine exact_free_flows

end module exact_splittings
