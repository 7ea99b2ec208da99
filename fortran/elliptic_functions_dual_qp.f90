! The elliptic functions of module elliptic_functions_qp for dual numbers (dual_numbers_qp): the
! kind-generic source elliptic_functions_generic.inc instantiated by tools/dual_instance_source.py
! (elliptic_functions_generic_dual.inc, written by the build), for the derivatives of the exact
! flow (exact_flow_dual_qp, which takes Carlson's integrals and the series of sn from here and the
! functions of the AGM from jacobi_derivatives_qp).
module elliptic_functions_dual_qp
   use, intrinsic :: ieee_arithmetic, only: ieee_quiet_nan
   use kinds, only: dp, wp => qp
   use dual_numbers_qp
   implicit none
   private

   include 'elliptic_functions_generic_dual.inc'
end module elliptic_functions_dual_qp
