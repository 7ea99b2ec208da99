"""Inertia tensors (3, 3) or (N, 3, 3) wherever ``inertia`` is accepted (frb.inertia).

The references are independent of the frame maps of frb.inertia: rotations made from random
quaternions by the formula written out here, the states mapped into the principal frame by hand
(``m' = R0^T m``, ``Q' = Q R0``, ``q' = q r0`` with the Hamilton product written out here), the
equations of motion in the user's frame integrated by scipy's DOP853, and the invariants
``m . J^-1 m / 2`` and ``Q m`` computed with numpy.linalg.solve.
"""
from __future__ import annotations

import pickle

import numpy as np
import pytest
from hypothesis import given, strategies as st

import frb
import frb.inertia
from frb.torques import (ConstantField, GravityGradient, HeavyTop, UserTorque, constant_field,
                         gravity_gradient, heavy_top)

# ---------------------------------------------------------------- references written out here


def rot_of_quat(r):
    """E(r) = 1 + 2 r0 hat(v) + 2 hat(v)^2 of unit quaternions (..., 4), written out."""
    r0, x, y, z = (r[..., k] for k in range(4))
    return np.stack([
        np.stack([1 - 2 * (y * y + z * z), 2 * (x * y - r0 * z), 2 * (x * z + r0 * y)], -1),
        np.stack([2 * (x * y + r0 * z), 1 - 2 * (x * x + z * z), 2 * (y * z - r0 * x)], -1),
        np.stack([2 * (x * z - r0 * y), 2 * (y * z + r0 * x), 1 - 2 * (x * x + y * y)], -1),
    ], -2)


def hamilton(p, q):
    """(p0, p)(q0, q) = (p0 q0 - p.q, p0 q + q0 p + p x q)."""
    s = p[..., 0] * q[..., 0] - np.sum(p[..., 1:] * q[..., 1:], axis=-1)
    v = p[..., :1] * q[..., 1:] + q[..., :1] * p[..., 1:] + np.cross(p[..., 1:], q[..., 1:])
    return np.concatenate([s[..., None], v], axis=-1)


def conj(q):
    return q * np.array([1.0, -1.0, -1.0, -1.0])


def unit_quats(rng, n=None):
    q = rng.normal(size=(4,) if n is None else (n, 4))
    return q / np.linalg.norm(q, axis=-1, keepdims=True)


def hat(v):
    x, y, z = v
    return np.array([[0.0, -z, y], [z, 0.0, -x], [-y, x, 0.0]])


def energy(m, J):
    """m . J^-1 m / 2 (m (..., 3), J broadcast)."""
    w = np.linalg.solve(np.broadcast_to(J, m.shape[:-1] + (3, 3)), m[..., None])[..., 0]
    return 0.5 * np.sum(m * w, axis=-1)


def rel(a, b):
    a, b = np.asarray(a), np.asarray(b)
    return float(np.abs(a - b).max() / max(np.abs(b).max(), 1e-300))


I0 = np.array([0.8, 1.3, 2.1])        # principal moments, ascending (the order of eigh)


@pytest.fixture(scope="module")
def body():
    """A tensor J = R0 diag(I0) R0^T, r0 the quaternion of R0, a state in the user frame."""
    rng = np.random.default_rng(20240611)
    r0 = unit_quats(rng)
    R0 = rot_of_quat(r0)
    J = R0 @ np.diag(I0) @ R0.T
    J = 0.5 * (J + J.T)
    q = unit_quats(rng)
    return dict(J=J, R0=R0, r0=r0, m=np.array([0.3, -0.5, 0.8]), q=q, Q=rot_of_quat(q))


@pytest.fixture(scope="module")
def batch():
    """n bodies with a tensor each (J (n, 3, 3) = R0 diag(I) R0^T, moments ascending)."""
    rng = np.random.default_rng(7)
    n = 11
    r0 = unit_quats(rng, n)
    R0 = rot_of_quat(r0)
    I = np.sort(rng.uniform(0.5, 2.5, size=(n, 3)), axis=1)
    J = R0 @ (I[:, :, None] * np.eye(3)) @ np.swapaxes(R0, 1, 2)
    J = 0.5 * (J + np.swapaxes(J, 1, 2))
    q = unit_quats(rng, n)
    return dict(J=J, I=I, R0=R0, r0=r0, m=rng.normal(size=(n, 3)), q=q, Q=rot_of_quat(q),
                h=rng.uniform(-0.3, 0.3, n))


def into(R0, m):
    """R0^T m over the last axis (R0 (3, 3) or per body)."""
    return np.einsum("...ji,...j->...i", R0, m)


def back(R0, m):
    return np.einsum("...ij,...j->...i", R0, m)


# ---------------------------------------------------------------- principal_axes


def check_axes(J, moments, R, tol=1e-14):
    J = np.asarray(J)
    D = moments[..., :, None] * np.eye(3)
    scale = np.abs(J).max()
    assert np.abs(R @ D @ np.swapaxes(R, -1, -2) - J).max() <= tol * scale
    assert np.abs(np.swapaxes(R, -1, -2) @ R - np.eye(3)).max() <= tol
    assert np.abs(np.linalg.det(R) - 1.0).max() <= tol
    assert (np.diff(moments, axis=-1) >= 0).all()


def test_principal_axes_of_a_turned_body(body):
    moments, R = frb.principal_axes(body["J"])
    assert moments.shape == (3,) and R.shape == (3, 3)
    check_axes(body["J"], moments, R)
    assert rel(moments, I0) < 1e-14
    # the axes are R0's up to signs (distinct moments)
    assert np.abs(np.abs(R.T @ body["R0"]) - np.eye(3)).max() < 1e-14


def test_principal_axes_batch_and_the_frb_namespace(batch):
    assert "principal_axes" in frb.__all__
    moments, R = frb.principal_axes(batch["J"])
    assert moments.shape == (11, 3) and R.shape == (11, 3, 3)
    check_axes(batch["J"], moments, R)
    assert rel(moments, batch["I"]) < 1e-14


@pytest.mark.parametrize("diag", [(2.0, 2.0, 2.0), (1.0, 1.0, 3.0), (1.0, 3.0, 3.0),
                                  (2.0, 1.0, 3.0), (3.0, 2.0, 1.0)])
def test_principal_axes_repeated_and_permuted(diag):
    rng = np.random.default_rng(3)
    for R0 in (np.eye(3), rot_of_quat(unit_quats(rng))):
        J = R0 @ np.diag(diag) @ R0.T
        moments, R = frb.principal_axes(J)
        check_axes(J, moments, R)
        assert rel(moments, np.sort(diag)) < 1e-14


@given(st.lists(st.floats(-1.0, 1.0), min_size=4, max_size=4).filter(
           lambda v: np.linalg.norm(v) > 0.1),
       st.lists(st.floats(0.01, 100.0), min_size=3, max_size=3),
       st.integers(-300, 300))
def test_principal_axes_random_spd(r, moments, exponent):
    r = np.asarray(r) / np.linalg.norm(r)
    R0 = rot_of_quat(r)
    scale = 2.0**exponent
    J = R0 @ np.diag(np.asarray(moments) * scale) @ R0.T
    J = 0.5 * (J + J.T)
    got, R = frb.principal_axes(J)
    check_axes(J, got, R, tol=2e-14)
    assert np.abs(got - np.sort(moments) * scale).max() <= 1e-14 * max(moments) * scale


# ---------------------------------------------------------------- the exact steps


def test_frb_step_equals_the_principal_run_mapped_back(body):
    J, R0, m, Q = body["J"], body["R0"], body["m"], body["Q"]
    I, R = frb.principal_axes(J)
    for h in (0.3, -2.5, 40.0):
        for quadrature in (0, 3):
            m1, Q1 = frb.frb_step(m, Q, h, J, quadrature)
            # in the frame of principal_axes, to rounding: the momenta given to the two runs
            # differ by the rounding of R^T m, an error that the step carries as |h| (its
            # derivatives grow with the phase)
            mp, Qp = frb.frb_step(into(R, m), Q @ R, h, I, quadrature)
            assert rel(m1, back(R, mp)) < 1e-15 * (1 + abs(h) / 8)
            assert np.abs(Q1 - Qp @ R.T).max() < 1e-15 * (1 + abs(h) / 8)
            # in the frame the tensor was made from: the moments and axes differ from
            # principal_axes' by rounding, an error of the phase growing as |h|
            mp, Qp = frb.frb_step(into(R0, m), Q @ R0, h, I0, quadrature)
            assert rel(m1, back(R0, mp)) < 1e-15 * (2 + abs(h))
            assert np.abs(Q1 - Qp @ R0.T).max() < 1e-15 * (2 + abs(h))


def test_quat_step_equals_the_principal_run_mapped_back(body):
    J, R0, r0, m, q = body["J"], body["R0"], body["r0"], body["m"], body["q"]
    m1, q1 = frb.quat_step(m, q, 1.7, J)
    mp, qp = frb.quat_step(into(R0, m), hamilton(q, r0), 1.7, I0)
    assert rel(m1, back(R0, mp)) < 2e-15
    qb = hamilton(qp, conj(r0))
    assert min(np.abs(q1 - qb).max(), np.abs(q1 + qb).max()) < 2e-15


def test_steps_of_a_batch_with_a_tensor_per_body(batch):
    b = batch
    m1, Q1 = frb.frb_step(b["m"], b["Q"], b["h"], b["J"])
    mp, Qp = frb.frb_step(into(b["R0"], b["m"]), b["Q"] @ b["R0"], b["h"], b["I"])
    assert rel(m1, back(b["R0"], mp)) < 1e-14
    assert np.abs(Q1 - Qp @ np.swapaxes(b["R0"], 1, 2)).max() < 1e-14
    m2, q2 = frb.quat_step(b["m"], b["q"], b["h"], b["J"], quadrature=4)
    mp, qp = frb.quat_step(into(b["R0"], b["m"]), hamilton(b["q"], b["r0"]), b["h"], b["I"],
                           quadrature=4)
    assert rel(m2, back(b["R0"], mp)) < 1e-14
    assert np.abs(np.abs(np.sum(q2 * hamilton(qp, conj(b["r0"])), axis=1)) - 1).max() < 1e-14


def test_a_batch_mixing_diagonal_and_turned_tensors(batch):
    """Diagonal tensors (moments as given, not sorted) among turned ones: each body as alone."""
    b = batch
    J = b["J"].copy()
    J[2] = np.diag([2.0, 0.6, 1.1])
    J[7] = np.diag([0.9, 1.9, 0.5])
    m1, q1 = frb.quat_step(b["m"], b["q"], b["h"], J)
    for j in range(11):
        mj, qj = frb.quat_step(b["m"][j], b["q"][j], b["h"][j], J[j])
        assert rel(m1[j], mj) < 1e-15 and np.abs(q1[j] - qj).max() < 1e-15
    for j in (2, 7):
        assert np.array_equal(m1[j], frb.quat_step(b["m"][j], b["q"][j], b["h"][j],
                                                   np.diagonal(J[j]))[0])


def test_a_tensor_shared_by_a_batch(batch, body):
    b = batch
    for J in (body["J"], body["J"][None]):          # (3, 3) with n = 11, and (1, 3, 3)
        m1, Q1 = frb.frb_step(b["m"], b["Q"], 0.4, J)
        for j in (0, 5, 10):
            mj, Qj = frb.frb_step(b["m"][j], b["Q"][j], 0.4, body["J"])
            assert rel(m1[j], mj) < 1e-15 and np.abs(Q1[j] - Qj).max() < 1e-15


def test_diagonal_tensors_are_the_moments_bit_for_bit(batch):
    b = batch
    I = np.array([2.0, 0.7, 1.4])                  # not in ascending order
    m, Q, q = b["m"][0], b["Q"][0], b["q"][0]
    for step, a in ((frb.frb_step, Q), (frb.quat_step, q)):
        for got, want in zip(step(m, a, 0.9, np.diag(I)), step(m, a, 0.9, I)):
            assert np.array_equal(got, want)
    per_body = b["I"][:, :, None] * np.eye(3)
    for got, want in zip(frb.frb_step(b["m"], b["Q"], b["h"], per_body),
                         frb.frb_step(b["m"], b["Q"], b["h"], b["I"])):
        assert np.array_equal(got, want)
    for got, want in zip(frb.dmv_step(m, q, 0.1, np.diag(I)), frb.dmv_step(m, q, 0.1, I)):
        assert np.array_equal(got, want)
    for method in ("EXACT", "RK4", "DMV6", "RKN6_14"):
        torque = None if method == "EXACT" else heavy_top(1.0, [0.1, 0.0, 0.3])
        t1 = frb.integrate(b["m"], b["Q"], per_body, 0.05, 20, method=method, torque=torque)
        t2 = frb.integrate(b["m"], b["Q"], b["I"], 0.05, 20, method=method, torque=torque)
        for name in ("m", "q", "Q", "energy", "spatial_momentum"):
            assert np.array_equal(getattr(t1, name), getattr(t2, name)), (method, name)
        assert t1.inertia.shape == (11, 3, 3)
    s1 = frb.splitting.integrate(m, Q, np.diag(I), 0.1, 10, torque=constant_field([0, 0, 1.0]))
    s2 = frb.splitting.integrate(m, Q, I, 0.1, 10, torque=constant_field([0, 0, 1.0]))
    assert np.array_equal(s1.m, s2.m) and np.array_equal(s1.Q, s2.Q)


# ---------------------------------------------------------------- the N = 3 rule


def test_three_bodies_and_a_3_by_3_inertia(batch, body):
    b = batch
    m, Q = b["m"][:3], b["Q"][:3]
    moments = np.array([[1.0, 2.0, 3.0], [0.5, 0.6, 0.7], [2.0, 1.0, 1.5]])
    # (3, 3) with three bodies: the moments of each body
    m1, Q1 = frb.frb_step(m, Q, 0.3, moments)
    for j in range(3):
        mj, Qj = frb.frb_step(m[j], Q[j], 0.3, moments[j])
        assert np.array_equal(m1[j], mj) and np.array_equal(Q1[j], Qj)
    # (1, 3, 3): one tensor for the three bodies
    m2, Q2 = frb.frb_step(m, Q, 0.3, body["J"][None])
    for j in range(3):
        mj, Qj = frb.frb_step(m[j], Q[j], 0.3, body["J"])
        assert rel(m2[j], mj) < 1e-15 and np.abs(Q2[j] - Qj).max() < 1e-15
    # (3, 3) with two or four bodies: one tensor
    for n in (2, 4):
        m3, _ = frb.frb_step(b["m"][:n], b["Q"][:n], 0.3, body["J"])
        assert rel(m3[1], frb.frb_step(b["m"][1], b["Q"][1], 0.3, body["J"])[0]) < 1e-15
    # the same rule in integrate
    tr = frb.integrate(m, Q, moments, 0.1, 3, method="EXACT")
    assert tr.inertia.shape == (3, 3)
    m2, Q2 = m[2], Q[2]
    for _ in range(3):
        m2, Q2 = frb.frb_step(m2, Q2, 0.1, moments[2])
    assert np.array_equal(tr.m[-1, 2], m2)
    tr = frb.integrate(m, Q, body["J"][None], 0.1, 3, method="EXACT")
    assert tr.inertia.shape == (3, 3, 3)


# ---------------------------------------------------------------- every route, mapped by hand


def test_dmv_routes(body, batch):
    J, R0, r0, m, q = body["J"], body["R0"], body["r0"], body["m"], body["q"]
    for order in (2, 6):
        m1, q1 = frb.dmv_step(m, q, 0.1, J, order=order)
        mp, qp = frb.dmv_step(into(R0, m), hamilton(q, r0), 0.1, I0, order=order)
        assert rel(m1, back(R0, mp)) < 1e-14
        assert np.abs(q1 - hamilton(qp, conj(r0))).max() < 1e-14
    m1, q1 = frb.dmv_integrate(m, q, J, 0.05, 40, order=8)
    mp, qp = frb.dmv_integrate(into(R0, m), hamilton(q, r0), I0, 0.05, 40, order=8)
    assert rel(m1, back(R0, mp)) < 1e-13
    assert np.abs(q1 - hamilton(qp, conj(r0))).max() < 1e-13
    b = batch
    m1, q1 = frb.dmv_integrate(b["m"], b["q"], b["J"], 0.05, 30, order=4)
    mp, qp = frb.dmv_integrate(into(b["R0"], b["m"]), hamilton(b["q"], b["r0"]), b["I"], 0.05, 30,
                               order=4)
    assert rel(m1, back(b["R0"], mp)) < 1e-13
    assert np.abs(q1 - hamilton(qp, conj(b["r0"]))).max() < 1e-13


METHODS_WITH_TOP = ["STRANG", "RKN6_14", "DMV2", "DMV4", "SPLIT3", "MIDPOINT", "NYSTROM4", "RK4",
                    "TERZE", "TRAP", "IMID", "SWC1", "AKW", "BBTRAP"]


@pytest.mark.parametrize("method", METHODS_WITH_TOP)
@pytest.mark.parametrize("form", ["quaternion", "matrix"])
def test_integrate_equals_the_principal_run_mapped_back(body, method, form):
    J, R0, r0, m = body["J"], body["R0"], body["r0"], body["m"]
    c = np.array([0.1, -0.2, 0.3])
    a = body["q"] if form == "quaternion" else body["Q"]
    ap = hamilton(a, r0) if form == "quaternion" else a @ R0
    tr = frb.integrate(m, a, J, 0.02, 50, method=method, torque=heavy_top(1.5, c),
                       save_every=10)
    tp = frb.integrate(into(R0, m), ap, I0, 0.02, 50, method=method,
                       torque=heavy_top(1.5, into(R0, c)), save_every=10)
    assert tr.form == form and tr.m.shape == (6, 3) and tr.inertia.shape == (3, 3)
    assert rel(tr.m, back(R0, tp.m)) < 1e-13
    assert np.abs(tr.Q - tp.Q @ R0.T).max() < 1e-13
    qb = hamilton(tp.q, conj(r0))
    assert np.abs(np.abs(np.sum(tr.q * qb, axis=-1)) - 1).max() < 1e-13
    # the user-frame properties
    assert rel(tr.kinetic_energy, energy(tr.m, J)) < 1e-14
    assert rel(tr.energy, tp.energy) < 1e-13
    assert rel(tr.spatial_momentum, np.einsum("kij,kj->ki", tr.Q, tr.m)) < 1e-15


def test_integrate_batch_per_body_tensors(batch):
    b = batch
    field = constant_field([0.3, -0.2, 1.0])
    tr = frb.integrate(b["m"], b["q"], b["J"], 0.05, 20, method="RKN6_14", torque=field,
                       save_every=5)
    # per-body frames: the field acts on the body point R0^T e3 of each body's principal frame
    # (compiled, a block of per-body parameters); the reference runs each body alone
    for j in (0, 4, 10):
        R0 = b["R0"][j]
        turned = ConstantField(field.u0, into(R0, field.center))
        tp = frb.integrate(into(R0, b["m"][j]), hamilton(b["q"][j], b["r0"][j]), b["I"][j], 0.05,
                           20, method="RKN6_14", torque=turned, save_every=5)
        assert rel(tr.m[:, j], back(R0, tp.m)) < 1e-13
        assert np.abs(tr.Q[:, j] - tp.Q @ R0.T).max() < 1e-13
    assert tr.inertia.shape == (11, 3, 3)
    assert rel(tr.kinetic_energy, energy(tr.m, b["J"])) < 1e-14
    assert rel(tr.potential_energy, field.potential(tr.Q)) < 1e-15


def test_integrate_with_user_torques(body):
    """A user torque of the user frame, called from Python in the principal frame, equals the
    compiled heavy top (whose centre is turned)."""
    J, m, Q = body["J"], body["m"], body["Q"]
    c = np.array([0.2, 0.1, 0.4])
    calls = []

    def top(t, Qs):
        calls.append(Qs.shape)
        return 2.0 * np.cross(Qs[..., 2, :], c)

    t1 = frb.integrate(m, Q, J, 0.02, 30, method="RK4", torque=top)
    t2 = frb.integrate(m, Q, J, 0.02, 30, method="RK4", torque=heavy_top(2.0, c))
    assert calls and calls[0] == (1, 3, 3)
    assert rel(t1.m, t2.m) < 1e-14 and np.abs(t1.Q - t2.Q).max() < 1e-14
    assert t1.torque is top


def test_gravity_gradient_is_the_same_formula_in_the_principal_frame(body, batch):
    J, R0, r0, m, q = body["J"], body["R0"], body["r0"], body["m"], body["q"]
    gg = gravity_gradient(0.7)
    assert gg.in_frame(R0) is gg and gg.in_frame(batch["R0"]) is gg
    # written out: T_b = 3 n^2 c x (J c), c = Q^T r(t), in the user frame; the principal frame's
    # torque with the principal moments is R0^T T_b
    t, Qu = 0.9, body["Q"]
    r = np.array([np.cos(0.7 * t), np.sin(0.7 * t), 0.0])
    cu = Qu.T @ r
    Tu = 3 * 0.7**2 * np.cross(cu, J @ cu)
    assert rel(gg(t, Qu @ R0, inertia=I0), R0.T @ Tu) < 1e-14
    tr = frb.integrate(m, q, J, 0.1, 30, method="DMV6", torque=gg, save_every=None)
    tp = frb.integrate(into(R0, m), hamilton(q, r0), I0, 0.1, 30, method="DMV6", torque=gg,
                       save_every=None)
    assert rel(tr.m, back(R0, tp.m)) < 1e-13


def test_splitting_integrate(body):
    J, R0, m, Q = body["J"], body["R0"], body["m"], body["Q"]
    u0 = np.array([0.2, 0.0, 1.0])
    for torque, ref in ((None, None), (constant_field(u0), ConstantField(u0, R0.T[:, 2]))):
        tr = frb.splitting.integrate(m, Q, J, 0.1, 25, torque=torque, save_every=5)
        tp = frb.splitting.integrate(into(R0, m), Q @ R0, I0, 0.1, 25, torque=ref, save_every=5)
        assert rel(tr.m, back(R0, tp.m)) < 1e-13
        assert np.abs(tr.Q - tp.Q @ R0.T).max() < 1e-13
        # the same numbers as frb.integrate with the tensor
        ti = frb.integrate(m, Q, J, 0.1, 25, method="EXACT" if torque is None else "RKN6_14",
                           torque=torque, save_every=5)
        assert rel(tr.m, ti.m) < 1e-15

    # a torque flow flow(m, Q, t) of the user frame: the kick of the field, written out
    def kick(mu, Qu, t):
        assert not Qu.flags.writeable
        return mu + t * np.cross(Qu.T @ u0, [0.0, 0.0, 1.0]), Qu

    # (the kick's operations are not the compiled field's: rounding, 350 flows of RKN6_14)
    tf = frb.splitting.integrate(m, Q, J, 0.1, 25, torque=kick, save_every=5)
    tr = frb.splitting.integrate(m, Q, J, 0.1, 25, torque=constant_field(u0), save_every=5)
    assert rel(tf.m, tr.m) < 1e-12 and np.abs(tf.Q - tr.Q).max() < 1e-12


# ---------------------------------------------------------------- against scipy, the user frame


def user_frame_rhs(J, torque):
    Jinv = np.linalg.inv(J)

    def rhs(t, y):
        m, Q = y[:3], y[3:].reshape(3, 3)
        w = Jinv @ m
        dm = np.cross(m, w) + (torque(t, Q) if torque is not None else 0.0)
        return np.concatenate([dm, (Q @ hat(w)).ravel()])
    return rhs


@pytest.mark.parametrize("case", ["free", "heavy top", "field"])
def test_integrate_against_dop853_in_the_user_frame(body, case):
    integrate_ivp = pytest.importorskip("scipy.integrate").solve_ivp
    J, m, Q = body["J"], body["m"], body["Q"]
    c, w = np.array([0.1, 0.2, 0.3]), 1.2
    u0 = np.array([0.4, -0.3, 1.0])
    torques = {"free": (None, None),
               "heavy top": (heavy_top(w, c), lambda t, Q: w * np.cross(Q[2], c)),
               "field": (constant_field(u0), lambda t, Q: np.cross(Q.T @ u0, [0.0, 0.0, 1.0]))}
    tq, written = torques[case]
    T, nsteps = 2.0, 400
    sol = integrate_ivp(user_frame_rhs(J, written), (0.0, T), np.concatenate([m, Q.ravel()]),
                        method="DOP853", rtol=1e-13, atol=1e-15, t_eval=[T])
    m_ref, Q_ref = sol.y[:3, -1], sol.y[3:, -1].reshape(3, 3)
    if tq is None:
        tr = frb.integrate(m, Q, J, T / nsteps, nsteps, method="EXACT", save_every=None)
        tol = 1e-12
    else:
        tr = frb.integrate(m, Q, J, T / nsteps, nsteps, method="RKN6_14", torque=tq,
                           save_every=None)
        tol = 1e-11
    assert rel(tr.m[-1], m_ref) < tol
    assert np.abs(tr.Q[-1] - Q_ref).max() < tol


# ---------------------------------------------------------------- conservation, user frame


def test_conservation_in_the_user_frame(body, batch):
    J, m, q = body["J"], body["m"], body["q"]
    # the exact flow, 400 steps: the rounding of each step (the principal run's drift on this
    # orbit: 4.9e-14 of the energy)
    eps400 = 400 * np.finfo(float).eps
    tr = frb.integrate(m, q, J, 0.5, 400, method="EXACT", save_every=20)
    e = energy(tr.m, J)
    assert np.abs(e - e[0]).max() < eps400 * e[0]
    assert rel(tr.kinetic_energy, e) < 1e-14
    L = np.einsum("kij,kj->ki", frb.quat_to_matrix(tr.q), tr.m)
    assert np.abs(L - L[0]).max() < eps400 * np.linalg.norm(m)
    assert rel(tr.spatial_momentum, L) < 1e-14
    # a batch with a tensor per body, DMV6
    b = batch
    tb = frb.integrate(b["m"], b["q"], b["J"], 0.05, 200, method="DMV6", save_every=50)
    e = energy(tb.m, b["J"])
    assert np.abs(e - e[0]).max() < 1e-13 * np.abs(e).max()
    L = np.einsum("knij,knj->kni", tb.Q, tb.m)
    assert np.abs(L - L[0]).max() < 1e-13
    # the heavy top: the total energy and the vertical Q m (the splitting conserves it)
    c = np.array([0.0, 0.1, 0.2])
    th = frb.integrate(m, q, J, 0.01, 300, method="RKN6_14", torque=heavy_top(1.0, c),
                       save_every=30)
    total = energy(th.m, J) + np.einsum("ki,i->k", th.Q[:, 2, :], c)
    assert np.abs(total - total[0]).max() < 1e-10
    assert rel(th.energy, total) < 1e-14
    Lz = np.einsum("kj,kj->k", th.Q[:, 2, :], th.m)
    assert np.abs(Lz - Lz[0]).max() < 300 * np.finfo(float).eps      # rounding, 300 steps


# ---------------------------------------------------------------- bad tensors


BAD = {
    "not symmetric": [[1.0, 0.1, 0.0], [0.0, 2.0, 0.0], [0.0, 0.0, 3.0]],
    "indefinite": [[1.0, 2.0, 0.0], [2.0, 1.0, 0.0], [0.0, 0.0, 3.0]],
    "negative diagonal": [[1.0, 0.0, 0.0], [0.0, -2.0, 0.0], [0.0, 0.0, 3.0]],
    "singular": [[1.0, 1.0, 0.0], [1.0, 1.0, 0.0], [0.0, 0.0, 3.0]],
    "NaN": [[1.0, 0.0, 0.0], [0.0, np.nan, 0.0], [0.0, 0.0, 3.0]],
}


def routes(J):
    m, q, Q = np.array([0.3, 0.5, 0.8]), np.array([1.0, 0.0, 0.0, 0.0]), np.eye(3)
    return [lambda: frb.frb_step(m, Q, 0.1, J), lambda: frb.quat_step(m, q, 0.1, J),
            lambda: frb.dmv_step(m, q, 0.1, J), lambda: frb.dmv_integrate(m, q, J, 0.1, 3),
            lambda: frb.integrate(m, q, J, 0.1, 3, method="RK4"),
            lambda: frb.splitting.integrate(m, Q, J, 0.1, 3),
            lambda: frb.principal_axes(J)]


@pytest.mark.parametrize("what", list(BAD))
def test_bad_tensors_are_refused_naming_inertia(what):
    for route in routes(np.array(BAD[what])):
        with pytest.raises(ValueError, match="inertia"):
            route()


def test_bad_tensor_messages_and_shapes(batch):
    with pytest.raises(ValueError, match=r"inertia must be a symmetric matrix.*J\[0, 1\]"):
        frb.frb_step([0.3, 0.5, 0.8], np.eye(3), 0.1, BAD["not symmetric"])
    with pytest.raises(ValueError, match=r"inertia must be positive definite.*eigenvalues"):
        frb.frb_step([0.3, 0.5, 0.8], np.eye(3), 0.1, BAD["indefinite"])
    with pytest.raises(ValueError, match=r"inertia contains non-finite values"):
        frb.quat_step([0.3, 0.5, 0.8], [1.0, 0, 0, 0], 0.1, BAD["NaN"])
    # symmetric within 1e-12 relative is accepted
    J = np.diag([1.0, 2.0, 3.0]) + 1e-13 * np.array([[0, 1, 0], [0, 0, 0], [0, 0, 0]])
    frb.frb_step([0.3, 0.5, 0.8], np.eye(3), 0.1, J)
    # a bad body of a batch is named
    Js = batch["J"].copy()
    Js[6] = BAD["indefinite"]
    with pytest.raises(ValueError, match=r"positive definite \(an inertia tensor\) \(body 6\)"):
        frb.frb_step(batch["m"], batch["Q"], 0.1, Js)
    # wrong shapes
    with pytest.raises(ValueError, match=r"inertia tensors must have shape.*\(11, 3, 3\), got "
                                         r"\(2, 3, 3\)"):
        frb.frb_step(batch["m"], batch["Q"], 0.1, batch["J"][:2])
    with pytest.raises(ValueError, match=r"inertia.*got \(2, 3, 3\)"):
        frb.integrate([0.3, 0.5, 0.8], np.eye(3), batch["J"][:2], 0.1, 3, method="RK4")
    with pytest.raises(ValueError, match="inertia"):
        frb.principal_axes(np.eye(4))
    with pytest.raises(TypeError, match="inertia"):
        frb.principal_axes([["a", "b", "c"]] * 3)
    with pytest.raises(TypeError, match="inertia"):
        frb.frb_step([0.3, 0.5, 0.8], np.eye(3), 0.1, [[1.0, 0.0, True]] * 3)


# ---------------------------------------------------------------- torques in a frame


def test_torque_in_frame(body, batch):
    R0 = body["R0"]
    Qs = frb.quat_to_matrix(unit_quats(np.random.default_rng(5), 4))
    u0 = [0.5, -0.1, 1.0]
    for tq in (constant_field(u0), heavy_top(3.0, [0.1, 0.2, 0.3]),
               ConstantField(u0, [1.0, 0.0, 0.5])):
        turned = tq.in_frame(R0)
        assert type(turned) is type(tq) and turned.compiled is not None
        assert rel(turned.center, R0.T @ tq.center) < 1e-15
        # T'(t, Q') = R^T T(t, Q' R^T)
        Qp = Qs @ R0
        assert rel(turned(0.0, Qp), into(R0, tq(0.0, Qs))) < 1e-14
        assert pickle.loads(pickle.dumps(turned)).center.tolist() == turned.center.tolist()
    # per body: the field with a body point per body, compiled (a block of per-body parameters)
    per_body = constant_field(u0).in_frame(batch["R0"][:4])
    assert isinstance(per_body, ConstantField) and per_body.compiled is not None
    assert per_body.compiled.body.shape[0] == 4 and per_body.compiled.blocks == (1,)
    Qp = Qs @ batch["R0"][:4]
    assert rel(per_body(0.0, Qp), into(batch["R0"][:4], constant_field(u0)(0.0, Qs))) < 1e-14
    pickle.loads(pickle.dumps(per_body))

    # a torque of the angular momentum: T'(t, Q', m') = R^T T(t, Q' R^T, R m')
    def damping(t, Q, m):
        return -0.1 * m + np.cross(Q[..., 2, :], m)

    turned = UserTorque(damping).in_frame(R0)
    assert turned.uses_momentum
    ms = np.random.default_rng(6).normal(size=(4, 3))
    assert rel(turned(0.0, Qs @ R0, into(R0, ms)), into(R0, damping(0.0, Qs, ms))) < 1e-14
    with pytest.raises(ValueError, match="R must be a rotation"):
        constant_field(u0).in_frame(np.diag([1.0, 1.0, -1.0]))
    assert isinstance(gravity_gradient(1.0).in_frame(R0), GravityGradient)
    assert isinstance(heavy_top(1.0, [0, 0, 1.0]).in_frame(R0[None]), HeavyTop)


# ---------------------------------------------------------------- dask, chunk by chunk


def test_dask_routes_equal_in_process(batch, body):
    da = pytest.importorskip("dask.array")
    import dask
    import frb.dask
    b = batch
    dm = da.from_array(b["m"], chunks=(3, 3))      # chunks of 3, 3, 3 and 2 bodies
    with dask.config.set(scheduler="synchronous"):
        for J in (body["J"], body["J"][None], b["J"], da.from_array(b["J"], chunks=(5, 3, 3))):
            got = dask.compute(*frb.dask.frb_step(dm, b["Q"], b["h"], J))
            want = frb.frb_step(b["m"], b["Q"], b["h"], np.asarray(J))
            assert all(np.array_equal(g, w) for g, w in zip(got, want))
            got = dask.compute(*frb.dask.quat_step(dm, b["q"], 0.2, J, quadrature=2))
            want = frb.quat_step(b["m"], b["q"], 0.2, np.asarray(J), quadrature=2)
            assert all(np.array_equal(g, w) for g, w in zip(got, want))
            lazy = frb.dask.integrate(dm, b["q"], J, 0.05, 6, method="RKN6_14",
                                      torque=heavy_top(1.0, [0.0, 0.1, 0.2]), save_every=3)
            tr = lazy.compute()
            want = frb.integrate(b["m"], b["q"], np.asarray(J), 0.05, 6, method="RKN6_14",
                                 torque=heavy_top(1.0, [0.0, 0.1, 0.2]), save_every=3)
            assert np.array_equal(tr.m, want.m) and np.array_equal(tr.q, want.q)
            assert tr.inertia.shape == (11, 3, 3)
            assert rel(tr.energy, want.energy) < 1e-15


# ---------------------------------------------------------------- tensors near the float64 range

#: a tensor whose moments (1.7e308, 0.3e308, 1e308) and momenta near the largest float64
NEAR_MAX_J = np.array([[1e308, 0.7e308, 0.0], [0.7e308, 1e308, 0.0], [0.0, 0.0, 1e308]])


@pytest.mark.parametrize("scale", [1.0, 2.0**-1000, 2.0**-1040])
def test_kinetic_energy_of_a_tensor_at_any_scale(scale):
    # m along the axis of the largest moment: the principal-frame component 2.4e308 * scale is
    # beyond the float64 range for scale 1, the energy |m|^2 / (2 * 1.7e308) is not
    m = np.array([1.7e308, 1.7e308, 0.0]) * scale
    J = NEAR_MAX_J * scale
    expected = 0.5 * (1.7 ** 2 * 2) / 1.7 * 1e308 * scale
    assert abs(frb.kinetic_energy(m, J) / expected - 1) < 1e-15


def test_momenta_beyond_the_range_in_the_principal_frame_are_named():
    with pytest.raises(ValueError, match="m: the momentum along the principal axes of inertia is "
                                         "beyond the float64 range"):
        frb.frb_step([1.7e308, 1.7e308, 0.0], np.eye(3), 1e-300, NEAR_MAX_J)
    with pytest.raises(ValueError, match="m0: the momentum along the principal axes"):
        frb.integrate([1.7e308, 1.7e308, 0.0], np.eye(3), NEAR_MAX_J, 1e-300, 2, method="RK4")
    # within the range there, the run keeps the momentum and the energy |m|^2 / (2 * 1.7e308)
    tr = frb.integrate([1.2e308, 1.2e308, 0.0], np.eye(3), NEAR_MAX_J, 1e-300, 2, method="EXACT")
    np.testing.assert_allclose(tr.m[-1], [1.2e308, 1.2e308, 0.0], rtol=1e-15)
    np.testing.assert_allclose(tr.energy, 1.2 ** 2 / 1.7 * 1e308, rtol=1e-15)


@pytest.mark.parametrize("diag", [[1e-200, 1.0, 1e200], [3.0, 1.0, 2.0], [2.0, 3.0, 1.0]])
def test_principal_axes_of_diagonal_tensors_at_any_ratio(diag):
    # the entries ascending, the axes a proper permutation: J = R diag(moments) R^T exactly
    moments, R = frb.principal_axes(np.diag(diag))
    assert moments.tolist() == sorted(diag)
    assert np.array_equal(np.abs(R), np.abs(R).round()) and np.linalg.det(R) == 1.0
    assert np.array_equal(R @ np.diag(moments) @ R.T, np.diag(diag))


def test_kinetic_energy_of_one_tensor_for_momenta_of_any_batch_shape():
    J = np.array([[2.0, 0.5, 0.5], [0.5, 2.0, 0.5], [0.5, 0.5, 2.0]])
    m = np.random.default_rng(3).normal(size=(2, 4, 3))
    assert rel(frb.kinetic_energy(m, J[None]), energy(m, J)) < 1e-15
