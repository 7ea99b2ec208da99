"""The states returned with derivatives are those of the same call without them, bit for bit,
and the derivatives are those of the flow frb computes, for the paths of the exact step that
differ from the elliptic closed form: symmetric bodies (two equal moments) at steps beyond one
radian (the closed form of the free symmetric top in double-double angles), long steps
(quadruple precision), chained steps kept on the invariants of their start, batches and one body.

The independent reference of the symmetric bodies is the closed form of the free symmetric top
(Landau and Lifshitz, Mechanics, section 33) written here with mpmath at 40 digits: with moments
A on the axes i, j and C on the axis s, Omega = m_s (1/A - 1/C), m(h) = R_s(Omega h) m0 and
Q(h) = Q0 exp(h hat(m0) / A) exp(-Omega h hat(e_s)); its state transition matrix, d/dh and the
derivative in the pair of equal moments by mpmath's numerical differentiation at 40 digits.
"""
import mpmath as mp
import numpy as np
import pytest

import frb
from frb import torques
from frb.derivatives import flow_jacobian


def unit_quaternions(rng, n):
    q = rng.normal(size=(n, 4))
    return q / np.linalg.norm(q, axis=1)[:, None]


def symmetric_bodies(rng, n):
    """Symmetric bodies (the distinct axis and the order of the moments varied, a sphere among
    them) at steps from 1.2 to 500 radians (|h| |m| / I_min), both signs."""
    m = rng.normal(size=(n, 3)) * 10.0 ** rng.uniform(-1, 1, size=(n, 1))
    inertia = np.empty((n, 3))
    for b in range(n):
        a, c = rng.uniform(0.4, 3.0, size=2)
        inertia[b] = np.roll([a, a, c], b % 3)
    inertia[n - 1] = 1.3
    angle = np.concatenate([rng.uniform(1.2, 60.0, size=n - 3), [63.0, 80.0, 500.0]])
    h = angle * inertia.min(axis=1) / np.linalg.norm(m, axis=1) * rng.choice([-1.0, 1.0], size=n)
    return m, inertia, h


def test_step_states_bit_for_bit():
    """quat_step / frb_step with jacobian=True give the states of the same call without it, for
    batches (random bodies among the symmetric ones, so that the lanes and the one-body paths
    mix) and for each body alone."""
    rng = np.random.default_rng(21)
    m, inertia, h = symmetric_bodies(rng, 30)
    mr = rng.normal(size=(30, 3))
    ir = rng.uniform(0.4, 3.0, size=(30, 3))
    hr = 10.0 ** rng.uniform(-2, 1.5, size=30)
    m, inertia, h = np.vstack([m, mr]), np.vstack([inertia, ir]), np.concatenate([h, hr])
    order = rng.permutation(60)
    m, inertia, h = m[order], inertia[order], h[order]
    q = unit_quaternions(rng, 60)
    m1, q1, jac = frb.quat_step(m, q, h, inertia, jacobian=True)
    m_ref, q_ref = frb.quat_step(m, q, h, inertia)
    assert np.array_equal(m1, m_ref) and np.array_equal(q1, q_ref)
    Q = np.array([frb.quat_to_matrix(x) for x in q])
    m1, Q1, _ = frb.frb_step(m, Q, h, inertia, jacobian=True)
    m_ref, Q_ref = frb.frb_step(m, Q, h, inertia)
    assert np.array_equal(m1, m_ref) and np.array_equal(Q1, Q_ref)
    for b in range(0, 60, 7):
        m1b, q1b, jb = flow_jacobian(m[b], q[b], h[b], inertia[b])
        mb, qb = frb.quat_step(m[b], q[b], h[b], inertia[b])
        assert np.array_equal(m1b, mb) and np.array_equal(q1b, qb)
        assert np.array_equal(jb.state, jac.state[b])


def _hat(v):
    return mp.matrix([[0, -v[2], v[1]], [v[2], 0, -v[0]], [-v[1], v[0], 0]])


def _expm_so3(v):
    """exp(hat(v)) by Rodrigues' formula."""
    a = mp.sqrt(v[0] ** 2 + v[1] ** 2 + v[2] ** 2)
    K = _hat(v)
    if a == 0:
        return mp.eye(3)
    return mp.eye(3) + (mp.sin(a) / a) * K + ((1 - mp.cos(a)) / a ** 2) * (K * K)


def _log_so3(R):
    """The vector v with exp(hat(v)) = R for a rotation by less than pi/2: the skew part of R is
    sin|v| v / |v| (conditioned well near the identity, where the trace is not)."""
    v = [(R[2, 1] - R[1, 2]) / 2, (R[0, 2] - R[2, 0]) / 2, (R[1, 0] - R[0, 1]) / 2]
    s = mp.sqrt(v[0] ** 2 + v[1] ** 2 + v[2] ** 2)
    f = mp.asin(s) / s if s != 0 else mp.mpf(1)
    return [f * x for x in v]


def _top(m0, h, inertia, s):
    """The free symmetric top's step (distinct axis s): m(h) and E(w) (Q(h) = Q0 E(w))."""
    i, j = (s + 1) % 3, (s + 2) % 3
    A, C = inertia[i], inertia[s]
    b = m0[s] * (1 / A - 1 / C) * h
    m1 = [mp.mpf(0)] * 3
    m1[s] = m0[s]
    m1[i] = mp.cos(b) * m0[i] - mp.sin(b) * m0[j]
    m1[j] = mp.sin(b) * m0[i] + mp.cos(b) * m0[j]
    es = [mp.mpf(0)] * 3
    es[s] = -b
    E = _expm_so3([h * x / A for x in m0]) * _expm_so3(es)
    return m1, E


def reference_derivatives(m0, h, inertia, s):
    """(Phi (6, 6), d/dh (6,), the derivative in the pair of equal moments (6,)) of the free
    symmetric top at 40 digits; the attitude perturbed in the body frame."""
    with mp.workdps(40):
        m0 = [mp.mpf(float(x)) for x in m0]
        I = [mp.mpf(float(x)) for x in inertia]
        h = mp.mpf(float(h))
        _, E0 = _top(m0, h, I, s)

        def state(dm, dth, dh, dA):
            Ip = list(I)
            for k in range(3):
                if k != s:
                    Ip[k] = I[k] + dA
            m1, E = _top([m0[k] + dm[k] for k in range(3)], h + dh, Ip, s)
            # Q0 = 1 perturbed: Q0 exp(hat(dth)); the result read as Q1 exp(hat(theta))
            th = _log_so3(E0.T * _expm_so3(dth) * E)
            return m1 + th

        cols = []
        zero = [mp.mpf(0)] * 3
        for c in range(6):
            def f(e, c=c):
                dm = [e if k == c else mp.mpf(0) for k in range(3)]
                dth = [e if k == c - 3 else mp.mpf(0) for k in range(3)]
                return state(dm, dth, 0, 0)
            cols.append([mp.diff(lambda e, r=r: f(e)[r], 0) for r in range(6)])
        phi = np.array([[float(cols[c][r]) for c in range(6)] for r in range(6)])
        dh = np.array([float(mp.diff(lambda e, r=r: state(zero, zero, e, 0)[r], 0))
                       for r in range(6)])
        dA = np.array([float(mp.diff(lambda e, r=r: state(zero, zero, 0, e)[r], 0))
                       for r in range(6)])
    return phi, dh, dA


def relative(x, ref):
    return float(np.abs(x - ref).max() / np.abs(ref).max())


@pytest.mark.parametrize("case", range(6))
def test_symmetric_long_steps_against_the_top(case):
    """Phi, d/dh and the derivative in the two equal moments together (the sum of their
    columns) of symmetric bodies at 2 to 60 radians against the 40-digit closed form of the
    free symmetric top, to 1e-11 relative to each one's largest entry."""
    rng = np.random.default_rng(100 + case)
    s = case % 3
    a, c = rng.uniform(0.5, 2.5, size=2)
    inertia = np.full(3, a)
    inertia[s] = c
    m = rng.normal(size=3)
    h = rng.uniform(2.0, 60.0) * inertia.min() / np.linalg.norm(m) * (-1) ** case
    _, _, jac = flow_jacobian(m, [1.0, 0.0, 0.0, 0.0], h, inertia)
    phi, dh, dA = reference_derivatives(m, h, inertia, s)
    assert relative(jac.state, phi) < 1e-11
    assert relative(jac.h, dh) < 1e-11
    pair = [k for k in range(3) if k != s]
    assert relative(jac.inertia[:, pair[0]] + jac.inertia[:, pair[1]], dA) < 1e-11


@pytest.mark.parametrize("method", ["EXACT", "STRANG", "RK4"])
def test_trajectory_states_bit_for_bit(method):
    """frb.integrate with sensitivities keeps the states of the run without them, for batches
    with symmetric bodies at steps beyond one radian, long steps (the exact flows) and one
    body."""
    rng = np.random.default_rng(33)
    m, inertia, h = symmetric_bodies(rng, 12)
    q = unit_quaternions(rng, 12)
    tq = torques.constant_field([0.1, -0.2, 0.05]) if method == "STRANG" else None
    steps = (0.03, 0.2) if method == "RK4" else (float(h[0]), float(abs(h).max()), 0.03)
    for hh in steps:
        kwargs = dict(method=method, torque=tq, save_every=2)
        tr = frb.integrate(m, q, inertia, hh, 6, sensitivities=("state", "h", "inertia"), **kwargs)
        plain = frb.integrate(m, q, inertia, hh, 6, **kwargs)
        assert np.array_equal(tr.m, plain.m) and np.array_equal(tr.q, plain.q)
        one = frb.integrate(m[1], q[1], inertia[1], hh, 6, sensitivities=True, **kwargs)
        plain = frb.integrate(m[1], q[1], inertia[1], hh, 6, **kwargs)
        assert np.array_equal(one.m, plain.m) and np.array_equal(one.q, plain.q)
        assert np.array_equal(one.sensitivity, tr.sensitivities.state[:, 1])


def test_rotor_refused_by_the_exact_flow_families():
    """A rotor in EXACT or an exact-flow splitting (whose free flow is then the gyrostat's) is
    refused by name with sensitivities; RK4 integrates it as a torque and differentiates it."""
    rng = np.random.default_rng(2)
    m, q = rng.normal(size=(2, 3)), unit_quaternions(rng, 2)
    inertia = np.array([0.9, 1.3, 2.1])
    for method in ("EXACT", "STRANG", "YOSHIDA4", "RKN6_14"):
        sums = () if method == "EXACT" else (torques.gravity_gradient(0.5)
                                             + torques.rotor([0.0, 0.2, 0.1]),)
        for tq in (torques.rotor([0.1, -0.2, 0.3]),) + sums:
            with pytest.raises(ValueError, match="sensitivities are not available with a rotor"):
                frb.integrate(m, q, inertia, 0.1, 3, method=method, torque=tq,
                              sensitivities=True)
    tr = frb.integrate(m, q, inertia, 0.1, 3, method="RK4", torque=torques.rotor([0.1, -0.2, 0.3]),
                       sensitivities=True)
    assert tr.sensitivity.shape == (4, 2, 6, 6)


def test_small_momenta():
    """Momenta below the normal range: a body that turns by less than 2^-60 radians has the
    derivatives of the linearisation at m = 0 (Phi = [[1, 0], [h I^-1, 1]]); a subnormal momentum
    over a step long enough to turn it has those of the step scaled by the symmetry
    m(2^-k m', h) = 2^-k m(m', 2^-k h) (dtheta/dm times 2^k), no NaN."""
    inertia = np.array([0.9, 1.3, 2.1])
    m = np.array([3e-321, 5e-321, 8e-321])
    _, _, jac = flow_jacobian(m, [1.0, 0.0, 0.0, 0.0], 0.1, inertia)
    expected = np.eye(6)
    expected[3:, :3] = np.diag(0.1 / inertia)
    assert np.array_equal(jac.state, expected)
    assert np.array_equal(jac.h[3:], m / inertia)
    m1 = np.array([0.375, -0.5, 0.8125])
    h1 = 0.7
    m = np.ldexp(m1, -1030)
    h = np.ldexp(h1 * 2.0 ** -10, 1030)
    _, _, jac = flow_jacobian(m, [1.0, 0.0, 0.0, 0.0], h, inertia)
    _, _, ref = flow_jacobian(m1, [1.0, 0.0, 0.0, 0.0], h1 * 2.0 ** -10, inertia)
    assert relative(jac.state[:3, :3], ref.state[:3, :3]) < 1e-13
    assert relative(np.ldexp(jac.state[3:, :3], -1030), ref.state[3:, :3]) < 1e-13
    assert relative(jac.state[3:, 3:], ref.state[3:, 3:]) < 1e-13
    assert relative(np.ldexp(jac.h[3:], 1030), ref.h[3:]) < 1e-12
    assert not np.isnan(jac.inertia).any()


@pytest.mark.parametrize("m, h", [([0.3, 0.5, 0.8], 1e-40), ([0.3, -0.5, 0.8], 1e-30),
                                  ([1e-300, 2e-300, 3e-300], 0.1)])
def test_inertia_derivatives_of_steps_that_barely_turn(m, h):
    """A step that turns the body by less than 2^-60 rad: d/dI to its first-order terms
    d(theta1)/dI_i = h dw_i, d(m1)/dI_i = h m x dw_i with dw_i = -(m_i / I_i^2) e_i (their
    relative error below 2^-60), from flow_jacobian and from integrate's sensitivities."""
    inertia = np.array([0.9, 1.3, 2.1])
    m = np.array(m)
    expected = np.zeros((6, 3))
    for i in range(3):
        dw = np.zeros(3)
        dw[i] = -m[i] / inertia[i] ** 2
        expected[:3, i] = h * np.cross(m, dw)
        expected[3:, i] = h * dw
    _, _, jac = flow_jacobian(m, [1.0, 0.0, 0.0, 0.0], h, inertia)
    tr = frb.integrate(m, [1.0, 0.0, 0.0, 0.0], inertia, h, 1, method="EXACT",
                       sensitivities=["inertia"], save_every=None)
    for got in (jac.inertia, tr.sensitivities.inertia[-1]):
        assert np.abs(got - expected).max() <= 1e-15 * np.abs(expected).max()
