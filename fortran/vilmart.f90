! Placeholder of the vilmart family of frb.integrate (being written).
module frb_vilmart
   use frb_kinds, only: dp
   use frb_step_interface
   use frb_torques, only: torque_t, user_torque_cb, torque_batch
   implicit none
   private

   public :: vilmart_step

contains

   subroutine vilmart_step(meth, n, k, t, h, m, q, inertia, ws, tq, cb, info)
      type(method_t), intent(in) :: meth
      integer, intent(in) :: n, k
      real(dp), intent(in) :: t, h
      real(dp), intent(inout) :: m(3, n), q(4, n), ws(nws, n)
      real(dp), intent(in) :: inertia(3, n)
      type(torque_t), intent(in) :: tq
      procedure(user_torque_cb) :: cb
      integer, intent(inout) :: info(n)

      info = info_not_implemented
   end subroutine vilmart_step

end module frb_vilmart
