! Quadruple-precision instance of the exact gyrostat flow (the kind-generic code of
! gyrostat_flow_generic.inc with wp = qp), for long steps: see module gyrostat_flow.
module gyrostat_flow_qp
   use kinds, only: wp => qp
   use elliptic_functions_qp, only: agm_t, agm_setup, jacobi_reduced, half_pi
   use lane_math, only: lane_sin, lane_cos, lane_sincos, lane_atan2
   implicit none
   private
   integer, parameter :: result_digits = digits(1.0_wp)
   include 'gyrostat_flow_generic.inc'
end module gyrostat_flow_qp
