! The variational state of a run of frb.integrate (frb.integrate(..., sensitivities=...)): for
! each body the derivatives S (6, ncol) of its state (dm, dtheta) with respect to the columns of
! the parts of the run (numbers_table: variational_state, _h, _inertia, _torque), the attitude
! perturbed in the body frame, Q~ = Q exp(hat(dtheta)) (q~ = q (1, dtheta/2) to first order).
!
! Forward mode through the method's steps (the exact derivatives of the discrete map): a step
! x1 = F(x0, p) takes S to F_x S + [0 | F_p], F_x the step's 6 x 6 jacobian and F_p its
! derivatives with respect to the parameters p (h, the moments, the torque's parameters; none for
! the initial state), and a composition of flows their product (the chain rule). The layout of
! the columns is written here once: the initial state (6), h (1), the moments (3), the parameters
! of the torque's terms (torque_term_reals a term), each part present when its bit is set.
module variational
   use kinds, only: dp
   use numbers_table, only: variational_rows, variational_state, variational_h, variational_inertia, &
                            variational_torque, torque_term_reals
   implicit none
   private

   public :: variational_rows, variational_state, variational_h, variational_inertia, variational_torque
   public :: layout_t, layout_of, initial_state, apply_jacobian, apply_kick

   !> The columns of a run: ncol in all, and the first column of each part (0: absent).
   type :: layout_t
      integer :: ncol = 0
      integer :: state = 0, h = 0, inertia = 0, torque = 0
      integer :: nterms = 0
   end type layout_t

contains

   !> The layout of the parts (variational_* bits) for a torque of nterms built-in terms.
   pure function layout_of(parts, nterms) result(lay)
      integer, intent(in) :: parts, nterms
      type(layout_t) :: lay

      lay%nterms = nterms
      if (iand(parts, variational_state) /= 0) then
         lay%state = lay%ncol + 1
         lay%ncol = lay%ncol + 6
      end if
      if (iand(parts, variational_h) /= 0) then
         lay%h = lay%ncol + 1
         lay%ncol = lay%ncol + 1
      end if
      if (iand(parts, variational_inertia) /= 0) then
         lay%inertia = lay%ncol + 1
         lay%ncol = lay%ncol + 3
      end if
      if (iand(parts, variational_torque) /= 0 .and. nterms > 0) then
         lay%torque = lay%ncol + 1
         lay%ncol = lay%ncol + torque_term_reals * nterms
      end if
   end function layout_of

   !> S at the initial state: the identity in the state's columns, zero elsewhere.
   pure subroutine initial_state(lay, n, s)
      type(layout_t), intent(in) :: lay
      integer, intent(in) :: n
      real(dp), intent(out) :: s(variational_rows, lay%ncol, n)
      integer :: j, i

      s = 0.0_dp
      if (lay%state > 0) then
         do j = 1, n
            do i = 1, 6
               s(i, lay%state + i - 1, j) = 1.0_dp
            end do
         end do
      end if
   end subroutine initial_state

   !> S <- phi S for one body (phi 6 x 6).
   pure subroutine apply_jacobian(ncol, phi, s)
      integer, intent(in) :: ncol
      real(dp), intent(in) :: phi(6, 6)
      real(dp), intent(inout) :: s(6, ncol)
      real(dp) :: x(6)
      integer :: c, i

      do c = 1, ncol
         x = s(:, c)
         do i = 1, 6
            s(i, c) = phi(i, 1) * x(1) + phi(i, 2) * x(2) + phi(i, 3) * x(3) + phi(i, 4) * x(4) &
                      + phi(i, 5) * x(5) + phi(i, 6) * x(6)
         end do
      end do
   end subroutine apply_jacobian

   !> S <- [[jmm, jmt], [0, 1]] S for one body: a flow that moves the momentum only (a torque's
   !> flow, the attitude fixed).
   pure subroutine apply_kick(ncol, jmm, jmt, s)
      integer, intent(in) :: ncol
      real(dp), intent(in) :: jmm(3, 3), jmt(3, 3)
      real(dp), intent(inout) :: s(6, ncol)
      real(dp) :: x(6)
      integer :: c, i

      do c = 1, ncol
         x = s(:, c)
         do i = 1, 3
            s(i, c) = jmm(i, 1) * x(1) + jmm(i, 2) * x(2) + jmm(i, 3) * x(3) + jmt(i, 1) * x(4) &
                      + jmt(i, 2) * x(5) + jmt(i, 3) * x(6)
         end do
      end do
   end subroutine apply_kick

end module variational
