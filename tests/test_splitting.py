import math
import sys

import numpy as np
import pytest

from frb.rotations import kinetic_energy, quat_to_matrix, spatial_momentum
from frb.splitting import (
    RKN6_14,
    STRANG,
    ConstantField,
    Trajectory,
    constant_field,
    integrate,
)

I = np.array([1.0, 2.0, 3.5])
M0 = np.array([0.6, -1.6, 1.2])
U0 = np.array([0.8, -0.6, 1.0])


def _attitude():
    q = np.array([0.8, 0.2, -0.4, 0.4])
    return quat_to_matrix(q / np.linalg.norm(q))


def _flows():
    return sys.modules["frb.flows"]


splitting_module = sys.modules["frb.splitting"]


# ------------------------------------------------------------ coefficients


def test_rkn6_14_coefficients():
    a, b = RKN6_14
    assert len(a) == 8 and len(b) == 7
    assert a[0] == 0.0378593198406116 and a[6] == -0.00879424312851058
    assert b[0] == 0.09171915262446165 and b[5] == 0.328567693746804
    assert abs(2 * math.fsum(a[:7]) + a[7] - 1.0) < 1e-15
    assert abs(2 * math.fsum(b) - 1.0) < 1e-15
    assert a[7] == pytest.approx(0.207305069056835, abs=1e-15)
    assert b[6] == pytest.approx(-0.196411466486454, abs=1e-15)


def test_rkn6_14_matches_example1_input(repo_root):
    from frb.io import read_dat

    p = repo_root / "data" / "init_example1.dat"
    if not p.is_file():
        pytest.skip(f"{p} not found")
    v = read_dat(p)
    np.testing.assert_allclose(v[:8], RKN6_14[0], rtol=0, atol=1e-15)
    np.testing.assert_allclose(v[8:15], RKN6_14[1], rtol=0, atol=1e-15)


def test_strang_constant():
    assert STRANG == ((0.5, 0.0), (0.5,))


# ---------------------------------------------------- structure of a step


class _Recorder:
    """Fake free flow and torque that record the times they are called with."""

    def __init__(self):
        self.calls = []

    def free(self, m, Q, h, inertia, quadrature=0):
        self.calls.append(("A", h, quadrature))
        return np.array(m, dtype=float), np.array(Q, dtype=float)

    def torque(self, m, Q, t):
        self.calls.append(("B", t))
        return m, Q


@pytest.fixture
def recorder(monkeypatch):
    rec = _Recorder()
    monkeypatch.setattr(splitting_module, "_free_flow", rec.free)
    return rec


def test_rkn6_14_step_sequence(recorder):
    h = 0.5
    integrate(M0, np.eye(3), I, h, 1, torque=recorder.torque, quadrature=3)
    kinds = [c[0] for c in recorder.calls]
    assert kinds == ["A", "B"] * 14 + ["A"]
    a, b = RKN6_14
    times_a = [c[1] for c in recorder.calls if c[0] == "A"]
    times_b = [c[1] for c in recorder.calls if c[0] == "B"]
    assert times_a == [x * h for x in a + a[-2::-1]]
    assert times_b == [x * h for x in b + b[::-1]]
    assert all(c[2] == 3 for c in recorder.calls if c[0] == "A")
    assert math.fsum(times_a) == pytest.approx(h, abs=1e-15)
    assert math.fsum(times_b) == pytest.approx(h, abs=1e-15)


def test_strang_step_sequence(recorder):
    integrate(M0, np.eye(3), I, 0.2, 2, torque=recorder.torque, method="strang")
    assert recorder.calls == [("A", 0.1, 0), ("B", 0.2), ("A", 0.1, 0)] * 2


def test_custom_coefficients_sequence(recorder):
    # a symmetric 3-stage composition with a zero middle A: the two B merge
    coeffs = ((0.25, 0.25, 0.0), (0.25, 0.25))
    integrate(M0, np.eye(3), I, 1.0, 1, torque=recorder.torque, coefficients=coeffs)
    assert recorder.calls == [
        ("A", 0.25, 0), ("B", 0.25), ("A", 0.25, 0), ("B", 0.5), ("A", 0.25, 0),
        ("B", 0.25), ("A", 0.25, 0),
    ]


def test_free_body_is_one_flow_per_step():
    tr = integrate(M0, np.eye(3), I, 0.3, 4, quadrature=5)
    m, Q = M0, np.eye(3)
    for k in range(1, 5):
        m, Q = _flows().frb_step(m, Q, 0.3, I, quadrature=5)
        np.testing.assert_array_equal(tr.m[k], m)
        np.testing.assert_array_equal(tr.Q[k], Q)


# ------------------------------------------------------------- torques


def test_constant_field_flow():
    tq = constant_field(U0)
    assert isinstance(tq, ConstantField)
    np.testing.assert_array_equal(tq.u0, U0)
    Q = _attitude()
    u = Q.T @ U0
    m, Q1 = tq(M0, Q, 0.7)
    np.testing.assert_allclose(m, M0 + 0.7 * np.array([u[1], -u[0], 0.0]), rtol=0, atol=1e-15)
    np.testing.assert_array_equal(Q1, Q)
    assert m[2] == M0[2]
    np.testing.assert_array_equal(M0, [0.6, -1.6, 1.2])  # not modified
    # torque = u x e3, and the flow is a group in t
    np.testing.assert_allclose(np.cross(u, [0, 0, 1]), [u[1], -u[0], 0], atol=1e-16)
    m2, _ = tq(*tq(M0, Q, 0.3), 0.4)
    np.testing.assert_allclose(m2, tq(M0, Q, 0.7)[0], rtol=0, atol=1e-15)


def test_constant_field_stores_copy():
    u = np.array([1.0, 2.0, 3.0])
    tq = constant_field(u)
    u[0] = 99.0
    assert tq.u0[0] == 1.0
    with pytest.raises(ValueError):
        tq.u0[0] = 5.0


@pytest.mark.parametrize("bad, error", [([1.0, 2.0], ValueError), ([[1.0, 2.0, 3.0]], ValueError),
                                        ([1.0, np.nan, 0.0], ValueError), ("abc", TypeError)])
def test_constant_field_validation(bad, error):
    with pytest.raises(error):
        constant_field(bad)


def test_user_torque_equals_constant_field():
    def flow(m, Q, t):
        u = np.asarray(Q).T @ U0
        return np.asarray(m) + t * np.array([u[1], -u[0], 0.0]), Q

    Q0 = _attitude()
    a = integrate(M0, Q0, I, 0.25, 6, torque=constant_field(U0))
    b = integrate(M0, Q0, I, 0.25, 6, torque=flow)
    # equal up to the rounding of Q^T u0 (summation order), amplified by the flow
    np.testing.assert_allclose(b.m, a.m, rtol=0, atol=1e-13)
    np.testing.assert_allclose(b.Q, a.Q, rtol=0, atol=1e-13)


def test_user_torque_may_return_lists():
    def flow(m, Q, t):
        return list(m), [list(r) for r in Q]

    tr = integrate(M0, np.eye(3), I, 0.1, 2, torque=flow, method="STRANG")
    assert tr.m.shape == (3, 3)


# ------------------------------------------------------------- accuracy


def _final_error(a: Trajectory, b: Trajectory):
    return max(np.max(np.abs(a.m[-1] - b.m[-1])), np.max(np.abs(a.Q[-1] - b.Q[-1])))


@pytest.fixture(scope="module")
def order_problem():
    T = 8.0
    Q0 = _attitude()
    tq = constant_field(U0)
    ref = integrate(M0, Q0, I, T / 192, 192, torque=tq, method="RKN6_14")
    return T, Q0, tq, ref


@pytest.mark.parametrize("method, order, steps", [("RKN6_14", 6, (16, 32, 64)), ("STRANG", 2, (16, 32, 64))])
def test_order_of_convergence(order_problem, method, order, steps):
    T, Q0, tq, ref = order_problem
    hs, errs = [], []
    for n in steps:
        tr = integrate(M0, Q0, I, T / n, n, torque=tq, method=method)
        hs.append(T / n)
        errs.append(_final_error(tr, ref))
    slope = np.polyfit(np.log(hs), np.log(errs), 1)[0]
    assert abs(slope - order) < 0.5, (method, errs, slope)


def test_invariants_of_torqued_body():
    # u0.(Q m) is kept by both flows; H = T(m) + u0.(Q e3) stays close
    Q0 = _attitude()
    tq = constant_field(U0)
    tr = integrate(M0, Q0, I, 0.25, 40, torque=tq)
    vert = spatial_momentum(tr.m, tr.Q) @ U0
    np.testing.assert_allclose(vert, vert[0], rtol=0, atol=1e-11)
    H = kinetic_energy(tr.m, I) + tr.Q[:, :, 2] @ U0
    assert np.max(np.abs(H - H[0])) < 1e-6
    QtQ = np.swapaxes(tr.Q, 1, 2) @ tr.Q
    np.testing.assert_allclose(QtQ, np.broadcast_to(np.eye(3), QtQ.shape), atol=1e-11)


def test_symmetric_method_is_time_reversible():
    Q0 = _attitude()
    tq = constant_field(U0)
    fwd = integrate(M0, Q0, I, 0.5, 3, torque=tq)
    back = integrate(fwd.m[-1], fwd.Q[-1], I, -0.5, 3, torque=tq)
    np.testing.assert_allclose(back.m[-1], M0, rtol=0, atol=1e-10)
    np.testing.assert_allclose(back.Q[-1], Q0, rtol=0, atol=1e-10)


def test_free_body_matches_repeated_steps():
    Q0 = _attitude()
    tr = integrate(M0, Q0, I, 0.4, 3)
    m, Q = M0, Q0
    for k in range(1, 4):
        m, Q = _flows().frb_step(m, Q, 0.4, I, quadrature=0)
        np.testing.assert_array_equal(tr.m[k], m)
        np.testing.assert_array_equal(tr.Q[k], Q)


def test_trajectory_layout():
    Q0 = _attitude()
    tr = integrate(M0, Q0, I, 0.125, 5, torque=constant_field(U0), method="STRANG")
    assert tr.t.shape == (6,) and tr.m.shape == (6, 3) and tr.Q.shape == (6, 3, 3)
    np.testing.assert_array_equal(tr.t, 0.125 * np.arange(6))
    np.testing.assert_array_equal(tr.m[0], M0)
    np.testing.assert_array_equal(tr.Q[0], Q0)
    empty = integrate(M0, Q0, I, 0.125, 0, torque=constant_field(U0))
    assert empty.m.shape == (1, 3)


def test_inputs_not_modified():
    m0 = M0.copy()
    Q0 = _attitude()
    Qc = Q0.copy()
    inertia = I.copy()
    u0 = U0.copy()
    tr = integrate(m0, Q0, inertia, 0.3, 2, torque=constant_field(u0))
    np.testing.assert_array_equal(m0, M0)
    np.testing.assert_array_equal(Q0, Qc)
    np.testing.assert_array_equal(inertia, I)
    np.testing.assert_array_equal(u0, U0)
    tr.m[0, 0] = 42.0  # the trajectory does not alias the inputs
    assert m0[0] == M0[0]


def test_read_only_and_list_inputs():
    m0 = M0.copy()
    m0.setflags(write=False)
    tr = integrate(m0, np.eye(3).tolist(), tuple(I), 0.3, 1, torque=constant_field(U0))
    assert tr.m.shape == (2, 3)


# ------------------------------------------------------------- validation


def _bad_torque(m, Q, t):
    return m[:2], Q


@pytest.mark.parametrize(
    "kwargs, error, name",
    [
        (dict(m0=[1.0, 2.0]), ValueError, "m0"),
        (dict(m0=[1.0, np.inf, 0.0]), ValueError, "m0"),
        (dict(Q0=np.eye(2)), ValueError, "Q0"),
        (dict(inertia=[1.0, 0.0, 2.0]), ValueError, "inertia"),
        (dict(inertia=[1.0, 2.0]), ValueError, "inertia"),
        (dict(h=np.nan), ValueError, "h"),
        (dict(h="0.1"), TypeError, "h"),
        (dict(nsteps=-1), ValueError, "nsteps"),
        (dict(nsteps=2.0), TypeError, "nsteps"),
        (dict(nsteps=True), TypeError, "nsteps"),
        (dict(method="RK4"), ValueError, "method"),
        (dict(quadrature=11), ValueError, "quadrature"),
        (dict(quadrature=1.5), TypeError, "quadrature"),
        (dict(torque=3.0), TypeError, "torque"),
        (dict(torque=_bad_torque), ValueError, "torque"),
        (dict(coefficients=((0.5,), (0.5,))), ValueError, "one more coefficient"),
        (dict(coefficients=((0.3, 0.3), (0.5,))), ValueError, "consistent"),
        (dict(coefficients=((0.5, 0.0), (0.4,))), ValueError, "consistent"),
        (dict(coefficients=((0.5, "x"), (0.5,))), TypeError, "coefficients"),
        (dict(coefficients=3), TypeError, "coefficients"),
    ],
)
def test_validation(kwargs, error, name):
    args = dict(m0=M0, Q0=np.eye(3), inertia=I, h=0.1, nsteps=2, torque=constant_field(U0))
    args.update(kwargs)
    with pytest.raises(error, match=name):
        integrate(**args)


def test_numpy_scalar_arguments():
    tr = integrate(M0, np.eye(3), I, np.float64(0.1), np.int64(2), torque=constant_field(U0),
                   quadrature=np.int32(0))
    assert tr.t.shape == (3,)
