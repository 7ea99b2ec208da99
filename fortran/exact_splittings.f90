! Exact-flow methods of E. Celledoni, A. Zanna, "FRB-FORTRAN routines for the exact computation of free rigid body
! motions", ACM TOMS 37(2), article 23, 2010 (Algorithm 903),
! for frb.integrate:
! the free body by one exact (or semi-exact) flow a step ("EXACT"), and symmetric splittings of
! a torqued body (section 4.3 and the appendix): A = the exact free flow, B = the torque kick
! m <- m + tau T_b(t, Q) (Q fixed, its exact flow), composed as the schedule meth%kinds,
! meth%frac built by frb.integrate ("STRANG", "RKN6_14" of S. Blanes, P.C. Moan,
! J. Comput. Appl. Math. 142 (2002), as quoted in eq. (23) of Celledoni and Zanna, or user
! coefficients). The time of a torqued body advances with the A flows: a kick B between the
! A flows of total length s h (from the start of the step) uses T_b(t + s h, Q), which keeps a
! symmetric method symmetric for time-dependent torques.
! A torque with constant rotors (torque_rotor: internal momenta r, shared or per body) is a
! gyrostat: EXACT takes the gyrostat's exact flow (gyrostat_flow) when the torque is rotors only,
! and the splittings take it as their free part A and kick with the other terms only.
! With reaction wheels (module wheels) a splitting is split in the total momentum M = m + A h:
! A the exact free flow of M (the free body of momentum M), B the wheel kick (wheels.wheel_kick:
! the gyrostat's turn about I^-1 A h, the wheels' flow, the torque's flow), each keeping Q M, so
! that without an external torque the splitting keeps Q M to rounding (the spatial L = Q M carried
! from step to step: wheels.total_momenta).
module exact_splittings
   use kinds, only: dp
   use step_interface
   use wheels, only: wheels_t, wheels_active, total_momenta, body_momenta, wheel_kick
   use numbers_table, only: variant_exact, variant_splitting
   use torques, only: torque_t, user_torque_cb, torque_one, torque_flow, field_along_e3, &
                      field_e3_kick_tr, damping_rate, expm1, torqued, has_rotor, rotors_only, &
                      rotor_momentum, without_rotors
   use exact_flow, only: free_flow, rotate_matrix_tr
   use gyrostat_flow, only: gyrostat_step
   use simd_dispatch, only: free_flow_chunk, flow_lanes_width
   use rotations, only: qmul
   implicit none
   private

   public :: exact_splitting_step, exact_splitting_free_steps, exact_splitting_flows, exact_free_flows


contains

   subroutine exact_splitting_step(meth, n, k, t, h, m, q, hw, inertia, ws, tq, wh, cb, info)
      type(method_t), intent(in) :: meth; type(torque_t), intent(in) :: tq; procedure(user_torque_cb) :: cb
      integer, intent(in) :: n, k; integer, intent(inout) :: info(n); real(dp), intent(in) :: t, h, inertia(3, n)
      real(dp), intent(inout) :: m(3, n), q(4, n), ws(nws, n)   ! (step_interface's method_step)
      type(wheels_t), intent(in) :: wh; real(dp), intent(inout) :: hw(wh%nw, n)

      if (wheels_active(wh)) then
         if (meth%variant == variant_exact) then
            info = info_not_implemented
         else
            call wheel_splitting(meth, n, k, t, h, m, q, hw, inertia, ws, tq, wh, cb)
         end if
         return
      end if
      call exact_splitting_flows(meth, n, k, t, h, m, 4, q, inertia, tq, cb)
   end subroutine exact_splitting_step

   !> One step of a splitting with wheels (see the header): the flows of meth on the total
   !> momenta M, the free flows exact, the kicks wheel_kick; M kept in ws between steps.
   subroutine wheel_splitting(meth, n, k, t, h, m, q, hw, inertia, ws, tq, wh, cb)
      type(method_t), intent(in) :: meth
      integer, intent(in) :: n, k
      real(dp), intent(in) :: t, h, inertia(3, n)
      real(dp), intent(inout) :: m(3, n), q(4, n), ws(nws, n)
      type(wheels_t), intent(in) :: wh
      real(dp), intent(inout) :: hw(wh%nw, n)
      type(torque_t), intent(in) :: tq
      procedure(user_torque_cb) :: cb
      real(dp), allocatable :: mt(:, :), el(:, :)
      real(dp) :: ta, tau
      integer :: i

      allocate (mt(3, n), el(3, n))
      call total_momenta(wh, n, m, q, hw, ws, mt, el)
      ta = t
      do i = 1, meth%nf
         tau = meth%frac(i) * h
         if (meth%kinds(i) == 0) then
            call exact_free_flows(n, 1, [tau], meth%quadrature, mt, 4, q, n, inertia)
            ta = ta + tau
         else
            call wheel_kick(wh, tq, n, k, ta, tau, mt, el, q, hw, inertia, cb)
         end if
      end do
      call body_momenta(wh, n, el, q, hw, ws, m)
   end subroutine wheel_splitting

   !> Torque-free steps of EXACT (step_interface's method_free_steps): nsub exact free flows,
   !> body j over h(min(j, nh)); the splittings run torque-free as EXACT (the Python layer
   !> chooses that variant), so other variants are info_not_implemented.
   subroutine exact_splitting_free_steps(meth, n, k, nsub, nh, h, m, natt, att, ni, inertia, ws, info)
      type(method_t), intent(in) :: meth
      integer, intent(in) :: n, k, nsub, nh, natt, ni
      real(dp), intent(in) :: h(nh), inertia(3, ni)
      real(dp), intent(inout) :: m(3, n), att(natt, n), ws(nws, n)
      integer, intent(inout) :: info(n)
      integer :: s

      if (meth%variant /= variant_exact) then
         info = info_not_implemented
         return
      end if
      do s = 1, nsub
         call exact_free_flows(n, nh, h, meth%quadrature, m, natt, att, ni, inertia)
      end do
   end subroutine exact_splitting_free_steps

   !> One step of the method for attitudes held as quaternions (natt = 4, att = q) or as
   !> transposed matrices (natt = 9, att = Q^T column by column: the layout of frb.frb_step, whose
   !> free flow this repeats operation for operation, so that a run from a matrix gives the
   !> states of repeated frb.frb_step calls bit for bit).
   subroutine exact_splitting_flows(meth, n, k, t, h, m, natt, att, inertia, tq, cb)
      type(method_t), intent(in) :: meth
      integer, intent(in) :: n, k, natt
      real(dp), intent(in) :: t, h, inertia(3, n)
      real(dp), intent(inout) :: m(3, n), att(natt, n)
      type(torque_t), intent(in) :: tq
      procedure(user_torque_cb) :: cb
      real(dp), allocatable :: tb(:, :)
      real(dp) :: ta, tau, c
      type(torque_t) :: tk
      logical :: gyrostat
      integer :: i

      if (meth%variant == variant_exact) then
         c = damping_rate(tq)
         if (c > 0.0_dp) then
            ! linear damping alone: m(t) = e^{-ct} M(s), Q(t) = Q_free(s), s = (1 - e^{-ct}) / c,
            ! (M, Q_free) the free flow (the time change ds = e^{-ct} dt): exact over the step
            call exact_free_flows(n, 1, [-expm1(-c * h) / c], meth%quadrature, m, natt, att, n, inertia)
            m = exp(-c * h) * m
         else if (rotors_only(tq)) then
            call gyrostat_flows(tq, n, h, m, natt, att, inertia)
         else if (n == 1) then
            call free_flow_one(h, meth%quadrature, m, natt, att, inertia)
         else
            call exact_free_flows(n, 1, [h], meth%quadrature, m, natt, att, n, inertia)
         end if
         return
      end if
      if (n == 1) then
         call splitting_one(meth, k, t, h, m, natt, att, inertia, tq, cb)
         return
      end if
      ! with rotors the free part is the gyrostat and the kicks are those of the other terms
      gyrostat = has_rotor(tq)
      tk = tq
      if (gyrostat) tk = without_rotors(tq)
      allocate (tb(3, n))
      ta = t
      do i = 1, meth%nf
         tau = meth%frac(i) * h
         if (meth%kinds(i) == 0) then
            if (gyrostat) then
               call gyrostat_flows(tq, n, tau, m, natt, att, inertia)
            else
               call exact_free_flows(n, 1, [tau], meth%quadrature, m, natt, att, n, inertia)
            end if
            ta = ta + tau
         else if (torqued(tk)) then
            call torque_flow(tk, n, ta, k, natt, att, m, inertia, tau, tb, cb)
         end if
      end do
   end subroutine exact_splitting_flows

   !> exact_splitting_flows for one body (frb.splitting.integrate, a run of one body): the same
   !> operations on scalars, without the arrays of a batch (no allocation in the time loop).
   subroutine splitting_one(meth, k, t, h, m, natt, att, inertia, tq, cb)
      type(method_t), intent(in) :: meth
      integer, intent(in) :: k, natt
      real(dp), intent(in) :: t, h, inertia(3)
      real(dp), intent(inout) :: m(3), att(natt)
      type(torque_t), intent(in) :: tq
      procedure(user_torque_cb) :: cb
      real(dp) :: ta, tau, tb(3, 1)
      type(torque_t) :: tk
      integer :: i
      logical :: e3_kick, plain, gyrostat, kicked

      gyrostat = has_rotor(tq)
      tk = tq
      if (gyrostat) tk = without_rotors(tq)
      kicked = torqued(tk)
      e3_kick = natt == 9 .and. field_along_e3(tk)
      plain = tk%user == 0 .and. .not. tk%momentum
      ta = t
      do i = 1, meth%nf
         tau = meth%frac(i) * h
         if (meth%kinds(i) == 0) then
            if (gyrostat) then
               call gyrostat_flows(tq, 1, tau, m, natt, att, inertia)
            else
               call free_flow_one(tau, meth%quadrature, m, natt, att, inertia)
            end if
            ta = ta + tau
         else if (.not. kicked) then
            cycle
         else if (e3_kick) then
            call field_e3_kick_tr(tk, tau, att, m)
         else if (plain) then
            m = m + tau * torque_one(tk, ta, 1, natt, att, m, inertia)
         else
            call torque_flow(tk, 1, ta, k, natt, att, m, inertia, tau, tb, cb)
         end if
      end do
   end subroutine splitting_one

   !> The exact flow over tf of the gyrostats of the n bodies: the rigid body with the internal
   !> momentum of the torque's rotors (gyrostat_flow), the attitudes as in exact_free_flows.
   subroutine gyrostat_flows(tq, n, tf, m, natt, att, inertia)
      type(torque_t), intent(in) :: tq
      integer, intent(in) :: n, natt
      real(dp), intent(in) :: tf, inertia(3, n)
      real(dp), intent(inout) :: m(3, n), att(natt, n)
      real(dp) :: m1(3), w(4, 1)
      integer :: j

      do j = 1, n
         call gyrostat_step(m(:, j), rotor_momentum(tq, j), tf, inertia(:, j), m1, w(:, 1))
         m(:, j) = m1
         if (natt == 4) then
            call rotate_quaternions(1, att(:, j), w)
         else
            call rotate_matrices(1, att(:, j), w)
         end if
      end do
   end subroutine gyrostat_flows

   !> The exact (quadrature = 0) or semi-exact free flow of the n bodies, body j over the time
   !> tf(min(j, ntf)) with the moments inertia(:, min(j, ni)), flow_lanes_width bodies in lock-step (free_flow_chunk: the results of
   !> free_flow bit for bit), for attitudes held as quaternions (natt = 4: q <- q w) or as
   !> transposed matrices (natt = 9: Q <- Q E(w), rotate_matrix_tr, the update of frb.frb_step).
   subroutine exact_free_flows(n, ntf, tf, quadrature, m, natt, att, ni, inertia)
      integer, intent(in) :: n, ntf, quadrature, natt, ni
      real(dp), intent(in) :: tf(ntf), inertia(3, ni)
      real(dp), intent(inout) :: m(3, n), att(natt, n)
      real(dp) :: m1(3, flow_lanes_width), w(4, flow_lanes_width)
      integer :: b0, nc
      if (n == 1) then
         call free_flow_one(tf(1), quadrature, m, natt, att, inertia(:, 1))
         return
      end if
      do b0 = 1, n, flow_lanes_width
         nc = min(flow_lanes_width, n - b0 + 1)
         ! (the lanes read body i's step and moments at min(i, nh) and min(i, ni) of the slices)
         call free_flow_chunk(nc, 1, min(ntf, nc), min(ni, nc), m(:, b0:b0 + nc - 1), &
                              tf(min(b0, ntf):min(b0 + nc - 1, ntf)), &
                              inertia(:, min(b0, ni):min(b0 + nc - 1, ni)), quadrature, m1, w)
         m(:, b0:b0 + nc - 1) = m1(:, 1:nc)
         if (natt == 4) then
            call rotate_quaternions(nc, att(:, b0:b0 + nc - 1), w)
         else
            call rotate_matrices(nc, att(:, b0:b0 + nc - 1), w)
         end if
      end do
   end subroutine exact_free_flows

   !> exact_free_flows for one body (frb.splitting.integrate, a run of one body): the scalar free
   !> flow, which the lanes repeat bit for bit, without the packing of the lanes.
   subroutine free_flow_one(tf, quadrature, m, natt, att, inertia)
      integer, intent(in) :: quadrature, natt
      real(dp), intent(in) :: tf, inertia(3)
      real(dp), intent(inout) :: m(3), att(natt)
      real(dp) :: m1(3), w(4)

      call free_flow(m, tf, inertia, quadrature, m1, w)
      m = m1
      if (natt == 4) then
         call rotate_quaternions(1, att, w)
      else
         call rotate_matrices(1, att, w)
      end if
   end subroutine free_flow_one

   !> q_j <- q_j w_j for nc quaternions.
   pure subroutine rotate_quaternions(nc, q, w)
      integer, intent(in) :: nc
      real(dp), intent(inout) :: q(4, nc)
      real(dp), intent(in) :: w(4, *)
      integer :: j

      do j = 1, nc
         q(:, j) = qmul(q(:, j), w(:, j))
      end do
   end subroutine rotate_quaternions

   !> Q_j <- Q_j E(w_j) for nc matrices held as qt(:, :, j) = Q_j^T.
   pure subroutine rotate_matrices(nc, qt, w)
      integer, intent(in) :: nc
      real(dp), intent(inout) :: qt(3, 3, nc)
      real(dp), intent(in) :: w(4, *)
      real(dp) :: q1(3, 3)
      integer :: j

      do j = 1, nc
         call rotate_matrix_tr(qt(:, :, j), w(:, j), q1)
         qt(:, :, j) = q1
      end do
   end subroutine rotate_matrices

end module exact_splittings
