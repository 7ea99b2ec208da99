"""Very long steps, extreme ratios of the moments, subnormal scales: against the Taylor reference
(tests/reference/make_long_reference.py: the period of the momentum and the attitude's turn per
period, so that steps up to |h| |m| / I_min = 1e18 need only one period of integration), and the
refusal of longer steps."""
import numpy as np
import pytest

import frb
from frb._validate import PHASE_LIMIT

from refdata import load

# (the tests that compute with the flows run under each SIMD target of this CPU, frb.simd)
per_target = pytest.mark.usefixtures("each_cpu_target")

REF = load("long")


def _errors(m, Q, k):
    """Largest error of m relative to |m| (beyond the spacing of subnormal numbers) and of Q."""
    g = np.abs(REF["m1"][k]).max()
    em = max(np.abs(m - REF["m1"][k]).max() - 2.0**-1074, 0.0) / g
    return em, np.abs(Q - REF["Q1"][k]).max()


@per_target
@pytest.mark.parametrize("k", range(len(REF["h"])), ids=[str(x) for x in REF["label"]])
def test_against_reference(k):
    m0, Q0, inertia, h = REF["m0"][k], REF["Q0"][k], REF["inertia"][k], REF["h"][k]
    # measured (both flows, both signs of h): largest 2.2e-16 (m) and 6.7e-16 (Q) at phases
    # from 1e3 to 7.2e17; 4.7e-16 and 1.2e-15 for the extreme moments and subnormal scales
    tol = 4e-15
    em, eq = _errors(*frb.frb_step(m0, Q0, h, inertia), k)
    assert em <= tol and eq <= tol, (em, eq)
    # time reversal: (-m0, -h) flows to (-m1, Q1)
    m, Q = frb.frb_step(-m0, Q0, -h, inertia)
    em, eq = _errors(-m, Q, k)
    assert em <= tol and eq <= tol, (em, eq)
    q0 = frb.matrix_to_quat(Q0)
    m, q = frb.quat_step(m0, q0, h, inertia)
    em, eq = _errors(m, frb.quat_to_matrix(q), k)
    assert em <= tol and eq <= tol, (em, eq)


@per_target
def test_batch_equals_single_bodies_bit_for_bit():
    # the lock-step lanes send extreme ratios and long steps to the single-body paths
    m0, Q0, inertia, h = REF["m0"], REF["Q0"], REF["inertia"], REF["h"]
    mb, Qb = frb.frb_step(m0, Q0, h, inertia)
    for k in range(len(h)):
        m, Q = frb.frb_step(m0[k], Q0[k], h[k], inertia[k])
        assert np.array_equal(m, mb[k]) and np.array_equal(Q, Qb[k])


def _body(phase):
    m0, inertia = np.array([-0.212, 0.504, 1.139]), np.array([2.44, 1.56, 2.80])
    return m0, inertia, phase * inertia.min() / np.linalg.norm(m0)


@pytest.mark.parametrize("call", [
    lambda m, I, h: frb.frb_step(m, np.eye(3), h, I),
    lambda m, I, h: frb.quat_step(m, [1.0, 0, 0, 0], h, I),
    lambda m, I, h: frb.frb_step(np.tile(m, (3, 1)), np.tile(np.eye(3), (3, 1, 1)), [0.1, h, 0.1], I),
    lambda m, I, h: frb.splitting.integrate(m, np.eye(3), I, h, 2),
    lambda m, I, h: frb.splitting.integrate(m, np.eye(3), I, 2 * h, 2, method="STRANG",
                                            torque=frb.torques.constant_field([0, 0, 1.0])),
    lambda m, I, h: frb.integrate(m, [1.0, 0, 0, 0], I, h, 2, method="EXACT"),
    lambda m, I, h: frb.integrate(np.tile(m, (2, 1)), np.tile(np.eye(3), (2, 1, 1)), I, h, 2,
                                  method="RKN6_14"),
], ids=["frb_step", "quat_step", "batch", "splitting free", "splitting field", "integrate",
        "integrate batch"])
def test_steps_beyond_the_limit_are_refused(call):
    m0, inertia, h = _body(PHASE_LIMIT * 1.01)
    with pytest.raises(ValueError, match=r"h.* is too long.*1\.01e\+18 exceeds 1e\+18 radians"):
        call(m0, inertia, h)
    m0, inertia, h = _body(PHASE_LIMIT * 0.99)
    if "constant_field" not in call.__code__.co_names and "batch" not in str(call):
        res = call(m0, inertia, h)
        arrays = res if isinstance(res, tuple) else (res.m, res.t)
        assert all(np.isfinite(a).all() for a in arrays)


@pytest.mark.parametrize("args", [
    # |m| grown by 5e73, and a step 26% off
    ([-0.212, 0.504, 1.139], np.eye(3), 6.0e114, [2.44, 1.56, 2.80]),
    ([0.3, 0.5, 0.8], np.eye(3), 0.1, 1e-177 * np.array([1.0, 2.0, 3.0])),
    ([1.0, 1.0, 1.0], np.eye(3), 1e300, [1.0, 1.0, 1.0]),       # the sphere: a plain rotation
    ([1e308, 1e308, 1e308], np.eye(3), 1.0, [1.0, 2.0, 3.0]),   # |h| |m| overflows
])
def test_steps_whose_angle_leaves_the_limit_are_refused(args):
    with pytest.raises(ValueError, match="h is too long"):
        frb.frb_step(*args)


def test_batch_message_names_the_body():
    m = np.array([[0.3, 0.5, 0.8]] * 4)
    h = np.array([0.1, 0.1, 1e30, 0.1])
    with pytest.raises(ValueError, match=r"too long \(body 2\)"):
        frb.quat_step(m, np.tile([1.0, 0, 0, 0], (4, 1)), h, [1.0, 2.0, 3.0])
    with pytest.raises(ValueError, match=r"too long \(body 2\)"):
        frb.integrate(m * np.array([[1], [1], [1e30], [1]]), np.tile([1.0, 0, 0, 0], (4, 1)),
                      [1.0, 2.0, 3.0], 0.1, 2, method="RK4")


@per_target
@pytest.mark.filterwarnings("ignore:overflow encountered")   # the field's own, before the error
def test_compiled_splitting_loop_reports_the_first_non_finite_step():
    # constant_field([1e308] * 3), h = 10: the compiled loop reports the non-finite state
    field = frb.splitting.constant_field([1e308] * 3)
    with pytest.raises(frb.IntegrationError, match=r"non-finite at step 1 \(\|m\| = 0.99 at step 0\): an overflow") as info:
        frb.splitting.integrate([0.3, 0.5, 0.8], np.eye(3), [1.0, 2.0, 3.0], 10.0, 5, torque=field)
    assert info.value.step == 1
    # kept states every 2 steps: the step is bracketed
    with pytest.raises(frb.IntegrationError, match=r"non-finite between steps 0 and 2"):
        frb.splitting.integrate([0.3, 0.5, 0.8], np.eye(3), [1.0, 2.0, 3.0], 10.0, 5, torque=field,
                                save_every=2)
    # the Python loop with the same flow as a plain callable: the torque is named
    with pytest.raises(ValueError, match=r"torque .*step 1.* non-finite m"):
        frb.splitting.integrate([0.3, 0.5, 0.8], np.eye(3), [1.0, 2.0, 3.0], 1e3, 5,
                                torque=lambda m, Q, t: field(m, Q, t))
    # ... or the free flow after it, beyond the phase limit
    with pytest.raises(frb.IntegrationError, match=r"free flow of step 1 failed: h is too long"):
        frb.splitting.integrate([0.3, 0.5, 0.8], np.eye(3), [1.0, 2.0, 3.0], 10.0, 5,
                                torque=lambda m, Q, t: field(m, Q, t))
    # |m| grown by the field (its potential is 1e300) beyond the phase limit: the step is named
    field = frb.splitting.constant_field([0.0, 1e300, 0.0])
    with pytest.raises(frb.IntegrationError, match=r"non-finite at step 1 .*turn the body by more "
                                                   r"than 1e\+18 radians") as info:
        frb.splitting.integrate([0.3, 0.5, 0.8], np.eye(3), [1.0, 1.0, 1.0], 1.0, 100,
                                torque=field, method="STRANG")
    assert info.value.step == 1
    # frb.integrate's loops say it too
    with pytest.raises(frb.IntegrationError, match="non-finite at step 1"):
        frb.integrate([0.3, 0.5, 0.8], np.eye(3), [1.0, 2.0, 3.0], 10.0, 5, method="STRANG",
                      torque=frb.torques.constant_field([1e308] * 3))
