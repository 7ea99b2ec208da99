"""Write fortran/lane_math_table.inc: the constants of lane_math's sin, cos, atan and atan2.

* pi/2 in four parts for the argument reduction of sin and cos (Cody and Waite, "Software
  Manual for the Elementary Functions", 1980, ch. 8): pio2_1, pio2_2, pio2_3 are pi/2 and its
  remainders rounded to 33 significant bits, so that k pio2_j is exact for integers |k| <= 2^20;
  pio2_4 is the next remainder rounded to a double. The script also finds, by exact integer
  arithmetic over every k up to the largest quadrant number of the reduction range, the double x
  nearest to a multiple of pi/2 (the smallest reduced argument the range holds) and checks that
  the error of the four-part reduction is negligible against it.
* Minimax polynomials (Remez's second algorithm, in mpmath at 40 digits; see e.g. J.-M. Muller,
  "Elementary Functions: Algorithms and Implementation", 3rd ed. 2016, ch. 3) for
      sin r = r + r^3 S(r^2),   cos r = 1 - r^2/2 + r^4 C(r^2)    on |r| <= pi/4 + margin,
      atan t = t + t^3 A(t^2)                                      on |t| <= tan(pi/8) + margin,
  each minimising the relative error of the function; the degree is the smallest for which the
  polynomial with its coefficients rounded to doubles stays within TARGET of the function
  (relative), measured on a dense grid in mpmath.
* pi/4, pi/2, 3 pi/4, pi as pairs of doubles (hi + lo).

Run from the repository root (OUTDIR defaults to fortran; tests/test_generated.py writes into a
temporary directory and compares):
    python tools/gen_lane_math.py [OUTDIR]
"""
from __future__ import annotations

import os
import sys

import mpmath as mp

mp.mp.dps = 40
OUT = "lane_math_table.inc"
TARGET = mp.mpf(2) ** -58          # relative error of each polynomial (about 1/32 ulp)
REDUCTION_MAX = 2 ** 20            # |x| up to which the reduction is exact
SPLIT_BITS = 33                    # bits of pio2_1..3: k pio2_j exact for |k| <= 2^(53 - 33)
TRIG_MAX = mp.pi / 4 + mp.mpf(2) ** -20    # |r| after the reduction (k rounded: pi/4 + 2^-31 at most)
ATAN_MAX = mp.tan(mp.pi / 8) + mp.mpf(2) ** -20
GRID = 600


def series(term, y):
    """sum_{n >= 0} term(n) y^n, |y| < 1, summed until the terms are below the working precision."""
    s, yn, n = mp.mpf(0), mp.mpf(1), 0
    while True:
        t = term(n) * yn
        s += t
        if abs(t) < mp.mpf(10) ** -(mp.mp.dps + 5):
            return s
        yn *= y
        n += 1


def sin_tail(y):
    """(sin r - r) / r^3, y = r^2, by its Maclaurin series (no cancellation)."""
    return series(lambda n: mp.mpf((-1) ** (n + 1)) / mp.factorial(2 * n + 3), y)


def cos_tail(y):
    """(cos r - 1 + r^2/2) / r^4, y = r^2."""
    return series(lambda n: mp.mpf((-1) ** n) / mp.factorial(2 * n + 4), y)


def atan_tail(y):
    """(atan t - t) / t^3, y = t^2 < 1."""
    return series(lambda n: mp.mpf((-1) ** (n + 1)) / (2 * n + 3), y)


# weights: the tail's error times the weight is the relative error of the function
FUNCTIONS = {
    "sin": (sin_tail, lambda y: y * mp.sqrt(y) / mp.sin(mp.sqrt(y)) if y > 0 else mp.mpf(0),
            TRIG_MAX ** 2),
    "cos": (cos_tail, lambda y: y * y / mp.cos(mp.sqrt(y)), TRIG_MAX ** 2),
    "atan": (atan_tail, lambda y: y * mp.sqrt(y) / mp.atan(mp.sqrt(y)) if y > 0 else mp.mpf(0),
             ATAN_MAX ** 2),
}


def polyval(c, y):
    s = mp.mpf(0)
    for a in reversed(c):
        s = s * y + a
    return s


def grid(b):
    """Dense points of [0, b], denser towards b (where the weight is largest)."""
    return [b * mp.sin(mp.pi / 2 * i / GRID) for i in range(GRID + 1)]


def refine_max(e, lo, hi):
    """The point of [lo, hi] where |e| is largest (golden-section search; e is smooth there)."""
    g = (mp.sqrt(5) - 1) / 2
    a, b = lo, hi
    c, d = b - g * (b - a), a + g * (b - a)
    for _ in range(80):
        if abs(e(c)) > abs(e(d)):
            b, d = d, c
            c = b - g * (b - a)
        else:
            a, c = c, d
            d = a + g * (b - a)
    return (a + b) / 2


def remez(f, w, b, n, c0, iterations=40):
    """Coefficients c_1..c_n minimising max |w (f - p)| over [0, b], p = c0 + c_1 y + ... + c_n y^n
    with c0 given (f(0) rounded to a double: the weight vanishes at 0, so this costs nothing there),
    and that maximum."""
    pts = grid(b)[1:]
    ref = [b / 2 * (1 - mp.cos(mp.pi * (i + 1) / (n + 1))) for i in range(n + 1)]
    cache = {}

    def fw(y):
        if y not in cache:
            cache[y] = (f(y) - c0, w(y))
        return cache[y]

    def err(y, c):
        g, wy = fw(y)
        return wy * (g - y * polyval(c, y))

    for _ in range(iterations):
        a = mp.matrix(n + 1, n + 1)
        rhs = mp.matrix(n + 1, 1)
        for i, y in enumerate(ref):
            g, wy = fw(y)
            for j in range(n):
                a[i, j] = y ** (j + 1)
            a[i, n] = (-1) ** i / wy
            rhs[i] = g
        sol = mp.lu_solve(a, rhs)
        c = [sol[j] for j in range(n)]
        vals = [err(y, c) for y in pts]
        # one extremum per run of equal sign (refined); keep n + 1 alternating ones
        extrema = []
        start = 0
        for i in range(1, len(pts) + 1):
            if i == len(pts) or mp.sign(vals[i]) != mp.sign(vals[start]):
                j = max(range(start, i), key=lambda m: abs(vals[m]))
                if 0 < j < len(pts) - 1:
                    y = refine_max(lambda t: err(t, c), pts[j - 1], pts[j + 1])
                else:
                    y = pts[j]
                extrema.append((y, err(y, c)))
                start = i
        while len(extrema) > n + 1:
            if abs(extrema[0][1]) < abs(extrema[-1][1]):
                extrema.pop(0)
            else:
                extrema.pop()
        if len(extrema) < n + 1:
            break
        ref = [x[0] for x in extrema]
        levels = [abs(x[1]) for x in extrema]
        if max(levels) - min(levels) < mp.mpf(10) ** -3 * max(levels):
            break
    return [c0] + c, max(abs(v) for v in vals)


def fit(name):
    f, w, b = FUNCTIONS[name]
    c0 = mp.mpf(float(f(mp.mpf(0))))
    for n in range(3, 20):
        c, level = remez(f, w, b, n, c0)
        cd = [float(x) for x in c]
        rounded = max(abs(w(y) * (f(y) - polyval([mp.mpf(x) for x in cd], y))) for y in grid(b)[1:])
        if rounded <= TARGET:
            return cd, level, rounded
    raise RuntimeError(f"no degree reaches the target for {name}")


def round_bits(x, bits):
    """x rounded to the nearest number with `bits` significant bits (a double when bits <= 53)."""
    e = int(mp.floor(mp.log(abs(x), 2)))
    scale = mp.mpf(2) ** (bits - 1 - e)
    return mp.nint(x * scale) / scale


def reduction_constants():
    """pio2_1..4 and the remainder pi/2 - (pio2_1 + ... + pio2_4) (at 400 bits)."""
    with mp.workprec(400):
        pio2 = mp.pi / 2
        parts = []
        rest = pio2
        for _ in range(3):
            p = round_bits(rest, SPLIT_BITS)
            parts.append(p)
            rest -= p
        parts.append(round_bits(rest, 53))
        tail = pio2 - sum(parts)
    return parts, tail


def smallest_reduced(kmax):
    """min over doubles x with x / (pi/2) within 1/2 of an integer 1 <= k <= kmax of |x - k pi/2|,
    and the k where it occurs (exact integer arithmetic with pi/2 to 300 bits)."""
    shift = 300
    with mp.workprec(shift + 64):
        pio2 = int(mp.floor(mp.pi / 2 * mp.mpf(2) ** shift))
    best, best_k = None, None
    for k in range(1, kmax + 1):
        v = k * pio2                      # k pi/2 * 2^shift (to within k)
        s = v.bit_length() - 53           # the spacing of the doubles at v is 2^s (in these units)
        r = v & ((1 << s) - 1)
        d = min(r, (1 << s) - r)
        if v - r == 1 << (v.bit_length() - 1):
            # just above a power of two: the doubles below it are twice as dense
            d = min(d, r & ((1 << (s - 1)) - 1))
        if best is None or d < best:
            best, best_k = d, k
    return mp.mpf(best) / mp.mpf(2) ** shift, best_k


def lit(x):
    return f"{float(x)!r}_dp".replace("e-", "e-").replace("e+", "e")


def dd(x):
    hi = float(x)
    lo = float(x - mp.mpf(hi))
    return hi, lo


def main(outdir="fortran"):
    parts, tail = reduction_constants()
    kmax = int(mp.nint(REDUCTION_MAX * 2 / mp.pi)) + 1
    assert kmax < 2 ** (53 - SPLIT_BITS)
    rmin, rk = smallest_reduced(kmax)
    # error of the reduced argument hi + lo: k |tail| + the rounding of k pio2_4 + the roundings
    # of the low parts (2^-104 |r|)
    red_err = kmax * (abs(tail) + abs(parts[3]) * mp.mpf(2) ** -53)
    rel = red_err / rmin + mp.mpf(2) ** -104
    assert rel < mp.mpf(2) ** -62, "the reduction is not accurate enough over its range"

    fits = {name: fit(name) for name in ("sin", "cos", "atan")}

    lines = [
        "! Generated by tools/gen_lane_math.py, do not edit: the constants of lane_math (sin, cos, atan,",
        "! atan2). pi/2 = pio2_1 + pio2_2 + pio2_3 + pio2_4 + e, |e| < "
        f"2^{float(mp.log(abs(tail), 2)):.1f}; pio2_1..3 have {SPLIT_BITS} significant bits,",
        f"! so k pio2_j (j <= 3) is exact for |k| <= 2^{53 - SPLIT_BITS}. For |x| <= {REDUCTION_MAX} "
        f"(k <= {kmax}) the smallest reduced argument",
        f"! |x - k pi/2| of a double is 2^{float(mp.log(rmin, 2)):.2f} (k = {rk}); the reduction's "
        f"relative error there is below 2^{float(mp.log(rel, 2)):.1f}.",
        f"real(dp), parameter :: reduction_max = {lit(REDUCTION_MAX)}",
    ]
    for j, p in enumerate(parts, 1):
        lines.append(f"real(dp), parameter :: pio2_{j} = {lit(p)}")
    lines.append(f"real(dp), parameter :: two_over_pi = {lit(2 / mp.pi)}")
    for name, x in (("pi_4", mp.pi / 4), ("pi_2", mp.pi / 2), ("pi_3_4", 3 * mp.pi / 4), ("pi", mp.pi)):
        hi, lo = dd(x)
        lines.append(f"real(dp), parameter :: {name}_hi = {lit(hi)}, {name}_lo = {lit(lo)}")
    hi, _ = dd(mp.tan(mp.pi / 8))
    lines.append("! the pieces of atan: |t| <= tan(pi/8) after t, (t - 1)/(t + 1) or -1/t")
    lines.append(f"real(dp), parameter :: tan_pi_8 = {lit(mp.tan(mp.pi / 8))}, "
                 f"tan_3pi_8 = {lit(mp.tan(3 * mp.pi / 8))}")
    described = {
        "sin": ("sin r = r + r^3 S(r^2)", "|r|", TRIG_MAX),
        "cos": ("cos r = 1 - r^2/2 + r^4 C(r^2)", "|r|", TRIG_MAX),
        "atan": ("atan t = t + t^3 A(t^2)", "|t|", ATAN_MAX),
    }
    for name in ("sin", "cos", "atan"):
        cd, level, rounded = fits[name]
        form, var, bound = described[name]
        lines.append(f"! {form}, {var} <= {float(bound):.6f}: minimax degree {len(cd) - 1}, relative "
                     f"error 2^{float(mp.log(level, 2)):.1f}, 2^{float(mp.log(rounded, 2)):.1f} "
                     "with the coefficients as doubles")
        lines.append(f"real(dp), parameter :: {name}_coef(0:{len(cd) - 1}) = [ &")
        for i, x in enumerate(cd):
            lines.append(f"   {lit(x)}" + (", &" if i < len(cd) - 1 else "]"))
    with open(os.path.join(outdir, OUT), "w") as f:
        f.write("\n".join(lines) + "\n")
    print("wrote", OUT, {name: len(fits[name][0]) for name in fits},
          "smallest reduced argument 2^%.2f" % float(mp.log(rmin, 2)))


if __name__ == "__main__":
    main(*sys.argv[1:2])
