"""Tests of the methods of G. Vilmart, "Rigid body dynamics" (2013) in frb.integrate
(fortran/approximate_free_flows.f90).

DMV2, DMV4, DMV6, DMV8, SPLIT3, SYMROT, MIDPOINT (free-body methods; with a torque the free part
of the Strang splitting eq. (16)) and NYSTROM4 (the fourth-order Nystrom splitting with the
V-flow corrected):

* orders against the exact flow (free body) and against RKN6_14 at a small step (heavy top);
* the invariants the paper claims (|m|, energy, spatial momentum; heavy top: the vertical
  spatial momentum), and the violation of the energy by SPLIT3, SYMROT (and NYSTROM4);
* SYMROT exact for I1 = I2 and I2 = I3 but not for I1 = I3 (Remark 3, corrected);
* DMVn torque-free equal to frb.dmv_integrate;
* symmetry, unit quaternions, batched == single, user torque == built-in torque, errors.
"""
from __future__ import annotations

import numpy as np
import pytest

import frb
from frb import torques

FREE = ("DMV2", "DMV4", "DMV6", "DMV8", "SPLIT3", "SYMROT", "MIDPOINT")
ALL = FREE + ("NYSTROM4",)
ORDER_FREE = {"DMV2": 2, "DMV4": 4, "DMV6": 6, "DMV8": 8, "SPLIT3": 2, "SYMROT": 2,
              "MIDPOINT": 2}

INERTIA = np.array([0.8, 1.1, 1.7])
M0 = np.array([0.4, -0.7, 1.2])


def rotvec_quat(v):
    v = np.asarray(v, dtype=float)
    a = np.linalg.norm(v)
    return np.concatenate([[np.cos(a / 2)], np.sin(a / 2) * v / a])


Q0 = rotvec_quat([0.3, 0.5, -0.2])
TOP = torques.heavy_top(1.0, [0.0, 0.0, 1.0])


def err(tr, ref):
    """Max error of the final momentum and attitude matrix."""
    return max(np.abs(tr.m[-1] - ref.m[-1]).max(), np.abs(tr.Q[-1] - ref.Q[-1]).max())


def slope(hs, errs):
    return np.polyfit(np.log(hs), np.log(errs), 1)[0]


# ----------------------------------------------------------------- orders


@pytest.mark.parametrize("method", FREE)
def test_order_free_body(method):
    p = ORDER_FREE[method]
    T = 2.4
    ns = (8, 12, 16) if p == 8 else (10, 20, 40)   # DMV8: errors above roundoff
    m0 = M0 if p < 8 else 1.5 * M0
    ref = frb.integrate(m0, Q0, INERTIA, T, 1, method="EXACT")
    hs = [T / n for n in ns]
    errs = [err(frb.integrate(m0, Q0, INERTIA, T / n, n, method=method), ref) for n in ns]
    assert min(errs) > 1e-12
    assert abs(slope(hs, errs) - p) < 0.2, errs


def test_nystrom4_free_body_is_exact_flow():
    a = frb.integrate(M0, Q0, INERTIA, 0.1, 50, method="NYSTROM4")
    b = frb.integrate(M0, Q0, INERTIA, 0.1, 50, method="EXACT")
    assert np.array_equal(a.m, b.m) and np.array_equal(a.q, b.q)


@pytest.mark.parametrize("method", ALL)
def test_order_heavy_top(method):
    p = 4 if method == "NYSTROM4" else 2   # free methods: Strang splitting, order 2
    T = 3.0
    ref = frb.integrate(M0, Q0, INERTIA, T / 300, 300, method="RKN6_14", torque=TOP)
    ns = (20, 40, 80)
    hs = [T / n for n in ns]
    errs = [err(frb.integrate(M0, Q0, INERTIA, T / n, n, method=method, torque=TOP), ref)
            for n in ns]
    assert abs(slope(hs, errs) - p) < 0.2, errs


# ----------------------------------------------------------------- invariants


def invariants(tr):
    c = np.linalg.norm(tr.m, axis=-1)
    return c, tr.kinetic_energy, tr.spatial_momentum


@pytest.mark.parametrize("method", FREE)
def test_invariants_free_body(method):
    tr = frb.integrate(M0, Q0, INERTIA, 0.1, 1000, method=method)
    c, e, pi = invariants(tr)
    assert np.abs(c / c[0] - 1).max() < 1e-13
    assert np.abs(pi - pi[0]).max() / np.linalg.norm(pi[0]) < 1e-13
    assert np.abs(np.linalg.norm(tr.q, axis=-1) - 1).max() < 1e-13
    de = np.abs(e / e[0] - 1).max()
    if method in ("SPLIT3", "SYMROT"):
        assert de > 1e-8   # energy not conserved (Table 2)
    else:
        assert de < 1e-13  # DMV (modified moments functions of C, H) and the midpoint rule


def test_midpoint_quadratic_invariants():
    # every quadratic first integral: a C + b H for any a, b, and Q m
    tr = frb.integrate(M0, Q0, INERTIA, 0.2, 1000, method="MIDPOINT")
    for a in (np.ones(3), 1 / INERTIA, 0.3 - 2.0 / INERTIA):
        g = tr.m**2 @ a
        assert np.abs(g - g[0]).max() / abs(g[0]) < 1e-13
    Q = tr.Q
    assert np.abs(np.einsum("kij,kil->kjl", Q, Q) - np.eye(3)).max() < 1e-13


@pytest.mark.parametrize("method", ALL)
def test_heavy_top_vertical_momentum(method):
    tr = frb.integrate(M0, Q0, INERTIA, 0.05, 1000, method=method, torque=TOP)
    pz = tr.spatial_momentum[:, 2]
    assert np.abs(pz - pz[0]).max() < 1e-13 * np.linalg.norm(M0)
    assert np.abs(np.linalg.norm(tr.q, axis=-1) - 1).max() < 1e-13
    e = tr.energy
    assert np.abs(e - e[0]).max() > 1e-8   # no method conserves the energy of the heavy top


@pytest.mark.parametrize("order", (2, 4, 6, 8))
def test_dmv_equals_baseline(order):
    m, q = frb.dmv_integrate(M0, Q0, INERTIA, 0.1, 200, order=order)
    tr = frb.integrate(M0, Q0, INERTIA, 0.1, 200, method=f"DMV{order}")
    assert np.abs(tr.m[-1] - m).max() < 1e-14 and np.abs(tr.q[-1] - q).max() < 1e-14


# ------------------------------------------------------ SYMROT exactness (Remark 3, corrected)


@pytest.mark.parametrize("inertia,exact", [((1.1, 1.1, 1.7), True), ((0.8, 1.7, 1.7), True),
                                           ((1.1, 0.8, 1.1), False)])
def test_symrot_symmetric_bodies(inertia, exact):
    a = frb.integrate(M0, Q0, inertia, 0.2, 20, method="SYMROT")
    b = frb.integrate(M0, Q0, inertia, 4.0, 1, method="EXACT")
    e = err(a, b)
    if exact:
        assert e < 1e-13
    else:
        assert e > 1e-5


# ----------------------------------------------------------------- symmetry


@pytest.mark.parametrize("method", ALL)
@pytest.mark.parametrize("torque", [None, TOP, torques.gravity_gradient(1.3)])
def test_symmetric(method, torque):
    if method == "NYSTROM4" and isinstance(torque, torques.GravityGradient):
        return
    h = 0.15
    a = frb.integrate(M0, Q0, INERTIA, h, 1, method=method, torque=torque)
    # back from time h: the torque of the backward step is evaluated at times h .. 0
    fwd_m, fwd_q = a.m[-1], a.q[-1]
    if torque is None or not isinstance(torque, torques.GravityGradient):
        b = frb.integrate(fwd_m, fwd_q, INERTIA, -h, 1, method=method, torque=torque)
        assert np.abs(b.m[-1] - M0).max() < 1e-13
        assert np.abs(b.q[-1] - Q0).max() < 1e-13
    else:
        # time-dependent torque: two steps h, -h from t = 0 (the second starts at t = h)
        def shifted(t, Q, g=torque):
            return g.torque(t + h, Q, INERTIA)
        b = frb.integrate(fwd_m, fwd_q, INERTIA, -h, 1, method=method, torque=shifted)
        assert np.abs(b.m[-1] - M0).max() < 1e-13
        assert np.abs(b.q[-1] - Q0).max() < 1e-13


# ----------------------------------------------------------------- batching, user torques


def random_bodies(n, seed=1):
    rng = np.random.default_rng(seed)
    m = rng.normal(size=(n, 3))
    q = rng.normal(size=(n, 4))
    q /= np.linalg.norm(q, axis=1, keepdims=True)
    inertia = rng.uniform(0.5, 2.0, size=(n, 3))
    return m, q, inertia


@pytest.mark.parametrize("method", ALL)
@pytest.mark.parametrize("torque", [None, TOP])
def test_batched_equals_single(method, torque):
    m, q, inertia = random_bodies(70)
    tr = frb.integrate(m, q, inertia, 0.1, 20, method=method, torque=torque)
    for j in (0, 33, 69):
        s = frb.integrate(m[j], q[j], inertia[j], 0.1, 20, method=method, torque=torque)
        assert np.array_equal(tr.m[:, j], s.m) and np.array_equal(tr.q[:, j], s.q)


@pytest.mark.parametrize("method", FREE)
def test_user_torque_equals_builtin(method):
    m, q, inertia = random_bodies(5)
    a = frb.integrate(m, q, inertia, 0.1, 30, method=method, torque=TOP)
    b = frb.integrate(m, q, inertia, 0.1, 30, method=method, torque=lambda t, Q: TOP(t, Q))
    assert np.abs(a.m - b.m).max() < 1e-13 and np.abs(a.q - b.q).max() < 1e-14


@pytest.mark.parametrize("method", FREE)
def test_nan_user_torque(method):
    def bad_torque(t, Q):
        return np.full((Q.shape[0], 3), np.nan)
    with pytest.raises(ValueError, match="bad_torque"):
        frb.integrate(M0, Q0, INERTIA, 0.1, 3, method=method, torque=bad_torque)


def test_nystrom4_rejects_other_torques():
    with pytest.raises(ValueError, match="NYSTROM4"):
        frb.integrate(M0, Q0, INERTIA, 0.1, 3, method="NYSTROM4", torque=lambda t, Q: 0 * Q[:, 0])


@pytest.mark.parametrize("method", ("DMV2", "DMV6", "MIDPOINT"))
def test_too_large_step(method):
    with pytest.raises(frb.IntegrationError, match=method):
        frb.integrate(M0, Q0, INERTIA, 30.0, 5, method=method)


def test_nystrom4_with_a_field_far_beyond_the_bodys_scale():
    # weight 9e246 against |m| 2e36, I 1e53, h 3.6e-212: the body turns by 1e-229 rad a step,
    # the field kicks m by h w e_y a step (the modified potential's kick, of relative size
    # 1e-230, vanishes); its square alone (8e493) is beyond float64
    m0 = np.array([7.88e35, 1.64e36, 1.08e36])
    inertia = np.array([6.27e52, 5.45e52, 1.83e53])
    h, weight = 3.557e-212, 9.145e246
    tr = frb.integrate(m0, [1.0, 0.0, 0.0, 0.0], inertia, h, 3, method="NYSTROM4",
                       torque=frb.torques.heavy_top(weight, [1.0, 0.0, 0.0]))
    np.testing.assert_allclose(tr.m[-1], m0 + [0.0, 3 * h * weight, 0.0], rtol=1e-15)
