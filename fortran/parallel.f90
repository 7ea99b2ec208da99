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
module parallel
   !$ use omp_lib, only: omp_get_max_threads
   use numbers_table, only: min_parallel_work
   implicit none
   private

   ! min_parallel_work: the fewest body-steps a batched loop starts its threads for (below, it
   ! runs on the calling thread), from the table of shared numbers
   public :: thread_count, openmp_enabled, save_slot, note_invalid, first_invalid, min_parallel_work

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

   !> The checks of a chunk of bodies b0 .. b0 + size(codes) - 1 in a batched loop, codes(i) that of
   !> body b0 + i - 1 (0: valid): bad when one is invalid (the chunk is then skipped), and the
   !> index of the first invalid one into first_bad when smaller. With first_bad an OpenMP min
   !> reduction over the chunks, the batch reports its smallest invalid index whatever the threads.
   pure subroutine note_invalid(codes, b0, first_bad, bad)
      integer, intent(in) :: codes(:), b0
      integer, intent(inout) :: first_bad
      logical, intent(out) :: bad
      integer :: i

      bad = .false.
      do i = 1, size(codes)
         if (codes(i) /= 0) then
            first_bad = min(first_bad, b0 + i - 1)
            bad = .true.
            return
         end if
      end do
   end subroutine note_invalid

   !> where (from 0) of the first invalid body of a batch of n from first_bad (n + 1 when all are
   !> valid, see note_invalid): first_bad - 1, or -1 when all are valid.
   pure integer function first_invalid(first_bad, n) result(where)
      integer, intent(in) :: first_bad, n

      where = -1
      if (first_bad <= n) where = first_bad - 1
   end function first_invalid

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

end module parallel
