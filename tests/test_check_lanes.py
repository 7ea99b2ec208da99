"""The input checks of a batch (fortran/check_lanes.f90, through ``frb._core.check_bodies``) under
every SIMD target this CPU supports: batches of several chunks (4096 bodies a chunk, the last one
partial), with one step and one set of moments for all or one a body, quaternions and rotation
matrices. The code and the first invalid body are compared with the rule body by body
(``_first_bad`` below, numpy), and the scales of a valid batch with numpy's maxima and minima of
the same values (exact: a maximum or minimum is one of its operands; the phase bound is the
largest product |h| max_i |m_i|, each rounded once, over the smallest moment, rounded once).
"""
from __future__ import annotations

import numpy as np
import pytest

import frb
from frb import _core
from frb import _numbers_table as nt

TARGETS = frb.simd.supported_cpu_targets()
N = 2 * 4096 + 37


pytestmark = pytest.mark.usefixtures("restore_dispatch")


def _batch(n, natt, per_body, seed=5):
    rng = np.random.default_rng(seed)
    m = rng.normal(size=(n, 3)) * np.exp(rng.uniform(-30, 30, size=(n, 1)))
    m[7] = 0.0                                       # a body at rest (not among the nonzero)
    q = rng.normal(size=(n, 4))
    q /= np.linalg.norm(q, axis=1)[:, None]
    att = q if natt == 4 else frb.quat_to_matrix(q).transpose(0, 2, 1).reshape(n, 9)
    if per_body:
        h = rng.uniform(-2.0, 2.0, size=n)
        inertia = rng.uniform(0.5, 3.0, size=(n, 3)) * np.exp(rng.uniform(-5, 5, size=(n, 1)))
    else:
        h = np.array([0.75])
        inertia = np.array([[0.8, 1.7, 2.6]])
    return m, att, h, inertia


def _check(m, att, h, inertia):
    extremes = np.zeros(nt.CHECK_EXTREMES)
    code, body, _ = _core.check_bodies(np.asfortranarray(m.T), np.asfortranarray(att.T),
                                       np.ascontiguousarray(h), np.asfortranarray(inertia.T), 1,
                                       extremes)
    return int(code), int(body), extremes


def _expected_extremes(m, h, inertia):
    bm = np.max(np.abs(m), axis=1)
    imin = np.min(inertia)
    hb = np.abs(np.broadcast_to(h, (len(m),)))
    return np.array([bm.max(), bm[bm > 0].min(), imin, np.max(inertia), np.max(hb * bm) / imin])


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("natt", [4, 9])
@pytest.mark.parametrize("per_body", [False, True])
def test_valid_batch_scales_are_numpys(target, natt, per_body):
    frb.set_cpu_target(target)
    m, att, h, inertia = _batch(N, natt, per_body)
    code, body, extremes = _check(m, att, h, inertia)
    assert (code, body) == (nt.INPUT_OK, -1)
    np.testing.assert_array_equal(extremes, _expected_extremes(m, h, inertia))


@pytest.mark.parametrize("target", TARGETS)
def test_factor_beyond_the_clamp_in_a_valid_batch(target):
    """A valid body with |h| = 2^600 (its momentum 2^-640): the pass leaves it to the checks body by
    body, and the phase bound is taken body by body (no product of the clamped factors)."""
    frb.set_cpu_target(target)
    m, att, h, inertia = _batch(N, 4, True)
    m[5000] = [2.0**-640, 0.0, 0.0]
    h[5000] = 2.0**600
    code, body, extremes = _check(m, att, h, inertia)
    assert (code, body) == (nt.INPUT_OK, -1)
    np.testing.assert_array_equal(extremes, _expected_extremes(m, h, inertia))


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("natt", [4, 9])
def test_first_invalid_body_over_chunks(target, natt):
    """Invalid bodies in the second and third chunks: the first (smallest index) is reported with its
    own code, whichever chunk is checked first."""
    frb.set_cpu_target(target)
    bad_att = nt.BAD_QUATERNION if natt == 4 else nt.BAD_ROTATION
    cases = [
        ({"m": (8210, [np.nan, 0.0, 0.0]), "att": (4200, "scaled")}, (bad_att, 4200)),
        ({"m": (4100, [0.0, np.inf, 0.0]), "att": (8200, "scaled")}, (nt.BAD_M, 4100)),
        ({"inertia": (5000, [1.0, -0.0, 2.0]), "m": (6000, [np.nan] * 3)},
         (nt.BAD_INERTIA_SIGN, 5000)),
        ({"att": (N - 1, "nan")}, (nt.BAD_ATTITUDE_VALUE, N - 1)),
        ({"h": (4096, np.inf)}, (nt.BAD_H, 4096)),
    ]
    for changes, expected in cases:
        m, att, h, inertia = _batch(N, natt, True)
        for what, (j, value) in changes.items():
            if what == "m":
                m[j] = value
            elif what == "inertia":
                inertia[j] = value
            elif what == "h":
                h[j] = value
            elif value == "scaled":
                att[j] *= 1.01                        # off the unit sphere / not orthogonal
            else:
                att[j, 2] = np.nan
        assert _check(m, att, h, inertia)[:2] == expected, changes
