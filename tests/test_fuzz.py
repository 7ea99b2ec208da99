"""Property tests (hypothesis) over the public functions, with generated valid and invalid inputs.

Every public function is called with generated valid arguments, and with one argument replaced
by a hostile value (None, bools, strings, complex numbers, NaN, infinities, zero, negative, huge,
tiny, empty or wrongly shaped arrays, arrays of strings or bools, other objects). A call with one
bad argument must either succeed with a finite, valid result (the value happened to be valid) or
raise ``TypeError``/``ValueError`` whose message names that argument (the input rule of
``frb/_validate.py``); a valid call must keep the invariants the mathematics gives (conservation of
``|m|`` and the energy by the exact flow, ``Q m`` constant, unit quaternions, rotations), compared
with independent numpy formulas.

The number of examples of each test is ``FRB_FUZZ_EXAMPLES`` (default 25, which keeps the file
at a few seconds in the test suite); ``bash .ci/run --fuzz 100000`` runs this file alone with
that budget.
"""
from __future__ import annotations

import math
import os
import re

import numpy as np
import pytest
from hypothesis import HealthCheck, assume, given, settings, strategies as st

import frb
import frb.splitting

EXAMPLES = int(os.environ.get("FRB_FUZZ_EXAMPLES", "25"))
fuzz = settings(max_examples=EXAMPLES, deadline=None, derandomize=True, database=None,
                suppress_health_check=list(HealthCheck))

# ---- valid inputs -------------------------------------------------------------------------------
# (components below 1e-30 in size become 0: a batch whose |m| spans more than 2^200, or a torqued
# body rescaled beyond the range of its torque's parameters, is refused by the scaling rule)
finite = st.floats(-1e3, 1e3, allow_nan=False, allow_subnormal=False).map(
    lambda x: x if abs(x) >= 1e-30 else 0.0)
moment = st.floats(0.05, 20.0)
step = st.floats(-5.0, 5.0, allow_nan=False, allow_subnormal=False)


@st.composite
def unit_quaternion(draw):
    q = np.array([draw(st.floats(-1, 1, allow_subnormal=False)) for _ in range(4)])
    n = np.linalg.norm(q)
    return np.array([1.0, 0, 0, 0]) if n < 1e-3 else q / n


@st.composite
def body(draw):
    """(m, q, inertia) of one body; m may have zero components, inertia may be symmetric."""
    m = np.array([draw(st.one_of(finite, st.sampled_from([0.0, 1.0, -1e-9]))) for _ in range(3)])
    inertia = np.array([draw(moment) for _ in range(3)])
    if draw(st.booleans()):
        inertia[draw(st.integers(0, 2))] = inertia[draw(st.integers(0, 2))]
    return m, draw(unit_quaternion()), inertia


@st.composite
def batch(draw, max_bodies=4):
    n = draw(st.integers(1, max_bodies))
    bodies = [draw(body()) for _ in range(n)]
    return tuple(np.array([b[i] for b in bodies]) for i in range(3))


# ---- hostile values -----------------------------------------------------------------------------
HOSTILE = [None, True, False, "1.0", b"x", 1j, [1 + 1j, 0, 0], math.nan, math.inf, -math.inf,
           -1.0, 0.0, 1e308, -1e308, 5e-324, [], [[]], np.zeros((0, 3)), np.array([1.0, 2.0]),
           np.ones((2, 2, 2)), np.array(["a", "b", "c"]), np.array([True, False, True]),
           [1.0, math.nan, 0.0], [0.0, 0.0, 0.0], [1.0, -2.0, 3.0], np.ones((5, 3)), object(),
           {"a": 1}, (1.0, 2.0, 3.0, 4.0), 2 ** 70, -3, 7.5]
hostile = st.sampled_from(HOSTILE)


def _check_message(err: Exception, names: tuple[str, ...]) -> None:
    """The refusal is a TypeError/ValueError naming one of ``names`` (the argument)."""
    assert isinstance(err, (TypeError, ValueError)), repr(err)
    text = str(err)
    assert any(re.search(r"(?<![A-Za-z_])%s(?![A-Za-z_])" % re.escape(n), text) for n in names), \
        f"message does not name {names}: {text!r}"


def _call_or_refuse(fn, args: dict, bad: str | None, names: dict[str, tuple[str, ...]]):
    """Call fn(**args); None if it refused bad input correctly, else its result.

    The message must name the bad argument, or another argument of the call: a wrong shape or
    size of one argument can make a batch of another size, which the others then contradict
    (an ``m`` of shape (5, 3) against one ``q``), or make another argument mean something else
    (a (3, 3) ``inertia`` is one body's tensor)."""
    try:
        return fn(**args)
    except (TypeError, ValueError) as err:
        if bad is None:
            raise
        _check_message(err, names.get(bad, (bad,)) + tuple(
            alias for name in args for alias in names.get(name, (name,))))
        return None


def _finite(*arrays) -> bool:
    return all(np.all(np.isfinite(np.asarray(a, dtype=float))) for a in arrays)


def _unit_norm(m):
    """|m| per row without overflow or underflow of the squares."""
    m = np.atleast_2d(m)
    big = np.max(np.abs(m), axis=1, keepdims=True)
    big[big == 0] = 1.0
    return big[:, 0] * np.linalg.norm(m / big, axis=1)


def _energy(m, inertia):
    return 0.5 * np.sum(np.atleast_2d(m) ** 2 / np.atleast_2d(inertia), axis=1)


def _rotation(q):
    """E(q) of unit quaternions (..., 4), written out (scalar first)."""
    w, x, y, z = np.moveaxis(np.asarray(q), -1, 0)
    return np.stack([np.stack([1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y)], -1),
                     np.stack([2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x)], -1),
                     np.stack([2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)], -1)],
                    -2)


def _maybe_corrupt(draw, args: dict) -> str | None:
    """Replace one argument (or none) by a hostile value; the name replaced."""
    if not draw(st.booleans()):
        return None
    name = draw(st.sampled_from(sorted(args)))
    args[name] = draw(hostile)
    return name


# ---- the free flows -----------------------------------------------------------------------------
@fuzz
@given(data=st.data(), quadrature=st.sampled_from([0, 0, 0, 1, 3, 10]))
def test_frb_and_quat_step(data, quadrature):
    m, q, inertia = data.draw(st.one_of(body(), batch()))
    h = data.draw(step)
    for fn, att in ((frb.quat_step, {"q": q}), (frb.frb_step, {"Q": _rotation(q)})):
        args = {"m": m, "h": h, "inertia": inertia, "quadrature": quadrature, **att}
        bad = _maybe_corrupt(data.draw, args)
        out = _call_or_refuse(fn, args, bad, {})
        if out is None:
            continue
        m1, a1 = out
        assert _finite(m1, a1)
        if bad is None:
            np.testing.assert_allclose(_unit_norm(m1), _unit_norm(m), rtol=1e-13, atol=1e-300)
            if quadrature == 0:
                e0 = _energy(m, inertia)
                np.testing.assert_allclose(_energy(m1, inertia), e0, rtol=1e-12, atol=1e-300)
                Q0 = _rotation(q)
                Q1 = a1 if fn is frb.frb_step else _rotation(a1)
                scale = np.max(np.abs(m))
                np.testing.assert_allclose(np.einsum("...ij,...j->...i", Q1, m1),
                                           np.einsum("...ij,...j->...i", Q0, m),
                                           rtol=0, atol=1e-12 * max(scale, 1e-300))


@fuzz
@given(data=st.data(), order=st.sampled_from([2, 4, 6, 8]))
def test_dmv_step_and_integrate(data, order):
    m, q, inertia = data.draw(st.one_of(body(), batch()))
    h = data.draw(st.floats(-0.5, 0.5, allow_nan=False, allow_subnormal=False))
    args = {"m": m, "q": q, "h": h, "inertia": inertia, "order": order}
    bad = _maybe_corrupt(data.draw, args)
    try:
        out = _call_or_refuse(frb.dmv_step, args, bad, {})
    except frb.IntegrationError as err:   # DMV's implicit equation: |h| |m| / I_min too large
        assert "too large" in str(err)
        out = None
    if out is not None:
        assert _finite(*out)
        if bad is None:       # DMV keeps |m| exactly up to rounding (an orthogonal update)
            np.testing.assert_allclose(_unit_norm(out[0]), _unit_norm(m), rtol=1e-12, atol=1e-300)
    args = {"m0": m, "q0": q, "inertia": inertia, "h": h, "nsteps": data.draw(st.integers(0, 5)),
            "order": order}
    bad = _maybe_corrupt(data.draw, args)
    try:
        out = _call_or_refuse(frb.dmv_integrate, args, bad, {})
    except frb.IntegrationError as err:
        assert "too large" in str(err)
        out = None
    if out is not None:
        assert _finite(*[np.asarray(x) for x in out if isinstance(x, np.ndarray)])


# ---- frb.integrate and the splitting driver ------------------------------------------------------
TORQUES = [None, "heavy_top", "linear_damping", "gravity_gradient", "constant_field"]


def _torque(name):
    from frb import torques
    return {None: None, "heavy_top": torques.heavy_top(0.5, [0.0, 0.1, 1.0]),
            "linear_damping": torques.linear_damping(0.1),
            "gravity_gradient": torques.gravity_gradient(0.3),
            "constant_field": torques.constant_field([0.0, 0.2, 1.0])}[name]


@fuzz
@given(data=st.data(), method=st.sampled_from(list(frb.METHODS)), torque=st.sampled_from(TORQUES))
def test_integrate(data, method, torque):
    m, q, inertia = data.draw(st.one_of(body(), batch(3)))
    m = m / max(1.0, float(np.max(np.abs(m))))        # |m| <= sqrt(3): the implicit methods converge
    inertia = np.clip(inertia, 0.5, 3.0)
    tq = _torque(torque)
    info = frb.METHODS[method]
    assume(tq is None or info.accepts(tq))
    args = {"m0": m, "attitude0": q, "inertia": inertia,
            "h": data.draw(st.floats(-0.05, 0.05, allow_nan=False, allow_subnormal=False)),
            "nsteps": data.draw(st.integers(0, 4)), "method": method, "torque": tq,
            "save_every": data.draw(st.sampled_from([1, 2, None, "final"]))}
    bad = _maybe_corrupt(data.draw, args)
    try:
        tr = _call_or_refuse(frb.integrate, args, bad,
                             {"m0": ("m0",), "attitude0": ("attitude0", "q0", "Q0")})
    except frb.IntegrationError:
        assert bad is not None, "a small step of a slow body failed"
        return
    if tr is None:
        return
    assert _finite(tr.t, tr.m, tr.q)
    if bad is None and torque is None and info.implicit is False and method == "EXACT":
        np.testing.assert_allclose(_unit_norm(tr.m[-1]), _unit_norm(m), rtol=1e-13, atol=1e-300)


@fuzz
@given(data=st.data(), method=st.sampled_from(["STRANG", "RKN6_14", "YOSHIDA4"]))
def test_splitting_integrate(data, method):
    m, q, inertia = data.draw(body())                  # (the splitting driver: one body)
    Q = _rotation(q)
    args = {"m0": m, "Q0": Q, "inertia": inertia,
            "h": data.draw(st.floats(-0.5, 0.5, allow_nan=False, allow_subnormal=False)),
            "nsteps": data.draw(st.integers(0, 4)), "method": method,
            "torque": _torque(data.draw(st.sampled_from([None, "heavy_top"])))}
    bad = _maybe_corrupt(data.draw, args)
    try:
        out = _call_or_refuse(frb.splitting.integrate, args, bad, {})
    except frb.IntegrationError:
        # (a valid but extreme value, h = 1e308 say, whose state overflows: the run's failure)
        assert bad is not None, "a moderate step of a moderate body failed"
        return
    if out is None:
        return
    arrays = [np.asarray(x) for x in (out if isinstance(out, tuple) else (out.m, out.Q))
              if isinstance(x, np.ndarray) or hasattr(x, "shape")]
    assert _finite(*arrays)


# ---- rotations and small helpers ------------------------------------------------------------------
@fuzz
@given(data=st.data())
def test_rotation_helpers(data):
    q = data.draw(st.one_of(unit_quaternion(), st.lists(unit_quaternion(), min_size=1, max_size=4)
                            .map(np.array)))
    p = data.draw(unit_quaternion())
    v = np.array([data.draw(finite) for _ in range(3)])
    Q = _rotation(q)
    # valid: against the written-out formulas
    np.testing.assert_allclose(frb.quat_to_matrix(q), Q, atol=4e-16 * 8)
    q_back = frb.matrix_to_quat(Q)
    sign = np.sign(np.sum(q_back * q, axis=-1, keepdims=True))
    np.testing.assert_allclose(q_back * sign, q, atol=1e-14)
    np.testing.assert_allclose(frb.quat_to_matrix(frb.quat_mul(p, q)),
                               np.einsum("ij,...jk->...ik", _rotation(p), Q), atol=1e-14)
    np.testing.assert_array_equal(frb.quat_conj(q), np.asarray(q) * [1, -1, -1, -1])
    w = np.array([1.0, -2.0, 0.5])
    np.testing.assert_allclose(frb.hat(v) @ w, np.cross(v, w), rtol=1e-15, atol=1e-12)
    np.testing.assert_allclose(frb.spatial_momentum(v, Q), np.einsum("...ij,j->...i", Q, v),
                               rtol=0, atol=1e-12 * (1 + np.max(np.abs(v))))
    # one hostile argument
    name, fn, args = data.draw(st.sampled_from([
        ("q", frb.quat_to_matrix, {"q": q}), ("Q", frb.matrix_to_quat, {"Q": Q}),
        ("q", frb.quat_conj, {"q": q}), ("v", frb.hat, {"v": v}),
        ("p", frb.quat_mul, {"p": p, "q": q}), ("q", frb.quat_mul, {"p": p, "q": q}),
        ("m", frb.spatial_momentum, {"m": v, "Q": Q}), ("Q", frb.spatial_momentum, {"m": v, "Q": Q}),
    ]))
    args = dict(args)
    args[name] = data.draw(hostile)
    out = _call_or_refuse(fn, args, name, {})
    if out is not None:
        assert _finite(out)


@fuzz
@given(data=st.data())
def test_kinetic_energy_and_principal_axes(data):
    m, q, inertia = data.draw(body())
    e = frb.kinetic_energy(m, inertia)
    np.testing.assert_allclose(e, 0.5 * np.sum(m * m / inertia), rtol=1e-14, atol=1e-300)
    R = _rotation(q)
    J = R @ np.diag(inertia) @ R.T
    J = 0.5 * (J + J.T)
    moments, axes = frb.principal_axes(J)[:2]
    np.testing.assert_allclose(np.sort(moments), np.sort(inertia), rtol=1e-10,
                               atol=1e-13 * np.max(inertia))
    name = data.draw(st.sampled_from(["m", "inertia", "J"]))
    if name == "J":
        out = _call_or_refuse(frb.principal_axes, {"J": data.draw(hostile)}, "J",
                              {"J": ("J", "inertia")})
    else:
        args = {"m": m, "inertia": inertia}
        args[name] = data.draw(hostile)
        out = _call_or_refuse(frb.kinetic_energy, args, name, {})
    if out is not None:
        assert all(_finite(o) for o in (out if isinstance(out, tuple) else (out,)))


# ---- files, threads, SIMD targets ------------------------------------------------------------------
@fuzz
@given(values=st.lists(st.floats(allow_nan=False, allow_infinity=False), min_size=0, max_size=30))
def test_write_and_read_dat(tmp_path_factory, values):
    path = tmp_path_factory.mktemp("dat") / "v.dat"
    frb.write_dat(path, values)
    back = frb.read_dat(path)
    np.testing.assert_array_equal(np.asarray(back, dtype=float).ravel(), np.asarray(values, float))


@fuzz
@given(value=hostile)
def test_read_and_write_dat_refuse_bad_arguments(tmp_path_factory, value):
    path = tmp_path_factory.mktemp("dat") / "v.dat"
    _call_or_refuse(frb.write_dat, {"path": path, "values": value}, "values", {})
    frb.write_dat(path, [1.0, 2.0, 3.0])
    out = _call_or_refuse(frb.read_dat, {"path": path, "max_values": value}, "max_values", {})
    if out is not None:
        np.testing.assert_array_equal(np.asarray(out, float).ravel(), [1.0, 2.0, 3.0])


@fuzz
@given(value=hostile.filter(lambda v: not isinstance(v, (str, bytes))))   # (strings are names)
def test_read_and_write_dat_name_a_bad_path(value):
    _call_or_refuse(frb.write_dat, {"path": value, "values": [1.0, 2.0]}, "path", {})
    _call_or_refuse(frb.read_dat, {"path": value}, "path", {})


@fuzz
@given(value=st.one_of(hostile, st.integers(-10, 10_000)))
def test_threads_and_targets_refuse_bad_values(value):
    before = frb.get_num_threads()
    try:
        _call_or_refuse(frb.set_num_threads, {"n": value}, "n", {"n": ("n", "threads")})
        assert frb.get_num_threads() >= 1
    finally:
        frb.set_num_threads(before)
    target = frb.cpu_dispatch()
    try:
        try:
            frb.set_cpu_target(value)
        except (TypeError, ValueError) as err:
            _check_message(err, ("target",))
    finally:
        frb.set_cpu_target(target)
