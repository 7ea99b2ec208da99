"""RK4 (Ganapathi, "Simulation of rigid body dynamics in Matlab", 2005, with its printed slips
corrected) and TERZE (the explicit scheme of Terze, Mueller and Zlatar, J. Comput. Nonlinear
Dynam. 10(5), 2015) of frb.integrate."""
from __future__ import annotations

import numpy as np
import pytest

import frb
from frb.engine import IntegrationError, integrate  # noqa: F401
from frb.rotations import quat_to_matrix
from frb.torques import gravity_gradient, heavy_top

# Krysl's torque-free body (Krysl 2008, section 5.1)
I_EK1 = np.array([0.9144, 1.098, 1.66])
M_EK1 = I_EK1 * np.array([0.45549, 0.82623, 0.03476])
Q0 = np.array([0.8, 0.2, -0.4, 0.4])
Q0 = Q0 / np.linalg.norm(Q0)
# a heavy top (weight 1, centre of mass on the third axis at distance 1)
I_TOP = np.array([0.8, 1.1, 1.7])
M_TOP = np.array([0.4, -0.7, 1.2])
TOP = heavy_top(1.0, (0.0, 0.0, 1.0))

ORDERS = {"RK4": 4, "TERZE": 2}


def _err(a, b):
    """max |m - m_ref| + max |Q - Q_ref| at the last state."""
    return np.abs(a.m[-1] - b.m[-1]).max() + np.abs(a.Q[-1] - b.Q[-1]).max()


def _slope(hs, errs):
    return np.polyfit(np.log(hs), np.log(errs), 1)[0]


def _bodies(n, seed=1):
    rng = np.random.default_rng(seed)
    m = rng.normal(size=(n, 3))
    inertia = rng.uniform(0.5, 2.0, size=(n, 3))
    q = rng.normal(size=(n, 4))
    q /= np.linalg.norm(q, axis=1, keepdims=True)
    return m, q, inertia


# ---------------------------------------------------------------------------------------------
# order
# ---------------------------------------------------------------------------------------------
@pytest.mark.parametrize("method, hs", [("RK4", [0.2, 0.1, 0.05]), ("TERZE", [0.1, 0.05, 0.025])])
def test_order_free_body(method, hs):
    tend = 4.0
    errs = []
    for h in hs:
        k = int(round(tend / h))
        errs.append(_err(integrate(M_EK1, Q0, I_EK1, h, k, method=method),
                         integrate(M_EK1, Q0, I_EK1, h, k, method="EXACT")))
    assert min(errs) > 1e-11          # above roundoff
    assert abs(_slope(hs, errs) - ORDERS[method]) < 0.2


@pytest.mark.parametrize("method, hs", [("RK4", [0.1, 0.05, 0.025]), ("TERZE", [0.05, 0.025, 0.0125])])
def test_order_heavy_top(method, hs):
    tend = 2.0
    ref = integrate(M_TOP, Q0, I_TOP, 0.005, 400, method="RKN6_14", torque=TOP)
    errs = []
    for h in hs:
        k = int(round(tend / h))
        errs.append(_err(integrate(M_TOP, Q0, I_TOP, h, k, method=method, torque=TOP), ref))
    assert min(errs) > 1e-11
    assert abs(_slope(hs, errs) - ORDERS[method]) < 0.2


def test_terze_order_time_dependent_torque():
    # gravity gradient: the kept T_{n+1} (time t + h of the previous step) is T_n of the next
    tq = gravity_gradient(1.3)
    ref = integrate(M_TOP, Q0, I_TOP, 0.005, 400, method="RKN6_14", torque=tq)
    hs = [0.05, 0.025, 0.0125]
    errs = [_err(integrate(M_TOP, Q0, I_TOP, h, int(round(2.0 / h)), method="TERZE", torque=tq),
                 ref) for h in hs]
    assert abs(_slope(hs, errs) - 2) < 0.2


# ---------------------------------------------------------------------------------------------
# Ganapathi's analytic symmetric top (its printed sign corrected)
# ---------------------------------------------------------------------------------------------
def test_rk4_symmetric_top_analytic():
    inertia = np.array([2.0, 2.0, 8.0])
    w0 = np.array([1.0, 0.0, 1.0])
    h, k = 0.01, 300                     # Ganapathi's "300 time steps"
    tr = integrate(inertia * w0, [1.0, 0, 0, 0], inertia, h, k, method="RK4")
    t = tr.t
    big_omega = (inertia[2] - inertia[0]) / inertia[0] * w0[2]
    assert big_omega == 3.0
    exact = np.stack([w0[0] * np.cos(big_omega * t), w0[0] * np.sin(big_omega * t),
                      np.full_like(t, w0[2])], axis=1)
    w = tr.m / inertia
    # global error of RK4 for a rotation at rate 3: about 300 (3 h)^5 / 120 = 6e-8
    assert np.abs(w - exact).max() < 1e-7
    # the rotation direction: omega_2 = +w0 sin(Omega t) (omega_1' = -Omega omega_2,
    # omega_2' = Omega omega_1), not the opposite sense
    wrong = exact * np.array([1.0, -1.0, 1.0])
    assert np.abs(w - wrong).max() > 0.5
    # and against the exact flow, attitude included
    ex = integrate(inertia * w0, [1.0, 0, 0, 0], inertia, h, k, method="EXACT")
    assert np.abs(ex.m / inertia - exact).max() < 1e-12
    # Ganapathi's RK4 with the factor 1/2 of the quaternion equation: attitude error 1.7e-8
    # after 300 steps of dt = 0.01
    assert np.abs(tr.Q - ex.Q).max() < 3e-8


def test_rk4_single_step_is_the_listed_scheme():
    # one step of Ganapathi's RK4 written out (numpy), torque at the normalised stage quaternion
    def qmul(p, q):
        return np.concatenate([[p[0] * q[0] - p[1:] @ q[1:]],
                               p[0] * q[1:] + q[0] * p[1:] + np.cross(p[1:], q[1:])])

    def torque(q):
        Q = quat_to_matrix(q / np.linalg.norm(q))
        return np.cross(Q[2], [0.0, 0.0, 1.0])

    def f(q, w):
        return 0.5 * qmul(q, np.r_[0.0, w]), (torque(q) + np.cross(I_TOP * w, w)) / I_TOP

    h = 0.3
    q, w = Q0, M_TOP / I_TOP
    kq1, kw1 = (h * x for x in f(q, w))
    kq2, kw2 = (h * x for x in f(q + kq1 / 2, w + kw1 / 2))
    kq3, kw3 = (h * x for x in f(q + kq2 / 2, w + kw2 / 2))
    kq4, kw4 = (h * x for x in f(q + kq3, w + kw3))
    q1 = q + (kq1 + 2 * kq2 + 2 * kq3 + kq4) / 6
    q1 /= np.linalg.norm(q1)
    m1 = I_TOP * (w + (kw1 + 2 * kw2 + 2 * kw3 + kw4) / 6)
    tr = integrate(M_TOP, Q0, I_TOP, h, 1, method="RK4", torque=TOP)
    assert np.abs(tr.m[-1] - m1).max() < 1e-14
    assert np.abs(tr.q[-1] - q1).max() < 1e-14


def test_terze_single_step_is_the_printed_scheme():
    # the bracket form of the fourth line of Terze et al.'s scheme, with rotation matrices
    # (scipy-free)
    def expm_hat(v):
        a = np.linalg.norm(v)
        B = np.array([[0, -v[2], v[1]], [v[2], 0, -v[0]], [-v[1], v[0], 0]])
        return np.eye(3) + np.sin(a) / a * B + (1 - np.cos(a)) / a**2 * B @ B

    def torque(R):
        return np.cross(R[2], [0.0, 0.0, 1.0])

    h = 0.3
    R0 = quat_to_matrix(Q0)
    Y0 = M_TOP
    Tn = torque(R0)
    a = Y0 + h / 2 * Tn
    Yh = expm_hat(-(h / 2) * Y0 / I_TOP) @ a
    wh = Yh / I_TOP
    R1 = R0 @ expm_hat(h * wh)
    T1 = torque(R1)
    Y1 = expm_hat(-(h / 2) * wh) @ (expm_hat(-(h / 2) * wh) @ a + h / 2 * expm_hat((h / 2) * wh) @ T1)
    tr = integrate(M_TOP, Q0, I_TOP, h, 1, method="TERZE", torque=TOP)
    assert np.abs(tr.m[-1] - Y1).max() < 1e-14
    assert np.abs(tr.Q[-1] - R1).max() < 1e-14


# ---------------------------------------------------------------------------------------------
# invariants
# ---------------------------------------------------------------------------------------------
def _rel_drift(x):
    x = np.asarray(x)
    return np.abs(x - x[0]).max() / np.abs(x[0]).max()


def test_terze_invariants_free_body():
    tr = integrate(M_EK1, Q0, I_EK1, 0.1, 1000, method="TERZE")
    assert _rel_drift(tr.spatial_momentum) < 1e-13
    assert _rel_drift(np.linalg.norm(tr.m, axis=1)) < 1e-13
    # energy is NOT conserved (the scheme's energy claim holds for the free body only)
    assert _rel_drift(tr.kinetic_energy) > 1e-5


def test_terze_vertical_momentum_heavy_top():
    # not claimed by Terze et al., derived: Q_{n+1} m_{n+1} = Q_n m_n + (h/2)(Q_n T_n + Q_{n+1} T_{n+1})
    # and the spatial torque weight e_z x (Q c) of the heavy top is horizontal
    tr = integrate(M_TOP, Q0, I_TOP, 0.05, 1000, method="TERZE", torque=TOP)
    pz = tr.spatial_momentum[:, 2]
    assert np.abs(pz - pz[0]).max() < 1e-13 * np.abs(tr.spatial_momentum).max()
    assert _rel_drift(tr.energy) > 1e-8


def test_rk4_conserves_nothing_exactly():
    tr = integrate(M_EK1, Q0, I_EK1, 0.2, 1000, method="RK4")
    assert _rel_drift(tr.spatial_momentum) > 1e-8
    assert _rel_drift(np.linalg.norm(tr.m, axis=1)) > 1e-8
    assert _rel_drift(tr.kinetic_energy) > 1e-8


@pytest.mark.parametrize("method", ["RK4", "TERZE"])
@pytest.mark.parametrize("torque", [None, TOP])
def test_unit_quaternion(method, torque):
    tr = integrate(M_TOP, Q0, I_TOP, 0.05, 1000, method=method, torque=torque)
    assert np.abs(np.linalg.norm(tr.q, axis=1) - 1).max() < 1e-13


# ---------------------------------------------------------------------------------------------
# (no) time symmetry
# ---------------------------------------------------------------------------------------------
def _back_and_forth(method, h, m0, inertia, torque=None):
    a = integrate(m0, Q0, inertia, h, 1, method=method, torque=torque)
    b = integrate(a.m[-1], a.q[-1], inertia, -h, 1, method=method, torque=torque)
    return max(np.abs(b.m[-1] - m0).max(), np.abs(b.q[-1] - Q0).max())


def test_terze_not_symmetric():
    d = _back_and_forth("TERZE", 0.5, M_EK1, I_EK1)
    assert 1e-4 < d < 1e-3          # defect ~2.5e-4 at dt = 0.5 on Krysl's free body


def test_rk4_not_symmetric():
    assert _back_and_forth("RK4", 0.5, M_EK1, I_EK1) > 1e-8   # measured 2.6e-7


# ---------------------------------------------------------------------------------------------
# batches, user torques, errors
# ---------------------------------------------------------------------------------------------
@pytest.mark.parametrize("method", ["RK4", "TERZE"])
@pytest.mark.parametrize("torque", [None, TOP, gravity_gradient(0.7)])
def test_batch_equals_single(method, torque):
    m, q, inertia = _bodies(70)        # more than one chunk of the engine (64)
    tr = integrate(m, q, inertia, 0.07, 25, method=method, torque=torque)
    for j in (0, 5, 64, 69):
        s = integrate(m[j], q[j], inertia[j], 0.07, 25, method=method, torque=torque)
        assert np.array_equal(s.m, tr.m[:, j]) and np.array_equal(s.q, tr.q[:, j])


@pytest.mark.parametrize("method, calls", [("RK4", 4 * 30), ("TERZE", 30 + 1)])
def test_user_torque_equals_builtin(method, calls):
    m, q, inertia = _bodies(7)
    count = []

    def user_top(t, Q):
        count.append(t)
        return np.cross(Q[:, 2, :], [0.0, 0.0, 1.0])   # (Q^T e_z) x e3

    u = integrate(m, q, inertia, 0.05, 30, method=method, torque=user_top)
    b = integrate(m, q, inertia, 0.05, 30, method=method, torque=TOP)
    assert np.abs(u.m - b.m).max() < 1e-13 and np.abs(u.q - b.q).max() < 1e-13
    assert len(count) == calls         # one call per stage for the batch (TERZE keeps T_{n+1})


@pytest.mark.parametrize("method", ["RK4", "TERZE"])
def test_nan_user_torque(method):
    def bad_torque(t, Q):
        return np.full((Q.shape[0], 3), np.nan)

    with pytest.raises(ValueError, match="bad_torque"):
        integrate(M_TOP, Q0, I_TOP, 0.1, 3, method=method, torque=bad_torque)


def test_methods_registry():
    assert frb.METHODS["RK4"].order == 4 and not frb.METHODS["RK4"].implicit
    assert frb.METHODS["TERZE"].order == 2 and not frb.METHODS["TERZE"].implicit
