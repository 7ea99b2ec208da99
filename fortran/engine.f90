! The one time loop of frb.integrate: every method family plugs into it through the step
! contract of step_interface (one <family>_step routine per module, and <family>_free_steps for
! the families that step the free body several steps at a time).
!
! Bodies are stepped in chunks: a chunk runs all its steps before the next chunk starts (the
! state of a chunk stays in cache), and the chunks are shared among OpenMP threads. The Python
! layer passes chunk = n and one thread for a user torque, so that the user's callable is called
! once per stage for the whole batch, on the calling thread (it needs the GIL). No body's
! arithmetic depends on the chunk it is in or on the other bodies, so results do not depend on
! the chunk size or the thread count (bit for bit). The run is entered in segments of steps (and
! of bodies) from Python: the state (m, the attitude, the wheel momenta and the workspace ws:
! carried_t) is carried between segments. A run with reaction wheels (module wheels) carries their momenta as
! part of the state (kept with m and the attitude); its steps are never torque-free.
!
! A torque-free run takes the family's free steps from one kept state to the next (several steps
! a call, each body with its own step length when h is given per body); a failure there is taken
! again step by step, so that the failing step is named.
!
! A run with a variational state (seg%variational: its parts, module variational) takes the
! family's variational steps instead, one step at a time: the state and its derivatives S are
! carried together (in vs between segments) and kept with the states (vs_out).
module engine
   use kinds, only: dp
   use step_interface
   use torques, only: torque_t, user_torque_cb, torqued
   use wheels, only: wheels_t, wheels_active, max_wheels
   use exact_splittings, only: exact_splitting_step, exact_splitting_free_steps, exact_splitting_flows, &
                               exact_splitting_variational_step
   use approximate_free_flows, only: approximate_flow_step, approximate_free_steps
   use runge_kutta, only: runge_kutta_step, runge_kutta_variational_step
   use variational, only: layout_t, layout_of, initial_state, variational_rows
   use lie_stormer_verlet, only: lie_stormer_verlet_step
   use midpoint_trapezoid, only: midpoint_trapezoid_step
   use parallel, only: thread_count, save_slot, min_parallel_work
   use checks, only: all_finite
   use numbers_table, only: engine_chunk
   use method_lanes, only: choose_lane_step, choose_lane_variational_step, &
                           lane_step_replaces_free_steps
   implicit none
   private

   public :: family_step, family_free_steps, family_variational_step, engine_run, segment_t, carried_t

   !> Chunk-steps a thread of engine_run takes at a time (whole chunks, at least one): 16 chunks of
   !> a one-step segment, one chunk of a segment of 16 steps or more.
   integer, parameter :: grab_steps = 16

   !> The part of a run one call takes, and how: steps k_first+1 .. k_last of a run of nsteps
   !> steps (the kept states: save_every, see parallel's save_slot), for the bodies b_first ..
   !> b_last (1-based), stepped chunk bodies at a time on threads threads (0: the OpenMP default).
   !> variational: the parts of the variational state carried (variational_* bits, 0 none).
   type :: segment_t
      integer :: nsteps = 0, save_every = 0, chunk = 1, threads = 0
      integer :: b_first = 1, b_last = 0, k_first = 0, k_last = 0
      integer :: variational = 0
   end type segment_t

   !> The state carried between the segments of a run: m(3, n), att(natt, n), the wheel momenta
   !> hw(nw, n), the workspace ws(nws, n) and the variational state vs(nv, n), pointing at the
   !> caller's arrays. A run in one segment never reads or writes them: it leaves them
   !> unassociated (and allocates nothing for them).
   type :: carried_t
      real(dp), pointer, contiguous :: m(:, :) => null(), att(:, :) => null(), hw(:, :) => null(), &
                                       ws(:, :) => null(), vs(:, :) => null()
   end type carried_t

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

   !> The torque-free steps of a method family (interface method_free_steps), or null() for a
   !> family that has none (its torque-free runs go step by step with one step length).
   function family_free_steps(family) result(steps)
      integer, intent(in) :: family
      procedure(method_free_steps), pointer :: steps

      select case (family)
      case (family_exact_splittings)
         steps => exact_splitting_free_steps
      case (family_approximate_free_flows)
         steps => approximate_free_steps
      case default
         steps => null()
      end select
   end function family_free_steps

   !> The variational step of a method family (interface method_variational_step), or null()
   !> for a family that has none (frb refuses sensitivities of its methods).
   function family_variational_step(family) result(step)
      integer, intent(in) :: family
      procedure(method_variational_step), pointer :: step

      select case (family)
      case (family_exact_splittings)
         step => exact_splitting_variational_step
      case (family_runge_kutta)
         step => runge_kutta_variational_step
      case default
         step => null()
      end select
   end function family_variational_step

   !> The segment seg of a run of the n bodies from time t0, body j with the step length
   !> h(min(j, nh)) (nh = n only for a torque-free run of a family with free steps) and the
   !> moments inertia(:, min(j, ni)) (ni = 1: one for all), from the initial state m0, att0, h0
   !> when seg%k_first = 0, else from the state carry left by the previous segment; the state is
   !> written back to carry only when seg%k_last < seg%nsteps (so that a run in one segment needs
   !> none). The state after step k (k = 0: the initial state,
   !> written by the segment with k_first = 0) goes to m_out(:, b, j), att_out(:, b, j),
   !> h_out(:, b, j) with j = save_slot(k, nsteps, save_every) (parallel), when j > 0. The
   !> wheels wh (wh%nw momenta a body, none for nw = 0). On failure (a body whose step sets info,
   !> or whose state is not finite) that body's chunk stops; status reports the code, fail_step
   !> the step and fail_body the body (1-based) of the earliest failure (the smallest step, then
   !> the smallest body: the same for every thread count and every split of the run into
   !> segments); status = info_ok otherwise. With seg%variational, the variational state of body b
   !> (module variational: nv = 6 ncol reals) is carried in carry%vs(:, b) and kept in vs_out(:, b, j)
   !> like the state (its layout: layout_of).
   subroutine engine_run(meth, tq, wh, seg, n, nh, h, t0, natt, m0, att0, h0, carry, ni, inertia, nk, &
                         m_out, att_out, h_out, status, fail_step, fail_body, cb, nv, vs_out, tbody, &
                         wheel_axes, wheel_law)
      type(method_t), intent(in) :: meth
      type(torque_t), intent(in) :: tq
      type(wheels_t), intent(in) :: wh
      type(segment_t), intent(in) :: seg
      !> the per-body parameters of the torque's terms (blocks tq%block), held through a pointer
      real(dp), intent(in), target, optional :: tbody(:, :)
      !> the wheels' axes and pseudo-inverse rows, and their law's parameters (wheels_t's axes,
      !> par), held through pointers
      real(dp), intent(in), target, optional :: wheel_axes(:, :, :), wheel_law(:, :)
      integer, intent(in) :: n, nh, natt, nk, ni
      real(dp), intent(in) :: h(nh), t0, m0(3, n), att0(natt, n), h0(wh%nw, n), inertia(3, ni)
      type(carried_t), intent(in) :: carry
      real(dp), intent(inout) :: m_out(3, n, nk), att_out(natt, n, nk), h_out(wh%nw, n, nk)
      integer, intent(out) :: status, fail_step, fail_body
      procedure(user_torque_cb) :: cb
      integer, intent(in) :: nv
      real(dp), intent(inout) :: vs_out(nv, n, nk)
      integer :: b0, nc, ic, code, kfail, jfail, chunk, grab
      type(torque_t) :: tqb
      type(wheels_t) :: whb

      tqb = tq
      if (present(tbody) .and. any(tq%block > 0)) tqb%body => tbody
      whb = wh
      if (present(wheel_axes)) whb%axes => wheel_axes
      if (present(wheel_law)) whb%par => wheel_law
      status = info_ok
      fail_step = 0
      fail_body = 0
      chunk = max(1, seg%chunk)
      ! chunks a thread takes at a time: a chunk of one or two steps is short enough that taking
      ! it (an atomic add on the loop's shared counter) is a measurable part of its time
      grab = max(1, grab_steps / max(seg%k_last - seg%k_first, 1))
      !$omp parallel do num_threads(thread_count(seg%threads)) schedule(dynamic, grab) &
      !$omp if(real(seg%b_last - seg%b_first + 1, dp) * max(seg%k_last - seg%k_first, 1) &
      !$omp    >= min_parallel_work .and. seg%b_last - seg%b_first >= chunk) &
      !$omp default(none) private(b0, nc, code, kfail, jfail) firstprivate(tqb, whb) &
      !$omp shared(meth, tq, wh, seg, chunk, n, nh, h, t0, natt, m0, att0, h0, carry, ni, &
      !$omp        inertia, nk, m_out, att_out, h_out, status, fail_step, fail_body, nv, vs_out)
      do ic = 1, (seg%b_last - seg%b_first + chunk) / chunk
         b0 = seg%b_first + (ic - 1) * chunk
         nc = min(chunk, seg%b_last - b0 + 1)
         ! the per-body parameters of the torque and of the wheels from body b0 (each thread
         ! holds its own copy of tqb, whb)
         tqb%body_offset = tq%body_offset + b0 - 1
         whb%offset = wh%offset + b0 - 1
         call run_chunk(meth, tqb, whb, seg, n, b0, nc, nh, h, t0, natt, m0, att0, h0, carry, ni, &
                        inertia, nk, m_out, att_out, h_out, code, kfail, jfail, cb, nv, vs_out)
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

   !> engine_run for the nc bodies b0 .. b0+nc-1 (one chunk), on the calling thread, with the
   !> torque tq and the wheels wh whose per-body parameters start at body b0. On failure
   !> code, kfail and jfail (the body in the chunk, 1-based) report the first failing body of
   !> the first failing step, and the chunk stops there. The chunk's state lives in local arrays
   !> of engine_chunk bodies (no allocation a chunk), or allocated ones for a larger chunk (a
   !> user torque's or wheel law's whole batch).
   subroutine run_chunk(meth, tq, wh, seg, n, b0, nc, nh, h, t0, natt, m0, att0, h0, carry, ni, inertia, &
                        nk, m_out, att_out, h_out, code, kfail, jfail, cb, nv, vs_out)
      type(method_t), intent(in) :: meth
      type(torque_t), intent(in) :: tq
      type(wheels_t), intent(in) :: wh
      type(segment_t), intent(in) :: seg
      integer, intent(in) :: n, b0, nc, nh, nk, natt, ni
      real(dp), intent(in) :: h(nh), t0, m0(3, n), att0(natt, n), h0(wh%nw, n), inertia(3, ni)
      type(carried_t), intent(in) :: carry
      real(dp), intent(inout) :: m_out(3, n, nk), att_out(natt, n, nk), h_out(wh%nw, n, nk)
      integer, intent(out) :: code, kfail, jfail
      procedure(user_torque_cb) :: cb
      integer, intent(in) :: nv
      real(dp), intent(inout) :: vs_out(nv, n, nk)
      real(dp) :: mc(3, engine_chunk), ac(9 * engine_chunk), wc(nws, engine_chunk)
      real(dp) :: hc(max_wheels * engine_chunk)
      integer :: info(engine_chunk)
      real(dp), allocatable :: mb(:, :), ab(:), wb(:, :), hb(:)
      integer, allocatable :: ib(:)

      if (nc <= engine_chunk) then
         call chunk_steps(meth, tq, wh, seg, n, b0, nc, nh, h, t0, natt, m0, att0, h0, carry, ni, &
                          inertia, nk, m_out, att_out, h_out, code, kfail, jfail, cb, mc, ac, hc, wc, &
                          info, nv, vs_out)
      else
         allocate (mb(3, nc), ab(natt * nc), wb(nws, nc), hb(wh%nw * nc), ib(nc))
         call chunk_steps(meth, tq, wh, seg, n, b0, nc, nh, h, t0, natt, m0, att0, h0, carry, ni, &
                          inertia, nk, m_out, att_out, h_out, code, kfail, jfail, cb, mb, ab, hb, wb, &
                          ib, nv, vs_out)
      end if
   end subroutine run_chunk

   !> run_chunk with the chunk's state in the arrays mc(3, nc), ac(natt, nc), hc(wh%nw, nc),
   !> wc(nws, nc), info(nc) (and its variational state, allocated when the run carries one).
   subroutine chunk_steps(meth, tq, wh, seg, n, b0, nc, nh, h, t0, natt, m0, att0, h0, carry, ni, &
                          inertia, nk, m_out, att_out, h_out, code, kfail, jfail, cb, mc, ac, hc, wc, &
                          info, nv, vs_out)
      type(method_t), intent(in) :: meth
      type(torque_t), intent(in) :: tq
      type(wheels_t), intent(in) :: wh
      type(segment_t), intent(in) :: seg
      integer, intent(in) :: n, b0, nc, nh, nk, natt, ni
      real(dp), intent(in) :: h(nh), t0, m0(3, n), att0(natt, n), h0(wh%nw, n), inertia(3, ni)
      type(carried_t), intent(in) :: carry
      real(dp), intent(inout) :: m_out(3, n, nk), att_out(natt, n, nk), h_out(wh%nw, n, nk)
      integer, intent(out) :: code, kfail, jfail
      procedure(user_torque_cb) :: cb
      real(dp), intent(inout) :: mc(3, nc), ac(natt, nc), hc(wh%nw, nc), wc(nws, nc)
      integer, intent(inout) :: info(nc)
      integer, intent(in) :: nv
      real(dp), intent(inout) :: vs_out(nv, n, nk)
      real(dp), allocatable :: m_keep(:, :), a_keep(:, :), w_keep(:, :), ic(:, :), sc(:, :, :)
      procedure(method_variational_step), pointer :: variational_step
      type(layout_t) :: lay
      integer :: k, nsub, b1, nhc
      logical :: one_by_one
      procedure(method_step), pointer :: step
      procedure(method_free_steps), pointer :: free_steps

      code = info_ok
      kfail = 0
      jfail = 0
      b1 = b0 + nc - 1
      ! the step lengths of this chunk: one for all, or one per body
      nhc = 1
      if (nh > 1) nhc = nc
      ! the variational state of the chunk (none: zero columns)
      lay = layout_of(seg%variational, tq%nterms)
      allocate (sc(variational_rows, lay%ncol, nc))
      variational_step => null()
      if (lay%ncol > 0) variational_step => family_variational_step(meth%family)
      if (lay%ncol > 0 .and. natt == 4) call choose_lane_variational_step(meth, tq, wh, variational_step)
      if (seg%k_first == 0) then
         mc = m0(:, b0:b1)
         call copy_values(natt * nc, att0(1, b0), ac)
         hc = h0(:, b0:b1)
         wc = 0.0_dp
         call initial_state(lay, nc, sc)
         call keep(0)
      else
         mc = carry%m(:, b0:b1)
         ac = carry%att(:, b0:b1)
         if (wh%nw > 0) hc = carry%hw(:, b0:b1)
         wc = carry%ws(:, b0:b1)
         if (lay%ncol > 0) sc = reshape(carry%vs(:, b0:b1), shape(sc))
      end if
      info = info_ok
      step => family_step(meth%family)
      if (natt == 4) call choose_lane_step(meth, tq, wh, step)
      free_steps => null()
      if (.not. torqued(tq) .and. .not. wheels_active(wh)) free_steps => family_free_steps(meth%family)
      if (associated(free_steps) .and. natt == 4 .and. nh == 1) then
         if (lane_step_replaces_free_steps(meth)) free_steps => null()
      end if
      one_by_one = .false.
      k = seg%k_first
      do while (k < seg%k_last)
         if (lay%ncol > 0) then
            k = k + 1
            if (.not. associated(variational_step) .or. wheels_active(wh)) then
               info = info_not_implemented
            else if (ni == n) then
               call variational_step(meth, nc, k, t0 + (k - 1) * h(1), nhc, h(min(b0, nh):min(b1, nh)), mc, &
                                     natt, ac, inertia(:, b0:b1), tq, lay, sc, info)
            else
               call chunk_moments()
               call variational_step(meth, nc, k, t0 + (k - 1) * h(1), nhc, h(min(b0, nh):min(b1, nh)), mc, &
                                     natt, ac, ic, tq, lay, sc, info)
            end if
         else if (associated(free_steps)) then
            ! torque-free: up to the next kept state at once (a failure: again one by one)
            nsub = 1
            if (.not. one_by_one) nsub = next_kept(k, seg%nsteps, seg%save_every, seg%k_last) - k
            if (nsub > 1) then
               m_keep = mc
               a_keep = ac
               w_keep = wc
            end if
            if (ni == 1) then
               call free_steps(meth, nc, k, nsub, nhc, h(min(b0, nh):min(b1, nh)), mc, natt, ac, 1, &
                               inertia, wc, info)
            else
               call free_steps(meth, nc, k, nsub, nhc, h(min(b0, nh):min(b1, nh)), mc, natt, ac, nc, &
                               inertia(:, b0:b1), wc, info)
            end if
            if (nsub > 1 .and. .not. step_ok(nc, natt, info, mc, ac)) then
               one_by_one = .true.
               mc = m_keep
               ac = a_keep
               wc = w_keep
               info = info_ok
               cycle
            end if
            k = k + nsub
         else
            k = k + 1
            if (nh > 1) then
               info = info_bad_call
            else if (natt == 4 .and. associated(step) .and. ni == n) then
               call step(meth, nc, k, t0 + (k - 1) * h(1), h(1), mc, ac, hc, inertia(:, b0:b1), wc, tq, &
                         wh, cb, info)
            else if (natt == 4 .and. associated(step)) then
               call chunk_moments()
               call step(meth, nc, k, t0 + (k - 1) * h(1), h(1), mc, ac, hc, ic, wc, tq, wh, cb, info)
            else if (wheels_active(wh)) then
               info = info_not_implemented
            else if (meth%family == family_exact_splittings .and. ni == n) then
               ! attitudes held as matrices (Q^T): the exact-flow splittings only
               call exact_splitting_flows(meth, nc, k, t0 + (k - 1) * h(1), h(1), mc, natt, ac, &
                                          inertia(:, b0:b1), tq, cb)
            else if (meth%family == family_exact_splittings) then
               call chunk_moments()
               call exact_splitting_flows(meth, nc, k, t0 + (k - 1) * h(1), h(1), mc, natt, ac, ic, &
                                          tq, cb)
            else
               info = info_not_implemented
            end if
         end if
         if (.not. step_ok(nc, natt, info, mc, ac)) then
            call first_failure(nc, natt, info, mc, ac, code, jfail)
            kfail = k
            return
         end if
         if (wh%nw > 0) then
            if (.not. all_finite(wh%nw * nc, hc)) then
               call first_failure(nc, wh%nw, info, mc, hc, code, jfail)
               kfail = k
               return
            end if
         end if
         call keep(k)
      end do
      if (seg%k_last < seg%nsteps) then
         carry%m(:, b0:b1) = mc
         carry%att(:, b0:b1) = ac
         if (wh%nw > 0) carry%hw(:, b0:b1) = hc
         carry%ws(:, b0:b1) = wc
         if (lay%ncol > 0) carry%vs(:, b0:b1) = reshape(sc, [nv, nc])
      end if

   contains

      !> ic: the moments of the chunk's bodies (the step routines take one column a body).
      subroutine chunk_moments()
         integer :: j

         if (allocated(ic)) return
         allocate (ic(3, nc))
         do j = 1, nc
            ic(:, j) = inertia(:, min(b0 + j - 1, ni))
         end do
      end subroutine chunk_moments

      !> The state after step kk into its slot of the kept states, if it is kept.
      subroutine keep(kk)
         integer, intent(in) :: kk
         integer :: slot

         slot = save_slot(kk, seg%nsteps, seg%save_every)
         if (slot > 0) then
            m_out(:, b0:b1, slot) = mc
            call copy_values(natt * nc, ac, att_out(1, b0, slot))
            if (wh%nw > 0) h_out(:, b0:b1, slot) = hc
            if (lay%ncol > 0) vs_out(:, b0:b1, slot) = reshape(sc, [nv, nc])
         end if
      end subroutine keep
   end subroutine chunk_steps

   !> y = x for n values (a chunk's attitudes, whole columns, copied as one run).
   pure subroutine copy_values(n, x, y)
      integer, intent(in) :: n
      real(dp), intent(in) :: x(n)
      real(dp), intent(out) :: y(n)

      y = x
   end subroutine copy_values

   !> The first body of a chunk that failed in a step: its info code, or info_non_finite for a
   !> state that is not finite.
   pure subroutine first_failure(nc, natt, info, mc, ac, code, jfail)
      integer, intent(in) :: nc, natt, info(nc)
      real(dp), intent(in) :: mc(3, nc), ac(natt, nc)
      integer, intent(out) :: code, jfail
      integer :: j

      code = info_ok
      jfail = 0
      do j = 1, nc
         code = info(j)
         if (code == info_ok .and. .not. (all_finite(3, mc(:, j)) .and. all_finite(natt, ac(:, j)))) &
            code = info_non_finite
         if (code /= info_ok) then
            jfail = j
            return
         end if
      end do
   end subroutine first_failure

   !> True when no body of the chunk failed in the step (info) and every state is finite; for a
   !> chunk of one body with fixed sizes (no loops: the time loop of one body checks every step).
   pure logical function step_ok(nc, natt, info, mc, ac) result(ok)
      integer, intent(in) :: nc, natt, info(nc)
      real(dp), intent(in) :: mc(3, nc), ac(natt, nc)

      if (nc == 1 .and. natt == 4) then
         ok = info(1) == info_ok .and. all_finite(3, mc) .and. all_finite(4, ac)
      else if (nc == 1 .and. natt == 9) then
         ok = info(1) == info_ok .and. all_finite(3, mc) .and. all_finite(9, ac)
      else
         ok = all(info == info_ok) .and. all_finite(3 * nc, mc) .and. all_finite(natt * nc, ac)
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
