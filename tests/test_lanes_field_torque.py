"""RK4 and TERZE in lanes with a torque of one field term (a constant field, heavy tops with the
centre on the third axis and off it), which the RK4 lanes evaluate inside their stage passes:
the same results bit for bit as the one-body steps under every SIMD target, also for bodies with
signed zeros in the state; and the analytic rest of a top hanging straight down."""
import numpy as np
import pytest

import frb
from frb import torques

_testing = pytest.importorskip("frb._testing")

TARGETS = frb.simd.supported_cpu_targets()
FIELDS = {
    "constant field": torques.constant_field([0.3, -1.2, 0.8]),
    "top on the axis": torques.heavy_top(2.5, [0.0, 0.0, 0.4]),
    "top off the axis": torques.heavy_top(9.81, [0.2, 0.0, -0.3]),
}


pytestmark = pytest.mark.usefixtures("restore_dispatch")


def _bodies(n, seed=11):
    rng = np.random.default_rng(seed)
    m = rng.normal(size=(n, 3))
    q = rng.normal(size=(n, 4))
    q /= np.linalg.norm(q, axis=1, keepdims=True)
    inertia = rng.uniform(0.8, 2.6, size=(n, 3))
    m[2] = [-0.0, 0.0, -0.0]                           # at rest, signed zeros
    q[2] = [1.0, -0.0, 0.0, -0.0]
    m[5] = [0.0, -0.0, 1.5]                            # spinning about the third axis
    q[5] = [-0.0, 1.0, -0.0, 0.0]
    inertia[7] = [1.0, 1.0, 2.0]
    return m, q, inertia


def _run(method, torque, m, q, inertia):
    tr = frb.integrate(m, q, inertia, 0.06, 5, method=method, torque=torque, t0=0.2, threads=1)
    return tr.m, tr.q


@pytest.mark.parametrize("method", ["RK4", "TERZE"])
@pytest.mark.parametrize("field", FIELDS)
def test_field_torques_in_lanes_give_the_one_body_steps_bit_for_bit(method, field):
    m, q, inertia = _bodies(67)                        # a chunk of 64 bodies and one of 3
    _testing.lane_steps_use(0)
    frb.set_cpu_target("baseline")
    ref_m, ref_q = _run(method, FIELDS[field], m, q, inertia)
    _testing.lane_steps_use(1)
    for target in TARGETS:
        frb.set_cpu_target(target)
        got_m, got_q = _run(method, FIELDS[field], m, q, inertia)
        # (the bits, signs of zeros included)
        assert got_m.tobytes() == ref_m.tobytes(), target
        assert got_q.tobytes() == ref_q.tobytes(), target


@pytest.mark.parametrize("method", ["RK4", "TERZE"])
def test_a_top_hanging_straight_down_stays_at_rest(method):
    """Centre of mass on the third axis below the fixed point, the body at rest with its third
    axis vertical: T_b = weight (Q^T e_z) x c = 0 at every stage, so m stays 0 and Q the
    identity (in lanes, beside moving bodies of the same chunk)."""
    m, q, inertia = _bodies(64)
    top = torques.heavy_top(3.0, [0.0, 0.0, -0.5])
    tr = frb.integrate(m, q, inertia, 0.05, 8, method=method, torque=top, threads=1)
    np.testing.assert_array_equal(tr.m[:, 2], 0.0)
    np.testing.assert_array_equal(np.abs(tr.q[:, 2]), np.tile([1.0, 0.0, 0.0, 0.0], (9, 1)))
    assert np.all(np.abs(tr.m[-1, 0] - m[0]) > 0.0)   # a moving body of the chunk moved
