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

!> One exact (quadrature = 0) or semi-exact step of each of the n bodies with its derivatives
!> (exact_splittings.free_flow_jacobian_batch): m_out, att_out the state after the step (that of the
!> engine's step, bit for bit), phit(6, 6, j) the TRANSPOSE of the state transition matrix of
!> body j (numpy's C-ordered (n, 6, 6) as Fortran sees it) and dh(6, j) its derivative in h, rows and columns in the order (dm, dtheta), dtheta the attitude
!> perturbation in the body frame. att(natt, n): unit quaternions (natt = 4) or Q^T column by
!> column (natt = 9); h(nh): one step for all (nh = 1) or one per body; the bodies are valid
!> (frb._run checks them first).
subroutine flow_jacobian(natt, n, nh, m, att, h, inertia, quadrature, threads, m_out, att_out, phit, dh, &
                         status)
   use kinds, only: dp
   use exact_splittings, only: free_flow_jacobian_batch
   use numbers_table, only: info_ok, info_bad_call
   implicit none
   integer, intent(in) :: natt, n, nh, quadrature, threads
   real(dp), intent(in) :: m(3, n), att(natt, n), h(nh), inertia(3, n)
   real(dp), intent(out) :: m_out(3, n), att_out(natt, n), phit(6, 6, n), dh(6, n)
   integer, intent(out) :: status

   status = info_bad_call
   if ((natt /= 4 .and. natt /= 9) .or. (nh /= 1 .and. nh /= n) .or. nh < 1 .or. quadrature < 0) return
   call free_flow_jacobian_batch(natt, n, nh, m, att, h, inertia, quadrature, threads, m_out, att_out, &
                                 phit, dh)
   status = info_ok
end subroutine flow_jacobian

!> The derivatives di(6, 3, j) of the step of body j (as flow_jacobian) with respect to its three
!> moments (flow_derivatives.inertia_jacobian_batch).
subroutine flow_inertia_jacobian(n, nh, m, h, inertia, quadrature, threads, di, status)
   use kinds, only: dp
   use flow_derivatives, only: inertia_jacobian_batch
   use numbers_table, only: info_ok, info_bad_call
   implicit none
   integer, intent(in) :: n, nh, quadrature, threads
   real(dp), intent(in) :: m(3, n), h(nh), inertia(3, n)
   real(dp), intent(out) :: di(6, 3, n)
   integer, intent(out) :: status

   status = info_bad_call
   if ((nh /= 1 .and. nh /= n) .or. nh < 1 .or. quadrature < 0) return
   call inertia_jacobian_batch(n, nh, m, h, inertia, quadrature, threads, di)
   status = info_ok
end subroutine flow_inertia_jacobian
