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
                      field_e3_kick_tr, damping_rate, expm1, torqued, torque_jacobian_t, torque_jacobian, &
                      affine_parts, affine_flow_jacobian, phi_prime, torque_damping, torque_rotor, &
                      torque_attitude_control, torque_term_reals, term_parameters, has_derivatives, &
                      has_rotor, rotors_only, rotor_momentum, without_rotors
   use numbers_table, only: control_kd, engine_chunk
   use torques, only: torque_field, torque_gravity_gradient
   use variational, only: layout_t, apply_jacobian, apply_kick
   use exact_flow, only: free_flow
   use gyrostat_flow, only: gyrostat_step
   use simd_dispatch, only: flow_turn_chunk, flow_lanes_width, state_jacobian_chunk
   use flow_batches, only: turn_attitudes
   use flow_derivatives, only: free_flow_jacobian
   use parallel, only: thread_count
   use rotations, only: hat
   implicit none
   private

   public :: exact_splitting_step, exact_splitting_free_steps, exact_splitting_flows, exact_free_flows
   public :: exact_free_flow_jacobians, free_flow_jacobian_batch, exact_splitting_variational_step

   !> Bodies of a block of the kicks' tangents (attitude_kick_tangents).
   integer, parameter :: tangent_width = engine_chunk

contains

   include 'torque_jacobian_lanes_generic.inc'

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
      call total_momenta(wh, tq, n, m, q, hw, ws, mt, el)
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
      call body_momenta(wh, tq, n, el, q, hw, ws, m)
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
         call turn_attitudes(natt, 1, att(:, j), w)
      end do
   end subroutine gyrostat_flows

   !> The exact (quadrature = 0) or semi-exact free flow of the n bodies, body j over the time
   !> tf(min(j, ntf)) with the moments inertia(:, min(j, ni)), flow_lanes_width bodies in lock-step
   !> (flow_batches.flow_turn_chunk of the SIMD target in use: the results of free_flow bit for
   !> bit), for attitudes held as quaternions (natt = 4: q <- q w) or as transposed matrices
   !> (natt = 9: Q <- Q E(w), rotate_matrix_tr, the update of frb.frb_step).
   subroutine exact_free_flows(n, ntf, tf, quadrature, m, natt, att, ni, inertia)
      integer, intent(in) :: n, ntf, quadrature, natt, ni
      real(dp), intent(in) :: tf(ntf), inertia(3, ni)
      real(dp), intent(inout) :: m(3, n), att(natt, n)
      integer :: b0, nc
      if (n == 1) then
         call free_flow_one(tf(1), quadrature, m, natt, att, inertia(:, 1))
         return
      end if
      do b0 = 1, n, flow_lanes_width
         nc = min(flow_lanes_width, n - b0 + 1)
         ! (the lanes read body i's step and moments at min(i, nh) and min(i, ni) of the slices)
         call flow_turn_chunk(natt, nc, 1, min(ntf, nc), min(ni, nc), m(:, b0:b0 + nc - 1), &
                              att(:, b0:b0 + nc - 1), tf(min(b0, ntf):min(b0 + nc - 1, ntf)), &
                              inertia(:, min(b0, ni):min(b0 + nc - 1, ni)), quadrature)
      end do
   end subroutine exact_free_flows

   !> exact_free_flows with the derivatives of each flow: phi(:, :, j) the state transition matrix
   !> and dh(:, j) the derivative in the time of body j's flow (rows and columns (dm, dtheta),
   !> flow_derivatives.free_flow_jacobian's). The states are those of exact_free_flows bit for bit:
   !> the exact flow by the lanes with their derivative (flow_tangent_lanes.state_jacobian_chunk),
   !> the semi-exact flow body by body (free_flow_jacobian).
   subroutine exact_free_flow_jacobians(n, ntf, tf, quadrature, m, natt, att, inertia, phi, dh)
      integer, intent(in) :: n, ntf, quadrature, natt
      real(dp), intent(in) :: tf(ntf), inertia(3, n)
      real(dp), intent(inout) :: m(3, n), att(natt, n)
      real(dp), intent(out) :: phi(6, 6, n), dh(6, n)
      real(dp) :: m1(3, flow_lanes_width), w(4, flow_lanes_width), di(6, 3)
      integer :: b0, nc, j

      do b0 = 1, n, flow_lanes_width
         nc = min(flow_lanes_width, n - b0 + 1)
         if (quadrature == 0) then
            if (ntf == 1) then
               call state_jacobian_chunk(nc, 1, m(:, b0:b0 + nc - 1), tf, inertia(:, b0:b0 + nc - 1), m1, w, &
                                         phi(:, :, b0:b0 + nc - 1), dh(:, b0:b0 + nc - 1))
            else
               call state_jacobian_chunk(nc, nc, m(:, b0:b0 + nc - 1), tf(b0:b0 + nc - 1), &
                                         inertia(:, b0:b0 + nc - 1), m1, w, phi(:, :, b0:b0 + nc - 1), &
                                         dh(:, b0:b0 + nc - 1))
            end if
         else
            do j = 1, nc
               call free_flow_jacobian(m(:, b0 + j - 1), tf(min(b0 + j - 1, ntf)), inertia(:, b0 + j - 1), &
                                       quadrature, m1(:, j), w(:, j), phi(:, :, b0 + j - 1), dh(:, b0 + j - 1), di)
            end do
         end if
         m(:, b0:b0 + nc - 1) = m1(:, 1:nc)
         call turn_attitudes(natt, nc, att(:, b0:b0 + nc - 1), w)
      end do
   end subroutine exact_free_flow_jacobians

   !> One step of EXACT (exact_free_flow_jacobians) for the n bodies of a batch, body j with the
   !> step h(min(j, nh)), from m, att (natt = 4: quaternions, 9: Q^T) to m_out, att_out, with
   !> phit(:, :, j) the TRANSPOSE of body j's state transition matrix (numpy's C-ordered (n, 6, 6)
   !> seen from Fortran) and dh; the chunks of flow_lanes_width bodies shared among the threads (the
   !> results do not depend on the thread count).
   subroutine free_flow_jacobian_batch(natt, n, nh, m, att, h, inertia, quadrature, threads, m_out, &
                                       att_out, phit, dh)
      integer, intent(in) :: natt, n, nh, quadrature, threads
      real(dp), intent(in) :: m(3, n), att(natt, n), h(nh), inertia(3, n)
      real(dp), intent(out) :: m_out(3, n), att_out(natt, n), phit(6, 6, n), dh(6, n)
      real(dp) :: phi(6, 6, flow_lanes_width)
      integer :: ic, b0, b1, nc, j

      !$omp parallel do num_threads(thread_count(threads)) if(n > flow_lanes_width) schedule(dynamic, 4) &
      !$omp default(none) private(b0, b1, nc, j, phi) &
      !$omp shared(natt, n, nh, m, att, h, inertia, quadrature, m_out, att_out, phit, dh)
      do ic = 1, (n + flow_lanes_width - 1) / flow_lanes_width
         b0 = (ic - 1) * flow_lanes_width + 1
         b1 = min(n, b0 + flow_lanes_width - 1)
         nc = b1 - b0 + 1
         m_out(:, b0:b1) = m(:, b0:b1)
         att_out(:, b0:b1) = att(:, b0:b1)
         if (nh == 1) then
            call exact_free_flow_jacobians(nc, 1, h, quadrature, m_out(:, b0:b1), natt, att_out(:, b0:b1), &
                                           inertia(:, b0:b1), phi, dh(:, b0:b1))
         else
            call exact_free_flow_jacobians(nc, nc, h(b0:b1), quadrature, m_out(:, b0:b1), natt, &
                                           att_out(:, b0:b1), inertia(:, b0:b1), phi, dh(:, b0:b1))
         end if
         do j = 1, nc
            phit(:, :, b0 + j - 1) = transpose(phi(:, :, j))
         end do
      end do
      !$omp end parallel do
   end subroutine free_flow_jacobian_batch

   !> exact_free_flows for one body (frb.splitting.integrate, a run of one body): the scalar free
   !> flow, which the lanes repeat bit for bit, without the packing of the lanes.
   subroutine free_flow_one(tf, quadrature, m, natt, att, inertia)
      integer, intent(in) :: quadrature, natt
      real(dp), intent(in) :: tf, inertia(3)
      real(dp), intent(inout) :: m(3), att(natt)
      real(dp) :: m1(3), w(4)

      call free_flow(m, tf, inertia, quadrature, m1, w)
      m = m1
      call turn_attitudes(natt, 1, att, w)
   end subroutine free_flow_one

   ! --- the variational steps (frb.integrate(..., sensitivities=...), module variational) ---

   !> One step of EXACT or of a splitting with the variational state (step_interface's
   !> method_variational_step): the flows of exact_splitting_flows (the same values), each with its
   !> derivatives: the free flows by exact_free_flow_jacobians (their derivatives in the moments
   !> by flow_derivatives.free_flow_jacobian), the torque's flows by torque_jacobian (the kicks of
   !> a torque of Q alone of the lanes' kinds by lane_torque_jacobians, attitude_kick_tangents)
   !> and, for a torque of m, affine_flow_jacobian; EXACT with linear damping alone as the time
   !> change of the free flow. The exact flow only (quadrature = 0).
   subroutine exact_splitting_variational_step(meth, n, k, t, nh, h, m, natt, att, inertia, tq, lay, s, info)
      type(method_t), intent(in) :: meth
      integer, intent(in) :: n, k, nh, natt
      real(dp), intent(in) :: t, h(nh), inertia(3, n)
      real(dp), intent(inout) :: m(3, n), att(natt, n)
      type(torque_t), intent(in) :: tq
      type(layout_t), intent(in) :: lay
      real(dp), intent(inout) :: s(6, lay%ncol, n)
      integer, intent(inout) :: info(n)
      real(dp) :: ta, tau, before
      integer :: i

      ! (with rotors the free part is the gyrostat, whose derivatives are not carried)
      if (meth%quadrature /= 0 .or. .not. has_derivatives(tq, n) .or. has_rotor(tq)) then
         info = info_not_implemented
         return
      end if
      if (meth%variant == variant_exact) then
         ! (damping alone, of any rate, zero included: its rate's column is carried)
         if (damping_rate(tq) >= 0.0_dp) then
            call damped_variational(n, h(1), tq, m, natt, att, inertia, lay, s)
         else if (torqued(tq)) then
            info = info_not_implemented
         else
            call free_flow_variational(n, nh, h, 1.0_dp, m, natt, att, inertia, lay, s)
         end if
         return
      end if
      if (nh /= 1) then
         info = info_bad_call
         return
      end if
      ta = t
      before = 0.0_dp
      do i = 1, meth%nf
         tau = meth%frac(i) * h(1)
         if (meth%kinds(i) == 0) then
            call free_flow_variational(n, 1, [tau], meth%frac(i), m, natt, att, inertia, lay, s)
            ta = ta + tau
            before = before + meth%frac(i)
         else
            call torque_flow_variational(tq, n, ta, k, natt, att, m, inertia, tau, meth%frac(i), &
                                         (k - 1) + before, lay, s)
         end if
      end do
   end subroutine exact_splitting_variational_step

   !> The exact free flows of exact_free_flows (body j over tf(min(j, ntf)), tf = dtdh h) with the
   !> variational state: S <- phi S, the column of h plus dtdh (f1, w1), those of the moments plus
   !> the flow's derivatives in them (taken at the state before the flow).
   subroutine free_flow_variational(n, ntf, tf, dtdh, m, natt, att, inertia, lay, s)
      integer, intent(in) :: n, ntf, natt
      real(dp), intent(in) :: tf(ntf), dtdh, inertia(3, n)
      real(dp), intent(inout) :: m(3, n), att(natt, n)
      type(layout_t), intent(in) :: lay
      real(dp), intent(inout) :: s(6, lay%ncol, n)
      real(dp) :: phi(6, 6, n), dh(6, n), di(6, 3, n), mo(3), w(4), ph(6, 6), dhh(6)
      integer :: j

      if (lay%inertia > 0) then
         do j = 1, n
            call free_flow_jacobian(m(:, j), tf(min(j, ntf)), inertia(:, j), 0, mo, w, ph, dhh, di(:, :, j))
         end do
      end if
      call exact_free_flow_jacobians(n, ntf, tf, 0, m, natt, att, inertia, phi, dh)
      do j = 1, n
         call apply_jacobian(lay%ncol, phi(:, :, j), s(:, :, j))
         if (lay%h > 0) s(:, lay%h, j) = s(:, lay%h, j) + dtdh * dh(:, j)
         if (lay%inertia > 0) s(:, lay%inertia:lay%inertia + 2, j) = s(:, lay%inertia:lay%inertia + 2, j) &
                                                                     + di(:, :, j)
      end do
   end subroutine free_flow_variational

   !> EXACT with linear damping alone (exact_splitting_flows): m1 = e M(s), the attitude that of the
   !> free flow over s, e = exp(-c h), s = (1 - e) / c = h phi1(-c h). Its jacobian is
   !> diag(e 1, 1) phi_free(s); d/dh: ds/dh = e, so (e (e f(M) - c M), e w(M)); d/dI: diag(e 1, 1)
   !> the free flow's; d/dc (each damping term's rate): ds/dc = -h^2 phi1'(-c h), so
   !> (e (ds/dc f(M) - h M), ds/dc w(M)).
   subroutine damped_variational(n, h, tq, m, natt, att, inertia, lay, s)
      integer, intent(in) :: n, natt
      real(dp), intent(in) :: h, inertia(3, n)
      type(torque_t), intent(in) :: tq
      real(dp), intent(inout) :: m(3, n), att(natt, n)
      type(layout_t), intent(in) :: lay
      real(dp), intent(inout) :: s(6, lay%ncol, n)
      real(dp) :: phi(6, 6, n), dh(6, n), di(6, 3, n), mo(3), w(4), ph(6, 6), dhh(6), c, e, sc, dsdc, col(6)
      integer :: j, i

      c = damping_rate(tq)
      sc = h                            ! (the limit c -> 0)
      if (c /= 0.0_dp) sc = -expm1(-c * h) / c
      if (lay%inertia > 0) then
         do j = 1, n
            call free_flow_jacobian(m(:, j), sc, inertia(:, j), 0, mo, w, ph, dhh, di(:, :, j))
         end do
      end if
      call exact_free_flow_jacobians(n, 1, [sc], 0, m, natt, att, inertia, phi, dh)
      e = exp(-c * h)
      dsdc = -h * h * phi_prime(-c * h)
      do j = 1, n
         call apply_jacobian(lay%ncol, phi(:, :, j), s(:, :, j))
         s(1:3, :, j) = e * s(1:3, :, j)
         if (lay%h > 0) then
            s(1:3, lay%h, j) = s(1:3, lay%h, j) + e * (e * dh(1:3, j) - c * m(:, j))
            s(4:6, lay%h, j) = s(4:6, lay%h, j) + e * dh(4:6, j)
         end if
         if (lay%inertia > 0) then
            s(1:3, lay%inertia:lay%inertia + 2, j) = s(1:3, lay%inertia:lay%inertia + 2, j) + e * di(1:3, :, j)
            s(4:6, lay%inertia:lay%inertia + 2, j) = s(4:6, lay%inertia:lay%inertia + 2, j) + di(4:6, :, j)
         end if
         if (lay%torque > 0) then
            col(1:3) = e * (dsdc * dh(1:3, j) - h * m(:, j))
            col(4:6) = dsdc * dh(4:6, j)
            do i = 1, tq%nterms
               s(:, lay%torque + (i - 1) * torque_term_reals, j) = s(:, lay%torque + (i - 1) * torque_term_reals, j) &
                                                                   + col
            end do
         end if
      end do
      m = exp(-c * h) * m
   end subroutine damped_variational

   !> The torque's flow of torque_flow over tau at time ta (a splitting's kick, the attitude fixed)
   !> with the variational state, ta = t0 + dtadh h + ..., tau = frac h. Torques of Q alone:
   !> m1 = m + tau T, so S <- [[1, tau dT/dtheta], [0, 1]] S, d/dh + frac T + tau dT/dt dtadh,
   !> d/dI + tau dT/dI, d/dpar + tau dT/dpar. Torques of m: m1 = exp(tau A) m + tau phi1(tau A) b
   !> (affine_flow_jacobian): S <- [[exp(tau A), tau phi1(tau A) db/dtheta], [0, 1]] S, d/dh +
   !> frac (A m1 + b) + tau phi1(tau A) db/dt dtadh (phib = tau phi1(tau A)), and the moments and
   !> parameters through their changes of A and b.
   subroutine torque_flow_variational(tq, n, ta, k, natt, att, m, inertia, tau, frac, dtadh, lay, s)
      type(torque_t), intent(in) :: tq
      integer, intent(in) :: n, k, natt
      real(dp), intent(in) :: ta, att(natt, n), inertia(3, n), tau, frac, dtadh
      real(dp), intent(inout) :: m(3, n)
      type(layout_t), intent(in) :: lay
      real(dp), intent(inout) :: s(6, lay%ncol, n)
      real(dp) :: m0(3, n), tb(3, n), a(3, 3), b(3), jmm(3, 3), phib(3, 3), one(3, 3), dsum(3, 3)
      real(dp), allocatable :: da(:, :, :), db(:, :), dm1(:, :)
      type(torque_jacobian_t) :: jac
      integer :: j, l, i, nd, c0

      m0 = m
      call torque_flow(tq, n, ta, k, natt, att, m, inertia, tau, tb, no_torque)
      if (natt == 4 .and. .not. tq%momentum .and. lay%torque == 0 .and. jacobian_in_lanes(tq)) then
         call attitude_kick_tangents(tq, n, ta, att, m0, inertia, tau, frac, dtadh, tb, lay, s)
         return
      end if
      one = 0.0_dp
      do l = 1, 3
         one(l, l) = 1.0_dp
      end do
      nd = 0
      if (lay%inertia > 0) nd = nd + 3
      if (lay%torque > 0) nd = nd + torque_term_reals * tq%nterms
      allocate (da(3, 3, max(nd, 1)), db(3, max(nd, 1)), dm1(3, max(nd, 1)))
      do j = 1, n
         call torque_jacobian(tq, ta, j, natt, att(:, j), m0(:, j), inertia(:, j), jac)
         if (.not. tq%momentum) then
            call apply_kick(lay%ncol, one, tau * jac%dth, s(:, :, j))
            if (lay%h > 0) s(1:3, lay%h, j) = s(1:3, lay%h, j) + frac * jac%tb + (tau * dtadh) * jac%dt
            if (lay%inertia > 0) s(1:3, lay%inertia:lay%inertia + 2, j) = s(1:3, lay%inertia:lay%inertia + 2, j) &
                                                                          + tau * jac%di
            if (lay%torque > 0) then
               do i = 1, tq%nterms
                  c0 = lay%torque + (i - 1) * torque_term_reals
                  s(1:3, c0:c0 + torque_term_reals - 1, j) = s(1:3, c0:c0 + torque_term_reals - 1, j) &
                                                             + tau * jac%dp(:, :, i)
               end do
            end if
            cycle
         end if
         call affine_parts(tq, ta, j, natt, att(:, j), inertia(:, j), a, b)
         call affine_changes(tq, j, inertia(:, j), jac, lay, nd, da, db)
         call affine_flow_jacobian(tau, a, b, m0(:, j), nd, da, db, jmm, phib, dm1)
         dsum = matmul(phib, jac%dth)
         call apply_kick(lay%ncol, jmm, dsum, s(:, :, j))
         if (lay%h > 0) s(1:3, lay%h, j) = s(1:3, lay%h, j) + frac * (matmul(a, m(:, j)) + b) &
                                           + dtadh * matmul(phib, jac%dt)
         l = 0
         if (lay%inertia > 0) then
            s(1:3, lay%inertia:lay%inertia + 2, j) = s(1:3, lay%inertia:lay%inertia + 2, j) + dm1(:, 1:3)
            l = 3
         end if
         if (lay%torque > 0) s(1:3, lay%torque:lay%torque + nd - l - 1, j) = &
            s(1:3, lay%torque:lay%torque + nd - l - 1, j) + dm1(:, l + 1:nd)
      end do
   end subroutine torque_flow_variational

   !> torque_flow_variational's kick of a torque of Q alone (m1 = m + tau T: S <- [[1, tau
   !> dT/dtheta], [0, 1]] S, d/dh + frac T + tau dT/dt dtadh, d/dI + tau dT/dI) for a torque of
   !> jacobian_in_lanes at the quaternions att, the torque tb(:, j) of body j, without the
   !> parameters' columns: the derivatives by lane_torque_jacobians, tangent_width bodies at a time.
   subroutine attitude_kick_tangents(tq, n, ta, att, m0, inertia, tau, frac, dtadh, tb, lay, s)
      type(torque_t), intent(in) :: tq
      integer, intent(in) :: n
      real(dp), intent(in) :: ta, att(4, n), m0(3, n), inertia(3, n), tau, frac, dtadh, tb(3, n)
      type(layout_t), intent(in) :: lay
      real(dp), intent(inout) :: s(6, lay%ncol, n)
      real(dp) :: ql(tangent_width, 4), ml(tangent_width, 3), il(tangent_width, 3)
      real(dp) :: jdth(tangent_width, 3, 3), jdm(tangent_width, 3, 3), jdt(tangent_width, 3)
      real(dp) :: jdi(tangent_width, 3, 3), x1, x2, x3, th
      integer :: b0, nl, i, j, b, c, l

      th = tau * dtadh
      do b0 = 1, n, tangent_width
         nl = min(tangent_width, n - b0 + 1)
         do i = 1, 4
            do j = 1, nl
               ql(j, i) = att(i, b0 + j - 1)
            end do
         end do
         do i = 1, 3
            do j = 1, nl
               ml(j, i) = m0(i, b0 + j - 1)
               il(j, i) = inertia(i, b0 + j - 1)
            end do
         end do
         call lane_torque_jacobians(nl, tq, ta, ql, ml, il, jdth, jdm, jdt, jdi)
         do c = 1, lay%ncol
            do j = 1, nl
               b = b0 + j - 1
               x1 = s(4, c, b)
               x2 = s(5, c, b)
               x3 = s(6, c, b)
               s(1, c, b) = s(1, c, b) + tau * (jdth(j, 1, 1) * x1 + jdth(j, 1, 2) * x2 + jdth(j, 1, 3) * x3)
               s(2, c, b) = s(2, c, b) + tau * (jdth(j, 2, 1) * x1 + jdth(j, 2, 2) * x2 + jdth(j, 2, 3) * x3)
               s(3, c, b) = s(3, c, b) + tau * (jdth(j, 3, 1) * x1 + jdth(j, 3, 2) * x2 + jdth(j, 3, 3) * x3)
            end do
         end do
         if (lay%h > 0) then
            do j = 1, nl
               b = b0 + j - 1
               s(1:3, lay%h, b) = s(1:3, lay%h, b) + (frac * tb(:, b) + th * jdt(j, :))
            end do
         end if
         if (lay%inertia > 0) then
            do l = 1, 3
               do j = 1, nl
                  b = b0 + j - 1
                  s(1:3, lay%inertia + l - 1, b) = s(1:3, lay%inertia + l - 1, b) + tau * jdi(j, :, l)
               end do
            end do
         end if
      end do
   end subroutine attitude_kick_tangents

   !> The changes of A and b (affine_parts) of a torque of m with each moment (when the moments'
   !> part is carried) and each parameter of each term (the torque's part), in the order of the
   !> columns: A = -c 1 + (hat(h) - kd) D, D = diag(1 / I), so dA/dI_l = -(hat(h) - kd) e_l e_l^T /
   !> I_l^2 and db/dI_l the gravity gradient's; a damping rate -1, a rotor's h_l hat(e_l) D, kd -D;
   !> the other parameters change b (torque_jacobian's derivatives of the terms of Q alone).
   pure subroutine affine_changes(tq, j, inertia, jac, lay, nd, da, db)
      type(torque_t), intent(in) :: tq
      integer, intent(in) :: j, nd
      real(dp), intent(in) :: inertia(3)
      type(torque_jacobian_t), intent(in) :: jac
      type(layout_t), intent(in) :: lay
      real(dp), intent(out) :: da(3, 3, max(nd, 1)), db(3, max(nd, 1))
      real(dp) :: hsum(3), kd, dmat(3, 3), e(3), hh(3, 3), p(torque_term_reals)
      integer :: i, l, d, c

      da = 0.0_dp
      db = 0.0_dp
      hsum = 0.0_dp
      kd = 0.0_dp
      do i = 1, tq%nterms
         p = term_parameters(tq, i, j)
         if (tq%kinds(i) == torque_rotor) hsum = hsum + p(1:3)
         if (tq%kinds(i) == torque_attitude_control) kd = kd + p(control_kd)
      end do
      dmat = 0.0_dp
      do l = 1, 3
         dmat(l, l) = 1 / inertia(l)
      end do
      hh = hat(hsum)
      d = 0
      if (lay%inertia > 0) then
         do l = 1, 3
            d = d + 1
            da(:, l, d) = -(hh(:, l) - kd * unit_column(l)) / inertia(l)**2
            db(:, d) = jac%dbi(:, l)
         end do
      end if
      if (lay%torque == 0) return
      do i = 1, tq%nterms
         do c = 1, torque_term_reals
            d = d + 1
            select case (tq%kinds(i))
            case (torque_damping)
               if (c == 1) then
                  do l = 1, 3
                     da(l, l, d) = -1.0_dp
                  end do
               end if
            case (torque_rotor)
               if (c <= 3) then
                  e = 0.0_dp
                  e(c) = 1.0_dp
                  da(:, :, d) = matmul(hat(e), dmat)
               end if
            case (torque_attitude_control)
               if (c == control_kd) then
                  da(:, :, d) = -dmat
               else
                  db(:, d) = jac%dp(:, c, i)
               end if
            case default
               db(:, d) = jac%dp(:, c, i)
            end select
         end do
      end do
   end subroutine affine_changes

   pure function unit_column(l) result(e)
      integer, intent(in) :: l
      real(dp) :: e(3)

      e = 0.0_dp
      e(l) = 1.0_dp
   end function unit_column

   !> The call-back of a run without a Python torque (never called: torques' user_torque_cb).
   subroutine no_torque(nu, t, step, qt, mu, tb)
      integer, intent(in) :: nu, step
      real(dp), intent(in) :: t, qt(3, 3, nu), mu(3, nu)
      real(dp), intent(inout) :: tb(3, nu)
   end subroutine no_torque

end module exact_splittings
