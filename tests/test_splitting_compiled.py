"""The compiled loop of frb.splitting.integrate (the engine of frb.integrate) against the Python
loop of torque flows.

``integrate`` runs in the engine for ``torque=None`` and for :func:`constant_field`; any other
callable goes through the Python loop. A callable doing the arithmetic of the constant field
therefore forces the Python path with the same flows, times and operations.
"""
import re

import numpy as np
import pytest

import frb
import frb._core
from frb import _numbers_table as sn
from frb.io import read_dat
from frb.splitting import RKN6_14, ConstantField, constant_field, integrate
from test_splitting import I, M0, U0, _attitude   # the same torqued body as the Python-loop tests


def _python_field(u0):
    """The constant field u0 as a plain callable (same operations as the Fortran flow)."""
    x, y, z = (float(v) for v in u0)

    def flow(m, Q, t):
        u1 = Q[0, 0] * x + Q[1, 0] * y + Q[2, 0] * z
        u2 = Q[0, 1] * x + Q[1, 1] * y + Q[2, 1] * z
        mn = np.array(m, dtype=np.float64)
        mn[0] += t * u2
        mn[1] -= t * u1
        return mn, Q

    return flow


@pytest.fixture
def spy(monkeypatch):
    """Count the calls of the compiled loop (a short run is one call of the engine)."""
    calls = []
    real = frb._core.engine_whole

    names = ("config", "plan", "terms", "body", "times", "m0", "att0", "inertia")

    def wrapper(*args, **kwargs):
        calls.append(dict(zip(names, args)))
        return real(*args, **kwargs)

    monkeypatch.setattr(frb._core, "engine_whole", wrapper)
    return calls


def _engine_call(args):
    """The schedule and counts of a recorded engine call: kinds, taus (fractions times h),
    quadrature, nsteps, save_every, k_first, k_last, u0 (the field of the torque parameters)."""
    config = args["config"]
    nsteps = int(config[sn.RUN_NSTEPS - 1])
    kinds, fractions = args["plan"]
    return (kinds.astype(int), fractions * args["times"][1],
            int(config[sn.RUN_QUADRATURE - 1]), nsteps, int(config[sn.RUN_SAVE_EVERY - 1]), 0,
            nsteps, args["terms"][sn.TORQUE_TERM_HEADER:sn.TORQUE_TERM_HEADER + 3, 0])


def _assert_close(a, b, rel=1e-14):
    scale = np.max(np.abs(M0))
    np.testing.assert_array_equal(a.t, b.t)
    np.testing.assert_allclose(a.m, b.m, rtol=rel, atol=rel * scale)
    np.testing.assert_allclose(a.Q, b.Q, rtol=rel, atol=rel)


@pytest.mark.parametrize("method", ["RKN6_14", "STRANG"])
@pytest.mark.parametrize("quadrature", [0, 5])
def test_compiled_equals_python_loop(spy, method, quadrature):
    Q0 = _attitude()
    args = (M0, Q0, I, 0.37, 200)
    comp = integrate(*args, torque=constant_field(U0), method=method, quadrature=quadrature)
    assert len(spy) == 1
    py = integrate(*args, torque=_python_field(U0), method=method, quadrature=quadrature)
    assert len(spy) == 1  # the callable went through the Python loop
    _assert_close(comp, py)
    # the body did move: the comparison is not trivial
    assert np.max(np.abs(comp.m[-1] - M0)) > 0.1


def test_compiled_equals_python_loop_custom_coefficients(spy):
    # a zero middle A: the two neighbouring B flows merge, in both loops alike
    coeffs = ((0.25, 0.25, 0.0), (0.25, 0.25))
    Q0 = _attitude()
    comp = integrate(M0, Q0, I, -0.3, 50, torque=constant_field(U0), coefficients=coeffs)
    py = integrate(M0, Q0, I, -0.3, 50, torque=_python_field(U0), coefficients=coeffs)
    assert len(spy) == 1
    kinds, taus = _engine_call(spy[0])[:2]
    assert kinds.tolist() == [0, 1, 0, 1, 0, 1, 0]
    assert taus.tolist() == [-0.3 * c for c in (0.25, 0.25, 0.25, 0.5, 0.25, 0.25, 0.25)]
    _assert_close(comp, py)


def test_compiled_schedule_rkn6_14(spy):
    h = 0.5
    integrate(M0, np.eye(3), I, h, 1, torque=constant_field(U0), quadrature=3)
    kinds, taus, quadrature, nsteps, save_every, k_first, k_last, u0 = _engine_call(spy[0])
    a, b = RKN6_14
    assert kinds.tolist() == [0, 1] * 14 + [0]
    assert taus[0::2].tolist() == [x * h for x in a + a[-2::-1]]
    assert taus[1::2].tolist() == [x * h for x in b + b[::-1]]
    assert (nsteps, quadrature, save_every, k_first, k_last) == (1, 3, 1, 0, 1)
    np.testing.assert_array_equal(u0, U0)


def test_free_body_compiled_equals_repeated_steps(spy):
    Q0 = _attitude()
    tr = integrate(M0, Q0, I, 0.4, 30, quadrature=5)
    assert len(spy) == 1
    m, Q = M0, Q0
    for k in range(1, 31):
        m, Q = frb.frb_step(m, Q, 0.4, I, quadrature=5)
    np.testing.assert_allclose(tr.m[-1], m, rtol=1e-14, atol=1e-14)
    np.testing.assert_allclose(tr.Q[-1], Q, rtol=1e-14, atol=1e-14)


def test_other_callables_use_python_loop(spy):
    class Field(ConstantField):
        __slots__ = ()

        def __call__(self, m, Q, t):
            return super().__call__(m, Q, 2 * t)

    Q0 = _attitude()
    sub = integrate(M0, Q0, I, 0.25, 8, torque=Field(U0))
    assert len(spy) == 0  # a subclass may change the flow: not compiled
    ref = integrate(M0, Q0, I, 0.25, 8, torque=constant_field(2 * U0))
    np.testing.assert_allclose(sub.m, ref.m, rtol=0, atol=1e-13)


# ----------------------------------------------------------- trajectory layout


@pytest.mark.parametrize("torque", [None, constant_field(U0)])
@pytest.mark.parametrize("h", [0.125, -0.3])
def test_trajectory_shapes_and_times(spy, torque, h):
    Q0 = _attitude()
    tr = integrate(M0, Q0, I, h, 7, torque=torque)
    assert len(spy) == 1
    assert tr.t.shape == (8,) and tr.m.shape == (8, 3) and tr.Q.shape == (8, 3, 3)
    for a in (tr.t, tr.m, tr.Q):
        assert a.dtype == np.float64 and a.flags.c_contiguous and a.flags.writeable
    np.testing.assert_array_equal(tr.t, h * np.arange(8, dtype=np.float64))
    np.testing.assert_array_equal(tr.m[0], M0)
    np.testing.assert_array_equal(tr.Q[0], Q0)
    np.testing.assert_allclose(np.swapaxes(tr.Q, 1, 2) @ tr.Q,
                               np.broadcast_to(np.eye(3), (8, 3, 3)), rtol=0, atol=1e-13)


def test_zero_steps(spy):
    Q0 = _attitude()
    tr = integrate(M0, Q0, I, 0.5, 0, torque=constant_field(U0))
    assert tr.t.tolist() == [0.0] and tr.m.shape == (1, 3) and tr.Q.shape == (1, 3, 3)
    np.testing.assert_array_equal(tr.m[0], M0)
    np.testing.assert_array_equal(tr.Q[0], Q0)


def test_inputs_not_modified_and_not_aliased(spy):
    m0, Q0, inertia, u0 = M0.copy(), _attitude(), I[::-1].copy(), U0.copy()
    saved = [x.copy() for x in (m0, Q0, inertia, u0)]
    field = constant_field(u0)
    tr = integrate(m0, Q0, inertia, 0.3, 4, torque=field)
    assert len(spy) == 1
    for x, y in zip((m0, Q0, inertia, u0), saved):
        np.testing.assert_array_equal(x, y)
    np.testing.assert_array_equal(field.u0, U0)
    for a in (tr.m, tr.Q):
        for x in (m0, Q0, inertia, u0, field.u0):
            assert not np.shares_memory(a, x)
    tr.m[0, 0] = 42.0
    tr.Q[0, 0, 0] = 42.0
    assert m0[0] == M0[0] and Q0[0, 0] == saved[1][0, 0]


def test_read_only_and_list_inputs(spy):
    m0 = M0.copy()
    m0.setflags(write=False)
    Q0 = _attitude()
    Q0.setflags(write=False)
    a = integrate(m0, Q0, tuple(I), 0.3, 3, torque=constant_field(U0.tolist()))
    b = integrate(M0.tolist(), Q0.tolist(), I, 0.3, 3, torque=constant_field(U0))
    assert len(spy) == 2
    np.testing.assert_array_equal(a.m, b.m)
    np.testing.assert_array_equal(a.Q, b.Q)


# --------------------------------------------------------------- validation


def test_q0_must_be_a_rotation():
    with pytest.raises(ValueError, match="Q0"):
        integrate(M0, 2 * np.eye(3), I, 0.1, 1, torque=constant_field(U0))
    with pytest.raises(ValueError, match="Q0"):
        integrate(M0, -np.eye(3), I, 0.1, 1)


def test_python_loop_checks_torque_results():
    def skew(m, Q, t):
        return m, 1.5 * np.asarray(Q)

    def nan(m, Q, t):
        return np.full(3, np.nan), Q

    with pytest.raises(ValueError, match="rotation"):
        integrate(M0, np.eye(3), I, 0.1, 2, torque=skew)
    with pytest.raises(ValueError, match="non-finite"):
        integrate(M0, np.eye(3), I, 0.1, 2, torque=nan)


# ----------------------------------------------------------------- example 1


def test_example1_compiled_matches_published(spy, published_dir):
    from frb.examples import run_example

    ref = published_dir / "out_example1.dat"
    if not ref.is_file():
        pytest.skip(f"{ref} not found")
    s = run_example(1, output_path=False, compare_path=ref)
    assert len(spy) == 1
    assert s["steps"] == 10000 and s["flows"] == 150000
    assert s["max_abs_deviation"] <= 1e-8
    assert s["values"].size == read_dat(ref).size


@pytest.mark.parametrize("m0, Q0, inertia, fragment", [
    ([np.nan, 0, 1], 2 * np.eye(3), [-1, 1, 1], "m0 must be finite"),
    (M0, np.full((3, 3), np.inf), [-1, 1, 1], "Q0 must be finite"),
    (M0, 2 * np.eye(3), [np.nan, 1, 1], "Q0 must be a rotation matrix"),
    (M0, np.diag([1.0, -1.0, -1.0]) @ np.diag([1.0, 1.0, -1.0]), [1, 1, 1], "Q0 must be a rotation"),
    (M0, np.eye(3), [np.nan, 1, 1], "inertia must be finite"),
    (M0, np.eye(3), [1, 0, 1], "inertia must be positive, got [1.0, 0.0, 1.0]"),
])
def test_initial_values_checked_in_order(m0, Q0, inertia, fragment):
    """m0, Q0 and inertia are checked by one compiled call (frb_checks, as frb_step): the first
    problem in the order m0, Q0, inertia is reported, in both loops."""
    for torque in (None, lambda m, Q, t: (m, Q)):
        with pytest.raises(ValueError, match=re.escape(fragment)):
            integrate(m0, Q0, inertia, 0.1, 1, torque=torque)
