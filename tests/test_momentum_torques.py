"""Torques of the angular momentum: frb.torques.linear_damping, rotor, attitude_control, their
sums and user torques ``torque(t, Q, m)``, through :func:`frb.integrate`.

Every number is compared with the independent references of ``torqued_reference.py`` (no frb in
them): the 40-digit Taylor solution of the damped body, and scipy's DOP853 (rtol 1e-13) on the
equations in the user's frame with a full inertia tensor. Each tolerance is about ten times the
value measured when the test was written (given beside it).
"""
from __future__ import annotations

import functools
import pickle

import numpy as np
import pytest

import frb
from frb import torques
from frb.engine import METHODS

import torqued_reference as ref


def _unit(v):
    v = np.asarray(v, dtype=float)
    return v / np.linalg.norm(v, axis=-1, keepdims=True)


def _quat_error(q, q_ref):
    """Largest component of q - q_ref, q taken with the sign nearer to q_ref (q, -q: one
    rotation); both (..., 4)."""
    s = np.where(np.sum(q * q_ref, axis=-1, keepdims=True) < 0, -1.0, 1.0)
    return float(np.abs(s * q - q_ref).max())


# --------------------------------------------------------------------------------------------
# 1. EXACT with linear damping alone: the exact solution (a 40-digit reference)
# --------------------------------------------------------------------------------------------

def _damped_bodies():
    rng = np.random.default_rng(2024)
    moments = [(1.0, 2.0, 3.0), (0.6, 1.1, 2.9), (1.0, 1.0 + 1e-7, 2.0), (2.5, 0.7, 1.3)]
    m0 = rng.normal(size=(len(moments), 3))
    q0 = _unit(rng.normal(size=(len(moments), 4)))
    return m0, q0, np.array(moments)


@functools.lru_cache(maxsize=None)
def _damped_reference(c, t_end):
    """(m, q) of the 40-digit Taylor reference at t_end for each body of _damped_bodies."""
    m0, q0, moments = _damped_bodies()
    states = [ref.damped_reference_mp(m0[j], q0[j], moments[j], c, t_end)
              for j in range(len(m0))]
    return np.array([s.m for s in states]), np.array([s.q for s in states])


# (h, steps): the same end time for the long and the short step
_EXACT_STEPS = {2.0: ((0.5, 4), (0.05, 40)), -1.0: ((-0.5, 2), (-0.05, 20))}


@pytest.mark.parametrize("t_end", [2.0, -1.0], ids=["forward", "backward"])
@pytest.mark.parametrize("c", [0.05, 0.5, 3.0])
def test_exact_with_linear_damping_is_the_exact_solution(c, t_end):
    # measured (m error / |m(T)|, q error), largest over the four bodies, both steps and both
    # routes: forward 3.9e-15, 2.2e-15; backward (c = 3: |m| grows by e^3) 3.8e-15, 3.4e-15
    m0, q0, moments = _damped_bodies()
    m_ref, q_ref = _damped_reference(c, t_end)
    scale = np.linalg.norm(m_ref, axis=1)
    damping = torques.linear_damping(c)
    for h, nsteps in _EXACT_STEPS[t_end]:
        batch = frb.integrate(m0, q0, moments, h, nsteps, method="EXACT", torque=damping,
                              save_every=None)
        assert batch.t[-1] == pytest.approx(t_end, abs=1e-14)
        runs = [("batch", batch.m[-1], batch.q[-1])]
        for j in range(len(m0)):
            one = frb.integrate(m0[j], q0[j], moments[j], h, nsteps, method="EXACT",
                                torque=damping, save_every=None)
            runs.append((f"body {j} alone", one.m[-1][None], one.q[-1][None]))
        for label, m, q in runs:
            rows = slice(None) if label == "batch" else int(label.split()[1])
            err_m = np.max(np.linalg.norm(m - m_ref[rows], axis=-1) / scale[rows])
            err_q = _quat_error(q, q_ref[rows])
            assert err_m < 4e-14, (label, h, err_m)
            assert err_q < 4e-14, (label, h, err_q)


def test_exact_with_linear_damping_scales_the_free_motion():
    # the structure the exact flow is built on: m(t) = e^{-ct} m_free(s), s = (1 - e^{-ct}) / c
    # (measured 2.2e-16 in m, 8.3e-16 in q)
    m0, q0, moments = _damped_bodies()
    c, h, nsteps = 0.7, 0.25, 8
    t = h * nsteps
    s = (1.0 - np.exp(-c * t)) / c
    damped = frb.integrate(m0, q0, moments, h, nsteps, method="EXACT",
                           torque=torques.linear_damping(c), save_every=None)
    free = frb.integrate(m0, q0, moments, s, 1, method="EXACT", save_every=None)
    assert np.abs(damped.m[-1] - np.exp(-c * t) * free.m[-1]).max() < 1e-14
    assert _quat_error(damped.q[-1], free.q[-1]) < 1e-14


# --------------------------------------------------------------------------------------------
# 2. Orders with torques of m against DOP853 (the expected order read from METHODS)
# --------------------------------------------------------------------------------------------

_M0 = np.array([0.3, 0.5, 0.8])
_INERTIA = np.array([1.0, 2.0, 3.0])
_Q0 = ref.quat_to_matrix([0.8, 0.1, -0.3, 0.5])
_Q_REF = np.array([np.cos(0.4), 0.0, np.sin(0.4), 0.0])
_H_ROTOR = np.array([0.1, -0.2, 0.3])
_E3 = np.array([0.0, 0.0, 1.0])


def _user_torque_of_m(t, Q, m):
    return -0.3 * m + 0.1 * np.cross(m, _E3)


def _one_body_user_torque(t, Q, m):
    return -0.3 * np.asarray(m) + 0.1 * np.cross(m, _E3)


# name: (frb torque, reference torque of one body in the same frame, moments J)
def _order_case(name, J=_INERTIA):
    if name == "damping":
        return torques.linear_damping(0.3), ref.damping_torque(0.3)
    if name == "rotor":
        return torques.rotor(_H_ROTOR), ref.rotor_torque(_H_ROTOR, J)
    if name == "attitude_control":
        return (torques.attitude_control(_Q_REF, 0.5, 0.2),
                ref.attitude_control_torque(_Q_REF, 0.5, 0.2, J))
    if name == "top+rotor+damping":
        return (torques.heavy_top(1.0, [0.0, 0.0, 0.5]) + torques.rotor(_H_ROTOR)
                + torques.linear_damping(0.1),
                ref.sum_torque(ref.heavy_top_torque(1.0, [0.0, 0.0, 0.5]),
                               ref.rotor_torque(_H_ROTOR, J), ref.damping_torque(0.1)))
    if name == "user":
        return _user_torque_of_m, _one_body_user_torque
    raise KeyError(name)


_ORDER_TORQUES = ["damping", "rotor", "attitude_control", "top+rotor+damping", "user"]
_ORDER_METHODS = ["STRANG", "YOSHIDA4", "RKN6_14", "RK4", "DMV4", "MIDPOINT"]
_T_ORDER = 2.0


@functools.lru_cache(maxsize=None)
def _dop853_end(name):
    m, Q = ref.dop853_reference(_M0, _Q0, _INERTIA, _order_case(name)[1], _T_ORDER)
    return m[-1], Q[-1]


@pytest.mark.parametrize("method", _ORDER_METHODS)
@pytest.mark.parametrize("name", _ORDER_TORQUES)
def test_order_with_torques_of_m(name, method):
    # errors at T = 2 (measured): smallest 1e-11 (RKN6_14, h = 0.125), largest 2e-3 (MIDPOINT,
    # h = 0.2); fitted orders within 0.11 of the table (YOSHIDA4 with the user torque: 3.89)
    expected = METHODS[method].momentum_order
    assert METHODS[method].momentum and expected is not None
    tq = _order_case(name)[0]
    m_ref, Q_ref = _dop853_end(name)
    # RKN6_14 is the most accurate (4e-12 at h = 0.1 with damping): larger steps for it
    steps = (0.5, 0.25, 0.125) if method == "RKN6_14" else (0.2, 0.1, 0.05)
    errors = []
    for h in steps:
        tr = frb.integrate(_M0, _Q0, _INERTIA, h, round(_T_ORDER / h), method=method, torque=tq,
                           save_every=None)
        errors.append(max(np.abs(tr.m[-1] - m_ref).max(), np.abs(tr.Q[-1] - Q_ref).max()))
    if name == "rotor" and METHODS[method].family == METHODS["EXACT"].family:
        # the exact-flow splittings take the gyrostat's exact flow as their free part: with rotors
        # alone nothing is left to kick, every step is exact (within the reference's accuracy)
        assert max(errors) < 1e-13, errors
        return
    # well above the reference's accuracy (DOP853 at rtol 1e-13 and 1e-14 differ by 4e-15)
    assert min(errors) > 1e-12, errors
    order = np.polyfit(np.log(steps), np.log(errors), 1)[0]
    assert abs(order - expected) < 0.3, (errors, order)


def test_methods_taking_torques_of_m_are_the_tested_ones():
    # the table of orders the test above reads: every method that takes torques of m and
    # claims an order with them (the rest of the DMV family shares DMV4's route)
    claimed = {k for k, v in METHODS.items() if v.momentum and v.momentum_order is not None}
    assert set(_ORDER_METHODS) <= claimed
    assert METHODS["EXACT"].momentum and METHODS["EXACT"].momentum_order is None


# --------------------------------------------------------------------------------------------
# 3. A full inertia tensor: the torques given in the user's frame
# --------------------------------------------------------------------------------------------

def _tensor(rng, moments=(1.0, 1.7, 2.6)):
    R = ref.quat_to_matrix(_unit(rng.normal(size=4)))
    return R @ np.diag(moments) @ R.T


@pytest.mark.parametrize("name", ["damping", "rotor", "attitude_control", "sum"])
def test_full_tensor_with_torques_of_m(name):
    # measured (YOSHIDA4, h = 0.01, T = 2, largest of m and Q): one tensor: damping 4.1e-13,
    # rotor 3.7e-12, attitude_control 1.4e-11, sum 1.8e-11; two bodies of their own tensors (the
    # torque then turned per body) 4.1e-13, 3.7e-12, 1.6e-11, 1.9e-11
    rng = np.random.default_rng(17)
    J = _tensor(rng)
    Js = np.array([J, _tensor(rng, (0.9, 1.4, 3.1))])
    m0 = np.array([[0.4, -0.6, 0.9], [-0.2, 0.7, 0.5]])
    Q0 = np.array([ref.quat_to_matrix([0.8, 0.1, -0.3, 0.5]),
                   ref.quat_to_matrix([0.2, -0.5, 0.6, 0.4])])

    def case(J):
        if name == "sum":
            return (torques.rotor(_H_ROTOR) + torques.attitude_control(_Q_REF, 0.5, 0.2)
                    + torques.linear_damping(0.1),
                    ref.sum_torque(ref.rotor_torque(_H_ROTOR, J),
                                   ref.attitude_control_torque(_Q_REF, 0.5, 0.2, J),
                                   ref.damping_torque(0.1)))
        return _order_case(name, J)

    tq = case(J)[0]
    h, nsteps = 0.01, 200
    one = frb.integrate(m0[0], Q0[0], J, h, nsteps, method="YOSHIDA4", torque=tq,
                        save_every=None)
    m_ref, Q_ref = ref.dop853_reference(m0[0], Q0[0], J, case(J)[1], h * nsteps)
    assert one.m.shape == (1, 3) and one.Q.shape == (1, 3, 3)
    assert np.abs(one.m[-1] - m_ref[-1]).max() < 2e-10
    assert np.abs(one.Q[-1] - Q_ref[-1]).max() < 2e-10
    # a batch of two bodies with a tensor each
    batch = frb.integrate(m0, Q0, Js, h, nsteps, method="YOSHIDA4", torque=tq, save_every=None)
    for j in range(2):
        m_ref, Q_ref = ref.dop853_reference(m0[j], Q0[j], Js[j], case(Js[j])[1], h * nsteps)
        assert np.abs(batch.m[-1, j] - m_ref[-1]).max() < 2e-10, j
        assert np.abs(batch.Q[-1, j] - Q_ref[-1]).max() < 2e-10, j


# --------------------------------------------------------------------------------------------
# 4. The rotor's invariants
# --------------------------------------------------------------------------------------------

def _rotor_batch():
    rng = np.random.default_rng(5)
    m0 = rng.normal(size=(8, 3))
    q0 = _unit(rng.normal(size=(8, 4)))
    h = 0.5 * rng.normal(size=(8, 3))
    return m0, q0, h


# the drift of Q (m + h) over 1000 steps is at most this times h^order (measured: STRANG 0.15,
# YOSHIDA4 0.06, RKN6_14 4.6e-5 at h = 0.1 and 0.05, over the eight bodies)
_MOMENTUM_DRIFT = {"STRANG": 1.5, "YOSHIDA4": 0.6, "RKN6_14": 5e-4}


@pytest.mark.parametrize("method", ["STRANG", "YOSHIDA4", "RKN6_14"])
def test_rotor_invariants(method):
    m0, q0, h_rotor = _rotor_batch()
    rotor = torques.rotor(h_rotor)
    order = METHODS[method].momentum_order
    for h in (0.1, 0.05):
        tr = frb.integrate(m0, q0, _INERTIA, h, 1000, method=method, torque=rotor,
                           save_every=10)
        # the kinetic energy m . I^-1 m / 2: every sub-flow conserves it (measured 4.5e-13;
        # RK4, which does not, 4e-6 at h = 0.1)
        energy = tr.kinetic_energy
        assert np.abs(energy / energy[0] - 1.0).max() < 3e-12
        # the rotor has potential 0: the energy is the kinetic energy
        np.testing.assert_array_equal(tr.energy, energy)
        # Q (m + h): conserved by the exact flow, by the splitting to its order only (the free
        # flow conserves Q m, not Q h)
        L = tr.spatial_momentum
        np.testing.assert_allclose(L, np.einsum("knij,knj->kni", tr.Q, tr.m + h_rotor),
                                   rtol=0, atol=1e-15)
        drift = (np.linalg.norm(L - L[0], axis=-1) / np.linalg.norm(L[0], axis=-1)).max()
        assert drift < _MOMENTUM_DRIFT[method] * h**order, (h, drift)


def test_rotor_spatial_momentum_includes_h():
    # one body and one rotor: Q (m + h), not Q m (they differ by 0.33 here); and it is the
    # conserved quantity of the exact solution (DOP853: measured drift 5.5e-14)
    tr = frb.integrate(_M0, _Q0, _INERTIA, 0.01, 200, method="RK4",
                       torque=torques.rotor(_H_ROTOR), save_every=20)
    L = tr.spatial_momentum
    np.testing.assert_allclose(L, np.einsum("kij,kj->ki", tr.Q, tr.m + _H_ROTOR), rtol=0,
                               atol=1e-15)
    assert np.abs(L - np.einsum("kij,kj->ki", tr.Q, tr.m)).max() > 0.1
    m_ref, Q_ref = ref.dop853_reference(_M0, _Q0, _INERTIA, ref.rotor_torque(_H_ROTOR, _INERTIA),
                                        2.0, t_eval=np.linspace(0.0, 2.0, 11))
    L_ref = np.einsum("kij,kj->ki", Q_ref, m_ref + _H_ROTOR)
    assert np.abs(L_ref - L_ref[0]).max() < 1e-12
    # and a free body: Q m
    free = frb.integrate(_M0, _Q0, _INERTIA, 0.01, 10, method="RK4")
    np.testing.assert_allclose(free.spatial_momentum, np.einsum("kij,kj->ki", free.Q, free.m),
                               rtol=0, atol=1e-15)


# --------------------------------------------------------------------------------------------
# 5. The PD law drives the bodies to their references
# --------------------------------------------------------------------------------------------

@pytest.mark.parametrize("method", ["RK4", "YOSHIDA4"])
def test_attitude_control_reaches_the_reference(method):
    # measured at t = 60 (h = 0.1, kp = 1, kd = 2): |e_v| 3.7e-8, |w| 2.2e-8; at t = 100:
    # 3.0e-13, 1.8e-13 (both methods); at t = 0 |e_v| reaches 0.9
    rng = np.random.default_rng(11)
    n = 6
    m0 = rng.normal(size=(n, 3))
    q0 = _unit(rng.normal(size=(n, 4)))
    q_ref = _unit(rng.normal(size=(n, 4)))
    law = torques.attitude_control(q_ref, 1.0, 2.0)
    tr = frb.integrate(m0, q0, _INERTIA, 0.1, 1000, method=method, torque=law,
                       save_every=100)
    late = tr.t >= 60.0 - 1e-9
    assert late.sum() == 5
    for k in np.flatnonzero(late):
        e = np.array([ref.quat_mul(ref.quat_conj(q_ref[j]), tr.q[k, j]) for j in range(n)])
        assert np.abs(e[:, 1:]).max() < 1e-6, (tr.t[k], e)
        assert np.abs(tr.m[k] / _INERTIA).max() < 1e-6, tr.t[k]
    # they started far from it
    e0 = np.array([ref.quat_mul(ref.quat_conj(q_ref[j]), q0[j]) for j in range(n)])
    assert np.abs(e0[:, 1:]).max() > 0.3
    # per-body references: the batch is the one-body runs bit for bit
    for j in range(n):
        one = frb.integrate(m0[j], q0[j], _INERTIA, 0.1, 1000, method=method,
                            torque=torques.attitude_control(q_ref[j], 1.0, 2.0),
                            save_every=100)
        np.testing.assert_array_equal(one.m, tr.m[:, j])
        np.testing.assert_array_equal(one.q, tr.q[:, j])


def test_attitude_control_is_a_law_of_rotations():
    # q_ref and -q_ref are one rotation: the same motion (measured: bit for bit)
    rng = np.random.default_rng(4)
    m0 = rng.normal(size=(4, 3))
    q0 = _unit(rng.normal(size=(4, 4)))
    for method in ("RK4", "YOSHIDA4"):
        a = frb.integrate(m0, q0, _INERTIA, 0.05, 200, method=method,
                          torque=torques.attitude_control(_Q_REF, 1.0, 2.0), save_every=None)
        b = frb.integrate(m0, q0, _INERTIA, 0.05, 200, method=method,
                          torque=torques.attitude_control(-_Q_REF, 1.0, 2.0), save_every=None)
        assert np.abs(a.m - b.m).max() < 1e-14
        assert np.abs(a.q - b.q).max() < 1e-14


# --------------------------------------------------------------------------------------------
# 6. Sums, compiled or called from Python
# --------------------------------------------------------------------------------------------

def _sum_formula(t, Q, m):
    """heavy_top(1, (0, 0, 0.5)) + rotor(_H_ROTOR) + linear_damping(0.1), written out."""
    top = np.cross(Q[:, 2, :], [0.0, 0.0, 0.5])         # weight (Q^T e_z) x center
    return top + np.cross(_H_ROTOR, m / _INERTIA) - 0.1 * m


def _assert_rk4_runs_agree(m0, q0, torque_a, torque_b):
    """RK4 (40 steps of 0.05) with two torques that compute the same formula: the same states
    to 1e-13 (RK4 evaluates both at the same stages)."""
    a = frb.integrate(m0, q0, _INERTIA, 0.05, 40, method="RK4", torque=torque_a, save_every=None)
    b = frb.integrate(m0, q0, _INERTIA, 0.05, 40, method="RK4", torque=torque_b, save_every=None)
    assert np.abs(a.m - b.m).max() < 1e-13
    assert np.abs(a.q - b.q).max() < 1e-13


def test_sum_of_built_in_torques_is_compiled_and_right():
    total = (torques.heavy_top(1.0, [0.0, 0.0, 0.5]) + torques.rotor(_H_ROTOR)
             + torques.linear_damping(0.1))
    assert total.compiled is not None
    assert len(total.compiled.kinds) == 3
    assert total.uses_momentum and total.needs_inertia
    np.testing.assert_array_equal(total.internal_momentum, _H_ROTOR)
    rng = np.random.default_rng(8)
    m0 = rng.normal(size=(5, 3))
    q0 = _unit(rng.normal(size=(5, 4)))
    # RK4 evaluates the torque at its stages: the compiled sum and the formula from Python agree
    # to rounding (measured 3e-17)
    _assert_rk4_runs_agree(m0, q0, total, _sum_formula)
    # the sum called as a torque is the formula
    Q = frb.quat_to_matrix(q0)
    np.testing.assert_allclose(total(0.0, Q, m0, inertia=_INERTIA), _sum_formula(0.0, Q, m0),
                               rtol=0, atol=1e-15)


def test_sum_with_a_plain_callable_is_called_from_python():
    plain = lambda t, Q, m: -0.2 * m       # noqa: E731
    total = torques.rotor(_H_ROTOR) + plain
    assert total.compiled is None and total.uses_momentum
    compiled = torques.rotor(_H_ROTOR) + torques.linear_damping(0.2)
    assert compiled.compiled is not None
    rng = np.random.default_rng(9)
    m0 = rng.normal(size=(3, 3))
    q0 = _unit(rng.normal(size=(3, 4)))
    # measured 0 (RK4: the same torque at the same stages)
    _assert_rk4_runs_agree(m0, q0, total, compiled)
    # and against DOP853 (YOSHIDA4, h = 0.01: measured 4.6e-13 in m, 2.6e-12 in Q)
    tr = frb.integrate(_M0, _Q0, _INERTIA, 0.01, 200, method="YOSHIDA4", torque=total,
                       save_every=None)
    m_ref, Q_ref = ref.dop853_reference(
        _M0, _Q0, _INERTIA,
        ref.sum_torque(ref.rotor_torque(_H_ROTOR, _INERTIA), ref.damping_torque(0.2)), 2.0)
    assert np.abs(tr.m[-1] - m_ref[-1]).max() < 2e-11
    assert np.abs(tr.Q[-1] - Q_ref[-1]).max() < 2e-11


def test_builtin_sum_of_a_list():
    total = sum([torques.linear_damping(0.1), torques.rotor(_H_ROTOR)])
    assert isinstance(total, torques.TorqueSum) and total.compiled is not None
    assert len(total.terms) == 2
    direct = torques.linear_damping(0.1) + torques.rotor(_H_ROTOR)
    a = frb.integrate(_M0, _Q0, _INERTIA, 0.1, 20, method="YOSHIDA4", torque=total)
    b = frb.integrate(_M0, _Q0, _INERTIA, 0.1, 20, method="YOSHIDA4", torque=direct)
    np.testing.assert_array_equal(a.m, b.m)
    np.testing.assert_array_equal(a.Q, b.Q)


# --------------------------------------------------------------------------------------------
# 7. User torques of m
# --------------------------------------------------------------------------------------------

def test_user_torque_of_m_receives_read_only_momenta():
    seen = []

    def look(t, Q, m):
        seen.append((Q.shape, m.shape, m.flags.writeable, np.array(m)))
        return -0.3 * m

    rng = np.random.default_rng(6)
    m0 = rng.normal(size=(5, 3))
    q0 = _unit(rng.normal(size=(5, 4)))
    frb.integrate(m0, q0, _INERTIA, 0.05, 2, method="YOSHIDA4", torque=look)
    assert seen
    assert all(s[:3] == ((5, 3, 3), (5, 3), False) for s in seen)

    def writes(t, Q, m):
        m[0, 0] = 1.0
        return -m

    for method in ("RK4", "YOSHIDA4"):
        with pytest.raises(ValueError, match=r"writes.*in place"):
            frb.integrate(m0, q0, _INERTIA, 0.05, 4, method=method, torque=writes)
    # the starting momenta are untouched
    assert np.array_equal(m0, np.random.default_rng(6).normal(size=(5, 3)))


def test_user_torque_of_m_is_the_built_in_damping():
    rng = np.random.default_rng(2)
    m0 = rng.normal(size=(4, 3))
    q0 = _unit(rng.normal(size=(4, 4)))
    c = 0.3

    def damping(t, Q, m):
        return -c * m

    # RK4 evaluates it at its stages: measured bit for bit
    a = frb.integrate(m0, q0, _INERTIA, 0.05, 40, method="RK4", torque=torques.linear_damping(c))
    b = frb.integrate(m0, q0, _INERTIA, 0.05, 40, method="RK4", torque=damping)
    assert np.abs(a.m - b.m).max() < 1e-15
    assert np.abs(a.q - b.q).max() < 1e-15
    # the splittings solve a built-in torque of m exactly and a Python one by one RK4 step, so
    # that they differ at the method's order: YOSHIDA4, T = 2, measured 1.9e-9 (h = 0.05) and
    # 3.2e-12 (h = 0.01), a ratio of 5^3.95
    diffs = []
    for h in (0.05, 0.01):
        a = frb.integrate(m0, q0, _INERTIA, h, round(2 / h), method="YOSHIDA4",
                          torque=torques.linear_damping(c), save_every=None)
        b = frb.integrate(m0, q0, _INERTIA, h, round(2 / h), method="YOSHIDA4", torque=damping,
                          save_every=None)
        diffs.append(max(np.abs(a.m - b.m).max(), np.abs(a.q - b.q).max()))
    assert diffs[0] < 2e-8 and diffs[1] < 3e-11, diffs


# --------------------------------------------------------------------------------------------
# 8. Refusals
# --------------------------------------------------------------------------------------------

_OF_M = [torques.linear_damping(0.1), torques.rotor(_H_ROTOR),
         torques.attitude_control(_Q_REF, 1.0, 1.0), _user_torque_of_m]


@pytest.mark.parametrize("method", ["TERZE", "TRAP", "IMID", "BBTRAP", "NYSTROM4"])
@pytest.mark.parametrize("k", range(len(_OF_M)))
def test_methods_without_torques_of_m_refuse_them(method, k):
    assert not METHODS[method].momentum
    with pytest.raises(ValueError, match=method):
        frb.integrate(_M0, _Q0, _INERTIA, 0.1, 2, method=method, torque=_OF_M[k])


@pytest.mark.parametrize("tq", _OF_M[2:] + [
    torques.linear_damping(0.1) + torques.rotor(_H_ROTOR),
], ids=["attitude_control", "user", "damping+rotor"])
def test_exact_takes_linear_damping_or_rotors_only(tq):
    # (rotors alone are the gyrostat, whose exact flow EXACT takes: tests/test_gyrostat.py)
    with pytest.raises(ValueError, match="EXACT"):
        frb.integrate(_M0, _Q0, _INERTIA, 0.1, 2, method="EXACT", torque=tq)


@pytest.mark.parametrize("make, name", [
    (lambda: torques.linear_damping(-1.0), "c"),
    (lambda: torques.linear_damping(float("nan")), "c"),
    (lambda: torques.linear_damping(float("inf")), "c"),
    (lambda: torques.attitude_control(_Q_REF, -1.0, 1.0), "kp"),
    (lambda: torques.attitude_control(_Q_REF, 1.0, -1.0), "kd"),
    (lambda: torques.attitude_control(_Q_REF, float("nan"), 1.0), "kp"),
    (lambda: torques.attitude_control([1.0, 0.0, 0.0, 0.1], 1.0, 1.0), "q_ref"),
    (lambda: torques.attitude_control([1.0, 0.0, 0.0], 1.0, 1.0), "q_ref"),
    (lambda: torques.rotor([1.0, 2.0]), "h"),
    (lambda: torques.rotor(np.zeros((2, 2))), "h"),
    (lambda: torques.rotor([0.0, float("nan"), 1.0]), "h"),
], ids=["c<0", "c nan", "c inf", "kp<0", "kd<0", "kp nan", "q_ref not unit", "q_ref (3,)",
        "h (2,)", "h (2,2)", "h nan"])
def test_bad_parameters_are_refused(make, name):
    with pytest.raises(ValueError, match=rf"\b{name}\b"):
        make()


@pytest.mark.parametrize("tq", [
    torques.attitude_control(np.tile(_Q_REF, (2, 1)), 1.0, 1.0),
    torques.rotor(np.tile(_H_ROTOR, (2, 1))),
    torques.linear_damping(0.1) + torques.rotor(np.tile(_H_ROTOR, (2, 1))),
], ids=["attitude_control", "rotor", "sum"])
def test_per_body_parameters_must_match_the_batch(tq):
    m0 = np.tile(_M0, (3, 1))
    q0 = np.tile([1.0, 0.0, 0.0, 0.0], (3, 1))
    with pytest.raises(ValueError, match="2 bodies"):
        frb.integrate(m0, q0, _INERTIA, 0.1, 2, method="RK4", torque=tq)
    with pytest.raises(ValueError, match="2 bodies"):
        frb.integrate(_M0, q0[0], _INERTIA, 0.1, 2, method="YOSHIDA4", torque=tq)
    # the right count runs
    frb.integrate(m0[:2], q0[:2], _INERTIA, 0.1, 2, method="RK4", torque=tq)


# --------------------------------------------------------------------------------------------
# 9. Pickling and immutability
# --------------------------------------------------------------------------------------------

_NEW_TORQUES = [
    torques.linear_damping(0.3),
    torques.rotor(_H_ROTOR),
    torques.rotor(0.1 * np.arange(6.0).reshape(2, 3)),
    torques.attitude_control(_Q_REF, 1.0, 2.0),
    torques.attitude_control(np.array([_Q_REF, [0.0, 1.0, 0.0, 0.0]]), 1.0, 2.0),
    torques.heavy_top(1.0, [0.0, 0.0, 0.5]) + torques.rotor(_H_ROTOR)
    + torques.linear_damping(0.1),
]
_IDS = ["damping", "rotor", "rotor per body", "attitude_control", "attitude_control per body",
        "sum"]


@pytest.mark.parametrize("tq", _NEW_TORQUES, ids=_IDS)
def test_pickle_round_trip(tq):
    back = pickle.loads(pickle.dumps(tq))
    assert type(back) is type(tq) and repr(back) == repr(tq)
    assert (back.compiled is None) == (tq.compiled is None)
    m0 = np.array([_M0, [-0.4, 0.2, 0.6]])
    q0 = np.array([[1.0, 0.0, 0.0, 0.0], _unit([0.3, -0.2, 0.5, 0.7])])
    a = frb.integrate(m0, q0, _INERTIA, 0.1, 20, method="YOSHIDA4", torque=tq)
    b = frb.integrate(m0, q0, _INERTIA, 0.1, 20, method="YOSHIDA4", torque=back)
    np.testing.assert_array_equal(a.m, b.m)
    np.testing.assert_array_equal(a.q, b.q)


@pytest.mark.parametrize("tq", _NEW_TORQUES, ids=_IDS)
def test_new_torques_are_immutable(tq):
    names = [n for n in ("c", "h", "q_ref", "kp", "kd", "terms") if hasattr(tq, n)]
    assert names
    for name in names + ["something_new"]:
        with pytest.raises(AttributeError):
            setattr(tq, name, 1.0)
    for name in names:
        value = getattr(tq, name)
        if isinstance(value, np.ndarray):
            with pytest.raises(ValueError):
                value[..., 0] = 5.0


def test_new_torques_copy_their_arrays():
    h = _H_ROTOR.copy()
    q = _Q_REF.copy()
    rotor, law = torques.rotor(h), torques.attitude_control(q, 1.0, 2.0)
    h[0] = 9.0
    q[:] = [1.0, 0.0, 0.0, 0.0]
    np.testing.assert_array_equal(rotor.h, _H_ROTOR)
    np.testing.assert_array_equal(law.q_ref, _Q_REF)


def test_a_function_plus_a_torque_and_the_refusals_of_momentum_torques():
    # function + torque (Torque.__radd__) is the sum of the two, T = f(t, Q) - c m, written out
    def field(t, Q):
        return np.cross(np.asarray(Q)[..., 2, :], [0.1, 0.0, 0.5]) * (1 + t)

    damping = frb.torques.linear_damping(0.5)
    total = field + damping
    assert isinstance(total, frb.torques.TorqueSum)
    Q = frb.quat_to_matrix(np.array([[0.5, 0.5, -0.5, 0.5], [np.cos(0.2), np.sin(0.2), 0, 0]]))
    m = np.array([[0.3, -0.5, 0.8], [1.0, 2.0, -0.25]])
    want = np.cross(Q[:, 2, :], [0.1, 0.0, 0.5]) * 1.5 - 0.5 * m
    np.testing.assert_allclose(total(0.5, Q, m), want, rtol=0, atol=1e-15)
    assert sum([damping]) is damping and damping + None is damping
    # a torque of the momentum called without it, and gains that are not finite
    with pytest.raises(TypeError, match=r"linear_damping depends on the angular momentum"):
        damping(0.0, Q)
    with pytest.raises(ValueError, match="kp must be finite"):
        frb.torques.attitude_control([1.0, 0, 0, 0], np.diag([1.0, np.nan, 1.0]), 1.0)
