! Elliptic integrals and Jacobi elliptic functions as used by
! E. Celledoni, A. Zanna, "FRB-FORTRAN routines for the exact computation of free rigid body
! motions", ACM TOMS 37(2), article 23, 2010 (Algorithm 903),
! sections 3.2 and 3.3 and the appendix.
!
! Conventions: modulus k (not the parameter m = k^2); the complementary modulus kp = sqrt(1 - k^2)
! is always passed separately, because near k = 1 it cannot be recovered from k without
! cancellation. The integral of the third kind uses the paper's sign convention,
!     Pi(phi, n, k) = int_0^phi dtheta / ((1 - n sin^2 theta) sqrt(1 - k^2 sin^2 theta)).
!
! Carlson's symmetric integrals RF, RC, RJ follow the duplication algorithms of
! B. C. Carlson, Numer. Algorithms 10 (1995) 13-26, with r the unit roundoff of the kind.
!
! The routines are written once (elliptic_functions_generic.inc) for a real kind wp and instantiated twice:
! elliptic_functions in double precision (the flows) and elliptic_functions_qp in quadruple precision
! (the secular parts of very long steps, see exact_flow.f90).
module elliptic_functions
   use, intrinsic :: ieee_arithmetic, only: ieee_value, ieee_quiet_nan
   use lane_math, only: lane_sincos, lane_atanc
   use kinds, only: dp, wp => dp
   implicit none
   private
   include 'elliptic_functions_generic.inc'
end module elliptic_functions
