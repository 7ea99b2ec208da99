"""The implicit methods of Krysl 2008 (TRAP, IMID, TRAPM, IMIDM, SWC1, AKW, BBTRAP, BBTRAPWD) in
lock-step lanes: each lane runs the one-body Newton iteration and stops where it stops, so the
results are the one-body steps' (the lanes turned off through frb._testing) bit for bit under
every SIMD target the CPU supports, for every batch size and for each body alone, with the same
failing step and body where Newton's method fails; and their order against a reference
integration of scipy, so that a lane step that is wrong in both forms fails too."""
import numpy as np
import pytest

import frb
from frb import torques

_testing = pytest.importorskip("frb._testing")

TARGETS = frb.simd.supported_cpu_targets()
KRYSL = ("TRAP", "IMID", "TRAPM", "IMIDM", "SWC1", "AKW", "BBTRAP", "BBTRAPWD")


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
    "gravity gradient": torques.gravity_gradient(1.3),
    "field and gradient": torques.heavy_top(9.81, [0.1, -0.05, 0.7]) + torques.gravity_gradient(0.7),
}


def _run(method, torque, m, q, inertia, n_steps=5, h=0.07, threads=1):
    tr = frb.integrate(m, q, inertia, h, n_steps, method=method, torque=torque, t0=0.3,
                       threads=threads)
    return tr.m, tr.q


def _same(a, b):
    for x, y in zip(a, b):
        np.testing.assert_array_equal(x, y)


def _one_body_reference(run):
    _testing.lane_steps_use(0)
    frb.set_cpu_target("baseline")
    reference = run()
    _testing.lane_steps_use(1)
    return reference


@pytest.mark.parametrize("torque", list(TORQUES))
@pytest.mark.parametrize("method", KRYSL)
def test_implicit_lanes_give_the_one_body_steps_bit_for_bit_on_every_target(method, torque):
    m, q, inertia = _bodies(70)                        # a chunk of 64 bodies and one of 6
    tq = TORQUES[torque]
    reference = _one_body_reference(lambda: _run(method, tq, m, q, inertia))
    for target in TARGETS:
        frb.set_cpu_target(target)
        _same(_run(method, tq, m, q, inertia), reference)
    _same(_run(method, tq, m, q, inertia, threads=2), reference)
    # each body alone, and the batch cut in two
    for b in (0, 3, 4, 69):
        _same(_run(method, tq, m[b], q[b], inertia[b]), (reference[0][:, b], reference[1][:, b]))
    parts = [_run(method, tq, m[s], q[s], inertia[s]) for s in (slice(0, 9), slice(9, None))]
    _same([np.concatenate([p[i] for p in parts], axis=1) for i in (0, 1)], reference)


@pytest.mark.parametrize("method", ["TRAP", "AKW", "BBTRAPWD"])
def test_implicit_lanes_with_torque_parameters_per_body_give_the_one_body_steps(method):
    """A heavy top with a centre per body and a gravity gradient; with each body alone, the same
    torque with its parameters shared."""
    n = 70
    m, q, inertia = _bodies(n)
    rng = np.random.default_rng(8)
    centers = rng.normal(size=(n, 3))

    def torque(pick):
        return torques.heavy_top(2.0, centers[pick]) + torques.gravity_gradient(0.7)

    reference = _one_body_reference(lambda: _run(method, torque(slice(None)), m, q, inertia))
    for target in TARGETS:
        frb.set_cpu_target(target)
        _same(_run(method, torque(slice(None)), m, q, inertia), reference)
    for b in (0, 1, 66):
        _same(_run(method, torque(b), m[b], q[b], inertia[b]),
              (reference[0][:, b], reference[1][:, b]))


@pytest.mark.parametrize("method, torque", [("TRAP", "heavy top"), ("IMID", "free"),
                                            ("AKW", "field and gradient"), ("TRAPM", "heavy top"),
                                            ("BBTRAPWD", "free")])
def test_implicit_lanes_fail_where_the_one_body_steps_fail(method, torque):
    """Steps so long that Newton's method fails for some bodies (at different iterations and
    steps): the same failing step, body and report with and without the lanes, on every
    target."""
    m, q, inertia = _bodies(70, seed=3)
    m *= 30.0
    messages = []
    for lanes, target in [(0, "baseline")] + [(1, t) for t in TARGETS]:
        _testing.lane_steps_use(lanes)
        frb.set_cpu_target(target)
        with pytest.raises(frb.IntegrationError) as err:
            _run(method, TORQUES[torque], m, q, inertia, n_steps=3, h=2.0)
        messages.append(str(err.value))
    assert any(words in messages[0] for words in ("did not converge", "no solution",
                                                  "non-finite"))
    assert all(text == messages[0] for text in messages)


def _heavy_top_reference(m0, q0, inertia, t1, weight):
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

    sol = solve_ivp(rhs, (0.0, t1), np.concatenate([m0, q0]), method="DOP853", rtol=1e-13,
                    atol=1e-15)
    return sol.y[:3, -1]


@pytest.mark.parametrize("method", KRYSL)
def test_implicit_methods_in_lanes_are_of_order_two(method):
    m, q, inertia = _bodies(9, seed=11)
    top = torques.heavy_top(1.0, [0.0, 0.0, 1.0])
    reference = np.array([_heavy_top_reference(m[b], q[b], inertia[b], 1.0, 1.0)
                          for b in range(len(m))])
    errors = []
    for nsteps in (40, 80):
        tr = frb.integrate(m, q, inertia, 1.0 / nsteps, nsteps, method=method, torque=top,
                           save_every=None)
        errors.append(np.max(np.abs(tr.m[-1] - reference)))
    assert errors[1] < 1e-2
    assert 2 ** 1.6 < errors[0] / errors[1] < 2 ** 2.4
