"""Tests of the preprocessed discrete Moser-Veselov method (frb.dmv, fortran/moser_veselov.f90).

* convergence at orders 2, 4, 6, 8 against the exact flow ``frb.quat_step``;
* agreement with a literal numpy transcription of Algorithms 3 and 4 of Vilmart's "Rigid body
  dynamics" (2013)
  (fixed-point iteration of (14), update (15), quaternion (13), Table 1);
* the exact invariants of DMV: |m|, the energy, the spatial momentum E(q) m, |q|;
  symmetry; batched / single / scalar-path / integrate consistency;
* argument validation.
"""
from __future__ import annotations

import numpy as np
import pytest


_core = pytest.importorskip("frb._testing")
from frb.dmv import dmv_integrate, dmv_step  # noqa: E402

ORDERS = (2, 4, 6, 8)
INERTIA = np.array([0.627, 1.0, 0.376])  # deliberately unsorted
M0 = np.array([1.2, -0.9, 0.5])
Q0 = np.array([0.5, 0.5, -0.5, 0.5])


# ----------------------------------------------------------------- helpers


def qmul(p, q):
    """Quaternion product, scalar first (CONTRACT.md)."""
    p0, pv, q0, qv = p[0], np.asarray(p[1:]), q[0], np.asarray(q[1:])
    return np.concatenate([[p0 * q0 - pv @ qv], p0 * qv + q0 * pv + np.cross(pv, qv)])


def qmat(q):
    """E(q) = 1 + 2 q0 hat(v) + 2 hat(v)^2."""
    v = np.asarray(q[1:])
    hv = np.array([[0.0, -v[2], v[1]], [v[2], 0.0, -v[0]], [-v[1], v[0], 0.0]])
    return np.eye(3) + 2 * q[0] * hv + 2 * hv @ hv


def table1_inverse(inertia, y, h, order):
    """Modified inverse moments of Algorithm 4, transcribed independently from Table 1."""
    i1, i2, i3 = inertia
    inv = 1.0 / np.asarray(inertia)
    if order == 2:
        return inv
    C = 0.5 * (y @ y)
    H = 0.5 * (y**2 @ inv)
    dl = i1 * i2 * i3

    def sg(a):
        return i1**a + i2**a + i3**a

    def tau(b, c):
        return (i2**b + i3**b) / i1**c + (i3**b + i1**b) / i2**c + (i1**b + i2**b) / i3**c

    s = [-sg(-1) / 3 * H + sg(1) / (6 * dl) * C]
    t = [sg(1) / (6 * dl) * H - C / (3 * dl)]
    s.append((3 * sg(1) + 2 * dl * sg(-2)) / (60 * dl) * H**2 + (1 - tau(1, 1)) / (30 * dl) * C * H
             + (sg(2) - dl * sg(-1)) / (30 * dl**2) * C**2)
    t.append(-(9 + tau(1, 1)) / (60 * dl) * H**2 + (6 * dl * sg(-1) - sg(2)) / (60 * dl**2) * C * H
             - sg(1) / (60 * dl**2) * C**2)
    s.append((15 - dl * sg(-3) - 2 * tau(1, 1)) / (630 * dl) * H**3
             + (6 * dl * tau(1, 2) - 100 * dl * sg(-1) + 53 * sg(2)) / (2520 * dl**2) * C * H**2
             + (9 * sg(1) + 10 * dl * sg(-2) - 6 * tau(2, 1)) / (420 * dl**2) * C**2 * H
             + (4 * dl + 17 * sg(3) - 15 * dl * tau(1, 1)) / (2520 * dl**3) * C**3)
    t.append((9 * dl * sg(-1) + dl * tau(1, 2) - 11 * sg(2)) / (1260 * dl**2) * H**3
             + (47 * sg(1) + 13 * tau(2, 1) - 38 * dl * sg(-2)) / (2520 * dl**2) * C * H**2
             + (sg(3) + 2 * dl * tau(1, 1) - 85 * dl) / (1260 * dl**3) * C**2 * H
             + (34 * dl * sg(-1) - 19 * sg(2)) / (2520 * dl**3) * C**3)
    n = order // 2 - 1
    sa = sum(h ** (2 * k + 2) * s[k] for k in range(n))
    ta = sum(h ** (2 * k + 2) * t[k] for k in range(n))
    return inv * (1 + sa) + ta


def literal_dmv(y, q, h, inertia, order):
    """Algorithm 4 (Algorithm 3 with modified moments) exactly as written by Vilmart (2013):
    fixed-point iteration of (14), then (15) and (13)."""
    w = table1_inverse(inertia, y, h, order)
    Y = y.copy()
    for _ in range(500):
        e = 0.5 * h * w * Y
        alpha = 1 + e @ e
        Y_new = alpha * y + 0.5 * h * np.cross(Y, w * Y)
        if np.max(np.abs(Y_new - Y)) <= 1e-16 * np.max(np.abs(y)):
            Y = Y_new
            break
        Y = Y_new
    else:  # pragma: no cover
        raise RuntimeError("fixed point did not converge")
    e = 0.5 * h * w * Y
    alpha = 1 + e @ e
    y1 = y + h / alpha * np.cross(Y, w * Y)
    rho = np.concatenate([[1.0], e]) / np.sqrt(alpha)
    return y1, qmul(q, rho)


def random_states(rng, n, hmax_omega):
    """Random bodies with |h| |I^-1 m| <= hmax_omega."""
    m = rng.normal(size=(n, 3)) * rng.uniform(0.2, 3.0, size=(n, 1))
    q = rng.normal(size=(n, 4))
    q /= np.linalg.norm(q, axis=1, keepdims=True)
    inertia = rng.uniform(0.3, 2.0, size=(n, 3))
    omega = np.linalg.norm(m / inertia, axis=1)
    h = rng.uniform(-1.0, 1.0, size=n) * hmax_omega / omega
    return m, q, h, inertia


def error(a, b):
    return max(np.max(np.abs(a[0] - b[0])), np.max(np.abs(a[1] - b[1])))


# ----------------------------------------------------------------- accuracy


@pytest.mark.parametrize("order, steps", [(2, [16, 32, 64, 128]), (4, [8, 16, 32, 64]),
                                          (6, [6, 8, 12, 16]), (8, [6, 8, 12, 16])])
def test_convergence_order(order, steps):
    import frb

    T = 1.0
    q0 = Q0 / np.linalg.norm(Q0)
    exact = frb.quat_step(M0, q0, T, INERTIA)
    errs = [error(dmv_integrate(M0, q0, INERTIA, T / n, n, order), exact) for n in steps]
    assert min(errs) > 1e-12  # well above the accuracy of the reference
    slope = np.polyfit(np.log(T / np.array(steps)), np.log(errs), 1)[0]
    assert abs(slope - order) < 0.5, (errs, slope)


@pytest.mark.parametrize("order", ORDERS)
def test_matches_literal_algorithm(order):
    rng = np.random.default_rng(order)
    m, q, h, inertia = random_states(rng, 40, 0.7)
    m1, q1 = dmv_step(m, q, h, inertia, order)
    for k in range(len(h)):
        ref = literal_dmv(m[k], q[k], h[k], inertia[k], order)
        scale = np.linalg.norm(m[k])
        assert np.max(np.abs(m1[k] - ref[0])) <= 4e-15 * scale
        assert np.max(np.abs(q1[k] - ref[1])) <= 4e-15


def test_single_batched_scalar_paths_agree():
    rng = np.random.default_rng(7)
    n = 37  # several chunks of lanes and a partial one
    m, q, h, inertia = random_states(rng, n, 0.5)
    for order in ORDERS:
        mb, qb = dmv_step(m, q, h, inertia, order)
        for k in range(n):
            ms, qs = dmv_step(m[k], q[k], h[k], inertia[k], order)
            mc, qc = _core.dmv_step_single(m[k], q[k], h[k], inertia[k], order)
            assert error((ms, qs), (mb[k], qb[k])) <= 1e-15 * max(1.0, np.linalg.norm(m[k]))
            assert error((mc, qc), (mb[k], qb[k])) <= 1e-15 * max(1.0, np.linalg.norm(m[k]))
    # shared inertia and step
    mb, qb = dmv_step(m, q, 0.1, INERTIA, 6)
    for k in range(n):
        assert error(dmv_step(m[k], q[k], 0.1, INERTIA, 6), (mb[k], qb[k])) <= 1e-15 * 3


def test_integrate_equals_repeated_steps():
    rng = np.random.default_rng(3)
    m, q, h, inertia = random_states(rng, 11, 0.3)
    for order in (2, 8):
        mi, qi = dmv_integrate(m, q, inertia, h, 25, order)
        ms, qs = m, q
        for _ in range(25):
            ms, qs = dmv_step(ms, qs, h, inertia, order)
        assert np.max(np.abs(mi - ms)) <= 1e-13 * np.max(np.abs(m))
        assert np.max(np.abs(qi - qs)) <= 1e-13
    m0, q0 = dmv_integrate(m, q, inertia, h, 0)
    assert np.array_equal(m0, m) and np.array_equal(q0, q)
    m0, q0 = dmv_step(np.zeros((0, 3)), np.zeros((0, 4)), 0.1, INERTIA)
    assert m0.shape == (0, 3) and q0.shape == (0, 4)


def test_cyclic_relabelling_of_axes():
    """No sorting of the moments: relabelling the body axes cyclically commutes with a step."""
    perm = [2, 0, 1]  # (v1, v2, v3) -> (v3, v1, v2), a rotation P
    p_conj = np.array([1.0, -1.0, -1.0, -1.0]) / 2  # quaternion of P^T
    q0 = Q0 / np.linalg.norm(Q0)
    for order in ORDERS:
        m1, q1 = dmv_step(M0, q0, 0.2, INERTIA, order)
        m2, q2 = dmv_step(M0[perm], qmul(q0, p_conj), 0.2, INERTIA[perm], order)
        assert np.max(np.abs(m2 - m1[perm])) <= 1e-15 * 4
        assert np.max(np.abs(q2 - qmul(q1, p_conj))) <= 1e-15 * 4


# ----------------------------------------------------------------- geometry


@pytest.mark.parametrize("order", ORDERS)
def test_invariants_conserved(order):
    rng = np.random.default_rng(10 + order)
    m, q, h, inertia = random_states(rng, 16, 0.4)
    nsteps = 200
    m1, q1 = dmv_integrate(m, q, inertia, h, nsteps, order)
    norm0, norm1 = np.linalg.norm(m, axis=1), np.linalg.norm(m1, axis=1)
    assert np.max(np.abs(norm1 - norm0) / norm0) < 2e-14
    energy0 = np.sum(m**2 / inertia, axis=1)
    energy1 = np.sum(m1**2 / inertia, axis=1)
    assert np.max(np.abs(energy1 - energy0) / energy0) < 2e-14
    assert np.max(np.abs(np.linalg.norm(q1, axis=1) - 1)) < 2e-14
    for k in range(len(h)):
        spatial0 = qmat(q[k]) @ m[k]
        spatial1 = qmat(q1[k]) @ m1[k]
        assert np.max(np.abs(spatial1 - spatial0)) < 2e-14 * norm0[k]


@pytest.mark.parametrize("order", ORDERS)
def test_symmetric(order):
    rng = np.random.default_rng(20 + order)
    m, q, h, inertia = random_states(rng, 16, 0.5)
    m1, q1 = dmv_step(m, q, h, inertia, order)
    m2, q2 = dmv_step(m1, q1, -h, inertia, order)
    assert np.max(np.abs(m2 - m) / np.linalg.norm(m, axis=1, keepdims=True)) < 1e-14
    assert np.max(np.abs(q2 - q)) < 1e-14


def test_trivial_steps():
    q0 = Q0 / np.linalg.norm(Q0)
    m1, q1 = dmv_step(M0, q0, 0.0, INERTIA)
    assert np.array_equal(m1, M0) and np.array_equal(q1, q0)
    m1, q1 = dmv_step(np.zeros(3), q0, 0.3, INERTIA)
    assert np.array_equal(m1, np.zeros(3)) and np.array_equal(q1, q0)
    # rotation about a principal axis: a uniform rotation, tan(angle/2) = |e|
    for order in ORDERS:
        m1, q1 = dmv_step([0.0, 0.0, 0.7], [1.0, 0.0, 0.0, 0.0], 0.5, [1.0, 2.0, 1.4], order)
        assert np.allclose(m1, [0.0, 0.0, 0.7], rtol=0, atol=1e-16)
        assert abs(q1[1]) == 0 and abs(q1[2]) == 0 and q1[3] > 0
    # exact flow for a spherical body at order >= 4 up to O(h^order)
    m1, q1 = dmv_step([0.3, -0.4, 1.2], [1.0, 0.0, 0.0, 0.0], 0.1, [1.0, 1.0, 1.0], 8)
    angle = 0.1 * 1.3
    assert abs(q1[0] - np.cos(angle / 2)) < 1e-13


# ----------------------------------------------------------------- validation


def test_validation_errors():
    q0 = Q0 / np.linalg.norm(Q0)
    with pytest.raises(ValueError):
        dmv_step(M0, q0, 0.1, INERTIA, order=3)
    with pytest.raises(ValueError):
        dmv_step(M0, q0, 0.1, INERTIA, order=10)
    with pytest.raises(TypeError):
        dmv_step(M0, q0, 0.1, INERTIA, order=6.0)
    with pytest.raises(TypeError):
        dmv_step(M0, q0, 0.1, INERTIA, order=True)
    with pytest.raises(ValueError):
        dmv_step(M0[:2], q0, 0.1, INERTIA)
    with pytest.raises(ValueError):
        dmv_step(M0, q0[:3], 0.1, INERTIA)
    with pytest.raises(ValueError):
        dmv_step(M0, 2 * q0, 0.1, INERTIA)
    with pytest.raises(ValueError):
        dmv_step(M0, q0, 0.1, [1.0, -1.0, 2.0])
    with pytest.raises(ValueError):
        dmv_step([np.nan, 0.0, 1.0], q0, 0.1, INERTIA)
    with pytest.raises(ValueError):
        dmv_step(M0, q0, [0.1, 0.2], INERTIA)
    with pytest.raises(ValueError):
        dmv_step(np.tile(M0, (3, 1)), np.tile(q0, (2, 1)), 0.1, INERTIA)
    with pytest.raises(TypeError):
        dmv_step(M0, q0, "a", INERTIA)
    with pytest.raises(TypeError):
        dmv_integrate(M0, q0, INERTIA, 0.1, 2.5)
    with pytest.raises(ValueError):
        dmv_integrate(M0, q0, INERTIA, 0.1, -1)
    # a step too large for the DMV equation to have a solution (h |omega| > 1 about axis 1)
    with pytest.raises(RuntimeError):
        dmv_step([2.0, 0.0, 0.0], q0, 0.3, [0.5, 1.0, 1.5], order=2)
    with pytest.raises(RuntimeError):
        dmv_integrate([2.0, 0.0, 0.0], q0, [0.5, 1.0, 1.5], 0.3, 5, order=2)
    with pytest.raises(RuntimeError):
        dmv_step(np.array([[2.0, 0.0, 0.0], [0.0, 0.1, 0.0]]), np.tile(q0, (2, 1)), 0.3,
                 [0.5, 1.0, 1.5], order=2)


def test_compiled_layer_gives_nan_for_invalid_order():
    m = np.zeros((3, 2))
    q = np.zeros((4, 2))
    q[0] = 1
    m_out, q_out = _core.dmv_step_batch(m, q, np.array([0.1]), np.ones((3, 1)), 5)
    assert np.all(np.isnan(m_out)) and np.all(np.isnan(q_out))
    m_out, q_out = _core.dmv_integrate_batch(m, q, np.array([0.1]), np.ones((3, 1)), 7, 3)
    assert np.all(np.isnan(m_out)) and np.all(np.isnan(q_out))


# ----------------------------------------------------------------- kernels and small batches


def _kernel_population(rng, n):
    """States across the DMV regimes: |h| |I^-1 m| from 1e-6 to 1.3 (beyond about 1 the
    equation has no solution: NaN), zero components, a body at rest."""
    m = rng.normal(size=(n, 3)) * 10.0 ** rng.uniform(-2, 2, size=(n, 1))
    m[rng.random(n) < 0.1, rng.integers(0, 3)] = 0.0
    m[0] = 0.0
    q = rng.normal(size=(n, 4))
    q /= np.linalg.norm(q, axis=1, keepdims=True)
    omega = np.linalg.norm(m / INERTIA, axis=1) + 1e-300
    h = rng.choice([-1.0, 1.0], n) * 10.0 ** rng.uniform(-6, np.log10(1.3), n) / omega
    return m, q, h


@pytest.mark.parametrize("order", ORDERS)
def test_one_body_kernel_equals_the_lane_kernel_bit_for_bit(order):
    """A body alone (a batch of one, or the last chunk of a batch) runs the scalar kernel
    dmv_step_scalar; it must give the lane kernel's results bit for bit (NaN where the DMV
    equation has no solution): the body as lane 1 of a full 16-lane chunk whose other lanes
    hold bodies at rest, which converge at once and leave its Newton iterations alone."""
    rng = np.random.default_rng(100 + order)
    n = 300
    m, q, h = _kernel_population(rng, n)
    rest_m = np.zeros((16, 3))
    rest_q = np.tile([1.0, 0.0, 0.0, 0.0], (16, 1))
    inertia = INERTIA.reshape(3, 1)
    nan_seen = 0
    for nsteps in (1, 7):
        for k in range(n):
            single = _core.dmv_integrate_batch(m[k:k + 1].T, q[k:k + 1].T, h[k:k + 1], inertia,
                                               order, nsteps)
            mm, qq = rest_m.copy(), rest_q.copy()
            mm[0], qq[0] = m[k], q[k]
            lanes = _core.dmv_integrate_batch(mm.T, qq.T, np.full(16, h[k]), inertia, order,
                                              nsteps)
            for a, b in zip(single, lanes):
                assert np.array_equal(a[:, 0], b[:, 0], equal_nan=True), (nsteps, k)
            nan_seen += bool(np.isnan(single[0]).any())
            # the public single-body path (checks in the binding) gives the same
            if not np.isnan(single[0]).any():
                mp, qp = dmv_integrate(m[k], q[k], INERTIA, h[k], nsteps, order)
                assert np.array_equal(mp, single[0][:, 0]) and np.array_equal(qp, single[1][:, 0])
    assert nan_seen > 0   # the population reaches the steps without a solution


def test_short_chunks_equal_padded_full_chunks_bit_for_bit():
    """A chunk of 2..15 bodies runs only its lanes; the results are those of the full-width
    chunk padded with bodies at rest, bit for bit."""
    rng = np.random.default_rng(9)
    m, q, h = _kernel_population(rng, 15)
    for nb in range(1, 16):
        for ni in (1, nb):
            inertia = np.tile(INERTIA, (ni, 1)).T.copy()
            inertia_pad = np.tile(INERTIA, (1 if ni == 1 else 16, 1)).T.copy()
            short = _core.dmv_integrate_batch(m[:nb].T, q[:nb].T, h[:nb], inertia, 6, 5)
            mp = np.zeros((16, 3))
            qp = np.tile([1.0, 0.0, 0.0, 0.0], (16, 1))
            hp = np.zeros(16)
            mp[:nb], qp[:nb], hp[:nb] = m[:nb], q[:nb], h[:nb]
            padded = _core.dmv_integrate_batch(mp.T, qp.T, hp, inertia_pad, 6, 5)
            for a, b in zip(short, padded):
                assert np.array_equal(a, b[:, :nb], equal_nan=True), (nb, ni)


def test_single_body_lean_path_checks():
    """dmv_step on one body (the single-body binding) keeps the checks of the batched path,
    with the same messages as a batch of one (which also names the body)."""
    q0 = Q0 / np.linalg.norm(Q0)
    for args in ((np.array([np.nan, 0, 1]), q0, 0.1, INERTIA), (M0, q0, np.inf, INERTIA),
                 (M0, q0, 0.1, [1.0, 0.0, 2.0]), (M0, 1.5 * q0, 0.1, INERTIA),
                 (M0, q0, 0.1, [1.0, np.nan, 2.0])):
        with pytest.raises(ValueError) as single:
            dmv_step(*args)
        with pytest.raises(ValueError) as batch:
            dmv_step(*([a] for a in args))
        assert str(batch.value) == str(single.value) + " (body 0)"
    m1, q1 = dmv_step(list(M0), list(q0), np.float64(0.1), list(INERTIA), 4)
    mb, qb = dmv_step(M0[None], q0[None], [0.1], INERTIA[None], 4)
    assert np.array_equal(m1, mb[0]) and np.array_equal(q1, qb[0])
