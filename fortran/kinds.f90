! Real kinds and constants shared by every numerical module of frb.
module kinds
   implicit none
   private

   integer, parameter, public :: dp = kind(1.0d0)
   !> Quadruple precision, used only for the secular (linearly growing) parts of very long steps.
   integer, parameter, public :: qp = selected_real_kind(33, 4931)
   real(dp), parameter, public :: pi = 3.141592653589793238462643383279502884_dp
   real(dp), parameter, public :: half_pi = 1.570796326794896619231321691639751442_dp
end module kinds
