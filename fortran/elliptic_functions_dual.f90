! The elliptic functions of module elliptic_functions for dual numbers (dual_numbers): the
! kind-generic source elliptic_functions_generic.inc instantiated by tools/dual_instance_source.py
! (elliptic_functions_generic_dual.inc, written by the build), for the derivatives of the exact
! flow (exact_flow_dual, which takes Carlson's integrals and the series of sn from here and the
! functions of the AGM from jacobi_derivatives).
module elliptic_functions_dual
   use, intrinsic :: ieee_arithmetic, only: ieee_quiet_nan
   use kinds, only: dp, wp => dp
   use dual_numbers
   implicit none
   private

   include 'elliptic_functions_generic_dual.inc'
end module elliptic_functions_dual
