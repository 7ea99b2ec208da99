"""lane_math's sin, cos, atan, atan(x)/x and atan2 against mpmath (200 bits), in ulps of the exact value.

The flows give them arguments |x| <= 32 (sin, cos: half the phase of a double-precision step, at
most 64) and any double (atan, atan2); the samples cover those ranges densely, their edges
(multiples of pi/2, the pieces of atan at tan(pi/8) and tan(3 pi/8)), tiny and subnormal
arguments, signed zeros, the largest arguments of the reduction, infinities and NaN. Bounds
asserted: below 1 ulp of the exact value (so within 1 ulp of the correctly rounded value, which
is asserted too). The lanes' variants for arguments without reduction give the same bits.
"""
import math

import mpmath as mp
import numpy as np
import pytest

_testing = pytest.importorskip("frb._testing", reason="frb._testing not built (meson option testing)")

RNG = np.random.default_rng(20261127)
PREC = 200
TAN_PI_8 = math.sqrt(2) - 1          # the doubles of lane_math_table.inc's tan_pi_8, tan_3pi_8
TAN_3PI_8 = math.sqrt(2) + 1
REDUCTION_MAX = 2.0**20


def _ulp(exact):
    """The spacing of the doubles at the exact value (the lower spacing just below a power of 2)."""
    f = abs(float(exact))
    u = max(math.ulp(f), 2.0**-1074)
    if f > 0 and abs(exact) < f and f == 2.0 ** math.floor(math.log2(f)):
        u = max(u / 2, 2.0**-1074)
    return u


def _errors(got, exact):
    """(error in ulps of the exact value, distance in ulps to the correctly rounded value)."""
    err, dist = [], []
    for g, e in zip(got, exact):
        u = _ulp(e)
        err.append(float(abs(mp.mpf(float(g)) - e) / u))
        dist.append(abs(float(g) - float(e)) / u)
    return np.array(err), np.array(dist)


def _values(x, y=None):
    x = np.ascontiguousarray(x, dtype=float)
    y = np.ones_like(x) if y is None else np.ascontiguousarray(y, dtype=float)
    names = ("sin", "cos", "atan", "atanc", "atan2", "sin_near", "cos_near", "atanc_near")
    return dict(zip(names, _testing.lane_math_values(x, y)))


def _check(got, exact, bound):
    with mp.workprec(PREC):
        err, dist = _errors(got, exact)
    assert err.max() < bound, f"{err.max():.3f} ulp"
    assert dist.max() <= 1, f"{dist.max()} ulp from the correctly rounded value"


def _nearest_double(value):
    with mp.workprec(PREC):
        return float(value)


def _trig_samples():
    k = np.arange(1, 22)
    near_multiples = (k[:, None] * (np.pi / 2) + np.arange(-40, 41)[None, :] * np.spacing(k * np.pi / 2)[:, None])
    return np.concatenate([
        np.linspace(-33, 33, 6001),
        RNG.uniform(-33, 33, 6000),
        RNG.uniform(-np.pi / 4, np.pi / 4, 3000),
        near_multiples.ravel(),
        10.0 ** RNG.uniform(-320, 0, 1500) * RNG.choice([-1, 1], 1500),
        # the double nearest to a multiple of pi/2 within the reduction's range (k = 29,
        # tools/gen_lane_math.py), the flows' largest arguments, the range's end
        [_nearest_double(29 * mp.mpf(mp.pi) / 2), 32.0, -32.0, 64.0, REDUCTION_MAX, -REDUCTION_MAX],
        RNG.uniform(-REDUCTION_MAX, REDUCTION_MAX, 500),
    ])


@pytest.mark.parametrize("name", ["sin", "cos"])
def test_sin_cos_against_mpmath(name):
    x = _trig_samples()
    got = _values(x)[name]
    fun = mp.sin if name == "sin" else mp.cos
    with mp.workprec(PREC):
        exact = [fun(mp.mpf(float(v))) for v in x]
    _check(got, exact, 1.0)


def _atan_samples():
    edges = np.concatenate([np.linspace(c * (1 - 1e-3), c * (1 + 1e-3), 1001) for c in (TAN_PI_8, 1.0, TAN_3PI_8)])
    edges = np.concatenate([edges] + [c + np.arange(-20, 21) * math.ulp(c) for c in (TAN_PI_8, TAN_3PI_8)])
    x = np.concatenate([
        np.linspace(-3, 3, 6001),
        RNG.uniform(-TAN_3PI_8 * 1.1, TAN_3PI_8 * 1.1, 4000),
        edges,
        10.0 ** RNG.uniform(-320, 308, 3000),
        [2.0**500, 2.0**500 * (1 + 2**-52), 2.0**53, 1e300, np.finfo(float).max, 5e-324, 2.0**-1022],
    ])
    return np.concatenate([x, -x[::7]])


def test_atan_against_mpmath():
    x = _atan_samples()
    got = _values(x)["atan"]
    with mp.workprec(PREC):
        exact = [mp.atan(mp.mpf(float(v))) for v in x]
    _check(got, exact, 1.0)


def test_atanc_against_mpmath():
    x = _atan_samples()
    got = _values(x)["atanc"]
    with mp.workprec(PREC):
        exact = [mp.atan(mp.mpf(float(v))) / mp.mpf(float(v)) if v != 0 else mp.mpf(1) for v in x]
    _check(got, exact, 1.0)


def test_atan2_against_mpmath():
    n = 6000
    y, x = RNG.normal(size=(2, n))
    t = np.concatenate([np.linspace(0, 3, 1501), [TAN_PI_8, TAN_3PI_8]])
    # every quadrant, the pieces' edges, one side far below the other, both huge or subnormal
    ys = np.concatenate([y, t, -t, t, RNG.normal(size=500) * 1e-5, 10.0 ** RNG.uniform(-300, 300, 1000),
                         RNG.uniform(0.5, 1.79, 300) * 1e308, RNG.integers(1, 2**52, 300) * 5e-324])
    xs = np.concatenate([x, np.ones_like(t), -np.ones_like(t), -np.ones_like(t) * 1e-3, RNG.normal(size=500),
                         10.0 ** RNG.uniform(-300, 300, 1000) * RNG.choice([-1, 1], 1000),
                         RNG.uniform(0.5, 1.79, 300) * 1e308 * RNG.choice([-1, 1], 300),
                         RNG.integers(1, 2**52, 300) * 5e-324])
    got = _values(xs, ys)["atan2"]
    with mp.workprec(PREC):
        # (mpmath has no signed zero: y = -0 gives the angle of y = +0 negated)
        exact = [math.copysign(1, b) * mp.atan2(abs(mp.mpf(float(b))), mp.mpf(float(a))) for b, a in zip(ys, xs)]
    _check(got, exact, 1.0)


def test_special_values():
    inf, nan = np.inf, np.nan
    x = np.array([0.0, -0.0, inf, -inf, nan])
    v = _values(x)
    np.testing.assert_array_equal(v["sin"][:2], [0.0, -0.0])
    assert np.signbit(v["sin"][1]) and not np.signbit(v["sin"][0])
    np.testing.assert_array_equal(v["cos"][:2], [1.0, 1.0])
    assert np.isnan(v["sin"][2:]).all() and np.isnan(v["cos"][2:]).all()
    np.testing.assert_array_equal(v["atan"], [0.0, -0.0, np.pi / 2, -np.pi / 2, nan])
    assert np.signbit(v["atan"][1])
    np.testing.assert_array_equal(v["atanc"], [1.0, 1.0, 0.0, 0.0, nan])
    # atan2 of zeros and infinities as numpy's (C99, Annex F), signs of zero included
    ys = np.array([0.0, -0.0, 0.0, -0.0, 1.0, -1.0, 1.0, -1.0, inf, -inf, inf, -inf, inf, 1.0, 1.0, 2.0, nan, 1.0])
    xs = np.array([0.0, 0.0, -0.0, -0.0, 0.0, -0.0, inf, -inf, inf, inf, -inf, -inf, 1.0, -inf, 5e-324, -1e308,
                   1.0, nan])
    got = _values(xs, ys)["atan2"]
    ref = np.arctan2(ys, xs)
    np.testing.assert_array_equal(got, ref)
    np.testing.assert_array_equal(np.signbit(got), np.signbit(ref))


def test_near_variants_are_the_functions_bit_for_bit():
    """sincos_near for |x| 2/pi < 1/2, atanc_near for |x| <= tan(pi/8): the lock-step flows take
    them when every lane is within them, so they must give lane_sincos's and lane_atanc's bits."""
    x = np.concatenate([RNG.uniform(-np.pi / 4, np.pi / 4, 20000), 10.0 ** RNG.uniform(-320, 0, 2000),
                        [0.0, -0.0, np.nextafter(np.pi / 4, 0), -np.nextafter(np.pi / 4, 0)]])
    x = x[np.abs(x) * (2 / np.pi) < 0.5]
    v = _values(x)
    for name in ("sin", "cos"):
        np.testing.assert_array_equal(v[f"{name}_near"].view(np.int64), v[name].view(np.int64))
    x = np.concatenate([RNG.uniform(-TAN_PI_8, TAN_PI_8, 20000), [TAN_PI_8, -TAN_PI_8, 0.0, -0.0, 1e-300]])
    v = _values(x)
    np.testing.assert_array_equal(v["atanc_near"].view(np.int64), v["atanc"].view(np.int64))
