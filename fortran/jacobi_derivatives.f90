! The Jacobi elliptic functions sn, cn, dn of dual numbers in double precision (argument and
! parameter), for the dual instance of the exact flow (exact_flow_dual): the values by the
! double-precision functions of elliptic_functions, bit for bit, and the derivatives by the
! derivative formulas of the functions (jacobi_derivatives_generic.inc, written once for a kind).
module jacobi_derivatives
   use kinds, only: wp => dp
   use dual_numbers
   use elliptic_functions, only: agm_value_t => agm_t, agm_value_setup => agm_setup, &
                                 jacobi_value_reduced => jacobi_reduced, carlson_rj
   implicit none
   private

   include 'jacobi_derivatives_generic.inc'
end module jacobi_derivatives
