"""Symmetric bodies at long steps, the invariants of many steps from one state, and the drift of
chained exact steps.

* Symmetric bodies (two equal moments, on any two axes) at |h| |m| / I_min up to just below the
  switch to quadruple precision, against the 40-digit closed form of the free symmetric top
  (tests/reference/make_symmetric_reference.py, tests/data/reference_symmetric.npz).
* Single steps from one state to 1000 times: |m| and the energy of the returned states,
  evaluated in double precision, spread by a few ulps (the same evaluations of the correctly
  rounded exact states spread by 2 and 5 ulps); the exact value of Q m for the returned doubles
  (30-digit mpmath) stays within a few ulps of the exact Q0 m0.
* 1e5 chained exact steps (h = 0.1) of 16 random free bodies: |m|, the energy and Q m drift by no
  more than the random walk of the rounding (the rounding of the orbit's constants, the same at
  every step, would drift them by about 0.25 ulp a step, 2e-12 over the run).
"""
import os

import mpmath as mp
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


def exact_space_momenta(q, m):
    """E(q/|q|) m for the doubles q (n, 4), m (n, 3), in 30-digit mpmath:
    ((q0^2 - |u|^2) m + 2 (u . m) u + 2 q0 (u x m)) / |q|^2 (the rotation of m by q u q*)."""
    out = []
    with mp.workdps(30):
        for qk, mk in zip(q, m):
            q0, u1, u2, u3 = (mp.mpf(float(x)) for x in qk)
            x, y, z = (mp.mpf(float(v)) for v in mk)
            n2 = q0 * q0 + u1 * u1 + u2 * u2 + u3 * u3
            a = q0 * q0 - (u1 * u1 + u2 * u2 + u3 * u3)
            d = 2 * (u1 * x + u2 * y + u3 * z)
            out.append([(a * x + d * u1 + 2 * q0 * (u2 * z - u3 * y)) / n2,
                        (a * y + d * u2 + 2 * q0 * (u3 * x - u1 * z)) / n2,
                        (a * z + d * u3 + 2 * q0 * (u1 * y - u2 * x)) / n2])
    return out


@pytest.mark.parametrize("inertia, phase", [([2.0, 2.0, 3.7], 63.0), ([0.7, 1.9, 1.9], 63.0),
                                            ([1.3 * (1 - 6e-7), 1.3, 2.9], 1.0),
                                            ([2.9, 1.1, 1.1 * (1 + 3e-7)], 1.0), ([1.3, 2.2, 2.9], 1.0)])
def test_space_momentum_of_single_steps_from_one_state_stays_within_6_ulps(inertia, phase):
    """Q m is constant along the motion. For 300 single steps from one state (two states a body;
    |h| |m| / I_min up to 63 for symmetric bodies: the lanes' short steps and the double-double
    closed form; up to 1 for nearly symmetric and asymmetric ones: the lanes' short steps), the
    exact value of Q m for the returned doubles (mpmath, free of the rounding of an evaluation)
    stays within 6 ulps of |m| of the exact Q0 m0 (mpmath); the correctly rounded exact states
    are within about 1.5 ulps."""
    inertia = np.array(inertia)
    for seed in (1, 3):
        rng = np.random.default_rng(seed)
        m = rng.normal(size=3)
        q = rng.normal(size=4)
        q /= np.linalg.norm(q)
        n = 300
        t = np.sort(rng.uniform(0, 1, n)) * phase * inertia.min() / np.linalg.norm(m)
        m1, q1 = frb.quat_step(np.tile(m, (n, 1)), np.tile(q, (n, 1)), t, np.tile(inertia, (n, 1)))
        ulp = np.spacing(np.linalg.norm(m1, axis=1).max())
        start = exact_space_momenta(q[None], m[None])[0]
        with mp.workdps(30):
            err = max(float(abs(v - w)) for row in exact_space_momenta(q1, m1) for v, w in zip(row, start))
        assert err <= 6 * ulp


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


@pytest.mark.parametrize("tiny", [6.8e-43, 1e-20, 1e-10, 1e-5, 1e-2])
@pytest.mark.parametrize("nodes", [1, 3, 10])
def test_semi_exact_step_of_a_symmetric_body_is_its_exact_step(tiny, nodes):
    """For I1 = I2 the modulus is 0 and the angle's integrand constant in the amplitude, so every
    Gauss-Legendre rule integrates it exactly: the semi-exact step is the exact one to rounding,
    also when the momentum's component along the distinct axis is tiny (where the sum of the
    angle's integral is of order 1 / B)."""
    q = np.array([0.5, 0.5, -0.5, 0.5])
    m = np.array([tiny, 1.625, 4.125])
    inertia = np.array([3.75, 0.96875, 0.96875])
    h = 0.21850500134340786
    m0, q0 = frb.quat_step(m, q, h, inertia, 0)
    m1, q1 = frb.quat_step(m, q, h, inertia, nodes)
    np.testing.assert_allclose(m1, m0, rtol=0, atol=1e-15 * np.linalg.norm(m))
    np.testing.assert_allclose(q1, q0, rtol=0, atol=1e-15)
    batch = frb.quat_step(np.tile(m, (9, 1)), np.tile(q, (9, 1)), h, inertia, nodes)
    assert np.array_equal(batch[1], np.tile(q1, (9, 1)))
