! Threads and segments of the batched loops.
!
! Threads: the batched bindings run their loop over chunks of bodies in an OpenMP parallel loop.
! The chunks are fixed by the batch alone (never by the thread count), and every body's
! arithmetic is independent of the other bodies, so results are the same bit for bit for every
! thread count. Built without OpenMP (a compiler without it), the loops run on one thread.
!
! Segments: a long time loop is entered from Python in segments of steps (so that Python can
! honour Ctrl-C and show progress between them); the states to keep are numbered by save_slot
! from the step numbers of the whole run, so that a run in segments fills the same slots as a
! run in one go.
module frb_parallel
   !$ use omp_lib, only: omp_get_max_threads
   implicit none
   private

   public :: thread_count, openmp_enabled, save_slot

   !> Fewest body-steps worth starting the threads for (below, the loop runs on the calling
   !> thread): about 50 microseconds of exact flows.
   integer, parameter, public :: min_parallel_work = 256

contains

   !> Threads of a parallel loop: threads if positive, else the OpenMP default (OMP_NUM_THREADS,
   !> or one per core); 1 without OpenMP.
   integer function thread_count(threads) result(nt)
      integer, intent(in) :: threads

      nt = 1
      !$ nt = omp_get_max_threads()
      !$ if (threads > 0) nt = threads
   end function thread_count

   !> True when built with OpenMP.
   logical function openmp_enabled() result(enabled)
      enabled = .false.
      !$ enabled = .true.
   end function openmp_enabled

   !> Slot (1-based) of the state after step k of a run of nsteps steps among the kept states,
   !> or 0 when that state is not kept. save_every >= 1 keeps the steps 0, save_every,
   !> 2 save_every, ... and always the last (nsteps // save_every + 1 slots, one more when
   !> save_every does not divide nsteps); save_every = 0 keeps the last state only (one slot).
   pure integer function save_slot(k, nsteps, save_every) result(slot)
      integer, intent(in) :: k, nsteps, save_every

      slot = 0
      if (save_every == 1) then
         slot = k + 1
      else if (save_every <= 0) then
         if (k == nsteps) slot = 1
      else if (mod(k, save_every) == 0) then
         slot = k / save_every + 1
      else if (k == nsteps) then
         slot = nsteps / save_every + 2
      end if
   end function save_slot

end module frb_parallel
