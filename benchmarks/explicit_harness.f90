! README (benchmark support; not part of the package build)
! ---------------------------------------------------------------------------------------------
! A hand-written, standalone reference for the speed of frb.integrate's explicit methods RK4
! (Ganapathi 2005, with the kinematics' factor 1/2 and the torque at each stage) and TERZE (Terze,
! Mueller, Zlatar 2015): the same formulas as fortran/runge_kutta.f90 and
! fortran/lie_stormer_verlet.f90, written as plain loops (bodies outer, steps
! inner, the state in scalars), with no step interface, no chunks, no torque dispatch and no saved
! trajectory. Torques: none, and the heavy top of weight 1 with centre (0, 0, 1)
! (T_b = (u2, -u1, 0), u = E(q)^T e_z), hard-wired.
! Build (the flags of meson.build): gfortran -O3 -funroll-loops explicit_harness.f90
! Run:   ./a.out <input> <output>
!   input: "n nsteps h" then n lines "m1 m2 m3 q0 q1 q2 q3 I1 I2 I3"
!   output: for each case the n final states "m1 m2 m3 q0 q1 q2 q3"
!   stdout: one line per case "<method> <torque> <ns per body-step>" (best of 3 runs)
! benchmarks/explicit_vs_harness.py builds it, runs it and frb.integrate on the same bodies and
! prints the ratios (the target: frb.integrate within 2x of this loop).
! ---------------------------------------------------------------------------------------------
program explicit_harness
   implicit none
   integer, parameter :: dp = kind(1.0d0)
   integer :: n, nsteps, j, icase, irep, meth, heavy, unit_in, unit_out
   real(dp) :: h, best, el
   real(dp), allocatable :: m0(:, :), q0(:, :), inr(:, :), m(:, :), q(:, :)
   integer(8) :: c0, c1, rate
   character(len=512) :: fin, fout
   character(len=5), parameter :: mname(2) = ['RK4  ', 'TERZE']
   character(len=5), parameter :: tname(0:1) = ['free ', 'heavy']

   call get_command_argument(1, fin)
   call get_command_argument(2, fout)
   open (newunit=unit_in, file=trim(fin), status='old', action='read')
   read (unit_in, *) n, nsteps, h
   allocate (m0(3, n), q0(4, n), inr(3, n), m(3, n), q(4, n))
   do j = 1, n
      read (unit_in, *) m0(:, j), q0(:, j), inr(:, j)
   end do
   close (unit_in)
   open (newunit=unit_out, file=trim(fout), status='replace', action='write')
   call system_clock(count_rate=rate)

   do icase = 0, 3
      meth = icase / 2 + 1
      heavy = mod(icase, 2)
      best = huge(1.0_dp)
      do irep = 1, 3
         m = m0
         q = q0
         call system_clock(c0)
         if (meth == 1) then
            do j = 1, n
               call rk4_body(m(:, j), q(:, j), inr(:, j), h, nsteps, heavy == 1)
            end do
         else
            do j = 1, n
               call terze_body(m(:, j), q(:, j), inr(:, j), h, nsteps, heavy == 1)
            end do
         end if
         call system_clock(c1)
         el = real(c1 - c0, dp) / real(rate, dp)
         best = min(best, el)
      end do
      write (*, '(a, 1x, a, 1x, f12.3)') trim(mname(meth)), trim(tname(heavy)), &
         1.0e9_dp * best / (real(n, dp) * nsteps)
      do j = 1, n
         write (unit_out, '(7es25.17)') m(:, j), q(:, j)
      end do
   end do
   close (unit_out)

contains

   !> nsteps RK4 steps of one body (W = m / I each step, m = I W at its end).
   subroutine rk4_body(mb, qb, ib, h, nsteps, heavy)
      real(dp), intent(inout) :: mb(3), qb(4)
      real(dp), intent(in) :: ib(3), h
      integer, intent(in) :: nsteps
      logical, intent(in) :: heavy
      real(dp) :: w(3), qs(4), wsg(3), kq(4), kw(3), aq(4), aw(3), tb(3), hh, r
      integer :: k, s
      hh = 0.5_dp * h
      do k = 1, nsteps
         w = mb / ib
         qs = qb
         wsg = w
         do s = 1, 4
            ! torque at the normalised stage quaternion
            if (heavy) then
               if (s == 1) then
                  tb = heavy_torque(qs)
               else
                  r = 1.0_dp / sqrt(qs(1)**2 + qs(2)**2 + qs(3)**2 + qs(4)**2)
                  tb = heavy_torque(qs * r)
               end if
            else
               tb = 0.0_dp
            end if
            kq(1) = -hh * (qs(2) * wsg(1) + qs(3) * wsg(2) + qs(4) * wsg(3))
            kq(2) = hh * (qs(1) * wsg(1) + (qs(3) * wsg(3) - qs(4) * wsg(2)))
            kq(3) = hh * (qs(1) * wsg(2) + (qs(4) * wsg(1) - qs(2) * wsg(3)))
            kq(4) = hh * (qs(1) * wsg(3) + (qs(2) * wsg(2) - qs(3) * wsg(1)))
            kw(1) = h * ((tb(1) + (ib(2) * wsg(2) * wsg(3) - ib(3) * wsg(3) * wsg(2))) / ib(1))
            kw(2) = h * ((tb(2) + (ib(3) * wsg(3) * wsg(1) - ib(1) * wsg(1) * wsg(3))) / ib(2))
            kw(3) = h * ((tb(3) + (ib(1) * wsg(1) * wsg(2) - ib(2) * wsg(2) * wsg(1))) / ib(3))
            select case (s)
            case (1)
               aq = kq; aw = kw
               qs = qb + 0.5_dp * kq; wsg = w + 0.5_dp * kw
            case (2)
               aq = aq + 2.0_dp * kq; aw = aw + 2.0_dp * kw
               qs = qb + 0.5_dp * kq; wsg = w + 0.5_dp * kw
            case (3)
               aq = aq + 2.0_dp * kq; aw = aw + 2.0_dp * kw
               qs = qb + kq; wsg = w + kw
            case (4)
               aq = aq + kq; aw = aw + kw
            end select
         end do
         qb = qb + aq / 6.0_dp
         qb = qb / sqrt(qb(1)**2 + qb(2)**2 + qb(3)**2 + qb(4)**2)
         mb = ib * (w + aw / 6.0_dp)
      end do
   end subroutine rk4_body

   !> nsteps TERZE steps of one body; T_{n+1} is carried to the next step.
   subroutine terze_body(mb, qb, ib, h, nsteps, heavy)
      real(dp), intent(inout) :: mb(3), qb(4)
      real(dp), intent(in) :: ib(3), h
      integer, intent(in) :: nsteps
      logical, intent(in) :: heavy
      real(dp) :: a(3), e(4), p(4), yh(3), tb(3), qn(4), hh
      integer :: k
      hh = 0.5_dp * h
      tb = 0.0_dp
      if (heavy) tb = heavy_torque(qb)
      do k = 1, nsteps
         a = mb + hh * tb
         e = qexp(hh * (mb / ib))
         yh = rot_t(e, a)
         p = qexp(h * (yh / ib))
         qn(1) = qb(1) * p(1) - qb(2) * p(2) - qb(3) * p(3) - qb(4) * p(4)
         qn(2) = qb(1) * p(2) + p(1) * qb(2) + (qb(3) * p(4) - qb(4) * p(3))
         qn(3) = qb(1) * p(3) + p(1) * qb(3) + (qb(4) * p(2) - qb(2) * p(4))
         qn(4) = qb(1) * p(4) + p(1) * qb(4) + (qb(2) * p(3) - qb(3) * p(2))
         qb = qn
         if (heavy) tb = heavy_torque(qb)
         mb = rot_t(p, a) + hh * tb
      end do
   end subroutine terze_body

   !> (u2, -u1, 0), u = E(q)^T e_z (third row of E(q)).
   pure function heavy_torque(q) result(tb)
      real(dp), intent(in) :: q(4)
      real(dp) :: tb(3)
      tb(1) = 2.0_dp * (q(3) * q(4) + q(1) * q(2))
      tb(2) = -2.0_dp * (q(2) * q(4) - q(1) * q(3))
      tb(3) = 0.0_dp
   end function heavy_torque

   !> E(q)^T v = v + 2 (-q0 (u x v) + u x (u x v)), u = q(2:4).
   pure function rot_t(q, v) result(r)
      real(dp), intent(in) :: q(4), v(3)
      real(dp) :: r(3), t(3), c(3)
      t(1) = q(3) * v(3) - q(4) * v(2)
      t(2) = q(4) * v(1) - q(2) * v(3)
      t(3) = q(2) * v(2) - q(3) * v(1)
      c(1) = q(3) * t(3) - q(4) * t(2)
      c(2) = q(4) * t(1) - q(2) * t(3)
      c(3) = q(2) * t(2) - q(3) * t(1)
      r = v + 2.0_dp * (-q(1) * t + c)
   end function rot_t

   !> (cos(a/2), sin(a/2) psi / a), a = |psi|, series for small a.
   pure function qexp(psi) result(r)
      real(dp), intent(in) :: psi(3)
      real(dp) :: r(4), a2, a, s
      a2 = psi(1)**2 + psi(2)**2 + psi(3)**2
      if (a2 < 1.0e-4_dp) then
         s = 0.5_dp - a2 * (1.0_dp / 48 - a2 * (1.0_dp / 3840 - a2 / 645120))
         r(1) = 1.0_dp - a2 * (0.125_dp - a2 * (1.0_dp / 384 - a2 / 46080))
      else
         a = sqrt(a2)
         s = sin(0.5_dp * a) / a
         r(1) = cos(0.5_dp * a)
      end if
      r(2:4) = s * psi
   end function qexp

end program explicit_harness
