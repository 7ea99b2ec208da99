! Derivatives of the unit-norm exact step in quadruple precision (module unit_jacobian with
! wp = qp): the very long steps, which the flow takes in quadruple precision, and the momenta on
! the separatrix (unit_jacobian_generic.inc).
module unit_jacobian_qp
   use kinds, only: wp => qp
   use dual_numbers_qp, only: dual_t, nd, as_dual
   use exact_flow_qp, only: free_flow_unit, invariant_floor
   use exact_flow_dual_qp, only: dual_free_flow_unit => free_flow_unit
   implicit none
   private

   include 'unit_jacobian_generic.inc'
end module unit_jacobian_qp
