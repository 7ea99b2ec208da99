! Plain subroutines of the extension frb._core besides the time loop (bind_engine.f90): the
! OpenMP build and the SIMD target (signatures: fortran/core.pyf).

!> Whether this build runs the batched loops on several threads (OpenMP), and the default
!> thread count of a parallel loop (OMP_NUM_THREADS, or one per core; 1 without OpenMP).
subroutine openmp_info(enabled, max_threads)
   use iso_c_binding, only: c_int
   use parallel, only: thread_count, openmp_enabled
   implicit none
   integer(c_int), intent(out) :: enabled, max_threads

   enabled = merge(1, 0, openmp_enabled())
   max_threads = thread_count(0)
end subroutine openmp_info

! The SIMD target of this extension's lane kernels (simd_dispatch; frb.cpu): requested (a
! cpu_target_* code), or the best the CPU supports when it lacks it or requested < 0; best: that
! best target.
subroutine cpu_target_select(requested, in_use, best)
   use simd_dispatch, only: select_cpu_target, best_cpu_target
   implicit none
   integer, intent(in) :: requested
   integer, intent(out) :: in_use, best

   best = best_cpu_target()
   in_use = select_cpu_target(requested)
end subroutine cpu_target_select
