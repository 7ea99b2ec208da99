! Which steps of frb.integrate run in lock-step lanes: the lane step (compiled per SIMD target,
! simd_dispatch) that replaces a method family's step for a run it covers, with the same results
! bit for bit. Covered are quaternion runs without wheels of
! * RK4 (runge_kutta_lanes), torque-free or with a torque of torque_lanes (field, gravity
!   gradient, linear damping, rotors; parameters shared or per body), or torque-free with
!   reaction wheels and the compiled law wheel_law_feedback;
! * the splittings of the exact free flow (splitting_lanes), with a torque of torque_lanes of the
!   attitude alone (field, gravity gradient; parameters shared or per body);
! * TERZE, SYMROT and MIDPOINT (lie_group_lanes), torque-free or with a torque of torque_lanes
!   of the attitude alone (a torque-free SYMROT or MIDPOINT run of one step length takes the lane
!   step in place of its family's free steps: lane_step_replaces_free_steps), and DMV2 ... DMV8
!   with such a torque (torque-free, their family's free steps run the DMV lanes of
!   moser_veselov);
! * the implicit methods of Krysl (implicit_lanes: TRAP, IMID, TRAPM, IMIDM, SWC1, AKW, BBTRAP,
!   BBTRAPWD), torque-free or with a torque of torque_lanes (parameters shared or per body);
! * RK4's steps with tangents (frb.integrate(..., sensitivities=...): runge_kutta_tangent_lanes),
!   torque-free or with a torque of torque_lanes with shared parameters.
! Every other run keeps its family's step, and so does every run while the lane steps are turned
! off (use_lane_steps: for the tests and benchmarks that compare the two, frb._testing).
module method_lanes
   use step_interface
   use numbers_table, only: variant_rk4, variant_splitting, variant_terze, variant_symrot, &
                            variant_midpoint, variant_dmv2, variant_dmv4, variant_dmv6, variant_dmv8
   use torques, only: torque_t, torqued
   use wheels, only: wheels_t, wheels_active, wheel_law_feedback
   use torque_lanes, only: torque_lanes_capable, torque_lanes_per_body
   use simd_dispatch, only: runge_kutta_lanes_step, splitting_lanes_step, lie_group_lanes_step, &
                            runge_kutta_tangent_lanes_step
   use simd_dispatch, only: implicit_lanes_step
   implicit none
   private

   public :: choose_lane_step, use_lane_steps, lane_step_replaces_free_steps, &
             choose_lane_variational_step

   !> Whether the lane steps replace the families' steps (use_lane_steps).
   logical :: lane_steps = .true.

contains

   !> step <- the lane step of the method for a run of quaternion attitudes with the torque tq and
   !> the wheels wh, when there is one; step unchanged otherwise.
   subroutine choose_lane_step(meth, tq, wh, step)
      type(method_t), intent(in) :: meth
      type(torque_t), intent(in) :: tq
      type(wheels_t), intent(in) :: wh
      procedure(method_step), pointer, intent(inout) :: step

      if (.not. lane_steps) return
      if (wheels_active(wh)) then
         if (meth%family == family_runge_kutta .and. meth%variant == variant_rk4 .and. &
             wh%law == wheel_law_feedback .and. .not. torqued(tq)) step => runge_kutta_lanes_step
         return
      end if
      if (torqued(tq) .and. .not. torque_lanes_per_body(tq)) return
      if (meth%family == family_runge_kutta .and. meth%variant == variant_rk4) then
         step => runge_kutta_lanes_step
      else if (meth%family == family_exact_splittings .and. meth%variant == variant_splitting &
               .and. torqued(tq) .and. .not. tq%momentum) then
         step => splitting_lanes_step
      else if (((meth%family == family_lie_stormer_verlet .and. meth%variant == variant_terze) &
                .or. lie_group_strang(meth)) .and. .not. tq%momentum) then
         step => lie_group_lanes_step
      else if (meth%family == family_midpoint_trapezoid) then
         step => implicit_lanes_step
      end if
   end subroutine choose_lane_step

   !> True when a torque-free run of the method without wheels, of quaternion attitudes and one
   !> step length for all bodies, takes the lane step (choose_lane_step) in place of its family's
   !> free steps (the same steps one by one, so the same results).
   logical function lane_step_replaces_free_steps(meth) result(replaces)
      type(method_t), intent(in) :: meth

      replaces = lane_steps .and. meth%family == family_approximate_free_flows .and. &
                 (meth%variant == variant_symrot .or. meth%variant == variant_midpoint)
   end function lane_step_replaces_free_steps

   !> True for the methods of approximate_free_flows that lie_group_lanes steps: SYMROT,
   !> MIDPOINT, DMV2 ... DMV8.
   pure logical function lie_group_strang(meth)
      type(method_t), intent(in) :: meth

      lie_group_strang = meth%family == family_approximate_free_flows .and. &
                         any(meth%variant == [variant_symrot, variant_midpoint, variant_dmv2, &
                                              variant_dmv4, variant_dmv6, variant_dmv8])
   end function lie_group_strang
   !> step <- the lane variational step (step_interface's method_variational_step) of the method
   !> for a run of quaternion attitudes without wheels with the torque tq, when there is one: RK4,
   !> torque-free or with a torque of torque_lanes (runge_kutta_tangent_lanes); step unchanged
   !> otherwise.
   subroutine choose_lane_variational_step(meth, tq, wh, step)
      type(method_t), intent(in) :: meth
      type(torque_t), intent(in) :: tq
      type(wheels_t), intent(in) :: wh
      procedure(method_variational_step), pointer, intent(inout) :: step

      if (.not. lane_steps .or. wheels_active(wh)) return
      if (torqued(tq) .and. .not. torque_lanes_capable(tq)) return
      if (meth%family == family_runge_kutta .and. meth%variant == variant_rk4) &
         step => runge_kutta_tangent_lanes_step
   end subroutine choose_lane_variational_step

   !> Turns the lane steps on or off for the runs that start after the call (not while a run is
   !> in progress).
   subroutine use_lane_steps(on)
      logical, intent(in) :: on

      lane_steps = on
   end subroutine use_lane_steps

end module method_lanes
