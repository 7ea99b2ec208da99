! The configuration of a run of the time loop (module engine) read from the flat arrays of its
! binding (bind_engine.f90): the method, the torque, the wheels and the part of the run, with
! every size checked against the shared numbers (a call that does not match is refused).
module run_configuration
   use kinds, only: dp
   use engine, only: segment_t
   use step_interface, only: method_t, nws
   use torques, only: torque_t, torque_none
   use wheels, only: wheels_t, max_wheels, wheel_reals, wheel_law_none, wheel_law_feedback, wheel_law_user
   use numbers_table, only: run_slots, plan_rows, max_flows, max_torque_terms, torque_term_reals, &
                            torque_term_header, momentum_torque_kinds, run_family, run_variant, &
                            run_quadrature, run_user_torque, run_wheel_law, run_wheel_kick, run_nsteps, &
                            run_save_every, run_chunk, run_threads, run_first_body, run_last_body, &
                            run_first_step, run_last_step, law_reals, run_variational
   use variational, only: layout_t, layout_of, variational_rows
   implicit none
   private

   public :: configure_run

contains

   !> meth, tq, wh and seg of the run described by config (slots run_*), plan (the flows of a
   !> step), terms (the torque's built-in terms) and the sizes of the binding's arrays (see
   !> bind_engine.f90: nbr, nb of body; nh1 of times; n bodies, natt attitude reals, ni moments;
   !> nw rows of ws; nk kept states; wr, nwh, na of wheels; lr, nl of law; nh0, nhw, nho, nhk of
   !> h0, hw, h_out; nv, nvk of vs, vs_out). ok is false when they do not match. A user wheel
   !> law's call-back (wh%cb) is left to the caller.
   subroutine configure_run(nc, config, np, nf, plan, ntr, nt, terms, nbr, nb, nh1, n, natt, ni, nw, &
                            nk, nv, nvk, wr, nwh, na, lr, nl, nh0, nhw, nho, nhk, meth, tq, wh, seg, ok)
      integer, intent(in) :: nc, np, nf, ntr, nt, nbr, nb, nh1, n, natt, ni, nw, nk, nv, nvk
      integer, intent(in) :: wr, nwh, na, lr, nl, nh0, nhw, nho, nhk
      integer, intent(in) :: config(nc)
      real(dp), intent(in) :: plan(np, nf), terms(ntr, nt)
      type(method_t), intent(out) :: meth
      type(torque_t), intent(out) :: tq
      type(wheels_t), intent(out) :: wh
      type(segment_t), intent(out) :: seg
      logical, intent(out) :: ok
      type(layout_t) :: lay
      integer :: i

      ok = .false.
      if (nc /= run_slots .or. np /= plan_rows .or. nf > max_flows .or. nt > max_torque_terms &
          .or. ntr /= torque_term_header + torque_term_reals .or. mod(nbr, torque_term_reals) /= 0 &
          .or. nbr < torque_term_reals .or. nw /= nws .or. (nh1 /= 2 .and. nh1 /= n + 1) .or. nf < 1 &
          .or. (ni /= 1 .and. ni /= n) &
          .or. nt < 1 .or. (natt /= 4 .and. natt /= 9) .or. wr /= wheel_reals .or. nwh > max_wheels &
          .or. (na /= 1 .and. na /= n) .or. lr /= law_reals .or. (nl /= 1 .and. nl /= n)) return
      meth%family = config(run_family)
      meth%variant = config(run_variant)
      meth%quadrature = config(run_quadrature)
      meth%nf = nf
      meth%kinds(1:nf) = nint(plan(1, :))
      meth%frac(1:nf) = plan(2, :)
      ! the torque: the built-in terms (none when the first kind is torque_none), a Python torque
      ! (0 none, 1 T(t, Q), 2 T(t, Q, m)), the per-body parameters of one term
      tq%nterms = nt
      if (nint(terms(1, 1)) == torque_none) tq%nterms = 0
      tq%kinds(1:tq%nterms) = nint(terms(1, 1:tq%nterms))
      tq%block(1:tq%nterms) = nint(terms(2, 1:tq%nterms))
      tq%par(:, 1:tq%nterms) = terms(torque_term_header + 1:, 1:tq%nterms)
      tq%user = config(run_user_torque)
      tq%momentum = tq%user == 2
      do i = 1, tq%nterms
         if (any(momentum_torque_kinds == tq%kinds(i))) tq%momentum = .true.
      end do
      ! a per-body block must be in body, for every body
      if (any(tq%block < 0 .or. tq%block > nbr / torque_term_reals) .or. &
          (any(tq%block > 0) .and. nb < n)) return
      ! the wheels: their law, the kick of the splittings, the arrays
      wh%law = config(run_wheel_law)
      if (wh%law /= wheel_law_none .and. wh%law /= wheel_law_feedback .and. wh%law /= wheel_law_user) return
      if (wh%law /= wheel_law_none) then
         if (nwh < 1 .or. nh0 /= n .or. nhw /= n .or. nho /= n .or. nhk /= nk) return
         wh%nw = nwh
      end if
      wh%kick_order = config(run_wheel_kick)
      seg%nsteps = config(run_nsteps)
      seg%save_every = config(run_save_every)
      seg%chunk = config(run_chunk)
      seg%threads = config(run_threads)
      seg%b_first = max(1, config(run_first_body))
      seg%b_last = min(n, config(run_last_body))
      seg%k_first = config(run_first_step)
      seg%k_last = min(config(run_last_step), seg%nsteps)
      seg%variational = config(run_variational)
      lay = layout_of(seg%variational, tq%nterms)
      ok = nv == variational_rows * lay%ncol * n .and. nvk == nv * nk
   end subroutine configure_run
end module run_configuration
