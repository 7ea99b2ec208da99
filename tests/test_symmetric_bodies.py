"""Symmetric bodies at long steps, the invariants of many steps from one state, and the drift of
chained exact steps.

* Symmetric bodies (two equal moments, on any two axes) at |h| |m| / I_min up to just below the
  switch to quadruple precision, against the 40-digit closed form of the free symmetric top
  (tests/reference/make_symmetric_reference.py, tests/data/reference_symmetric.npz).
* Single steps from one state to 1000 times: |m| and the energy of the returned states,
  evaluated in double precision, spread by a few ulps (the same evaluations of the correctly
  rounded exact states spread by 2 and 5 ulps).
* 1e5 chained exact steps (h = 0.1) of 16 random free bodies: |m|, the energy and Q m drift by no
  more than the random walk of the rounding (the rounding of the orbit's constants, the same at
  every step, would drift them by about 0.25 ulp a step, 2e-12 over the run).
"""
import os

import numpy as np
import pytest

import frb

DATA = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data", "reference_symmetric.npz")


@pytest.fixture(scope="module")
def ref():
    with np.load(DATA, allow_pickle=False) as f:
        return {k: f[k] for k in f.files}


def test_symmetric_bodies_match_the_closed_form_at_every_angle(ref):
    m1, q1 = frb.quat_step(ref["m0"], ref["q0"], ref["h"], ref["inertia"])
    u1 = m1 / np.linalg.norm(m1, axis=1)[:, None]
    err_m = np.abs((u1 - ref["u1_hi"]) - ref["u1_lo"]).max(axis=1)
    sign = np.where(np.sum(q1 * ref["q1_hi"], axis=1) < 0, -1.0, 1.0)[:, None]
    err_q = np.abs((sign * q1 - ref["q1_hi"]) - ref["q1_lo"]).max(axis=1)
    assert ref["phase"].max() > 63
    # the error does not grow with the angle (the elliptic path lost an ulp of the phase per radian)
    long = ref["phase"] > 32
    assert err_m.max() < 1e-15 and err_q.max() < 1e-15
    assert err_m[long].max() < 1e-15 and err_q[long].max() < 1e-15


def test_symmetric_bodies_one_at_a_time_are_the_batch(ref):
    m1, q1 = frb.quat_step(ref["m0"][:40], ref["q0"][:40], ref["h"][:40], ref["inertia"][:40])
    for k in range(40):
        a, b = frb.quat_step(ref["m0"][k], ref["q0"][k], ref["h"][k], ref["inertia"][k])
        np.testing.assert_array_equal(a, m1[k])
        np.testing.assert_array_equal(b, q1[k])


@pytest.mark.parametrize("inertia", [[2.0, 2.0, 3.7], [0.7, 1.9, 1.9], [1.3, 2.2, 2.9]])
def test_invariants_of_single_steps_from_one_state_spread_by_a_few_ulps(inertia):
    rng = np.random.default_rng(11)
    inertia = np.array(inertia)
    m = rng.normal(size=3)
    q = rng.normal(size=4)
    q /= np.linalg.norm(q)
    n = 1000
    t = np.sort(rng.uniform(0, 1, n)) * 63.0 * inertia.min() / np.linalg.norm(m)
    m1, q1 = frb.quat_step(np.tile(m, (n, 1)), np.tile(q, (n, 1)), t, np.tile(inertia, (n, 1)))
    g = np.linalg.norm(m1, axis=1)
    energy = frb.kinetic_energy(m1, inertia)
    assert np.ptp(g) <= 8 * np.spacing(g.max())
    assert np.ptp(energy) <= 8 * np.spacing(energy.max())


def test_chained_exact_steps_do_not_drift():
    testing = pytest.importorskip("frb._testing")
    rng = np.random.default_rng(5)
    n = 16
    m = rng.normal(size=(n, 3))
    q = rng.normal(size=(n, 4))
    q /= np.linalg.norm(q, axis=1)[:, None]
    inertia = np.sort(rng.uniform(1, 3, (n, 3)), axis=1)

    def invariants(m, q):
        Q = frb.quat_to_matrix(q / np.linalg.norm(q, axis=1)[:, None])
        return (np.linalg.norm(m, axis=1), frb.kinetic_energy(m, inertia),
                np.einsum("kij,kj->ki", Q, m))

    g0, e0, M0 = invariants(m, q)
    mo, qo = testing.quat_integrate_batch(m.T, q.T, np.full(n, 0.1), inertia.T, 0, 100000, threads=1)
    g, e, M = invariants(np.ascontiguousarray(mo.T), np.ascontiguousarray(qo.T))
    assert np.max(np.abs(g / g0 - 1)) < 1e-13
    assert np.max(np.abs(e / e0 - 1)) < 1e-13
    assert np.max(np.linalg.norm(M - M0, axis=1) / g0) < 2e-13
