! The implicit Lie-group methods of P. Krysl, "Dynamically equivalent implicit algorithms for the
! integration of rigid body rotations", Commun. Numer. Meth. Engng, 2008 (sections 3 and 4:
! its algorithms and the reference methods it compares with), for frb.integrate, with the
! corrections stated below. Notation of the paper: Pi = m (body
! momentum), omega = I^-1 Pi, R = Q = E(q), exp[Psi] = exp(hat Psi), a step t_{n-1} -> t_n =
! t_{n-1} + h, T_k = T_b(t_k, R_k).
!
!   TRAP     (eq. (14)):      R_n = R_{n-1} exp[h/2 w_{n-1}] exp[h/2 w_n],
!            Pi_n = Pi_{n-1} + h/2 (-w_{n-1} x Pi_{n-1} + T_{n-1} - w_n x Pi_n + T_n),
!            T_n = T(t_n, R_n); unknown Pi_n.
!   IMID:            Pb = Pi_{n-1} - h/2 w(Pb) x Pb + h/2 T_{n-1/2}, R_n = R_{n-1} exp[h w(Pb)],
!            Pi_n = 2 Pb - Pi_{n-1}, T_{n-1/2} = T(t_{n-1} + h/2, R_{n-1} exp[h/2 w(Pb)])
!            (torque time t_{n-1} + h/2, not the printed t_n + h/2: the step is t_{n-1} -> t_n);
!            unknown Pb.
!   TRAPM    (eq. (20)):     R_n as TRAP, Pi_n = R_n^T R_{n-1} (Pi_{n-1} + h/2 T_{n-1}) + h/2 T_n;
!            unknown Pi_n.
!   IMIDM:           Psi = h I^-1 (exp[-Psi/2] Pi_{n-1} + h/2 T_{n-1/2}), R_n = R_{n-1} exp[Psi],
!            Pi_n = exp[-Psi] Pi_{n-1} + h exp[-Psi/2] T_{n-1/2},
!            T_{n-1/2} = T(t_{n-1} + h/2, R_{n-1} exp[Psi/2]); the printed Psi~_n is Psi_n (the same
!            unknown), torque time as for IMID; unknown Psi.
!   SWC1:            Psi = h/2 (w_n + w_{n-1}), R_n = R_{n-1} exp[Psi],
!            Pi_n = exp[-Psi] Pi_{n-1} + h exp[-Psi/2] T_{n-1/2}; T_{n-1/2} is not defined in the
!            paper; CHOICE: T_{n-1/2} = T(t_{n-1} + h/2, R_{n-1} exp[Psi/2]), as in IMIDM;
!            unknown Psi (Pi_n is then explicit).
!   AKW:             Pb = (Pi_n + Pi_{n-1})/2, Pi_n = Pi_{n-1} - h w(Pb) x Pb + h/2 (T_{n-1} + T_n),
!            R_n = R_{n-1} cay[h w(Pb)], cay(A) = (1 - A/2)^-1 (1 + A/2) (quat_cayley;
!            not defined in the paper: this one keeps the spatial momentum exact),
!            T_n = T(t_n, R_n); unknown Pb.
!   BBTRAP:          Psi = h/2 (w_n + w_{n-1}), R_n = R_{n-1} exp[Psi],
!            Pi_n = exp[-Psi] (Pi_{n-1} + h/2 T_{n-1}) + h/2 T_n; unknown Psi.
!   BBTRAPWD:        as BBTRAP with Psi = h/2 ((dexp_{-Psi})^-1 w_n + w_{n-1}); unknown Psi.
! Other slips of the paper concern notation only (eq. (13)'s sign of the exponent, skew[w] as
! the hat map) or a claim: TRAP conserves the energy of Pi_n - h/2 w_n x Pi_n (the state pushed
! by a forward-Euler half step), not that of Pi_n (tests/test_krysl.py checks both).
!
! Solver (the paper specifies none): Newton's method on the 3-vector unknown x with the exact
! Jacobian of the residual for the current torque values; the torque is lagged (re-evaluated
! by torque_batch at the current iterate at the start of every iteration, i.e. simplified
! Newton for the torque). A body stops when its update is at most newton_rtol = 4 eps times
! |x| (or x = 0); then it is left alone. After newton_max_iter = 50 iterations without
! stopping, info = info_no_convergence; a singular Newton matrix gives info_no_solution, an
! iterate beyond the float64 range info_non_finite.
! Predictors are explicit (forward Euler / momentum forward Euler with the known torque).
! Residuals are written as x - (constant of the step) - (small iterate-dependent term), with
! rotations entering as increments exp[-psi] v - v, so that the rounding noise of the residual
! stays far below newton_rtol |x|. The final state uses the torque of the body's last iteration.
! Jacobians (d = left-trivialised derivative, dexp_psi of eq. (9)):
!   d(w(P) x P)/dP = hat(w) - hat(P) I^-1;   d(exp[psi] a)/dpsi = -hat(exp[psi] a) dexp_psi;
!   d((dexp_psi)^-1 v)/dpsi = hat(v)/2 - c2 (hat(psi x v) + hat(psi) hat(v))
!                            + 2 c2'(|psi|^2) (psi x (psi x v)) psi^T,
!   c2(s) = (1 - (a/2) cot(a/2)) / a^2, s = a^2.
! Torque-free bodies (not torqued(tq)) iterate body by body with no torque evaluation.
module midpoint_trapezoid
   use kinds, only: dp
   use step_interface
   use wheels, only: wheels_t, wheels_active
   use numbers_table, only: variant_trap, variant_imid, variant_trapm, variant_imidm, variant_swc1, &
                            variant_akw, variant_bbtrap, variant_bbtrapwd
   use torques, only: torque_t, user_torque_cb, torque_batch, torqued
   use rotations, only: cross, hat, solve3, qmul, qrotate, qrotate_tr, quat_exp, quat_cayley, dexp_coefficients
   implicit none
   private

   public :: midpoint_trapezoid_step
   ! the operations of one body's step, shared with the lanes of implicit_lanes
   public :: body_t, setup, torque_time, needs_t0, finish, dexpinv_coef

   ! Per-body constants of a step: c (constant of the residual), a (vector the rotation acts
   ! on), m0 = Pi_{n-1}, w0 = omega_{n-1}, t0 = T_{n-1}, qa (quaternion the torque point and
   ! the final attitude start from), iv = 1 / inertia. The workspace ws is not used.
   type :: body_t
      real(dp) :: c(3), a(3), m0(3), w0(3), t0(3), qa(4), iv(3)
   end type body_t

contains

   pure function eye3() result(a)
      real(dp) :: a(3, 3)
      a = 0.0_dp
      a(1, 1) = 1.0_dp; a(2, 2) = 1.0_dp; a(3, 3) = 1.0_dp
   end function eye3

   !> exp[-psi] v - v for the unit quaternion qp of exp[psi] (the increment, without rounding
   !> against v).
   pure function rot_tr_delta(qp, v) result(r)
      real(dp), intent(in) :: qp(4), v(3)
      real(dp) :: r(3), t(3)
      t = cross(qp(2:4), v)
      r = 2.0_dp * (-qp(1) * t + cross(qp(2:4), t))
   end function rot_tr_delta

   !> Matrix of dexp_psi = 1 + c1 hat psi + c2 hat psi^2 (Krysl 2008, eq. (9)).
   pure function dexp_mat(psi) result(d)
      real(dp), intent(in) :: psi(3)
      real(dp) :: d(3, 3), c1, c2, p(3, 3)
      call dexp_coefficients(psi, c1, c2)
      p = hat(psi)
      d = eye3() + c1 * p + c2 * matmul(p, p)
   end function dexp_mat

   !> c2(s) = (1 - (a/2) cot(a/2)) / a^2 and dc2/ds, s = a^2 = |psi|^2 (series for small s:
   !> c2 = sum_{k>=1} (-1)^(k+1) B_2k s^(k-1) / (2k)!).
   pure subroutine dexpinv_coef(a2, c2, dc2)
      real(dp), intent(in) :: a2
      real(dp), intent(out) :: c2, dc2
      real(dp) :: a, f, fp, ct
      if (a2 < 1.0e-4_dp) then
         c2 = 1.0_dp / 12 + a2 * (1.0_dp / 720 + a2 * (1.0_dp / 30240 + a2 / 1209600))
         dc2 = 1.0_dp / 720 + a2 * (2.0_dp / 30240 + a2 * (3.0_dp / 1209600 + a2 * (4.0_dp / 47900160)))
      else
         a = sqrt(a2)
         ct = cos(0.5_dp * a) / sin(0.5_dp * a)
         f = 1.0_dp - 0.5_dp * a * ct
         c2 = f / a2
         ! f'(a) = -cot(a/2)/2 + (a/4) / sin^2(a/2)
         fp = -0.5_dp * ct + 0.25_dp * a / sin(0.5_dp * a)**2
         dc2 = fp / (2.0_dp * a * a2) - f / (a2 * a2)
      end if
   end subroutine dexpinv_coef

   !> Step constants and the predictor x of one body.
   pure subroutine setup(v, h, m0, q0, iv, t0, bd, x)
      integer, intent(in) :: v
      real(dp), intent(in) :: h, m0(3), q0(4), iv(3), t0(3)
      type(body_t), intent(out) :: bd
      real(dp), intent(out) :: x(3)
      real(dp) :: w0(3), f(3), hh
      hh = 0.5_dp * h
      w0 = iv * m0
      f = cross(m0, w0)              ! m x w = -w x m
      bd%m0 = m0; bd%w0 = w0; bd%t0 = t0; bd%iv = iv; bd%a = 0.0_dp; bd%qa = q0
      select case (v)
      case (variant_trap)
         bd%c = m0 + hh * (f + t0)
         bd%qa = qmul(q0, quat_exp(hh * w0))
         x = m0 + h * (f + t0)
      case (variant_imid)
         bd%c = m0
         x = m0 + hh * f
      case (variant_akw)
         bd%c = m0 + (0.5_dp * hh) * t0
         x = bd%c + hh * f
      case (variant_trapm)
         bd%qa = qmul(q0, quat_exp(hh * w0))
         bd%a = m0 + hh * t0
         bd%c = bd%a + rot_tr_delta(quat_exp(hh * w0), bd%a)
         x = bd%c + hh * t0
      case (variant_imidm)
         bd%a = m0
         bd%c = h * w0
         x = bd%c
      case (variant_swc1)
         bd%a = m0
         bd%c = hh * (w0 + iv * m0)
         x = bd%c
      case default ! bbtrap, bbtrapwd
         bd%a = m0 + hh * t0
         bd%c = hh * (w0 + iv * bd%a)
         x = bd%c
      end select
   end subroutine setup

   !> Quaternion at which the torque of the iterate x is evaluated (time: torque_time).
   pure function torque_point(v, h, bd, x) result(qt)
      integer, intent(in) :: v
      real(dp), intent(in) :: h, x(3)
      type(body_t), intent(in) :: bd
      real(dp) :: qt(4)
      select case (v)
      case (variant_trap, variant_trapm, variant_imid)
         qt = qmul(bd%qa, quat_exp((0.5_dp * h) * (bd%iv * x)))
      case (variant_akw)
         qt = qmul(bd%qa, quat_cayley(h * (bd%iv * x)))
      case (variant_imidm, variant_swc1)
         qt = qmul(bd%qa, quat_exp(0.5_dp * x))
      case default
         qt = qmul(bd%qa, quat_exp(x))
      end select
   end function torque_point

   !> Time of the torque inside the step [t, t + h]: t + h/2 for the midpoint methods (the
   !> midpoint of t_{n-1} -> t_n; the paper prints t_n + h/2).
   pure real(dp) function torque_time(v, t, h)
      integer, intent(in) :: v
      real(dp), intent(in) :: t, h
      select case (v)
      case (variant_imid, variant_imidm, variant_swc1)
         torque_time = t + 0.5_dp * h
      case default
         torque_time = t + h
      end select
   end function torque_time

   !> Does the method need T_{n-1} = T(t_{n-1}, R_{n-1})?
   pure logical function needs_t0(v)
      integer, intent(in) :: v
      needs_t0 = .not. (v == variant_imid .or. v == variant_imidm .or. v == variant_swc1)
   end function needs_t0

   !> Residual f(x) and its Jacobian (torque tb held fixed).
   pure subroutine residual(v, h, bd, x, tb, f, jac)
      integer, intent(in) :: v
      real(dp), intent(in) :: h, x(3), tb(3)
      type(body_t), intent(in) :: bd
      real(dp), intent(out) :: f(3), jac(3, 3)
      real(dp) :: hh, w(3), d(3), b(3), vv(3), xv(3), c2, dc2, hx(3, 3), m(3, 3)
      integer :: i
      hh = 0.5_dp * h
      select case (v)
      case (variant_trap, variant_imid, variant_akw)
         w = bd%iv * x
         if (v == variant_akw) then
            f = x - bd%c + hh * cross(w, x) - (0.5_dp * hh) * tb
         else
            f = x - bd%c + hh * (cross(w, x) - tb)
         end if
         m = hat(x)
         do i = 1, 3
            m(:, i) = m(:, i) * bd%iv(i)
         end do
         jac = eye3() + hh * (hat(w) - m)
      case (variant_trapm)
         w = bd%iv * x
         d = rot_tr_delta(quat_exp(hh * w), bd%c)
         b = bd%c + d
         f = x - bd%c - d - hh * tb
         m = matmul(hat(b), dexp_mat(-hh * w))
         do i = 1, 3
            m(:, i) = m(:, i) * bd%iv(i)
         end do
         jac = eye3() - hh * m
      case (variant_imidm)
         d = rot_tr_delta(quat_exp(0.5_dp * x), bd%a)
         b = bd%a + d
         f = x - bd%c - h * (bd%iv * (d + hh * tb))
         m = matmul(hat(b), dexp_mat(-0.5_dp * x))
         do i = 1, 3
            m(i, :) = m(i, :) * bd%iv(i)
         end do
         jac = eye3() - hh * m
      case (variant_swc1, variant_bbtrap)
         d = rot_tr_delta(quat_exp(x), bd%a)
         b = bd%a + d
         if (v == variant_swc1) then
            f = x - bd%c - hh * (bd%iv * (d + h * qrotate_tr(quat_exp(0.5_dp * x), tb)))
         else
            f = x - bd%c - hh * (bd%iv * (d + hh * tb))
         end if
         m = matmul(hat(b), dexp_mat(-x))
         do i = 1, 3
            m(i, :) = m(i, :) * bd%iv(i)
         end do
         jac = eye3() - hh * m
      case default ! bbtrapwd
         d = rot_tr_delta(quat_exp(x), bd%a)
         b = bd%a + d
         vv = bd%iv * (bd%a + d + hh * tb)
         xv = cross(x, vv)
         call dexpinv_coef(dot_product(x, x), c2, dc2)
         f = x - bd%c - hh * (bd%iv * (d + hh * tb) + 0.5_dp * xv + c2 * cross(x, xv))
         ! d/dx of (dexp_{-x})^-1 vv(x)
         hx = hat(x)
         m = matmul(hat(b), dexp_mat(-x))
         do i = 1, 3
            m(i, :) = m(i, :) * bd%iv(i)
         end do
         m = matmul(eye3() + 0.5_dp * hx + c2 * matmul(hx, hx), m)
         ! minus M(-x, vv), M(psi, v) = hat(v)/2 - c2 (hat(psi x v) + hat(psi) hat(v))
         !                              + 2 c2' (psi x (psi x v)) psi^T
         m = m - 0.5_dp * hat(vv) - c2 * (hat(xv) + matmul(hx, hat(vv)))
         b = cross(x, xv)
         do i = 1, 3
            m(:, i) = m(:, i) + (2.0_dp * dc2 * x(i)) * b
         end do
         jac = eye3() - hh * m
      end select
   end subroutine residual

   !> One Newton update of x; conv when the update is at most newton_rtol |x|; ok = .false.
   !> when the Newton matrix is singular (bad = 1) or x is not finite (bad = 2).
   pure subroutine newton_update(v, h, bd, x, tb, conv, bad)
      integer, intent(in) :: v
      real(dp), intent(in) :: h, tb(3)
      type(body_t), intent(in) :: bd
      real(dp), intent(inout) :: x(3)
      logical, intent(out) :: conv
      integer, intent(out) :: bad
      real(dp) :: f(3), jac(3, 3), dx(3)
      logical :: ok
      call residual(v, h, bd, x, tb, f, jac)
      call solve3(jac, f, dx, ok)
      conv = .false.
      if (.not. ok) then
         bad = 1
         return
      end if
      x = x - dx
      if (.not. all(abs(x) <= huge(1.0_dp))) then
         bad = 2
         return
      end if
      bad = 0
      conv = sum(dx**2) <= newton_rtol**2 * sum(x**2)
   end subroutine newton_update

   !> The new state from the converged unknown x and the torque tb of the last iteration.
   pure subroutine finish(v, h, bd, x, tb, m, q)
      integer, intent(in) :: v
      real(dp), intent(in) :: h, x(3), tb(3)
      type(body_t), intent(in) :: bd
      real(dp), intent(out) :: m(3), q(4)
      real(dp) :: hh
      hh = 0.5_dp * h
      select case (v)
      case (variant_trap, variant_trapm)
         m = x
         q = qmul(bd%qa, quat_exp(hh * (bd%iv * x)))
      case (variant_imid)
         m = 2.0_dp * x - bd%m0
         q = qmul(bd%qa, quat_exp(h * (bd%iv * x)))
      case (variant_akw)
         m = 2.0_dp * x - bd%m0
         q = qmul(bd%qa, quat_cayley(h * (bd%iv * x)))
      case (variant_imidm, variant_swc1)
         m = bd%a + rot_tr_delta(quat_exp(x), bd%a) + h * qrotate_tr(quat_exp(0.5_dp * x), tb)
         q = qmul(bd%qa, quat_exp(x))
      case default
         m = bd%a + rot_tr_delta(quat_exp(x), bd%a) + hh * tb
         q = qmul(bd%qa, quat_exp(x))
      end select
   end subroutine finish

   subroutine midpoint_trapezoid_step(meth, n, k, t, h, m, q, hw, inertia, ws, tq, wh, cb, info)
      type(method_t), intent(in) :: meth; type(torque_t), intent(in) :: tq; procedure(user_torque_cb) :: cb
      integer, intent(in) :: n, k; integer, intent(inout) :: info(n); real(dp), intent(in) :: t, h, inertia(3, n)
      real(dp), intent(inout) :: m(3, n), q(4, n), ws(nws, n)   ! (step_interface's method_step)
      type(wheels_t), intent(in) :: wh; real(dp), intent(inout) :: hw(wh%nw, n)
      integer, parameter :: active = 0, done = 1, failed_solve = 2, failed_finite = 3
      type(body_t) :: bd
      type(body_t), allocatable :: bds(:)
      real(dp), allocatable :: xs(:, :), tb(:, :), tl(:, :), qt(:, :)
      integer, allocatable :: st(:)
      real(dp) :: x(3), zero(3), tt
      logical :: conv
      integer :: v, j, it, bad

      v = meth%variant
      if (v < variant_trap .or. v > variant_bbtrapwd .or. wheels_active(wh)) then
         info = info_not_implemented
         return
      end if
      zero = 0.0_dp
      if (.not. torqued(tq)) then
         ! torque-free: body by body, no torque evaluation
         do j = 1, n
            call setup(v, h, m(:, j), q(:, j), 1.0_dp / inertia(:, j), zero, bd, x)
            conv = .false.
            bad = 0
            do it = 1, newton_max_iter
               call newton_update(v, h, bd, x, zero, conv, bad)
               if (conv .or. bad /= 0) exit
            end do
            if (bad == 1) then
               info(j) = info_no_solution
            else if (bad == 2) then
               info(j) = info_non_finite
            else if (.not. conv) then
               info(j) = info_no_convergence
            else
               call finish(v, h, bd, x, zero, m(:, j), q(:, j))
            end if
         end do
         return
      end if

      allocate (bds(n), xs(3, n), tb(3, n), tl(3, n), qt(4, n), st(n))
      if (needs_t0(v)) then
         call torque_batch(tq, n, t, k, 4, q, m, inertia, tb, cb)
      else
         tb = 0.0_dp
      end if
      do j = 1, n
         call setup(v, h, m(:, j), q(:, j), 1.0_dp / inertia(:, j), tb(:, j), bds(j), xs(:, j))
      end do
      st = active
      qt = q
      tt = torque_time(v, t, h)
      do it = 1, newton_max_iter
         do j = 1, n
            if (st(j) == active) qt(:, j) = torque_point(v, h, bds(j), xs(:, j))
         end do
         call torque_batch(tq, n, tt, k, 4, qt, m, inertia, tb, cb)
         do j = 1, n
            if (st(j) /= active) cycle
            tl(:, j) = tb(:, j)
            call newton_update(v, h, bds(j), xs(:, j), tl(:, j), conv, bad)
            if (bad == 1) then
               st(j) = failed_solve
            else if (bad == 2) then
               st(j) = failed_finite
            else if (conv) then
               st(j) = done
            end if
         end do
         if (all(st /= active)) exit
      end do
      do j = 1, n
         select case (st(j))
         case (done)
            call finish(v, h, bds(j), xs(:, j), tl(:, j), m(:, j), q(:, j))
         case (failed_solve)
            info(j) = info_no_solution
         case (failed_finite)
            info(j) = info_non_finite
         case default
            info(j) = info_no_convergence
         end select
      end do
   end subroutine midpoint_trapezoid_step

end module midpoint_trapezoid
