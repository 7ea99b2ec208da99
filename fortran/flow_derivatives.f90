! Exact derivatives of the exact free flow (exact_flow.free_flow): the state transition matrix of a
! step and its sensitivities to the step and to the moments of inertia, from the closed form.
!
! Conventions. State x = (m, Q) (or (m, q)); a perturbation is (dm, dth) with the attitude perturbed
! in the body frame, Q~ = Q exp(hat(dth)) (q~ = q (1, dth/2) to first order). The jacobian of a step
! of length h: phi (6, 6) with (dm1, dth1) = phi (dm0, dth0); dh (6) the derivative of (m1, th1)
! with respect to h; di (6, 3) with respect to the moments inertia(1:3). Rows and columns in the
! order (dm, dth).
!
! Method (the symmetries of the free body reduce the directions to differentiate to four):
! * attitude: the flow commutes with rotations of space, so dth0 moves only the attitude,
!   dth1 = E(w)^T dth0, dm1 = 0 (phi(4:6, 4:6) = E(w)^T, phi(1:3, 4:6) = 0);
! * time: d/dh is the vector field at the end, (m1 x w1, w1), w1 = inertia^-1 m1;
! * scale of the momentum: m(lambda m0, h) = lambda m(m0, lambda h), so the radial direction
!   dm0 = m0 / |m0| gives ((m1 + h f1) / |m0|, h w1 / |m0|);
! * scale of the moments: flow(m, h, lambda I) = flow(m, h / lambda, I), so
!   sum_i I_i d/dI_i = -h d/dh, which gives the derivative in the largest moment;
! * the two tangent directions of the momentum's sphere and the ratios of the two other moments to
!   the largest: the derivatives of the unit-norm closed form (unit_jacobian), i.e. the flow's own
!   formulas, branches and reductions on dual numbers (exact_flow_dual), with the derivatives of
!   sn, cn, dn in the parameter from those of the integral of the first kind (jacobi_derivatives),
!   and in quadruple precision where the flow takes it (long steps); steady rotations (principal
!   axes, the sphere) by the exponential of their constant linearisation;
! * the attitude's derivative in the momentum of short exact steps (a turn of at most 1/16 rad):
!   the Taylor series of the variational equations (short_turn_block), as the closed form takes
!   it as a difference of two frames' derivatives that cancel to the size of the turn.
! The values m1, w are those of free_flow bit for bit.
module flow_derivatives
   use kinds, only: dp, qp
   use, intrinsic :: ieee_arithmetic, only: ieee_value, ieee_quiet_nan
   use exact_flow, only: flow_prep_t, flow_prepare, flow_finish, path_trivial, path_unit, path_long, &
                         path_refused, keep_invariants, symmetric_long, symmetric_step, precise_long, &
                         free_flow
   use unit_jacobian, only: unit_step_jacobian, unit_done, tangent_pair
   use unit_jacobian_qp, only: unit_step_jacobian_qp => unit_step_jacobian, &
                               tangent_pair_qp => tangent_pair
   use dual_numbers, only: nd
   use rotations, only: cross, hat, quat_matrix
   use parallel, only: thread_count
   implicit none
   private

   public :: free_flow_jacobian, inertia_jacobian_batch, unsorted, short_turn, short_turn_block

   !> Bodies of a chunk of the batches (the unit of their threads).
   integer, parameter :: chunk = 8
   !> Exact steps that turn the body by at most this many radians (|h| |m| / I_min) take the
   !> derivative of the attitude in the momentum from the Taylor series of the variational
   !> equations (short_turn_block): the closed form gives it as the difference of the derivatives
   !> of the frames of m0 and m1, each of size 1 / |m|, which leaves about 1e-16 / phi of it.
   real(dp), parameter :: short_turn_max = 2.0_dp**(-4)
   !> The highest order of that series (it stops after two terms in a row below 2^-54 of the
   !> first; at the largest turn the terms fall by about 1/16 each).
   integer, parameter :: taylor_order_max = 40

contains

   !> One step of free_flow (m, h, inertia in any order, quadrature 0..10) with its jacobian:
   !> m_out, w (Q(h) = Q E(w), q(h) = q w) as free_flow, phi, dh, di (see the header).
   !> Momenta so small that the body turns by less than turn_min radians take the derivatives of
   !> the linearisation at m = 0 (exact to that relative size); other momenta below |m| = g_min
   !> those of the step scaled by the symmetry m(2^-k m', h) = 2^-k m(m', 2^-k h), |m'| ~ 1 (the
   !> closed form divides by |m|, which would lose the precision of a subnormal number).
   pure subroutine free_flow_jacobian(m, h, inertia, quadrature, m_out, w, phi, dh, di)
      real(dp), intent(in) :: m(3), h, inertia(3)
      integer, intent(in) :: quadrature
      real(dp), intent(out) :: m_out(3), w(4), phi(6, 6), dh(6), di(6, 3)
      real(dp), parameter :: turn_min = 2.0_dp**(-60), g_min = 2.0_dp**(-480)
      real(dp) :: g, m2(3), w2(4)
      integer :: i, k

      call step_jacobian(m, h, inertia, quadrature, m_out, w, phi, dh, di)
      ! (|m| <= 2 g; the largest component, as the squares of subnormal numbers vanish)
      g = maxval(abs(m))
      if (.not. (g > 0 .and. h /= 0)) return
      if (2 * g * abs(h) < turn_min * minval(inertia)) then
         ! a turn below 2^-60 rad: the first-order terms, to a relative 2^-60 (the closed form's
         ! derivatives in the moments err absolutely by its quadruple-precision roundings there):
         ! dw_i = -(m_i / I_i^2) e_i, d(theta1)/dI_i = h dw_i, d(m1)/dI_i = h m x dw_i
         di = 0
         do i = 1, 3
            di(3 + i, i) = -(h * m(i)) / inertia(i)**2
            di(1:3, i) = di(3 + i, i) * cross(m, unit_vector(i))
         end do
         if (g >= g_min) return
         ! dth1 = dth0 + h I^-1 dm0 + O(|m| h / I); d/dh the vector field
         phi = 0
         do i = 1, 6
            phi(i, i) = 1
         end do
         do i = 1, 3
            phi(3 + i, i) = h / inertia(i)
         end do
         dh(4:6) = m / inertia
         dh(1:3) = cross(m, dh(4:6))
         return
      end if
      if (g >= g_min) return
      k = -exponent(g)
      call step_jacobian(scale(m, k), scale(h, -k), inertia, quadrature, m2, w2, phi, dh, di)
      phi(4:6, 1:3) = scale(phi(4:6, 1:3), k)
      phi(1:3, 4:6) = scale(phi(1:3, 4:6), -k)
      dh(1:3) = scale(dh(1:3), -2 * k)
      dh(4:6) = scale(dh(4:6), -k)
      di(1:3, :) = scale(di(1:3, :), -k)
   end subroutine free_flow_jacobian

   !> The unit vector e_i.
   pure function unit_vector(i) result(e)
      integer, intent(in) :: i
      real(dp) :: e(3)

      e = 0
      e(i) = 1
   end function unit_vector

   !> free_flow_jacobian without the rescaling of small momenta.
   pure subroutine step_jacobian(m, h, inertia, quadrature, m_out, w, phi, dh, di)
      real(dp), intent(in) :: m(3), h, inertia(3)
      integer, intent(in) :: quadrature
      real(dp), intent(out) :: m_out(3), w(4), phi(6, 6), dh(6), di(6, 3)
      type(flow_prep_t) :: p
      real(dp) :: ts(3, 2), m1s(3), ws(4), dm1(3, nd), dth1(3, nd), omega(3), f(3), basis(3, 3)
      real(dp) :: cm(3, 3), ct(3, 3), imax
      real(qp) :: mq(3), cq(3), gq, tq(3, 2), m1q(3), wq(4), dm1q(3, nd), dth1q(3, nd)
      integer :: status, i, j

      call flow_prepare(m, h, inertia, p)
      phi = 0
      di = 0
      if (p%path == path_trivial) then
         ! m = 0: dm1 = dm0, dth1 = dth0 + h I^-1 dm0; h = 0: the identity
         m_out = m
         w = [1.0_dp, 0.0_dp, 0.0_dp, 0.0_dp]
         do i = 1, 6
            phi(i, i) = 1
         end do
         omega = m / inertia
         dh(1:3) = cross(m, omega)
         dh(4:6) = omega
         if (p%g == 0) then
            do i = 1, 3
               phi(3 + i, i) = h / inertia(i)
            end do
         end if
         return
      end if
      if (p%path == path_refused) then
         m_out = ieee_value(1.0_dp, ieee_quiet_nan)
         w = m_out(1); phi = m_out(1); dh = m_out(1); di = m_out(1)
         return
      end if
      if (p%path == path_long) then
         ! (the inputs of exact_flow's long_step)
         do i = 1, 3
            mq(i) = p%sgn(i) * real(m(p%perm(i)), qp)
            cq(i) = real(inertia(p%perm(i)), qp) / real(inertia(p%perm(3)), qp)
         end do
         gq = sqrt(sum(mq * mq))
         call tangent_pair_qp(mq / gq, tq)
         call unit_step_jacobian_qp(mq / gq, gq * real(h, qp) / real(inertia(p%perm(3)), qp), cq, &
                                    quadrature, tq, m1q, wq, dm1q, dth1q, status)
         m1s = real(m1q, dp)
         ws = real(wq, dp)
         ts = real(tq, dp)
         dm1 = real(dm1q, dp)
         dth1 = real(dth1q, dp)
      else
         call tangent_pair(p%ms, ts)
         call unit_step_jacobian(p%ms, p%tau, p%cs, quadrature, ts, m1s, ws, dm1, dth1, status)
         if (status /= unit_done) then
            call unit_step_jacobian_qp(real(p%ms, qp), real(p%tau, qp), real(p%cs, qp), &
                                       quadrature, real(ts, qp), m1q, wq, dm1q, dth1q, status)
            dm1 = real(dm1q, dp)
            dth1 = real(dth1q, dp)
         end if
         ! free_flow's end of a unit-norm step (its derivative is the flow's: the Newton step is the
         ! identity on the exact flow's values, which keep both invariants)
         call keep_invariants(p%ms, p%cs, m1s)
      end if
      call flow_finish(p, m, m1s, ws, m_out, w)

      ! the momentum: tangents (closed form) and the radial direction (scaling)
      omega = m_out / inertia
      f = cross(m_out, omega)
      do j = 1, 2
         basis(:, j) = unsorted(p, ts(:, j))
         cm(:, j) = unsorted(p, dm1(:, j))
         ct(:, j) = unsorted(p, dth1(:, j)) / p%g
      end do
      basis(:, 3) = unsorted(p, p%ms)
      cm(:, 3) = (m_out + h * f) / p%g
      ! (|m| enters the unit-norm step through tau = |m| h / I_max: the attitude's derivative in
      ! tau is the angular velocity for the exact flow, its own for the semi-exact angle)
      ct(:, 3) = (h / p%g) * omega
      if (quadrature > 0) ct(:, 3) = unsorted(p, dth1(:, 5)) * (h / inertia(p%perm(3)))
      phi(1:3, 1:3) = matmul(cm, transpose(basis))
      phi(4:6, 1:3) = matmul(ct, transpose(basis))
      ! the attitude (rotations of space)
      phi(4:6, 4:6) = transpose(quat_matrix(w))
      ! the step: the vector field at the end; the semi-exact angle's own derivative in tau
      dh(1:3) = f
      dh(4:6) = omega
      if (quadrature > 0) dh(4:6) = unsorted(p, dth1(:, 5)) * (p%g / inertia(p%perm(3)))
      ! the moments: ratios to the largest (closed form), the largest by the scaling
      imax = inertia(p%perm(3))
      do j = 1, 2
         di(1:3, p%perm(j)) = unsorted(p, dm1(:, 2 + j)) * (p%g / imax)
         di(4:6, p%perm(j)) = unsorted(p, dth1(:, 2 + j)) / imax
      end do
      di(:, p%perm(3)) = -(h * dh + inertia(p%perm(1)) * di(:, p%perm(1)) &
                           + inertia(p%perm(2)) * di(:, p%perm(2))) / imax
      ! a long step of a symmetric body: free_flow's closed form and its derivatives (those in
      ! each moment apart, which breaks the symmetry, are the elliptic path's above)
      if (quadrature == 0 .and. p%path == path_unit .and. short_turn(p%g, h, inertia)) &
         call short_turn_block(m, p%g, h, inertia, m_out, phi(4:6, 1:3))
      if (p%path /= path_long .and. symmetric_long(h, p%g, inertia, quadrature)) then
         call symmetric_jacobian(m, h, inertia, m_out, w, phi, dh)
      else if (p%path /= path_long .and. &
               precise_long(h, p%g, inertia(p%perm(1)), inertia(p%perm(3)), quadrature)) then
         ! long steps of other bodies: free_flow's values (their secular parts in double-double)
         ! and the derivatives of the exact flow (the elliptic closed form above)
         call free_flow(m, h, inertia, quadrature, m_out, w)
      end if
   end subroutine step_jacobian

   !> The step of a symmetric body by exact_flow.symmetric_step (m_out, w bit for bit) and its
   !> derivatives phi, dh. Moments A on the axes i, j and C on the axis s, (i, j, s) a cyclic order;
   !> Omega = m0_s (C - A) / (A C), b = Omega h, phi = h m0 / A (|phi| = a), R the rotation by b
   !> about e_s. The step is m1 = R m0 and Q1 = Q0 exp(hat(phi)) exp(-b hat(e_s)) (symmetric_step),
   !> so dm1 = R dm0 + db e_s x m1 and, the attitude perturbed in the body frame,
   !> dth1 = E(w)^T dth0 + R J_r(phi) dphi - db e_s, with the right Jacobian of the exponential
   !> J_r(phi) = 1 - ((1 - cos a) / a^2) hat(phi) + ((a - sin a) / a^3) hat(phi)^2 (Murray, Li and
   !> Sastry, A Mathematical Introduction to Robotic Manipulation, 1994, chapter 2, and
   !> exp(-b hat(e_s))^T = R), dphi = (h dm0 + m0 dh) / A and db = (h dm0_s + m0_s dh) (C - A) / (A C).
   pure subroutine symmetric_jacobian(m, h, inertia, m_out, w, phi, dh)
      real(dp), intent(in) :: m(3), h, inertia(3)
      real(dp), intent(out) :: m_out(3), w(4)
      real(dp), intent(inout) :: phi(6, 6), dh(6)
      real(dp) :: angles(6), a, ca, cc, rate, omega, cb, sb, nb, c1, c2, x, v(3), r(3, 3), jr(3, 3)
      real(dp) :: es(3), es_m1(3)
      integer :: i, j, s, k

      call symmetric_step(m, h, inertia, m_out, w, angles)
      if (inertia(1) == inertia(2)) then
         s = 3
      else if (inertia(2) == inertia(3)) then
         s = 1
      else
         s = 2
      end if
      i = 1 + mod(s, 3); j = 1 + mod(s + 1, 3)
      ca = inertia(i); cc = inertia(s)
      rate = h * ((cc - ca) / (ca * cc))
      omega = m(s) * ((cc - ca) / (ca * cc))
      ! cos b, sin b from the half angle
      nb = angles(6) * angles(6) + angles(5) * angles(5)
      cb = (angles(6) - angles(5)) * (angles(6) + angles(5)) / nb
      sb = 2 * angles(5) * angles(6) / nb
      r = 0
      r(s, s) = 1
      r(i, i) = cb; r(j, i) = sb
      r(i, j) = -sb; r(j, j) = cb
      ! J_r(phi): (1 - cos a) / a^2 = 2 (sin(a/2) / a)^2; (a - sin a) / a^3 by its series below 1/2
      a = angles(1)
      v = (h / ca) * m
      if (a == 0) then
         c1 = 0.5_dp
      else
         c1 = 2 * (angles(3) / a)**2
      end if
      if (abs(a) < 0.5_dp) then
         x = a * a
         c2 = 1.0_dp / 1307674368000.0_dp
         c2 = 1.0_dp / 6227020800.0_dp - x * c2
         c2 = 1.0_dp / 39916800.0_dp - x * c2
         c2 = 1.0_dp / 362880.0_dp - x * c2
         c2 = 1.0_dp / 5040.0_dp - x * c2
         c2 = 1.0_dp / 120.0_dp - x * c2
         c2 = 1.0_dp / 6.0_dp - x * c2
      else
         c2 = (a - 2 * angles(3) * angles(4)) / a**3
      end if
      jr = -c1 * hat(v) + c2 * matmul(hat(v), hat(v))
      do k = 1, 3
         jr(k, k) = jr(k, k) + 1
      end do
      jr = matmul(r, jr)
      es = 0
      es(s) = 1
      es_m1 = 0
      es_m1(i) = -m_out(j); es_m1(j) = m_out(i)
      do k = 1, 3
         phi(1:3, k) = r(:, k) + es_m1 * (rate * es(k))
         phi(4:6, k) = jr(:, k) * (h / ca) - es * (rate * es(k))
      end do
      phi(1:3, 4:6) = 0
      phi(4:6, 4:6) = transpose(quat_matrix(w))
      dh(1:3) = omega * es_m1
      dh(4:6) = matmul(jr, m / ca) - omega * es
   end subroutine symmetric_jacobian

   !> Whether an exact step of the momentum of norm g takes short_turn_block.
   pure logical function short_turn(g, h, inertia)
      real(dp), intent(in) :: g, h, inertia(3)

      short_turn = abs(h) * g <= short_turn_max * minval(inertia)
   end function short_turn

   !> The block d(th1)/d(m0) of the jacobian of an exact step (m of norm g > 0, h, inertia, the
   !> momentum after the step m1; the moments in any order; the attitude increment th1 in the body
   !> frame, see the header) for a short turn. In the basis (t1, t2, r) of tangent_pair and
   !> r = m / g: along r the scaling of the momentum, (h / g) J^-1 m1 (as step_jacobian); along t1,
   !> t2 the Taylor series in time of the free body and its variational equations,
   !>    m' = m x w,  dm' = dm x w + m x J^-1 dm,  dth' = J^-1 dm - w x dth,  w = J^-1 m,
   !> with dm(0) = t_j, dth(0) = 0 (the coefficients by the recurrence of products of series:
   !> A. Jorba, M. Zou, Experimental Mathematics 14 (2005) 99-117), in the variables u = m / |m|,
   !> W = I_min J^-1, s = |m| t / I_min:
   !>    (k+1) u_(k+1) = sum_i u_i x W u_(k-i),
   !>    (k+1) a_(k+1) = sum_i (a_i x W u_(k-i) + u_i x W a_(k-i)),
   !>    (k+1) b_(k+1) = W a_k - sum_i W u_i x b_(k-i),   a_0 = t_j, b_0 = 0,
   !> and d(th1)/d(m0) t_j = sum_k b_k s^k / |m|. Each entry is its own series, whose terms fall
   !> geometrically for short turns: nothing cancels. The series stops after two terms in a row
   !> below 2^-54 of the first (on a principal axis every other coefficient vanishes): the rest,
   !> of the size of those terms at these turns, is below the rounding of the sum.
   pure subroutine short_turn_block(m, g, h, inertia, m1, block)
      real(dp), intent(in) :: m(3), g, h, inertia(3), m1(3)
      real(dp), intent(out) :: block(3, 3)
      integer, parameter :: nt = taylor_order_max
      real(dp) :: imin, tau, wd(3), u(3, 0:nt), wu(3, 0:nt), a(3, 2, 0:nt), b(3, 2, 0:nt)
      real(dp) :: un(3), an(3, 2), bn(3, 2), first, tk, tk_prev, basis(3, 3), columns(3, 3)
      integer :: i, j, k, order

      imin = minval(inertia)
      wd = imin / inertia
      tau = (g / imin) * h
      u(:, 0) = m / g
      wu(:, 0) = wd * u(:, 0)
      call tangent_pair(u(:, 0), basis(:, 1:2))
      basis(:, 3) = u(:, 0)
      a(:, :, 0) = basis(:, 1:2)
      b(:, :, 0) = 0
      first = 0
      tk = 1
      order = nt
      do k = 0, nt - 1
         un = 0
         an = 0
         bn = 0
         ! (b_0 = 0)
         do j = 1, 2
            bn(:, j) = wd * a(:, j, k)
         end do
         do i = 0, k - 1
            do j = 1, 2
               bn(:, j) = bn(:, j) - cross(wu(:, i), b(:, j, k - i))
            end do
         end do
         do i = 0, k
            un = un + cross(u(:, i), wu(:, k - i))
            do j = 1, 2
               an(:, j) = an(:, j) + cross(a(:, j, i), wu(:, k - i)) + cross(u(:, i), wd * a(:, j, k - i))
            end do
         end do
         u(:, k + 1) = un / (k + 1)
         wu(:, k + 1) = wd * u(:, k + 1)
         a(:, :, k + 1) = an / (k + 1)
         b(:, :, k + 1) = bn / (k + 1)
         tk_prev = tk
         tk = tk * abs(tau)
         if (k == 0) first = maxval(abs(b(:, :, 1))) * tk
         ! (two terms in a row: on a principal axis the coefficients of every other order vanish)
         if (k > 0 .and. max(maxval(abs(b(:, :, k))) * tk_prev, maxval(abs(b(:, :, k + 1))) * tk) &
             <= 2.0_dp**(-54) * first) then
            order = k + 1
            exit
         end if
      end do
      ! (Horner's scheme, the smallest terms first)
      columns(:, 1:2) = b(:, :, order)
      do k = order - 1, 1, -1
         columns(:, 1:2) = columns(:, 1:2) * tau + b(:, :, k)
      end do
      ! (tau / |m| = h / I_min, which does not underflow where the block does not)
      columns(:, 1:2) = columns(:, 1:2) * (h / imin)
      columns(:, 3) = (h / g) * (m1 / inertia)
      block = matmul(columns, transpose(basis))
   end subroutine short_turn_block

   !> A vector of the sorted frame of flow_prepare in the frame of the body (flow_finish's map).
   pure function unsorted(p, vs) result(v)
      type(flow_prep_t), intent(in) :: p
      real(dp), intent(in) :: vs(3)
      real(dp) :: v(3)
      integer :: i

      do i = 1, 3
         v(p%perm(i)) = p%sgn(i) * vs(i)
      end do
   end function unsorted

   !> The derivatives di(6, 3, j) of the step of body j with respect to its moments (as
   !> free_flow_jacobian), for the n bodies of a batch (the momenta m, steps h(min(j, nh)),
   !> moments inertia), the chunks of bodies shared among the threads (parallel.f90; each body's
   !> arithmetic is its own, so the results do not depend on the thread count).
   subroutine inertia_jacobian_batch(n, nh, m, h, inertia, quadrature, threads, di)
      integer, intent(in) :: n, nh, quadrature, threads
      real(dp), intent(in) :: m(3, n), h(nh), inertia(3, n)
      real(dp), intent(out) :: di(6, 3, n)
      real(dp) :: m_out(3), w(4), phi(6, 6), dh(6)
      integer :: ic, b0, b

      !$omp parallel do num_threads(thread_count(threads)) if(n > chunk) schedule(dynamic, 2) &
      !$omp default(none) private(b0, b, m_out, w, phi, dh) &
      !$omp shared(n, nh, m, h, inertia, quadrature, di)
      do ic = 1, (n + chunk - 1) / chunk
         b0 = (ic - 1) * chunk + 1
         do b = b0, min(n, b0 + chunk - 1)
            call free_flow_jacobian(m(:, b), h(min(b, nh)), inertia(:, b), quadrature, m_out, w, phi, &
                                    dh, di(:, :, b))
         end do
      end do
      !$omp end parallel do
   end subroutine inertia_jacobian_batch

end module flow_derivatives
