"""Hostile input for every public function and the CLI: each row is an input and
either the exception (type and a fragment of its message, which names the argument, and the body
in a batch) or a check of the correct result. Bad input never yields a wrong answer, NaN or inf.
"""
import decimal
import fractions
import os

import numpy as np
import pytest

import frb
from frb import cli
from frb.splitting import constant_field

M, Q, QUAT, I = np.array([0.3, 0.5, 0.8]), np.eye(3), np.array([1.0, 0, 0, 0]), np.array([1.0, 2.0, 3.0])
MB, QB, QUATB = np.tile(M, (3, 1)), np.tile(Q, (3, 1, 1)), np.tile(QUAT, (3, 1))
F32_Q = frb.quat_to_matrix([0.6, 0.0, 0.8, 0.0]).astype(np.float32) @ np.diag([1, 1, 1]).astype(np.float32)
F32_QUAT = (np.array([1.0, 2.0, 3.0, 4.0]) / np.sqrt(30.0)).astype(np.float32)


def _rot_x(theta):
    c, s = np.cos(theta), np.sin(theta)
    return np.array([[1.0, 0, 0], [0, c, -s], [0, s, c]])


def _step(**kw):
    a = dict(m=M, Q=Q, h=0.1, inertia=I)
    a.update(kw)
    return frb.frb_step(a["m"], a["Q"], a["h"], a["inertia"], a.get("quadrature", 0))


def _quat(**kw):
    a = dict(m=M, q=QUAT, h=0.1, inertia=I)
    a.update(kw)
    return frb.quat_step(a["m"], a["q"], a["h"], a["inertia"])


def _split(**kw):
    a = dict(m0=M, Q0=Q, inertia=I, h=0.1, nsteps=2)
    a.update(kw)
    return frb.splitting.integrate(a.pop("m0"), a.pop("Q0"), a.pop("inertia"), a.pop("h"),
                                   a.pop("nsteps"), **a)


def _integrate(**kw):
    a = dict(m0=M, attitude0=QUAT, inertia=I, h=0.1, nsteps=2, method="RK4")
    a.update(kw)
    return frb.integrate(a.pop("m0"), a.pop("attitude0"), a.pop("inertia"), a.pop("h"),
                         a.pop("nsteps"), **a)


def _scipy_rotation():
    return pytest.importorskip("scipy.spatial.transform").Rotation


def _torque_returning_strings(m, Q, t):
    return ["0.3", "0.5", "0.8"], Q


def _torque_changing_q_in_place(m, Q, t):
    Q[0, 0] = 2.0
    return m, Q


# --------------------------------------------------------------------- results that must be right

def _same_as(reference):
    """Check: the result equals ``reference()`` (arrays compared exactly)."""
    def check(result):
        ref = reference()
        for a, b in zip(result, ref):
            assert np.array_equal(np.asarray(a), np.asarray(b))
    return check


def _finite_on_orbit(m0, inertia):
    def check(result):
        m, attitude = result
        assert np.isfinite(m).all() and np.isfinite(attitude).all()
        g0 = np.abs(m0).max() * np.linalg.norm(np.asarray(m0) / np.abs(m0).max())
        g1 = np.abs(m).max() * np.linalg.norm(m / np.abs(m).max())
        assert abs(g1 / g0 - 1) < 1e-14
    return check


def _dmv_scaled(a_exp, b_exp):
    """dmv_step(a m, q, h b/a, b I) = (a m1, q1) for powers of two a, b (the scaling law)."""
    def check(result):
        m1, q1 = frb.dmv_step(M, QUAT, 0.1, I)
        assert np.array_equal(result[0], np.ldexp(m1, a_exp)) and np.array_equal(result[1], q1)
    return check


def _scaled_flow(step, a_exp, b_exp):
    """Check: step(a m, attitude, h b/a, b I) = (a m1, attitude1) with a = 2^a_exp, b = 2^b_exp
    (the scaling law of the free rigid body), within the rounding of a subnormal output; the
    reference takes the scaled inputs, rounded where subnormal, scaled back exactly."""
    def check(result):
        m1, att1 = step(np.ldexp(np.ldexp(M, a_exp), -a_exp),
                        np.ldexp(np.ldexp(0.1, b_exp - a_exp), a_exp - b_exp),
                        np.ldexp(np.ldexp(I, b_exp), -b_exp))
        m_s, att_s = result
        assert np.isfinite(m_s).all() and np.isfinite(att_s).all()
        scale = np.ldexp(np.abs(m1).max(), a_exp)
        assert np.abs(m_s - np.ldexp(m1, a_exp)).max() <= 1e-15 * scale + 4 * 2.0**-1074
        assert np.abs(att_s - att1).max() <= 1e-15
    return check


def _short_repr(result):
    text = repr(result)
    assert len(text) < 200 and "\n" not in text and "Trajectory" in text


CASES = [
    # ---- frb_step / quat_step: what counts as a real number (one rule, frb/_validate.py)
    ("step h None", lambda: _step(h=None), (TypeError, "h must be a real number (or, for a batch, an array of real numbers), got None")),
    ("step h string", lambda: _step(h="0.1"), (TypeError, "h must be a real number")),
    ("step h bool", lambda: _step(h=True), (TypeError, "h must be a real number")),
    ("step h complex", lambda: _step(h=0.1 + 0j), (TypeError, "h must be a real number")),
    ("step m strings", lambda: _step(m=["0.3", "0.5", "0.8"]), (TypeError, "m must be an array of real numbers, got strings")),
    ("step m bools", lambda: _step(m=[True, 0.5, 0.8]), (TypeError, "m must be an array of real numbers, but it holds a boolean")),
    ("step m bool array", lambda: _step(m=np.array([True, False, True])), (TypeError, "got booleans")),
    ("step m complex", lambda: _step(m=M + 0j), (TypeError, "m must be an array of real numbers, got complex")),
    ("step m None inside", lambda: _step(m=np.array([0.3, None, 0.8], dtype=object)), (TypeError, "m must be an array of real numbers, but it holds None")),
    ("step m huge int", lambda: _step(m=[10**400, 0, 0]), (ValueError, "m holds a number too large for a float64")),
    ("step m huge Decimal", lambda: _step(m=[decimal.Decimal("-1e400"), 0, 0]), (ValueError, "m holds a number too large for a float64: Decimal('-1E+400')")),
    ("step h huge Decimal", lambda: _step(h=decimal.Decimal("1e400")), (ValueError, "h holds a number too large for a float64")),
    ("step m tiny Decimal", lambda: _step(m=[decimal.Decimal("1e-400"), 0, 0]), (ValueError, "m holds a nonzero number too small for a float64 (it would become zero)")),
    ("step inertia tiny longdouble", lambda: _step(inertia=np.array([np.longdouble("1e-400"), 1, 1])), (ValueError, "inertia holds a nonzero number too small for a float64")),
    ("write_dat huge Decimal", lambda: frb.write_dat(os.devnull, [1.0, decimal.Decimal("1e400")]), (ValueError, "values holds a number too large for a float64")),
    ("step m ragged", lambda: _step(m=[[1.0, 2.0, 3.0], [1.0]]), (TypeError, "m must be an array of real numbers (a rectangular array): its rows differ in length")),
    ("step m masked", lambda: _step(m=np.ma.masked_array(M, [0, 1, 0])), (TypeError, "masked array")),
    ("step Q complex", lambda: _step(Q=Q + 0j), (TypeError, "Q must be an array of real numbers, got complex")),
    ("step inertia complex", lambda: _step(inertia=I + 0j), (TypeError, "inertia must be an array of real numbers, got complex")),
    ("step inertia strings", lambda: _step(inertia=["1", "2", "3"]), (TypeError, "inertia must be an array of real numbers, got strings")),
    ("quat q complex", lambda: _quat(q=QUAT + 0j), (TypeError, "q must be an array of real numbers, got complex")),
    ("quat q scipy Rotation", lambda: _quat(q=_scipy_rotation().identity()), (TypeError, "frb.from_rotation")),
    ("step quadrature bool", lambda: _step(quadrature=True), (TypeError, "quadrature")),
    ("step quadrature 11", lambda: _step(quadrature=11), (ValueError, "quadrature")),
    # numbers that are real numbers: accepted, same result as the float
    ("step h Fraction", lambda: _step(h=fractions.Fraction(1, 10)), _same_as(lambda: _step(h=0.1))),
    ("step h Decimal", lambda: _step(h=decimal.Decimal("0.1")), _same_as(lambda: _step(h=0.1))),
    ("step ints", lambda: _step(m=[3, 5, 8], inertia=[1, 2, 3]), _same_as(lambda: _step(m=[3.0, 5.0, 8.0]))),
    ("step float32 m", lambda: _step(m=np.float32([0.25, 0.5, 0.75])), _same_as(lambda: _step(m=[0.25, 0.5, 0.75]))),
    # ---- messages that misled
    ("step inertia (1, 3) one body", lambda: _step(inertia=[[1.0, 2.0, 3.0]]), (ValueError, "inertia must have shape (3,) for one body (m of shape (3,)), got (1, 3)")),
    ("step inertia (2, 3) batch of 3", lambda: _step(m=MB, Q=QB, inertia=np.ones((2, 3))), (ValueError, "inertia must have shape (3,) or (3, 3), got (2, 3)")),
    ("step h array one body", lambda: _step(h=[0.1, 0.2]), (ValueError, "h must be a single number for one body")),
    ("step Q float32", lambda: _step(Q=F32_Q), (ValueError, "the input is float32")),
    ("quat q float32", lambda: _quat(q=F32_QUAT), (ValueError, "the input is float32")),
    ("step Q reflection", lambda: _step(Q=np.diag([1.0, 1.0, -1.0])), (ValueError, "Q must be a rotation matrix")),
    ("quat q not unit", lambda: _quat(q=[1.0, 0, 0, 0.1]), (ValueError, "q must be a unit quaternion, scalar first")),
    ("batch m NaN names body", lambda: _step(m=np.array([M, M, [0, np.nan, 0]]), Q=QB), (ValueError, "m contains non-finite values (NaN or infinity) (body 2)")),
    ("batch inertia zero names body", lambda: frb.quat_step(MB, QUATB, 0.1, [I, I, [1, 0, 1]]), (ValueError, "strictly positive moments of inertia (body 2)")),
    ("batch h None inside", lambda: frb.quat_step(MB, QUATB, np.array([0.1, None, 0.1], dtype=object), I), (TypeError, "h must be a real number (or, for a batch, an array of real numbers), but it holds None")),
    # ---- scales: right answers (moment ratio beyond 1e154, subnormal momentum and moments)
    ("step ratio 1e200", lambda: _step(h=1e-101, inertia=[1.0, 1e100, 1e-100]), _finite_on_orbit(M, [1.0, 1e100, 1e-100])),
    ("step both subnormal", lambda: _step(m=np.ldexp(M, -1040), inertia=np.ldexp(I, -1040)),
     _scaled_flow(lambda m, h, i: frb.frb_step(m, Q, h, i), -1040, -1040)),
    ("quat subnormal m", lambda: _quat(m=np.ldexp(M, -1040), h=np.ldexp(0.1, 940), inertia=np.ldexp(I, -100)),
     _scaled_flow(lambda m, h, i: frb.quat_step(m, QUAT, h, i), -1040, -100)),
    ("step subnormal inertia", lambda: _step(h=0.1 * 2.0**-1050, inertia=np.ldexp(I, -1050)),
     _scaled_flow(lambda m, h, i: frb.frb_step(m, Q, h, i), 0, -1050)),
    ("step enormous phase", lambda: _step(m=[-0.212, 0.504, 1.139], h=6.0e114, inertia=[2.44, 1.56, 2.80]), (ValueError, "h is too long: |h| |m| / I_min = 4.86e+114 exceeds 1e+18 radians")),
    ("step tiny inertia", lambda: _step(inertia=1e-177 * I), (ValueError, "h is too long")),
    # ---- DMV
    ("dmv new order", lambda: frb.dmv_integrate(M, QUAT, I, 0.1, 5), _same_as(lambda: frb.dmv_integrate(m0=M, q0=QUAT, h=0.1, nsteps=5, inertia=I))),
    ("dmv nsteps 2**31", lambda: frb.dmv_integrate(M, QUAT, I, 0.1, 2**31), (ValueError, "nsteps must be an integer in 0..2147483646, got 2147483648")),
    ("dmv nsteps float", lambda: frb.dmv_integrate(M, QUAT, I, 0.1, 5.0), (TypeError, "nsteps must be an integer, got 5.0")),
    ("dmv order bool", lambda: frb.dmv_step(M, QUAT, 0.1, I, order=True), (TypeError, "order")),
    ("dmv huge m", lambda: frb.dmv_step(M * 2.0**1000, QUAT, 0.1 * 2.0**-1000, I), _dmv_scaled(1000, 0)),
    ("dmv subnormal", lambda: frb.dmv_step(np.ldexp(M, -1060), QUAT, 0.1, np.ldexp(I, -1060)),
     _scaled_flow(lambda m, h, i: frb.dmv_step(m, QUAT, h, i), -1060, -1060)),
    ("dmv ratio order 8", lambda: frb.dmv_step(M, QUAT, 1e-61, [1.0, 1e60, 1e-60], order=8), (ValueError, "order 8 supports I_max / I_min up to 1e+40")),
    ("dmv no solution names body", lambda: frb.dmv_step(np.array([M, [2.0, 0, 0], M]), QUATB, 0.3, [0.5, 1.0, 1.5], order=2), (RuntimeError, "body 1 has no solution")),
    ("dmv q complex", lambda: frb.dmv_step(M, QUAT + 0j, 0.1, I), (TypeError, "q must be an array of real numbers, got complex")),
    # ---- splitting.integrate
    ("split nsteps 2**31", lambda: _split(nsteps=2**31), (ValueError, "must be an integer in 0..2147483646, got 2147483648")),
    ("split nsteps 2**31 - 1", lambda: _split(nsteps=2**31 - 1), (ValueError, "0..2147483646")),
    ("split h None", lambda: _split(h=None), (TypeError, "h must be a real number, got None")),
    ("split m0 complex", lambda: _split(m0=M + 0j), (TypeError, "m0 must be an array of real numbers, got complex")),
    ("split inertia (1, 3)", lambda: _split(inertia=[[1.0, 2.0, 3.0]]), (ValueError, "inertia must have shape (3,)")),
    ("split Q0 float32", lambda: _split(Q0=F32_Q), (ValueError, "the input is float32")),
    ("split torque strings", lambda: _split(torque=_torque_returning_strings), (TypeError, "the m returned by torque _torque_returning_strings (step 1) must be an array of real numbers, got strings")),
    ("split torque in place", lambda: _split(torque=_torque_changing_q_in_place), (ValueError, "torque _torque_changing_q_in_place (step 1) must not modify Q in place")),
    ("split torque not callable", lambda: _split(torque=3.0), (TypeError, "torque must be None or a callable")),
    ("split coefficients strings", lambda: _split(torque=constant_field([0, 0, 1.0]), coefficients=(("0.5", 0.0), (0.5,))), (TypeError, "coefficients a")),
    ("split enormous phase", lambda: _split(h=1e30), (ValueError, "h is too long")),
    ("split overflow", lambda: _split(h=10.0, torque=constant_field([1e308] * 3)), (frb.IntegrationError, "non-finite at step 1")),
    ("split repr", lambda: _split(nsteps=1000), _short_repr),
    # ---- frb.integrate
    ("integrate nsteps 2**31", lambda: _integrate(nsteps=2**31), (ValueError, "nsteps must be an integer in 0..2147483646")),
    ("integrate h None", lambda: _integrate(h=None), (TypeError, "h must be a real number, got None")),
    ("integrate m0 bools", lambda: _integrate(m0=[True, 0.5, 0.8]), (TypeError, "m0 must be an array of real numbers, but it holds a boolean")),
    ("integrate attitude complex", lambda: _integrate(attitude0=QUAT + 0j), (TypeError, "attitude0 must be an array of real numbers, got complex")),
    ("integrate attitude float32", lambda: _integrate(attitude0=F32_QUAT), (ValueError, "the input is float32")),
    ("integrate batch attitude names body", lambda: _integrate(m0=MB, attitude0=np.array([Q, Q, 2 * Q])), (ValueError, "rotation matrices (Q^T Q = 1 within 1e-10, det Q = +1) (body 2)")),
    ("integrate batch NaN names body", lambda: _integrate(m0=np.array([M, [np.nan, 0, 0], M]), attitude0=QUATB), (ValueError, "m0 contains non-finite values (NaN or infinity) (body 1)")),
    ("integrate torque writes Q", lambda: _integrate(torque=lambda t, Q: Q.__setitem__((0, 0, 0), 5.0)), (ValueError, "(method RK4, step 1) must not modify Q in place")),
    ("integrate torque None", lambda: _integrate(torque=lambda t, Q: None), (TypeError, "(method RK4, step 1) returned None")),
    ("integrate torque strings", lambda: _integrate(torque=lambda t, Q: np.array([["1", "2", "3"]])), (TypeError, "must return real numbers, got dtype <U1")),
    ("integrate enormous phase", lambda: _integrate(h=1e30), (ValueError, "h is too long")),
    ("integrate repr", lambda: _integrate(m0=np.tile(M, (50, 1)), attitude0=np.tile(QUAT, (50, 1)), nsteps=100), _short_repr),
    # ---- torques
    ("heavy_top weight string", lambda: frb.torques.heavy_top("1", [0, 0, 1]), (TypeError, "weight must be a real number")),
    ("heavy_top center complex", lambda: frb.torques.heavy_top(1.0, [0, 0, 1j]), (TypeError, "center must be an array of real numbers, got complex")),
    ("constant_field None", lambda: constant_field(None), (TypeError, "u0 must be an array of real numbers, got None")),
    # ---- rotation helpers
    ("hat strings", lambda: frb.hat("abc"), (TypeError, "v must be an array of real numbers")),
    ("quat_to_matrix complex", lambda: frb.quat_to_matrix(QUAT + 0j), (TypeError, "q must be an array of real numbers, got complex")),
    ("kinetic_energy NaN", lambda: frb.kinetic_energy([np.nan, 0, 0], I), (ValueError, "m contains non-finite values")),
    ("to_rotation not unit", lambda: (_scipy_rotation(), frb.to_rotation([1.0, 0, 0, 0.5]))[1], (ValueError, "unit quaternions, scalar first")),
    ("to_rotation wrong shape", lambda: (_scipy_rotation(), frb.to_rotation(np.ones(5)))[1], (ValueError, "attitude must have shape")),
    ("from_rotation not a Rotation", lambda: (_scipy_rotation(), frb.from_rotation(QUAT))[1], (TypeError, "rot must be a scipy.spatial.transform.Rotation")),
    ("from_rotation form", lambda: frb.from_rotation(_scipy_rotation().identity(), form="euler"), (ValueError, "form must be")),
]


@pytest.mark.parametrize("call, expect", [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_hostile_input(call, expect):
    if isinstance(expect, tuple):
        error, fragment = expect
        with pytest.raises(error) as info:
            call()
        assert fragment in str(info.value), str(info.value)
    else:
        expect(call())


def test_inputs_are_not_modified():
    m, q, inertia = M.copy(), QUAT.copy(), I.copy()
    for a in (m, q, inertia):
        a.flags.writeable = False
    frb.quat_step(m, q, 0.1, inertia)
    frb.dmv_integrate(m * 2.0**900, q, inertia, 0.1 * 2.0**-900, 3)   # the rescaled path copies
    assert np.array_equal(m, M) and np.array_equal(q, QUAT) and np.array_equal(inertia, I)


def test_dmv_integrate_takes_its_arguments_in_one_order():
    """(m0, q0, inertia, h, nsteps), as frb.integrate: an array in the place of nsteps is refused
    by its name."""
    with pytest.raises(TypeError, match="nsteps must be an integer"):
        frb.dmv_integrate(M, QUAT, I, 0.01, [10, 20])
    with pytest.raises(ValueError, match="inertia must have shape"):
        frb.dmv_integrate(M, QUAT, 0.1, 5, I)


# ------------------------------------------------------------------ scipy's Rotation, both ways

def test_rotation_round_trip_and_scalar_order():
    Rotation = _scipy_rotation()
    rng = np.random.default_rng(5)
    q = rng.normal(size=(6, 4))
    q /= np.linalg.norm(q, axis=1, keepdims=True)
    rot = frb.to_rotation(q)
    # scipy's own matrices are frb's E(q): the same rotation, scipy scalar last
    np.testing.assert_allclose(rot.as_matrix(), frb.quat_to_matrix(q), atol=1e-15)
    np.testing.assert_allclose(rot.as_quat(), q[:, [1, 2, 3, 0]], atol=1e-15)
    q_back = frb.from_rotation(rot)
    assert q_back.shape == (6, 4)
    np.testing.assert_allclose(np.abs(np.sum(q_back * q, axis=1)), 1.0, atol=1e-15)  # q or -q
    Q = frb.quat_to_matrix(q)
    np.testing.assert_allclose(frb.from_rotation(frb.to_rotation(Q), form="matrix"), Q, atol=1e-15)
    single = frb.to_rotation(q[0])
    assert single.single and frb.from_rotation(single).shape == (4,)
    # a scalar-last quaternion taken for scalar first is another attitude: the conversion fixes it
    xyzw = Rotation.from_rotvec([0.3, -0.2, 0.5]).as_quat()
    assert not np.allclose(frb.quat_to_matrix(xyzw), Rotation.from_quat(xyzw).as_matrix())
    np.testing.assert_allclose(frb.quat_to_matrix(frb.from_rotation(Rotation.from_quat(xyzw))),
                               Rotation.from_quat(xyzw).as_matrix(), atol=1e-15)
    # a flow with the converted attitude equals the flow with the matrix
    m1, q1 = frb.quat_step(M, frb.from_rotation(Rotation.from_quat(xyzw)), 0.3, I)
    m2, Q2 = frb.frb_step(M, Rotation.from_quat(xyzw).as_matrix(), 0.3, I)
    np.testing.assert_allclose(frb.quat_to_matrix(q1), Q2, atol=1e-14)


def test_rotation_without_scipy(monkeypatch):
    import sys
    monkeypatch.setitem(sys.modules, "scipy.spatial.transform", None)
    with pytest.raises(ImportError, match="need scipy, which is not installed"):
        frb.to_rotation(QUAT)
    with pytest.raises(ImportError, match="need scipy"):
        frb.from_rotation(None)


# --------------------------------------------------------------------------------- read / write

@pytest.mark.parametrize("values, fragment", [
    (None, "values must be an array of real numbers, got None"),
    (np.array([1.0, None], dtype=object), "but it holds None"),
    ([1.0, 2.0 + 1j], "got complex"),
    (["1.0"], "got strings"),
    ([True, 1.0], "holds a boolean"),
])
def test_write_dat_refuses_what_is_not_a_real_number(tmp_path, values, fragment):
    path = tmp_path / "x.dat"
    with pytest.raises(TypeError, match=fragment.replace("(", r"\(")):
        frb.write_dat(path, values)
    assert not path.exists() or path.read_text() == ""


def test_write_dat_keeps_explicit_non_finite_values(tmp_path):
    frb.write_dat(tmp_path / "x.dat", [np.nan, np.inf, -1.5])
    back = frb.read_dat(tmp_path / "x.dat")
    assert np.isnan(back[0]) and back[1] == np.inf and back[2] == -1.5


def test_write_dat_formats_in_blocks(tmp_path):
    import tracemalloc
    values = np.random.default_rng(5).normal(size=1_000_000)    # 8 MB of data, 24 MB of text
    tracemalloc.start()
    try:
        frb.write_dat(tmp_path / "x.dat", values)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 16e6, peak            # (the text of one block, 65536 lines, at a time)
    assert (tmp_path / "x.dat").stat().st_size == 24 * values.size
    with open(tmp_path / "x.dat") as fh:
        assert [float(fh.readline()) for _ in range(3)] == values[:3].tolist()


@pytest.mark.parametrize("content, fragment", [
    (b"1000000000*0.0", "would hold 1000000000 values or more, beyond max_values = 10000000"),
    (b"1.0\n1e400\n", "x.dat:2: '1e400' is too large for a float64"),
    (b"1.0 1.5d400", "'1.5d400' is too large"),
    (b"1.0 1e-400", "'1e-400' is too small for a float64 (it would become zero"),
    (b"2*1e-400", "'1e-400' is too small"),
    (b"1.0 2.\xc3\xa90", "x.dat:1: byte 0xc3 at column 7 is not ASCII"),
    (b"\xff\xfe1\x00", "(a UTF-16 file? save it as ASCII or UTF-8)"),
    (b"1_000", "cannot read '1_000' as a number"),
])
def test_read_dat_refuses(tmp_path, content, fragment):
    (tmp_path / "x.dat").write_bytes(content)
    with pytest.raises(ValueError) as info:
        frb.read_dat(tmp_path / "x.dat")
    assert fragment in str(info.value)


@pytest.mark.parametrize("content, values", [
    (b"\xef\xbb\xbf1.0 2.0\n3.0\n", [1.0, 2.0, 3.0]),                   # UTF-8 byte-order mark
    (b"0.0 -0.0 0d0 0.0e-999 4.9e-324 1e-320 inf -nan", [0.0, -0.0, 0.0, 0.0, 5e-324, 1e-320, np.inf, np.nan]),
    (b"1.5 2.5d0 1.0+05 3*2", [1.5, 2.5, 1e5, 2.0, 2.0, 2.0]),      # plain and Fortran-only forms
])
def test_read_dat_accepts(tmp_path, content, values):
    (tmp_path / "x.dat").write_bytes(content)
    np.testing.assert_array_equal(frb.read_dat(tmp_path / "x.dat"), values)


def test_read_dat_limit_can_be_raised(tmp_path):
    (tmp_path / "x.dat").write_bytes(b"20*1.0 5.0")
    with pytest.raises(ValueError, match="max_values = 10"):
        frb.read_dat(tmp_path / "x.dat", max_values=10)
    assert frb.read_dat(tmp_path / "x.dat", max_values=None).size == 21


def test_read_dat_one_long_line_is_read_exactly(tmp_path):
    # the fast path of plain numbers (one float() per token) gives the correctly rounded values
    v = np.random.default_rng(1).normal(size=50_000) * 10.0 ** np.random.default_rng(2).integers(-300, 300, 50_000)
    (tmp_path / "x.dat").write_text(" ".join(f"{x:.17g}" for x in v) + "\n")
    assert np.array_equal(frb.read_dat(tmp_path / "x.dat"), v)


# ------------------------------------------------------------------------------------------ CLI

def _input(tmp_path, n, replace):
    """The packaged input of example n with some values replaced (index -> text)."""
    from frb.examples import packaged_input
    lines = packaged_input(n).read_text().split("\n")
    for i, text in replace.items():
        lines[i] = text
    path = tmp_path / f"in{n}.dat"
    path.write_text("\n".join(lines))
    return str(path)


@pytest.mark.parametrize("argv, fragment", [
    (["3", "--tol", "nan"], "--tol must be a finite number >= 0, got nan"),
    (["3", "--tol", "-1"], "--tol must be a finite number >= 0, got -1.0"),
    (["3", "--output", ""], "--output must name a file, got an empty path"),
    (["3", "--output", "."], "--output must name a file, but '.' is a directory"),
    (["3", "--input", "{tmp}/missing.dat"], "--input: cannot read '{tmp}/missing.dat': No such file"),
    (["3", "--input", "{tmp}"], "--input: cannot read '{tmp}': Is a directory"),
    (["3", "--input", ("zero", {1: "0"})], "need finite h > 0 and Tfin > 0, got h=1.0, Tfin=0.0"),
    (["3", "--output", "{tmp}/missing/out.dat"], "--output: cannot write '{tmp}/missing/out.dat'"),
    (["3", "--compare", "/dev/null"], "--compare: '/dev/null' is not a regular file"),
    (["3", "--compare", "{tmp}/missing.dat"], "--compare: comparison file not found"),
    (["3", "--input", ("tfin", {1: "1e12"})], "Tfin/h = 1e+12 steps is more than a run can take (2147483646)"),
    (["3", "--input", ("h", {0: "1e-300"})], "Tfin/h = 1e+301 steps is more than a run can take"),
    (["3", "--input", ("neg", {0: "-0.5"})], "got h=-0.5, Tfin=10.0"),
    (["0", "--input", ("long", {0: "6e114"})], "h is too long"),
    (["3", "--input", ("nodes", {17: "11"})], "must be an integer in 1..10, got 11.0"),
])
def test_cli_input_errors_exit_2_with_one_line(tmp_path, monkeypatch, capsys, argv, fragment):
    monkeypatch.chdir(tmp_path)
    argv = [a.replace("{tmp}", str(tmp_path)) if isinstance(a, str) else
            _input(tmp_path, int(argv[0]), a[1]) for a in argv]
    status = cli.main(argv if "--compare" in argv else argv + ["--no-compare"])
    err = capsys.readouterr().err
    assert status == 2
    assert err.count("\n") == 1 and err.startswith("frb-example: error: "), err
    assert fragment.replace("{tmp}", str(tmp_path)) in err, err
    assert "np.float64" not in err


def test_integrate_batch_of_incompatible_scales_is_refused():
    m = np.array([[0.3, 0.5, 0.8], [0.3 * 2.0**-900, 0.5 * 2.0**-900, 0.8 * 2.0**-900]]) * 2.0**400
    with pytest.raises(ValueError, match=r"the batch spans too many scales: body 1 has \|m\|"):
        frb.integrate(m, QUATB[:2], I, 0.1 * 2.0**-400, 2, method="RK4")
    # each alone is fine, rescaled or not
    for k in range(2):
        assert np.isfinite(frb.integrate(m[k], QUAT, I, 0.1 * 2.0**-400, 2, method="RK4").m).all()


@pytest.mark.parametrize("method", ["RK4", "DMV6", "DMV8", "MIDPOINT", "EXACT"])
@pytest.mark.parametrize("m, inertia, h", [
    ([1e-200, 2e-200, 3e-200], [1e200, 2e200, 3e200], 1.0),
    ([0.3, 0.5, 0.8], [1e300, 2e300, 3e300], 1e-30),
])
def test_steps_turning_the_body_by_less_than_2_to_minus_1000_radians_keep_it(method, m, inertia, h):
    # h |m| / I below 1e-300: the body turns by nothing a float64 holds, m stays as it was
    tr = frb.integrate(m, QUAT, inertia, h, 3, method=method)
    assert np.abs(tr.m[-1] - m).max() <= 1e-15 * np.abs(m).max()
    assert np.abs(tr.q[-1] - QUAT).max() <= 1e-15


def test_damping_at_extreme_scales_decays_as_the_exponential():
    # |m| is conserved by the free flow and decays as exp(-c t) by the damping (exact flows)
    m0 = np.array([0.3, 0.5, 0.8])
    tr = frb.integrate(m0, QUAT, np.array([1.0, 2.0, 3.0]) * 2.0**600, 2.0**500, 5,
                       method="STRANG", torque=frb.torques.linear_damping(2.0**-500))
    expected = np.linalg.norm(m0) * np.exp(-np.arange(6.0))
    np.testing.assert_allclose(np.linalg.norm(tr.m, axis=1), expected, rtol=1e-14)


@pytest.mark.parametrize("method", ["RK4", "STRANG", "RKN6_14", "DMV4", "SYMROT", "MIDPOINT",
                                    "TERZE", "IMID"])
def test_torque_parameters_beyond_the_methods_range_rescale_the_run(method):
    # an orbital rate of 1e160 (its square overflows) over steps of 1e-165 (n h = 1e-5): the run
    # in units where the rate is moderate, whose results are the moderate run's scaled back
    m0, q0, inertia = np.array([0.3, 0.5, 0.8]), [0.8, 0.6, 0.0, 0.0], np.array([1.0, 2.0, 3.0])
    k = 531                                         # 1e160 = 2^531.5
    tr = frb.integrate(m0, q0, inertia, 1e-165, 2, method=method, save_every=None,
                       torque=frb.torques.gravity_gradient(1e160))
    # momenta times 2^-k with the time times 2^k keep the rate n 2^k and the torque 2^-k
    moderate = frb.integrate(np.ldexp(m0, -k), q0, inertia, np.ldexp(1e-165, k), 2,
                             method=method, save_every=None,
                             torque=frb.torques.gravity_gradient(np.ldexp(1e160, -k)))
    np.testing.assert_allclose(np.ldexp(tr.m[-1], -k), moderate.m[-1], rtol=1e-14)
    np.testing.assert_allclose(tr.q[-1], moderate.q[-1], rtol=0, atol=1e-15)


@pytest.mark.parametrize("method", ["DMV2", "DMV6", "SPLIT3", "SYMROT", "MIDPOINT", "STRANG"])
def test_affine_torque_kicks_at_any_size_of_the_torque(method):
    # m, I, the gains and the rotor times s: w, the attitudes and m / s as at s = 1 (the kick of
    # a torque of m and Q, exp of [[tau A, tau b], [0, 0]], balanced: its size sets no squarings)
    m0, q0 = np.array([0.3, 0.5, 0.8]), np.array([0.9, 0.1, -0.3, 0.2]) / np.sqrt(0.95)
    inertia, rotor = np.array([1.0, 2.0, 3.0]), np.array([0.2, -0.1, 0.3])

    def run(s):
        torque = frb.torques.attitude_control([1.0, 0.0, 0.0, 0.0], 0.7 * s, 0.3 * s) + \
            frb.torques.rotor(rotor * s)
        return frb.integrate(m0 * s, q0, inertia * s, 0.05, 20, method=method, torque=torque,
                             save_every=None)
    one = run(1.0)
    for s in (1e12, 1e15, 1e18):
        scaled = run(s)
        np.testing.assert_allclose(scaled.m[-1] / s, one.m[-1], rtol=1e-12)
        np.testing.assert_allclose(scaled.q[-1], one.q[-1], rtol=0, atol=1e-12)


@pytest.mark.parametrize("method", ["EXACT", "RK4", "STRANG", "DMV4"])
def test_damping_rate_and_rotation_too_far_apart_is_refused(method):
    # c h = 1 but h |m| / I = 1e-390: no units hold the rate, the step and |m| at once
    with pytest.raises(ValueError, match=r"torque: its parameters, the step and the momentum "
                                         r"\(.* are too far apart in scale for float64"):
        frb.integrate([0.3, 0.5, 0.8], QUAT, [1e190, 2e190, 3e190], 1e-200, 5, method=method,
                      torque=frb.torques.linear_damping(1e200))


# ============================== hostile inputs of the helpers, torques, I/O, experiments and Dask

# ---- 1. helpers refuse what the core refuses (10: mismatched batches name both arguments)
def _refl():
    return np.diag([1.0, 1.0, -1.0])


HELPER_CASES = [
    ("kinetic_energy negative moment", lambda: frb.kinetic_energy(M, [-1, 2, 3]), (ValueError, "inertia must contain strictly positive moments")),
    ("kinetic_energy zero moment", lambda: frb.kinetic_energy(M, [0, 1, 2]), (ValueError, "strictly positive")),
    ("kinetic_energy batch names body", lambda: frb.kinetic_energy(MB, [I, I, [1, -2, 3]]), (ValueError, "(body 2)")),
    ("kinetic_energy mismatched batches", lambda: frb.kinetic_energy(np.ones((4, 3)), np.ones((3, 3))), (ValueError, "an inertia of shape (3, 3) for a batch of 4 bodies is one inertia tensor shared by all")),
    ("kinetic_energy mismatched moments", lambda: frb.kinetic_energy(np.ones((4, 3)), np.ones((2, 3))), (ValueError, "m of shape (4, 3) and inertia of shape (2, 3) do not match")),
    ("spatial_momentum scaled Q", lambda: frb.spatial_momentum(M, 2 * np.eye(3)), (ValueError, "Q must be a rotation matrix")),
    ("spatial_momentum reflection in batch", lambda: frb.spatial_momentum(MB, np.array([Q, _refl(), Q])), (ValueError, "(body 1)")),
    ("spatial_momentum mismatched batches", lambda: frb.spatial_momentum(np.ones((4, 3)), QB), (ValueError, "m of shape (4, 3) and Q of shape (3, 3, 3) do not match")),
    ("matrix_to_quat reflection", lambda: frb.matrix_to_quat(_refl()), (ValueError, "Q must be a rotation matrix")),
    ("matrix_to_quat scaled", lambda: frb.matrix_to_quat(2 * np.eye(3)), (ValueError, "Q must be a rotation matrix")),
    ("matrix_to_quat batch names body", lambda: frb.matrix_to_quat(np.array([Q, Q, Q * 0.5])), (ValueError, "rotation matrices (Q^T Q = 1 within 1e-10, det Q = +1) (body 2)")),
    ("matrix_to_quat float32 hint", lambda: frb.matrix_to_quat(F32_Q), (ValueError, "the input is float32")),
    ("quat_to_matrix zero", lambda: frb.quat_to_matrix([0, 0, 0, 0]), (ValueError, "q must be a unit quaternion")),
    ("quat_to_matrix not unit", lambda: frb.quat_to_matrix([1.0, 0, 0, 0.1]), (ValueError, "|q| = 1 within 1e-10")),
    ("quat_to_matrix batch names body", lambda: frb.quat_to_matrix([QUAT, QUAT, 2 * QUAT]), (ValueError, "unit quaternions, scalar first (|q| = 1 within 1e-10) (body 2)")),
    ("rotation_exp strings", lambda: frb.rotations.rotation_exp(["1", "2", "3"]), (TypeError, "v must be an array of real numbers, got strings")),
    ("momentum_period bools", lambda: frb.rotations.momentum_period([True, 0.5, 0.8], I), (TypeError, "m must be an array of real numbers, but it holds a boolean")),
    ("momentum_period zero moment", lambda: frb.rotations.momentum_period(M, [0, 1, 2]), (ValueError, "strictly positive")),
    # right answers: a rotation passes, against scipy
    ("matrix_to_quat rotation", lambda: frb.matrix_to_quat(_rot_x(0.7)), lambda q: np.testing.assert_allclose(frb.quat_to_matrix(q), _rot_x(0.7), atol=1e-15)),
    ("quat_to_matrix vs scipy", lambda: frb.quat_to_matrix(F32_QUAT.astype(np.float64) / np.linalg.norm(F32_QUAT.astype(np.float64))),
     lambda R: np.testing.assert_allclose(R, _scipy_rotation().from_quat(np.roll(F32_QUAT.astype(np.float64), -1)).as_matrix(), atol=1e-15)),
]

# ---- 4. threads= checked for one body as for a batch
THREADS_CASES = [
    (f"{fname} threads {bad!r}", call, bad, err)
    for fname, call in [
        ("quat_step", lambda t: frb.quat_step(M, QUAT, 0.1, I, threads=t)),
        ("frb_step", lambda t: frb.frb_step(M, Q, 0.1, I, threads=t)),
        ("dmv_step", lambda t: frb.dmv_step(M, QUAT, 0.1, I, threads=t)),
        ("dmv_integrate", lambda t: frb.dmv_integrate(M, QUAT, I, 0.1, 3, threads=t)),
        ("integrate", lambda t: _integrate(threads=t)),
        ("splitting.integrate", lambda t: _split(threads=t)),
    ]
    for bad, err in [("2", TypeError), (0, ValueError), (-1, ValueError), (1.5, TypeError), (True, TypeError)]
]


@pytest.mark.parametrize("call, expect", [c[1:] for c in HELPER_CASES], ids=[c[0] for c in HELPER_CASES])
def test_helpers_keep_the_input_rule(call, expect):
    test_hostile_input(call, expect)


@pytest.mark.parametrize("call, bad, error", [c[1:] for c in THREADS_CASES], ids=[c[0] for c in THREADS_CASES])
def test_threads_checked_for_one_body(call, bad, error):
    with pytest.raises(error, match="threads must be a positive integer"):
        call(bad)


# ---- 2. torques are immutable: an edit raises instead of being silently ignored
def _all_torques():
    from frb import torques as T
    return [T.heavy_top(1.0, [0, 0, 0.5]), T.constant_field([0, 0, 1.0]), T.gravity_gradient(1e-3),
            T.linear_damping(0.1), T.rotor([0, 0, 1.0]), T.rotor(np.ones((3, 3))),
            T.attitude_control(QUAT, 1.0, 2.0), T.heavy_top(1.0, [0, 0, 0.5]) + T.linear_damping(0.1),
            T.as_torque(lambda t, Q: np.zeros((len(Q), 3))),
            T.heavy_top(1.0, [0, 0, 0.5]).in_frame(_rot_x(0.3)[None].repeat(3, 0))]


@pytest.mark.parametrize("k", range(10))
def test_torques_are_immutable(k):
    tq = _all_torques()[k]
    before = repr(tq)
    names = {n for cls in type(tq).__mro__ for n in getattr(cls, "__slots__", ())} | {"weight", "x"}
    for name in names:
        with pytest.raises(AttributeError, match="immutable"):
            setattr(tq, name, 5.0)
        with pytest.raises(AttributeError):
            delattr(tq, name)
        value = getattr(tq, name, None)
        if isinstance(value, np.ndarray):
            with pytest.raises(ValueError, match="read-only"):
                value[...] = 5.0
    assert repr(tq) == before


def test_heavy_top_edit_cannot_diverge_from_the_run():
    t = frb.torques.heavy_top(1.0, [0, 0, 0.5])
    with pytest.raises(AttributeError):
        t.weight = 5
    ref = frb.integrate(M, QUAT, I, 0.1, 10, method="RK4", torque=frb.torques.heavy_top(1.0, [0, 0, 0.5]))
    assert np.array_equal(frb.integrate(M, QUAT, I, 0.1, 10, method="RK4", torque=t).m, ref.m)


# ---- 3. read_dat on junk: refused at once, with a short message
@pytest.mark.parametrize("content, fragment", [
    (b"\x00" * 10_000_000, "byte 0x00 at column 1 is a control character"),
    (b"1.0 2.0\n3.0 \x07", "x.dat:2: byte 0x07 at column 5"),
    (b"1.0 " + b"7" * 5_000_000, "a field of more than 1000 characters at column 5"),
    (b"1.0 " + b"x" * 3000 + b"\n", "a field of more than 1000 characters ('xxxxxxxxxxxxxxxxxxxx'...)"),
    (b"1.0 " + b"x" * 500 + b"\n", "cannot read 'xxxxxxxxxxxxxxxxxxxxxxxxxxxxxx'... (500 characters)"),
    (b" " * 3_000_000, "longer than 1048576 bytes, more than 256 bytes per value"),
])
def test_read_dat_refuses_junk_quickly(tmp_path, content, fragment):
    import time
    path = tmp_path / "x.dat"
    path.write_bytes(content)
    with pytest.raises(ValueError) as info:
        frb.read_dat(path, max_values=10 if content[:100].isspace() else 10**7)
    assert fragment in str(info.value) and len(str(info.value)) < 300, str(info.value)[:300]


@pytest.mark.parametrize("content, values", [
    (b"1 " + b"0" * 1500 + b"1\n", [1, 1]), (b"1 " + b"0" * 1500 + b"1", [1, 1]),
    (b"1\n" + b"0" * 1500 + b"1\n2\n", [1, 1, 2]), (b"1, 0." + b"0" * 1500 + b"1, 3\n", [1, 1e-6, 3]),
    (b"1 2*" + b"0" * 1500 + b"1\n", [1, 1, 1])])
def test_read_dat_refuses_a_long_field_wherever_it_is(tmp_path, content, values):
    # a number of 1501 digits: refused with or without a newline after it, alone or among others
    path = tmp_path / "x.dat"
    path.write_bytes(content)
    with pytest.raises(ValueError, match=r"x.dat:[12]: a field of more than 1000 characters"):
        frb.read_dat(path)
    path.write_bytes(content.replace(b"0" * 1500, b"0" * 5))
    assert frb.read_dat(path).tolist() == values


def test_read_dat_dev_zero_stops():
    # an endless input: the first bytes that cannot be a record end the reading
    import os
    if not os.path.exists("/dev/zero"):
        pytest.skip("no /dev/zero")
    with pytest.raises(ValueError, match="control character"):
        frb.read_dat("/dev/zero")


@pytest.mark.parametrize("record", [b"1.0 ,2", b"1.0, 2.0,3.0", b"1.0 , , 2", b"7 ,  ,", b"-2.5d0,1.5 ",
                                    b"1.0" + b" " * 1500 + b", 2.0"])
def test_read_dat_long_records_in_pieces_read_exactly(tmp_path, record):
    # records longer than the 1 MiB pieces, cut anywhere between two fields, read as one
    def read(copies):
        (tmp_path / "x.dat").write_bytes(b" ".join([record] * copies) + b"\n5.0\n")
        try:
            return frb.read_dat(tmp_path / "x.dat")
        except ValueError as exc:
            return str(exc)
    short, long = read(3), read(200_000)
    if isinstance(short, str):
        assert long == short                     # (a null value, in line 1)
    else:
        per_record = (short.size - 1) // 3
        assert np.array_equal(long, np.concatenate([np.tile(short[:per_record], 200_000), [5.0]]))


# ---- 5. a huge output refused before allocating, pointing to save_every
@pytest.mark.parametrize("call", [
    lambda: frb.integrate(M, QUAT, I, 1e-9, 2**31 - 2, method="RK4"),
    lambda: frb.integrate(np.ones((10**6, 3)), np.tile(QUAT, (10**6, 1)), I, 1e-3, 10**4, method="DMV2"),
    lambda: frb.splitting.integrate(M, Q, I, 1e-9, 2**31 - 2),
    lambda: frb.splitting.integrate(M, Q, I, 1e-9, 2**31 - 2, torque=constant_field([0, 0, 1.0])),
    lambda: frb.splitting.integrate(M, Q, I, 1e-9, 2**31 - 2, torque=lambda m, Q, t: (m, Q)),
])
def test_huge_output_refused_before_allocating(call):
    with pytest.raises(ValueError, match=r"the kept states would take [0-9.]+ [GT]iB .* save_every"):
        call()


def test_huge_output_refused_through_dask():
    da = pytest.importorskip("dask.array")
    import frb.dask
    m = da.from_array(np.tile(M, (20, 1)), chunks=(5, 3))
    q = da.from_array(np.tile(QUAT, (20, 1)), chunks=(5, 4))
    with pytest.raises(ValueError, match="in one dask chunk, 7 values each.*save_every"):
        frb.dask.integrate(m, q, I, 1e-9, 2**31 - 2, method="RK4")
    # the final state only: fine
    tr = frb.dask.integrate(m, q, I, 1e-9, 10, method="RK4", save_every=None)
    assert tr.m.shape == (1, 20, 3)


# ---- 6. the experiments' options, in Python and on the command line
EXPERIMENT_OPTIONS = [
    ("vilmart-book", dict(h=0), "h must be > 0"),
    ("vilmart-book", dict(h=float("nan")), "h must be finite"),
    ("vilmart-book", dict(h=100.0), "t_final / h must give 1 to 2147483646 steps"),
    ("vilmart-book", dict(t_final=-1.0), "t_final must be > 0"),
    ("vilmart-book", dict(method="RK4"), "method must be one of DMV2, DMV4, DMV6, DMV8"),
    ("krysl-fast-top", dict(levels=0), "levels must be an integer in 1..31"),
    ("krysl-free", dict(n0=0), "n0 must be an integer in 1..2147483647"),
    ("krysl-free", dict(n0=2**30, levels=3), "more than the 67108864 this experiment takes"),
    ("krysl-free", dict(n0=1, levels=31), "n0 * (2**levels - 1) = 2147483647 steps"),
    ("krysl-fast-top", dict(h_ref=1e-7), "the reference would take 20 / h_ref = 200000000 steps"),
    ("krysl-slow-top", dict(h_ref=0.0), "h_ref must be > 0"),
    ("krysl-free", dict(methods="FOO"), "methods must be comma-separated methods"),
    ("ganapathi-symmetric", dict(nsteps=0), "nsteps must be an integer in 2..100000000"),
    ("ganapathi-symmetric", dict(dt=True), "dt must be a real number"),
    ("ganapathi-stable", dict(dt=-0.01), "dt must be > 0"),
    ("krysl-coulomb", dict(nsteps=-5), "nsteps must be an integer in 1.."),
    ("satellite", dict(h=10.0), "h must be at most 5"),
    ("satellite", dict(coast=1e300), "coast / h must give 1 to 2147483646 steps"),
    ("satellite", dict(kd=-1.0), "kd must be >= 0"),
    ("torus", dict(h=0.0), "h must be > 0"),
    ("torus", dict(t_final="5"), "t_final must be a real number"),
]


@pytest.mark.parametrize("name, options, fragment", EXPERIMENT_OPTIONS,
                         ids=[f"{n} {o}" for n, o, _ in EXPERIMENT_OPTIONS])
def test_experiment_options_checked(name, options, fragment):
    from frb.experiments import run_experiment
    with pytest.raises((TypeError, ValueError)) as info:
        run_experiment(name, **options)
    assert fragment in str(info.value), str(info.value)


@pytest.mark.parametrize("argv, fragment", [
    (["vilmart-book", "--h", "0"], "--h must be > 0, got 0.0"),
    (["vilmart-book", "--h", "nan"], "--h must be finite, got nan"),
    (["vilmart-book", "--method", "RK4"], "--method must be one of DMV2"),
    (["vilmart-book", "--n0", "0"], "unrecognized arguments: --n0 0"),
    (["krysl-fast-top", "--levels", "0"], "--levels must be an integer in 1..31"),
    (["krysl-free", "--n0", "0"], "--n0 must be an integer in 1.."),
    (["krysl-slow-top", "--h-ref", "0"], "--h-ref must be > 0"),
    (["ganapathi-symmetric", "--nsteps", "0"], "--nsteps must be an integer in 2.."),
    (["ganapathi-symmetric", "--nsteps", "1.5"], "--nsteps must be an integer, got '1.5'"),
    (["torus", "--h", "abc"], "--h must be a number, got 'abc'"),
    (["satellite", "--kp", "-1"], "--kp must be >= 0"),
    (["krysl-coulomb", "--plot", "{tmp}/missing/x.png"], "of the figure"),
])
def test_experiment_cli_errors_exit_2_with_one_line(tmp_path, capsys, argv, fragment):
    argv = [a.replace("{tmp}", str(tmp_path)) for a in argv]
    try:
        status = cli.main(argv)
    except SystemExit as exc:       # (argparse's own errors)
        status = exc.code
    captured = capsys.readouterr()
    assert status == 2
    assert captured.err.count("\n") == 1 and "error: " in captured.err, captured.err
    assert fragment in captured.err, captured.err
    assert "Traceback" not in captured.err and "DLASCL" not in captured.out + captured.err


# ---- 7. --plot DIR writes into the folder
def test_plot_into_a_folder(tmp_path, capsys):
    pytest.importorskip("matplotlib")
    from frb.experiments import plot_experiment, run_experiment
    folder = tmp_path / "figs"
    folder.mkdir()
    assert cli.main(["ganapathi-symmetric", "--nsteps", "30", "--plot", str(folder)]) == 0
    written = folder / "ganapathi-symmetric.png"
    assert written.is_file() and not (tmp_path / "figs.png").exists()
    assert f"figure written to {written}" in capsys.readouterr().out
    result = run_experiment("ganapathi-symmetric", nsteps=30)
    assert plot_experiment(result, tmp_path / "plain") == str(tmp_path / "plain.png")
    assert (tmp_path / "plain.png").is_file()
    table = frb.compare(["EXACT"], bodies=3, steps=(5,), t_final=1.0)
    assert table.plot(folder) == str(folder / "compare-free.png")
    assert (folder / "compare-free.png").is_file()
    assert cli.compare_main(["--methods", "EXACT", "--bodies", "3", "--steps", "5",
                             "--plot", str(folder)]) == 0


# ---- 8. frb.compare and frb-compare
@pytest.mark.parametrize("kw, error, fragment", [
    (dict(steps=[2.5]), TypeError, "steps must be an integer, got 2.5"),
    (dict(steps=[0, 5]), ValueError, "steps must be an integer in 1.."),
    (dict(steps="10"), TypeError, "steps must be a sequence of step counts"),
    (dict(inertia=[1.0, 2.0, 3.0]), ValueError, "give m0, attitude0 and inertia together (got only inertia)"),
    (dict(m0=M, attitude0=QUAT), ValueError, "together (got only m0, attitude0)"),
    (dict(repeat=0), ValueError, "repeat must be an integer in 1..1000"),
    (dict(saves=0), ValueError, "saves must be an integer in 1.."),
    (dict(min_time=-1), ValueError, "min_time must be >= 0"),
    (dict(min_time=float("nan")), ValueError, "min_time must be finite"),
    (dict(ref_factor=0, problem="heavy-top"), ValueError, "ref_factor must be an integer in 1.."),
    (dict(bodies=0), ValueError, "bodies must be an integer in 1.."),
    (dict(bodies=2.0), TypeError, "bodies must be an integer"),
    (dict(t_final="1"), TypeError, "t_final must be a real number"),
])
def test_compare_arguments_checked(kw, error, fragment):
    with pytest.raises(error) as info:
        frb.compare(["EXACT"], **{"bodies": 3, **kw})
    assert fragment in str(info.value), str(info.value)


@pytest.mark.parametrize("argv, fragment", [
    (["--bodies", "0"], "--bodies must be a positive integer, got 0"),
    (["--bodies", "-1"], "--bodies must be a positive integer, got -1"),
    (["--bodies", "x"], "argument --bodies: an integer expected, got 'x'"),
    (["--steps", "a"], "--steps must be comma-separated integers, got 'a'"),
    (["--steps", "2.5"], "--steps must be comma-separated integers"),
    (["--t-final", "x"], "argument --t-final: a number expected"),
    (["--inertia", "1,2,x", "--m0", "1,2,3"], "argument --inertia: three comma-separated numbers"),
    (["--inertia", "1,2,3"], "give --inertia and --m0 together"),
    (["--coefficients", "/"], "--coefficients: '/' is not a regular file"),
    (["--coefficients", "/dev/zero"], "--coefficients: '/dev/zero' is not a regular file"),
    (["--reference", "/dev/zero", "--m0", "1,2,3", "--inertia", "1,2,3"],
     "--reference: '/dev/zero' is not a regular file"),
    (["--methods", ""], "--methods must name at least one method (no empty name), got ''"),
    (["--t-final", "1e300"], "--t-final / n is too long"),
    (["--inertia", "nan,2,3", "--m0", "1,2,3"], "--inertia contains non-finite values"),
    (["--coefficients", ""], "--coefficients must be one of"),
    (["--reference", "/", "--m0", "1,2,3", "--inertia", "1,2,3"], "--reference: '/' is not a regular file"),
    (["--reference", __file__, "--m0", "1,2,3", "--inertia", "1,2,3"],
     "--reference: line 1 of"),
    (["--reference", __file__ + ".npz", "--m0", "1,2,3", "--inertia", "1,2,3"],
     "--reference: cannot read"),
    (["--reference", "x.txt"], "--reference needs the body it belongs to"),
])
def test_compare_cli_errors_exit_2_with_one_line(capsys, argv, fragment):
    try:
        status = cli.compare_main(argv)
    except SystemExit as exc:
        status = exc.code
    err = capsys.readouterr().err
    assert status == 2 and err.count("\n") == 1 and err.startswith("frb-compare: error: "), err
    assert fragment in err, err


def test_compare_cli_names_a_binary_coefficients_file(tmp_path, capsys):
    path = tmp_path / "coefficients.bin"
    path.write_bytes(b"ab\xff\xfe1 2\n")
    assert cli.compare_main(["--coefficients", str(path)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and f"--coefficients: {str(path)!r} is not a text file (byte " \
        "0xff at offset 2 is not UTF-8)" in err, err


# ---- 9. run_example's tolerance under the input rule
@pytest.mark.parametrize("tol, error, fragment", [
    (-1, ValueError, "tolerance must be a finite number >= 0, got -1.0"),
    (float("nan"), ValueError, "tolerance must be finite"),
    ("x", TypeError, "tolerance must be a real number, got a string"),
    (True, TypeError, "tolerance must be a real number, got a boolean"),
])
def test_run_example_tolerance(tmp_path, tol, error, fragment):
    from frb.examples import run_example
    with pytest.raises(error, match=fragment.replace("(", r"\(")):
        run_example(0, output_path=tmp_path / "o.dat", compare_path=False, tolerance=tol)
    assert not (tmp_path / "o.dat").exists()


# ---- 11. Dask: shared inertia checked at once, chunks of unknown size, names
def _dask_batch():
    da = pytest.importorskip("dask.array")
    import frb.dask
    m = da.from_array(np.random.default_rng(0).normal(size=(10, 3)), chunks=(5, 3))
    q = da.from_array(np.tile(QUAT, (10, 1)), chunks=(5, 4))
    return da, frb.dask, m, q


@pytest.mark.parametrize("route", ["integrate", "quat_step"])
@pytest.mark.parametrize("inertia, fragment", [
    ([1.0, np.nan, 3.0], "inertia contains non-finite values (NaN or infinity)"),
    ([1.0, -2.0, 3.0], "strictly positive"),
])
def test_dask_shared_inertia_checked_at_once(route, inertia, fragment):
    _, fdask, m, q = _dask_batch()
    with pytest.raises(ValueError) as info:
        if route == "integrate":
            fdask.integrate(m, q, inertia, 0.1, 3, method="RK4")
        else:
            fdask.quat_step(m, q, 0.1, inertia)
    assert fragment in str(info.value) and "body" not in str(info.value) and "chunk" not in str(info.value)


@pytest.mark.parametrize("route", ["integrate", "quat_step"])
def test_dask_unknown_chunk_sizes(route):
    _, fdask, m, q = _dask_batch()
    keep = m[:, 0] > 0
    name = "m0" if route == "integrate" else "m"
    with pytest.raises(ValueError, match=f"{name} has chunks of unknown size.*compute_chunk_sizes"):
        if route == "integrate":
            fdask.integrate(m[keep], q[keep], I, 0.1, 3, method="RK4")
        else:
            fdask.quat_step(m[keep], q[keep], 0.1, I)


def test_dask_integrate_names_m0_and_takes_t0():
    da, fdask, m, q = _dask_batch()
    with pytest.raises(ValueError, match=r"m0 must be a batch of shape \(n, 3\)"):
        fdask.integrate(da.ones((10, 4)), q, I, 0.1, 3, method="RK4")
    # a time-dependent torque sees t0 + k h: the same as frb.integrate(..., t0=) bit for bit
    tq = frb.torques.as_torque(lambda t, Q: np.outer(np.full(len(Q), np.sin(3 * t)), [1.0, -0.5, 0.25]))
    got = fdask.integrate(m, q, I, 0.1, 6, method="RK4", torque=tq, t0=2.0).compute()
    ref = frb.integrate(m.compute(), q.compute(), I, 0.1, 6, method="RK4", torque=tq, t0=2.0)
    assert np.array_equal(got.m, ref.m) and np.array_equal(got.q, ref.q)
    np.testing.assert_allclose(got.t, 2.0 + 0.1 * np.arange(7), rtol=0, atol=1e-15)
    assert not np.array_equal(ref.m, frb.integrate(m.compute(), q.compute(), I, 0.1, 6, method="RK4", torque=tq).m)
    with pytest.raises(ValueError, match="t0 must be finite"):
        fdask.integrate(m, q, I, 0.1, 3, method="RK4", t0=np.inf)


# ---- 12. a long batched step returns to Python: Ctrl-C stops it before its end
_INTERRUPT = r"""
import _thread
import signal
import numpy as np, frb
# (a shell's background job starts with SIGINT ignored, and Python then keeps it so)
signal.signal(signal.SIGINT, signal.default_int_handler)
from frb import _run
n = 40000
rng = np.random.default_rng(0)
m, I = rng.normal(size=(n, 3)), rng.uniform(0.5, 2.0, size=(n, 3))
q = np.tile([1.0, 0.0, 0.0, 0.0], (n, 1))
calls = []
segment = _run._core.engine_segment

def counted(*args, **kwargs):
    out = segment(*args, **kwargs)
    calls.append(1)
    if interrupt and len(calls) == 1:
        _thread.interrupt_main()        # Ctrl-C while the first segment runs
    return out

_run._core.engine_segment = counted
interrupt = False
frb.quat_step(m, q, 1e12, I)
whole = len(calls)
calls.clear()
interrupt = True
try:
    frb.quat_step(m, q, 1e12, I)
except KeyboardInterrupt:
    print("stopped", len(calls), whole)
else:
    print("finished", len(calls), whole)
"""


def test_long_batched_step_stops_on_ctrl_c():
    """A long batched step runs in segments with Python between them: a Ctrl-C during one
    stops the run there (the segments are counted, not timed)."""
    import subprocess
    import sys
    out = subprocess.run([sys.executable, "-c", _INTERRUPT], capture_output=True, text=True,
                         timeout=600)
    word, done, whole = out.stdout.split()
    assert word == "stopped" and int(done) == 1 < int(whole), out.stdout + out.stderr


@pytest.mark.parametrize("order", ["C", "F"])
def test_batched_step_in_segments_is_bit_identical(order, monkeypatch):
    from frb import _run
    rng = np.random.default_rng(4)
    n = 3000
    m = np.asarray(rng.normal(size=(n, 3)), order=order)
    q = rng.normal(size=(n, 4))
    q = np.asarray(q / np.linalg.norm(q, axis=1)[:, None], order=order)
    h, inertia = rng.uniform(-1e3, 1e3, n), rng.uniform(0.5, 2.0, (n, 3))
    whole = frb.quat_step(m, q, h, inertia)           # 3000 bodies: several calls
    monkeypatch.setattr(_run, "LONG_FIRST_WORK", 10**9)  # one call
    once = frb.quat_step(m, q, h, inertia)
    assert np.array_equal(whole[0], once[0]) and np.array_equal(whole[1], once[1])
    # a bad body late in the batch is still named by its index in the whole batch
    monkeypatch.undo()
    bad = np.array(inertia)
    bad[2500, 1] = -1.0
    with pytest.raises(ValueError, match=r"\(body 2500\)"):
        frb.quat_step(m, q, h, bad)


# ---- 13. Trajectory.energy: kinetic always, total where the torque has a potential
@pytest.mark.parametrize("torque, has_potential", [
    (None, True), (frb.torques.heavy_top(1.0, [0, 0, 0.5]), True), (frb.torques.rotor([0, 0, 1.0]), True),
    (frb.torques.gravity_gradient(1e-3), False), (frb.torques.linear_damping(0.1), False),
    (lambda t, Q: np.zeros((len(Q), 3)), False),
])
def test_trajectory_energy(torque, has_potential):
    tr = frb.integrate(M, QUAT, I, 0.1, 5, method="RK4", torque=torque)
    np.testing.assert_allclose(tr.kinetic_energy, 0.5 * np.sum(tr.m**2 / I, axis=-1), rtol=1e-15)
    assert hasattr(tr, "kinetic_energy")
    if has_potential:
        U = 0.0 if torque is None or isinstance(torque, frb.torques.Rotor) else 0.5 * tr.Q[:, 2, 2]
        np.testing.assert_allclose(tr.energy, tr.kinetic_energy + U, rtol=1e-15)
    else:
        with pytest.raises(ValueError, match="has no potential energy.*kinetic_energy gives"):
            tr.energy
        with pytest.raises(ValueError, match="has no potential energy"):
            tr.potential_energy


# ---- 14. SYMROT keeps the attitude orthogonal to rounding, in both attitude forms
@pytest.mark.parametrize("nsteps", [1000, 10000])
@pytest.mark.parametrize("form", ["quaternion", "matrix"])
def test_symrot_orthogonality_at_rounding_level(nsteps, form):
    rng = np.random.default_rng(3)
    m0, inertia = rng.normal(size=(8, 3)), rng.uniform(0.5, 2.0, size=(8, 3))
    a0 = np.tile(QUAT, (8, 1)) if form == "quaternion" else np.tile(Q, (8, 1, 1))
    tr = frb.integrate(m0, a0, inertia, 0.1, nsteps, method="SYMROT", save_every=None)
    Qf = tr.Q[-1]
    assert np.abs(np.swapaxes(Qf, 1, 2) @ Qf - np.eye(3)).max() < 1e-13
    assert np.abs(np.linalg.norm(tr.q[-1], axis=1) - 1.0).max() < 1e-13
    # and it is still SYMROT: |m| and Q m conserved (torque-free)
    np.testing.assert_allclose(np.linalg.norm(tr.m[-1], axis=1), np.linalg.norm(m0, axis=1), rtol=1e-12)
