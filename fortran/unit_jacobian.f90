! Derivatives of the unit-norm exact step of the free rigid body (free_flow_unit of exact_flow) in
! double precision: the momentum after the step and the body-frame increment of the attitude, each
! differentiated with respect to the unit momentum (two tangent directions of its sphere) and the
! ratios of the moments, through the closed form itself (flow_derivatives assembles the jacobian of
! a step from them). Written once for a real kind (unit_jacobian_generic.inc); module
! unit_jacobian_qp is the quadruple-precision instance, for the long steps and the separatrix.
module unit_jacobian
   use kinds, only: wp => dp
   use dual_numbers, only: dual_t, nd, as_dual
   use exact_flow, only: free_flow_unit, invariant_floor
   use exact_flow_dual, only: dual_free_flow_unit => free_flow_unit
   implicit none
   private

   include 'unit_jacobian_generic.inc'
end module unit_jacobian
