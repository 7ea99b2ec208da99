! Dual numbers in double precision: x = v + sum_j d_j e_j with e_i e_j = 0 (truncated Taylor series
! of order one in nd directions), the number type of the forward-mode derivatives of the exact
! flow (exact_flow_dual, flow_derivatives). Every operation and elementary function gives the value
! of the real operation on the values, rounded the same way, so a kind-generic code instantiated
! for dual_t computes the values of its double-precision instance bit for bit, and the exact
! derivatives of those operations beside them: forward-mode automatic differentiation (L. B. Rall,
! "Automatic Differentiation: Techniques and Applications", Lecture Notes in Computer Science 120,
! Springer 1981; A. Griewank, A. Walther, "Evaluating Derivatives", 2nd ed., SIAM 2008).
! Comparisons order the values (a code takes the branches of its values); equality is that of all
! components. The operations are written once (dual_numbers_generic.inc) for a real kind wp.
module dual_numbers
   use kinds, only: wp => dp
   use lane_math, only: lane_sin, lane_cos, lane_sincos, lane_atan, lane_atanc, lane_atan2
   use, intrinsic :: ieee_arithmetic, only: ieee_class_type, ieee_value_real => ieee_value, &
                                            ieee_positive_inf
   implicit none
   private

   !> Directions carried: the two tangents of the unit momentum, the two ratios of the moments and
   !> the time of the semi-exact flow (unit_jacobian).
   integer, parameter, public :: nd = 5

   include 'dual_numbers_generic.inc'
end module dual_numbers
