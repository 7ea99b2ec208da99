"""The lane steps of frb.integrate (RK4, the exact-flow splittings, TERZE, SYMROT and MIDPOINT, a chunk of
bodies in lock-step, compiled per SIMD target): the same results bit for bit as the method
families' one-body steps (the lanes turned off through frb._testing), under every SIMD target the
CPU supports, for every batch size and for each body alone; and the orders of RK4, TERZE and
SYMROT against a reference integration of scipy, so that a lane step that is wrong in both forms
fails too."""
import numpy as np
import pytest

import frb
from frb import torques

_testing = pytest.importorskip("frb._testing")

TARGETS = frb.simd.supported_cpu_targets()


pytestmark = pytest.mark.usefixtures("restore_dispatch")


def _bodies(n, seed=5):
    rng = np.random.default_rng(seed)
    m = rng.normal(size=(n, 3))
    m[3] = 0.0                                         # a body at rest
    q = rng.normal(size=(n, 4))
    q /= np.linalg.norm(q, axis=1, keepdims=True)
    inertia = rng.uniform(0.8, 2.6, size=(n, 3))
    inertia[4] = [1.0, 1.0, 2.0]                       # a symmetric body
    return m, q, inertia


TORQUES = {
    "free": None,
    "heavy top": torques.heavy_top(1.0, [0.0, 0.0, 1.0]),
    "field": torques.heavy_top(9.81, [0.1, -0.05, 0.7]),
    "gravity gradient": torques.gravity_gradient(1.3),
    "damping": torques.linear_damping(0.4),
    "sum": (torques.heavy_top(9.81, [0.1, -0.05, 0.7]) + torques.linear_damping(0.2)
            + torques.gravity_gradient(0.7) + torques.rotor([0.1, 0.2, -0.3])),
    "top and gradient": torques.gravity_gradient(0.7) + torques.heavy_top(2.0, [0.0, 0.0, 1.0]),
}
SPLITTINGS = ("STRANG", "YOSHIDA4", "RKN6_14")
# (TERZE takes torques of the attitude alone; the kicks of the momentum of SYMROT and MIDPOINT
# take the one-body step)
LIE_GROUP = ("TERZE", "SYMROT", "MIDPOINT")
CASES = ([("RK4", name) for name in TORQUES]
         + [(method, name) for method in SPLITTINGS
            for name in ("heavy top", "field", "gravity gradient", "top and gradient", "sum")]
         + [(method, name) for method in LIE_GROUP
            for name in ("free", "heavy top", "field", "gravity gradient", "top and gradient")]
         + [("SYMROT", "sum"), ("MIDPOINT", "sum")]
         + [(method, name) for method in ("DMV2", "DMV6")
            for name in ("heavy top", "gravity gradient", "top and gradient", "sum")])


def _run(method, torque, m, q, inertia, n_steps=6, h=0.07, threads=1):
    tr = frb.integrate(m, q, inertia, h, n_steps, method=method, torque=torque, t0=0.3,
                       threads=threads)
    return tr.m, tr.q


def _same(a, b):
    for x, y in zip(a, b):
        np.testing.assert_array_equal(x, y)


@pytest.mark.parametrize("method, torque", CASES)
def test_lanes_give_the_one_body_steps_bit_for_bit_on_every_target(method, torque):
    m, q, inertia = _bodies(70)                        # a chunk of 64 bodies and one of 6
    tq = TORQUES[torque]
    _testing.lane_steps_use(0)
    frb.set_cpu_target("baseline")
    reference = _run(method, tq, m, q, inertia)
    _testing.lane_steps_use(1)
    for target in TARGETS:
        frb.set_cpu_target(target)
        _same(_run(method, tq, m, q, inertia), reference)
        _same(_run(method, tq, m, q, inertia, threads=2), reference)
    # each body alone, and the batch cut in two
    for b in (0, 3, 4, 63, 64, 69):
        _same(_run(method, tq, m[b], q[b], inertia[b]), (reference[0][:, b], reference[1][:, b]))
    parts = [_run(method, tq, m[s], q[s], inertia[s]) for s in (slice(0, 9), slice(9, None))]
    _same([np.concatenate([p[i] for p in parts], axis=1) for i in (0, 1)], reference)


def test_lanes_are_taken():
    """The lane steps change the cost, not the results: RK4 of a heavy top goes through the
    lanes (a splitting and RK4 are both covered), which the switch of frb._testing turns off; a
    run the lanes do not cover (a per-body centre) gives the same bits either way."""
    m, q, inertia = _bodies(20)
    per_body = torques.heavy_top(1.0, np.tile([0.0, 0.0, 1.0], (20, 1)))
    shared = torques.heavy_top(1.0, [0.0, 0.0, 1.0])
    for method in ("RK4", "STRANG", "TERZE", "SYMROT"):
        _same(_run(method, per_body, m, q, inertia), _run(method, shared, m, q, inertia))


def _rk4_reference(m0, q0, inertia, t0, t1, weight):
    """The heavy top of centre e3 by scipy's DOP853 (rtol 1e-13), from the equations written out
    here: m' = m x I^-1 m + T, T = (u2, -u1, 0) weight, u = Q^T e3, q' = q (0, w) / 2."""
    from scipy.integrate import solve_ivp

    def rhs(t, y):
        m, q = y[:3], y[3:]
        w = m / inertia
        q0_, v = q[0], q[1:]
        u = np.array([2 * (v[0] * v[2] - q0_ * v[1]), 2 * (v[1] * v[2] + q0_ * v[0]),
                      1 - 2 * (v[0] ** 2 + v[1] ** 2)])
        tb = weight * np.array([u[1], -u[0], 0.0])
        dq = 0.5 * np.concatenate([[-v @ w], q0_ * w + np.cross(v, w)])
        return np.concatenate([np.cross(m, w) + tb, dq])

    sol = solve_ivp(rhs, (t0, t1), np.concatenate([m0, q0]), method="DOP853", rtol=1e-13,
                    atol=1e-15)
    return sol.y[:3, -1]


def test_rk4_in_lanes_is_of_order_four():
    m, q, inertia = _bodies(9, seed=11)
    top = torques.heavy_top(1.0, [0.0, 0.0, 1.0])
    errors = []
    for nsteps in (20, 40):
        tr = frb.integrate(m, q, inertia, 1.0 / nsteps, nsteps, method="RK4", torque=top,
                           save_every=None)
        reference = np.array([_rk4_reference(m[b], q[b], inertia[b], 0.0, 1.0, 1.0)
                              for b in range(len(m))])
        errors.append(np.max(np.abs(tr.m[-1] - reference)))
    assert errors[1] < 1e-5
    assert 2 ** 3.5 < errors[0] / errors[1] < 2 ** 4.5


def _per_body_torques(n, momentum, body=None):
    """A heavy top with a centre per body (e3 for every third body: field_torque's own form) and a
    gravity gradient, and with momentum a rotor per body and linear damping too; with body, the
    same torque of that body alone (its parameters shared)."""
    rng = np.random.default_rng(8)
    centers = rng.normal(size=(n, 3))
    centers[::3] = [0.0, 0.0, 1.0]
    rotors = rng.normal(size=(n, 3))
    pick = slice(None) if body is None else body
    tq = torques.heavy_top(2.0, centers[pick]) + torques.gravity_gradient(0.7)
    if momentum:
        tq = tq + torques.rotor(rotors[pick]) + torques.linear_damping(0.3)
    return tq


@pytest.mark.parametrize("method", ["RK4", "STRANG", "RKN6_14", *LIE_GROUP, "DMV4"])
def test_lanes_with_torque_parameters_per_body_give_the_one_body_steps(method):
    n = 70
    m, q, inertia = _bodies(n)
    momentum = method == "RK4"
    tq = _per_body_torques(n, momentum)
    _testing.lane_steps_use(0)
    frb.set_cpu_target("baseline")
    reference = _run(method, tq, m, q, inertia)
    _testing.lane_steps_use(1)
    for target in TARGETS:
        frb.set_cpu_target(target)
        _same(_run(method, tq, m, q, inertia), reference)
        _same(_run(method, tq, m, q, inertia, threads=2), reference)
    # bodies alone, their parameters shared
    for b in (0, 1, 66, 69):
        _same(_run(method, _per_body_torques(n, momentum, b), m[b], q[b], inertia[b]),
              (reference[0][:, b], reference[1][:, b]))


@pytest.mark.parametrize("method, torque", [("MIDPOINT", "free"), ("MIDPOINT", "heavy top"),
                                            ("DMV4", "heavy top")])
def test_implicit_steps_in_lanes_fail_where_the_one_body_steps_fail(method, torque):
    """Steps so long that Newton's method of MIDPOINT fails, or DMV's equation (14) has no
    solution, for some bodies (at different iterations and steps): the same failing step and body
    with and without the lanes, on every target."""
    m, q, inertia = _bodies(70, seed=3)
    h = 10.0 if method == "MIDPOINT" else 1.5
    messages = []
    for lanes, target in [(0, "baseline")] + [(1, t) for t in TARGETS]:
        _testing.lane_steps_use(lanes)
        frb.set_cpu_target(target)
        with pytest.raises(frb.IntegrationError) as err:
            _run(method, TORQUES[torque], m, q, inertia, n_steps=3, h=h)
        messages.append(str(err.value))
    assert "did not converge" in messages[0] or "no solution" in messages[0]
    assert all(text == messages[0] for text in messages)


@pytest.mark.parametrize("method", LIE_GROUP)
def test_lie_group_methods_in_lanes_are_of_order_two(method):
    m, q, inertia = _bodies(9, seed=11)
    top = torques.heavy_top(1.0, [0.0, 0.0, 1.0])
    reference = np.array([_rk4_reference(m[b], q[b], inertia[b], 0.0, 1.0, 1.0)
                          for b in range(len(m))])
    errors = []
    for nsteps in (40, 80):
        tr = frb.integrate(m, q, inertia, 1.0 / nsteps, nsteps, method=method, torque=top,
                           save_every=None)
        errors.append(np.max(np.abs(tr.m[-1] - reference)))
    assert errors[1] < 1e-2
    assert 2 ** 1.6 < errors[0] / errors[1] < 2 ** 2.4


_BETA = np.arctan(np.sqrt(2.0))
PYRAMID = np.array([[np.sin(_BETA) * np.cos(a), np.sin(_BETA) * np.sin(a), np.cos(_BETA)]
                    for a in np.radians([45.0, 135.0, 225.0, 315.0])])


@pytest.mark.parametrize("rotating", [False, True])
def test_rk4_with_wheels_in_lanes_gives_the_one_body_steps_bit_for_bit(rotating):
    """RK4 with four wheels and the compiled quaternion feedback (gyroscopic, both limits hit,
    inertia tensors one per body: per-body axes and gains), a slew of 70 bodies."""
    from frb.wheel_laws import quaternion_feedback, rotating_reference

    rng = np.random.default_rng(2)
    n = 70
    J = np.diag([120.0, 100.0, 80.0]) + rng.normal(scale=3.0, size=(n, 3, 3))
    J = 0.5 * (J + np.swapaxes(J, 1, 2))
    m0 = np.einsum("nij,nj->ni", J, rng.normal(scale=0.02, size=(n, 3)))
    q0 = np.tile([1.0, 0.0, 0.0, 0.0], (n, 1))
    q_ref = np.array([np.cos(np.pi / 6), np.sin(np.pi / 6) / np.sqrt(2),
                      np.sin(np.pi / 6) / np.sqrt(2), 0.0])
    if rotating:
        q_ref = rotating_reference(q_ref, [0.0, 0.0, 1e-3])
    law = quaternion_feedback(q_ref, 2.0, 40.0, u_max=0.1, h_max=0.5, gyroscopic=True)

    def run(m, q, inertia):
        tr = frb.integrate(m, q, inertia, 0.5, 120, method="RK4", save_every=40, threads=1,
                           wheels=frb.Wheels(PYRAMID, np.zeros(4)), wheel_law=law)
        return tr.m, tr.q, tr.wheel_momentum

    _testing.lane_steps_use(0)
    frb.set_cpu_target("baseline")
    reference = run(m0, q0, J)
    assert np.abs(reference[2]).max() == 0.5           # a wheel at its momentum limit
    _testing.lane_steps_use(1)
    for target in TARGETS:
        frb.set_cpu_target(target)
        _same(run(m0, q0, J), reference)
    for b in (0, 64, 69):
        _same(run(m0[b], q0[b], J[b]), tuple(r[:, b] for r in reference))
