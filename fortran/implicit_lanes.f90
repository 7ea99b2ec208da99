! The implicit Lie midpoint / trapezoid methods of P. Krysl (module midpoint_trapezoid: "Dynamically
! equivalent implicit algorithms for the integration of rigid body rotations", Commun. Numer. Meth.
! Engng 24, 2008, sections 3 and 4: TRAP, IMID, TRAPM, IMIDM, SWC1, AKW, BBTRAP, BBTRAPWD) of
! frb.integrate with the bodies of a chunk in lock-step lanes (structure-of-arrays blocks of
! lane_block bodies, component i of body j in x(j, i)), for quaternion attitudes without wheels,
! torque-free or with a torque of torque_lanes (parameters shared or per body; method_lanes
! chooses this step so).
!
! Each lane runs the Newton iteration of midpoint_trapezoid_step on its body's unknown: the same
! predictor, the torque evaluated at the lane's iterate at the start of every iteration (lagged,
! at torque_time, with the momentum entering the step), the same update and the same stopping test
! (|dx| <= newton_rtol |x|; a singular Newton matrix or a non-finite iterate stops the lane
! unconverged). A lane that has stopped keeps its iterate and the torque of its last iteration
! while the others go on; the block ends when every lane has stopped or after newton_max_iter
! iterations, and each body gets the one-body result and failure report (info_no_solution,
! info_no_convergence) bit for bit.
! * The step constants and predictor (midpoint_trapezoid's setup) and the new state from the
!   converged unknown (finish) are that module's routines, called lane by lane.
! * The iterations run on the target's vectors: the residuals, Jacobians and Cramer's rule
!   (rotations' solve3) written out lane by lane in the operations and the order of
!   midpoint_trapezoid's residual and newton_update (3 x 3 products summed from zero over
!   k = 1, 2, 3, as matmul), the torque points likewise (torque_point: rotations' quat_exp,
!   quat_cayley, qmul), with the library's scalar sin and cos called lane by lane in loops of their
!   own (the one-body step calls them; no vector version of them is called, so every SIMD target
!   gives the same bits). TRAP, IMID and AKW (midpoint_newton_lanes): unknown Pi_n or Pb,
!   residual x - c + (h/2) w(x) x x - torque term, w(x) = I^-1 x, Jacobian
!   1 + (h/2) (hat(w) - hat(x) I^-1). TRAPM, IMIDM, SWC1, BBTRAP and BBTRAPWD (exp_newton_lanes):
!   residuals with exp[-psi] a and the Jacobians with dexp_psi (Krysl 2008, eq. (9)) and, for
!   BBTRAPWD, the derivative of (dexp_psi)^-1 (midpoint_trapezoid's header); the exponential the
!   residual and the torque point share is computed once (the same bits as twice).
! A change to midpoint_trapezoid's residual, torque_point, newton_update, dexp_mat, rotations'
! quat_exp, quat_cayley, qmul, qrotate_tr, dexp_coefficients or solve3 must be made here too.
!
! Compiled once per SIMD target (tools/simd_target_source.py, simd_dispatch.f90).
module implicit_lanes
   use kinds, only: dp
   use step_interface
   use numbers_table, only: variant_trap, variant_imid, variant_akw, variant_trapm, variant_imidm, &
                            variant_swc1, variant_bbtrap, variant_bbtrapwd
   use torques, only: torque_t, user_torque_cb, torqued
   use wheels, only: wheels_t, wheels_active
   use torque_lanes, only: lane_block, torque_lanes_eval
   use lie_group_lanes, only: qmul_lanes, quat_exp_lanes
   use midpoint_trapezoid, only: body_t, setup, torque_time, needs_t0, finish, dexpinv_coef
   implicit none
   private

   public :: implicit_lanes_step

   !> Below this |psi|^2, quat_exp takes its series (rotations.quat_exp).
   real(dp), parameter :: series_bound = 1.0e-4_dp

   !> The states of a lane in the iteration (midpoint_trapezoid_step's).
   integer, parameter :: active = 0, done = 1, failed_solve = 2, failed_finite = 3

contains

   !> One step of a method of the family (step_interface's method_step) of the n bodies of a
   !> chunk, without wheels, torque-free or with a torque that is torque_lanes_per_body
   !> (method_lanes chooses it so).
   subroutine implicit_lanes_step(meth, n, k, t, h, m, q, hw, inertia, ws, tq, wh, cb, info)
      type(method_t), intent(in) :: meth; type(torque_t), intent(in) :: tq; procedure(user_torque_cb) :: cb
      integer, intent(in) :: n, k; integer, intent(inout) :: info(n); real(dp), intent(in) :: t, h, inertia(3, n)
      real(dp), intent(inout) :: m(3, n), q(4, n), ws(nws, n)   ! (step_interface's method_step)
      type(wheels_t), intent(in) :: wh; real(dp), intent(inout) :: hw(wh%nw, n)
      integer :: b0, nl, b1, v

      v = meth%variant
      if (v < variant_trap .or. v > variant_bbtrapwd .or. wheels_active(wh)) then
         info = info_not_implemented
         return
      end if
      do b0 = 1, n, lane_block
         nl = min(lane_block, n - b0 + 1)
         b1 = b0 + nl - 1
         call implicit_block(v, tq, b0, nl, t, h, m(:, b0:b1), q(:, b0:b1), inertia(:, b0:b1), &
                             info(b0:b1))
      end do
   end subroutine implicit_lanes_step

   !> One step of the bodies b0 .. b0+nl-1 of the chunk, nl <= lane_block, in lock-step.
   subroutine implicit_block(v, tq, b0, nl, t, h, m, q, inertia, info)
      integer, intent(in) :: v, b0, nl
      type(torque_t), intent(in) :: tq
      real(dp), intent(in) :: t, h, inertia(3, nl)
      real(dp), intent(inout) :: m(3, nl), q(4, nl)
      integer, intent(inout) :: info(nl)
      type(body_t) :: bds(lane_block)
      real(dp), dimension(lane_block, 3) :: ml, il, tb
      real(dp) :: ql(lane_block, 4), xs(3, lane_block), tl(3, lane_block)
      integer :: st(lane_block), i, j

      do j = 1, nl
         do i = 1, 3
            ml(j, i) = m(i, j)
            il(j, i) = inertia(i, j)
         end do
         do i = 1, 4
            ql(j, i) = q(i, j)
         end do
      end do
      if (torqued(tq) .and. needs_t0(v)) then
         call torque_lanes_eval(tq, t, nl, ql, ml, il, tb, b0)
      else
         tb(1:nl, :) = 0.0_dp
      end if
      do j = 1, nl
         call setup(v, h, m(:, j), q(:, j), 1.0_dp / inertia(:, j), tb(j, :), bds(j), xs(:, j))
      end do
      tl(:, 1:nl) = 0.0_dp
      st(1:nl) = active
      if (v == variant_trap .or. v == variant_imid .or. v == variant_akw) then
         call midpoint_newton_lanes(v, tq, b0, nl, t, h, ml, il, bds, xs, tl, st)
      else
         call exp_newton_lanes(v, tq, b0, nl, t, h, ml, il, bds, xs, tl, st)
      end if
      do j = 1, nl
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
   end subroutine implicit_block

   !> The iteration of TRAP, IMID and AKW on the target's vectors (see the header). On return st
   !> says how each lane stopped (active: not converged), xs holds its iterate and tl the torque of
   !> its last iteration (zero torque-free). Residual (midpoint_trapezoid's residual, tb the lane's torque):
   !> TRAP, IMID: f = x - c + (h/2) (w x x - tb); AKW: f = x - c + (h/2) w x x - (h/4) tb.
   subroutine midpoint_newton_lanes(v, tq, b0, nl, t, h, ml, il, bds, xs, tl, st)
      integer, intent(in) :: v, b0, nl
      type(torque_t), intent(in) :: tq
      real(dp), intent(in) :: t, h, ml(lane_block, 3), il(lane_block, 3)
      type(body_t), intent(in) :: bds(lane_block)
      real(dp), intent(inout) :: xs(3, lane_block), tl(3, lane_block)
      integer, intent(inout) :: st(lane_block)
      real(dp), dimension(lane_block, 3) :: x, c, iv, f, tlv, tb, psi
      real(dp), dimension(lane_block, 4) :: qa, e, qt
      logical :: run(lane_block)
      real(dp) :: hh, hq, tt, w1, w2, w3, k1, k2, k3, a12, a13, a21, a23, a31, a32
      real(dp) :: c11, c21, c31, c12, c22, c32, c13, c23, c33, det, dx1, dx2, dx3, y1, y2, y3
      logical :: torque, akw, solved, finite, conv
      integer :: i, j, it

      torque = torqued(tq)
      akw = v == variant_akw
      hh = 0.5_dp * h
      hq = 0.5_dp * hh
      tt = torque_time(v, t, h)
      do j = 1, nl
         do i = 1, 3
            x(j, i) = xs(i, j)
            c(j, i) = bds(j)%c(i)
            iv(j, i) = bds(j)%iv(i)
            tlv(j, i) = tl(i, j)
         end do
         do i = 1, 4
            qa(j, i) = bds(j)%qa(i)
         end do
         run(j) = st(j) == active
      end do
      do it = 1, newton_max_iter
         if (.not. any(run(1:nl))) exit
         if (torque) then
            ! the torque point qa exp[h/2 w(x)] (TRAP, IMID) or qa cay[h w(x)] (AKW)
            if (akw) then
               do i = 1, 3
                  do j = 1, nl
                     psi(j, i) = h * (iv(j, i) * x(j, i))
                  end do
               end do
               call quat_cayley_lanes(nl, psi, e)
            else
               do i = 1, 3
                  do j = 1, nl
                     psi(j, i) = hh * (iv(j, i) * x(j, i))
                  end do
               end do
               call quat_exp_lanes(nl, run, psi, e)
            end if
            call qmul_lanes(nl, qa, e, qt)
            call torque_lanes_eval(tq, tt, nl, qt, ml, il, tb, b0)
            do i = 1, 3
               do j = 1, nl
                  tlv(j, i) = merge(tb(j, i), tlv(j, i), run(j))
               end do
            end do
         end if
         ! the residual
         if (akw) then
            do j = 1, nl
               w1 = iv(j, 1) * x(j, 1)
               w2 = iv(j, 2) * x(j, 2)
               w3 = iv(j, 3) * x(j, 3)
               k1 = w2 * x(j, 3) - w3 * x(j, 2)
               k2 = w3 * x(j, 1) - w1 * x(j, 3)
               k3 = w1 * x(j, 2) - w2 * x(j, 1)
               f(j, 1) = x(j, 1) - c(j, 1) + hh * k1 - hq * tlv(j, 1)
               f(j, 2) = x(j, 2) - c(j, 2) + hh * k2 - hq * tlv(j, 2)
               f(j, 3) = x(j, 3) - c(j, 3) + hh * k3 - hq * tlv(j, 3)
            end do
         else
            do j = 1, nl
               w1 = iv(j, 1) * x(j, 1)
               w2 = iv(j, 2) * x(j, 2)
               w3 = iv(j, 3) * x(j, 3)
               k1 = w2 * x(j, 3) - w3 * x(j, 2)
               k2 = w3 * x(j, 1) - w1 * x(j, 3)
               k3 = w1 * x(j, 2) - w2 * x(j, 1)
               f(j, 1) = x(j, 1) - c(j, 1) + hh * (k1 - tlv(j, 1))
               f(j, 2) = x(j, 2) - c(j, 2) + hh * (k2 - tlv(j, 2))
               f(j, 3) = x(j, 3) - c(j, 3) + hh * (k3 - tlv(j, 3))
            end do
         end if
         ! the Newton update x <- x - J^-1 f
         do j = 1, nl
            w1 = iv(j, 1) * x(j, 1)
            w2 = iv(j, 2) * x(j, 2)
            w3 = iv(j, 3) * x(j, 3)
            ! J = eye3() + (h/2) (hat(w) - hat(x) diag(iv)); its diagonal is 1
            a12 = 0.0_dp + hh * (-w3 - (-x(j, 3)) * iv(j, 2))
            a13 = 0.0_dp + hh * (w2 - x(j, 2) * iv(j, 3))
            a21 = 0.0_dp + hh * (w3 - x(j, 3) * iv(j, 1))
            a23 = 0.0_dp + hh * (-w1 - (-x(j, 1)) * iv(j, 3))
            a31 = 0.0_dp + hh * (-w2 - (-x(j, 2)) * iv(j, 1))
            a32 = 0.0_dp + hh * (w1 - x(j, 1) * iv(j, 2))
            ! solve3: the columns of the cofactors c(:, k) = a(:, k+1) x a(:, k+2),
            ! det = a(:, 1) . c(:, 1), dx_k = c(:, k) . f / det (dot_product sums from zero)
            c11 = 1.0_dp * 1.0_dp - a32 * a23
            c21 = a32 * a13 - a12 * 1.0_dp
            c31 = a12 * a23 - 1.0_dp * a13
            c12 = a23 * a31 - 1.0_dp * a21
            c22 = 1.0_dp * 1.0_dp - a13 * a31
            c32 = a13 * a21 - a23 * 1.0_dp
            c13 = a21 * a32 - a31 * 1.0_dp
            c23 = a31 * a12 - 1.0_dp * a32
            c33 = 1.0_dp * 1.0_dp - a21 * a12
            det = 0.0_dp + 1.0_dp * c11 + a21 * c21 + a31 * c31
            dx1 = (0.0_dp + c11 * f(j, 1) + c21 * f(j, 2) + c31 * f(j, 3)) / det
            dx2 = (0.0_dp + c12 * f(j, 1) + c22 * f(j, 2) + c32 * f(j, 3)) / det
            dx3 = (0.0_dp + c13 * f(j, 1) + c23 * f(j, 2) + c33 * f(j, 3)) / det
            solved = det /= 0.0_dp .and. abs(det) <= huge(1.0_dp)
            y1 = x(j, 1) - dx1
            y2 = x(j, 2) - dx2
            y3 = x(j, 3) - dx3
            finite = abs(y1) <= huge(1.0_dp) .and. abs(y2) <= huge(1.0_dp) .and. &
                     abs(y3) <= huge(1.0_dp)
            conv = dx1**2 + dx2**2 + dx3**2 <= newton_rtol**2 * (y1**2 + y2**2 + y3**2)
            x(j, 1) = merge(y1, x(j, 1), run(j) .and. solved)
            x(j, 2) = merge(y2, x(j, 2), run(j) .and. solved)
            x(j, 3) = merge(y3, x(j, 3), run(j) .and. solved)
            st(j) = merge(merge(merge(merge(done, active, conv), failed_finite, finite), &
                                failed_solve, solved), st(j), run(j))
            run(j) = st(j) == active
         end do
      end do
      do j = 1, nl
         do i = 1, 3
            xs(i, j) = x(j, i)
            tl(i, j) = tlv(j, i)
         end do
      end do
   end subroutine midpoint_newton_lanes

   !> The iteration of TRAPM, IMIDM, SWC1, BBTRAP and BBTRAPWD on the target's vectors (see the
   !> header; arguments as midpoint_newton_lanes):
   !> midpoint_trapezoid's residual written out lane by lane with e = exp[pe] (pe = h/2 w(x) for
   !> TRAPM, x/2 for IMIDM, x otherwise), d = exp[-pe] v - v (v = c for TRAPM, a otherwise),
   !> b = v + d, the Jacobian 1 - h/2 (hat(b) dexp_{-pe}) diag(iv) (TRAPM) or
   !> 1 - h/2 diag(iv) hat(b) dexp_{-pe} (the others; BBTRAPWD with the derivative of
   !> (dexp_{-x})^-1 of midpoint_trapezoid's header). The torque point is qa e (SWC1: qa exp[x/2]).
   subroutine exp_newton_lanes(v, tq, b0, nl, t, h, ml, il, bds, xs, tl, st)
      integer, intent(in) :: v, b0, nl
      type(torque_t), intent(in) :: tq
      real(dp), intent(in) :: t, h, ml(lane_block, 3), il(lane_block, 3)
      type(body_t), intent(in) :: bds(lane_block)
      real(dp), intent(inout) :: xs(3, lane_block), tl(3, lane_block)
      integer, intent(inout) :: st(lane_block)
      real(dp), dimension(lane_block, 3) :: x, c, av, iv, f, tlv, tb, pe, vr, d, b, g, vv, xv
      real(dp), dimension(lane_block, 4) :: qa, e, eh, qt
      real(dp), dimension(lane_block, 3, 3) :: jac, mt, de, hx, hv, pp
      real(dp), dimension(lane_block) :: c2, dc2
      logical :: run(lane_block)
      real(dp) :: hh, tt, r
      logical :: torque
      integer :: i, j, l, it

      c2 = 0.0_dp
      dc2 = 0.0_dp
      torque = torqued(tq)
      hh = 0.5_dp * h
      tt = torque_time(v, t, h)
      do j = 1, nl
         do i = 1, 3
            x(j, i) = xs(i, j)
            c(j, i) = bds(j)%c(i)
            av(j, i) = bds(j)%a(i)
            iv(j, i) = bds(j)%iv(i)
            tlv(j, i) = tl(i, j)
         end do
         do i = 1, 4
            qa(j, i) = bds(j)%qa(i)
         end do
         run(j) = st(j) == active
      end do
      do it = 1, newton_max_iter
         if (.not. any(run(1:nl))) exit
         ! e = exp[pe]; SWC1 also eh = exp[x/2]
         select case (v)
         case (variant_trapm)
            do i = 1, 3
               do l = 1, nl
                  pe(l, i) = hh * (iv(l, i) * x(l, i))
               end do
            end do
         case (variant_imidm)
            pe(1:nl, :) = 0.5_dp * x(1:nl, :)
         case default
            pe(1:nl, :) = x(1:nl, :)
         end select
         call quat_exp_lanes(nl, run, pe, e)
         if (v == variant_swc1) then
            vr(1:nl, :) = 0.5_dp * x(1:nl, :)
            call quat_exp_lanes(nl, run, vr, eh)
         end if
         if (torque) then
            if (v == variant_swc1) then
               call qmul_lanes(nl, qa, eh, qt)
            else
               call qmul_lanes(nl, qa, e, qt)
            end if
            call torque_lanes_eval(tq, tt, nl, qt, ml, il, tb, b0)
            do i = 1, 3
               do l = 1, nl
                  tlv(l, i) = merge(tb(l, i), tlv(l, i), run(l))
               end do
            end do
         end if
         ! d = exp[-pe] v - v, b = v + d, and the residual f
         if (v == variant_trapm) then
            vr(1:nl, :) = c(1:nl, :)
         else
            vr(1:nl, :) = av(1:nl, :)
         end if
         call rot_tr_delta_lanes(nl, e, vr, d)
         do i = 1, 3
            do l = 1, nl
               b(l, i) = vr(l, i) + d(l, i)
            end do
         end do
         select case (v)
         case (variant_trapm)
            do i = 1, 3
               do l = 1, nl
                  f(l, i) = x(l, i) - c(l, i) - d(l, i) - hh * tlv(l, i)
               end do
            end do
         case (variant_imidm)
            do i = 1, 3
               do l = 1, nl
                  f(l, i) = x(l, i) - c(l, i) - h * (iv(l, i) * (d(l, i) + hh * tlv(l, i)))
               end do
            end do
         case (variant_swc1)
            call qrotate_tr_lanes(nl, eh, tlv, g)
            do i = 1, 3
               do l = 1, nl
                  f(l, i) = x(l, i) - c(l, i) - hh * (iv(l, i) * (d(l, i) + h * g(l, i)))
               end do
            end do
         case (variant_bbtrap)
            do i = 1, 3
               do l = 1, nl
                  f(l, i) = x(l, i) - c(l, i) - hh * (iv(l, i) * (d(l, i) + hh * tlv(l, i)))
               end do
            end do
         case default ! bbtrapwd
            do i = 1, 3
               do l = 1, nl
                  vv(l, i) = iv(l, i) * (av(l, i) + d(l, i) + hh * tlv(l, i))
               end do
            end do
            call cross_lanes(nl, x, vv, xv)
            call cross_lanes(nl, x, xv, g)
            do l = 1, nl
               if (run(l)) call dexpinv_coef(0.0_dp + x(l, 1) * x(l, 1) + x(l, 2) * x(l, 2) &
                                             + x(l, 3) * x(l, 3), c2(l), dc2(l))
            end do
            do i = 1, 3
               do l = 1, nl
                  f(l, i) = x(l, i) - c(l, i) - hh * (iv(l, i) * (d(l, i) + hh * tlv(l, i)) &
                                                      + 0.5_dp * xv(l, i) + c2(l) * g(l, i))
               end do
            end do
         end select
         ! the Jacobian: mt = hat(b) dexp_{-pe}, scaled by iv
         do i = 1, 3
            pe(1:nl, i) = -pe(1:nl, i)
         end do
         call dexp_mat_lanes(nl, run, pe, de)
         call hat_lanes(nl, b, hx)
         call matmul_lanes(nl, hx, de, mt)
         if (v == variant_trapm) then
            do i = 1, 3
               do j = 1, 3
                  do l = 1, nl
                     mt(l, j, i) = mt(l, j, i) * iv(l, i)
                  end do
               end do
            end do
         else
            do i = 1, 3
               do j = 1, 3
                  do l = 1, nl
                     mt(l, i, j) = mt(l, i, j) * iv(l, i)
                  end do
               end do
            end do
         end if
         if (v == variant_bbtrapwd) then
            ! mt <- (1 + hat(x)/2 + c2 hat(x)^2) mt - M(-x, vv)
            call hat_lanes(nl, x, hx)
            call matmul_lanes(nl, hx, hx, pp)
            do j = 1, 3
               do i = 1, 3
                  r = merge(1.0_dp, 0.0_dp, i == j)
                  do l = 1, nl
                     de(l, i, j) = r + 0.5_dp * hx(l, i, j) + c2(l) * pp(l, i, j)
                  end do
               end do
            end do
            pp(1:nl, :, :) = mt(1:nl, :, :)
            call matmul_lanes(nl, de, pp, mt)
            call hat_lanes(nl, vv, hv)
            call matmul_lanes(nl, hx, hv, pp)
            call hat_lanes(nl, xv, de)
            do j = 1, 3
               do i = 1, 3
                  do l = 1, nl
                     mt(l, i, j) = mt(l, i, j) - 0.5_dp * hv(l, i, j) &
                                   - c2(l) * (de(l, i, j) + pp(l, i, j))
                  end do
               end do
            end do
            do j = 1, 3
               do i = 1, 3
                  do l = 1, nl
                     mt(l, i, j) = mt(l, i, j) + (2.0_dp * dc2(l) * x(l, j)) * g(l, i)
                  end do
               end do
            end do
         end if
         do j = 1, 3
            do i = 1, 3
               r = merge(1.0_dp, 0.0_dp, i == j)
               do l = 1, nl
                  jac(l, i, j) = r - hh * mt(l, i, j)
               end do
            end do
         end do
         call newton_update_lanes(nl, jac, f, x, run, st)
      end do
      do j = 1, nl
         do i = 1, 3
            xs(i, j) = x(j, i)
            tl(i, j) = tlv(j, i)
         end do
      end do
   end subroutine exp_newton_lanes

   !> The Newton update x <- x - jac^-1 f of the lanes where run is true (midpoint_trapezoid's
   !> newton_update with rotations' solve3: the columns of the cofactors
   !> c(:, k) = a(:, k+1) x a(:, k+2), det = a(:, 1) . c(:, 1), dx_k = c(:, k) . f / det, the
   !> dot products summed from zero); st and run report the lanes that stop.
   subroutine newton_update_lanes(nl, a, f, x, run, st)
      integer, intent(in) :: nl
      real(dp), intent(in) :: a(lane_block, 3, 3), f(lane_block, 3)
      real(dp), intent(inout) :: x(lane_block, 3)
      logical, intent(inout) :: run(lane_block)
      integer, intent(inout) :: st(lane_block)
      real(dp) :: c11, c21, c31, c12, c22, c32, c13, c23, c33, det, dx1, dx2, dx3, y1, y2, y3
      logical :: solved, finite, conv
      integer :: l

      do l = 1, nl
         c11 = a(l, 2, 2) * a(l, 3, 3) - a(l, 3, 2) * a(l, 2, 3)
         c21 = a(l, 3, 2) * a(l, 1, 3) - a(l, 1, 2) * a(l, 3, 3)
         c31 = a(l, 1, 2) * a(l, 2, 3) - a(l, 2, 2) * a(l, 1, 3)
         c12 = a(l, 2, 3) * a(l, 3, 1) - a(l, 3, 3) * a(l, 2, 1)
         c22 = a(l, 3, 3) * a(l, 1, 1) - a(l, 1, 3) * a(l, 3, 1)
         c32 = a(l, 1, 3) * a(l, 2, 1) - a(l, 2, 3) * a(l, 1, 1)
         c13 = a(l, 2, 1) * a(l, 3, 2) - a(l, 3, 1) * a(l, 2, 2)
         c23 = a(l, 3, 1) * a(l, 1, 2) - a(l, 1, 1) * a(l, 3, 2)
         c33 = a(l, 1, 1) * a(l, 2, 2) - a(l, 2, 1) * a(l, 1, 2)
         det = 0.0_dp + a(l, 1, 1) * c11 + a(l, 2, 1) * c21 + a(l, 3, 1) * c31
         dx1 = (0.0_dp + c11 * f(l, 1) + c21 * f(l, 2) + c31 * f(l, 3)) / det
         dx2 = (0.0_dp + c12 * f(l, 1) + c22 * f(l, 2) + c32 * f(l, 3)) / det
         dx3 = (0.0_dp + c13 * f(l, 1) + c23 * f(l, 2) + c33 * f(l, 3)) / det
         solved = det /= 0.0_dp .and. abs(det) <= huge(1.0_dp)
         y1 = x(l, 1) - dx1
         y2 = x(l, 2) - dx2
         y3 = x(l, 3) - dx3
         finite = abs(y1) <= huge(1.0_dp) .and. abs(y2) <= huge(1.0_dp) .and. &
                  abs(y3) <= huge(1.0_dp)
         conv = dx1**2 + dx2**2 + dx3**2 <= newton_rtol**2 * (y1**2 + y2**2 + y3**2)
         x(l, 1) = merge(y1, x(l, 1), run(l) .and. solved)
         x(l, 2) = merge(y2, x(l, 2), run(l) .and. solved)
         x(l, 3) = merge(y3, x(l, 3), run(l) .and. solved)
         st(l) = merge(merge(merge(merge(done, active, conv), failed_finite, finite), &
                             failed_solve, solved), st(l), run(l))
         run(l) = st(l) == active
      end do
   end subroutine newton_update_lanes

   !> d = dexp_psi = 1 + c1 hat psi + c2 hat psi^2 (midpoint_trapezoid's dexp_mat, rotations'
   !> dexp_coefficients: Krysl 2008, eq. (9)) on the lanes where run is true (the others:
   !> unspecified).
   subroutine dexp_mat_lanes(nl, run, psi, d)
      integer, intent(in) :: nl
      logical, intent(in) :: run(lane_block)
      real(dp), intent(in) :: psi(lane_block, 3)
      real(dp), intent(out) :: d(lane_block, 3, 3)
      real(dp), dimension(lane_block, 3, 3) :: p, pp
      real(dp), dimension(lane_block) :: a2, c1, c2
      real(dp) :: a, r
      integer :: i, j, l

      do l = 1, nl
         a2(l) = psi(l, 1)**2 + psi(l, 2)**2 + psi(l, 3)**2
         c1(l) = 0.5_dp - a2(l) * (1.0_dp / 24 - a2(l) * (1.0_dp / 720 - a2(l) / 40320))
         c2(l) = 1.0_dp / 6 - a2(l) * (1.0_dp / 120 - a2(l) * (1.0_dp / 5040 - a2(l) / 362880))
      end do
      do l = 1, nl
         if (run(l) .and. .not. a2(l) < series_bound) then
            a = sqrt(a2(l))
            c1(l) = (1.0_dp - cos(a)) / a2(l)
            c2(l) = (1.0_dp - sin(a) / a) / a2(l)
         end if
      end do
      call hat_lanes(nl, psi, p)
      call matmul_lanes(nl, p, p, pp)
      do j = 1, 3
         do i = 1, 3
            r = merge(1.0_dp, 0.0_dp, i == j)
            do l = 1, nl
               d(l, i, j) = r + c1(l) * p(l, i, j) + c2(l) * pp(l, i, j)
            end do
         end do
      end do
   end subroutine dexp_mat_lanes

   !> a = hat(v) lane by lane (rotations' hat).
   pure subroutine hat_lanes(nl, v, a)
      integer, intent(in) :: nl
      real(dp), intent(in) :: v(lane_block, 3)
      real(dp), intent(out) :: a(lane_block, 3, 3)
      integer :: l

      do l = 1, nl
         a(l, 1, 1) = 0.0_dp
         a(l, 2, 1) = v(l, 3)
         a(l, 3, 1) = -v(l, 2)
         a(l, 1, 2) = -v(l, 3)
         a(l, 2, 2) = 0.0_dp
         a(l, 3, 2) = v(l, 1)
         a(l, 1, 3) = v(l, 2)
         a(l, 2, 3) = -v(l, 1)
         a(l, 3, 3) = 0.0_dp
      end do
   end subroutine hat_lanes

   !> c = matmul(a, b) of 3 x 3 matrices lane by lane, each entry summed from zero over
   !> k = 1, 2, 3.
   pure subroutine matmul_lanes(nl, a, b, c)
      integer, intent(in) :: nl
      real(dp), intent(in) :: a(lane_block, 3, 3), b(lane_block, 3, 3)
      real(dp), intent(out) :: c(lane_block, 3, 3)
      integer :: i, j, l

      do j = 1, 3
         do i = 1, 3
            do l = 1, nl
               c(l, i, j) = 0.0_dp + a(l, i, 1) * b(l, 1, j) + a(l, i, 2) * b(l, 2, j) &
                            + a(l, i, 3) * b(l, 3, j)
            end do
         end do
      end do
   end subroutine matmul_lanes

   !> c = cross(a, b) lane by lane (rotations' cross).
   pure subroutine cross_lanes(nl, a, b, c)
      integer, intent(in) :: nl
      real(dp), intent(in) :: a(lane_block, 3), b(lane_block, 3)
      real(dp), intent(out) :: c(lane_block, 3)
      integer :: l

      do l = 1, nl
         c(l, 1) = a(l, 2) * b(l, 3) - a(l, 3) * b(l, 2)
         c(l, 2) = a(l, 3) * b(l, 1) - a(l, 1) * b(l, 3)
         c(l, 3) = a(l, 1) * b(l, 2) - a(l, 2) * b(l, 1)
      end do
   end subroutine cross_lanes

   !> r = exp[-psi] v - v lane by lane for the unit quaternions q of exp[psi]
   !> (midpoint_trapezoid's rot_tr_delta: 2 (-q0 t + u x t), t = u x v, u = q(2:4)).
   pure subroutine rot_tr_delta_lanes(nl, q, v, r)
      integer, intent(in) :: nl
      real(dp), intent(in) :: q(lane_block, 4), v(lane_block, 3)
      real(dp), intent(out) :: r(lane_block, 3)
      real(dp) :: t1, t2, t3
      integer :: l

      do l = 1, nl
         t1 = q(l, 3) * v(l, 3) - q(l, 4) * v(l, 2)
         t2 = q(l, 4) * v(l, 1) - q(l, 2) * v(l, 3)
         t3 = q(l, 2) * v(l, 2) - q(l, 3) * v(l, 1)
         r(l, 1) = 2.0_dp * (-q(l, 1) * t1 + (q(l, 3) * t3 - q(l, 4) * t2))
         r(l, 2) = 2.0_dp * (-q(l, 1) * t2 + (q(l, 4) * t1 - q(l, 2) * t3))
         r(l, 3) = 2.0_dp * (-q(l, 1) * t3 + (q(l, 2) * t2 - q(l, 3) * t1))
      end do
   end subroutine rot_tr_delta_lanes

   !> r = rotations' qrotate_tr(q, v) = E(q)^T v lane by lane: v + 2 (-q0 t + u x t),
   !> t = u x v, u = q(2:4).
   pure subroutine qrotate_tr_lanes(nl, q, v, r)
      integer, intent(in) :: nl
      real(dp), intent(in) :: q(lane_block, 4), v(lane_block, 3)
      real(dp), intent(out) :: r(lane_block, 3)
      integer :: i, l

      call rot_tr_delta_lanes(nl, q, v, r)
      do i = 1, 3
         do l = 1, nl
            r(l, i) = v(l, i) + r(l, i)
         end do
      end do
   end subroutine qrotate_tr_lanes


   !> r = rotations' quat_cayley(a) lane by lane: (1, a/2) / sqrt(1 + |a|^2 / 4).
   pure subroutine quat_cayley_lanes(nl, a, r)
      integer, intent(in) :: nl
      real(dp), intent(in) :: a(lane_block, 3)
      real(dp), intent(out) :: r(lane_block, 4)
      real(dp) :: s
      integer :: j

      do j = 1, nl
         s = sqrt(1.0_dp + 0.25_dp * (a(j, 1)**2 + a(j, 2)**2 + a(j, 3)**2))
         r(j, 1) = 1.0_dp / s
         r(j, 2) = (0.5_dp * a(j, 1)) / s
         r(j, 3) = (0.5_dp * a(j, 2)) / s
         r(j, 4) = (0.5_dp * a(j, 3)) / s
      end do
   end subroutine quat_cayley_lanes

end module implicit_lanes
