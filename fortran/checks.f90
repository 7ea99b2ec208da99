! Input checks of the batched bindings, done in the compiled loop (no numpy temporaries).
! Each function returns 0 for valid input or the code of the first problem found.
module checks
   use, intrinsic :: ieee_arithmetic, only: ieee_is_finite
   use kinds, only: dp
   implicit none
   private

   public :: check_state, check_rotation_tr, check_unit_quaternion, check_body_quat, check_body_matrix
   public :: phase_over

   integer, parameter, public :: input_ok = 0, bad_m = 1, bad_h = 2, bad_inertia_value = 3, &
                                 bad_inertia_sign = 4, bad_attitude_value = 5, bad_rotation = 6, &
                                 bad_quaternion = 7, bad_phase = 8

   !> Longest step accepted: |h| |m| / I_min (a bound on the angle the body turns, in radians)
   !> at most this. Long steps run in quadruple precision (34 digits), which leaves about 16
   !> correct digits of the angle up to here; beyond, no digit would be right (tests/test_long_steps.py).
   real(dp), parameter, public :: phase_limit = 1.0e18_dp

contains

   !> m and h finite; inertia finite and strictly positive; |h| |m| / I_min <= phase_limit.
   pure integer function check_state(m, h, inertia) result(code)
      real(dp), intent(in) :: m(3), h, inertia(3)

      code = input_ok
      if (.not. all(ieee_is_finite(m))) then
         code = bad_m
      else if (.not. ieee_is_finite(h)) then
         code = bad_h
      else if (.not. all(ieee_is_finite(inertia))) then
         code = bad_inertia_value
      else if (.not. all(inertia > 0)) then
         code = bad_inertia_sign
      else if (phase_beyond_limit(m, h, minval(inertia))) then
         code = bad_phase
      end if
   end function check_state

   !> |h| |m| > phase_limit imin (check_state). The usual case costs one product: |m| <= 2 max |m_i|.
   pure logical function phase_beyond_limit(m, h, imin) result(beyond)
      real(dp), intent(in) :: m(3), h, imin
      real(dp) :: big

      big = maxval(abs(m))
      beyond = .false.
      if (abs(h) * big <= 0.5_dp * phase_limit * imin .and. 0.5_dp * phase_limit * imin <= huge(1.0_dp)) return
      if (big == 0) return
      beyond = phase_over(h, big * norm2(m / big), imin, phase_limit)
   end function phase_beyond_limit

   !> |h| g / imin > limit for g >= 0, imin > 0, whatever the scales: the plain comparison
   !> |h| g > limit imin where neither side overflows (the operations of the flows' usual path),
   !> else from g / imin (or imin / g when that overflows).
   pure elemental logical function phase_over(h, g, imin, limit) result(over)
      real(dp), intent(in) :: h, g, imin, limit
      real(dp) :: x, y, r

      x = abs(h) * g
      y = limit * imin
      if (x <= huge(1.0_dp) .and. y <= huge(1.0_dp)) then
         over = x > y
         return
      end if
      r = g / imin
      if (r <= huge(1.0_dp)) then
         over = abs(h) * r > limit
      else
         over = abs(h) > limit * (imin / g)
      end if
   end function phase_over

   !> qt = Q^T finite, Q^T Q = 1 within tol (entrywise) and det Q > 0.
   pure integer function check_rotation_tr(qt, tol) result(code)
      real(dp), intent(in) :: qt(3, 3), tol
      real(dp) :: dev, det

      ! the six distinct entries of Q^T Q - 1 (rows of qt are the columns of Q); a NaN or an
      ! infinity in qt makes dev NaN or infinite, so the test below fails for it too
      dev = max(abs(dot_product(qt(1, :), qt(1, :)) - 1), abs(dot_product(qt(2, :), qt(2, :)) - 1), &
                abs(dot_product(qt(3, :), qt(3, :)) - 1), abs(dot_product(qt(1, :), qt(2, :))), &
                abs(dot_product(qt(1, :), qt(3, :))), abs(dot_product(qt(2, :), qt(3, :))))
      det = qt(1, 1) * (qt(2, 2) * qt(3, 3) - qt(2, 3) * qt(3, 2)) &
            - qt(1, 2) * (qt(2, 1) * qt(3, 3) - qt(2, 3) * qt(3, 1)) &
            + qt(1, 3) * (qt(2, 1) * qt(3, 2) - qt(2, 2) * qt(3, 1))
      code = input_ok
      if (dev <= tol .and. det > 0) return
      if (.not. all(ieee_is_finite(qt))) then
         code = bad_attitude_value
      else
         code = bad_rotation
      end if
   end function check_rotation_tr

   !> q finite and | |q| - 1 | <= tol.
   pure integer function check_unit_quaternion(q, tol) result(code)
      real(dp), intent(in) :: q(4), tol

      code = input_ok
      if (.not. all(ieee_is_finite(q))) then
         code = bad_attitude_value
      else if (abs(sqrt(sum(q * q)) - 1) > tol) then   ! (q finite; an overflow gives +Inf: rejected)
         code = bad_quaternion
      end if
   end function check_unit_quaternion

   !> check_state, then check_unit_quaternion: the checks of one body of a quaternion batch.
   pure integer function check_body_quat(m, h, inertia, q, tol) result(code)
      real(dp), intent(in) :: m(3), h, inertia(3), q(4), tol

      code = check_state(m, h, inertia)
      if (code == input_ok) code = check_unit_quaternion(q, tol)
   end function check_body_quat

   !> check_state, then check_rotation_tr: the checks of one body of a matrix batch.
   pure integer function check_body_matrix(m, h, inertia, qt, tol) result(code)
      real(dp), intent(in) :: m(3), h, inertia(3), qt(3, 3), tol

      code = check_state(m, h, inertia)
      if (code == input_ok) code = check_rotation_tr(qt, tol)
   end function check_body_matrix

end module checks
