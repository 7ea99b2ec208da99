! f2py binding of the time loop (module engine) and of the input checks, in the extension
! frb._core (signatures: fortran/core.pyf, hand-written: f2py reads call-back signatures reliably
! only from a signature file). The one Python function that calls them is frb._run.execute (and
! frb._run.check_bodies for the checks).
!
! Layout: numpy C-ordered (n, 3), (n, 4), (n, nws) arrays travel as their .T views (Fortran
! (3, n), (4, n), (nws, n)); the kept states (3, n, nk), (natt, n, nk) are, seen through .T,
! C-ordered (nk, n, 3), (nk, n, natt) arrays. The attitudes have natt = 4 reals (quaternions)
! or 9 (matrices (n, 3, 3) C-ordered, seen as Q^T column by column; the exact-flow methods
! only). Every size of a table of shared numbers (tools/numbers_table.py) is read from the
! arrays' shapes and checked against the table here: a call that does not match gets
! info_bad_call.

!> A segment of a run (engine.engine_run): config holds the integer configuration (slots run_*
!> of the shared numbers); plan the flows of one step of an exact-flow splitting, plan(1, j)
!> the kind of flow j (0 the free flow, 1 the torque's flow, as a real) and plan(2, j) its
!> fraction of h; terms the torque's built-in terms, terms(1, i) the kind of term i (as a real,
!> torque_none for no torque), terms(2, i) the block of its per-body parameters in body (0: none)
!> and terms(3:, i) its parameters; times(1) the initial time and times(2:) the step (one, or one
!> per body for a torque-free run); m0, att0 the initial state; m, att, ws the state carried
!> between segments, flat (3, nr), (natt, nr), (nws, nr) of nr = n bodies, or of none (nr = 0)
!> for a call that runs its bodies from the first step to the last (it carries nothing: no memory
!> to pass); m_out, att_out the kept states (updated in place). The reaction wheels
!> (config(run_wheel_law) /= wheel_law_none): wheels(:, i, b) axis and row of the pseudo-inverse
!> of wheel i (b: one for all bodies, or per body), law the parameters of the law (one column, or
!> one per body), h0 their initial momenta, hw the momenta carried between segments, h_out the
!> kept ones; lcb the Python law. Without wheels (or without a law) the wheel arrays are not read
!> (one element each will do). vs the variational state carried between segments and vs_out its
!> kept values, flat: vs(nv_rows, n) and vs_out(nv_rows, n, nk), nv_rows = variational_rows times
!> the columns of the parts config(run_variational) (module variational), empty without
!> (nv = nv_rows nr, nvk = nv_rows n nk); hw of nhw = n bodies, or none with nr = 0.
subroutine engine_segment(nc, config, np, nf, plan, ntr, nt, terms, nbr, nb, body, nh1, times, n, natt, &
                          m0, att0, ni, inertia, nm, m, nat, att, nw, ws, nk, m_out, att_out, nv, vs, nvk, vs_out, &
                          wr, nwh, na, wheels, lr, nl, law, nh0, h0, nhw, hw, nho, nhk, h_out, status, &
                          fail_step, fail_body, cb, lcb)
   use kinds, only: dp
   use engine, only: engine_run, segment_t, carried_t
   use run_configuration, only: configure_run
   use step_interface, only: method_t, nws, info_bad_call
   use torques, only: torque_t
   use wheels, only: wheels_t, user_law_cb, wheel_law_user
   implicit none
   integer, intent(in) :: nc, np, nf, ntr, nt, nbr, nb, nh1, n, natt, ni, nm, nat, nw, nk, wr, nwh, na
   integer, intent(in) :: lr, nl, nh0, nhw, nho, nhk, nv, nvk
   integer, intent(in) :: config(nc)
   real(dp), intent(in) :: plan(np, nf), terms(ntr, nt), body(nbr, nb), times(nh1)
   real(dp), intent(in) :: m0(3, n), att0(natt, n), inertia(3, ni)
   real(dp), intent(inout), target :: m(nm), att(nat), ws(nw), vs(nv), hw(nwh, nhw)
   real(dp), intent(inout) :: m_out(3, n, nk), att_out(natt, n, nk), vs_out(nvk)
   real(dp), intent(in) :: wheels(wr, nwh, na), law(lr, nl)
   real(dp), intent(in) :: h0(nwh, nh0)
   real(dp), intent(inout) :: h_out(nwh, nho, nhk)
   integer, intent(out) :: status, fail_step, fail_body
   external :: cb
   procedure(user_law_cb) :: lcb
   type(method_t) :: meth
   type(torque_t) :: tq
   type(wheels_t) :: wh
   type(segment_t) :: seg
   type(carried_t) :: carry
   logical :: ok
   integer :: rows, nr

   fail_step = 0
   fail_body = 0
   status = info_bad_call
   nr = nm / 3
   if (nm /= 3 * nr .or. nat /= natt * nr .or. nw /= nws * nr) return
   if (nr == n) then
      call configure_run(nc, config, np, nf, plan, ntr, nt, terms, nbr, nb, nh1, n, natt, ni, nws, nk, nv, &
                         nvk, wr, nwh, na, lr, nl, nh0, nhw, nho, nhk, meth, tq, wh, seg, ok)
   else if (nr == 0 .and. nv == 0) then
      ! no state to carry: the sizes of the carried arrays are those of a run that has them
      call configure_run(nc, config, np, nf, plan, ntr, nt, terms, nbr, nb, nh1, n, natt, ni, nws, nk, &
                         nvk / max(nk, 1), nvk, wr, nwh, na, lr, nl, nh0, nh0, nho, nhk, meth, tq, wh, &
                         seg, ok)
      ok = ok .and. seg%k_first == 0 .and. seg%k_last == seg%nsteps
   else
      return
   end if
   if (.not. ok) return
   if (wh%law == wheel_law_user) wh%cb => lcb
   rows = 0
   if (n > 0 .and. nk > 0) rows = nvk / nk / n
   if (nr == n) then
      ! the state carried between segments: the arrays given
      carry%m(1:3, 1:n) => m
      carry%att(1:natt, 1:n) => att
      carry%ws(1:nws, 1:n) => ws
      if (wh%nw > 0) carry%hw => hw
      carry%vs(1:rows, 1:n) => vs
   end if
   call engine_run(meth, tq, wh, seg, n, nh1 - 1, times(2:nh1), times(1), natt, m0, att0, h0, carry, &
                   ni, inertia, nk, m_out, att_out, h_out, status, fail_step, fail_body, cb, rows, vs_out, &
                   body, wheels, law)
end subroutine engine_segment

!> engine_segment for a whole run in one call (bodies 1..n, steps 1..nsteps; config's slots of
!> the part of the run are not read) that calls no Python (built-in torques and wheel laws, or no
!> step): no
!> call-back and no state between segments to pass (it is allocated here and never touched by a
!> run in one segment), so a short run costs less. With config(run_checks) = 1 every body is
!> checked first (check_lanes.check_batch, the phase of the longest free flow of a step): status
!> info_bad_input for an invalid body (fail_step its check code, fail_body the body, 1-based),
!> info_rescale for a batch outside the scale range 2^+-config(run_scale_exponent), info_long_run
!> for more than long_run_work body-steps of which some may be long (quadruple precision: the
!> run goes in segments), and nothing run.
subroutine engine_whole(nc, config, np, nf, plan, ntr, nt, terms, nbr, nb, body, nh1, times, n, natt, m0, &
                        att0, ni, inertia, nk, m_out, att_out, nvk, vs_out, wr, nwh, na, wheels, lr, nl, &
                        law, nh0, h0, nho, nhk, h_out, status, fail_step, fail_body)
   use kinds, only: dp
   use engine, only: engine_run, segment_t, carried_t
   use run_configuration, only: configure_run
   use step_interface, only: method_t, nws, info_bad_call
   use torques, only: torque_t
   use wheels, only: wheels_t
   use checks, only: outside_scale, input_ok
   use simd_dispatch, only: check_batch
   use numbers_table, only: run_slots, plan_rows, run_nsteps, run_checks, run_threads, &
                            run_scale_exponent, run_first_body, run_last_body, run_first_step, &
                            run_last_step, check_extremes, info_bad_input, info_rescale, info_long_run, &
                            long_step_threshold, long_run_work
   implicit none
   integer, intent(in) :: nc, np, nf, ntr, nt, nbr, nb, nh1, n, natt, ni, nk, wr, nwh, na, lr, nl, nh0, nho, nhk
   integer, intent(in) :: nvk
   integer, intent(in) :: config(nc)
   real(dp), intent(in) :: plan(np, nf), terms(ntr, nt), body(nbr, nb), times(nh1)
   real(dp), intent(in) :: m0(3, n), att0(natt, n), inertia(3, ni)
   real(dp), intent(inout) :: m_out(3, n, nk), att_out(natt, n, nk), vs_out(nvk)
   real(dp), intent(in) :: wheels(wr, nwh, na), law(lr, nl), h0(nwh, nh0)
   real(dp), intent(inout) :: h_out(nwh, nho, nhk)
   integer, intent(out) :: status, fail_step, fail_body
   real(dp) :: extremes(check_extremes), longest
   integer :: whole(nc), code, bad, j
   type(method_t) :: meth
   type(torque_t) :: tq
   type(wheels_t) :: wh
   type(segment_t) :: seg
   type(carried_t) :: no_carry
   logical :: ok

   if (nc == run_slots .and. np == plan_rows .and. nh1 >= 2) then
      if (config(run_checks) == 1) then
         ! the checks of every body, the phase of the longest free flow of a step, then the scales
         longest = 0
         do j = 1, nf
            if (nint(plan(1, j)) == 0) longest = max(longest, abs(plan(2, j)))
         end do
         call check_batch(natt, n, m0, att0, nh1 - 1, longest * times(2:nh1), ni, inertia, &
                          config(run_threads), code, bad, extremes)
         if (code /= input_ok) then
            status = info_bad_input
            fail_step = code
            fail_body = bad
            return
         end if
         if (outside_scale(extremes, config(run_scale_exponent))) then
            status = info_rescale
            fail_step = 0
            fail_body = 0
            return
         end if
         if (extremes(5) > long_step_threshold .and. &
             real(n, dp) * max(config(run_nsteps), 1) > long_run_work) then
            status = info_long_run
            fail_step = 0
            fail_body = 0
            return
         end if
      end if
   end if
   fail_step = 0
   fail_body = 0
   status = info_bad_call
   whole = config
   if (nc >= max(run_first_body, run_last_body, run_first_step, run_last_step)) then
      whole(run_first_body) = 1
      whole(run_last_body) = n
      whole(run_first_step) = 0
      whole(run_last_step) = config(run_nsteps)
   end if
   ! a run in one segment carries no state (no_carry)
   call configure_run(nc, whole, np, nf, plan, ntr, nt, terms, nbr, nb, nh1, n, natt, ni, nws, nk, &
                      nvk / max(nk, 1), nvk, wr, nwh, na, lr, nl, nh0, nh0, nho, nhk, meth, tq, wh, seg, ok)
   if (.not. ok) return
   call engine_run(meth, tq, wh, seg, n, nh1 - 1, times(2:nh1), times(1), natt, m0, att0, h0, no_carry, &
                   ni, inertia, nk, m_out, att_out, h_out, status, fail_step, fail_body, no_user_torque, &
                   nvk / max(nk, 1) / max(n, 1), vs_out, body, wheels, law)

contains

   !> The call-back of a run without a user torque (never called; torques' user_torque_cb).
   subroutine no_user_torque(nu, t, step, qt, mu, tb)
      integer, intent(in) :: nu, step; real(dp), intent(in) :: t, qt(3, 3, nu), mu(3, nu)
      real(dp), intent(inout) :: tb(3, nu)
   end subroutine no_user_torque
end subroutine engine_whole

!> The torque-free steps of one body (a lean call for frb.frb_step, frb.quat_step, frb.dmv_step
!> and frb.dmv_integrate on one body): the checks of check_bodies, then nsteps steps of the
!> method (family, variant, quadrature) by the family's free steps, the operations of a batch of
!> one. check_code is the check code of the input (input_ok: valid), status the info code of the
!> steps (info_ok: every step succeeded), or info_rescale for a body at a scale outside the
!> method's range (frb._scaling then rescales it: scale_exponent, scale_exponent_dmv).
subroutine free_steps_one(family, variant, quadrature, nsteps, natt, m, att, h, inertia, m_out, att_out, &
                          check_code, status)
   use kinds, only: dp
   use step_interface, only: method_t, nws, info_ok, info_bad_call, info_non_finite
   use engine, only: family_free_steps
   use checks, only: check_body_quat, check_body_matrix, input_ok, all_finite
   use step_interface, only: method_free_steps
   use numbers_table, only: attitude_tolerance, info_rescale, scale_exponent, scale_exponent_dmv, &
                            family_approximate_free_flows, variant_dmv4, variant_dmv6, variant_dmv8
   implicit none
   integer, intent(in) :: family, variant, quadrature, nsteps, natt
   real(dp), intent(in) :: m(3), att(natt), h, inertia(3)
   real(dp), intent(out) :: m_out(3), att_out(natt)
   integer, intent(out) :: check_code, status
   procedure(method_free_steps), pointer :: steps
   type(method_t) :: meth
   real(dp) :: ws(nws, 1), lo, hi, big
   integer :: info(1), e

   m_out = 0
   att_out = 0
   status = info_bad_call
   if (natt == 4) then
      check_code = check_body_quat(m, h, inertia, att, attitude_tolerance)
   else
      check_code = check_body_matrix(m, h, inertia, att, attitude_tolerance)
   end if
   if (check_code /= input_ok) return
   e = scale_exponent
   if (family == family_approximate_free_flows .and. any(variant == [variant_dmv4, variant_dmv6, &
                                                                     variant_dmv8])) e = scale_exponent_dmv
   lo = scale(1.0_dp, -e)
   hi = scale(1.0_dp, e)
   big = maxval(abs(m))
   if ((big > 0 .and. (big < lo .or. big > hi)) .or. minval(inertia) < lo .or. maxval(inertia) > hi) then
      status = info_rescale
      return
   end if
   steps => family_free_steps(family)
   if (.not. associated(steps) .or. (natt /= 4 .and. natt /= 9) .or. nsteps < 0) return
   meth%family = family
   meth%variant = variant
   meth%quadrature = quadrature
   m_out = m
   att_out = att
   ws = 0
   info = info_ok
   if (nsteps > 0) call steps(meth, 1, 0, nsteps, 1, [h], m_out, natt, att_out, 1, inertia, ws, info)
   status = info(1)
   if (status == info_ok .and. .not. (all_finite(3, m_out) .and. all_finite(natt, att_out))) &
      status = info_non_finite
end subroutine free_steps_one

!> The input checks of n bodies (check_lanes.check_batch): code is input_ok, or the check code of the
!> first invalid body, whose index (from 0) is body (-1 when all are valid); extremes the scales
!> of the batch (check_extremes reals: the rescaling policy of frb._scaling, the first call of a
!> long run).
subroutine check_bodies(n, natt, m, att, nh, h, ni, inertia, threads, code, body, ne, extremes)
   use kinds, only: dp
   use checks, only: bad_m
   use simd_dispatch, only: check_batch
   use numbers_table, only: check_extremes
   implicit none
   integer, intent(in) :: n, natt, nh, ni, threads, ne
   real(dp), intent(in) :: m(3, n), att(natt, n), h(nh), inertia(3, ni)
   integer, intent(out) :: code, body
   real(dp), intent(inout) :: extremes(ne)

   code = bad_m
   body = -1
   if (ne /= check_extremes) return
   call check_batch(natt, n, m, att, nh, h, ni, inertia, threads, code, body, extremes)
   body = body - 1
end subroutine check_bodies

!> The unit quaternions (scalar first) q(4, n) of the rotations held as qt(9, n) = Q^T column by
!> column (rotations.matrix_quat_tr: the operations of frb.rotations.matrix_to_quat).
subroutine matrix_quaternions(n, qt, q)
   use kinds, only: dp
   use rotations, only: matrix_quat_tr
   implicit none
   integer, intent(in) :: n
   real(dp), intent(in) :: qt(3, 3, n)
   real(dp), intent(out) :: q(4, n)
   integer :: b

   do b = 1, n
      q(:, b) = matrix_quat_tr(qt(:, :, b))
   end do
end subroutine matrix_quaternions
