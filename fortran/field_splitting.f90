! Splitting methods for a rigid body in a constant spatial field, with the whole time loop compiled.
!
! The vector field is split into the free rigid body A (exact flow free_flow of exact_flow) and
! the torque of a constant spatial field u0, B: with u = Q^T u0 (constant along B, since Q is),
!     m1 <- m1 + t u2,   m2 <- m2 - t u1,   m3, Q unchanged       (torque u x e3).
! One step is a fixed sequence of flows (kind(j), tau(j)), j = 1..nf, kind 0 = A, 1 = B, with the
! times tau(j) already multiplied by the step length; it is built (and merged) by the caller
! (frb.splitting._schedule), so the compiled and the Python loop apply the same flows with the
! same times. Every A flow updates the attitude exactly as frb_step_one does (Q <- Q E(w)), so both
! loops perform the same floating-point operations.
!
! Layout: the attitude is held TRANSPOSED, qt = Q^T (a C-ordered numpy matrix seen from Fortran).
module field_splitting
   use kinds, only: dp
   use exact_flow, only: free_flow, quat_to_matrix
   use parallel, only: save_slot
   implicit none
   private

   public :: field_flow, split_step, split_segment

   integer, parameter, public :: flow_free = 0, flow_field = 1

contains

   !> Exact flow B over time tau of the torque u x e3, u = Q^T u0 (qt = Q^T): m changes, Q does not.
   pure subroutine field_flow(m, qt, u0, tau)
      real(dp), intent(inout) :: m(3)
      real(dp), intent(in) :: qt(3, 3), u0(3), tau
      real(dp) :: u1, u2

      ! u_i = sum_j Q(j, i) u0(j) = sum_j qt(i, j) u0(j), summed in the order j = 1, 2, 3
      u1 = qt(1, 1) * u0(1) + qt(1, 2) * u0(2) + qt(1, 3) * u0(3)
      u2 = qt(2, 1) * u0(1) + qt(2, 2) * u0(2) + qt(2, 3) * u0(3)
      m(1) = m(1) + tau * u2
      m(2) = m(2) - tau * u1
   end subroutine field_flow

   !> One step: the flows kinds(j) (flow_free or flow_field) over the times tau(j), in order.
   pure subroutine split_step(m, qt, inertia, u0, kinds, tau, quadrature)
      real(dp), intent(inout) :: m(3), qt(3, 3)
      real(dp), intent(in) :: inertia(3), u0(3), tau(:)
      integer, intent(in) :: kinds(:), quadrature
      real(dp) :: m1(3), w(4), e(3, 3)
      integer :: j

      do j = 1, size(tau)
         if (kinds(j) == flow_free) then
            call free_flow(m, tau(j), inertia, quadrature, m1, w)
            e = quat_to_matrix(w)
            m = m1
            ! Q <- Q E(w)  =>  Q^T <- E(w)^T Q^T  (the product of frb_step_one)
            qt = matmul(transpose(e), qt)
         else
            call field_flow(m, qt, u0, tau(j))
         end if
      end do
   end subroutine split_step

   !> Steps k_first+1 .. k_last of a run of nsteps steps, in place (m, qt the current state);
   !> the state after step k goes to m_out(:, j), qt_out(:, :, j) when
   !> j = save_slot(k, nsteps, save_every) > 0 (parallel). Python enters a long run in
   !> segments of steps (Ctrl-C, progress) with the same states as one call.
   pure subroutine split_segment(m, qt, inertia, u0, kinds, tau, quadrature, nsteps, save_every, &
                                 k_first, k_last, m_out, qt_out)
      real(dp), intent(inout) :: m(3), qt(3, 3), m_out(:, :), qt_out(:, :, :)
      real(dp), intent(in) :: inertia(3), u0(3), tau(:)
      integer, intent(in) :: kinds(:), quadrature, nsteps, save_every, k_first, k_last
      integer :: k, j

      do k = k_first + 1, k_last
         call split_step(m, qt, inertia, u0, kinds, tau, quadrature)
         j = save_slot(k, nsteps, save_every)
         if (j > 0) then
            m_out(:, j) = m
            qt_out(:, :, j) = qt
         end if
      end do
   end subroutine split_segment

end module field_splitting
