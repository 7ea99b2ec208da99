! The one time loop of frb.integrate: every method family plugs into it through the step
! interface of step_interface (one <family>_step routine per module).
!
! Bodies are stepped in chunks: a chunk runs all its steps before the next chunk starts (the
! state of a chunk stays in cache), and the chunks are shared among OpenMP threads. The Python
! layer passes chunk = n and one thread for a user torque, so that the user's callable is called
! once per stage for the whole batch, on the calling thread (it needs the GIL). No body's
! arithmetic depends on the chunk it is in or on the other bodies, so results do not depend on
! the chunk size or the thread count (bit for bit). The run is entered in segments of steps (and
! of bodies) from Python: the state (m, q and the workspace ws) is carried between segments.
module engine
   use kinds, only: dp
   use step_interface
   use torques, only: torque_t, user_torque_cb, torqued
   use exact_splittings, only: exact_splitting_step, exact_splitting_flows
   use approximate_free_flows, only: approximate_flow_step, torque_free_steps
   use runge_kutta, only: runge_kutta_step
   use lie_stormer_verlet, only: lie_stormer_verlet_step
   use midpoint_trapezoid, only: midpoint_trapezoid_step
   use parallel, only: thread_count, save_slot, min_parallel_work
   use checks, only: all_finite
   implicit none
   private

   public :: family_step, engine_run

contains

   !> The step routine of a method family, or null() for an unknown family. The pointer's
   !> interface is method_step (step_interface): the compiler checks every family against it.
   function family_step(family) result(step)
      integer, intent(in) :: family
      procedure(method_step), pointer :: step

      select case (family)
      case (family_exact_splittings)
         step => exact_splitting_step
      case (family_approximate_free_flows)
         step => approximate_flow_step
      case (family_runge_kutta)
         step => runge_kutta_step
      case (family_lie_stormer_verlet)
         step => lie_stormer_verlet_step
      case (family_midpoint_trapezoid)
         step => midpoint_trapezoid_step
      case default
         step => null()
      end select
   end function family_step

   !> Steps k_first+1 .. k_last of a run of nsteps steps of length h from time t0, for the
   !> bodies b_first .. b_last (1-based) of a batch of n, from the initial state m0, q0 when
   !> k_first = 0, else from the state m, q, ws left by the previous segment; the state is
   !> written back to m, q, ws only when k_last < nsteps (so that a run in one segment never
   !> touches those arrays). The state after step k (k = 0: the initial state, written by the
   !> segment with k_first = 0) goes to
   !> m_out(:, b, j), q_out(:, b, j) with j = save_slot(k, nsteps, save_every) (parallel),
   !> when j > 0. The bodies are stepped in chunks of chunk bodies (from b_first), shared among
   !> threads threads (0: the OpenMP default); a chunk runs all its steps before the next.
   !> On failure (a body whose step sets info, or whose state is not finite) that body's chunk
   !> stops; status reports the code, fail_step the step and fail_body the body (1-based) of
   !> the earliest failure (the smallest step, then the smallest body: the same for every
   !> thread count and every split of the run into segments); status = 0 otherwise.
   subroutine engine_run(meth, tq, n, b_first, b_last, k_first, k_last, nsteps, save_every, chunk, &
                         threads, h, t0, natt, m0, q0, m, q, ws, inertia, nk, m_out, q_out, &
                         status, fail_step, fail_body, cb, tbody)
      type(method_t), intent(in) :: meth
      type(torque_t), intent(in) :: tq
      !> the per-body parameters of the torque's term tq%body_term, held through a pointer
      real(dp), intent(in), target, optional :: tbody(:, :)
      integer, intent(in) :: n, b_first, b_last, k_first, k_last, nsteps, save_every, chunk, threads, nk
      integer, intent(in) :: natt
      real(dp), intent(in) :: h, t0, m0(3, n), q0(natt, n), inertia(3, n)
      real(dp), intent(inout) :: m(3, n), q(natt, n), ws(nws, n)
      real(dp), intent(inout) :: m_out(3, n, nk), q_out(natt, n, nk)
      integer, intent(out) :: status, fail_step, fail_body
      procedure(user_torque_cb) :: cb
      integer :: b0, nc, ic, code, kfail, jfail
      type(torque_t) :: tqb

      tqb = tq
      if (present(tbody) .and. tq%body_term > 0) tqb%body => tbody
      status = info_ok
      fail_step = 0
      fail_body = 0
      !$omp parallel do num_threads(thread_count(threads)) schedule(dynamic) &
      !$omp if(real(b_last - b_first + 1, dp) * max(k_last - k_first, 1) >= min_parallel_work &
      !$omp    .and. b_last - b_first >= chunk) &
      !$omp default(none) private(b0, nc, code, kfail, jfail) &
      !$omp shared(meth, tqb, n, b_first, b_last, k_first, k_last, nsteps, save_every, chunk, h, t0, natt, &
      !$omp        m0, q0, m, q, ws, inertia, nk, m_out, q_out, status, fail_step, fail_body)
      do ic = 1, (b_last - b_first + chunk) / chunk
         b0 = b_first + (ic - 1) * chunk
         nc = min(chunk, b_last - b0 + 1)
         call run_chunk(meth, tqb, n, b0, nc, k_first, k_last, nsteps, save_every, h, t0, natt, m0, &
                        q0, m, q, ws, inertia, nk, m_out, q_out, code, kfail, jfail, cb)
         if (code /= info_ok) then
            !$omp critical (frb_engine_failure)
            if (status == info_ok .or. kfail < fail_step .or. &
                (kfail == fail_step .and. b0 + jfail - 1 < fail_body)) then
               status = code
               fail_step = kfail
               fail_body = b0 + jfail - 1
            end if
            !$omp end critical (frb_engine_failure)
         end if
      end do
      !$omp end parallel do
   end subroutine engine_run

   !> engine_run for the nc bodies b0 .. b0+nc-1 (one chunk), on the calling thread. On failure
   !> code, kfail and jfail (the body in the chunk, 1-based) report the first failing body of
   !> the first failing step, and the chunk stops there.
   subroutine run_chunk(meth, tq, n, b0, nc, k_first, k_last, nsteps, save_every, h, t0, natt, m0, &
                        q0, m, q, ws, inertia, nk, m_out, q_out, code, kfail, jfail, cb)
      type(method_t), intent(in) :: meth
      type(torque_t), intent(in) :: tq
      integer, intent(in) :: n, b0, nc, k_first, k_last, nsteps, save_every, nk, natt
      real(dp), intent(in) :: h, t0, m0(3, n), q0(natt, n), inertia(3, n)
      real(dp), intent(inout) :: m(3, n), q(natt, n), ws(nws, n)
      real(dp), intent(inout) :: m_out(3, n, nk), q_out(natt, n, nk)
      integer, intent(out) :: code, kfail, jfail
      procedure(user_torque_cb) :: cb
      real(dp), allocatable :: mc(:, :), qc(:, :), wc(:, :), m_keep(:, :), q_keep(:, :)
      integer, allocatable :: info(:)
      integer :: k, j, slot, b1, nsub
      logical :: fast, done
      procedure(method_step), pointer :: step
      type(torque_t) :: tqc

      code = info_ok
      kfail = 0
      jfail = 0
      b1 = b0 + nc - 1
      allocate (mc(3, nc), qc(natt, nc), wc(nws, nc), info(nc))
      if (k_first == 0) then
         mc = m0(:, b0:b1)
         qc = q0(:, b0:b1)
         wc = 0.0_dp
         slot = save_slot(0, nsteps, save_every)
         if (slot > 0) then
            m_out(:, b0:b1, slot) = mc
            q_out(:, b0:b1, slot) = qc
         end if
      else
         mc = m(:, b0:b1)
         qc = q(:, b0:b1)
         wc = ws(:, b0:b1)
      end if
      info = info_ok
      step => family_step(meth%family)
      ! the torque of this chunk: its per-body parameters from body b0
      tqc = tq
      tqc%body_offset = tq%body_offset + b0 - 1
      ! torque-free steps between kept states may go through the family's fast path (the same
      ! operations, several steps a call); a failure there is taken again step by step
      fast = natt == 4 .and. .not. torqued(tq) .and. meth%family == family_approximate_free_flows
      k = k_first
      do while (k < k_last)
         nsub = 0
         if (fast .and. k >= 1) nsub = next_kept(k, nsteps, save_every, k_last) - k
         if (nsub > 1) then
            m_keep = mc
            q_keep = qc
            call torque_free_steps(meth%variant, nc, nsub, h, mc, qc, wc, done)
            if (done .and. all_finite(3 * nc, mc) .and. all_finite(natt * nc, qc)) then
               k = k + nsub
               slot = save_slot(k, nsteps, save_every)
               if (slot > 0) then
                  m_out(:, b0:b1, slot) = mc
                  q_out(:, b0:b1, slot) = qc
               end if
               cycle
            end if
            fast = .false.
            mc = m_keep
            qc = q_keep
         end if
         k = k + 1
         if (natt == 4 .and. associated(step)) then
            call step(meth, nc, k, t0 + (k - 1) * h, h, mc, qc, inertia(:, b0:b1), wc, tqc, cb, info)
         else if (meth%family == family_exact_splittings) then
            ! attitudes held as matrices (Q^T): the exact-flow splittings only
            call exact_splitting_flows(meth, nc, k, t0 + (k - 1) * h, h, mc, natt, qc, inertia(:, b0:b1), &
                                       tqc, cb)
         else
            info = info_not_implemented
         end if
         if (.not. step_ok(nc, natt, info, mc, qc)) then
            do j = 1, nc
               if (info(j) == info_ok) then
                  if (.not. (all_finite(3, mc(:, j)) .and. all_finite(natt, qc(:, j)))) &
                     info(j) = info_non_finite
               end if
               if (info(j) /= info_ok) then
                  code = info(j)
                  kfail = k
                  jfail = j
                  return
               end if
            end do
         end if
         slot = save_slot(k, nsteps, save_every)
         if (slot > 0) then
            m_out(:, b0:b1, slot) = mc
            q_out(:, b0:b1, slot) = qc
         end if
      end do
      if (k_last < nsteps) then
         m(:, b0:b1) = mc
         q(:, b0:b1) = qc
         ws(:, b0:b1) = wc
      end if
   end subroutine run_chunk

   !> True when no body of the chunk failed in the step (info) and every state is finite; for a
   !> chunk of one body with fixed sizes (no loops: the time loop of one body checks every step).
   pure logical function step_ok(nc, natt, info, mc, qc) result(ok)
      integer, intent(in) :: nc, natt, info(nc)
      real(dp), intent(in) :: mc(3, nc), qc(natt, nc)

      if (nc == 1 .and. natt == 4) then
         ok = info(1) == info_ok .and. all_finite(3, mc) .and. all_finite(4, qc)
      else if (nc == 1 .and. natt == 9) then
         ok = info(1) == info_ok .and. all_finite(3, mc) .and. all_finite(9, qc)
      else
         ok = all(info == info_ok) .and. all_finite(3 * nc, mc) .and. all_finite(natt * nc, qc)
      end if
   end function step_ok

   !> The first step after k whose state is kept (save_slot), at most k_last.
   pure integer function next_kept(k, nsteps, save_every, k_last) result(kn)
      integer, intent(in) :: k, nsteps, save_every, k_last

      if (save_every <= 0) then
         kn = nsteps
      else
         kn = min(nsteps, (k / save_every + 1) * save_every)
      end if
      kn = min(kn, k_last)
   end function next_kept

end module engine
