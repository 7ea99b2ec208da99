! The one time loop of frb.integrate: every method family plugs into it through the step
! interface of frb_step_interface (one <family>_step routine per module).
!
! Bodies are stepped in chunks: a chunk runs all its steps before the next chunk starts (the
! state of a chunk stays in cache). The Python layer passes chunk = n for a user torque, so that
! the user's callable is called once per stage for the whole batch. No body's arithmetic depends
! on the chunk it is in, so results do not depend on the chunk size (bit for bit).
module frb_engine
   use frb_kinds, only: dp
   use frb_step_interface
   use frb_torques, only: torque_t, user_torque_cb
   use frb_celledoni_zanna, only: celledoni_zanna_step
   use frb_vilmart, only: vilmart_step
   use frb_ganapathi, only: ganapathi_step
   use frb_terze, only: terze_step
   use frb_krysl, only: krysl_step
   implicit none
   private

   public :: engine_step, engine_run

contains

   !> One step of the method meth for n bodies (dispatch on the family).
   subroutine engine_step(meth, n, k, t, h, m, q, inertia, ws, tq, cb, info)
      include 'step_dummies.inc'

      select case (meth%family)
      case (family_celledoni_zanna)
         call celledoni_zanna_step(meth, n, k, t, h, m, q, inertia, ws, tq, cb, info)
      case (family_vilmart)
         call vilmart_step(meth, n, k, t, h, m, q, inertia, ws, tq, cb, info)
      case (family_ganapathi)
         call ganapathi_step(meth, n, k, t, h, m, q, inertia, ws, tq, cb, info)
      case (family_terze)
         call terze_step(meth, n, k, t, h, m, q, inertia, ws, tq, cb, info)
      case (family_krysl)
         call krysl_step(meth, n, k, t, h, m, q, inertia, ws, tq, cb, info)
      case default
         info = info_not_implemented
      end select
   end subroutine engine_step

   !> nsteps steps of length h from time t0 for n bodies. The states after the steps
   !> k = 0, save_every, 2 save_every, ..., nsteps (always the last) go to
   !> m_out(:, :, j), q_out(:, :, j), t_out(j), j = 1..nk. On the first failure (a body whose
   !> step sets info, or whose state is not finite) the run stops and reports the code in
   !> status, the step in fail_step and the body (1-based) in fail_body; status = 0 otherwise.
   subroutine engine_run(meth, tq, n, nsteps, save_every, chunk, h, t0, m0, q0, inertia, nk, &
                         m_out, q_out, t_out, status, fail_step, fail_body, cb)
      type(method_t), intent(in) :: meth
      type(torque_t), intent(in) :: tq
      integer, intent(in) :: n, nsteps, save_every, chunk, nk
      real(dp), intent(in) :: h, t0, m0(3, n), q0(4, n), inertia(3, n)
      real(dp), intent(out) :: m_out(3, n, nk), q_out(4, n, nk), t_out(nk)
      integer, intent(out) :: status, fail_step, fail_body
      procedure(user_torque_cb) :: cb
      real(dp), allocatable :: m(:, :), q(:, :), ws(:, :)
      integer, allocatable :: info(:)
      integer :: b0, nc, k, j, jsave

      status = info_ok
      fail_step = 0
      fail_body = 0
      jsave = 1
      t_out(1) = t0
      do k = 1, nsteps
         if (mod(k, save_every) == 0 .or. k == nsteps) then
            jsave = jsave + 1
            t_out(jsave) = t0 + k * h
         end if
      end do

      allocate (m(3, chunk), q(4, chunk), ws(nws, chunk), info(chunk))
      do b0 = 1, n, chunk
         nc = min(chunk, n - b0 + 1)
         m(:, 1:nc) = m0(:, b0:b0 + nc - 1)
         q(:, 1:nc) = q0(:, b0:b0 + nc - 1)
         ws(:, 1:nc) = 0.0_dp
         info(1:nc) = info_ok
         m_out(:, b0:b0 + nc - 1, 1) = m(:, 1:nc)
         q_out(:, b0:b0 + nc - 1, 1) = q(:, 1:nc)
         jsave = 1
         do k = 1, nsteps
            call engine_step(meth, nc, k, t0 + (k - 1) * h, h, m(:, 1:nc), q(:, 1:nc), &
                             inertia(:, b0:b0 + nc - 1), ws(:, 1:nc), tq, cb, info(1:nc))
            do j = 1, nc
               if (info(j) == info_ok) then
                  if (.not. (all(abs(m(:, j)) <= huge(1.0_dp)) .and. &
                             all(abs(q(:, j)) <= huge(1.0_dp)))) info(j) = info_non_finite
               end if
               if (info(j) /= info_ok) then
                  status = info(j)
                  fail_step = k
                  fail_body = b0 + j - 1
                  return
               end if
            end do
            if (mod(k, save_every) == 0 .or. k == nsteps) then
               jsave = jsave + 1
               m_out(:, b0:b0 + nc - 1, jsave) = m(:, 1:nc)
               q_out(:, b0:b0 + nc - 1, jsave) = q(:, 1:nc)
            end if
         end do
      end do
   end subroutine engine_run

end module frb_engine
