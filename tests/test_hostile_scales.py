"""The compiled input checks (fortran/checks.f90, through ``frb._core.check_bodies``) at the ends
of the floating-point range: the phase limit |h| |m| / I_min <= PHASE_LIMIT decided just below and
just above it, for |m|, I_min and h from subnormal to beyond huge (|m| of three components near
1e308 exceeds the largest double), and NaN and infinities, each decision compared with the exact
rational arithmetic of the same floating-point inputs (fractions, mpmath for |m|); and no
floating-point exception (invalid, division by zero, overflow) raised on the way, read from the
floating-point environment's flags (glibc's fetestexcept).
"""
from __future__ import annotations

import ctypes
import ctypes.util
import math
import platform
import sys
from fractions import Fraction

import mpmath
import numpy as np
import pytest

from frb import _core
from frb import _numbers_table as nt

LIMIT = nt.PHASE_LIMIT
HUGE = sys.float_info.max
# x86-64 glibc <fenv.h>
FE_INVALID, FE_DIVBYZERO, FE_OVERFLOW = 0x01, 0x04, 0x08
FE_ALL_EXCEPT = 0x3D
TRAPPED = FE_INVALID | FE_DIVBYZERO | FE_OVERFLOW

_on_glibc_x86 = platform.system() == "Linux" and platform.machine() in ("x86_64", "AMD64")
_libm = ctypes.CDLL(ctypes.util.find_library("m")) if _on_glibc_x86 else None


def _check(m, att, h, inertia, threads=1):
    """(code, body from 0, extremes, flags raised) of check_bodies on the bodies m (n, 3),
    attitudes att (n, 4 or 9), h (n or 1) and inertia (n or 1, 3)."""
    m = np.asfortranarray(np.atleast_2d(np.asarray(m, dtype=float)).T)
    att = np.asfortranarray(np.atleast_2d(np.asarray(att, dtype=float)).T)
    h = np.ascontiguousarray(np.atleast_1d(np.asarray(h, dtype=float)))
    inertia = np.asfortranarray(np.atleast_2d(np.asarray(inertia, dtype=float)).T)
    extremes = np.zeros(nt.CHECK_EXTREMES)
    flags = 0
    if _libm is not None:
        _libm.feclearexcept(FE_ALL_EXCEPT)
    code, body, _ = _core.check_bodies(m, att, h, inertia, threads, extremes)
    if _libm is not None:
        flags = _libm.fetestexcept(TRAPPED)
        _libm.feclearexcept(FE_ALL_EXCEPT)
    return int(code), int(body), extremes, flags


def _assert_no_exception(flags):
    if _on_glibc_x86:
        assert flags == 0, f"floating-point exception flags raised: {flags:#x}"


def _exact_beyond(m, h, imin) -> bool:
    """|h| |m| > LIMIT imin in exact arithmetic of the given doubles (squared: no square root)."""
    m2 = sum(Fraction(x) ** 2 for x in m)
    return Fraction(h) ** 2 * m2 > (Fraction(LIMIT) * Fraction(imin)) ** 2


def _norm(m) -> mpmath.mpf:
    with mpmath.workdps(60):
        return mpmath.sqrt(sum(mpmath.mpf(x) ** 2 for x in m))


QUAT = [1.0, 0.0, 0.0, 0.0]
# |m| from 1e-300 to beyond huge (three components of 1.5e308: |m| = 2.6e308), on an axis and
# along (1, 1, 1); the smallest moment from subnormal to huge
M_CASES = [[1e-300, 0, 0], [3e-5, -4e-5, 0], [1.0, 1.0, 1.0], [0, 0, -1e150],
           [1e300, -2e300, 2e300], [1.7e308, 0, 0], [1.5e308, 1.5e308, -1.5e308]]
I_CASES = [5e-324, 1e-310, 1e-5, 1.0, 1e200, 1e300, 1.7e308]


def _limit_step(m, imin, relative) -> float:
    """The step h = relative LIMIT imin / |m| (60 digits, then rounded to a double)."""
    with mpmath.workdps(60):
        return float(mpmath.mpf(LIMIT) * mpmath.mpf(imin) / _norm(m) * relative)


# the (m, I_min) whose step at the limit is a normal double
LIMIT_CASES = [(m, imin) for m in M_CASES for imin in I_CASES
               if sys.float_info.min <= _limit_step(m, imin, 1.0) <= HUGE / 2]


@pytest.mark.parametrize("relative", [1 - 1e-9, 1 + 1e-9])
@pytest.mark.parametrize("m, imin", LIMIT_CASES)
def test_phase_limit_decided_on_both_sides_without_overflow(m, imin, relative):
    h = _limit_step(m, imin, relative)
    inertia = [imin, imin, imin]
    expected = nt.BAD_PHASE if _exact_beyond(m, h, imin) else nt.INPUT_OK
    assert expected == (nt.BAD_PHASE if relative > 1 else nt.INPUT_OK)
    for att, hh in ((QUAT, h), (np.eye(3).ravel(), -h)):
        code, body, _, flags = _check([m], [att], [hh], [inertia])
        assert code == expected, (m, imin, hh)
        assert body == (0 if expected else -1)
        _assert_no_exception(flags)


@pytest.mark.parametrize("k", [-960, -20, 0, 400, 1000])
def test_phase_exactly_at_the_limit_is_accepted_and_the_next_double_refused(k):
    # m = (2^k, 0, 0), I = 2^-30, h = LIMIT 2^(-30-k): |h| |m| = LIMIT I exactly (1e18 = 2^18 5^18
    # is a double); the next double of h is beyond
    m = [math.ldexp(1.0, k), 0.0, 0.0]
    imin = math.ldexp(1.0, -30)
    h = math.ldexp(LIMIT, -30 - k)
    for hh, expected in ((h, nt.INPUT_OK), (math.nextafter(h, math.inf), nt.BAD_PHASE),
                         (math.nextafter(h, 0.0), nt.INPUT_OK)):
        assert _exact_beyond(m, hh, imin) == (expected == nt.BAD_PHASE)
        code, _, _, flags = _check([m], [QUAT], [hh], [[imin, 1.0, 2.0]])
        assert code == expected, (k, hh)
        _assert_no_exception(flags)


def test_zero_step_or_zero_momentum_is_never_beyond_the_limit():
    for m, h in (([1.5e308, 1.5e308, 1.5e308], 0.0), ([0.0, 0.0, 0.0], HUGE),
                 ([5e-324, 0.0, 0.0], 1e300)):
        code, _, extremes, flags = _check([m], [QUAT], [h], [[5e-324, 1.0, 1.0]])
        assert code == (nt.INPUT_OK if _exact_beyond(m, h, 5e-324) is False else nt.BAD_PHASE)
        _assert_no_exception(flags)
    # 5e-324 * 1e300 / 5e-324 = 1e300 > LIMIT: the last one is refused
    assert code == nt.BAD_PHASE


NAN, INF = math.nan, math.inf


@pytest.mark.parametrize("m, att, h, inertia, expected", [
    ([NAN, 0, 0], QUAT, 0.1, [1, 2, 3], nt.BAD_M),
    ([1, -INF, 0], QUAT, 0.1, [1, 2, 3], nt.BAD_M),
    ([1, 0, 0], QUAT, NAN, [1, 2, 3], nt.BAD_H),
    ([1, 0, 0], QUAT, -INF, [1, 2, 3], nt.BAD_H),
    ([1, 0, 0], QUAT, 0.1, [1, NAN, 3], nt.BAD_INERTIA_VALUE),
    ([1, 0, 0], QUAT, 0.1, [INF, 2, 3], nt.BAD_INERTIA_VALUE),
    ([1, 0, 0], QUAT, 0.1, [1, -5e-324, 3], nt.BAD_INERTIA_SIGN),
    ([1, 0, 0], QUAT, 0.1, [1, 0.0, 3], nt.BAD_INERTIA_SIGN),
    ([1, 0, 0], [NAN, 0, 0, 0], 0.1, [1, 2, 3], nt.BAD_ATTITUDE_VALUE),
    ([1, 0, 0], [1, 0, INF, 0], 0.1, [1, 2, 3], nt.BAD_ATTITUDE_VALUE),
    ([1, 0, 0], [1e308, 1e308, 0, 0], 0.1, [1, 2, 3], nt.BAD_QUATERNION),
    ([1, 0, 0], [-HUGE, 0, 0, 0], 0.1, [1, 2, 3], nt.BAD_QUATERNION),
    ([1, 0, 0], [2.0, 0, 0, 0], 0.1, [1, 2, 3], nt.BAD_QUATERNION),
    ([1, 0, 0], [5e-324, 0, 0, 0], 0.1, [1, 2, 3], nt.BAD_QUATERNION),
    ([1, 0, 0], [1 + 2e-10, 0, 0, 0], 0.1, [1, 2, 3], nt.BAD_QUATERNION),
    ([1, 0, 0], [1 + 5e-11, 0, 0, 0], 0.1, [1, 2, 3], nt.INPUT_OK),
    ([1, 0, 0], [1, 0, 0, 0, 1e308, 0, 0, 0, 1], 0.1, [1, 2, 3], nt.BAD_ROTATION),
    ([1, 0, 0], [1, 0, 0, 0, 1, 0, 0, 0, -HUGE], 0.1, [1, 2, 3], nt.BAD_ROTATION),
    ([1, 0, 0], [1, 0, 0, 0, NAN, 0, 0, 0, 1], 0.1, [1, 2, 3], nt.BAD_ATTITUDE_VALUE),
    ([1, 0, 0], [1, 0, 0, 0, 1, 0, 0, 0, -1], 0.1, [1, 2, 3], nt.BAD_ROTATION),
    ([1, 0, 0], [1, 0, 0, 0, 1, 0, 0, 0, 1 + 2e-10], 0.1, [1, 2, 3], nt.BAD_ROTATION),
    ([1e308, 1e308, 1e308], QUAT, 1e308, [1, 2, 3], nt.BAD_PHASE),
    ([1e308, 1e308, 1e308], QUAT, 1e-300, [1e308, 1e308, 1e308], nt.INPUT_OK),
    ([5e-324, 0, 0], QUAT, 5e-324, [5e-324, 5e-324, 5e-324], nt.INPUT_OK),
    ([1, 0, 0], QUAT, 1.0, [5e-324, 1, 1], nt.BAD_PHASE),
])
def test_hostile_values_get_their_code_without_a_floating_point_exception(m, att, h, inertia,
                                                                          expected):
    # the same body alone (the body-by-body checks) and in a batch of valid bodies, at its end
    # of a first chunk of 4096 and at the start of the second (the vectorised pass of a chunk)
    code, body, _, flags = _check([m], [att], [h], [inertia])
    assert (code, body) == (expected, 0 if expected else -1)
    _assert_no_exception(flags)
    n = 4100
    ms = np.tile([0.3, -0.5, 0.8], (n, 1))
    atts = np.tile(np.eye(3).ravel() if len(att) == 9 else QUAT, (n, 1))
    hs = np.full(n, 0.25)
    inertias = np.tile([1.0, 2.0, 3.0], (n, 1))
    for where in (4095, 4096):
        ms2, atts2, hs2, inertias2 = ms.copy(), atts.copy(), hs.copy(), inertias.copy()
        ms2[where], atts2[where], hs2[where], inertias2[where] = m, att, h, inertia
        code, body, _, flags = _check(ms2, atts2, hs2, inertias2, threads=2)
        assert (code, body) == (expected, where if expected else -1)
        _assert_no_exception(flags)


def _exact_phase_bound(ms, hs, inertias) -> float:
    """The scales' phase bound of check_bodies in exact arithmetic, rounded once: the largest
    |h| max_i |m_i| over the smallest moment of the batch (huge beyond)."""
    imin = min(Fraction(float(x)) for x in np.ravel(inertias))
    bound = max(Fraction(abs(float(h))) * max(Fraction(abs(float(x))) for x in m)
                for m, h in zip(ms, hs)) / imin
    return HUGE if bound > Fraction(HUGE) else float(bound)


@pytest.mark.parametrize("ms, hs, inertias", [
    # valid bodies whose |h| max|m_i| exceeds huge while the phase is 1e10
    ([[1e300, 0, 0]], [1e10], [[1e300, 2e300, 3e300]]),
    ([[1.5e308, -1.5e308, 1.5e308]], [1e-10], [[1e300, 1e300, 1e300]]),
    # a large product over a tiny moment of another body: beyond huge, capped
    ([[1e300, 0, 0], [1e-300, 0, 0]], [1e10, 1.0], [[1e300, 1e300, 1e300], [1e-300, 1, 1]]),
    # the usual scales: the plain quotient
    ([[0.3, 0.5, -0.8], [2.0, 0, 0]], [0.1, 0.7], [[1.0, 2.0, 3.0], [0.5, 1.0, 1.0]]),
    # a tiny moment: the plain product, then a quotient beyond huge
    ([[1e200, 0, 0], [1e-300, 0, 0]], [1e100, 1e-10], [[1e300, 1e300, 1e300], [1e-300, 1, 1]]),
])
def test_phase_bound_of_the_scales(ms, hs, inertias):
    code, _, extremes, flags = _check(ms, [QUAT] * len(ms), hs, inertias)
    assert code == nt.INPUT_OK
    _assert_no_exception(flags)
    expected = _exact_phase_bound(ms, hs, inertias)
    assert extremes[4] == pytest.approx(expected, rel=4e-16, abs=0)
    assert extremes[0] == max(max(abs(x) for x in m) for m in ms)
    assert extremes[2] == min(min(i) for i in inertias)
