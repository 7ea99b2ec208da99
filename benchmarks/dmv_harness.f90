! README (benchmark support; not part of the package build)
! ---------------------------------------------------------------------------------------------
! A hand-written, standalone loop of the DMV step (Hairer and Vilmart 2006; Algorithm 3 of Vilmart, "Rigid body dynamics", 2013: the
! implicit equation (14) as one scalar quartic solved by Newton's method, then the Cayley update
! (15), (13)), the reference for the speed of frb.dmv_integrate on one body and on a handful of
! bodies. The step is written out for one body in scalars (bodies outer, steps inner), with the
! same floating-point operations as fortran/moser_veselov.f90, so the final states must equal frb's bit for
! bit. Only the one-time set-up of a body, its modified inverse moments of inertia (Algorithm 4,
! Table 1), comes from frb's module moser_veselov (dmv_setup, dmv_modified_inverse), outside the timing.
! Build (the flags of meson.build, no LTO):
!   gfortran -O3 -funroll-loops ../fortran/kinds.f90 ../fortran/numbers_table.f90 \
!            ../fortran/moser_veselov.f90 dmv_harness.f90
! Run:   ./a.out <input> <output>
!   input: "n nsteps h order" then n lines "m1 m2 m3 q0 q1 q2 q3 I1 I2 I3"
!   output: the n final states "m1 m2 m3 q0 q1 q2 q3"
!   stdout: "<ns per body-step>" (CPU time, best of 5 runs)
! benchmarks/single_calls.py builds it, runs it and frb.dmv_integrate on the same bodies and
! prints the ratio (the target: frb within 1.2x of this loop).
! ---------------------------------------------------------------------------------------------
program dmv_harness
   use kinds, only: dp
   use moser_veselov, only: dmv_coef_t, dmv_setup, dmv_modified_inverse
   implicit none
   integer :: n, nsteps, order, j, s, irep, unit_in, unit_out
   real(dp) :: h, best, el
   real(dp), allocatable :: m0(:, :), q0(:, :), inr(:, :), m(:, :), q(:, :), w(:, :)
   real(dp) :: c0, c1
   character(len=512) :: fin, fout

   call get_command_argument(1, fin)
   call get_command_argument(2, fout)
   open (newunit=unit_in, file=trim(fin), status='old', action='read')
   read (unit_in, *) n, nsteps, h, order
   allocate (m0(3, n), q0(4, n), inr(3, n), m(3, n), q(4, n), w(3, n))
   do j = 1, n
      read (unit_in, *) m0(:, j), q0(:, j), inr(:, j)
      w(:, j) = dmv_modified_inverse(dmv_setup(inr(:, j), order), h, m0(:, j))
   end do
   close (unit_in)

   best = huge(1.0_dp)
   do irep = 1, 5
      m = m0
      q = q0
      call cpu_time(c0)
      do j = 1, n
         do s = 1, nsteps
            call step(m(:, j), q(:, j), h / 2, w(:, j))
         end do
      end do
      call cpu_time(c1)
      el = c1 - c0
      best = min(best, el)
   end do
   print '(f12.3)', 1.0e9_dp * best / (real(n, dp) * real(nsteps, dp))
   open (newunit=unit_out, file=trim(fout), status='replace', action='write')
   do j = 1, n
      write (unit_out, '(7es25.17)') m(:, j), q(:, j)
   end do
   close (unit_out)

contains

   !> One DMV step in place: y(3), q(4), hd = h/2, inverse moments w(3); NaN without a solution.
   subroutine step(y, q, hd, w)
      real(dp), intent(inout) :: y(3), q(4)
      real(dp), intent(in) :: hd, w(3)
      real(dp), parameter :: r_asym = 1.0e-3_dp, r_prec = 4.3e-9_dp
      real(dp) :: d1, d2, d3, y1, y2, y3, p, a2, pc, n0, l1, c2, r, sig, a, f, fp, ds
      real(dp) :: m1, m2, m3, rden, e1, e2, e3, alpha, g, c1, cc2, c3, q0, q1, q2, q3
      integer :: it
      logical :: bad

      y1 = y(1); y2 = y(2); y3 = y(3)
      d1 = hd * w(1); d2 = hd * w(2); d3 = hd * w(3)
      ! the quartic -N0 + L1 s - c2 s^2 + a2 s^3 - P s^4 in sigma = e . y
      p = (d2 * d3) * d1
      a2 = (d2 * d3 + d3 * d1) + d1 * d2
      pc = p * ((y1 * y1 + y2 * y2) + y3 * y3)
      n0 = ((d1 * (y1 * y1) + d2 * (y2 * y2)) + d3 * (y3 * y3)) + pc * ((y1 * y1 + y2 * y2) + y3 * y3)
      l1 = 1 + a2 * ((y1 * y1 + y2 * y2) + y3 * y3)
      c2 = ((d1 + d2) + d3) + 2 * pc
      r = 1 / l1
      sig = n0 * r
      a = max(1.0_dp, max(abs(d1), abs(d2), abs(d3)) * abs(sig) * (r_asym / r_prec))
      sig = sig + (((p * sig - a2) * sig + c2) * sig * sig) * r
      bad = .false.
      do it = 1, 50
         f = (((-p * sig + a2) * sig - c2) * sig + l1) * sig - n0
         fp = ((-4 * p * sig + 3 * a2) * sig - 2 * c2) * sig + l1
         ds = f / fp
         sig = sig - ds
         bad = abs(ds) * a > r_asym * abs(sig)
         if (.not. bad) exit
      end do
      if (bad) sig = 0 / (sig - sig)   ! no solution: NaN
      ! e from sigma, then y+ = y + (2 / alpha) (c + c x e), c = y x e, and q+ = q (1, e) / sqrt(alpha)
      m1 = 1 - sig * d1; m2 = 1 - sig * d2; m3 = 1 - sig * d3
      rden = 1 / (m1 * m2 * m3 + (m1 * (d2 * d3) * (y1 * y1) + m2 * (d3 * d1) * (y2 * y2) &
                                  + m3 * (d1 * d2) * (y3 * y3)))
      e1 = rden * (d1 * (m2 * m3 * y1 + (d3 - d2) * y2 * y3) + pc * y1)
      e2 = rden * (d2 * (m3 * m1 * y2 + (d1 - d3) * y3 * y1) + pc * y2)
      e3 = rden * (d3 * (m1 * m2 * y3 + (d2 - d1) * y1 * y2) + pc * y3)
      alpha = 1 + (e1 * e1 + e2 * e2 + e3 * e3)
      r = 1 / sqrt(alpha)
      g = 2 * r * r
      c1 = y2 * e3 - y3 * e2
      cc2 = y3 * e1 - y1 * e3
      c3 = y1 * e2 - y2 * e1
      y(1) = y1 + g * (c1 + (cc2 * e3 - c3 * e2))
      y(2) = y2 + g * (cc2 + (c3 * e1 - c1 * e3))
      y(3) = y3 + g * (c3 + (c1 * e2 - cc2 * e1))
      q0 = q(1); q1 = q(2); q2 = q(3); q3 = q(4)
      q(1) = r * (q0 - q1 * e1 - q2 * e2 - q3 * e3)
      q(2) = r * (q1 + q0 * e1 + q2 * e3 - q3 * e2)
      q(3) = r * (q2 + q0 * e2 + q3 * e1 - q1 * e3)
      q(4) = r * (q3 + q0 * e3 + q1 * e2 - q2 * e1)
   end subroutine step

end program dmv_harness
