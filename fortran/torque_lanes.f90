! The built-in torques of the attitude in lock-step (lane) form: T_b(t, Q, m) of a block of up to
! lane_block bodies held structure-of-arrays (component i of body j in x(j, i)), for the terms
! of module torques that need no call of a library function per body: the field torque
! (u0 . (Q c), T_b = (Q^T u0) x c; the heavy top), the gravity gradient (T_b = 3 n^2 u x (I u),
! u = Q^T r(t)), linear damping (T_b = -c m) and constant rotors (T_b = h x I^-1 m), with the
! parameters shared by every body or, for the callers that name the chunk's body of their first
! lane (first_body), per body (torques.term_parameters' blocks). Each lane performs the SAME floating-point operations, in the
! same order, as torques.torque_batch does for that body with a quaternion attitude
! (builtin_parts, torque_of_parts, field_torque, gravity_gradient_torque, rotations.qrotate_tr,
! rotations.cross), so that the results are torque_batch's bit for bit: a change to those routines
! must be made here too, and in runge_kutta_lanes' stage pass, which repeats the field term's
! operations for a torque of that one term (torque_lanes_one_field). The time-dependent
! directions r(t) come from torques.term_times itself.
!
! Compiled once per SIMD target (tools/simd_target_source.py, simd_dispatch.f90), with
! -fno-trapping-math and no contraction (meson.build): every target gives the same bits.
module torque_lanes
   use kinds, only: dp
   use numbers_table, only: engine_chunk, torque_term_reals
   use torques, only: torque_t, term_times, torque_field, torque_gravity_gradient, &
                      torque_damping, torque_rotor, max_torque_terms
   implicit none
   private

   public :: lane_block, torque_lanes_capable, torque_lanes_per_body, torque_lanes_eval, &
             torque_lanes_steady, torque_lanes_one_field

   !> Bodies of one block of the lanes (the engine's chunk: a chunk is one block).
   integer, parameter :: lane_block = engine_chunk

contains

   !> True when every term of the torque has a lane form (see the header) with shared
   !> parameters, and there is no Python torque.
   pure logical function torque_lanes_capable(tq) result(capable)
      type(torque_t), intent(in) :: tq

      capable = torque_lanes_per_body(tq) .and. all(tq%block(1:tq%nterms) == 0)
   end function torque_lanes_capable

   !> True when the torque is torque_lanes_capable but for parameters per body: every term has a
   !> lane form, with its parameters shared or per body (torque_lanes_eval with first_body).
   pure logical function torque_lanes_per_body(tq) result(capable)
      type(torque_t), intent(in) :: tq
      integer :: i

      capable = tq%user == 0
      do i = 1, tq%nterms
         select case (tq%kinds(i))
         case (torque_field, torque_gravity_gradient, torque_damping, torque_rotor)
         case default
            capable = .false.
         end select
      end do
   end function torque_lanes_per_body

   !> True when torque_lanes_eval's torque does not depend on the time: no term with a direction
   !> of term_times that turns (the gravity gradient).
   pure logical function torque_lanes_steady(tq) result(steady)
      type(torque_t), intent(in) :: tq

      steady = .not. any(tq%kinds(1:tq%nterms) == torque_gravity_gradient)
   end function torque_lanes_steady

   !> True when the torque is one field term with its parameters shared by every body (the heavy
   !> top, a constant field): torque_lanes_eval gives T_b = (Q^T v) x c, v = par(1:3), c =
   !> par(4:6), which a caller may evaluate lane by lane in its own loop with the operations of
   !> torque_lanes_eval's field term.
   pure logical function torque_lanes_one_field(tq) result(one)
      type(torque_t), intent(in) :: tq

      one = tq%user == 0 .and. tq%nterms == 1 .and. .not. tq%momentum
      if (one) one = tq%kinds(1) == torque_field .and. tq%block(1) == 0
   end function torque_lanes_one_field

   !> tb(j, :) = T_b(t, Q_j, m(j, :)) for the lanes j = 1..nl, q(j, :) unit quaternions (scalar
   !> first), inertia(j, :) the moments (torque_batch's torque with natt = 4, bit for bit). The
   !> torque is torque_lanes_capable, or torque_lanes_per_body with first_body the chunk's body
   !> (1-based) of lane 1.
   pure subroutine torque_lanes_eval(tq, t, nl, q, m, inertia, tb, first_body)
      type(torque_t), intent(in) :: tq
      real(dp), intent(in) :: t
      integer, intent(in) :: nl
      real(dp), intent(in) :: q(lane_block, 4), m(lane_block, 3), inertia(lane_block, 3)
      real(dp), intent(out) :: tb(lane_block, 3)
      integer, intent(in), optional :: first_body
      real(dp) :: r(3, max_torque_terms), x(lane_block, 3), v(3), c(3), kd, g
      real(dp) :: lc(lane_block), lh(lane_block, 3), p(lane_block, 6)
      real(dp) :: u1, u2, u3, t1, t2, t3, w1, w2, w3, a1, a2, a3
      integer :: i, j, o, b
      logical :: first, e3

      call term_times(tq, t, r)
      tb(1:nl, :) = 0.0_dp
      first = .true.
      ! (the momentum part: builtin_parts' sums from zero; terms of it only with tq%momentum)
      if (tq%momentum) then
         lc(1:nl) = 0.0_dp
         lh(1:nl, :) = 0.0_dp
      end if
      kd = 0.0_dp
      do i = 1, tq%nterms
         if (tq%block(i) > 0) then
            ! term_parameters: the first 6 of the block of each lane's body
            o = (tq%block(i) - 1) * torque_term_reals
            b = tq%body_offset + first_body - 1
            do j = 1, nl
               p(j, :) = tq%body(o + 1:o + 6, b + j)
            end do
            call per_body_term(tq%kinds(i), r(:, i), nl, p, q, inertia, x, lc, lh)
            if (tq%kinds(i) == torque_damping .or. tq%kinds(i) == torque_rotor) cycle
         else
            select case (tq%kinds(i))
            case (torque_field)
               v = tq%par(1:3, i)
               c = tq%par(4:6, i)
               e3 = c(1) == 0.0_dp .and. c(2) == 0.0_dp .and. c(3) == 1.0_dp
               ! u = qrotate_tr(q, v), then field_torque(c, u): (u2, -u1, 0) for c = e3
               if (e3) then
                  do j = 1, nl
                     t1 = q(j, 3) * v(3) - q(j, 4) * v(2)
                     t2 = q(j, 4) * v(1) - q(j, 2) * v(3)
                     t3 = q(j, 2) * v(2) - q(j, 3) * v(1)
                     x(j, 1) = v(2) + 2.0_dp * (-q(j, 1) * t2 + (q(j, 4) * t1 - q(j, 2) * t3))
                     x(j, 2) = -(v(1) + 2.0_dp * (-q(j, 1) * t1 + (q(j, 3) * t3 - q(j, 4) * t2)))
                     x(j, 3) = 0.0_dp
                  end do
               else
                  do j = 1, nl
                     t1 = q(j, 3) * v(3) - q(j, 4) * v(2)
                     t2 = q(j, 4) * v(1) - q(j, 2) * v(3)
                     t3 = q(j, 2) * v(2) - q(j, 3) * v(1)
                     u1 = v(1) + 2.0_dp * (-q(j, 1) * t1 + (q(j, 3) * t3 - q(j, 4) * t2))
                     u2 = v(2) + 2.0_dp * (-q(j, 1) * t2 + (q(j, 4) * t1 - q(j, 2) * t3))
                     u3 = v(3) + 2.0_dp * (-q(j, 1) * t3 + (q(j, 2) * t2 - q(j, 3) * t1))
                     x(j, 1) = u2 * c(3) - u3 * c(2)
                     x(j, 2) = u3 * c(1) - u1 * c(3)
                     x(j, 3) = u1 * c(2) - u2 * c(1)
                  end do
               end if
            case (torque_gravity_gradient)
               v = r(:, i)
               g = 3.0_dp * tq%par(1, i)**2
               do j = 1, nl
                  t1 = q(j, 3) * v(3) - q(j, 4) * v(2)
                  t2 = q(j, 4) * v(1) - q(j, 2) * v(3)
                  t3 = q(j, 2) * v(2) - q(j, 3) * v(1)
                  u1 = v(1) + 2.0_dp * (-q(j, 1) * t1 + (q(j, 3) * t3 - q(j, 4) * t2))
                  u2 = v(2) + 2.0_dp * (-q(j, 1) * t2 + (q(j, 4) * t1 - q(j, 2) * t3))
                  u3 = v(3) + 2.0_dp * (-q(j, 1) * t3 + (q(j, 2) * t2 - q(j, 3) * t1))
                  ! gravity_gradient_torque: g cross(u, I u)
                  a1 = inertia(j, 1) * u1
                  a2 = inertia(j, 2) * u2
                  a3 = inertia(j, 3) * u3
                  x(j, 1) = g * (u2 * a3 - u3 * a2)
                  x(j, 2) = g * (u3 * a1 - u1 * a3)
                  x(j, 3) = g * (u1 * a2 - u2 * a1)
               end do
            case (torque_damping)
               lc(1:nl) = lc(1:nl) + tq%par(1, i)
               cycle
            case (torque_rotor)
               do j = 1, nl
                  lh(j, :) = lh(j, :) + tq%par(1:3, i)
               end do
               cycle
            case default
               cycle
            end select
         end if
         ! (the first term as it is: a torque of one term has its own bits)
         if (first) then
            tb(1:nl, :) = x(1:nl, :)
            first = .false.
         else
            tb(1:nl, :) = tb(1:nl, :) + x(1:nl, :)
         end if
      end do
      if (.not. tq%momentum) return
      ! torque_of_parts: tb - c m + h x w - kd w, w = I^-1 m
      do j = 1, nl
         w1 = m(j, 1) / inertia(j, 1)
         w2 = m(j, 2) / inertia(j, 2)
         w3 = m(j, 3) / inertia(j, 3)
         tb(j, 1) = tb(j, 1) - lc(j) * m(j, 1) + (lh(j, 2) * w3 - lh(j, 3) * w2) - kd * w1
         tb(j, 2) = tb(j, 2) - lc(j) * m(j, 2) + (lh(j, 3) * w1 - lh(j, 1) * w3) - kd * w2
         tb(j, 3) = tb(j, 3) - lc(j) * m(j, 3) + (lh(j, 1) * w2 - lh(j, 2) * w1) - kd * w3
      end do
   end subroutine torque_lanes_eval

   !> One term of kind kind_code with the parameters p(j, :) of each lane (term_parameters' first 6):
   !> x(j, :) its torque (field, gravity gradient, with the direction r of term_times), or its
   !> part of the momentum added to lc (damping) or lh (rotor), as builtin_parts does.
   pure subroutine per_body_term(kind_code, r, nl, p, q, inertia, x, lc, lh)
      integer, intent(in) :: kind_code, nl
      real(dp), intent(in) :: r(3), p(lane_block, 6), q(lane_block, 4), inertia(lane_block, 3)
      real(dp), intent(inout) :: x(lane_block, 3), lc(lane_block), lh(lane_block, 3)
      real(dp) :: u1, u2, u3, t1, t2, t3, a1, a2, a3, g
      logical :: e3
      integer :: j

      select case (kind_code)
      case (torque_field)
         ! u = qrotate_tr(q, v), field_torque(c, u): (u2, -u1, 0) for c = e3, else u x c
         do j = 1, nl
            t1 = q(j, 3) * p(j, 3) - q(j, 4) * p(j, 2)
            t2 = q(j, 4) * p(j, 1) - q(j, 2) * p(j, 3)
            t3 = q(j, 2) * p(j, 2) - q(j, 3) * p(j, 1)
            u1 = p(j, 1) + 2.0_dp * (-q(j, 1) * t1 + (q(j, 3) * t3 - q(j, 4) * t2))
            u2 = p(j, 2) + 2.0_dp * (-q(j, 1) * t2 + (q(j, 4) * t1 - q(j, 2) * t3))
            u3 = p(j, 3) + 2.0_dp * (-q(j, 1) * t3 + (q(j, 2) * t2 - q(j, 3) * t1))
            e3 = p(j, 4) == 0.0_dp .and. p(j, 5) == 0.0_dp .and. p(j, 6) == 1.0_dp
            x(j, 1) = merge(u2, u2 * p(j, 6) - u3 * p(j, 5), e3)
            x(j, 2) = merge(-u1, u3 * p(j, 4) - u1 * p(j, 6), e3)
            x(j, 3) = merge(0.0_dp, u1 * p(j, 5) - u2 * p(j, 4), e3)
         end do
      case (torque_gravity_gradient)
         do j = 1, nl
            t1 = q(j, 3) * r(3) - q(j, 4) * r(2)
            t2 = q(j, 4) * r(1) - q(j, 2) * r(3)
            t3 = q(j, 2) * r(2) - q(j, 3) * r(1)
            u1 = r(1) + 2.0_dp * (-q(j, 1) * t1 + (q(j, 3) * t3 - q(j, 4) * t2))
            u2 = r(2) + 2.0_dp * (-q(j, 1) * t2 + (q(j, 4) * t1 - q(j, 2) * t3))
            u3 = r(3) + 2.0_dp * (-q(j, 1) * t3 + (q(j, 2) * t2 - q(j, 3) * t1))
            g = 3.0_dp * p(j, 1)**2
            a1 = inertia(j, 1) * u1
            a2 = inertia(j, 2) * u2
            a3 = inertia(j, 3) * u3
            x(j, 1) = g * (u2 * a3 - u3 * a2)
            x(j, 2) = g * (u3 * a1 - u1 * a3)
            x(j, 3) = g * (u1 * a2 - u2 * a1)
         end do
      case (torque_damping)
         lc(1:nl) = lc(1:nl) + p(1:nl, 1)
      case (torque_rotor)
         lh(1:nl, :) = lh(1:nl, :) + p(1:nl, 1:3)
      end select
   end subroutine per_body_term

end module torque_lanes
