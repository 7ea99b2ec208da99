! The explicit Lie-group Stormer-Verlet type scheme of Z. Terze, A. Mueller, D. Zlatar, "An angular
! momentum and energy conserving Lie-group integration scheme for rigid body rotational dynamics
! originating from Stormer-Verlet algorithm", J. Comput. Nonlinear Dynam. 10(5):051005, 2015, in
! the four-line form in which it is usually restated, for frb.integrate: variant 1 ("TERZE").
!
! Step n -> n+1 (Y = J omega = m, Omega = hat(omega) the BODY angular velocity: the update
! R_{n+1} = R_n exp(h Omega) needs the body tensor Omega = R^T R', not the spatial R' R^T):
!   a         = Y_n + (h/2) T_n,                       T_n = T_b(t_n, R_n)
!   Y_{n+1/2} = exp(-(h/2) Omega_n) a,                 omega_{n+1/2} = J^-1 Y_{n+1/2}
!   R_{n+1}   = R_n exp(h Omega_{n+1/2})
!   Y_{n+1}   = exp(-(h/2) Omega_{n+1/2}) [exp(-(h/2) Omega_{n+1/2}) a
!                                          + (h/2) exp((h/2) Omega_{n+1/2}) T_{n+1}]
!             = exp(-h Omega_{n+1/2}) a + (h/2) T_{n+1},  T_{n+1} = T_b(t_{n+1}, R_{n+1}).
! The simplified last line is used; p = quat_exp(h omega_{n+1/2}) serves both the
! attitude update q_{n+1} = q_n p and exp(-h Omega_{n+1/2}) a = E(p)^T a, so that for T = 0
! Q_{n+1} m_{n+1} = Q_n E(p) E(p)^T a = Q_n m_n up to rounding.
! The asymmetric use of Omega_n (first line) and Omega_{n+1/2} (last line) is the scheme as
! printed and is kept (it is what makes it explicit with exact spatial momentum).
! Choices (not fixed by the scheme):
! * T_{n+1} of a step is kept in the per-body workspace (ws(1:3), flag ws(4) = 1) and used as
!   T_n of the next step, so a step costs ONE torque evaluation (one torque_batch call, one
!   Python call for a user torque) after the first. The kept value was evaluated at the time
!   t + h of the previous step (which may differ in the last bit from the engine's t of the next
!   step). Each body's arithmetic depends only on its own history (batched = single, bit for bit).
! * The quaternion is not renormalised (a product of unit quaternions).
! Properties (verified by the tests and experiments): explicit, order 2, spatial momentum Qm exact torque-free
! (hence |m|, a function of Qm), NOT symmetric (reversibility defect ~2.5e-4 at h = 0.5 on the torque-free
! example of Krysl 2008, section 5.1),
! energy not conserved (drifts).
module lie_stormer_verlet
   use kinds, only: dp
   use step_interface
   use wheels, only: wheels_t, wheels_active
   use numbers_table, only: variant_terze
   use torques, only: torque_t, user_torque_cb, torque_batch, torqued
   use rotations, only: qmul, qrotate_tr, quat_exp
   implicit none
   private

   public :: lie_stormer_verlet_step


contains

   !> The first half of the step: a = m + (h/2) tn, p = quat_exp(h omega_{n+1/2}),
   !> q <- q p; returns a and p.
   pure subroutine terze_first(h, m, q, inertia, a, p)
      real(dp), intent(in) :: h, m(3), inertia(3)
      real(dp), intent(inout) :: q(4)
      real(dp), intent(inout) :: a(3)
      real(dp), intent(out) :: p(4)
      real(dp) :: yh(3)
      ! exp(-(h/2) hat(omega_n)) a = E(quat_exp((h/2) omega_n))^T a
      yh = qrotate_tr(quat_exp((0.5_dp * h) * (m / inertia)), a)
      p = quat_exp(h * (yh / inertia))
      q = qmul(q, p)
   end subroutine terze_first

   !> One torque-free step of one body.
   pure subroutine terze_free_body(h, m, q, inertia)
      real(dp), intent(in) :: h, inertia(3)
      real(dp), intent(inout) :: m(3), q(4)
      real(dp) :: a(3), p(4)
      a = m
      call terze_first(h, m, q, inertia, a, p)
      m = qrotate_tr(p, a)
   end subroutine terze_free_body

   subroutine lie_stormer_verlet_step(meth, n, k, t, h, m, q, hw, inertia, ws, tq, wh, cb, info)
      type(method_t), intent(in) :: meth; type(torque_t), intent(in) :: tq; procedure(user_torque_cb) :: cb
      integer, intent(in) :: n, k; integer, intent(inout) :: info(n); real(dp), intent(in) :: t, h, inertia(3, n)
      real(dp), intent(inout) :: m(3, n), q(4, n), ws(nws, n)   ! (step_interface's method_step)
      type(wheels_t), intent(in) :: wh; real(dp), intent(inout) :: hw(wh%nw, n)
      real(dp), allocatable :: tb(:, :), a(:, :), p(:, :)
      real(dp) :: hh
      integer :: j

      if (meth%variant /= variant_terze .or. wheels_active(wh)) then
         info = info_not_implemented
         return
      end if
      if (.not. torqued(tq)) then
         do j = 1, n
            call terze_free_body(h, m(:, j), q(:, j), inertia(:, j))
         end do
         return
      end if

      allocate (tb(3, n), a(3, n), p(4, n))
      hh = 0.5_dp * h
      ! T_n: kept from the previous step (flag ws(4, :) = 1), else evaluated now
      if (all(ws(4, :) == 1.0_dp)) then
         tb = ws(1:3, :)
      else
         call torque_batch(tq, n, t, k, 4, q, m, inertia, tb, cb)
      end if
      do j = 1, n
         a(:, j) = m(:, j) + hh * tb(:, j)
         call terze_first(h, m(:, j), q(:, j), inertia(:, j), a(:, j), p(:, j))
      end do
      ! T_{n+1} = T_b(t + h, R_{n+1})
      call torque_batch(tq, n, t + h, k, 4, q, m, inertia, tb, cb)
      do j = 1, n
         m(:, j) = qrotate_tr(p(:, j), a(:, j)) + hh * tb(:, j)
         ws(1:3, j) = tb(:, j)
         ws(4, j) = 1.0_dp
      end do
   end subroutine lie_stormer_verlet_step

end module lie_stormer_verlet
