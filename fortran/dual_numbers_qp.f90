! Dual numbers in quadruple precision (module dual_numbers with wp = qp), for the derivatives of
! the very long steps that the exact flow takes in quadruple precision (exact_flow_dual_qp).
module dual_numbers_qp
   use kinds, only: dp, wp => qp
   use lane_math, only: lane_sin, lane_cos, lane_sincos, lane_atan, lane_atanc, lane_atan2
   use dual_numbers, only: nd
   use, intrinsic :: ieee_arithmetic, only: ieee_class_type, ieee_value_real => ieee_value, &
                                            ieee_positive_inf
   implicit none
   private

   public :: nd

   ! the double-precision tables of the flow (Gauss-Legendre nodes and weights) times and over
   ! quadruple-precision dual numbers, as in the real quadruple-precision instance
   interface assignment(=)
      module procedure assign_double
   end interface
   interface operator(*)
      module procedure mul_double
   end interface
   interface operator(/)
      module procedure div_double
   end interface

   include 'dual_numbers_generic.inc'

   pure elemental subroutine assign_double(r, x)
      type(dual_t), intent(out) :: r
      real(dp), intent(in) :: x

      r%v = x
      r%d = 0
   end subroutine assign_double

   pure elemental function mul_double(a, b) result(r)
      real(dp), intent(in) :: a
      type(dual_t), intent(in) :: b
      type(dual_t) :: r

      r%v = a * b%v
      r%d = a * b%d
   end function mul_double

   pure elemental function div_double(a, b) result(r)
      real(dp), intent(in) :: a
      type(dual_t), intent(in) :: b
      type(dual_t) :: r

      r%v = a / b%v
      r%d = -(r%v * b%d) / b%v
   end function div_double

end module dual_numbers_qp
