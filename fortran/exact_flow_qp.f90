! Quadruple-precision instance of the exact free flow (the kind-generic code of
! exact_flow_generic.inc with wp = qp), for very long steps: see module exact_flow.
module exact_flow_qp
   use kinds, only: wp => qp
   use lane_math, only: lane_sincos, lane_atan, lane_atanc, lane_atan2
   use elliptic_functions_qp, only: agm_t, agm_setup, jacobi_reduced, jacobi_series, jacobi_series_max, &
                              ellf_sc, carlson_rj, &
                              gl_node, gl_weight
   implicit none
   private
   include 'exact_flow_generic.inc'
   ! qmul in quadruple precision (the helpers of module rotations, kind-generic)
   include 'quaternion_generic.inc'
end module exact_flow_qp
