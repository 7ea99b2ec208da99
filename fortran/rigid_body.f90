! Exact (and semi-exact) flow of the free rigid body
!     m' = m x I^-1 m,   Q' = Q hat(I^-1 m)      (seed 004, eqs. (1), (2)),
! with the attitude as a rotation matrix (frb_step) or a unit quaternion (quat_step).
!
! Method (seed 004, sections 1.2-1.4, with the frame chosen for robustness):
! * m(t) by Jacobi elliptic functions (eqs. (4), (5)); case (i) circulates around axis a = 1,
!   case (ii) around a = 3, both written with the same pattern
!       m_a = sigma B_ab dn(u),  m_2 = B_2a sn(u),  m_b = B_ba cn(u),  u = lambda t - nu,
!   where b is the other extreme axis and sigma = sign(m_a); the separatrix (case (iii)) uses
!   sech and tanh with independent signs of m_1 and m_3.
! * Q(t) = Q0 P(0)^T Y(psi) P(t) (eq. (6)) with the frame P(t) the minimal rotation taking m(t)
!   to e = sigma e_a. Since sigma m_a >= 0 the frame never degenerates (unlike the frame built
!   from m and m', which is undefined on principal axes). For this frame (derivation in the
!   project notes, check by the ODE tests) the angle obeys
!       psi' = 1/I_a + D_a / (1 + mu),   mu = sigma m_a = B_ab dn(u),   D_a = 2T - 1/I_a,
!   so psi = t/I_a + (D_a/lambda) [J(u1) - J(u0)] with J(u) = int_0^u dv/(1 + B dn v).
! * J is evaluated in closed form by Carlson's RF, RJ (exact, quadrature = 0) or by
!   Gauss-Legendre quadrature in the amplitude (semi-exact, quadrature = np nodes, order 2 np).
! All invariants (Delta_j, 1 - k^2, ...) are formed without cancellation (NUMERICS.md).
module frb_rigid_body
   use frb_kinds, only: dp, pi
   use frb_elliptic, only: agm_t, agm_setup, jacobi_reduced, carlson_rf, carlson_rj, &
                           gl_node, gl_weight
   implicit none
   private

   public :: free_flow, free_flow_unit, frb_step_one, quat_step_one
   public :: quat_mul, quat_to_matrix

contains

   !> Quaternion product (p0, p)(q0, q) = (p0 q0 - p.q, p0 q + q0 p + p x q), scalar first.
   pure function quat_mul(p, q) result(r)
      real(dp), intent(in) :: p(4), q(4)
      real(dp) :: r(4)

      r(1) = p(1) * q(1) - p(2) * q(2) - p(3) * q(3) - p(4) * q(4)
      r(2) = p(1) * q(2) + q(1) * p(2) + p(3) * q(4) - p(4) * q(3)
      r(3) = p(1) * q(3) + q(1) * p(3) + p(4) * q(2) - p(2) * q(4)
      r(4) = p(1) * q(4) + q(1) * p(4) + p(2) * q(3) - p(3) * q(2)
   end function quat_mul

   !> Rotation matrix E(q) = 1 + 2 q0 hat(v) + 2 hat(v)^2 of a unit quaternion (eq. (10)).
   pure function quat_to_matrix(q) result(r)
      real(dp), intent(in) :: q(4)
      real(dp) :: r(3, 3)
      real(dp) :: w, x, y, z

      w = q(1); x = q(2); y = q(3); z = q(4)
      r(1, 1) = 1 - 2 * (y * y + z * z)
      r(2, 2) = 1 - 2 * (x * x + z * z)
      r(3, 3) = 1 - 2 * (x * x + y * y)
      r(1, 2) = 2 * (x * y - w * z)
      r(2, 1) = 2 * (x * y + w * z)
      r(1, 3) = 2 * (x * z + w * y)
      r(3, 1) = 2 * (x * z - w * y)
      r(2, 3) = 2 * (y * z - w * x)
      r(3, 2) = 2 * (y * z + w * x)
   end function quat_to_matrix

   !> atan(w z) / w, continuous at w = 0.
   pure elemental function atan_ratio(w, z) result(val)
      real(dp), intent(in) :: w, z
      real(dp) :: val

      if (w * z == 0) then
         val = z
      else
         val = atan(w * z) / w
      end if
   end function atan_ratio

   !> J(phi) = int_0^phi dtheta / (D (1 + B D)),  D = sqrt(1 - k^2 sin^2 theta),
   !> for |phi| <= pi/2 (and slightly beyond) from s = sin(phi), c = cos(phi), d = D(phi).
   !> c0 = 1 - B^2 > 0 and c1 = B^2 k^2. Two exact forms, chosen so that nothing cancels:
   !> * B^2 >= 1/4:  J = s^3 RJ(c^2, d^2, 1, 1 + c0 s^2/B^2) / (3 B^2)
   !>                    + (B/w) atan(w s c (c0 + c1 s^2) / ((1 + B d)(c0 B d c^2 + (c0 + c1) s^2))),
   !>   w = sqrt(c0 (c0 + c1)); it follows from 1/(1 + B D) = (1 - B D)/(c0 + c1 sin^2) and the
   !>   transformation Pi(n) + Pi(k^2/n) = F + elementary (DLMF 19.7.9) with n = -c1/c0;
   !>   both terms are positive, and no term grows as c0 -> 0 (momentum near the axis a).
   !> * B^2 < 1/4:   J = Pi(phi, -c1/c0, k)/c0 - B atan2(w s, c0 c)/w.
   pure recursive function jint(s, c, d, bb, c0, c1, kp) result(val)
      real(dp), intent(in) :: s, c, d, bb, c0, c1, kp
      real(dp) :: val
      real(dp) :: b2, w, z, x, y

      b2 = bb * bb
      w = sqrt(c0 * (c0 + c1))
      x = c * c; y = d * d
      if (b2 >= 0.25_dp) then
         val = s**3 * carlson_rj(x, y, 1.0_dp, 1 + c0 * s * s / b2) / (3 * b2)
         z = s * c * (c0 + c1 * s * s) / ((1 + bb * d) * (c0 * bb * d * x + (c0 + c1) * s * s))
         val = val + bb * atan_ratio(w, z)
      else if (c < 0) then
         ! Carlson's form of Pi holds for |phi| <= pi/2 only: J(phi) = 2 J(pi/2) - J(pi - phi)
         val = sign(2 * jint(1.0_dp, 0.0_dp, kp, bb, c0, c1, kp), s) - jint(s, -c, d, bb, c0, c1, kp)
      else
         val = s * carlson_rf(x, y, 1.0_dp)
         if (c1 > 0) val = val - c1 / (3 * c0) * s**3 * carlson_rj(x, y, 1.0_dp, (c0 + c1 * s * s) / c0)
         val = val / c0 - bb * atan2(w * s, c0 * c) / w
      end if
   end function jint

   !> The same integral between two amplitudes by Gauss-Legendre quadrature with np nodes.
   pure function jint_gauss(phi0, phi1, bb, kp, np) result(val)
      real(dp), intent(in) :: phi0, phi1, bb, kp
      integer, intent(in) :: np
      real(dp) :: val
      real(dp) :: th, s, c, d
      integer :: i

      val = 0
      do i = 1, np
         th = phi0 + gl_node(i, np) * (phi1 - phi0)
         s = sin(th); c = cos(th)
         d = sqrt(c * c + kp * kp * s * s)
         val = val + gl_weight(i, np) / (d * (1 + bb * d))
      end do
      val = val * (phi1 - phi0)
   end function jint_gauss

   !> Frame quaternion p with E(p) m = e, e = sigma e_a: the minimal rotation
   !> p = (1 + mu, m x e) / sqrt(2 (1 + mu)), mu = m . e >= 0.
   pure function frame_quat(m, ia, sigma, mu) result(p)
      real(dp), intent(in) :: m(3), sigma, mu
      integer, intent(in) :: ia
      real(dp) :: p(4)
      real(dp) :: nrm

      nrm = 1 / sqrt(2 * (1 + mu))
      p(1) = (1 + mu) * nrm
      if (ia == 1) then
         p(2) = 0; p(3) = sigma * m(3) * nrm; p(4) = -sigma * m(2) * nrm
      else
         p(2) = sigma * m(2) * nrm; p(3) = -sigma * m(1) * nrm; p(4) = 0
      end if
   end function frame_quat

   !> Rotation about the constant body axis omega = m/I (m along a principal axis, or I1 = I3).
   pure subroutine uniform_rotation(m0, tau, ci, m1, w)
      real(dp), intent(in) :: m0(3), tau, ci(3)
      real(dp), intent(out) :: m1(3), w(4)
      real(dp) :: omega(3), om, half

      omega = m0 / ci
      om = norm2(omega)
      half = tau * om / 2
      m1 = m0
      w(1) = cos(half)
      w(2:4) = omega * (sin(half) / om)
   end subroutine uniform_rotation

   !> One step of the free rigid body for |m0| = 1 and 0 < ci(1) <= ci(2) <= ci(3), over time tau.
   !> Returns m1 = m(tau) and the quaternion w with Q(tau) = Q0 E(w), q(tau) = q0 w.
   !> quadrature = 0: exact; 1..10: semi-exact with that many Gauss-Legendre nodes.
   pure subroutine free_flow_unit(m0, tau, ci, quadrature, m1, w)
      real(dp), intent(in) :: m0(3), tau, ci(3)
      integer, intent(in) :: quadrature
      real(dp), intent(out) :: m1(3), w(4)
      real(dp) :: i21, i31, i32, x(3), d1, d2, d3, da, db, ia2, ib2, dcoef
      real(dp) :: bab, bba, b2a, lam, sigma, c0, c1, k, kp, sn0, cn0, dn0, sr, cr
      real(dp) :: r0, xr, jp, r1, s1, cc1, dd1, par, dj, psi, phi0, phi1, p0(4), p1(4), y(4)
      real(dp) :: sigb, lam_s, u0, u1, beta
      integer :: ia, ib
      type(agm_t) :: g

      i21 = ci(2) - ci(1); i31 = ci(3) - ci(1); i32 = ci(3) - ci(2)
      x = m0 * m0
      ! G^2 - 2 T I_j without cancellation (NUMERICS.md): d1, d3 >= 0, d2 of either sign
      d1 = x(2) * i21 / ci(2) + x(3) * i31 / ci(3)
      d3 = x(1) * i31 / ci(1) + x(2) * i32 / ci(2)
      d2 = x(3) * i32 / ci(3) - x(1) * i21 / ci(1)
      if (d1 <= 0 .or. d3 <= 0 .or. (m0(1) == 0 .and. m0(3) == 0)) then
         call uniform_rotation(m0, tau, ci, m1, w)
         return
      end if
      if (d2 > 0) then           ! case (ii): circulation around axis 3
         ia = 3; ib = 1; da = d3; db = d1; ia2 = i32; ib2 = i21; dcoef = d3 / ci(3)
      else                       ! case (i) and the separatrix: around axis 1
         ia = 1; ib = 3; da = d1; db = d3; ia2 = i21; ib2 = i32; dcoef = -d1 / ci(1)
      end if
      bab = sqrt(ci(ia) * db / i31)
      bba = sqrt(ci(ib) * da / i31)
      b2a = sqrt(ci(2) * da / ia2)
      lam = sqrt(db * ia2 / (ci(1) * ci(2) * ci(3)))
      sigma = sign(1.0_dp, m0(ia))
      c0 = bba * bba                ! 1 - B^2 with B = bab

      if (d2 == 0) then
         ! Separatrix: m = (sigma B13 sech u, B21 tanh u, sigb B31 sech u), lambda = sigma sigb lambda3
         if (m0(1) == 0 .or. m0(3) == 0) then
            call uniform_rotation(m0, tau, ci, m1, w)
            return
         end if
         sigb = sign(1.0_dp, m0(3))
         lam_s = sigma * sigb * lam
         u0 = asinh((m0(2) / b2a) / (abs(m0(3)) / bba))
         u1 = u0 + lam_s * tau
         m1(1) = sigma * bab / cosh(u1)
         m1(2) = b2a * tanh(u1)
         m1(3) = sigb * bba / cosh(u1)
         if (quadrature == 0) then
            ! J(u) = u - (2B/sqrt(1-B^2)) atan(sqrt((1-B)/(1+B)) tanh(u/2))
            beta = bba / (1 + bab)
            dj = lam_s * tau - 2 * bab / bba * (atan(beta * tanh(u1 / 2)) - atan(beta * tanh(u0 / 2)))
         else
            dj = jint_gauss(atan(sinh(u0)), atan(sinh(u1)), bab, 0.0_dp, quadrature)
         end if
         psi = tau / ci(1) + dcoef / lam_s * dj
      else
         k = sqrt(da * ib2 / (db * ia2))
         kp = sqrt(abs(d2) * i31 / (db * ia2))   ! 1 - k^2 without cancellation
         g = agm_setup(k, kp)
         sn0 = m0(2) / b2a; cn0 = m0(ib) / bba; dn0 = abs(m0(ia)) / bab
         ! u0 = 2 j0 K + r0 with |r0| <= K, j0 in {0, 1}; F from (sn, cn, dn) directly
         if (cn0 < 0) then
            par = -1; sr = -sn0; cr = -cn0
         else
            par = 1; sr = sn0; cr = cn0
         end if
         r0 = sr * carlson_rf(cr * cr, dn0 * dn0, 1.0_dp)
         xr = r0 + sigma * lam * tau
         jp = anint(xr / (2 * g%quarter))
         r1 = xr - 2 * jp * g%quarter
         call jacobi_reduced(r1, g, s1, cc1, dd1)
         if (mod(jp, 2.0_dp) /= 0) par = -par
         m1(ia) = sigma * bab * dd1
         m1(2) = par * b2a * s1
         m1(ib) = par * bba * cc1
         c1 = bab * bab * k * k
         if (quadrature == 0) then
            dj = jint(s1, cc1, dd1, bab, c0, c1, kp) - jint(sr, cr, dn0, bab, c0, c1, kp)
            if (jp /= 0) dj = dj + 2 * jp * jint(1.0_dp, 0.0_dp, kp, bab, c0, c1, kp)
         else
            phi0 = atan2(sr, cr)
            phi1 = jp * pi + atan2(s1, cc1)
            dj = jint_gauss(phi0, phi1, bab, kp, quadrature)
         end if
         psi = tau / ci(ia) + dcoef / (sigma * lam) * dj
      end if

      p0 = frame_quat(m0, ia, sigma, abs(m0(ia)))
      p1 = frame_quat(m1, ia, sigma, abs(m1(ia)))
      y = 0
      y(1) = cos(psi / 2)
      y(1 + ia) = sigma * sin(psi / 2)
      p0(2:4) = -p0(2:4)
      w = quat_mul(quat_mul(p0, y), p1)
   end subroutine free_flow_unit

   !> Free flow for any momentum and any order of positive inertia moments.
   !> Rescales m -> m/|m|, t -> |m| t / I_max (seed 004, section 3.1), and sorts the moments
   !> with a signed permutation of determinant +1 (an odd permutation reverses the cross product,
   !> so one axis is also flipped). Returns m(h) and w with Q(h) = Q E(w), q(h) = q w.
   pure subroutine free_flow(m, h, inertia, quadrature, m_out, w)
      real(dp), intent(in) :: m(3), h, inertia(3)
      integer, intent(in) :: quadrature
      real(dp), intent(out) :: m_out(3), w(4)
      integer :: perm(3), t, i
      real(dp) :: sgn(3), g, ms(3), cs(3), m1s(3), ws(4), imax

      g = norm2(m)
      if (g == 0 .or. h == 0) then
         m_out = m
         w = [1.0_dp, 0.0_dp, 0.0_dp, 0.0_dp]
         return
      end if
      perm = [1, 2, 3]
      sgn = 1
      ! sort by insertion; each swap flips the sign that makes the permutation proper
      if (inertia(perm(2)) < inertia(perm(1))) then
         t = perm(1); perm(1) = perm(2); perm(2) = t; sgn(3) = -sgn(3)
      end if
      if (inertia(perm(3)) < inertia(perm(2))) then
         t = perm(2); perm(2) = perm(3); perm(3) = t; sgn(3) = -sgn(3)
      end if
      if (inertia(perm(2)) < inertia(perm(1))) then
         t = perm(1); perm(1) = perm(2); perm(2) = t; sgn(3) = -sgn(3)
      end if
      imax = inertia(perm(3))
      do i = 1, 3
         ms(i) = sgn(i) * m(perm(i)) / g
         cs(i) = inertia(perm(i)) / imax
      end do
      call free_flow_unit(ms, g * h / imax, cs, quadrature, m1s, ws)
      w(1) = ws(1)
      do i = 1, 3
         m_out(perm(i)) = sgn(i) * m1s(i) * g
         w(1 + perm(i)) = sgn(i) * ws(1 + i)
      end do
   end subroutine free_flow

   !> frb_step: attitude as a rotation matrix. qt and qt_out hold the TRANSPOSE of Q
   !> (the layout of a C-ordered numpy array seen from Fortran).
   pure subroutine frb_step_one(m, qt, h, inertia, quadrature, m_out, qt_out)
      real(dp), intent(in) :: m(3), qt(3, 3), h, inertia(3)
      integer, intent(in) :: quadrature
      real(dp), intent(out) :: m_out(3), qt_out(3, 3)
      real(dp) :: w(4), e(3, 3)

      call free_flow(m, h, inertia, quadrature, m_out, w)
      e = quat_to_matrix(w)
      ! Q_out = Q E(w)  =>  Q_out^T = E(w)^T Q^T
      qt_out = matmul(transpose(e), qt)
   end subroutine frb_step_one

   !> quat_step: attitude as a unit quaternion, scalar first; q_out = q w.
   pure subroutine quat_step_one(m, q, h, inertia, quadrature, m_out, q_out)
      real(dp), intent(in) :: m(3), q(4), h, inertia(3)
      integer, intent(in) :: quadrature
      real(dp), intent(out) :: m_out(3), q_out(4)
      real(dp) :: w(4)

      call free_flow(m, h, inertia, quadrature, m_out, w)
      q_out = quat_mul(q, w)
   end subroutine quat_step_one

end module frb_rigid_body
