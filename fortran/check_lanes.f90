! The input checks of a batch (check_batch: the bindings' check_bodies and the whole runs of
! engine_whole, and the checked chunks of flow_batches), compiled once per SIMD target like the
! lanes of the flows (meson.build; simd_dispatch.f90 forwards check_batch to the target in use).
!
! Each chunk of bodies is read in one pass (chunk_checks) that both decides whether every body is
! valid and, in the same loop, gathers the scales of the chunk (extremes of check_batch): without
! branches, so that it vectorises, and without a floating-point exception for any input. A chunk
! that this pass does not show valid is checked body by body (checks.check_body_quat,
! check_body_matrix), which decide. The results (the code, the first invalid body, the scales)
! are min / max reductions, exact in any order: the same on every target and for every thread
! count.
!
! Like the lanes of the flows, this module is compiled with -fno-trapping-math (meson.build),
! under which the compiler turns the tests of a body into selects (vectorised). No
! floating-point flag may be raised by the checks for any input (tests/test_hostile_scales.py):
! every value is replaced by 0 where it is not finite (read from its bits) before any operation
! on it, and the products are of values clamped first, so that no operation of the pass meets a
! NaN, an infinity or an overflow.
module check_lanes
   use, intrinsic :: iso_fortran_env, only: int64
   use kinds, only: dp
   use parallel, only: thread_count, min_parallel_work, first_invalid
   use checks, only: check_body_quat, check_body_matrix, capped_ratio, input_ok
   use numbers_table, only: phase_limit, attitude_tolerance, check_extremes
   implicit none
   private

   public :: check_batch, chunk_checks

   !> Bodies a chunk of check_batch checks together: 4096 bodies, about 0.1 ms of checks (many
   !> per thread in a large batch).
   integer, parameter :: check_chunk = 4096

   !> Factors of the products |h| max_i |m_i| bounded by factor_clamp (2^511) and moments by
   !> moment_clamp (2^959), so that no product of the pass overflows; a body beyond either is
   !> left to the body-by-body checks.
   real(dp), parameter :: factor_clamp = scale(1.0_dp, 511), moment_clamp = scale(1.0_dp, 959)

   !> The scales of a chunk (chunk_checks): the largest and the smallest nonzero max_i |m_i|, the
   !> smallest and the largest moment, the largest min(|h|, 2^511) min(max_i |m_i|, 2^511) and the
   !> largest of |h| and max_i |m_i| (above 2^511: the phase bound is taken body by body).
   integer, parameter, public :: chunk_scales = 6

contains

   !> The bodies b0 .. b0 + nc - 1 of a batch: m(3, nc), their attitudes att(na, nc)
   !> (quaternions, na = 4, or transposed rotation matrices, na = 9), the batch's h(nh) and
   !> inertia(3, ni) (nh and ni either 1 or the batch size). valid: every body passes
   !> check_body_quat or check_body_matrix (.false.: not shown, the caller checks body by body).
   !> scales (chunk_scales): the chunk's scales when valid. First every value is found finite
   !> from its bits (all_finite_bits, contiguous passes); a chunk with a value that is not is
   !> left to the body-by-body checks. Then one pass over the bodies: the moments positive,
   !> |h| max|m_i| <= phase_limit I_min / 2 (where check_state's phase test returns at once), and
   !> the attitude's test by the operations of check_unit_quaternion or check_rotation_tr
   !> (entries clamped to [-2, 2]: an entry beyond makes a squared row norm >= 4, refused by
   !> both). The products are of values clamped to 2^511 (2^959 for the moment), so that no
   !> operation of the pass, on finite values only, raises a floating-point exception (the
   !> clamps by the bits: clamped).
   pure subroutine chunk_checks(na, nc, b0, ni, nh, m, att, h, inertia, tol, valid, scales)
      integer, intent(in) :: na, nc, b0, ni, nh
      real(dp), intent(in) :: m(3, nc), att(na, nc), h(nh), inertia(3, ni), tol
      logical, intent(out) :: valid
      real(dp), intent(out) :: scales(chunk_scales)
      real(dp) :: ok, dev, det, a(9)
      integer(int64) :: big, small, lo, hi, phase, factor
      integer :: i, k, hs, is

      valid = .false.
      scales = 0
      hs = min(b0, nh)
      is = min(b0, ni)
      if (.not. (all_finite_bits(3 * nc, m) .and. all_finite_bits(na * nc, att) &
                 .and. all_finite_bits(min(b0 + nc - 1, nh) - hs + 1, h(hs)) &
                 .and. all_finite_bits(3 * (min(b0 + nc - 1, ni) - is + 1), inertia(1, is)))) return
      ok = 1
      big = bits(0.0_dp)
      small = bits(huge(1.0_dp))
      lo = bits(huge(1.0_dp))
      hi = bits(0.0_dp)
      phase = bits(0.0_dp)
      factor = bits(0.0_dp)
      if (nh == 1 .and. ni == 1) then
         do i = 1, nc
            call state_pass(m(1, i), m(2, i), m(3, i), h(1), inertia(1, 1), inertia(2, 1), &
                            inertia(3, 1), ok, big, small, lo, hi, phase, factor)
         end do
      else if (nh == 1) then
         ! one loop for each of the other forms, whose indices are then linear (vectorised)
         do i = 1, nc
            call state_pass(m(1, i), m(2, i), m(3, i), h(1), inertia(1, is + i - 1), &
                            inertia(2, is + i - 1), inertia(3, is + i - 1), ok, big, small, lo, hi, &
                            phase, factor)
         end do
      else if (ni == 1) then
         do i = 1, nc
            call state_pass(m(1, i), m(2, i), m(3, i), h(hs + i - 1), inertia(1, 1), inertia(2, 1), &
                            inertia(3, 1), ok, big, small, lo, hi, phase, factor)
         end do
      else
         do i = 1, nc
            call state_pass(m(1, i), m(2, i), m(3, i), h(hs + i - 1), inertia(1, is + i - 1), &
                            inertia(2, is + i - 1), inertia(3, is + i - 1), ok, big, small, lo, hi, &
                            phase, factor)
         end do
      end if
      if (na == 4) then
         do i = 1, nc
            do k = 1, 4
               a(k) = clamped(abs(att(k, i)), 2.0_dp)
            end do
            ok = merge(ok, 0.0_dp, abs(sqrt(a(1) * a(1) + a(2) * a(2) + a(3) * a(3) + a(4) * a(4)) - 1) &
                                   <= tol)
         end do
      else
         ! att(:, i): Q^T column by column, att(r + 3 (c - 1), i) = Q^T(r, c)
         do i = 1, nc
            do k = 1, 9
               a(k) = sign(clamped(abs(att(k, i)), 2.0_dp), att(k, i))
            end do
            dev = larger(larger(larger(abs(a(1) * a(1) + a(4) * a(4) + a(7) * a(7) - 1), &
                                       abs(a(2) * a(2) + a(5) * a(5) + a(8) * a(8) - 1)), &
                                larger(abs(a(3) * a(3) + a(6) * a(6) + a(9) * a(9) - 1), &
                                       abs(a(1) * a(2) + a(4) * a(5) + a(7) * a(8)))), &
                         larger(abs(a(1) * a(3) + a(4) * a(6) + a(7) * a(9)), &
                                abs(a(2) * a(3) + a(5) * a(6) + a(8) * a(9))))
            det = a(1) * (a(5) * a(9) - a(8) * a(6)) - a(4) * (a(2) * a(9) - a(8) * a(3)) &
                  + a(7) * (a(2) * a(6) - a(5) * a(3))
            ok = merge(ok, 0.0_dp, dev <= tol .and. det > 0)
         end do
      end if
      valid = ok > 0
      scales = [value(big), value(small), value(lo), value(hi), value(phase), value(factor)]
   end subroutine chunk_checks

   !> One body's finite state (m, h, its moments i1, i2, i3) in chunk_checks: ok <- 0 unless the
   !> moments are positive and the phase within the clamps; its scales folded into big, small,
   !> lo, hi, phase and factor, held as their bits (bits): the order of doubles >= 0 is that of
   !> their bits as integers (IEEE 754-2019, section 3.4: the biased exponent above the
   !> fraction), and an integer max / min reduction vectorises. (A moment <= 0 makes the chunk
   !> invalid: its scales are not used.)
   pure subroutine state_pass(m1, m2, m3, hb, i1, i2, i3, ok, big, small, lo, hi, phase, factor)
      real(dp), intent(in) :: m1, m2, m3, hb, i1, i2, i3
      real(dp), intent(inout) :: ok
      integer(int64), intent(inout) :: big, small, lo, hi, phase, factor
      real(dp) :: hv, mb, imin, imax, product

      hv = abs(hb)
      mb = larger(larger(abs(m1), abs(m2)), abs(m3))
      imin = smaller(smaller(i1, i2), i3)
      imax = larger(larger(i1, i2), i3)
      product = clamped(hv, factor_clamp) * clamped(mb, factor_clamp)
      ok = merge(ok, 0.0_dp, imin > 0)
      ok = merge(ok, 0.0_dp, larger(hv, mb) <= factor_clamp)
      ok = merge(ok, 0.0_dp, imin <= moment_clamp)
      ok = merge(ok, 0.0_dp, product <= 0.5_dp * phase_limit * clamped(imin, moment_clamp))
      big = max(big, bits(mb))
      small = min(small, bits(merge(mb, huge(1.0_dp), mb > 0)))
      lo = min(lo, bits(imin))
      hi = max(hi, bits(imax))
      phase = max(phase, bits(product))
      factor = max(factor, bits(larger(hv, mb)))
   end subroutine state_pass

   !> True when the n values of x are all finite, read from their bits (the exponent field all
   !> ones: an infinity or a NaN), so that no floating-point exception is raised for any value.
   pure logical function all_finite_bits(n, x)
      integer, intent(in) :: n
      real(dp), intent(in) :: x(n)
      integer(int64), parameter :: exponent_bits = int(z'7FF0000000000000', int64)
      integer(int64) :: largest
      integer :: j

      largest = 0
      do j = 1, n
         largest = max(largest, iand(transfer(x(j), exponent_bits), exponent_bits))
      end do
      all_finite_bits = largest < exponent_bits
   end function all_finite_bits

   !> The larger of a and b, and the smaller, for values that are not NaN (a select: a min / max
   !> reduction of them vectorises).
   pure elemental real(dp) function larger(a, b)
      real(dp), intent(in) :: a, b

      larger = merge(a, b, a >= b)
   end function larger

   pure elemental real(dp) function smaller(a, b)
      real(dp), intent(in) :: a, b

      smaller = merge(a, b, a <= b)
   end function smaller

   !> x clamped to [0, limit] (limit > 0) by the bits (bits) of x: no floating-point operation
   !> on x, so that the compiler, which under -fno-trapping-math may move a product into both
   !> arms of a select, forms no product of an unclamped value (an overflow flag).
   pure elemental real(dp) function clamped(x, limit)
      real(dp), intent(in) :: x, limit

      clamped = value(max(0_int64, min(bits(x), bits(limit))))
   end function clamped

   !> The bits of x as an integer, and the double of bits i.
   pure elemental integer(int64) function bits(x)
      real(dp), intent(in) :: x

      bits = transfer(x, bits)
   end function bits

   pure elemental real(dp) function value(i)
      integer(int64), intent(in) :: i

      value = transfer(i, value)
   end function value

   !> The checks of n bodies: m(3, n), their attitudes att(natt, n) (unit quaternions, natt = 4,
   !> or transposed rotation matrices, natt = 9, within the shared attitude_tolerance), the step
   !> lengths h(nh) (the longest free flow of a step, for the phase limit) and the moments
   !> inertia(3, ni) (nh, ni 1 or n). code is input_ok, or the code of the first invalid body,
   !> whose index (from 1) is body (0 when all are valid). For valid bodies, extremes holds the
   !> scales of the batch: the largest max_i |m_i| of a body, the smallest nonzero one (huge when
   !> all are zero), the smallest and the largest moment, and a bound on the largest
   !> |h| max_i |m_i| / I_min (the largest |h| max_i |m_i| over the smallest moment, huge where
   !> it exceeds huge).
   !> The bodies go in chunks of check_chunk shared among the threads (dynamic: a thread that
   !> another process delays holds up no more than one chunk): each chunk is checked and gives
   !> its scales in one pass (chunk_checks), body by body only when that fails (a chunk with an
   !> invalid body gives no scales: they are not used). The smallest invalid index and the scales
   !> are min / max reductions, exact in any order: the same results for every thread count. No
   !> floating-point exception for any input: the products |h| max_i |m_i| are of factors clamped
   !> to 2^511; when a factor exceeds that, the bound is taken again body by body without an
   !> overflow (capped_ratio).
   subroutine check_batch(natt, n, m, att, nh, h, ni, inertia, threads, code, body, extremes)
      integer, intent(in) :: natt, n, nh, ni, threads
      real(dp), intent(in) :: m(3, n), att(natt, n), h(nh), inertia(3, ni)
      integer, intent(out) :: code, body
      real(dp), intent(out) :: extremes(check_extremes)
      real(dp) :: big, small, imin, imax, phase, factor, s(chunk_scales)
      integer :: b, b0, nc, ic, first_bad
      logical :: valid

      first_bad = n + 1
      big = 0
      small = huge(1.0_dp)
      imin = huge(1.0_dp)
      imax = 0
      phase = 0
      factor = 0
      !$omp parallel do num_threads(thread_count(threads)) if(n >= min_parallel_work) &
      !$omp schedule(dynamic) default(none) private(b, b0, nc, s, valid) &
      !$omp reduction(min: first_bad, small, imin) reduction(max: big, imax, phase, factor) &
      !$omp shared(n, natt, ni, nh, m, att, h, inertia)
      do ic = 1, (n + check_chunk - 1) / check_chunk
         b0 = (ic - 1) * check_chunk + 1
         nc = min(check_chunk, n - b0 + 1)
         ! (m(1, b0), att(1, b0): the chunk's columns, by sequence association)
         call chunk_checks(natt, nc, b0, ni, nh, m(1, b0), att(1, b0), h, inertia, &
                           attitude_tolerance, valid, s)
         if (.not. valid) then
            do b = b0, b0 + nc - 1
               if (body_code(b) /= input_ok) then
                  first_bad = min(first_bad, b)
                  exit
               end if
            end do
            if (first_bad <= b0 + nc - 1) cycle
         end if
         big = max(big, s(1))
         small = min(small, s(2))
         imin = min(imin, s(3))
         imax = max(imax, s(4))
         phase = max(phase, s(5))
         factor = max(factor, s(6))
      end do
      !$omp end parallel do
      code = input_ok
      body = 0
      extremes = 0
      if (first_invalid(first_bad, n) >= 0) then
         body = first_bad
         code = body_code(first_bad)
         return
      end if
      ! (a bound on the largest |h| max_i |m_i| / I_min, without a division a body)
      if (factor <= factor_clamp) then
         phase = capped_ratio(phase, 1.0_dp, imin)
      else
         phase = 0
         do b = 1, n
            phase = max(phase, capped_ratio(abs(h(min(b, nh))), maxval(abs(m(:, b))), imin))
         end do
      end if
      extremes = [big, small, imin, imax, phase]

   contains

      pure integer function body_code(b)
         integer, intent(in) :: b

         if (natt == 4) then
            body_code = check_body_quat(m(:, b), h(min(b, nh)), inertia(:, min(b, ni)), att(:, b), &
                                        attitude_tolerance)
         else
            body_code = check_body_matrix(m(:, b), h(min(b, nh)), inertia(:, min(b, ni)), att(:, b), &
                                          attitude_tolerance)
         end if
      end function body_code
   end subroutine check_batch

end module check_lanes
