! Quadruple-precision instance of the elliptic functions (module elliptic_functions, the same
! kind-generic code of elliptic_functions_generic.inc with wp = qp), for the secular parts of
! very long steps of the exact flow (exact_flow_qp).
module elliptic_functions_qp
   use, intrinsic :: ieee_arithmetic, only: ieee_value, ieee_quiet_nan
   use lane_math, only: lane_sincos, lane_atanc
   use kinds, only: dp, wp => qp
   implicit none
   private
   include 'elliptic_functions_generic.inc'
end module elliptic_functions_qp
