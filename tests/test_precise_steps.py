"""Single exact steps of bodies with three different moments (asymmetric, nearly symmetric, near
an axis, near the separatrix) at |h| |m| / I_min from 1 to just below the switch to quadruple
precision (64 rad), against the 54-digit Taylor solution of the equations of motion
(tests/reference/make_precise_reference.py, tests/data/reference_precise.npz). Steps beyond
precise_step_threshold (4 rad) form their secular parts (the phase, K, the complete integral of
the angle, the mean part of the angle) in double-double from the inputs: their error does not grow
with the phase."""
import numpy as np
import pytest

import frb
from refdata import load

# (the tests that compute with the flows run under each SIMD target of this CPU, frb.simd)
pytestmark = pytest.mark.usefixtures("each_cpu_target")

REF = load("precise")
# steps well beyond precise_step_threshold (4 rad), all on the double-double path
LONG_PHASE = 8.0


def _errors(m1, q1):
    """Largest error of m/|m| and of the quaternion (either sign) of each case, against hi + lo."""
    u1 = m1 / np.linalg.norm(m1, axis=1)[:, None]
    err_m = np.abs((u1 - REF["u1_hi"]) - REF["u1_lo"]).max(axis=1)
    sign = np.where(np.sum(q1 * REF["q1_hi"], axis=1) < 0, -1.0, 1.0)[:, None]
    err_q = np.abs((sign * q1 - REF["q1_hi"]) - REF["q1_lo"]).max(axis=1)
    return err_m, err_q


def test_single_steps_match_the_taylor_solution_up_to_64_rad():
    m1, q1 = frb.quat_step(REF["m0"], REF["q0"], REF["h"], REF["inertia"])
    err_m, err_q = _errors(m1, q1)
    assert REF["phase"].max() > 60 and REF["phase"].min() < 1.1
    for label in np.unique(REF["label"]):
        cases = REF["label"] == label
        long = cases & (REF["phase"] > LONG_PHASE)
        assert long.sum() >= 5, label
        # measured: at most 6.3e-16 (m) and 1.4e-15 (q) on the double-double path (every family),
        # 1.5e-15 below it
        assert err_m[cases].max() < 3e-15 and err_q[cases].max() < 3e-15, (label, err_m.max(), err_q.max())
        # the error does not grow with the phase (a phase formed in double precision loses about an
        # ulp a radian)
        assert err_m[long].max() < 2e-15 and err_q[long].max() < 2e-15, label


def test_matrix_flow_and_time_reversal():
    Q0 = frb.quat_to_matrix(REF["q0"] / np.linalg.norm(REF["q0"], axis=1)[:, None])
    m1, Q1 = frb.frb_step(REF["m0"], Q0, REF["h"], REF["inertia"])
    m1q, q1 = frb.quat_step(REF["m0"], REF["q0"], REF["h"], REF["inertia"])
    # the same step: the momenta agree bit for bit, the attitudes to the rounding of E(q)
    np.testing.assert_array_equal(m1, m1q)
    assert np.abs(Q1 - frb.quat_to_matrix(q1)).max() < 4e-15
    # (-m0, -h) flows to (-m1, q1)
    m2, q2 = frb.quat_step(-REF["m0"], REF["q0"], -REF["h"], REF["inertia"])
    err_m, err_q = _errors(-m2, q2)
    assert err_m.max() < 3e-15 and err_q.max() < 3e-15


def test_batch_equals_single_bodies_bit_for_bit():
    # the lanes leave the steps beyond the threshold to the one-body flow
    m1, q1 = frb.quat_step(REF["m0"], REF["q0"], REF["h"], REF["inertia"])
    for k in range(0, len(REF["h"]), 3):
        a, b = frb.quat_step(REF["m0"][k], REF["q0"][k], REF["h"][k], REF["inertia"][k])
        np.testing.assert_array_equal(a, m1[k])
        np.testing.assert_array_equal(b, q1[k])
    # a chunk that mixes short steps (lanes) with long ones
    n = 16
    h = REF["h"][:n] * np.where(np.arange(n) % 2 == 0, 1.0, 1e-2)
    m1, q1 = frb.quat_step(REF["m0"][:n], REF["q0"][:n], h, REF["inertia"][:n])
    for k in range(n):
        a, b = frb.quat_step(REF["m0"][k], REF["q0"][k], h[k], REF["inertia"][k])
        np.testing.assert_array_equal(a, m1[k])
        np.testing.assert_array_equal(b, q1[k])


def test_uniform_rotations_about_an_axis_keep_the_angle():
    # m along a principal axis: Q(t) = Q0 exp(t hat(m) / I_a), the angle h |m| / I_a in
    # double-double (the scaled time would carry its rounding times the angle)
    rng = np.random.default_rng(7)
    n = 30
    inertia = np.sort(rng.uniform(0.5, 3.0, (n, 3)), axis=1)
    axis = rng.integers(0, 3, n)
    m = np.zeros((n, 3))
    m[np.arange(n), axis] = rng.normal(size=n) * 10.0 ** rng.uniform(-3, 3, n)
    h = rng.uniform(5, 63.9, n) * inertia[:, 0] / np.abs(m).max(axis=1)
    q0 = np.tile([1.0, 0.0, 0.0, 0.0], (n, 1))
    m1, q1 = frb.quat_step(m, q0, h, inertia)
    np.testing.assert_array_equal(m1, m)
    import mpmath as mp
    with mp.workdps(30):
        for k in range(n):
            a = axis[k]
            angle = mp.mpf(float(h[k])) * abs(mp.mpf(float(m[k, a]))) / mp.mpf(float(inertia[k, a]))
            want = [mp.cos(angle / 2), 0, 0, 0]
            want[1 + a] = mp.sin(angle / 2) * np.sign(m[k, a])
            assert max(abs(float(q1[k, i] - want[i])) for i in range(4)) < 4e-16, k
