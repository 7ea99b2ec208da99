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
! * Exact steps of symmetric bodies longer than symmetric_step_threshold take the closed form of
!   the free symmetric top with its two angles in double-double from the inputs (symmetric_step):
!   the elliptic path's phase, formed from the rounded scaled inputs, loses about an ulp a radian.
! * Exact steps of other bodies longer than precise_step_threshold form the secular parts of the
!   elliptic step (the phase lambda t, K, the angle's integral over a half period and its mean part)
!   in double-double from the inputs, the periodic parts in double precision (precise_step).
! * Each double-precision elliptic step ends on the invariants of its start (keep_invariants), so
!   that the rounding of the orbit's constants, the same at every step, does not drift |m| and the
!   energy over chained steps.
! * Very long steps (|h| |m| / I_min > long_step_threshold) are computed in quadruple precision
!   (exact_flow_qp, the same code instantiated for kind qp): the phase lambda t and the
!   angle psi grow linearly with t, so double precision would lose |h| |m| / I_min ulps.
module exact_flow
   use kinds, only: dp, qp, wp => dp
   use, intrinsic :: ieee_arithmetic, only: ieee_value, ieee_quiet_nan
   use checks, only: phase_limit, phase_over
   use numbers_table, only: ratio_threshold, long_step_threshold
   use elliptic_functions, only: agm_t, agm_setup, agm_max, jacobi_reduced, jacobi_series, jacobi_series_max, &
                           ellf_sc, carlson_rj, &
                           gl_node, gl_weight
   use exact_flow_qp, only: free_flow_unit_qp => free_flow_unit
   use rotations, only: qmul, quat_matrix
   use double_double, only: two_sum, fast_two_sum, two_prod
   use lane_math, only: lane_sincos, lane_atan, lane_atanc, lane_atan2
   implicit none
   private

   public :: free_flow, frb_step_one, quat_step_one, rotate_matrix_tr
   public :: flow_prep_t, flow_prepare, flow_finish, path_trivial, path_unit, path_long, path_refused
   public :: symmetric_long, symmetric_step, keep_invariants, precise_long

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
   !> Exact steps of a symmetric body (two equal moments) with |h| |m| / I_min above this many
   !> radians take the closed form with the angles in double-double (symmetric_step); shorter
   !> steps lose less than 2e-16 in the elliptic path (and run in the lanes).
   real(dp), parameter, public :: symmetric_step_threshold = 1.0_dp
   !> Exact steps of bodies with three different moments (on free_flow's double-precision path)
   !> with |h| |m| / I_min above this many radians take precise_step (the secular parts of the
   !> step in double-double); shorter steps lose at most about 4 ulps of the phase in
   !> free_flow_unit (and run in the lanes).
   real(dp), parameter, public :: precise_step_threshold = 4.0_dp
   !> precise_step serves I_max / I_min up to this (the products of three moments scaled to
   !> I_max = 1 by a power of two stay far above the underflow threshold).
   real(dp), parameter, public :: precise_ratio_max = 1.0e60_dp
   !> The double-double AGM of precise_secular stops when (a - g) / a is below this (K is then
   !> within about 1e-20 relative) and the terms of its sum below its square.
   real(dp), parameter :: precise_agm_stop = 2.0_dp**(-32)
   !> Bound on |h|, |m|, 1/|m| and the moments of symmetric_step (Veltkamp's splitting overflows
   !> near 2^996; products of lower parts are exact above 1e-290).
   real(dp), parameter :: dd_max = 1.0e140_dp
   !> keep_invariants keeps the energy apart from |m| where the Gram determinant of the two
   !> gradients is above this fraction of its largest value (sin^2 of their angle).
   real(dp), parameter, public :: invariants_min_det = 1.0e-4_dp
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

   !> A double-double number hi + lo with |lo| <= ulp(hi) / 2 (Dekker 1971).
   type :: dd_t
      real(dp) :: hi, lo
   end type dd_t

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
      else if (symmetric_long(h, p%g, inertia, quadrature)) then
         call symmetric_step(m, h, inertia, m_out, w)
         return
      else if (precise_long(h, p%g, inertia(p%perm(1)), inertia(p%perm(3)), quadrature)) then
         call precise_step(m, h, inertia, p, m1s, ws)
         call keep_invariants_precise(m, inertia, p, m1s)
      else
         call free_flow_unit(p%ms, p%tau, p%cs, quadrature, m1s, ws)
         call keep_invariants(p%ms, p%cs, m1s)
      end if
      call flow_finish(p, m, m1s, ws, m_out, w)
   end subroutine free_flow

   !> True for an exact step (quadrature = 0) of a symmetric body longer than
   !> symmetric_step_threshold radians, with |m| = g (free_flow's usual path, path_unit): those steps
   !> take symmetric_step. (The lock-step flows leave such bodies to free_flow.)
   !> (The double-double products need |h|, |m| and the moments away from the ends of the range.)
   pure logical function symmetric_long(h, g, inertia, quadrature) result(yes)
      real(dp), intent(in) :: h, g, inertia(3)
      integer, intent(in) :: quadrature

      yes = quadrature == 0 .and. (inertia(1) == inertia(2) .or. inertia(2) == inertia(3) &
                                   .or. inertia(1) == inertia(3)) &
            .and. abs(h) * g > symmetric_step_threshold * minval(inertia) &
            .and. abs(h) <= dd_max .and. g <= dd_max .and. g >= 1 / dd_max &
            .and. maxval(inertia) <= dd_max .and. minval(inertia) >= 1 / dd_max
   end function symmetric_long

   !> The exact step of a symmetric body: moments A, A on the axes i, j and C on the axis s, (i, j, s)
   !> a cyclic order. With Omega = m_s (1/A - 1/C), Euler's equations are m_i' = -Omega m_j,
   !> m_j' = Omega m_i, m_s' = 0, so m(t) = R_s(Omega t) m0; the angular velocity is
   !> omega = m/A - Omega e_s, and Q(t) = Q0 exp(t hat(m0)/A) exp(-Omega t hat(e_s)) solves
   !> Q' = Q hat(omega) (Landau and Lifshitz, Mechanics, 3rd ed. 1976, section 33, the free symmetric
   !> top: the body precesses about the fixed M at |M|/A and spins about its axis at -Omega
   !> relative to that). So w = (cos(a/2), sin(a/2) n) (cos(b/2), -sin(b/2) e_s), n = m0/|m0|,
   !> a = |m0| t / A, b = Omega t. The angles a and b are formed in double-double from the
   !> inputs (|m0|^2 = sum of exact squares, C - A exact), so each is within 1e-30 relative,
   !> and sin, cos of hi + lo are sin(hi) + lo cos(hi), cos(hi) - lo sin(hi): the error of the step
   !> does not grow with the angle (the elliptic path loses about an ulp of the phase per radian).
   !> The optional angles receive (a, b, sin(a/2), cos(a/2), sin(b/2), cos(b/2)) (a and b the high
   !> parts), for the step's derivatives (flow_derivatives).
   pure subroutine symmetric_step(m, h, inertia, m_out, w, angles)
      real(dp), intent(in) :: m(3), h, inertia(3)
      real(dp), intent(out) :: m_out(3), w(4)
      real(dp), intent(out), optional :: angles(6)
      integer :: i, j, s
      real(dp) :: ca, cc, p(3), e(3), sh, sl, t, gh, gl, xh, xl, yh, yl, ah, al, bh, bl
      real(dp) :: sa, ka, sb, kb, n(3), cbf, sbf, nw

      if (inertia(1) == inertia(2)) then
         s = 3
      else if (inertia(2) == inertia(3)) then
         s = 1
      else
         s = 2
      end if
      i = 1 + mod(s, 3); j = 1 + mod(s + 1, 3)
      ca = inertia(i); cc = inertia(s)
      ! |m0|^2 and |m0| in double-double
      do i = 1, 3
         call two_prod(m(i), m(i), p(i), e(i))
      end do
      i = 1 + mod(s, 3)
      call two_sum(p(1), p(2), xh, xl)
      call two_sum(xh, p(3), yh, t)
      call fast_two_sum(yh, xl + t + (e(1) + e(2) + e(3)), sh, sl)
      xh = sqrt(sh)
      call two_prod(xh, xh, yh, yl)
      call fast_two_sum(xh, (((sh - yh) - yl) + sl) / (2 * xh), gh, gl)
      ! a = |m0| h / A
      call dd_mul_d(gh, gl, h, xh, xl)
      call dd_div_d(xh, xl, ca, ah, al)
      ! b = (m_s h / A) ((C - A) / C)
      call two_prod(m(s), h, sh, sl)
      call dd_div_d(sh, sl, ca, xh, xl)
      call two_sum(cc, -ca, sh, sl)
      call dd_div_d(sh, sl, cc, yh, yl)
      call dd_mul_dd(xh, xl, yh, yl, bh, bl)
      call dd_sincos(ah / 2, al / 2, sa, ka)
      call dd_sincos(bh / 2, bl / 2, sb, kb)
      if (present(angles)) angles = [ah, bh, sa, ka, sb, kb]
      n = m / gh
      w(1) = ka * kb + sa * sb * n(s)
      w(1 + i) = kb * sa * n(i) - sa * sb * n(j)
      w(1 + j) = kb * sa * n(j) + sa * sb * n(i)
      w(1 + s) = kb * sa * n(s) - ka * sb
      nw = sqrt(w(1) * w(1) + w(2) * w(2) + w(3) * w(3) + w(4) * w(4))
      w = w / nw
      ! cos b, sin b from the half angle, divided by kb^2 + sb^2 so that the turn of (m_i, m_j)
      ! keeps its length to rounding
      nw = kb * kb + sb * sb
      cbf = (kb - sb) * (kb + sb) / nw
      sbf = 2 * sb * kb / nw
      m_out(s) = m(s)
      m_out(i) = cbf * m(i) - sbf * m(j)
      m_out(j) = sbf * m(i) + cbf * m(j)
      ! the turn keeps m_i^2 + m_j^2: its defect in double-double, and one Newton step
      call two_prod(m(i), m(i), xh, xl)
      call two_prod(m(j), m(j), yh, yl)
      call two_sum(xh, yh, sh, t)
      sl = t + (xl + yl)
      call two_prod(m_out(i), m_out(i), xh, xl)
      call two_prod(m_out(j), m_out(j), yh, yl)
      call two_sum(xh, yh, ah, t)
      al = t + (xl + yl)
      if (ah > 0) then
         t = ((sh - ah) + (sl - al)) / (2 * ah)
         m_out(i) = m_out(i) + t * m_out(i)
         m_out(j) = m_out(j) + t * m_out(j)
      end if
   end subroutine symmetric_step

   ! Double-double arithmetic (T. J. Dekker, "A floating-point technique for extending the available
   ! precision", Numer. Math. 18, 1971): the operations on pairs hi + lo, on the exact sums and
   ! products of two doubles of module double_double.

   !> (zh, zl) = (xh + xl) y, within 2 u^2 relative.
   pure subroutine dd_mul_d(xh, xl, y, zh, zl)
      real(dp), intent(in) :: xh, xl, y
      real(dp), intent(out) :: zh, zl
      real(dp) :: p, e

      call two_prod(xh, y, p, e)
      call fast_two_sum(p, e + xl * y, zh, zl)
   end subroutine dd_mul_d

   !> (zh, zl) = (xh + xl) (yh + yl), within 4 u^2 relative.
   pure subroutine dd_mul_dd(xh, xl, yh, yl, zh, zl)
      real(dp), intent(in) :: xh, xl, yh, yl
      real(dp), intent(out) :: zh, zl
      real(dp) :: p, e

      call two_prod(xh, yh, p, e)
      call fast_two_sum(p, e + (xh * yl + xl * yh), zh, zl)
   end subroutine dd_mul_dd

   !> (zh, zl) = (xh + xl) / y, within 4 u^2 relative: one correction of the quotient by the
   !> exact remainder.
   pure subroutine dd_div_d(xh, xl, y, zh, zl)
      real(dp), intent(in) :: xh, xl, y
      real(dp), intent(out) :: zh, zl
      real(dp) :: q, p, e

      q = xh / y
      call two_prod(q, y, p, e)
      call fast_two_sum(q, (((xh - p) - e) + xl) / y, zh, zl)
   end subroutine dd_div_d

   !> sin and cos of xh + xl, |xl| <= ulp(xh): sin(xh) + xl cos(xh), cos(xh) - xl sin(xh)
   !> (the next terms are below xl^2 < 1e-28 for the angles here).
   pure subroutine dd_sincos(xh, xl, s, c)
      real(dp), intent(in) :: xh, xl
      real(dp), intent(out) :: s, c
      real(dp) :: s0, c0

      call lane_sincos(xh, s0, c0)
      s = s0 + xl * c0
      c = c0 - xl * s0
   end subroutine dd_sincos

   ! The precise long step: exact steps of asymmetric bodies of phase |h| |m| / I_min above
   ! precise_step_threshold (precise_long, precise_step). The secular (linearly growing) parts of the
   ! step, the phase lambda t, the quarter period K, the complete integral of the angle per half
   ! period and the mean part of the angle psi, are formed in double-double from the inputs
   ! themselves (precise_secular); the periodic parts stay in double precision (free_flow_unit's).

   !> True for an exact step (quadrature = 0) of |h| |m| / I_min above precise_step_threshold with
   !> I_max / I_min at most precise_ratio_max, on free_flow's double-precision path (path_unit, not
   !> a symmetric body, which takes symmetric_step): those steps take precise_step.
   pure logical function precise_long(h, g, imin, imax, quadrature) result(yes)
      real(dp), intent(in) :: h, g, imin, imax
      integer, intent(in) :: quadrature

      yes = quadrature == 0 .and. abs(h) * g > precise_step_threshold * imin &
            .and. imax <= precise_ratio_max * imin
   end function precise_long

   pure elemental function dd_add(x, y) result(z)
      type(dd_t), intent(in) :: x, y
      type(dd_t) :: z
      real(dp) :: s, e

      call two_sum(x%hi, y%hi, s, e)
      call fast_two_sum(s, e + (x%lo + y%lo), z%hi, z%lo)
   end function dd_add

   pure elemental function dd_sub(x, y) result(z)
      type(dd_t), intent(in) :: x, y
      type(dd_t) :: z

      z = dd_add(x, dd_t(-y%hi, -y%lo))
   end function dd_sub

   pure elemental function dd_mul(x, y) result(z)
      type(dd_t), intent(in) :: x, y
      type(dd_t) :: z

      call dd_mul_dd(x%hi, x%lo, y%hi, y%lo, z%hi, z%lo)
   end function dd_mul

   pure elemental function dd_times(x, y) result(z)
      type(dd_t), intent(in) :: x
      real(dp), intent(in) :: y
      type(dd_t) :: z

      call dd_mul_d(x%hi, x%lo, y, z%hi, z%lo)
   end function dd_times

   !> x / y: the quotient of the leading parts corrected once by the remainder x - q y.
   pure elemental function dd_div(x, y) result(z)
      type(dd_t), intent(in) :: x, y
      type(dd_t) :: z, r
      real(dp) :: q

      q = x%hi / y%hi
      r = dd_sub(x, dd_times(y, q))
      call fast_two_sum(q, r%hi / y%hi, z%hi, z%lo)
   end function dd_div

   !> sqrt(x), x > 0: one Newton correction of the double square root by the exact residual.
   pure elemental function dd_sqrt(x) result(z)
      type(dd_t), intent(in) :: x
      type(dd_t) :: z
      real(dp) :: s, p, e

      s = sqrt(x%hi)
      call two_prod(s, s, p, e)
      call fast_two_sum(s, (((x%hi - p) - e) + x%lo) / (2 * s), z%hi, z%lo)
   end function dd_sqrt

   !> x y exactly, as a double-double.
   pure elemental function dd_prod(x, y) result(z)
      real(dp), intent(in) :: x, y
      type(dd_t) :: z

      call two_prod(x, y, z%hi, z%lo)
   end function dd_prod

   !> The elliptic step of free_flow_unit for the bodies of precise_long, its secular quantities in
   !> double-double from the inputs m (sorted and signed: ms = sgn * m(perm)), h and the sorted
   !> moments, exact up to the roundings of double-double (not those of the scaled unit-norm
   !> inputs). With G = |m|, the invariants D_j = G^2 - 2 T I_j (from the components and the
   !> differences of the moments, as in free_flow_unit), the axis a of circulation (ia = 3 where
   !> D_2 > 0, else 1), b the other extreme axis, and lambda_r = sqrt(D_b I_a2 / (I1 I2 I3))
   !> (I_a2 = |I_a - I_2|, and the like):
   !> * dj, ij: the scaled invariants d_j = D_j / G^2 and differences of the moments i21, i31, i32
   !>   (over I_max), each rounded once from its double-double value: free_flow_unit's orbit
   !>   constants formed from them are within a few ulps of those of the exact inputs (formed from
   !>   the scaled moments instead, a difference of nearly equal moments would carry their rounding
   !>   relative to the difference, and the periodic parts of the step would not fit the
   !>   secular ones); ok is false (nothing else set) where d1, d3 or |d2| is below invariant_floor
   !>   (an axis or the separatrix);
   !> * v = sigma lambda_r h, the phase of the step (free_flow_unit's lambda tau), sigma = sign(m_a);
   !> * quarter = K(k), k^2 = D_a I_b2 / (D_b I_a2), 1 - k^2 = |D_2| I31 / (D_b I_a2), by the AGM;
   !> * with B^2 = I_a D_b / (I31 G^2), c0 = 1 - B^2 = I_b D_a / (I31 G^2), c1 = B^2 k^2:
   !>   lbranch (B^2 < 1/4): half = L(pi/2) = pi / (2 w) - (B / c0) K (1 - k^2 S / (2 (c0 + c1))),
   !>     w = sqrt(c0 (c0 + c1)), base = 2 T tau = h sum(m_i^2 / I_i) / G, coef = B D_a';
   !>   otherwise: half = J(pi/2) = K S / 2, base = tau / c_a = G h / I_a, coef = D_a',
   !>   where D_a' = dcoef / (sigma lambda) = -+ D_a / (sigma G I_a lambda_r) (- for a = 1) and S is
   !>   the sum of the AGM algorithm of the complete integral of the third kind (below).
   !> The complete integrals: Pi(n, k) = K (1 + n S / (2 (1 - n))) (DLMF 19.8.6-19.8.8: a_0 = 1,
   !> g_0 = k', p_0^2 = 1 - n, Q_0 = 1, eps_j = (p_j^2 - a_j g_j) / (p_j^2 + a_j g_j),
   !> p_(j+1) = (p_j^2 + a_j g_j) / (2 p_j), Q_(j+1) = Q_j eps_j / 2, S = sum Q_j, a_j, g_j the AGM
   !> of 1 and k'), with n = -c1 / c0 for L (lint's complete form, (k^2 / (3 c0)) RJ(0, k'^2, 1,
   !> 1 + c1 / c0) = k^2 K S / (2 (c0 + c1))) and n = -c0 / B^2 for J (jint's, RJ(0, k'^2, 1,
   !> 1 + c0 / B^2) / (3 B^2) = K S / 2, as 1 - n = 1 / B^2): no cancellation.
   pure subroutine precise_secular(m, h, inertia, p, ok, ia, sigma, lbranch, dj, ij, v, quarter, half, &
                                   base, coef)
      real(dp), intent(in) :: m(3), h, inertia(3)
      type(flow_prep_t), intent(in) :: p
      logical, intent(out) :: ok, lbranch
      integer, intent(out) :: ia
      real(dp), intent(out) :: sigma, dj(3), ij(3)
      type(dd_t), intent(out) :: v, quarter, half, base, coef
      type(dd_t), parameter :: one = dd_t(1.0_dp, 0.0_dp)
      type(dd_t), parameter :: pi_dd = dd_t(3.141592653589793116_dp, 1.2246467991473532e-16_dp)
      real(dp) :: mr(3), cr(3), hr
      type(dd_t) :: x(3), t(3), gg, gd, i21, i31, i32, d1, d2, d3, da, db, ia2, ib2, lam2, lr, kden
      type(dd_t) :: k2, kp, b2, c0, c1, pp, a, gq, ag, s, q, sum_q, eps, w, prod3, ca
      integer :: em, ei, i, n

      ! exact scaling by powers of two: |m| and I_max near 1 (the flow's scaling law)
      em = exponent(p%g); ei = exponent(inertia(p%perm(3)))
      do i = 1, 3
         mr(i) = scale(p%sgn(i) * m(p%perm(i)), -em)
         cr(i) = scale(inertia(p%perm(i)), -ei)
         x(i) = dd_prod(mr(i), mr(i))
         t(i) = dd_div(x(i), dd_t(cr(i), 0.0_dp))
      end do
      hr = scale(h, em - ei)
      gg = dd_add(dd_add(x(1), x(2)), x(3))
      i21 = dd_add(dd_t(cr(2), 0.0_dp), dd_t(-cr(1), 0.0_dp))
      i31 = dd_add(dd_t(cr(3), 0.0_dp), dd_t(-cr(1), 0.0_dp))
      i32 = dd_add(dd_t(cr(3), 0.0_dp), dd_t(-cr(2), 0.0_dp))
      d1 = dd_add(dd_mul(t(2), i21), dd_mul(t(3), i31))
      d3 = dd_add(dd_mul(t(1), i31), dd_mul(t(2), i32))
      d2 = dd_sub(dd_mul(t(3), i32), dd_mul(t(1), i21))
      s = dd_div(d1, gg); dj(1) = s%hi
      s = dd_div(d2, gg); dj(2) = s%hi
      s = dd_div(d3, gg); dj(3) = s%hi
      ij(1) = i21%hi / cr(3); ij(2) = i31%hi / cr(3); ij(3) = i32%hi / cr(3)
      ok = dj(1) >= invariant_floor .and. dj(3) >= invariant_floor .and. abs(dj(2)) >= invariant_floor
      if (.not. ok) return
      if (d2%hi > 0) then
         ia = 3; da = d3; db = d1; ia2 = i32; ib2 = i21
      else
         ia = 1; da = d1; db = d3; ia2 = i21; ib2 = i32
         d2 = dd_t(-d2%hi, -d2%lo)
      end if
      sigma = sign(1.0_dp, mr(ia))
      gd = dd_sqrt(gg)
      ca = dd_t(cr(ia), 0.0_dp)
      prod3 = dd_times(dd_prod(cr(1), cr(2)), cr(3))
      kden = dd_mul(db, ia2)
      lam2 = dd_div(kden, prod3)
      lr = dd_sqrt(lam2)
      v = dd_times(lr, sigma * hr)
      k2 = dd_div(dd_mul(da, ib2), kden)
      kp = dd_sqrt(dd_div(dd_mul(d2, i31), kden))
      b2 = dd_div(dd_mul(ca, db), dd_mul(i31, gg))
      c0 = dd_div(dd_times(da, cr(4 - ia)), dd_mul(i31, gg))
      c1 = dd_mul(b2, k2)
      lbranch = b2%hi < 0.25_dp
      ! the AGM of 1 and k' with the sum S of the complete integral of the third kind, p_j^2 kept
      ! (p_(j+1)^2 = (p_j^2 + a_j g_j)^2 / (4 p_j^2))
      if (lbranch) then
         pp = dd_div(dd_add(c0, c1), c0)
      else
         pp = dd_div(one, b2)
      end if
      a = one; gq = kp; sum_q = dd_t(0.0_dp, 0.0_dp); q = one
      do n = 1, agm_max
         ag = dd_mul(a, gq)
         s = dd_add(pp, ag)
         eps = dd_div(dd_sub(pp, ag), s)
         sum_q = dd_add(sum_q, q)
         q = dd_times(dd_mul(q, eps), 0.5_dp)
         pp = dd_div(dd_mul(s, s), dd_times(pp, 4.0_dp))
         if (abs(a%hi - gq%hi) <= precise_agm_stop * a%hi .and. abs(q%hi) <= precise_agm_stop**2) exit
         a = dd_times(dd_add(a, gq), 0.5_dp)
         gq = dd_sqrt(ag)
      end do
      sum_q = dd_add(sum_q, q)
      ! a and g within precise_agm_stop: their mean is the AGM M to (a - g)^2 / (8 a)
      quarter = dd_div(pi_dd, dd_add(a, gq))
      ! dcoef / (sigma lambda) = -+ D_a / (sigma G I_a lambda_r)
      coef = dd_div(da, dd_mul(dd_mul(gd, ca), lr))
      if ((ia == 1) .neqv. (sigma < 0)) coef = dd_t(-coef%hi, -coef%lo)
      if (lbranch) then
         w = dd_sqrt(dd_mul(c0, dd_add(c0, c1)))
         half = dd_sub(one, dd_div(dd_mul(k2, sum_q), dd_times(dd_add(c0, c1), 2.0_dp)))
         half = dd_sub(dd_div(dd_times(pi_dd, 0.5_dp), w), &
                       dd_div(dd_mul(dd_mul(dd_sqrt(b2), quarter), half), c0))
         base = dd_times(dd_div(dd_add(dd_add(t(1), t(2)), t(3)), gd), hr)
         coef = dd_mul(coef, dd_sqrt(b2))
      else
         half = dd_times(dd_mul(quarter, sum_q), 0.5_dp)
         base = dd_div(dd_times(gd, hr), ca)
      end if
   end subroutine precise_secular

   !> keep_invariants for the steps of precise_step: m1 (unit norm), the flow of the exact inputs,
   !> onto their invariants, |m1| = 1 and E = sum e_i m1_i^2 = sum e_i m_i^2 / |m|^2 with
   !> e = (I2 I3, I1 I3, I1 I2) (sorted, scaled by a power of two), the defects in double-double
   !> from the inputs m, inertia (free_flow's scaled m0 and moments are the invariants of a body
   !> whose moments carry their rounding; for nearly equal moments that body's energy differs
   !> from the exact one's in the direction that the nearly parallel gradients amplify).
   pure subroutine keep_invariants_precise(m, inertia, p, m1)
      real(dp), intent(in) :: m(3), inertia(3)
      type(flow_prep_t), intent(in) :: p
      real(dp), intent(inout) :: m1(3)
      type(dd_t) :: x(3), e(3), gg, target, g1, e1
      real(dp) :: mr(3), cr(3), ed(3), v(3), rg, re, a11, a12, a22, det, r
      integer :: em, ei, i
      logical :: both

      em = exponent(p%g); ei = exponent(inertia(p%perm(3)))
      do i = 1, 3
         mr(i) = scale(p%sgn(i) * m(p%perm(i)), -em)
         cr(i) = scale(inertia(p%perm(i)), -ei)
         x(i) = dd_prod(mr(i), mr(i))
      end do
      e(1) = dd_prod(cr(2), cr(3)); e(2) = dd_prod(cr(1), cr(3)); e(3) = dd_prod(cr(1), cr(2))
      gg = dd_add(dd_add(x(1), x(2)), x(3))
      target = dd_div(dd_add(dd_add(dd_mul(e(1), x(1)), dd_mul(e(2), x(2))), dd_mul(e(3), x(3))), gg)
      do i = 1, 3
         x(i) = dd_prod(m1(i), m1(i))
      end do
      g1 = dd_add(dd_add(x(1), x(2)), x(3))
      e1 = dd_add(dd_add(dd_mul(e(1), x(1)), dd_mul(e(2), x(2))), dd_mul(e(3), x(3)))
      rg = 1 - g1%hi - g1%lo
      target = dd_sub(target, e1)
      re = target%hi
      ed = [e(1)%hi, e(2)%hi, e(3)%hi]
      v = ed * m1
      a11 = m1(1) * m1(1) + m1(2) * m1(2) + m1(3) * m1(3)
      a12 = m1(1) * v(1) + m1(2) * v(2) + m1(3) * v(3)
      a22 = v(1) * v(1) + v(2) * v(2) + v(3) * v(3)
      det = a11 * a22 - a12 * a12
      both = det > invariants_min_det * (a11 * a22)
      r = 1 / (2 * merge(det, a11, both))
      m1 = m1 + (merge(a22 * rg - a12 * re, rg, both) * r * m1 &
                 + merge(a11 * re - a12 * rg, 0.0_dp, both) * r * v)
   end subroutine keep_invariants_precise

   !> free_flow_unit's uniform rotation (m on a principal axis, or within 1e-145 of one) with the
   !> angle |omega| h in double-double from the inputs, omega = m / I (the sorted frame).
   pure subroutine precise_rotation(m, h, inertia, p, m1, w)
      real(dp), intent(in) :: m(3), h, inertia(3)
      type(flow_prep_t), intent(in) :: p
      real(dp), intent(out) :: m1(3), w(4)
      type(dd_t) :: omega(3), om2, om
      real(dp) :: s, c
      integer :: em, ei, i

      em = exponent(p%g); ei = exponent(inertia(p%perm(3)))
      do i = 1, 3
         omega(i) = dd_div(dd_t(scale(p%sgn(i) * m(p%perm(i)), -em), 0.0_dp), &
                           dd_t(scale(inertia(p%perm(i)), -ei), 0.0_dp))
      end do
      om2 = dd_add(dd_add(dd_mul(omega(1), omega(1)), dd_mul(omega(2), omega(2))), dd_mul(omega(3), omega(3)))
      om = dd_times(dd_sqrt(om2), scale(h, em - ei))
      call dd_sincos(om%hi / 2, om%lo / 2, s, c)
      m1 = p%ms
      w(1) = c
      w(2:4) = (omega%hi / sqrt(om2%hi)) * s
   end subroutine precise_rotation

   !> free_flow_unit's exact elliptic step (quadrature = 0) through the reduced phase, for the
   !> steps of precise_long: the secular parts and the orbit's invariants from precise_secular
   !> (double-double), the periodic parts as in free_flow_unit (double precision). With
   !> u0 = r0 (+ 2 j0 K), r0 = F(phi0), u0 + v = 2 jp K + r1 (double-double, then r1 rounded), and
   !>   psi = base - coef [L(phi1) - L(phi0)] - coef 2 jp L(pi/2)      (B^2 < 1/4),
   !>   psi = base + coef [J(phi1) - J(phi0)] + coef 2 jp J(pi/2)      (B^2 >= 1/4),
   !> the bracket in double precision, the rest and the sum in double-double; sin and cos of psi/2
   !> from its two parts (dd_sincos). Momenta on or near an axis take precise_rotation; momenta on
   !> the separatrix (within invariant_floor) take free_flow_unit.
   pure subroutine precise_step(m, h, inertia, p, m1, w)
      real(dp), intent(in) :: m(3), h, inertia(3)
      type(flow_prep_t), intent(in) :: p
      real(dp), intent(out) :: m1(3), w(4)
      real(dp) :: m0(3), ci(3), dj(3), ij(3), da, db, ia2, ib2, i31
      real(dp) :: bab, bba, b2a, sigma, c0, c1, k, kp, k2, kp2, sn0, cn0, dn0, sr, cr, par
      real(dp) :: r0, r1, s1, cc1, dd1, per, s, c, jp
      type(dd_t) :: v, quarter, half, base, coef, xr, psi
      type(agm_t) :: g
      integer :: ia, ib
      logical :: ok, lbranch

      m0 = p%ms; ci = p%cs
      call precise_secular(m, h, inertia, p, ok, ia, sigma, lbranch, dj, ij, v, quarter, half, base, coef)
      if (.not. ok) then
         if (dj(1) < invariant_floor .or. dj(3) < invariant_floor .or. (m0(1) == 0 .and. m0(3) == 0)) then
            call precise_rotation(m, h, inertia, p, m1, w)
         else
            call free_flow_unit(m0, p%tau, ci, 0, m1, w)
         end if
         return
      end if
      ! free_flow_unit's orbit and (sn, cn, dn)(u0), from the invariants of precise_secular
      i31 = ij(2)
      if (ia == 3) then
         ib = 1; da = dj(3); db = dj(1); ia2 = ij(3); ib2 = ij(1)
      else
         ib = 3; da = dj(1); db = dj(3); ia2 = ij(1); ib2 = ij(3)
      end if
      bab = sqrt(ci(ia) * db / i31)
      bba = sqrt(ci(ib) * da / i31)
      b2a = sqrt(ci(2) * da / ia2)
      c0 = bba * bba
      k2 = da * ib2 / (db * ia2)
      kp2 = abs(dj(2)) * i31 / (db * ia2)
      sn0 = m0(2) / b2a; cn0 = m0(ib) / bba; dn0 = abs(m0(ia)) / bab
      c1 = bab * bab * k2
      k = sqrt(k2); kp = sqrt(kp2)
      call agm_setup(k, kp, g)
      if (cn0 < 0) then
         par = -1; sr = -sn0; cr = -cn0
      else
         par = 1; sr = sn0; cr = cn0
      end if
      r0 = ellf_sc(sr, cr, dn0)
      xr = dd_add(v, dd_t(r0, 0.0_dp))
      jp = anint(xr%hi / (2 * quarter%hi))
      xr = dd_sub(xr, dd_times(quarter, 2 * jp))
      r1 = xr%hi
      call jacobi_reduced(r1, g, s1, cc1, dd1)
      if (mod(jp, 2.0_dp) /= 0) par = -par
      m1(ia) = sigma * bab * dd1
      m1(2) = par * b2a * s1
      m1(ib) = par * bba * cc1
      if (lbranch) then
         per = lint(s1, cc1, dd1, r1, g%quarter, bab, c0, c1, k2, kp) &
               - lint(sr, cr, dn0, r0, g%quarter, bab, c0, c1, k2, kp)
         psi = dd_sub(base, dd_mul(coef, dd_add(dd_times(half, 2 * jp), dd_t(per, 0.0_dp))))
      else
         per = jint(s1, cc1, dd1, bab, c0, c1, kp) - jint(sr, cr, dn0, bab, c0, c1, kp)
         psi = dd_add(base, dd_mul(coef, dd_add(dd_times(half, 2 * jp), dd_t(per, 0.0_dp))))
      end if
      call dd_sincos(psi%hi / 2, psi%lo / 2, s, c)
      call attitude_from_half_angle(m0, m1, ia, sigma, s, c, w)
   end subroutine precise_step

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

   !> Moves m1, the flow of m0 for the moments ci, onto the invariants of m0, |m|^2 and
   !> E = sum m_i^2 e_i with e = (c2 c3, c1 c3, c1 c2) (c1 c2 c3 times twice the energy: products,
   !> not divisions), by one Newton step along their gradients: m1 <- m1 + alpha m1 + beta v,
   !> v_i = e_i m1_i, with a11 alpha + a12 beta = rg / 2, a12 alpha + a22 beta = re / 2 (a11 = m1 . m1,
   !> a12 = m1 . v, a22 = v . v). The defects rg, re are sums of (m0_i - m1_i)(m0_i + m1_i), without
   !> the cancellation of two sums near 1. The elliptic parametrisation takes the constants of the
   !> orbit (B_ab, B_2a, B_ba) afresh at every step from nearly the same invariants, so their
   !> rounding repeats step after step and would move |m| and the energy in one direction (about
   !> 0.25 ulp a step); after the step only the rounding of the components is left, which does not
   !> repeat. (The rounding of e is the same at every step: it defines the invariant kept, which
   !> differs from the energy by a constant factor 1 + O(u), so the energy does not drift.) Where
   !> the two gradients are nearly parallel (m near a principal axis, or in the plane of two equal
   !> moments) the energy follows from |m|, and only |m| is kept.
   pure subroutine keep_invariants(m0, ci, m1)
      real(dp), intent(in) :: m0(3), ci(3)
      real(dp), intent(inout) :: m1(3)
      real(dp) :: e(3), v(3), d(3), rg, re, a11, a12, a22, det, r
      logical :: both

      e(1) = ci(2) * ci(3); e(2) = ci(1) * ci(3); e(3) = ci(1) * ci(2)
      d = (m0 - m1) * (m0 + m1)
      v = e * m1
      rg = d(1) + d(2) + d(3)
      re = e(1) * d(1) + e(2) * d(2) + e(3) * d(3)
      a11 = m1(1) * m1(1) + m1(2) * m1(2) + m1(3) * m1(3)
      a12 = m1(1) * v(1) + m1(2) * v(2) + m1(3) * v(3)
      a22 = v(1) * v(1) + v(2) * v(2) + v(3) * v(3)
      det = a11 * a22 - a12 * a12
      both = det > invariants_min_det * (a11 * a22)
      r = 1 / (2 * merge(det, a11, both))
      m1 = m1 + (merge(a22 * rg - a12 * re, rg, both) * r * m1 &
                 + merge(a11 * re - a12 * rg, 0.0_dp, both) * r * v)
   end subroutine keep_invariants

   !> Undo the scaling and sorting of flow_prepare on the unit-norm results m1s, ws: for a short
   !> step (each component of m1s - ms at most short_change_max) m_out is m moved by the step's
   !> change (m1s - ms) g, not m1s g (the scaling's round trip m / g * g errs by an ulp that
   !> repeats in step after step of a slowly moving state; a step that leaves the unit momentum
   !> unchanged returns m itself); for a longer one m1s g, one rounding.
   pure subroutine flow_finish(p, m, m1s, ws, m_out, w)
      type(flow_prep_t), intent(in) :: p
      real(dp), intent(in) :: m(3), m1s(3), ws(4)
      real(dp), intent(out) :: m_out(3), w(4)
      integer :: i
      logical :: short

      short = maxval(abs(m1s - p%ms)) <= short_change_max
      if (p%perm(1) == 1 .and. p%perm(2) == 2) then
         ! moments already in order (no swap: the identity, all signs +1), the usual case
         if (short) then
            m_out = m + (m1s - p%ms) * p%g
         else
            m_out = m1s * p%g
         end if
         w = ws
         return
      end if
      w(1) = ws(1)
      do i = 1, 3
         if (short) then
            m_out(p%perm(i)) = m(p%perm(i)) + p%sgn(i) * (m1s(i) - p%ms(i)) * p%g
         else
            m_out(p%perm(i)) = p%sgn(i) * m1s(i) * p%g
         end if
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
