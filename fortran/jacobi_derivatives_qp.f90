! The Jacobi elliptic functions of dual numbers in quadruple precision (module jacobi_derivatives
! with wp = qp), for the very long steps (exact_flow_dual_qp).
module jacobi_derivatives_qp
   use kinds, only: wp => qp
   use dual_numbers_qp
   use elliptic_functions_qp, only: agm_value_t => agm_t, agm_value_setup => agm_setup, &
                                    jacobi_value_reduced => jacobi_reduced, carlson_rj
   implicit none
   private

   include 'jacobi_derivatives_generic.inc'
end module jacobi_derivatives_qp
