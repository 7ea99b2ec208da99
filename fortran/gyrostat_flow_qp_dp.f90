! The exact gyrostat flow in quadruple-precision arithmetic with the rules (series terms,
! quadrature nodes, the angle's tolerance) of double-precision results (the kind-generic code of
! gyrostat_flow_generic.inc with wp = qp and result_digits = 53): the steps of phase within the
! long-step threshold near a separatrix, where double-precision arithmetic would lose more than
! refine_limit rounding errors (the motion's sensitivity to its data grows like 1 / k'^2 there)
! while the truncation of the series and of the quadrature is the same as in double precision.
! See module gyrostat_flow.
module gyrostat_flow_qp_dp
   use kinds, only: wp => qp
   use elliptic_functions_qp, only: agm_t, agm_setup, jacobi_reduced, half_pi
   use lane_math, only: lane_sin, lane_cos, lane_sincos, lane_atan2
   implicit none
   private
   integer, parameter :: result_digits = 53
   include 'gyrostat_flow_generic.inc'
end module gyrostat_flow_qp_dp
