! The free-body integrators of G. Vilmart, "Rigid body dynamics", 2013 (HAL preprint
! hal-00912388), and its splittings with an external potential, for frb.integrate. Notation of
! that paper: y = m the body momentum, J = diag(I), w = J^-1 = 1/I, q the attitude quaternion (scalar
! first), Q = E(q). Variants (meth%variant):
!
! * DMV2, DMV4, DMV6, DMV8 (variant_dmv2 ... variant_dmv8): the preprocessed discrete Moser-Veselov method
!   of order 2p, Algorithm 3 (eqs. (12)-(15)) with the modified moments of Algorithm 4 and
!   Table 1 (E. Hairer, G. Vilmart, J. Phys. A 39, 2006), with two corrections of the printed
!   formulas: the Cayley transform of the attitude update is (1 + hat e)(1 - hat e)^-1 (printed
!   with (1 + hat e)^-1, which is the identity), and the corrections of Algorithm 4 carry the
!   increasing powers h^2, h^4, h^6 (printed all as h^2; only the increasing powers give orders
!   4, 6, 8). Computed by module moser_veselov (dmv_setup, dmv_modified_inverse, dmv_step_inv),
!   whose solver reduces (14) exactly to a scalar quartic solved by Newton's method (its own
!   stopping rule, header of moser_veselov.f90; the paper asks for "a few fixed-point
!   iterations" without a count, and those diverge for large |h| |omega|). A NaN result of dmv_step_inv means that (14) has
!   no solution (|h| |omega| beyond about 1): info_no_solution.
!   Torque-free, the modified inverse moments depend on y only through the conserved C, H; they
!   are computed once per body at step k = 1 and kept in ws(1:3, j), and the chunk's bodies are
!   stepped in lock-step by dmv_blocks_steps (the lanes dmv_lanes, blocks of 16 from the chunk's
!   first body; frb.dmv_integrate runs here too). With a torque they are recomputed every step
!   from the momentum entering the free step, and the bodies are stepped one by one.
! * SPLIT3 (variant_split3): the three-rotation splitting H = R1 + R2 + R3, R_j = y_j^2 / (2 I_j)
!   (section 3 of the paper), in the symmetric composition R3(h/2) R2(h/2) R1(h) R2(h/2) R3(h/2)
!   (the paper prints R1(h/2) as the last factor, which is not symmetric). The flow of R_j over t: a = y_j / I_j is constant,
!   y <- exp(-a t hat e_j) y, q <- q (cos(a t / 2), sin(a t / 2) e_j).
! * SYMROT (variant_symrot): "Algorithm 2", H = R + S, R = (1/I1 - 1/I2) y1^2 / 2,
!   S = ((y1^2 + y2^2) / I2 + y3^2 / I3) / 2, step R(h/2) S(h) R(h/2), with the rates of the two
!   flows derived from y' = y x grad R and y' = y x grad S: alpha = (1/I1 - 1/I2) y1,
!   beta = (1/I3 - 1/I2) y3 (printed alpha = y1/I1 and beta = 1/I3 - 1/I2 give local error O(h)):
!   R over t: y <- exp(-alpha t hat e1) y, q <- q (cos(alpha t/2), sin(alpha t/2) e1);
!   S over t: y <- exp(-beta t hat e3) y, q <- q a(t y / I2) (cos(beta t/2), sin(beta t/2) e3),
!   a(omega) = quat_exp(omega) and y the momentum entering the S flow; q is renormalised
!   after each step (as RK4's), so that |q| = 1 stays at the rounding level. Its sines and
!   cosines (and those of SPLIT3's rotations) are lane_math's lane_sincos (within 1 ulp), which
!   the lanes of lie_group_lanes vectorise with the same bits.
!   Choice: the axes are used as given (axis 3 plays the role of the symmetry axis; no
!   permutation). The method is exact for I1 = I2 (R = 0) and for I2 = I3 (beta = 0, S = C/I2
!   commutes with R), NOT for I1 = I3 (Remark 3 claims it there too, but then
!   {R, S} = -(1/I1 - 1/I2)(1/I3 - 1/I2) y1 y2 y3 is not zero).
! * MIDPOINT (variant_midpoint): the implicit midpoint rule of Remark 4:
!   Y = y + (h/2) Y x (w Y) solved by Newton's method (exact 3x3 Jacobian
!   1 + (h/2) hat(w Y) - (h/2) hat(Y) diag(w), predictor Y0 = y + (h/2) y x (w y)),
!   y+ = 2 Y - y, q+ = q rho with rho the Cayley quaternion (1, e) / sqrt(1 + |e|^2) of
!   e = h w Y / 2, i.e. rho = quat_cayley(h w Y) (rotations: quat_cayley(a) has a/2 in it).
!   Newton stops when |dY| <= newton_rtol |Y| (or Y = 0); after newton_max_iter iterations (or a
!   non-finite iterate) the body gets info_no_convergence. newton_rtol = 4 eps,
!   newton_max_iter = 50 (step_interface).
! * NYSTROM4 (variant_nystrom4): the fourth-order Nystrom splitting of section 4 of the paper,
!   U(h/6) T(h/2) U(2h/3) V(-h^3/72) T(h/2) U(h/6), with T the EXACT free flow (exact_free_flows of
!   exact_splittings: free_flow of exact_flow, bodies in lock-step), U the kick m += tau T_b(t, Q) of the field torque
!   and V the kick m += field_v_kick(Q, h) (over -h^3/72) of the modified potential V = {U, {U, T}} (its
!   flow derived again from V, see torques.f90: the printed heavy-top V-flow is wrong by a factor
!   -2 and lacks its third component; the property used is {U, {U, {U, T}}} = 0, where the paper
!   states {T, {T, U}} = 0, which does not hold). U(2h/3) and V
!   commute (both keep Q fixed). The Python layer admits only torque None (then the step is one
!   exact free flow over h) or a field torque (constant_field, heavy_top). The U kicks use the
!   times t, t + h/2, t + h (the field torques are time independent).
!
! With a torque, DMVn, SPLIT3, SYMROT and MIDPOINT are the free part Phi^T_h of the Strang
! splitting eq. (16) (its phi^U_{h_2} read as phi^U_{h/2}): kick h/2 with T_b(t, Q), the free method over h,
! kick h/2 with T_b(t + h, Q); this keeps the symmetric free methods symmetric also for
! time-dependent torques. Torque-free, the kicks are skipped. With reaction wheels (module
! wheels) the step is split in the total momentum M = m + A h: the wheel kick (wheels.wheel_kick,
! order 2) over h/2, the free method on M over h, the wheel kick over h/2 (each part keeps Q M,
! as the free methods keep Q m; the spatial L = Q M carried from step to step).
!
! Every stage is a loop over the bodies; torques come from one torque_batch call per stage (the
! kicks: torque_flow, the exact flow of the torque part). No
! body's arithmetic depends on another body.
module approximate_free_flows
   use, intrinsic :: ieee_arithmetic, only: ieee_is_finite
   use kinds, only: dp
   use step_interface
   use wheels, only: wheels_t, wheels_active, total_momenta, body_momenta, wheel_kick
   ! the variants (generated by tools/numbers_table.py; the method table of frb.methods reads
   ! the same names)
   use numbers_table, only: variant_dmv2, variant_dmv4, variant_dmv6, variant_dmv8, variant_split3, &
                            variant_symrot, variant_midpoint, variant_nystrom4
   use checks, only: all_finite
   use torques, only: torque_t, user_torque_cb, torque_batch, torque_flow, torqued, field_v_kick
   use rotations, only: cross, qmul, quat_cayley, solve3, quat_normalize
   use lane_math, only: lane_sincos
   use moser_veselov, only: dmv_coef_t, dmv_setup, dmv_modified_inverse, dmv_step_inv
   use simd_dispatch, only: dmv_blocks_steps
   use exact_splittings, only: exact_free_flows
   implicit none
   private

   public :: approximate_flow_step, approximate_free_steps


contains

   subroutine approximate_flow_step(meth, n, k, t, h, m, q, hw, inertia, ws, tq, wh, cb, info)
      type(method_t), intent(in) :: meth; type(torque_t), intent(in) :: tq; procedure(user_torque_cb) :: cb
      integer, intent(in) :: n, k; integer, intent(inout) :: info(n); real(dp), intent(in) :: t, h, inertia(3, n)
      real(dp), intent(inout) :: m(3, n), q(4, n), ws(nws, n)   ! (step_interface's method_step)
      type(wheels_t), intent(in) :: wh; real(dp), intent(inout) :: hw(wh%nw, n)
      real(dp), allocatable :: tb(:, :), mt(:, :), el(:, :)

      if (wheels_active(wh)) then
         select case (meth%variant)
         case (variant_dmv2, variant_dmv4, variant_dmv6, variant_dmv8, variant_split3, variant_symrot, variant_midpoint)
            allocate (mt(3, n), el(3, n))
            call total_momenta(wh, tq, n, m, q, hw, ws, mt, el)
            call wheel_kick(wh, tq, n, k, t, 0.5_dp * h, mt, el, q, hw, inertia, cb)
            call free_step(meth%variant, n, h, mt, q, inertia, info)
            call wheel_kick(wh, tq, n, k, t + h, 0.5_dp * h, mt, el, q, hw, inertia, cb)
            call body_momenta(wh, tq, n, el, q, hw, ws, m)
         case default
            info = info_not_implemented
         end select
         return
      end if
      if (.not. torqued(tq)) then
         call approximate_free_steps(meth, n, k - 1, 1, 1, [h], m, 4, q, n, inertia, ws, info)
         return
      end if
      select case (meth%variant)
      case (variant_dmv2, variant_dmv4, variant_dmv6, variant_dmv8, variant_split3, variant_symrot, variant_midpoint)
         allocate (tb(3, n))
         call torque_flow(tq, n, t, k, 4, q, m, inertia, 0.5_dp * h, tb, cb)
         call free_step(meth%variant, n, h, m, q, inertia, info)
         call torque_flow(tq, n, t + h, k, 4, q, m, inertia, 0.5_dp * h, tb, cb)
      case (variant_nystrom4)
         call nystrom4_step(n, k, t, h, m, q, inertia, tq, cb)
      case default
         info = info_not_implemented
      end select
   end subroutine approximate_flow_step

   !> Torque-free steps (step_interface's method_free_steps): DMVn through the lanes
   !> (dmv_blocks_steps: packed once for the nsub steps, the modified inverse moments computed
   !> at the first step, k = 0, and kept in ws(1:3, j), since they depend on the state only
   !> through the conserved C and H), body j with the step h(min(j, nh)); NYSTROM4 is then the
   !> exact free flow; SPLIT3, SYMROT and MIDPOINT step by step (one step length, nh = 1).
   subroutine approximate_free_steps(meth, n, k, nsub, nh, h, m, natt, att, ni, inertia, ws, info)
      type(method_t), intent(in) :: meth
      integer, intent(in) :: n, k, nsub, nh, natt, ni
      real(dp), intent(in) :: h(nh), inertia(3, ni)
      real(dp), intent(inout) :: m(3, n), att(natt, n), ws(nws, n)
      integer, intent(inout) :: info(n)
      integer :: j, s

      if (natt /= 4) then
         info = info_not_implemented
         return
      end if
      select case (meth%variant)
      case (variant_dmv2, variant_dmv4, variant_dmv6, variant_dmv8)
         ! the lanes, in blocks of dmv_lanes_width bodies from body 1 of the chunk (chunks start
         ! at bodies 1, 1 + engine_chunk, ...)
         if (k == 0) then
            call dmv_blocks_steps(n, nsub, nh, h, m, att, nws, ws, meth%variant, ni, inertia)
         else
            call dmv_blocks_steps(n, nsub, nh, h, m, att, nws, ws)
         end if
         if (all_finite(3 * n, m) .and. all_finite(4 * n, att)) return
         do j = 1, n
            if (.not. (all_finite(3, m(:, j)) .and. all_finite(4, att(:, j)))) &
               info(j) = info_no_solution
         end do
      case (variant_nystrom4)
         do s = 1, nsub
            call exact_free_flows(n, nh, h, 0, m, 4, att, ni, inertia)
         end do
      case (variant_split3, variant_symrot, variant_midpoint)
         ! body by body: each with its own step (a batch rescaled body by body has one per body)
         do j = 1, n
            do s = 1, nsub
               call free_step(meth%variant, 1, h(min(j, nh)), m(:, j:j), att(:, j:j), &
                              inertia(:, min(j, ni):min(j, ni)), info(j:j))
            end do
         end do
      case default
         info = info_not_implemented
      end select
   end subroutine approximate_free_steps

   !> The free method of the variant over h for all bodies (one stage of a torqued step; DMVn
   !> with the modified inverse moments of the momentum entering the stage, body by body).
   subroutine free_step(variant, n, h, m, q, inertia, info)
      integer, intent(in) :: variant, n
      real(dp), intent(in) :: h, inertia(3, n)
      real(dp), intent(inout) :: m(3, n), q(4, n)
      integer, intent(inout) :: info(n)
      type(dmv_coef_t) :: c
      real(dp) :: w(3), m1(3), q1(4)
      integer :: j

      select case (variant)
      case (variant_dmv2, variant_dmv4, variant_dmv6, variant_dmv8)
         do j = 1, n
            c = dmv_setup(inertia(:, j), variant)
            w = dmv_modified_inverse(c, h, m(:, j))
            call dmv_step_inv(m(:, j), q(:, j), h, w, m1, q1)
            if (.not. (all(ieee_is_finite(m1)) .and. all(ieee_is_finite(q1)))) then
               info(j) = info_no_solution
               cycle
            end if
            m(:, j) = m1
            q(:, j) = q1
         end do
      case (variant_split3)
         do j = 1, n
            call split3_one(m(:, j), q(:, j), h, inertia(:, j))
         end do
      case (variant_symrot)
         do j = 1, n
            call symrot_one(m(:, j), q(:, j), h, inertia(:, j))
         end do
      case (variant_midpoint)
         do j = 1, n
            call midpoint_one(m(:, j), q(:, j), h, 1 / inertia(:, j), info(j))
         end do
      end select
   end subroutine free_step

   !> The flow of the rotation about body axis a by the angle theta:
   !> y <- exp(-theta hat e_a) y, q <- q (cos(theta/2), sin(theta/2) e_a).
   pure subroutine axis_rotation(a, theta, y, q)
      integer, intent(in) :: a
      real(dp), intent(in) :: theta
      real(dp), intent(inout) :: y(3), q(4)
      real(dp) :: ch, sh, c, s, yb, yc, r(4)
      integer :: b, d

      call lane_sincos(0.5_dp * theta, sh, ch)
      c = (ch - sh) * (ch + sh)          ! cos theta
      s = 2.0_dp * sh * ch               ! sin theta
      b = mod(a, 3) + 1                  ! (a, b, d) cyclic
      d = mod(b, 3) + 1
      ! y' = y x (theta' e_a): y_b' = theta' y_d, y_d' = -theta' y_b
      yb = y(b)
      yc = y(d)
      y(b) = c * yb + s * yc
      y(d) = c * yc - s * yb
      r = 0.0_dp
      r(1) = ch
      r(a + 1) = sh
      q = qmul(q, r)
   end subroutine axis_rotation

   !> SPLIT3: R3(h/2) R2(h/2) R1(h) R2(h/2) R3(h/2) (the symmetric order; the paper
   !> prints R1(h/2) last).
   pure subroutine split3_one(y, q, h, inertia)
      real(dp), intent(inout) :: y(3), q(4)
      real(dp), intent(in) :: h, inertia(3)
      real(dp) :: hh

      hh = 0.5_dp * h
      call axis_rotation(3, hh * y(3) / inertia(3), y, q)
      call axis_rotation(2, hh * y(2) / inertia(2), y, q)
      call axis_rotation(1, h * y(1) / inertia(1), y, q)
      call axis_rotation(2, hh * y(2) / inertia(2), y, q)
      call axis_rotation(3, hh * y(3) / inertia(3), y, q)
   end subroutine split3_one

   !> SYMROT: R(h/2) S(h) R(h/2) of Algorithm 2 with alpha, beta derived from R and S
   !> (see the header).
   pure subroutine symrot_one(y, q, h, inertia)
      real(dp), intent(inout) :: y(3), q(4)
      real(dp), intent(in) :: h, inertia(3)
      real(dp) :: cr, cs, i2inv, hh

      i2inv = 1 / inertia(2)
      cr = 1 / inertia(1) - i2inv          ! alpha = cr y1
      cs = 1 / inertia(3) - i2inv          ! beta = cs y3
      hh = 0.5_dp * h
      call axis_rotation(1, hh * cr * y(1), y, q)
      ! S over h: q <- q a(h y / I2) v(-beta h), y <- exp(-beta h hat e3) y
      q = qmul(q, quat_exp_sincos((h * i2inv) * y))
      call axis_rotation(3, h * cs * y(3), y, q)
      call axis_rotation(1, hh * cr * y(1), y, q)
      ! renormalised: quat_exp and the three products would otherwise let |q| drift by a
      ! rounding a step (1.1e-13 in 1000 steps)
      q = quat_normalize(q)
   end subroutine symrot_one

   !> rotations' quat_exp(psi), (cos(a/2), sin(a/2) psi / a), a = |psi|, with the same series for
   !> small a, its sine and cosine lane_math's lane_sincos (which the lanes of lie_group_lanes
   !> vectorise with the same bits).
   pure function quat_exp_sincos(psi) result(r)
      real(dp), intent(in) :: psi(3)
      real(dp) :: r(4), a2, a, s, sh
      a2 = psi(1)**2 + psi(2)**2 + psi(3)**2
      if (a2 < 1.0e-4_dp) then
         ! sin(a/2)/a = 1/2 - a^2/48 + a^4/3840 - a^6/645120 (error < 1e-21 for a^2 < 1e-4)
         s = 0.5_dp - a2 * (1.0_dp / 48 - a2 * (1.0_dp / 3840 - a2 / 645120))
         r(1) = 1.0_dp - a2 * (0.125_dp - a2 * (1.0_dp / 384 - a2 / 46080))
      else
         a = sqrt(a2)
         call lane_sincos(0.5_dp * a, sh, r(1))
         s = sh / a
      end if
      r(2:4) = s * psi
   end function quat_exp_sincos

   !> MIDPOINT (Remark 4): Newton's method on Y = y + (h/2) Y x (w Y).
   pure subroutine midpoint_one(y, q, h, w, info)
      real(dp), intent(inout) :: y(3), q(4)
      real(dp), intent(in) :: h, w(3)
      integer, intent(inout) :: info
      real(dp) :: yy(3), wy(3), f(3), a(3, 3), dy(3), hh, y2, d2
      integer :: it
      logical :: done, ok

      hh = 0.5_dp * h
      yy = y + hh * cross(y, w * y)              ! explicit predictor
      done = .false.
      do it = 1, newton_max_iter
         wy = w * yy
         f = yy - y - hh * cross(yy, wy)
         ! Jacobian 1 + hh hat(w Y) - hh hat(Y) diag(w)
         a(1, 1) = 1.0_dp
         a(2, 2) = 1.0_dp
         a(3, 3) = 1.0_dp
         a(1, 2) = -hh * wy(3) + hh * yy(3) * w(2)
         a(1, 3) = hh * wy(2) - hh * yy(2) * w(3)
         a(2, 1) = hh * wy(3) - hh * yy(3) * w(1)
         a(2, 3) = -hh * wy(1) + hh * yy(1) * w(3)
         a(3, 1) = -hh * wy(2) + hh * yy(2) * w(1)
         a(3, 2) = hh * wy(1) - hh * yy(1) * w(2)
         call solve3(a, f, dy, ok)
         if (.not. ok) exit
         dy = -dy
         if (.not. all(ieee_is_finite(dy))) exit
         yy = yy + dy
         y2 = yy(1)**2 + yy(2)**2 + yy(3)**2
         d2 = dy(1)**2 + dy(2)**2 + dy(3)**2
         if (d2 <= newton_rtol**2 * y2 .or. y2 == 0.0_dp) then
            done = .true.
            exit
         end if
      end do
      if (.not. done) then
         info = info_no_convergence
         return
      end if
      q = qmul(q, quat_cayley(h * (w * yy)))
      y = 2.0_dp * yy - y
   end subroutine midpoint_one

   !> NYSTROM4 with a field torque: U(h/6) T(h/2) [U(2h/3) V(-h^3/72)] T(h/2) U(h/6).
   subroutine nystrom4_step(n, k, t, h, m, q, inertia, tq, cb)
      integer, intent(in) :: n, k
      real(dp), intent(in) :: t, h, inertia(3, n)
      real(dp), intent(inout) :: m(3, n), q(4, n)
      type(torque_t), intent(in) :: tq
      procedure(user_torque_cb) :: cb
      real(dp), allocatable :: tb(:, :)
      integer :: j

      allocate (tb(3, n))
      call torque_batch(tq, n, t, k, 4, q, m, inertia, tb, cb)
      m = m + (h / 6) * tb
      call exact_free_flows(n, 1, [0.5_dp * h], 0, m, 4, q, n, inertia)
      call torque_batch(tq, n, t + 0.5_dp * h, k, 4, q, m, inertia, tb, cb)
      do j = 1, n
         m(:, j) = m(:, j) + (2 * h / 3) * tb(:, j) + field_v_kick(tq, j, q(:, j), inertia(:, j), h)
      end do
      call exact_free_flows(n, 1, [0.5_dp * h], 0, m, 4, q, n, inertia)
      call torque_batch(tq, n, t + h, k, 4, q, m, inertia, tb, cb)
      m = m + (h / 6) * tb
   end subroutine nystrom4_step

end module approximate_free_flows
