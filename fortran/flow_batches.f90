! The one chunk driver of the batched free flows (the f2py bindings frb_step_batch, quat_step_batch,
! their body-first forms and the integrate loops are thin calls of flow_batch). Compiled once per
! SIMD target with the lanes it drives (simd_dispatch.f90 forwards flow_batch to the target in
! use), so that the checks and the turns of the attitudes run on the wide vectors too.
!
! A batch of n bodies runs in chunks of flow_lanes_width bodies (exact_flow_lanes.free_flow_chunk,
! the lanes in lock-step), the chunks shared among the threads (parallel.f90: the chunks depend on
! the batch only, so the results do not depend on the thread count). Parameters:
! - the attitude form, by its number of components na: attitude_matrix (9, Q^T of each body) or
!   attitude_quat (4, the unit quaternion, scalar first);
! - the layout: component-first (the default) (m(3, n), attitude (3, 3, n) or (4, n): C-ordered numpy arrays
!   passed as their transposes, the chunks are used in place) or body-first (m(n, 3), attitude
!   (n, 3, 3) holding Q itself, or (n, 4): F-ordered numpy arrays, each chunk gathered first and
!   its results scattered back);
! - checked (tol, info, where given) or not: the checks (checks.f90) of every body of a chunk before its steps; a chunk
!   with an invalid body is skipped, and the batch reports its smallest invalid index;
! - nsteps: the steps of a chunk one after the other (its states stay in cache).
! Every body's arithmetic is the same in every form: the lanes' step, then the attitude turned by
! its quaternion w (rotate_matrix_tr, or q w).
module flow_batches
   use iso_c_binding, only: c_double, c_int
   use kinds, only: wp => dp
   use exact_flow, only: rotate_matrix_tr
   use exact_flow_lanes, only: free_flow_chunk, flow_lanes_width
   use checks, only: check_body_matrix, check_body_quat, input_ok
   use check_lanes, only: chunk_checks, chunk_scales
   use parallel, only: thread_count, min_parallel_work, note_invalid, first_invalid
   implicit none
   private

   public :: flow_batch, flow_turn_chunk, turn_attitudes

   !> Attitude forms, by their components per body: Q^T (3, 3) or the quaternion (4).
   integer, parameter, public :: attitude_matrix = 9, attitude_quat = 4
   !> Layouts of a batch (see the header).
   integer, parameter, public :: layout_component_first = 0, layout_body_first = 1

   integer, parameter :: nb = flow_lanes_width

   !> Body-first matrices: component k of Q^T (column by column) is component matrix_from_q(k)
   !> of Q (column by column).
   integer, parameter :: matrix_from_q(9) = [1, 4, 7, 2, 5, 8, 3, 6, 9]

contains

   ! qmul (and quat_matrix), compiled here too, so that the turns of quaternions inline it in
   ! every SIMD target (the copies in module rotations are compiled for the baseline only)
   include 'quaternion_generic.inc'

   !> nsteps steps (nsteps >= 0, default 1) of the free flow for the n bodies of a batch; m, att
   !> are read as flat arrays in the layout (default component_first, see the header), m_out,
   !> att_out written in the same. With tol, info, where: the checks first (tol: that of the
   !> attitude); info is 0 or the code of the first invalid body, whose index (from 0) is where (-1
   !> when all are valid); the bodies of a chunk with an invalid body are left unwritten.
   subroutine flow_batch(na, n, ni, nh, m, att, h, inertia, quadrature, threads, m_out, att_out, &
                         tol, info, where, nsteps, layout)
      integer, intent(in) :: na, n, ni, nh, quadrature, threads
      real(c_double), intent(in) :: m(3 * n), att(na * n), h(nh), inertia(3, ni)
      real(c_double), intent(out) :: m_out(3 * n), att_out(na * n)
      real(c_double), intent(in), optional :: tol
      integer(c_int), intent(out), optional :: info, where
      integer, intent(in), optional :: nsteps, layout
      real(c_double) :: mc(3, nb), ac(9 * nb), mo(3, nb), ao(9 * nb), ab(9), tl
      integer :: b0, nc, ic, i, k, first_bad, grab, ns
      logical :: bad, checked, body_first

      checked = present(info)
      tl = 0
      if (checked) tl = tol
      ns = 1
      if (present(nsteps)) ns = nsteps
      body_first = .false.
      if (present(layout)) body_first = layout == layout_body_first
      ! many chunks of one step: grab them 16 at a time; chunks of many steps one at a time
      grab = merge(16, 1, ns <= 1)
      first_bad = n + 1
      !$omp parallel do num_threads(thread_count(threads)) &
      !$omp if(real(n, c_double) * max(ns, 1) >= min_parallel_work) schedule(dynamic, grab) &
      !$omp default(none) private(b0, nc, i, k, mc, ac, mo, ao, bad) reduction(min: first_bad) &
      !$omp shared(na, body_first, checked, n, ni, nh, m, att, h, inertia, quadrature, ns, tl, &
      !$omp        m_out, att_out)
      do ic = 1, (n + nb - 1) / nb
         b0 = (ic - 1) * nb + 1
         nc = min(nb, n - b0 + 1)
         if (.not. body_first) then
            call chunk_steps(na, checked, nc, b0, ni, nh, m(3 * b0 - 2:3 * (b0 + nc - 1)), &
                             att(na * (b0 - 1) + 1:na * (b0 + nc - 1)), h, inertia, quadrature, &
                             ns, tl, m_out(3 * b0 - 2:3 * (b0 + nc - 1)), &
                             att_out(na * (b0 - 1) + 1:na * (b0 + nc - 1)), first_bad, bad)
            cycle
         end if
         ! ac, ao: the attitudes of the chunk as (na, nc)
         do i = 1, nc
            call gather(na, n, b0 + i - 1, m, att, mc(:, i), ac(na * (i - 1) + 1:na * i))
         end do
         call chunk_steps(na, checked, nc, b0, ni, nh, mc, ac, h, inertia, quadrature, ns, tl, &
                          mo, ao, first_bad, bad)
         if (bad) cycle
         do i = 1, nc
            do k = 1, 3
               m_out(b0 + i - 1 + n * (k - 1)) = mo(k, i)
            end do
            do k = 1, na
               att_out(b0 + i - 1 + n * (stored(na, k) - 1)) = ao(na * (i - 1) + k)
            end do
         end do
      end do
      !$omp end parallel do
      if (.not. checked) return
      info = input_ok
      where = first_invalid(first_bad, n)
      if (where < 0) return
      if (body_first) then
         call gather(na, n, first_bad, m, att, mc(:, 1), ab)
      else
         mc(:, 1) = m(3 * first_bad - 2:3 * first_bad)
         ab(1:na) = att(na * (first_bad - 1) + 1:na * first_bad)
      end if
      info = body_code(na, mc(:, 1), h(min(first_bad, nh)), inertia(:, min(first_bad, ni)), ab, tl)
   end subroutine flow_batch

   !> The steps of one chunk of nc bodies b0 .. b0 + nc - 1, component-first (m(3, nc), att
   !> holding (na, nc)): checked, the checks first (an invalid body: bad, its index into first_bad
   !> when smaller, and nothing written).
   subroutine chunk_steps(na, checked, nc, b0, ni, nh, m, att, h, inertia, quadrature, nsteps, &
                          tol, m_out, att_out, first_bad, bad)
      integer, intent(in) :: na, nc, b0, ni, nh, quadrature, nsteps
      logical, intent(in) :: checked
      real(c_double), intent(in) :: m(3, nc), att(na * nc), h(nh), inertia(3, ni), tol
      real(c_double), intent(inout) :: m_out(3, nc), att_out(na * nc)
      integer, intent(inout) :: first_bad
      logical, intent(out) :: bad
      real(c_double) :: scales(chunk_scales)
      integer :: i, s, codes(nb)
      logical :: valid

      bad = .false.
      valid = .true.
      if (checked) call chunk_checks(na, nc, b0, ni, nh, m, att, h, inertia, tol, valid, scales)
      if (.not. valid) then
         do i = 1, nc
            codes(i) = body_code(na, m(:, i), h(min(b0 + i - 1, nh)), inertia(:, min(b0 + i - 1, ni)), &
                                 att(na * (i - 1) + 1:na * i), tol)
         end do
         call note_invalid(codes(1:nc), b0, first_bad, bad)
         if (bad) return
      end if
      m_out = m
      att_out = att
      do s = 1, nsteps
         call flow_turn_chunk(na, nc, b0, nh, ni, m_out, att_out, h, inertia, quadrature)
      end do
   end subroutine chunk_steps

   !> One step of the free flow for the nc bodies b0 .. b0 + nc - 1 of a batch, in place: their
   !> momenta m(3, nc) by free_flow_chunk (the steps h(nh) and moments inertia(3, ni) of the whole
   !> batch, as there) and their attitudes att (na, nc) turned by the steps' quaternions
   !> (turn_attitudes).
   pure subroutine flow_turn_chunk(na, nc, b0, nh, ni, m, att, h, inertia, quadrature)
      integer, intent(in) :: na, nc, b0, nh, ni, quadrature
      real(c_double), intent(inout) :: m(3, nc), att(na * nc)
      real(c_double), intent(in) :: h(nh), inertia(3, ni)
      real(c_double) :: m1(3, nb), w(4, nb)

      call free_flow_chunk(nc, b0, nh, ni, m, h, inertia, quadrature, m1, w)
      m = m1(:, 1:nc)
      call turn_attitudes(na, nc, att, w)
   end subroutine flow_turn_chunk

   !> The attitudes a (na, nc) of a chunk turned by the quaternions w of their steps, in place:
   !> Q^T -> (Q E(w))^T, or q -> q w (each form with its own fixed sizes).
   pure subroutine turn_attitudes(na, nc, a, w)
      integer, intent(in) :: na, nc
      real(c_double), intent(inout) :: a(na * nc)
      real(c_double), intent(in) :: w(4, nc)
      real(c_double) :: turned(9)
      integer :: i

      if (na == attitude_matrix) then
         ! (a call: inlined here, the products of the AVX2 and AVX-512 targets were fused into
         ! vfmaddsub instructions by GCC 12's vectoriser despite -ffp-contract=off)
         do i = 1, nc
            call rotate_matrix_tr(a(9 * i - 8:9 * i), w(:, i), turned)
            a(9 * i - 8:9 * i) = turned
         end do
      else
         do i = 1, nc
            a(4 * i - 3:4 * i) = qmul(a(4 * i - 3:4 * i), w(:, i))
         end do
      end if
   end subroutine turn_attitudes

   !> The checks code of one body (checks.f90), its attitude a in the form na.
   pure integer function body_code(na, m, h, inertia, a, tol) result(code)
      integer, intent(in) :: na
      real(c_double), intent(in) :: m(3), h, inertia(3), a(na), tol

      if (na == attitude_matrix) then
         code = check_body_matrix(m, h, inertia, a, tol)
      else
         code = check_body_quat(m, h, inertia, a, tol)
      end if
   end function body_code

   !> Body b of a body-first batch of n, component-first: its momentum mb(3) and attitude ab(na).
   pure subroutine gather(na, n, b, m, att, mb, ab)
      integer, intent(in) :: na, n, b
      real(c_double), intent(in) :: m(n, 3), att(n, na)
      real(c_double), intent(out) :: mb(3), ab(na)
      integer :: k

      mb = m(b, :)
      do k = 1, na
         ab(k) = att(b, stored(na, k))
      end do
   end subroutine gather

   !> Component of the body-first attitude (Q column by column, or q) holding component k of the
   !> component-first one (Q^T column by column, or q).
   pure integer function stored(na, k)
      integer, intent(in) :: na, k

      stored = k
      if (na == attitude_matrix) stored = matrix_from_q(k)
   end function stored

end module flow_batches
