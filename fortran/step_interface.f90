! The step interface shared by every method family of frb.integrate and its one time loop
! (engine). Every family module (named after its method family) exposes one routine, its
! dummy arguments declared by include 'step_dummies.inc':
!
!   subroutine <family>_step(meth, n, k, t, h, m, q, inertia, ws, tq, cb, info)
!      type(method_t), intent(in) :: meth        ! meth%variant selects the method of the family
!      integer, intent(in) :: n, k                ! number of bodies, number of this step (1-based)
!      real(dp), intent(in) :: t, h               ! time at the start of the step, step length
!      real(dp), intent(inout) :: m(3, n)         ! body angular momentum
!      real(dp), intent(inout) :: q(4, n)         ! unit quaternion (scalar first), Q = E(q)
!      real(dp), intent(in) :: inertia(3, n)      ! principal moments, positive, any order
!      real(dp), intent(inout) :: ws(nws, n)      ! per-body workspace kept across steps (zero at k = 1)
!      type(torque_t), intent(in) :: tq           ! the torque (torques)
!      procedure(user_torque_cb) :: cb            ! the user torque (called by torque_batch only)
!      integer, intent(inout) :: info(n)          ! set info(j) > 0 (info_*) when body j fails
!
! A step advances every body from t to t + h. Torques are evaluated with torque_batch for the
! whole batch at once (one call per stage: a user torque costs one Python call per stage), so a
! step is written stage by stage, each stage a loop over the bodies. Each body's arithmetic must
! not depend on the other bodies (batched results equal single-body results bit for bit); an
! implicit solve iterates every body until its own stopping test holds, then leaves it alone.
module step_interface
   use kinds, only: dp
   implicit none
   private

   integer, parameter, public :: max_flows = 64
   integer, parameter, public :: nws = 8

   !> Method families (one module each).
   integer, parameter, public :: family_exact_splittings = 1, family_approximate_free_flows = 2, &
                                 family_runge_kutta = 3, family_lie_stormer_verlet = 4, family_midpoint_trapezoid = 5

   !> info codes of a body (the engine stops after the step where one is set).
   integer, parameter, public :: info_ok = 0, info_no_convergence = 1, info_non_finite = 2, &
                                 info_no_solution = 3, info_not_implemented = 4

   !> Implicit steps: Newton's method (or the stated iteration) until the update is at most
   !> newton_rtol times the size of the unknown, at most newton_max_iter iterations.
   integer, parameter, public :: newton_max_iter = 50
   real(dp), parameter, public :: newton_rtol = 4.0_dp * epsilon(1.0_dp)

   type, public :: method_t
      integer :: family = 0
      integer :: variant = 0
      !> exact-flow splittings (exact_splittings): quadrature nodes of the free flows (0 exact)
      integer :: quadrature = 0
      !> exact-flow splittings: the flows of one step in order, kinds(j) = 0 free flow A,
      !> 1 torque kick B, over the time frac(j) h
      integer :: nf = 0
      integer :: kinds(max_flows) = 0
      real(dp) :: frac(max_flows) = 0.0_dp
   end type method_t

end module step_interface
