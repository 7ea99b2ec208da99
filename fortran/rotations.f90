! Rotations, unit quaternions and the maps of the Lie group SO(3) shared by the integrators of
! frb.integrate. Conventions (CONTRACT.md): quaternions scalar first,
! (p0, p)(q0, q) = (p0 q0 - p.q, p0 q + q0 p + p x q), E(q) = 1 + 2 q0 hat(v) + 2 hat(v)^2,
! hat(a) b = a x b; the attitude Q = E(q) maps body to fixed coordinates.
module rotations
   use kinds, only: dp, wp => dp
   implicit none
   private

   public :: cross, hat, solve3, qmul, qconj, qrotate, qrotate_tr, quat_matrix, quat_matrix_tr, matrix_quat_tr
   public :: quat_exp, reference_turn, rot_exp_apply, quat_cayley, dexpinv_apply, dexp_apply, dexp_coefficients, quat_normalize

contains

   include 'quaternion_generic.inc'

   pure function cross(a, b) result(c)
      real(dp), intent(in) :: a(3), b(3)
      real(dp) :: c(3)
      c(1) = a(2) * b(3) - a(3) * b(2)
      c(2) = a(3) * b(1) - a(1) * b(3)
      c(3) = a(1) * b(2) - a(2) * b(1)
   end function cross

   !> hat(v), the matrix of v x .
   pure function hat(v) result(a)
      real(dp), intent(in) :: v(3)
      real(dp) :: a(3, 3)
      a(1, :) = [0.0_dp, -v(3), v(2)]
      a(2, :) = [v(3), 0.0_dp, -v(1)]
      a(3, :) = [-v(2), v(1), 0.0_dp]
   end function hat

   !> Solution of a x = b (3 x 3) by Cramer's rule; ok = .false. (and x = 0) if a is singular
   !> or its determinant overflows.
   pure subroutine solve3(a, b, x, ok)
      real(dp), intent(in) :: a(3, 3), b(3)
      real(dp), intent(out) :: x(3)
      logical, intent(out) :: ok
      real(dp) :: c(3, 3), det
      c(:, 1) = cross(a(:, 2), a(:, 3))
      c(:, 2) = cross(a(:, 3), a(:, 1))
      c(:, 3) = cross(a(:, 1), a(:, 2))
      det = dot_product(a(:, 1), c(:, 1))
      ok = det /= 0.0_dp .and. abs(det) <= huge(1.0_dp)
      if (.not. ok) then
         x = 0.0_dp
         return
      end if
      ! rows of a^-1 are the columns c(:, i) / det
      x(1) = dot_product(c(:, 1), b) / det
      x(2) = dot_product(c(:, 2), b) / det
      x(3) = dot_product(c(:, 3), b) / det
   end subroutine solve3

   pure function qconj(q) result(r)
      real(dp), intent(in) :: q(4)
      real(dp) :: r(4)
      r = [q(1), -q(2), -q(3), -q(4)]
   end function qconj

   !> E(q) v for a unit quaternion q (body -> fixed coordinates).
   pure function qrotate(q, v) result(r)
      real(dp), intent(in) :: q(4), v(3)
      real(dp) :: r(3), t(3)
      ! E(q) v = v + 2 q0 (u x v) + 2 u x (u x v),  u = q(2:4)
      t = cross(q(2:4), v)
      r = v + 2.0_dp * (q(1) * t + cross(q(2:4), t))
   end function qrotate

   !> E(q)^T v for a unit quaternion q (fixed -> body coordinates).
   pure function qrotate_tr(q, v) result(r)
      real(dp), intent(in) :: q(4), v(3)
      real(dp) :: r(3), t(3)
      t = cross(q(2:4), v)
      r = v + 2.0_dp * (-q(1) * t + cross(q(2:4), t))
   end function qrotate_tr

   !> Q^T = E(q)^T (the layout in which attitudes travel to numpy, see CONTRACT.md).
   pure function quat_matrix_tr(q) result(e)
      real(dp), intent(in) :: q(4)
      real(dp) :: e(3, 3)
      e = transpose(quat_matrix(q))
   end function quat_matrix_tr

   !> The unit quaternion q (q0 >= 0) with E(q) = Q, from qt = Q^T: the operations of
   !> frb.rotations.matrix_to_quat in its order, so its results bit for bit. Shepperd's choice:
   !> the component of largest modulus from the largest of (trace Q, Q11, Q22, Q33) (the first
   !> one on a tie), the others from the off-diagonal entries over 4 times it, then normalised.
   !> Q must be a rotation (checked before: then 4 |q_k| >= 2).
   pure function matrix_quat_tr(qt) result(q)
      real(dp), intent(in) :: qt(3, 3)
      real(dp) :: q(4)
      real(dp) :: tr, d, big, r, a1, a2, a3, s12, s13, s23, norm
      integer :: k

      tr = qt(1, 1) + qt(2, 2) + qt(3, 3)
      k = 0
      d = tr
      if (qt(1, 1) > d) then
         k = 1; d = qt(1, 1)
      end if
      if (qt(2, 2) > d) then
         k = 2; d = qt(2, 2)
      end if
      if (qt(3, 3) > d) then
         k = 3; d = qt(3, 3)
      end if
      ! 4 q_k^2: 1 + trace Q, or 1 + 2 Q_kk - trace Q
      if (k == 0) then
         big = 1 + d
      else
         big = 1 + 2 * d - tr
      end if
      big = max(big, 0.0_dp)
      r = 2 * sqrt(big)
      ! Q(i, j) = qt(j, i): 4 q0 q1 = Q32 - Q23, ..., 4 q1 q2 = Q12 + Q21, ...
      a1 = qt(2, 3) - qt(3, 2); a2 = qt(3, 1) - qt(1, 3); a3 = qt(1, 2) - qt(2, 1)
      s12 = qt(2, 1) + qt(1, 2); s13 = qt(3, 1) + qt(1, 3); s23 = qt(3, 2) + qt(2, 3)
      select case (k)
      case (0)
         q = [big, a1, a2, a3]
      case (1)
         q = [a1, big, s12, s13]
      case (2)
         q = [a2, s12, big, s23]
      case default
         q = [a3, s13, s23, big]
      end select
      q = q / r
      norm = sqrt(q(1) * q(1) + q(2) * q(2) + q(3) * q(3) + q(4) * q(4))
      q = q / norm
      if (q(1) < 0) q = -q
   end function matrix_quat_tr

   !> The unit quaternion of exp(hat psi) (rotation by |psi| about psi):
   !> (cos(a/2), sin(a/2) psi / a), a = |psi|, with Maclaurin series for small a.
   pure function quat_exp(psi) result(r)
      real(dp), intent(in) :: psi(3)
      real(dp) :: r(4), a2, a, s
      a2 = psi(1)**2 + psi(2)**2 + psi(3)**2
      if (a2 < 1.0e-4_dp) then
         ! sin(a/2)/a = 1/2 - a^2/48 + a^4/3840 - a^6/645120 (error < 1e-21 for a^2 < 1e-4)
         s = 0.5_dp - a2 * (1.0_dp / 48 - a2 * (1.0_dp / 3840 - a2 / 645120))
         r(1) = 1.0_dp - a2 * (0.125_dp - a2 * (1.0_dp / 384 - a2 / 46080))
      else
         a = sqrt(a2)
         s = sin(0.5_dp * a) / a
         r(1) = cos(0.5_dp * a)
      end if
      r(2:4) = s * psi
   end function quat_exp

   !> quat_exp(dt rate): the turn of a reference attitude at the constant rate over the time dt,
   !> also for turns whose squared components would overflow (the angle then from the components
   !> scaled by the largest, as frb's Python reference computes it; quat_exp itself otherwise).
   pure function reference_turn(dt, rate) result(r)
      real(dp), intent(in) :: dt, rate(3)
      real(dp) :: r(4), psi(3), big, a

      psi = dt * rate
      big = max(abs(psi(1)), abs(psi(2)), abs(psi(3)))
      if (big <= 1.0e150_dp) then
         r = quat_exp(psi)
         return
      end if
      a = big * sqrt((psi(1) / big)**2 + (psi(2) / big)**2 + (psi(3) / big)**2)
      r(1) = cos(0.5_dp * a)
      r(2:4) = (sin(0.5_dp * a) / a) * psi
   end function reference_turn

   !> exp(hat psi) v by Rodrigues' formula (series for small |psi|).
   pure function rot_exp_apply(psi, v) result(r)
      real(dp), intent(in) :: psi(3), v(3)
      real(dp) :: r(3)
      r = qrotate(quat_exp(psi), v)
   end function rot_exp_apply

   !> The unit quaternion of the Cayley map cay(hat a) = (1 - hat a / 2)^-1 (1 + hat a / 2):
   !> (1, a/2) / sqrt(1 + |a|^2 / 4).
   pure function quat_cayley(a) result(r)
      real(dp), intent(in) :: a(3)
      real(dp) :: r(4)
      r(1) = 1.0_dp
      r(2:4) = 0.5_dp * a
      r = r / sqrt(1.0_dp + 0.25_dp * (a(1)**2 + a(2)**2 + a(3)**2))
   end function quat_cayley

   !> dexp_psi v = v + ((1 - cos a)/a^2) psi x v + ((1 - sin a / a)/a^2) psi x (psi x v)
   !> (Krysl 2008, eq. (9)), series for small a = |psi|.
   pure function dexp_apply(psi, v) result(r)
      real(dp), intent(in) :: psi(3), v(3)
      real(dp) :: r(3), c1, c2, pv(3)
      call dexp_coefficients(psi, c1, c2)
      pv = cross(psi, v)
      r = v + c1 * pv + c2 * cross(psi, pv)
   end function dexp_apply

   !> The coefficients of dexp_psi = 1 + c1 hat psi + c2 hat psi^2 (Krysl 2008, eq. (9)):
   !> c1 = (1 - cos a)/a^2, c2 = (1 - sin a / a)/a^2, a = |psi|, Maclaurin series for small a.
   pure subroutine dexp_coefficients(psi, c1, c2)
      real(dp), intent(in) :: psi(3)
      real(dp), intent(out) :: c1, c2
      real(dp) :: a2, a
      a2 = psi(1)**2 + psi(2)**2 + psi(3)**2
      if (a2 < 1.0e-4_dp) then
         c1 = 0.5_dp - a2 * (1.0_dp / 24 - a2 * (1.0_dp / 720 - a2 / 40320))
         c2 = 1.0_dp / 6 - a2 * (1.0_dp / 120 - a2 * (1.0_dp / 5040 - a2 / 362880))
      else
         a = sqrt(a2)
         c1 = (1.0_dp - cos(a)) / a2
         c2 = (1.0_dp - sin(a) / a) / a2
      end if
   end subroutine dexp_coefficients

   !> (dexp_psi)^-1 v = v - psi x v / 2 + ((1 - (a/2) cot(a/2)) / a^2) psi x (psi x v),
   !> a = |psi| < 2 pi, series for small a.
   pure function dexpinv_apply(psi, v) result(r)
      real(dp), intent(in) :: psi(3), v(3)
      real(dp) :: r(3), a2, a, c2, pv(3)
      a2 = psi(1)**2 + psi(2)**2 + psi(3)**2
      if (a2 < 1.0e-4_dp) then
         ! (1 - (a/2) cot(a/2)) / a^2 = 1/12 + a^2/720 + a^4/30240 + a^6/1209600
         c2 = 1.0_dp / 12 + a2 * (1.0_dp / 720 + a2 * (1.0_dp / 30240 + a2 / 1209600))
      else
         a = sqrt(a2)
         c2 = (1.0_dp - 0.5_dp * a * cos(0.5_dp * a) / sin(0.5_dp * a)) / a2
      end if
      pv = cross(psi, v)
      r = v - 0.5_dp * pv + c2 * cross(psi, pv)
   end function dexpinv_apply

   pure function quat_normalize(q) result(r)
      real(dp), intent(in) :: q(4)
      real(dp) :: r(4)
      r = q / sqrt(q(1)**2 + q(2)**2 + q(3)**2 + q(4)**2)
   end function quat_normalize

end module rotations
