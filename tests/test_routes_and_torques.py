"""The one torque protocol and the public routes over the one engine.

Torques are checked against their formulas written out here (numpy, independently of frb's
code); the routes against each other (the same numbers, bit for bit) and against repeated exact
steps; the refusals against the messages of the route that had them first.
"""
import pickle

import numpy as np
import pytest

import frb
from frb.torques import (ConstantField, Torque, UserTorque, as_torque, constant_field,
                         gravity_gradient, heavy_top)

RNG = np.random.default_rng(11)
M0 = np.array([0.3, -0.5, 0.8])
INERTIA = np.array([0.8, 1.1, 1.7])


def _rotations(n):
    q = RNG.normal(size=(n, 4))
    q /= np.linalg.norm(q, axis=1)[:, None]
    return frb.quat_to_matrix(q)


def test_built_in_torques_are_their_formulas():
    Q = _rotations(5)
    u0, c, w, n, t = np.array([0.2, -0.4, 1.3]), np.array([0.1, -0.2, 0.7]), 2.5, 0.9, 0.37
    e3, ez = np.array([0.0, 0.0, 1.0]), np.array([0.0, 0.0, 1.0])
    body = lambda v: np.einsum("nji,j->ni", Q, v)   # Q^T v, body by body
    np.testing.assert_allclose(constant_field(u0)(t, Q), np.cross(body(u0), e3), atol=1e-15)
    np.testing.assert_allclose(heavy_top(w, c)(t, Q), np.cross(w * body(ez), c), atol=1e-15)
    r = np.array([np.cos(n * t), np.sin(n * t), 0.0])
    expected = 3 * n**2 * np.cross(body(r), INERTIA * body(r))
    np.testing.assert_allclose(gravity_gradient(n)(t, Q, inertia=INERTIA), expected, atol=1e-15)
    # potentials: u0 . Q e3 and weight (Q c)_z
    np.testing.assert_allclose(constant_field(u0).potential(Q), Q[:, :, 2] @ u0, atol=1e-15)
    np.testing.assert_allclose(heavy_top(w, c).potential(Q), w * (Q @ c)[:, 2], atol=1e-15)


def test_torque_protocol():
    for tq in (constant_field([0, 0, 1.0]), heavy_top(1.0, [0, 0, 1.0]), gravity_gradient(1.0)):
        assert isinstance(tq, Torque) and tq.compiled is not None
        with pytest.raises(AttributeError, match="immutable"):
            tq.rate = 5.0
        again = pickle.loads(pickle.dumps(tq))
        assert type(again) is type(tq) and repr(again) == repr(tq)
    assert isinstance(heavy_top(1.0, [0, 0, 1.0]), ConstantField)
    with pytest.raises(TypeError, match="inertia"):
        gravity_gradient(1.0)(0.0, np.eye(3))
    with pytest.raises(AttributeError, match="no potential"):
        gravity_gradient(1.0).potential(np.eye(3))
    f = lambda t, Q: np.zeros((len(Q), 3))
    assert isinstance(as_torque(f), UserTorque) and as_torque(f).compiled is None
    assert as_torque(None) is None
    with pytest.raises(TypeError, match="torque must be"):
        as_torque(3.0)


def test_methods_say_which_torques_they_take():
    methods = frb.METHODS
    top, gg = heavy_top(1.0, [0, 0, 1.0]), gravity_gradient(1.0)
    assert methods["EXACT"].accepts(None) and not methods["EXACT"].accepts(top)
    assert methods["NYSTROM4"].accepts(top) and not methods["NYSTROM4"].accepts(gg)
    assert methods["RK4"].accepts(gg) and methods["RK4"].accepts(lambda t, Q: 0 * Q[:, 0])
    for name, info in methods.items():
        for torque in (top, gg):
            if not info.accepts(torque):
                with pytest.raises(ValueError, match=f"method {name}"):
                    frb.integrate(M0, [1.0, 0, 0, 0], INERTIA, 0.1, 1, method=name,
                                  torque=torque)


def test_user_torque_equals_the_compiled_heavy_top():
    q0 = np.array([0.9, 0.1, -0.3, 0.2]) / np.linalg.norm([0.9, 0.1, -0.3, 0.2])
    ez, c = np.array([0.0, 0.0, 1.0]), np.array([0.1, -0.2, 0.7])
    user = lambda t, Q: np.cross(1.5 * np.einsum("nji,j->ni", Q, ez), c)
    for method in ("RKN6_14", "RK4", "IMID", "DMV6"):
        a = frb.integrate(M0, q0, INERTIA, 0.05, 40, method=method, torque=heavy_top(1.5, c))
        b = frb.integrate(M0, q0, INERTIA, 0.05, 40, method=method, torque=user)
        np.testing.assert_allclose(b.m, a.m, rtol=0, atol=1e-12)
        np.testing.assert_allclose(b.q, a.q, rtol=0, atol=1e-12)


@pytest.mark.parametrize("method", ["RKN6_14", "STRANG"])
@pytest.mark.parametrize("torque", [None, constant_field([0.2, -0.1, 1.0]),
                                    heavy_top(2.0, [0.1, 0.0, 0.5]), gravity_gradient(0.7)])
def test_splitting_integrate_is_the_engine_bit_for_bit(method, torque):
    Q0 = _rotations(1)[0]
    a = frb.splitting.integrate(M0, Q0, INERTIA, 0.3, 60, torque=torque, method=method,
                                quadrature=0 if torque is None else 3)
    b = frb.integrate(M0, Q0, INERTIA, 0.3, 60, method="EXACT" if torque is None else method,
                      torque=torque, quadrature=0 if torque is None else 3)
    assert np.array_equal(a.m, b.m) and np.array_equal(a.Q, b.Q)
    if torque is None:     # and both are repeated exact steps of frb.frb_step
        m, Q = M0, Q0
        for _ in range(60):
            m, Q = frb.frb_step(m, Q, 0.3, INERTIA)
        assert np.array_equal(a.m[-1], m) and np.array_equal(a.Q[-1], Q)


@pytest.mark.parametrize("order", [2, 4, 6, 8])
def test_dmv_routes_are_the_engine_bit_for_bit(order):
    n = 37
    m = RNG.normal(size=(n, 3))
    q = RNG.normal(size=(n, 4))
    q /= np.linalg.norm(q, axis=1)[:, None]
    for inertia in (INERTIA, RNG.uniform(0.5, 2.0, size=(n, 3))):
        mi, qi = frb.dmv_integrate(m, q, inertia, 0.07, 30, order=order)
        tr = frb.integrate(m, q, inertia, 0.07, 30, method=f"DMV{order}", save_every=None)
        assert np.array_equal(mi, tr.m[-1]) and np.array_equal(qi, tr.q[-1])
        ms, qs = frb.dmv_step(m, q, 0.07, inertia, order=order)
        one = frb.integrate(m, q, inertia, 0.07, 1, method=f"DMV{order}", save_every=None)
        assert np.array_equal(ms, one.m[-1]) and np.array_equal(qs, one.q[-1])
    # and the method is what it claims: its error against the exact flow (frb.quat_step over
    # the whole time) falls as h^order when h halves
    m1 = np.tile([1.0, 0.0, 0.0, 0.0], (20, 1))
    mm = RNG.normal(size=(20, 3))
    m_ex, _ = frb.quat_step(mm, m1, 2.0, INERTIA)
    errors = [np.abs(frb.dmv_integrate(mm, m1, INERTIA, 2.0 / k, k, order=order)[0] - m_ex).max()
              for k in (10, 20)]
    assert abs(np.log2(errors[0] / errors[1]) - order) < 0.6


def test_dmv_routes_refuse_the_same_inertia_ratio():
    inertia = [1.0, 1e30, 1e60]
    with pytest.raises(ValueError) as a:
        frb.dmv_integrate(M0, [1.0, 0, 0, 0], inertia, 1e-70, 3, order=8)
    with pytest.raises(ValueError) as b:
        frb.integrate(M0, [1.0, 0, 0, 0], inertia, 1e-70, 3, method="DMV8")
    assert "I_max / I_min" in str(a.value) and str(a.value) == str(b.value)
