! Body torques T_b(t, Q) of frb.integrate, evaluated for a whole batch of bodies.
!
! Built in (compiled into every time loop):
! * torque_field: the potential U(Q) = u0 . (Q c) of a body with the point c (body frame) in a
!   constant spatial field u0, T_b = (Q^T u0) x c. frb.torques.constant_field(u0) is c = e3
!   (Celledoni and Zanna, ACM TOMS 37(2), 2010, example 1 of section 4.3: T_b = (u2, -u1, 0),
!   u = Q^T u0); frb.torques.heavy_top(weight, center)
!   is u0 = (0, 0, weight), c = center (gravity of size weight along -z of the fixed frame, fixed
!   point at the origin; U = weight times the height of the centre of mass).
! * torque_gravity_gradient: a satellite on a circular orbit of rate n in the fixed x-y plane,
!   r(t) = (cos nt, sin nt, 0) the direction to the planet, c = Q^T r, T_b = 3 n^2 c x (I c).
! * torque_user: a Python callable, called once per stage for the whole batch through the f2py
!   call-back user_torque_cb (fortran/engine.pyf).
module torques
   use kinds, only: dp
   use rotations, only: cross, qrotate, qrotate_tr, quat_matrix_tr
   implicit none
   private

   public :: torque_t, user_torque_cb, torque_batch, torque_batch_tr, torque_one, field_v_torque

   integer, parameter, public :: torque_none = 0, torque_field = 1, torque_gravity_gradient = 2, &
                                 torque_user = 3

   type :: torque_t
      integer :: kind = torque_none
      real(dp) :: u0(3) = 0.0_dp        ! torque_field: spatial field
      real(dp) :: c(3) = [0.0_dp, 0.0_dp, 1.0_dp]   ! torque_field: body point
      real(dp) :: rate = 0.0_dp         ! torque_gravity_gradient: orbit rate n
   end type torque_t

   abstract interface
      !> User torque: tb(:, j) = T_b(t, Q_j) for the n bodies, qt(:, :, j) = Q_j^T; step is the
      !> number (1-based) of the step being taken, for error messages.
      subroutine user_torque_cb(n, t, step, qt, tb)
         import :: dp
         integer, intent(in) :: n, step
         real(dp), intent(in) :: t
         real(dp), intent(in) :: qt(3, 3, n)
         real(dp), intent(inout) :: tb(3, n)
      end subroutine user_torque_cb
   end interface

contains

   !> T_b(t, E(q)) for one body and a built-in torque (zero for torque_none and torque_user).
   pure function torque_one(tq, t, q, inertia) result(tb)
      type(torque_t), intent(in) :: tq
      real(dp), intent(in) :: t, q(4), inertia(3)
      real(dp) :: tb(3), u(3), r(3)

      select case (tq%kind)
      case (torque_field)
         tb = field_torque(tq, qrotate_tr(q, tq%u0))
      case (torque_gravity_gradient)
         r = [cos(tq%rate * t), sin(tq%rate * t), 0.0_dp]
         u = qrotate_tr(q, r)
         tb = (3.0_dp * tq%rate**2) * cross(u, inertia * u)
      case default
         tb = 0.0_dp
      end select
   end function torque_one

   !> The field torque u x c of the body field u = Q^T u0 (u x e3 = (u2, -u1, 0) written out).
   pure function field_torque(tq, u) result(tb)
      type(torque_t), intent(in) :: tq
      real(dp), intent(in) :: u(3)
      real(dp) :: tb(3)

      if (tq%c(1) == 0.0_dp .and. tq%c(2) == 0.0_dp .and. tq%c(3) == 1.0_dp) then
         tb = [u(2), -u(1), 0.0_dp]
      else
         tb = cross(u, tq%c)
      end if
   end function field_torque

   !> Q^T v for qt = Q^T, summed in the order j = 1, 2, 3 (the attitude held as a matrix).
   pure function apply_tr(qt, v) result(u)
      real(dp), intent(in) :: qt(3, 3), v(3)
      real(dp) :: u(3)

      u = qt(:, 1) * v(1) + qt(:, 2) * v(2) + qt(:, 3) * v(3)
   end function apply_tr

   !> torque_batch for attitudes held as matrices, qt(:, :, j) = Q_j^T: the same torques, the
   !> body vectors Q^T v formed from the matrix; a user torque receives qt as it is.
   subroutine torque_batch_tr(tq, n, t, step, qt, inertia, tb, cb)
      type(torque_t), intent(in) :: tq
      integer, intent(in) :: n, step
      real(dp), intent(in) :: t, qt(3, 3, n), inertia(3, n)
      real(dp), intent(out) :: tb(3, n)
      procedure(user_torque_cb) :: cb
      real(dp) :: r(3), u(3)
      integer :: j

      select case (tq%kind)
      case (torque_user)
         tb = 0.0_dp
         call cb(n, t, step, qt, tb)
      case (torque_field)
         do j = 1, n
            tb(:, j) = field_torque(tq, apply_tr(qt(:, :, j), tq%u0))
         end do
      case (torque_gravity_gradient)
         r = [cos(tq%rate * t), sin(tq%rate * t), 0.0_dp]
         do j = 1, n
            u = apply_tr(qt(:, :, j), r)
            tb(:, j) = (3.0_dp * tq%rate**2) * cross(u, inertia(:, j) * u)
         end do
      case default
         tb = 0.0_dp
      end select
   end subroutine torque_batch_tr

   !> tb(:, j) = T_b(t, E(q(:, j))), j = 1..n: built-in torques in Fortran, a user torque by one
   !> call of cb for the whole batch.
   subroutine torque_batch(tq, n, t, step, q, inertia, tb, cb)
      type(torque_t), intent(in) :: tq
      integer, intent(in) :: n, step
      real(dp), intent(in) :: t, q(4, n), inertia(3, n)
      real(dp), intent(out) :: tb(3, n)
      procedure(user_torque_cb) :: cb
      real(dp), allocatable :: qt(:, :, :)
      integer :: j

      select case (tq%kind)
      case (torque_none)
         tb = 0.0_dp
      case (torque_user)
         allocate (qt(3, 3, n))
         do j = 1, n
            qt(:, :, j) = quat_matrix_tr(q(:, j))
         end do
         tb = 0.0_dp
         call cb(n, t, step, qt, tb)
      case default
         do j = 1, n
            tb(:, j) = torque_one(tq, t, q(:, j), inertia(:, j))
         end do
      end select
   end subroutine torque_batch

   !> Body torque of the modified potential V = {U, {U, T}} of a field torque (G. Vilmart,
   !> "Rigid body dynamics", 2013, the fourth-order Nystrom scheme of section 4; derived again
   !> from V: the printed heavy-top flow is wrong by a factor -2 and lacks its third component): with u = Q^T u0 and T_b = u x c,
   !> V = sum_j T_b,j^2 / I_j and its torque is u x grad_u V = u x (2 c x (I^-1 (u x c))).
   !> For the heavy top (u0 = e_z, c = e3) this is (-2 Q32 Q33/I1, 2 Q31 Q33/I2, 2 Q31 Q32 (1/I1 - 1/I2)).
   pure function field_v_torque(tq, q, inertia) result(tv)
      type(torque_t), intent(in) :: tq
      real(dp), intent(in) :: q(4), inertia(3)
      real(dp) :: tv(3), u(3)

      u = qrotate_tr(q, tq%u0)
      tv = cross(u, 2.0_dp * cross(tq%c, cross(u, tq%c) / inertia))
   end function field_v_torque

end module torques
