! The unit-norm exact free flow of module exact_flow_qp (free_flow_unit) for dual numbers
! (dual_numbers_qp): the kind-generic source exact_flow_generic.inc instantiated by
! tools/dual_instance_source.py (exact_flow_generic_dual.inc and quaternion_generic_dual.inc,
! written by the build). Its values are those of free_flow_unit bit for bit (the same operations
! in the same order), its derivatives those of the same formulas, branches and reductions
! (flow_derivatives).
module exact_flow_dual_qp
   use kinds, only: wp => qp
   use dual_numbers_qp
   use elliptic_functions_dual_qp, only: jacobi_series, jacobi_series_max, ellf_sc, carlson_rj, &
                                        gl_node, gl_weight
   use jacobi_derivatives_qp, only: agm_t, agm_setup, jacobi_reduced
   implicit none
   private

   include 'exact_flow_generic_dual.inc'
   include 'quaternion_generic_dual.inc'
end module exact_flow_dual_qp
