! Exact (and semi-exact) flow of the free rigid body
!     m' = m x I^-1 m,   Q' = Q hat(I^-1 m)      (Celledoni and Zanna 2010, eqs. (1), (2);
! E. Celledoni, A. Zanna, "FRB-FORTRAN routines for the exact computation of free rigid body
! motions", ACM TOMS 37(2), article 23, 2010 (Algorithm 903)),
! with the attitude as a rotation matrix (frb_step) or a unit quaternion (quat_step).
!
! Method (Celledoni and Zanna 2010, sections 1.2-1.4, with the frame chosen for robustness):
! * m(t) by Jacobi elliptic functions (eqs. (4), (5)); case (i) circulates around axis a = 1,
!   case (ii) around a = 3, both written with the same pattern
!       m_a = sigma B_ab dn(u),  m_2 = B_2a sn(u),  m_b = B_ba cn(u),  u = lambda t - nu,
!   where b is the other extreme axis and sigma = sign(m_a); the separatrix (case (iii)) uses
!   sech and tanh with independent signs of m_1 and m_3.
! * Q(t) = Q0 P(0)^T Y(psi) P(t) (eq. (6)) with the frame P(t) the minimal rotation taking m(t)
!   to e = sigma e_a. Since sigma m_a >= 0 the frame never degenerates (unlike the frame built
!   from m and m', which is undefined on principal axes). For this frame (derived from
!   psi' = 2T + 2 e.(p^-1)' p, checked against an ODE solver by the tests) the angle obeys
!       psi' = 1/I_a + D_a / (1 + mu),   mu = sigma m_a = B_ab dn(u),   D_a = 2T - 1/I_a,
!   so psi = t/I_a + (D_a/lambda) [J(u1) - J(u0)] with J(u) = int_0^u dv/(1 + B dn v).
! * J is evaluated in closed form by Carlson's RF, RJ (exact, quadrature = 0) or by
!   Gauss-Legendre quadrature in the amplitude (semi-exact, quadrature = np nodes, order 2 np).
! * Steps with |v| = |lambda t| <= K (all short steps) go from (sn, cn, dn)(u0), read off m0, to
!   u0 + v by the addition formulas, with (sn, cn, dn)(v) from the Maclaurin series of sn for
!   |v| <= 0.24 (no AGM) and J(u0 + v) - J(u0) from one RJ at v plus the addition term of Pi
!   (angle_increment); other steps, and those where the addition formulas would amplify
!   rounding (near the separatrix), use the phase u0 = F(phi0) and both ends.
! All invariants (Delta_j, 1 - k^2, ...) are formed without cancellation (as products of
! differences of the moments, never as differences of nearly equal products).
! * Very long steps (|h| |m| / I_min > long_step_threshold) are computed in quadruple precision
!   (exact_flow_qp, the same code instantiated for kind qp): the phase lambda t and the
!   angle psi grow linearly with t, so double precision would lose |h| |m| / I_min ulps.
module exact_flow
   use kinds, only: dp, qp, wp => dp
   use, intrinsic :: ieee_arithmetic, only: ieee_value, ieee_quiet_nan
   use checks, only: phase_limit, phase_over
   use numbers_table, only: ratio_threshold, long_step_threshold
   use elliptic_functions, only: agm_t, agm_setup, jacobi_reduced, jacobi_series, jacobi_series_max, &
                           ellf_sc, carlson_rj, &
                           gl_node, gl_weight
   use exact_flow_qp, only: free_flow_unit_qp => free_flow_unit
   use rotations, only: qmul, quat_matrix
   use lane_math, only: lane_sincos, lane_atan, lane_atanc, lane_atan2
   implicit none
   private

   public :: free_flow, frb_step_one, quat_step_one, rotate_matrix_tr
   public :: flow_prep_t, flow_prepare, flow_finish, path_unit

   !> Steps with |h| |m| / I_min above long_step_threshold radians (a shared number) run in
   !> quadruple precision.
   public :: long_step_threshold
   !> Bodies with I_max / I_min above ratio_threshold (1e150, numbers_table) also run in
   !> quadruple precision (in double precision the product of the scaled moments, down to
   !> (I_min / I_max)^2, would underflow).
   public :: ratio_threshold
   !> Steps with |h| |m| / I_min above this give NaN (path_refused): no digit of the angle would be
   !> right. The public entry points refuse beyond checks' phase_limit (half of it) with an
   !> error first; the loops that meet such a step later report the non-finite state.
   real(dp), parameter :: refuse_threshold = 2 * phase_limit
   !> split_norm takes |v| = sqrt(v . v) directly where v . v lies in this range (no square that
   !> matters underflows, none overflows); outside it, it scales v first.
   real(dp), parameter, public :: norm_sq_min = 1.0e-290_dp, norm_sq_max = 1.0e290_dp
   !> One body's flow after scaling and sorting (flow_prepare).
   integer, parameter :: path_trivial = 0, path_unit = 1, path_long = 2, path_refused = 3
   type :: flow_prep_t
      integer :: path
      integer :: perm(3)         ! sorted moments: inertia(perm(1)) <= inertia(perm(2)) <= ...
      real(dp) :: sgn(3)         ! signs of the proper signed permutation
      real(dp) :: g              ! |m|
      real(dp) :: ms(3)          ! unit momentum in the sorted frame
      real(dp) :: tau            ! scaled time |m| h / I_max
      real(dp) :: cs(3)          ! sorted moments / I_max
   end type flow_prep_t

   include 'exact_flow_generic.inc'

   !> Free flow for any momentum and any order of positive inertia moments.
   !> Rescales m -> m/|m|, t -> |m| t / I_max (Celledoni and Zanna 2010, section 3.1), and sorts the moments
   !> with a signed permutation of determinant +1 (an odd permutation reverses the cross product,
   !> so one axis is also flipped). Returns m(h) and w with Q(h) = Q E(w), q(h) = q w.
   pure subroutine free_flow(m, h, inertia, quadrature, m_out, w)
      real(dp), intent(in) :: m(3), h, inertia(3)
      integer, intent(in) :: quadrature
      real(dp), intent(out) :: m_out(3), w(4)
      type(flow_prep_t) :: p
      real(dp) :: m1s(3), ws(4)

      call flow_prepare(m, h, inertia, p)
      if (p%path == path_trivial) then
         m_out = m
         w = [1.0_dp, 0.0_dp, 0.0_dp, 0.0_dp]
         return
      end if
      if (p%path == path_refused) then
         m_out = ieee_value(1.0_dp, ieee_quiet_nan)
         w = m_out(1)
         return
      end if
      if (p%path == path_long) then
         call long_step(m, h, inertia, p%perm, p%sgn, quadrature, m1s, ws)
      else
         call free_flow_unit(p%ms, p%tau, p%cs, quadrature, m1s, ws)
      end if
      call flow_finish(p, m1s, ws, m_out, w)
   end subroutine free_flow

   !> The scaling and sorting of free_flow (also used by the batched flows, exact_flow_lanes): the
   !> unit momentum p%ms, time p%tau and moments p%cs of the unit-norm step (path_unit), or path_trivial (m = 0 or h = 0: nothing moves), or
   !> path_long (quadruple precision, long_step: long steps, extreme ratios of the moments, and
   !> scales where the double-precision scaling would leave the normal range), or path_refused.
   pure subroutine flow_prepare(m, h, inertia, p)
      real(dp), intent(in) :: m(3), h, inertia(3)
      type(flow_prep_t), intent(out) :: p
      integer :: t, i
      real(dp) :: mu(3), imax, hs

      call split_norm(m, p%g, mu)
      p%perm = [1, 2, 3]
      p%sgn = 1
      if (p%g == 0 .or. h == 0) then
         p%path = path_trivial
         return
      end if
      p%path = path_unit
      if (inertia(1) <= inertia(2) .and. inertia(2) <= inertia(3)) then
         ! moments already in order (the usual case): no permutation
         p%ms = mu
         imax = inertia(3)
         p%cs = inertia / imax
      else
         ! sort by insertion; each swap flips the sign that makes the permutation proper
         if (inertia(p%perm(2)) < inertia(p%perm(1))) then
            t = p%perm(1); p%perm(1) = p%perm(2); p%perm(2) = t; p%sgn(3) = -p%sgn(3)
         end if
         if (inertia(p%perm(3)) < inertia(p%perm(2))) then
            t = p%perm(2); p%perm(2) = p%perm(3); p%perm(3) = t; p%sgn(3) = -p%sgn(3)
         end if
         if (inertia(p%perm(2)) < inertia(p%perm(1))) then
            t = p%perm(1); p%perm(1) = p%perm(2); p%perm(2) = t; p%sgn(3) = -p%sgn(3)
         end if
         imax = inertia(p%perm(3))
         do i = 1, 3
            p%ms(i) = p%sgn(i) * mu(p%perm(i))
            p%cs(i) = inertia(p%perm(i)) / imax
         end do
      end if
      hs = h / imax
      p%tau = p%g * hs
      if (phase_over(h, p%g, inertia(p%perm(1)), long_step_threshold)) then
         p%path = path_long
         if (phase_over(h, p%g, inertia(p%perm(1)), refuse_threshold)) p%path = path_refused
      else if (imax > ratio_threshold * inertia(p%perm(1)) .or. p%g < tiny(1.0_dp) &
               .or. abs(hs) > huge(1.0_dp)) then
         ! |m| subnormal (its rounding would enter tau), or h / I_max overflows
         p%path = path_long
      end if
   end subroutine flow_prepare

   !> Undo the scaling and sorting of flow_prepare on the unit-norm results m1s, ws.
   pure subroutine flow_finish(p, m1s, ws, m_out, w)
      type(flow_prep_t), intent(in) :: p
      real(dp), intent(in) :: m1s(3), ws(4)
      real(dp), intent(out) :: m_out(3), w(4)
      integer :: i

      if (p%perm(1) == 1 .and. p%perm(2) == 2) then
         ! moments already in order (no swap: the identity, all signs +1), the usual case
         m_out = m1s * p%g
         w = ws
         return
      end if
      w(1) = ws(1)
      do i = 1, 3
         m_out(p%perm(i)) = p%sgn(i) * m1s(i) * p%g
         w(1 + p%perm(i)) = p%sgn(i) * ws(1 + i)
      end do
   end subroutine flow_finish

   !> v = g u with |u| = 1, without underflow or overflow of the squares (|m| may be 1e-160
   !> or 1e160; u is formed from the scaled vector, so it is a unit vector even when g is subnormal).
   !> (A square below norm_sq_min / 2^60 that underflows changes v . v by less than its rounding.)
   pure subroutine split_norm(v, g, u)
      real(dp), intent(in) :: v(3)
      real(dp), intent(out) :: g, u(3)
      real(dp) :: big, s

      s = v(1) * v(1) + v(2) * v(2) + v(3) * v(3)
      if (s >= norm_sq_min .and. s <= norm_sq_max) then
         ! the usual case: the shortest chain of operations (the flows are sequential in a splitting)
         g = sqrt(s)
         u = v / g
         return
      end if
      big = maxval(abs(v))
      if (big == 0) then
         g = 0; u = 0
      else
         u = v / big
         s = sqrt(sum(u * u))
         u = u / s
         g = big * s
      end if
   end subroutine split_norm

   !> The same unit-norm step as free_flow_unit, in quadruple precision from the exact inputs.
   pure subroutine long_step(m, h, inertia, perm, sgn, quadrature, m1s, ws)
      real(dp), intent(in) :: m(3), h, inertia(3), sgn(3)
      integer, intent(in) :: perm(3), quadrature
      real(dp), intent(out) :: m1s(3), ws(4)
      real(qp) :: mq(3), cq(3), gq, m1q(3), wq(4)
      integer :: i

      do i = 1, 3
         mq(i) = sgn(i) * real(m(perm(i)), qp)
         cq(i) = real(inertia(perm(i)), qp) / real(inertia(perm(3)), qp)
      end do
      gq = sqrt(sum(mq * mq))
      call free_flow_unit_qp(mq / gq, gq * real(h, qp) / real(inertia(perm(3)), qp), cq, quadrature, m1q, wq)
      m1s = real(m1q, dp)
      ws = real(wq, dp)
   end subroutine long_step

   !> frb_step: attitude as a rotation matrix. qt and qt_out hold the TRANSPOSE of Q
   !> (the layout of a C-ordered numpy array seen from Fortran).
   pure subroutine frb_step_one(m, qt, h, inertia, quadrature, m_out, qt_out)
      real(dp), intent(in) :: m(3), qt(3, 3), h, inertia(3)
      integer, intent(in) :: quadrature
      real(dp), intent(out) :: m_out(3), qt_out(3, 3)
      real(dp) :: w(4)

      call free_flow(m, h, inertia, quadrature, m_out, w)
      call rotate_matrix_tr(qt, w, qt_out)
   end subroutine frb_step_one

   !> qt_out = E(w)^T qt, i.e. Q_out = Q E(w) for qt = Q^T (the attitude update of frb_step_one).
   pure subroutine rotate_matrix_tr(qt, w, qt_out)
      real(dp), intent(in) :: qt(3, 3), w(4)
      real(dp), intent(out) :: qt_out(3, 3)
      real(dp) :: e(3, 3)
      integer :: j

      e = quat_matrix(w)
      ! column by column
      do j = 1, 3
         qt_out(:, j) = e(1, :) * qt(1, j) + e(2, :) * qt(2, j) + e(3, :) * qt(3, j)
      end do
   end subroutine rotate_matrix_tr

   !> quat_step: attitude as a unit quaternion, scalar first; q_out = q w.
   pure subroutine quat_step_one(m, q, h, inertia, quadrature, m_out, q_out)
      real(dp), intent(in) :: m(3), q(4), h, inertia(3)
      integer, intent(in) :: quadrature
      real(dp), intent(out) :: m_out(3), q_out(4)
      real(dp) :: w(4)

      call free_flow(m, h, inertia, quadrature, m_out, w)
      q_out = qmul(q, w)
   end subroutine quat_step_one

end module exact_flow
