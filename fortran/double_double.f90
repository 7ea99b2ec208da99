! Double-double arithmetic: a number x = hi + lo held as two doubles with |lo| <= ulp(hi) / 2, a
! precision of about 2^-104 (106 significant bits) at a few double operations a step, for the
! quantities of a double-precision result that need more digits than a double carries (the period
! of a gyrostat and the rest of a long step after its whole periods: gyrostat_flow_dd).
!
! Error-free transformations (docs/exact_flow.rst, "The gyrostat", "Double-double arithmetic"):
! * two_sum (Knuth, The Art of Computer Programming, vol. 2, section 4.2.2, Theorem B):
!   s = fl(a + b) and e with a + b = s + e exactly, for any doubles (six operations);
! * fast_two_sum (Dekker 1971, "A floating-point technique for extending the available
!   precision", Numer. Math. 18, the algorithm fast2sum): the same in three operations when
!   |a| >= |b| (or a = 0);
! * two_prod (Dekker 1971, mul12, with Veltkamp's splitting of a double into two halves of 26
!   and 27 bits, c = (2^27 + 1) a, hi = c - (c - a), lo = a - hi): p = fl(a b) and e with
!   a b = p + e exactly, without a fused multiply-add (the build contracts nothing:
!   -ffp-contract=off), for |a|, |b| below 2^995 and products and their error terms above the
!   underflow (the scaled quantities of the gyrostat are of order one).
! On these, add, mul, div and sqrt of double-double numbers (Dekker's add2, mul2, div2 and sqrt2)
! err relatively by a small multiple of 2^-104 (add: of the sum of the magnitudes of the terms).
! Results are bit for bit the same on every target: plain IEEE double operations, no contraction.
module double_double
   use kinds, only: dp
   implicit none
   private

   !> hi + lo, |lo| <= ulp(hi) / 2 (after any operation of this module).
   type, public :: ddouble
      real(dp) :: hi = 0, lo = 0
   end type ddouble

   !> A complex number of double-double parts.
   type, public :: cddouble
      type(ddouble) :: re, im
   end type cddouble

   public :: two_sum, fast_two_sum, two_prod, dd_sqrt, dd_value, dd_floor, dd_abs, cdd_conj
   public :: operator(+), operator(-), operator(*), operator(/)

   !> pi to 106 bits: its double and the rounding of the remainder.
   type(ddouble), parameter, public :: dd_pi = ddouble(3.141592653589793116_dp, 1.2246467991473532e-16_dp)

   !> Veltkamp's splitting constant 2^27 + 1.
   real(dp), parameter :: splitter = 134217729.0_dp

   interface operator(+)
      module procedure add_dd, add_dr, add_rd, add_cc
   end interface operator(+)
   interface operator(-)
      module procedure sub_dd, sub_dr, sub_rd, neg_d, sub_cc, neg_c
   end interface operator(-)
   interface operator(*)
      module procedure mul_dd, mul_dr, mul_rd, mul_cc, mul_dc, mul_rc
   end interface operator(*)
   interface operator(/)
      module procedure div_dd, div_dr, div_rd
   end interface operator(/)

contains

   !> s + e = a + b exactly, s = fl(a + b) (Knuth).
   pure elemental subroutine two_sum(a, b, s, e)
      real(dp), intent(in) :: a, b
      real(dp), intent(out) :: s, e
      real(dp) :: bb

      s = a + b
      bb = s - a
      e = (a - (s - bb)) + (b - bb)
   end subroutine two_sum

   !> s + e = a + b exactly, s = fl(a + b), for |a| >= |b| or a = 0 (Dekker).
   pure elemental subroutine fast_two_sum(a, b, s, e)
      real(dp), intent(in) :: a, b
      real(dp), intent(out) :: s, e

      s = a + b
      e = b - (s - a)
   end subroutine fast_two_sum

   !> p + e = a b exactly, p = fl(a b) (Dekker, with Veltkamp's splitting).
   pure elemental subroutine two_prod(a, b, p, e)
      real(dp), intent(in) :: a, b
      real(dp), intent(out) :: p, e
      real(dp) :: c, ah, al, bh, bl

      p = a * b
      c = splitter * a
      ah = c - (c - a)
      al = a - ah
      c = splitter * b
      bh = c - (c - b)
      bl = b - bh
      e = ((ah * bh - p) + ah * bl + al * bh) + al * bl
   end subroutine two_prod

   !> The double-double number of hi + lo (any two doubles, |lo| <= |hi| or hi = 0).
   pure elemental function dd_value(hi, lo) result(c)
      real(dp), intent(in) :: hi, lo
      type(ddouble) :: c

      call fast_two_sum(hi, lo, c%hi, c%lo)
   end function dd_value

   pure elemental function add_dd(a, b) result(c)
      type(ddouble), intent(in) :: a, b
      type(ddouble) :: c
      real(dp) :: s, e, t, f, s1, e1

      call two_sum(a%hi, b%hi, s, e)
      call two_sum(a%lo, b%lo, t, f)
      e = e + t
      ! (into other variables: an argument must not be both an input and an output)
      call fast_two_sum(s, e, s1, e1)
      e1 = e1 + f
      call fast_two_sum(s1, e1, c%hi, c%lo)
   end function add_dd

   pure elemental function add_dr(a, b) result(c)
      type(ddouble), intent(in) :: a
      real(dp), intent(in) :: b
      type(ddouble) :: c
      real(dp) :: s, e

      call two_sum(a%hi, b, s, e)
      e = e + a%lo
      call fast_two_sum(s, e, c%hi, c%lo)
   end function add_dr

   pure elemental function add_rd(a, b) result(c)
      real(dp), intent(in) :: a
      type(ddouble), intent(in) :: b
      type(ddouble) :: c

      c = add_dr(b, a)
   end function add_rd

   pure elemental function neg_d(a) result(c)
      type(ddouble), intent(in) :: a
      type(ddouble) :: c

      c%hi = -a%hi
      c%lo = -a%lo
   end function neg_d

   pure elemental function sub_dd(a, b) result(c)
      type(ddouble), intent(in) :: a, b
      type(ddouble) :: c

      c = add_dd(a, neg_d(b))
   end function sub_dd

   pure elemental function sub_dr(a, b) result(c)
      type(ddouble), intent(in) :: a
      real(dp), intent(in) :: b
      type(ddouble) :: c

      c = add_dr(a, -b)
   end function sub_dr

   pure elemental function sub_rd(a, b) result(c)
      real(dp), intent(in) :: a
      type(ddouble), intent(in) :: b
      type(ddouble) :: c

      c = add_dr(neg_d(b), a)
   end function sub_rd

   pure elemental function mul_dd(a, b) result(c)
      type(ddouble), intent(in) :: a, b
      type(ddouble) :: c
      real(dp) :: p, e

      call two_prod(a%hi, b%hi, p, e)
      e = e + (a%hi * b%lo + a%lo * b%hi)
      call fast_two_sum(p, e, c%hi, c%lo)
   end function mul_dd

   pure elemental function mul_dr(a, b) result(c)
      type(ddouble), intent(in) :: a
      real(dp), intent(in) :: b
      type(ddouble) :: c
      real(dp) :: p, e

      call two_prod(a%hi, b, p, e)
      e = e + a%lo * b
      call fast_two_sum(p, e, c%hi, c%lo)
   end function mul_dr

   pure elemental function mul_rd(a, b) result(c)
      real(dp), intent(in) :: a
      type(ddouble), intent(in) :: b
      type(ddouble) :: c

      c = mul_dr(b, a)
   end function mul_rd

   !> a / b: the quotient of the leading parts and two corrections from the exact remainders.
   pure elemental function div_dd(a, b) result(c)
      type(ddouble), intent(in) :: a, b
      type(ddouble) :: c, r
      real(dp) :: q1, q2

      q1 = a%hi / b%hi
      r = sub_dd(a, mul_dr(b, q1))
      q2 = r%hi / b%hi
      r = sub_dd(r, mul_dr(b, q2))
      call fast_two_sum(q1, q2, c%hi, c%lo)
      c = add_dr(c, r%hi / b%hi)
   end function div_dd

   pure elemental function div_dr(a, b) result(c)
      type(ddouble), intent(in) :: a
      real(dp), intent(in) :: b
      type(ddouble) :: c

      c = div_dd(a, ddouble(b, 0.0_dp))
   end function div_dr

   pure elemental function div_rd(a, b) result(c)
      real(dp), intent(in) :: a
      type(ddouble), intent(in) :: b
      type(ddouble) :: c

      c = div_dd(ddouble(a, 0.0_dp), b)
   end function div_rd

   !> sqrt(a), a >= 0: x = sqrt(hi) corrected by (a - x^2) / (2 x), the square exact (two_prod).
   pure elemental function dd_sqrt(a) result(c)
      type(ddouble), intent(in) :: a
      type(ddouble) :: c, r
      real(dp) :: x, p, e

      if (.not. a%hi > 0) then
         c = ddouble(0.0_dp, 0.0_dp)
         return
      end if
      x = sqrt(a%hi)
      call two_prod(x, x, p, e)
      r = sub_dd(a, ddouble(p, e))
      call fast_two_sum(x, r%hi / (2 * x), c%hi, c%lo)
   end function dd_sqrt

   pure elemental function dd_abs(a) result(c)
      type(ddouble), intent(in) :: a
      type(ddouble) :: c

      c = a
      if (a%hi < 0) c = neg_d(a)
   end function dd_abs

   !> floor(a) as a double (an integer-valued double: |a| below 2^52).
   pure elemental function dd_floor(a) result(n)
      type(ddouble), intent(in) :: a
      real(dp) :: n

      n = aint(a%hi)
      if (n > a%hi) n = n - 1
      ! (hi an integer: the sign of lo decides)
      if (n == a%hi .and. a%lo < 0) n = n - 1
   end function dd_floor

   pure elemental function add_cc(a, b) result(c)
      type(cddouble), intent(in) :: a, b
      type(cddouble) :: c

      c%re = add_dd(a%re, b%re)
      c%im = add_dd(a%im, b%im)
   end function add_cc

   pure elemental function sub_cc(a, b) result(c)
      type(cddouble), intent(in) :: a, b
      type(cddouble) :: c

      c%re = sub_dd(a%re, b%re)
      c%im = sub_dd(a%im, b%im)
   end function sub_cc

   pure elemental function neg_c(a) result(c)
      type(cddouble), intent(in) :: a
      type(cddouble) :: c

      c%re = neg_d(a%re)
      c%im = neg_d(a%im)
   end function neg_c

   pure elemental function mul_cc(a, b) result(c)
      type(cddouble), intent(in) :: a, b
      type(cddouble) :: c

      c%re = sub_dd(mul_dd(a%re, b%re), mul_dd(a%im, b%im))
      c%im = add_dd(mul_dd(a%re, b%im), mul_dd(a%im, b%re))
   end function mul_cc

   pure elemental function mul_dc(a, b) result(c)
      type(ddouble), intent(in) :: a
      type(cddouble), intent(in) :: b
      type(cddouble) :: c

      c%re = mul_dd(a, b%re)
      c%im = mul_dd(a, b%im)
   end function mul_dc

   pure elemental function mul_rc(a, b) result(c)
      real(dp), intent(in) :: a
      type(cddouble), intent(in) :: b
      type(cddouble) :: c

      c%re = mul_rd(a, b%re)
      c%im = mul_rd(a, b%im)
   end function mul_rc

   pure elemental function cdd_conj(a) result(c)
      type(cddouble), intent(in) :: a
      type(cddouble) :: c

      c%re = a%re
      c%im = neg_d(a%im)
   end function cdd_conj

end module double_double
