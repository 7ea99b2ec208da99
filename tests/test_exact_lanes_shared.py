"""The lock-step exact flow (fortran/exact_flow_lanes.f90) in the layouts whose chunks take its
shortcuts: one step and one moment tensor for the whole batch (the quotients by the largest
moment formed once), steps served by the Gauss transformations (|lambda h| beyond the sn series,
in lock-step across the lanes) and by RJ's duplications, both forms of the angle (B^2 >= 1/4 or
not) in one chunk or only one of them. Every body must get the one-body flow's results bit for
bit (frb.quat_step and frb.frb_step of that body alone), under every SIMD target."""
import numpy as np
import pytest

import frb

per_target = pytest.mark.usefixtures("each_cpu_target")


def _unit_bodies(n, seed):
    rng = np.random.default_rng(seed)
    m = rng.normal(size=(n, 3))
    m /= np.linalg.norm(m, axis=1)[:, None]
    q = rng.normal(size=(n, 4))
    q /= np.linalg.norm(q, axis=1)[:, None]
    return m, q


def _assert_single_bodies(m, q, h, inertia, quadrature=0):
    """quat_step and frb_step of the batch against each body alone, bit for bit."""
    n = len(m)
    hs = np.broadcast_to(h, (n,))
    moments = np.broadcast_to(inertia, (n, 3))
    Q = frb.quat_to_matrix(q)
    mq, qb = frb.quat_step(m, q, h, inertia, quadrature=quadrature, threads=1)
    mb, Qb = frb.frb_step(m, Q, h, inertia, quadrature=quadrature, threads=1)
    for i in range(n):
        m1, q1 = frb.quat_step(m[i], q[i], hs[i], moments[i], quadrature=quadrature)
        m2, Q2 = frb.frb_step(m[i], Q[i], hs[i], moments[i], quadrature=quadrature)
        assert np.array_equal(mq[i], m1) and np.array_equal(qb[i], q1), i
        assert np.array_equal(mb[i], m2) and np.array_equal(Qb[i], Q2), i


@per_target
@pytest.mark.parametrize("h", [0.01, 0.1, 1.0, 2.0, -1.5])
@pytest.mark.parametrize("inertia", [[0.8, 1.7, 2.6], [2.6, 0.8, 1.7], [1.7, 1.7, 2.6]])
def test_unit_momenta_with_a_shared_step_and_moments(h, inertia):
    m, q = _unit_bodies(203, seed=11)
    _assert_single_bodies(m, q, h, np.array(inertia))


@per_target
@pytest.mark.parametrize("quadrature", [0, 3])
def test_unit_momenta_with_steps_and_moments_per_body(quadrature):
    rng = np.random.default_rng(5)
    m, q = _unit_bodies(157, seed=5)
    h = rng.choice([0.05, 0.3, 1.0, 2.5, -0.7], size=len(m))
    inertia = rng.uniform(0.5, 3.0, size=(len(m), 3))
    _assert_single_bodies(m, q, h, inertia, quadrature)


@per_target
def test_momenta_of_other_norms_with_a_shared_step_and_moments():
    m, q = _unit_bodies(96, seed=3)
    m[::9] *= 3.0
    m[5::17] *= 1e-3
    _assert_single_bodies(m, q, 0.7, np.array([1.2, 0.6, 2.0]))
