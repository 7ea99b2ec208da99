! Run-time choice of the SIMD target of the lane kernels.
!
! The lock-step kernels (exact_flow_lanes and its chunk driver flow_batches, the derivatives of the
! exact step flow_tangent_lanes, the batched discrete Moser-Veselov steps of moser_veselov, and
! the lane steps of frb.integrate: runge_kutta_lanes, splitting_lanes and lie_group_lanes, with
! the torques of torque_lanes, RK4's steps with tangents, runge_kutta_tangent_lanes, and the
! implicit methods of Krysl, implicit_lanes, and the input checks of a batch, check_lanes) are
! compiled once per target: the baseline of the architecture and, on x86-64,
! x86-64-v3 (AVX2) and x86-64-v4 (AVX-512) (meson.build; the copies are the same source with the
! module renamed, tools/simd_target_source.py). This module holds the target in use (cpu_target)
! and forwards each call to that target's copy; it is set at import of the Python package
! (frb.simd), from the CPU's features (cpu_features.c) or the environment variable FRB_CPU_TARGET.
!
! Every target performs the same IEEE operations in the same order: the vector instructions act
! lane by lane, and floating-point contraction (a*b + c fused into one FMA rounding) is off in
! every library of the extension (meson.build, -ffp-contract=off). So every target gives the
! results of the baseline bit for bit; a wider target only advances more bodies per instruction.
! (The lanes call no library function for sin, cos, atan and atan2, whose vectorised versions
! round differently per target: they use lane_math's, the same operations as the one-body flows.)
module simd_dispatch
   use iso_c_binding, only: c_int
   use step_interface, only: method_step, method_variational_step
   use numbers_table, only: cpu_target_baseline, cpu_target_avx2, cpu_target_avx512
   use exact_flow_lanes, only: chunk_baseline => free_flow_chunk, flow_lanes_width
   use exact_flow_lanes_avx2, only: chunk_avx2 => free_flow_chunk, width_avx2 => flow_lanes_width
   use exact_flow_lanes_avx512, only: chunk_avx512 => free_flow_chunk, &
                                      width_avx512 => flow_lanes_width
   use flow_tangent_lanes, only: jacobian_baseline => state_jacobian_chunk
   use flow_tangent_lanes_avx2, only: jacobian_avx2 => state_jacobian_chunk
   use flow_tangent_lanes_avx512, only: jacobian_avx512 => state_jacobian_chunk
   use moser_veselov, only: many_baseline => dmv_integrate_many, steps_baseline => dmv_blocks_steps
   use flow_batches, only: batch_baseline => flow_batch, turn_baseline => flow_turn_chunk
   use flow_batches_avx2, only: batch_avx2 => flow_batch, turn_avx2 => flow_turn_chunk
   use flow_batches_avx512, only: batch_avx512 => flow_batch, turn_avx512 => flow_turn_chunk
   use moser_veselov_avx2, only: many_avx2 => dmv_integrate_many, steps_avx2 => dmv_blocks_steps
   use moser_veselov_avx512, only: many_avx512 => dmv_integrate_many, &
                                   steps_avx512 => dmv_blocks_steps
   use runge_kutta_lanes, only: rk4_baseline => runge_kutta_lanes_step
   use runge_kutta_lanes_avx2, only: rk4_avx2 => runge_kutta_lanes_step
   use runge_kutta_lanes_avx512, only: rk4_avx512 => runge_kutta_lanes_step
   use splitting_lanes, only: splitting_baseline => splitting_lanes_step
   use splitting_lanes_avx2, only: splitting_avx2 => splitting_lanes_step
   use splitting_lanes_avx512, only: splitting_avx512 => splitting_lanes_step
   use lie_group_lanes, only: lie_group_baseline => lie_group_lanes_step
   use lie_group_lanes_avx2, only: lie_group_avx2 => lie_group_lanes_step
   use lie_group_lanes_avx512, only: lie_group_avx512 => lie_group_lanes_step
   use runge_kutta_tangent_lanes, only: rk4_tangents_baseline => runge_kutta_tangent_lanes_step
   use runge_kutta_tangent_lanes_avx2, only: rk4_tangents_avx2 => runge_kutta_tangent_lanes_step
   use runge_kutta_tangent_lanes_avx512, only: rk4_tangents_avx512 => runge_kutta_tangent_lanes_step
   use implicit_lanes, only: implicit_baseline => implicit_lanes_step
   use implicit_lanes_avx2, only: implicit_avx2 => implicit_lanes_step
   use implicit_lanes_avx512, only: implicit_avx512 => implicit_lanes_step
   use check_lanes, only: checks_baseline => check_batch
   use check_lanes_avx2, only: checks_avx2 => check_batch
   use check_lanes_avx512, only: checks_avx512 => check_batch
   implicit none
   private

   public :: flow_lanes_width, select_cpu_target, cpu_target, best_cpu_target
   public :: free_flow_chunk, flow_batch, flow_turn_chunk, dmv_integrate_many, dmv_blocks_steps, state_jacobian_chunk
   public :: runge_kutta_lanes_step, splitting_lanes_step, lie_group_lanes_step, &
             runge_kutta_tangent_lanes_step, implicit_lanes_step, check_batch

   !> The target of the lane kernels in use (a cpu_target_* code); the baseline until
   !> select_cpu_target is called.
   integer, protected :: cpu_target = cpu_target_baseline

   ! The entry points, each the routine of the same name of the target in use (the same arguments
   ! and results as the baseline's): exact_flow_lanes.free_flow_chunk, flow_batches.flow_batch and
   ! flow_turn_chunk,
   ! flow_tangent_lanes.state_jacobian_chunk,
   ! moser_veselov.dmv_integrate_many and dmv_blocks_steps, runge_kutta_lanes.runge_kutta_lanes_step
   ! splitting_lanes.splitting_lanes_step and lie_group_lanes.lie_group_lanes_step
   ! (step_interface's method_step), and
   ! runge_kutta_tangent_lanes.runge_kutta_tangent_lanes_step (method_variational_step), and
   ! implicit_lanes.implicit_lanes_step (method_step), and the input checks of a batch,
   ! check_lanes.check_batch.
   procedure(chunk_baseline), pointer, protected :: free_flow_chunk => chunk_baseline
   procedure(jacobian_baseline), pointer, protected :: state_jacobian_chunk => jacobian_baseline
   procedure(batch_baseline), pointer, protected :: flow_batch => batch_baseline
   procedure(turn_baseline), pointer, protected :: flow_turn_chunk => turn_baseline
   procedure(many_baseline), pointer, protected :: dmv_integrate_many => many_baseline
   procedure(steps_baseline), pointer, protected :: dmv_blocks_steps => steps_baseline
   procedure(method_step), pointer, protected :: runge_kutta_lanes_step => rk4_baseline
   procedure(method_step), pointer, protected :: splitting_lanes_step => splitting_baseline
   procedure(method_step), pointer, protected :: lie_group_lanes_step => lie_group_baseline
   procedure(method_variational_step), pointer, protected :: runge_kutta_tangent_lanes_step &
      => rk4_tangents_baseline
   procedure(method_step), pointer, protected :: implicit_lanes_step => implicit_baseline
   procedure(checks_baseline), pointer, protected :: check_batch => checks_baseline

   interface
      !> The highest target the CPU supports (cpu_features.c).
      function frb_cpu_level() bind(C, name='frb_cpu_level') result(level)
         import :: c_int
         integer(c_int) :: level
      end function frb_cpu_level
   end interface

   ! the chunk buffers of the callers are sized by flow_lanes_width: every target has the same
   integer, parameter :: same_width = 1 / merge(1, 0, width_avx2 == flow_lanes_width &
                                                      .and. width_avx512 == flow_lanes_width)

contains

   !> The highest target this CPU supports (a cpu_target_* code).
   integer function best_cpu_target()
      best_cpu_target = max(cpu_target_baseline, min(int(frb_cpu_level()), cpu_target_avx512))
   end function best_cpu_target

   !> Uses the target requested (a cpu_target_* code), or the best this CPU supports when it lacks
   !> it or requested < 0; returns the target now in use. (Not while another thread runs a flow.)
   integer function select_cpu_target(requested) result(in_use)
      integer, intent(in) :: requested

      in_use = best_cpu_target()
      if (requested >= cpu_target_baseline) in_use = min(requested, in_use)
      cpu_target = in_use
      select case (in_use)
      case (cpu_target_avx512)
         free_flow_chunk => chunk_avx512
         state_jacobian_chunk => jacobian_avx512
         flow_batch => batch_avx512
         flow_turn_chunk => turn_avx512
         dmv_integrate_many => many_avx512
         dmv_blocks_steps => steps_avx512
         runge_kutta_lanes_step => rk4_avx512
         splitting_lanes_step => splitting_avx512
         lie_group_lanes_step => lie_group_avx512
         runge_kutta_tangent_lanes_step => rk4_tangents_avx512
         implicit_lanes_step => implicit_avx512
         check_batch => checks_avx512
      case (cpu_target_avx2)
         free_flow_chunk => chunk_avx2
         state_jacobian_chunk => jacobian_avx2
         flow_batch => batch_avx2
         flow_turn_chunk => turn_avx2
         dmv_integrate_many => many_avx2
         dmv_blocks_steps => steps_avx2
         runge_kutta_lanes_step => rk4_avx2
         splitting_lanes_step => splitting_avx2
         lie_group_lanes_step => lie_group_avx2
         runge_kutta_tangent_lanes_step => rk4_tangents_avx2
         implicit_lanes_step => implicit_avx2
         check_batch => checks_avx2
      case default
         free_flow_chunk => chunk_baseline
         state_jacobian_chunk => jacobian_baseline
         flow_batch => batch_baseline
         flow_turn_chunk => turn_baseline
         dmv_integrate_many => many_baseline
         dmv_blocks_steps => steps_baseline
         runge_kutta_lanes_step => rk4_baseline
         splitting_lanes_step => splitting_baseline
         lie_group_lanes_step => lie_group_baseline
         runge_kutta_tangent_lanes_step => rk4_tangents_baseline
         implicit_lanes_step => implicit_baseline
         check_batch => checks_baseline
      end select
   end function select_cpu_target

end module simd_dispatch
