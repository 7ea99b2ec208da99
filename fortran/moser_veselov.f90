! Preprocessed discrete Moser-Veselov (DMV) method of Hairer and Vilmart (J. Phys. A 39, 2006)
! for the free rigid body  m' = m x I^-1 m,  q' = q (0, I^-1 m) / 2  (as restated in
! G. Vilmart, "Rigid body dynamics", 2013, Algorithms 3 and 4, eqs. (13)-(15) and Table 1; the
! powers of h in Algorithm 4 increase, h^2, h^4, h^6, where the restatement prints h^2 throughout).
!
! Standard DMV step (Algorithm 3), J = diag(I), inverse moments w = 1/I:
!     Y = alpha y + (h/2) Y x (w Y),  e = (h/2) w Y,  alpha = 1 + |e|^2          (14)
!     y+ = y + (h / alpha) Y x (w Y),   q+ = q rho,  rho = (1, e) / sqrt(alpha)     (15), (13)
! rho is the Cayley rotation E(rho) = (1 - hat e)^-1 (1 + hat e), and y+ = E(rho)^T y, so |y|
! and the spatial momentum E(q) y are conserved whatever e is; the energy is conserved when e
! solves (14).
!
! Solving (14). With d = (h/2) w, D = diag(d): (14) is (1 + hat e) Y = alpha y with e = D Y,
! and (1 + hat e)^-1 = (1 - hat e + e e^T) / alpha, so Y = y + y x e + sigma e, sigma = e.y.
! For a given sigma, e = D Y is the LINEAR system (diag(mu) - D hat y) e = D y,
! mu_i = 1 - sigma d_i, whose solution is ((i, j, k) cyclic, P = d_1 d_2 d_3)
!     e_i = [d_i (mu_j mu_k y_i + (d_k - d_j) y_j y_k) + P |y|^2 y_i] / Delta,
!     Delta = mu_1 mu_2 mu_3 + sum_i mu_i d_j d_k y_i^2.
! Then sigma = y.e(sigma) is the quartic (the y_1 y_2 y_3 terms cancel)
!     F(sigma) = -N0 + L1 sigma - c2 sigma^2 + a2 sigma^3 - P sigma^4 = 0,
!     N0 = sum d_i y_i^2 + P |y|^4,  L1 = 1 + a2 |y|^2,  c2 = a1 + 2 P |y|^2,
!     a1 = d_1 + d_2 + d_3,  a2 = d_2 d_3 + d_3 d_1 + d_1 d_2,
! so (14) reduces EXACTLY to one scalar equation, solved to machine precision by Newton's
! method from sigma_0 = N0 / L1 plus one fixed-point correction (relative error
! O((h omega)^4)). This gives the same e as the fixed-point iteration of (14) (to roundoff)
! at a fraction of the cost, and also where that iteration diverges. A solution exists only
! for |h| |w y| up to about 1 (at most a quarter turn per step); beyond, the step returns NaN.
!
! Stopping rule: e depends weakly on sigma (de = D e dsigma, so a relative error r in sigma
! changes e by about eps_h^3 r, eps_h = max|d_i| |y| ~ h |omega| / 2), and after a Newton update
! of relative size r the error is about 3 E r^2 with E = max|d_i| |sigma| ~ eps_h^2. The
! iteration stops when 3 E r^2 eps_h^3 <= eps / 4, implied by r E <= sqrt(eps / 12) for E <= 1,
! with r <= 1e-3 (asymptotic regime) and an iteration cap.
!
! Preprocessing (Algorithm 4, order 2p): the step uses the modified inverse moments
!     w_j = (1/I_j) (1 + h^2 s3 + h^4 s5 + h^6 s7) + h^2 t3 + h^4 t5 + h^6 t7,
! the scalar functions s_k, t_k of Table 1 being polynomials in C = |y|^2 / 2 and
! H = sum y_j^2 / (2 I_j), which the method conserves exactly (so w is the same at every step).
! Order 2 is plain DMV, order 4 uses s3, t3, order 6 adds s5, t5, order 8 adds s7, t7.
! Nothing depends on the ordering of the moments of inertia (no sorting).
!
! Speed: the batched drivers advance dmv_lanes_width bodies in lock-step (structure of arrays),
! so that the compiler vectorises across bodies and their dependency chains overlap; a shorter
! last chunk runs only its own lanes, and a body alone runs the scalar kernel dmv_step_scalar (the
! same operations: the results are those of the lanes bit for bit).
module moser_veselov
   use, intrinsic :: ieee_arithmetic, only: ieee_value, ieee_quiet_nan
   use kinds, only: dp
   use numbers_table, only: dmv_lanes_width, variant_dmv2, variant_dmv4, variant_dmv6, variant_dmv8
   implicit none
   private

   public :: dmv_coef_t, dmv_setup, dmv_modified_inverse, dmv_lanes_inverse, dmv_lanes
   public :: dmv_step_scalar, dmv_step_inv, dmv_step_coef, dmv_step_one
   public :: dmv_integrate_many, dmv_prepare_inverse, dmv_blocks_steps

   !> Iteration cap of the Newton solver of (14).
   integer, parameter, public :: dmv_max_iter = 50
   !> Number of bodies advanced in lock-step by the batched drivers (a shared number).
   public :: dmv_lanes_width
   !> Stopping thresholds of Newton's method (see the header).
   real(dp), parameter :: r_asym = 1.0e-3_dp
   real(dp), parameter :: r_prec = 4.3e-9_dp         ! sqrt(eps / 12)
   ! (the stopping rule's constants, for the lock-step DMV steps of lie_group_lanes)
   public :: r_asym, r_prec

   !> Per-body constants: 1/I and the coefficients of the scalar functions of Table 1,
   !> as homogeneous polynomials in (H, C):
   !>   s3 = s(1,1) H + s(2,1) C
   !>   s5 = s(1,2) H^2 + s(2,2) C H + s(3,2) C^2
   !>   s7 = s(1,3) H^3 + s(2,3) C H^2 + s(3,3) C^2 H + s(4,3) C^3     (same for t)
   type :: dmv_coef_t
      real(dp) :: inv(3) = 0       ! 1 / I_j
      integer :: ncorr = -1        ! number of correction terms, order/2 - 1; -1 = invalid order
      real(dp) :: s(4, 3) = 0
      real(dp) :: t(4, 3) = 0
   end type dmv_coef_t

contains

   !> Constants of the method of order 2, 4, 6 or 8 for the moments of inertia I (any order).
   !> Any other order gives ncorr = -1, and the steps then return NaN.
   pure function dmv_setup(inertia, order) result(c)
      real(dp), intent(in) :: inertia(3)
      integer, intent(in) :: order
      type(dmv_coef_t) :: c
      real(dp) :: a1, a2, a3, v1, v2, v3, d, di, di2, di3
      real(dp) :: sg1, sg2, sg3, sgm1, sgm2, sgm3, t11, t12, t21

      c%inv = 1 / inertia
      ! (the DMV variants of the method table are their orders: variant_dmv4 = 4, ...)
      select case (order)
      case (variant_dmv2, variant_dmv4, variant_dmv6, variant_dmv8)
         c%ncorr = order / 2 - 1
      case default
         c%ncorr = -1
         return
      end select
      if (c%ncorr == 0) return

      a1 = inertia(1); a2 = inertia(2); a3 = inertia(3)
      v1 = c%inv(1); v2 = c%inv(2); v3 = c%inv(3)
      d = a1 * a2 * a3                       ! delta
      di = v1 * v2 * v3                      ! 1 / delta
      di2 = di * di
      di3 = di2 * di
      sg1 = a1 + a2 + a3                     ! sigma_a = I1^a + I2^a + I3^a
      sg2 = a1 * a1 + a2 * a2 + a3 * a3
      sg3 = a1**3 + a2**3 + a3**3
      sgm1 = v1 + v2 + v3
      sgm2 = v1 * v1 + v2 * v2 + v3 * v3
      sgm3 = v1**3 + v2**3 + v3**3
      ! tau_{b,c} = (I2^b + I3^b) / I1^c + (I3^b + I1^b) / I2^c + (I1^b + I2^b) / I3^c
      t11 = (a2 + a3) * v1 + (a3 + a1) * v2 + (a1 + a2) * v3
      t12 = (a2 + a3) * v1**2 + (a3 + a1) * v2**2 + (a1 + a2) * v3**2
      t21 = (a2**2 + a3**2) * v1 + (a3**2 + a1**2) * v2 + (a1**2 + a2**2) * v3

      ! s3, t3
      c%s(1, 1) = -sgm1 / 3
      c%s(2, 1) = sg1 * di / 6
      c%t(1, 1) = sg1 * di / 6
      c%t(2, 1) = -di / 3
      if (c%ncorr == 1) return
      ! s5, t5
      c%s(1, 2) = (3 * sg1 + 2 * d * sgm2) * di / 60
      c%s(2, 2) = (1 - t11) * di / 30
      c%s(3, 2) = (sg2 - d * sgm1) * di2 / 30
      c%t(1, 2) = -(9 + t11) * di / 60
      c%t(2, 2) = (6 * d * sgm1 - sg2) * di2 / 60
      c%t(3, 2) = -sg1 * di2 / 60
      if (c%ncorr == 2) return
      ! s7, t7
      c%s(1, 3) = (15 - d * sgm3 - 2 * t11) * di / 630
      c%s(2, 3) = (6 * d * t12 - 100 * d * sgm1 + 53 * sg2) * di2 / 2520
      c%s(3, 3) = (9 * sg1 + 10 * d * sgm2 - 6 * t21) * di2 / 420
      c%s(4, 3) = (4 * d + 17 * sg3 - 15 * d * t11) * di3 / 2520
      c%t(1, 3) = (9 * d * sgm1 + d * t12 - 11 * sg2) * di2 / 1260
      c%t(2, 3) = (47 * sg1 + 13 * t21 - 38 * d * sgm2) * di2 / 2520
      c%t(3, 3) = (sg3 + 2 * d * t11 - 85 * d) * di3 / 1260
      c%t(4, 3) = (34 * d * sgm1 - 19 * sg2) * di3 / 2520
   end function dmv_setup

   !> The corrections of Algorithm 4 for g = h^2 and the invariants cc = C, hh = H:
   !> sa = h^2 s3 + h^4 s5 + h^6 s7 and ta = h^2 t3 + h^4 t5 + h^6 t7, truncated after
   !> c%ncorr >= 1 terms.
   pure subroutine corrections(c, g, cc, hh, sa, ta)
      type(dmv_coef_t), intent(in) :: c
      real(dp), intent(in) :: g, cc, hh
      real(dp), intent(out) :: sa, ta
      real(dp) :: s5, t5, s7, t7

      s5 = 0; t5 = 0
      if (c%ncorr >= 3) then
         s7 = ((c%s(1, 3) * hh + c%s(2, 3) * cc) * hh + c%s(3, 3) * cc * cc) * hh + c%s(4, 3) * cc * cc * cc
         t7 = ((c%t(1, 3) * hh + c%t(2, 3) * cc) * hh + c%t(3, 3) * cc * cc) * hh + c%t(4, 3) * cc * cc * cc
         s5 = g * s7
         t5 = g * t7
      end if
      if (c%ncorr >= 2) then
         s5 = g * (((c%s(1, 2) * hh + c%s(2, 2) * cc) * hh + c%s(3, 2) * cc * cc) + s5)
         t5 = g * (((c%t(1, 2) * hh + c%t(2, 2) * cc) * hh + c%t(3, 2) * cc * cc) + t5)
      end if
      sa = g * ((c%s(1, 1) * hh + c%s(2, 1) * cc) + s5)
      ta = g * ((c%t(1, 1) * hh + c%t(2, 1) * cc) + t5)
   end subroutine corrections

   !> Modified inverse moments of inertia of Algorithm 4 for one body, state y and step h.
   pure function dmv_modified_inverse(c, h, y) result(w)
      type(dmv_coef_t), intent(in) :: c
      real(dp), intent(in) :: h, y(3)
      real(dp) :: w(3)
      real(dp) :: sa, ta

      if (c%ncorr <= 0) then
         w = c%inv
         return
      end if
      call corrections(c, h * h, (y(1) * y(1) + y(2) * y(2) + y(3) * y(3)) / 2, &
                       (c%inv(1) * y(1) * y(1) + c%inv(2) * y(2) * y(2) + c%inv(3) * y(3) * y(3)) / 2, &
                       sa, ta)
      w = c%inv + (c%inv * sa + ta)
   end function dmv_modified_inverse

   !> dmv_modified_inverse for nl <= dmv_lanes_width bodies sharing the constants c:
   !> y(nl, 3), h(nl) -> w(nl, 3). Same arithmetic as corrections, one branch-free loop per
   !> order so that it vectorises.
   pure subroutine dmv_lanes_inverse(nl, c, h, y, w)
      integer, intent(in) :: nl
      type(dmv_coef_t), intent(in) :: c
      real(dp), intent(in) :: h(nl), y(nl, 3)
      real(dp), intent(out) :: w(nl, 3)
      real(dp) :: g(dmv_lanes_width), cc(dmv_lanes_width), hh(dmv_lanes_width)
      real(dp) :: sa(dmv_lanes_width), ta(dmv_lanes_width), s5, t5, s7, t7, v1, v2, v3
      integer :: k

      v1 = c%inv(1); v2 = c%inv(2); v3 = c%inv(3)
      if (c%ncorr <= 0) then
         do k = 1, nl
            w(k, 1) = v1; w(k, 2) = v2; w(k, 3) = v3
         end do
         return
      end if
      do k = 1, nl
         g(k) = h(k) * h(k)
         cc(k) = (y(k, 1) * y(k, 1) + y(k, 2) * y(k, 2) + y(k, 3) * y(k, 3)) / 2
         hh(k) = (v1 * y(k, 1) * y(k, 1) + v2 * y(k, 2) * y(k, 2) + v3 * y(k, 3) * y(k, 3)) / 2
      end do
      select case (c%ncorr)
      case (1)
         do k = 1, nl
            sa(k) = g(k) * (c%s(1, 1) * hh(k) + c%s(2, 1) * cc(k))
            ta(k) = g(k) * (c%t(1, 1) * hh(k) + c%t(2, 1) * cc(k))
         end do
      case (2)
         do k = 1, nl
            s5 = g(k) * ((c%s(1, 2) * hh(k) + c%s(2, 2) * cc(k)) * hh(k) + c%s(3, 2) * cc(k) * cc(k))
            t5 = g(k) * ((c%t(1, 2) * hh(k) + c%t(2, 2) * cc(k)) * hh(k) + c%t(3, 2) * cc(k) * cc(k))
            sa(k) = g(k) * ((c%s(1, 1) * hh(k) + c%s(2, 1) * cc(k)) + s5)
            ta(k) = g(k) * ((c%t(1, 1) * hh(k) + c%t(2, 1) * cc(k)) + t5)
         end do
      case default
         do k = 1, nl
            s7 = ((c%s(1, 3) * hh(k) + c%s(2, 3) * cc(k)) * hh(k) + c%s(3, 3) * cc(k) * cc(k)) * hh(k) &
                 + c%s(4, 3) * cc(k) * cc(k) * cc(k)
            t7 = ((c%t(1, 3) * hh(k) + c%t(2, 3) * cc(k)) * hh(k) + c%t(3, 3) * cc(k) * cc(k)) * hh(k) &
                 + c%t(4, 3) * cc(k) * cc(k) * cc(k)
            s5 = g(k) * (((c%s(1, 2) * hh(k) + c%s(2, 2) * cc(k)) * hh(k) + c%s(3, 2) * cc(k) * cc(k)) &
                         + g(k) * s7)
            t5 = g(k) * (((c%t(1, 2) * hh(k) + c%t(2, 2) * cc(k)) * hh(k) + c%t(3, 2) * cc(k) * cc(k)) &
                         + g(k) * t7)
            sa(k) = g(k) * ((c%s(1, 1) * hh(k) + c%s(2, 1) * cc(k)) + s5)
            ta(k) = g(k) * ((c%t(1, 1) * hh(k) + c%t(2, 1) * cc(k)) + t5)
         end do
      end select
      do k = 1, nl
         w(k, 1) = v1 + (v1 * sa(k) + ta(k))
         w(k, 2) = v2 + (v2 * sa(k) + ta(k))
         w(k, 3) = v3 + (v3 * sa(k) + ta(k))
      end do
   end subroutine dmv_lanes_inverse

   !> One standard DMV step (Algorithm 3) for nl <= dmv_lanes_width bodies in lock-step, in
   !> place: y(nl, 3), q(nl, 4); hd = h / 2 and the inverse moments w(nl, 3) per body.
   !> A body whose equation (14) has no solution (h |omega| > ~1) gets NaN.
   pure subroutine dmv_lanes(nl, y, q, hd, w)
      integer, intent(in) :: nl
      real(dp), intent(inout) :: y(nl, 3), q(nl, 4)
      real(dp), intent(in) :: hd(nl), w(nl, 3)
      integer, parameter :: nb = dmv_lanes_width
      real(dp) :: p(nb), a2(nb), c2(nb), l1(nb), n0(nb), pc(nb), a(nb), sig(nb), ds(nb), bad
      real(dp) :: live(nb)
      real(dp) :: d1, d2, d3, y1, y2, y3, s1, s2, s3, c2y, p1, p2, p3, f, fp, r
      real(dp) :: m1, m2, m3, rden, e1, e2, e3, c1, cc2, c3, alpha, g, q0, q1, q2, q3
      integer :: k, it

      ! the quartic F(sigma) and the starting value N0 / L1 plus one fixed-point correction
      ! sigma = (N0 + c2 sigma^2 - a2 sigma^3 + P sigma^4) / L1
      do k = 1, nl
         y1 = y(k, 1); y2 = y(k, 2); y3 = y(k, 3)
         d1 = hd(k) * w(k, 1); d2 = hd(k) * w(k, 2); d3 = hd(k) * w(k, 3)
         s1 = y1 * y1; s2 = y2 * y2; s3 = y3 * y3
         c2y = s1 + s2 + s3
         p1 = d2 * d3; p2 = d3 * d1; p3 = d1 * d2
         p(k) = p1 * d1
         a2(k) = p1 + p2 + p3
         pc(k) = p(k) * c2y
         n0(k) = (d1 * s1 + d2 * s2 + d3 * s3) + pc(k) * c2y
         l1(k) = 1 + a2(k) * c2y
         c2(k) = (d1 + d2 + d3) + 2 * pc(k)
         r = 1 / l1(k)
         sig(k) = n0(k) * r
         ! stopping factor: the update is small enough when |ds| a <= r_asym |sigma|, i.e.
         ! |ds| <= r_asym |sigma| and |ds| E <= r_prec |sigma|, E = max|d_i| |sigma|
         a(k) = max(1.0_dp, max(abs(d1), abs(d2), abs(d3)) * abs(sig(k)) * (r_asym / r_prec))
         sig(k) = sig(k) + (((p(k) * sig(k) - a2(k)) * sig(k) + c2(k)) * sig(k) * sig(k)) * r
      end do
      ! Newton's method on all lanes until every lane has converged (a NaN lane counts as
      ! converged: comparisons with NaN are false); a lane that has converged keeps its sigma
      ! (live(k) = 0), so that each body takes the updates it takes alone (dmv_step_scalar)
      live(1:nl) = 1
      ds(1:nl) = 0
      do it = 1, dmv_max_iter
         bad = 0
         do k = 1, nl
            f = (((-p(k) * sig(k) + a2(k)) * sig(k) - c2(k)) * sig(k) + l1(k)) * sig(k) - n0(k)
            fp = ((-4 * p(k) * sig(k) + 3 * a2(k)) * sig(k) - 2 * c2(k)) * sig(k) + l1(k)
            ds(k) = merge(f / fp, ds(k), live(k) > 0.5_dp)
            sig(k) = merge(sig(k) - ds(k), sig(k), live(k) > 0.5_dp)
            live(k) = merge(live(k), 0.0_dp, abs(ds(k)) * a(k) > r_asym * abs(sig(k)))
            bad = bad + live(k)
         end do
         if (bad < 0.5_dp) exit
      end do
      if (bad > 0.5_dp) then
         ! iteration cap: no solution for these lanes
         do k = 1, nl
            if (abs(ds(k)) * a(k) > r_asym * abs(sig(k))) sig(k) = ieee_value(1.0_dp, ieee_quiet_nan)
         end do
      end if
      ! e from sigma, then the Cayley update of y and q
      do k = 1, nl
         y1 = y(k, 1); y2 = y(k, 2); y3 = y(k, 3)
         d1 = hd(k) * w(k, 1); d2 = hd(k) * w(k, 2); d3 = hd(k) * w(k, 3)
         m1 = 1 - sig(k) * d1; m2 = 1 - sig(k) * d2; m3 = 1 - sig(k) * d3
         rden = 1 / (m1 * m2 * m3 + (m1 * (d2 * d3) * (y1 * y1) + m2 * (d3 * d1) * (y2 * y2) &
                                     + m3 * (d1 * d2) * (y3 * y3)))
         e1 = rden * (d1 * (m2 * m3 * y1 + (d3 - d2) * y2 * y3) + pc(k) * y1)
         e2 = rden * (d2 * (m3 * m1 * y2 + (d1 - d3) * y3 * y1) + pc(k) * y2)
         e3 = rden * (d3 * (m1 * m2 * y3 + (d2 - d1) * y1 * y2) + pc(k) * y3)
         alpha = 1 + (e1 * e1 + e2 * e2 + e3 * e3)
         r = 1 / sqrt(alpha)
         g = 2 * r * r
         ! y+ = y + (2 / alpha) (c + c x e), c = y x e
         c1 = y2 * e3 - y3 * e2
         cc2 = y3 * e1 - y1 * e3
         c3 = y1 * e2 - y2 * e1
         y(k, 1) = y1 + g * (c1 + (cc2 * e3 - c3 * e2))
         y(k, 2) = y2 + g * (cc2 + (c3 * e1 - c1 * e3))
         y(k, 3) = y3 + g * (c3 + (c1 * e2 - cc2 * e1))
         ! q+ = q (1, e) / sqrt(alpha)
         q0 = q(k, 1); q1 = q(k, 2); q2 = q(k, 3); q3 = q(k, 4)
         q(k, 1) = r * (q0 - q1 * e1 - q2 * e2 - q3 * e3)
         q(k, 2) = r * (q1 + q0 * e1 + q2 * e3 - q3 * e2)
         q(k, 3) = r * (q2 + q0 * e2 + q3 * e1 - q1 * e3)
         q(k, 4) = r * (q3 + q0 * e3 + q1 * e2 - q2 * e1)
      end do
   end subroutine dmv_lanes

   !> dmv_lanes for one body (nl = 1), written for scalars: the same operations in the same
   !> order, so the same results bit for bit (tests/test_dmv.py), without the lane arrays, their
   !> loops and the count of unconverged lanes (a one-body call of the lanes costs about twice
   !> as much). In place: y(3), q(4); hd = h / 2, inverse moments w(3). NaN if (14) has no
   !> solution. (The lanes of a chunk iterate until all have converged, each lane frozen once
   !> it has: every body takes the updates it takes here, whatever the bodies beside it.)
   pure subroutine dmv_step_scalar(y, q, hd, w)
      real(dp), intent(inout) :: y(3), q(4)
      real(dp), intent(in) :: hd, w(3)
      real(dp) :: p, a2, c2, l1, n0, pc, a, sig, ds
      real(dp) :: d1, d2, d3, y1, y2, y3, s1, s2, s3, c2y, p1, p2, p3, f, fp, r
      real(dp) :: m1, m2, m3, rden, e1, e2, e3, c1, cc2, c3, alpha, g, q0, q1, q2, q3
      integer :: it
      logical :: bad

      y1 = y(1); y2 = y(2); y3 = y(3)
      d1 = hd * w(1); d2 = hd * w(2); d3 = hd * w(3)
      s1 = y1 * y1; s2 = y2 * y2; s3 = y3 * y3
      c2y = s1 + s2 + s3
      p1 = d2 * d3; p2 = d3 * d1; p3 = d1 * d2
      p = p1 * d1
      a2 = p1 + p2 + p3
      pc = p * c2y
      n0 = (d1 * s1 + d2 * s2 + d3 * s3) + pc * c2y
      l1 = 1 + a2 * c2y
      c2 = (d1 + d2 + d3) + 2 * pc
      r = 1 / l1
      sig = n0 * r
      a = max(1.0_dp, max(abs(d1), abs(d2), abs(d3)) * abs(sig) * (r_asym / r_prec))
      sig = sig + (((p * sig - a2) * sig + c2) * sig * sig) * r
      bad = .false.
      do it = 1, dmv_max_iter
         f = (((-p * sig + a2) * sig - c2) * sig + l1) * sig - n0
         fp = ((-4 * p * sig + 3 * a2) * sig - 2 * c2) * sig + l1
         ds = f / fp
         sig = sig - ds
         bad = abs(ds) * a > r_asym * abs(sig)
         if (.not. bad) exit
      end do
      if (bad) sig = ieee_value(1.0_dp, ieee_quiet_nan)   ! iteration cap: no solution
      m1 = 1 - sig * d1; m2 = 1 - sig * d2; m3 = 1 - sig * d3
      rden = 1 / (m1 * m2 * m3 + (m1 * (d2 * d3) * (y1 * y1) + m2 * (d3 * d1) * (y2 * y2) &
                                  + m3 * (d1 * d2) * (y3 * y3)))
      e1 = rden * (d1 * (m2 * m3 * y1 + (d3 - d2) * y2 * y3) + pc * y1)
      e2 = rden * (d2 * (m3 * m1 * y2 + (d1 - d3) * y3 * y1) + pc * y2)
      e3 = rden * (d3 * (m1 * m2 * y3 + (d2 - d1) * y1 * y2) + pc * y3)
      alpha = 1 + (e1 * e1 + e2 * e2 + e3 * e3)
      r = 1 / sqrt(alpha)
      g = 2 * r * r
      c1 = y2 * e3 - y3 * e2
      cc2 = y3 * e1 - y1 * e3
      c3 = y1 * e2 - y2 * e1
      y(1) = y1 + g * (c1 + (cc2 * e3 - c3 * e2))
      y(2) = y2 + g * (cc2 + (c3 * e1 - c1 * e3))
      y(3) = y3 + g * (c3 + (c1 * e2 - cc2 * e1))
      q0 = q(1); q1 = q(2); q2 = q(3); q3 = q(4)
      q(1) = r * (q0 - q1 * e1 - q2 * e2 - q3 * e3)
      q(2) = r * (q1 + q0 * e1 + q2 * e3 - q3 * e2)
      q(3) = r * (q2 + q0 * e2 + q3 * e1 - q1 * e3)
      q(4) = r * (q3 + q0 * e3 + q1 * e2 - q2 * e1)
   end subroutine dmv_step_scalar

   !> One standard DMV step (Algorithm 3) of one body with the inverse moments of inertia w
   !> (dmv_step_scalar). NaN if (14) has no solution (h |omega| > ~1).
   pure subroutine dmv_step_inv(y, q, h, w, y_out, q_out)
      real(dp), intent(in) :: y(3), q(4), h, w(3)
      real(dp), intent(out) :: y_out(3), q_out(4)

      y_out = y
      q_out = q
      call dmv_step_scalar(y_out, q_out, h / 2, w)
   end subroutine dmv_step_inv

   !> One preprocessed DMV step of one body with precomputed constants (NaN if invalid order).
   pure subroutine dmv_step_coef(m, q, h, c, m_out, q_out)
      real(dp), intent(in) :: m(3), q(4), h
      type(dmv_coef_t), intent(in) :: c
      real(dp), intent(out) :: m_out(3), q_out(4)

      if (c%ncorr < 0) then
         m_out = ieee_value(1.0_dp, ieee_quiet_nan)
         q_out = ieee_value(1.0_dp, ieee_quiet_nan)
         return
      end if
      call dmv_step_inv(m, q, h, dmv_modified_inverse(c, h, m), m_out, q_out)
   end subroutine dmv_step_coef

   !> One preprocessed DMV step of order 2, 4, 6 or 8 (NaN for any other order), inertia in any
   !> order: m_out, q_out approximate the free rigid body flow at time h.
   pure subroutine dmv_step_one(m, q, h, inertia, order, m_out, q_out)
      real(dp), intent(in) :: m(3), q(4), h, inertia(3)
      integer, intent(in) :: order
      real(dp), intent(out) :: m_out(3), q_out(4)

      call dmv_step_coef(m, q, h, dmv_setup(inertia, order), m_out, q_out)
   end subroutine dmv_step_one

   !> Packs bodies b0 .. b0+nl-1 of the batch into nl lanes (state, h/2 and the modified
   !> inverse moments of inertia). inertia(3, ni) and h(nh) with ni, nh either 1 or n;
   !> c = dmv_setup(inertia(:, 1), order).
   pure subroutine pack_lanes(n, ni, nh, b0, nl, m, q, h, inertia, order, c, yl, ql, hd, wl)
      integer, intent(in) :: n, ni, nh, b0, nl, order
      real(dp), intent(in) :: m(3, n), q(4, n), h(nh), inertia(3, ni)
      type(dmv_coef_t), intent(in) :: c
      real(dp), intent(out) :: yl(nl, 3), ql(nl, 4), hd(nl), wl(nl, 3)
      real(dp) :: hl(nl)
      integer :: k, b

      do k = 1, nl
         b = b0 + k - 1
         yl(k, 1) = m(1, b); yl(k, 2) = m(2, b); yl(k, 3) = m(3, b)
         ql(k, 1) = q(1, b); ql(k, 2) = q(2, b); ql(k, 3) = q(3, b); ql(k, 4) = q(4, b)
         hl(k) = h(min(b, nh))
      end do
      hd = hl / 2
      if (ni == 1) then
         call dmv_lanes_inverse(nl, c, hl, yl, wl)
      else
         do k = 1, nl
            b = b0 + k - 1
            wl(k, :) = dmv_modified_inverse(dmv_setup(inertia(:, b), order), hl(k), yl(k, :))
         end do
      end if
   end subroutine pack_lanes

   !> Writes lanes 1 .. nl back to bodies b0 .. b0+nl-1.
   pure subroutine unpack_lanes(n, b0, nl, yl, ql, m_out, q_out)
      integer, intent(in) :: n, b0, nl
      real(dp), intent(in) :: yl(nl, 3), ql(nl, 4)
      real(dp), intent(inout) :: m_out(3, n), q_out(4, n)
      integer :: k, b

      do k = 1, nl
         b = b0 + k - 1
         m_out(1, b) = yl(k, 1); m_out(2, b) = yl(k, 2); m_out(3, b) = yl(k, 3)
         q_out(1, b) = ql(k, 1); q_out(2, b) = ql(k, 2); q_out(3, b) = ql(k, 3); q_out(4, b) = ql(k, 4)
      end do
   end subroutine unpack_lanes

   !> nsteps steps of the bodies b0 .. b0+nl-1 (nl <= dmv_lanes_width) in lock-step (dmv_lanes),
   !> or, for one body, by dmv_step_scalar (the same results). A chunk of fewer than
   !> dmv_lanes_width bodies runs only its nl lanes: the padding lanes of a full-width run would
   !> hold bodies at rest, which converge at once and change nothing (the same results).
   pure subroutine integrate_chunk(n, ni, nh, b0, nl, m, q, h, inertia, order, c, nsteps, m_out, q_out)
      integer, intent(in) :: n, ni, nh, b0, nl, order, nsteps
      real(dp), intent(in) :: m(3, n), q(4, n), h(nh), inertia(3, ni)
      type(dmv_coef_t), intent(in) :: c
      real(dp), intent(inout) :: m_out(3, n), q_out(4, n)
      real(dp) :: yl(nl, 3), ql(nl, 4), hd(nl), wl(nl, 3), y1(3), q1(4), w1(3)
      integer :: step

      call pack_lanes(n, ni, nh, b0, nl, m, q, h, inertia, order, c, yl, ql, hd, wl)
      if (nl == 1) then
         y1 = yl(1, :); q1 = ql(1, :); w1 = wl(1, :)
         do step = 1, nsteps
            call dmv_step_scalar(y1, q1, hd(1), w1)
         end do
         m_out(:, b0) = y1; q_out(:, b0) = q1
         return
      end if
      do step = 1, nsteps
         call dmv_lanes(nl, yl, ql, hd, wl)
      end do
      call unpack_lanes(n, b0, nl, yl, ql, m_out, q_out)
   end subroutine integrate_chunk

   !> nsteps preprocessed DMV steps of size h for each of n bodies (m(3, n), q(4, n), h(nh), inertia(3, ni), with nh, ni either 1
   !> (shared) or n; invalid order or no solution of (14): NaN).
   !> The modified moments of inertia depend only on C and H, which the method conserves
   !> exactly, so they are computed once per body (same method as repeated steps).
   pure subroutine dmv_integrate_many(n, ni, nh, m, q, h, inertia, order, nsteps, m_out, q_out)
      integer, intent(in) :: n, ni, nh, order, nsteps
      real(dp), intent(in) :: m(3, n), q(4, n), h(nh), inertia(3, ni)
      real(dp), intent(out) :: m_out(3, n), q_out(4, n)
      integer, parameter :: nb = dmv_lanes_width
      type(dmv_coef_t) :: c
      integer :: b0, nl

      if (n < 1) return
      c = dmv_setup(inertia(:, 1), order)
      if (c%ncorr < 0) then
         m_out = ieee_value(1.0_dp, ieee_quiet_nan)
         q_out = ieee_value(1.0_dp, ieee_quiet_nan)
         return
      end if
      do b0 = 1, n, nb
         nl = min(nb, n - b0 + 1)
         if (nl == nb) then
            ! (the full width as a constant: loops of known length)
            call integrate_chunk(n, ni, nh, b0, nb, m, q, h, inertia, order, c, nsteps, m_out, q_out)
         else
            call integrate_chunk(n, ni, nh, b0, nl, m, q, h, inertia, order, c, nsteps, m_out, q_out)
         end if
      end do
   end subroutine dmv_integrate_many

   !> The modified inverse moments of inertia of n bodies for the step h, from their state m:
   !> w(1:3, j) = dmv_modified_inverse(dmv_setup(inertia(:, j), order), h, m(:, j)), w(ldw, n)
   !> with ldw >= 3 (the same bits as dmv_lanes_inverse for a shared inertia: the same
   !> operations). Torque-free, computed once before the steps (C and H are conserved).
   pure subroutine dmv_prepare_inverse(n, order, h, m, inertia, ldw, w)
      integer, intent(in) :: n, order, ldw
      real(dp), intent(in) :: h, m(3, n), inertia(3, n)
      real(dp), intent(inout) :: w(ldw, n)
      integer, parameter :: nb = dmv_lanes_width
      type(dmv_coef_t) :: c
      real(dp) :: yl(nb, 3), wl(nb, 3)
      integer :: b0, nl, k

      do b0 = 1, n, nb
         nl = min(nb, n - b0 + 1)
         do k = 1, nl
            yl(k, :) = m(:, b0 + k - 1)
         end do
         call block_inverse(nl, b0, order, 1, [h], n, inertia, c, yl(1:nl, :), wl(1:nl, :))
         do k = 1, nl
            w(1:3, b0 + k - 1) = wl(k, :)
         end do
      end do
   end subroutine dmv_prepare_inverse

   !> The modified inverse moments wl(k, :) of the bodies b0 .. b0+nl-1 of a block from their
   !> momenta yl(k, :), body j with the step h(min(j, nh)) (the lanes dmv_lanes_inverse for a
   !> block of one body shape, else body by body). c holds the coefficients of body b0 - 1 on
   !> entry (any value when b0 = 1) and of body b0 + nl - 1 on return: they are set up again
   !> only where the moments change.
   pure subroutine block_inverse(nl, b0, order, nh, h, ni, inertia, c, yl, wl)
      integer, intent(in) :: nl, b0, order, nh, ni
      real(dp), intent(in) :: h(nh), inertia(3, ni), yl(nl, 3)
      type(dmv_coef_t), intent(inout) :: c
      real(dp), intent(out) :: wl(nl, 3)
      real(dp) :: hl(dmv_lanes_width)
      integer :: k, j, i0, i1

      i0 = min(b0, ni)
      i1 = min(b0 + nl - 1, ni)
      if (b0 == 1) then
         c = dmv_setup(inertia(:, 1), order)
      else if (any(inertia(:, i0) /= inertia(:, min(b0 - 1, ni)))) then
         c = dmv_setup(inertia(:, i0), order)
      end if
      if (all(inertia(1, i0:i1) == inertia(1, i0)) .and. &
          all(inertia(2, i0:i1) == inertia(2, i0)) .and. &
          all(inertia(3, i0:i1) == inertia(3, i0))) then
         do k = 1, nl
            hl(k) = h(min(b0 + k - 1, nh))
         end do
         call dmv_lanes_inverse(nl, c, hl(1:nl), yl, wl)
      else
         do k = 1, nl
            j = b0 + k - 1
            ! (max(j - 1, 1): .and. does not short-circuit, so the column before body 1 must
            ! exist too when k = 1)
            if (k > 1 .and. any(inertia(:, min(j, ni)) /= inertia(:, min(max(j - 1, 1), ni)))) &
               c = dmv_setup(inertia(:, min(j, ni)), order)
            wl(k, :) = dmv_modified_inverse(c, h(min(j, nh)), yl(k, :))
         end do
      end if
   end subroutine block_inverse

   !> nsub DMV steps (Algorithm 3) of n bodies in place, m(3, n), q(4, n), body j with the step
   !> h(min(j, nh)) (nh = 1: one for all) and the inverse moments w(1:3, j) (w(ldw, n),
   !> ldw >= 3): the torque-free steps of frb.integrate's DMV methods (and of frb.dmv_step and
   !> frb.dmv_integrate). The bodies go through dmv_lanes in blocks of dmv_lanes_width starting
   !> at body 1, each block packed into the lanes once for all nsub steps; a last block of
   !> nl < dmv_lanes_width bodies runs only its nl lanes, a block of one body dmv_step_scalar
   !> (the blocks and operations of dmv_integrate_many, so the same results bit for bit). A body
   !> whose equation (14) has no solution gets NaN. With order and inertia present (the first
   !> steps of a run), the inverse moments w(1:3, :) are first computed from m as
   !> dmv_prepare_inverse does, in the same pass over the block.
   pure subroutine dmv_blocks_steps(n, nsub, nh, h, m, q, ldw, w, order, ni, inertia)
      integer, intent(in) :: n, nsub, nh, ldw
      real(dp), intent(in) :: h(nh)
      real(dp), intent(inout) :: m(3, n), q(4, n), w(ldw, n)
      integer, intent(in), optional :: order, ni
      real(dp), intent(in), optional :: inertia(3, *)
      integer, parameter :: nb = dmv_lanes_width
      type(dmv_coef_t) :: c
      integer :: b0, nl, s

      do b0 = 1, n, nb
         nl = min(nb, n - b0 + 1)
         if (nl == nb) then
            ! (the full width as a constant: loops of known length)
            call block_step(n, nb, b0, nsub, nh, h, m, q, ldw, w, c, order, ni, inertia)
         else if (nl == 1 .and. .not. present(order)) then
            do s = 1, nsub
               call dmv_step_scalar(m(:, b0), q(:, b0), h(min(b0, nh)) / 2, w(1:3, b0))
            end do
         else
            call block_step(n, nl, b0, nsub, nh, h, m, q, ldw, w, c, order, ni, inertia)
         end if
      end do
   end subroutine dmv_blocks_steps

   !> nsub steps of dmv_blocks_steps for its block of the nl bodies b0 .. b0+nl-1, packed into
   !> lanes: buffers of the full width seen by dmv_lanes as (nl, 3), (nl, 4) arrays (sequence
   !> association; no allocation: this runs every step). A block of one body steps by
   !> dmv_step_scalar (the same results).
   pure subroutine block_step(n, nl, b0, nsub, nh, h, m, q, ldw, w, c, order, ni, inertia)
      integer, intent(in) :: n, nl, b0, nsub, nh, ldw
      real(dp), intent(in) :: h(nh)
      real(dp), intent(inout) :: m(3, n), q(4, n), w(ldw, n)
      type(dmv_coef_t), intent(inout) :: c
      integer, intent(in), optional :: order, ni
      real(dp), intent(in), optional :: inertia(3, *)
      integer, parameter :: nb = dmv_lanes_width
      real(dp) :: yl(3 * nb), ql(4 * nb), hd(nb), wl(3 * nb)
      integer :: k, b, i, s

      do k = 1, nl
         b = b0 + k - 1
         do i = 1, 3
            yl(k + (i - 1) * nl) = m(i, b)
         end do
         do i = 1, 4
            ql(k + (i - 1) * nl) = q(i, b)
         end do
         hd(k) = h(min(b, nh)) / 2
      end do
      if (present(order)) then
         call block_inverse(nl, b0, order, nh, h, ni, inertia, c, yl, wl)
         do k = 1, nl
            do i = 1, 3
               w(i, b0 + k - 1) = wl(k + (i - 1) * nl)
            end do
         end do
      else
         do k = 1, nl
            do i = 1, 3
               wl(k + (i - 1) * nl) = w(i, b0 + k - 1)
            end do
         end do
      end if
      if (nl == 1) then
         do s = 1, nsub
            call dmv_step_scalar(yl(1:3), ql(1:4), hd(1), wl(1:3))
         end do
      else
         do s = 1, nsub
            call dmv_lanes(nl, yl, ql, hd, wl)
         end do
      end if
      do k = 1, nl
         b = b0 + k - 1
         do i = 1, 3
            m(i, b) = yl(k + (i - 1) * nl)
         end do
         do i = 1, 4
            q(i, b) = ql(k + (i - 1) * nl)
         end do
      end do
   end subroutine block_step

end module moser_veselov
