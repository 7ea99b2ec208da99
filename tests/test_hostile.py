"""Hostile input for every public function and the CLI (issue 15): each row is an input and
either the exception (type and a fragment of its message, which names the argument, and the body
in a batch) or a check of the correct result. Bad input never yields a wrong answer, NaN or inf.
"""
import decimal
import fractions
import warnings

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
    ("step m ragged", lambda: _step(m=[[1.0, 2.0, 3.0], [1.0]]), (TypeError, "m must be an array of real numbers (a rectangular array)")),
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
    # ---- scales: right answers (moment ratio beyond 1e154, subnormal momentum and moments: NaN before)
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
    ("dmv nsteps 2**31", lambda: frb.dmv_integrate(M, QUAT, I, 0.1, 2**31), (ValueError, "nsteps must be an integer in 0..2147483647, got 2147483648")),
    ("dmv nsteps float", lambda: frb.dmv_integrate(M, QUAT, I, 0.1, 5.0), (TypeError, "nsteps must be an integer, got 5.0")),
    ("dmv order bool", lambda: frb.dmv_step(M, QUAT, 0.1, I, order=True), (TypeError, "order")),
    ("dmv huge m", lambda: frb.dmv_step(M * 2.0**1000, QUAT, 0.1 * 2.0**-1000, I), _dmv_scaled(1000, 0)),
    ("dmv subnormal", lambda: frb.dmv_step(np.ldexp(M, -1060), QUAT, 0.1, np.ldexp(I, -1060)),
     _scaled_flow(lambda m, h, i: frb.dmv_step(m, QUAT, h, i), -1060, -1060)),
    ("dmv ratio order 8", lambda: frb.dmv_step(M, QUAT, 1e-61, [1.0, 1e60, 1e-60], order=8), (ValueError, "order 8 supports I_max / I_min up to 1e+40")),
    ("dmv no solution names body", lambda: frb.dmv_step(np.array([M, [2.0, 0, 0], M]), QUATB, 0.3, [0.5, 1.0, 1.5], order=2), (RuntimeError, "has no solution (body 1)")),
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
    ("integrate nsteps 2**31", lambda: _integrate(nsteps=2**31), (ValueError, "nsteps must be an integer in 0..2147483647")),
    ("integrate h None", lambda: _integrate(h=None), (TypeError, "h must be a real number, got None")),
    ("integrate m0 bools", lambda: _integrate(m0=[True, 0.5, 0.8]), (TypeError, "m0 must be an array of real numbers, but it holds a boolean")),
    ("integrate attitude complex", lambda: _integrate(attitude0=QUAT + 0j), (TypeError, "attitude0 must be an array of real numbers, got complex")),
    ("integrate attitude float32", lambda: _integrate(attitude0=F32_QUAT), (ValueError, "the input is float32")),
    ("integrate batch attitude names body", lambda: _integrate(m0=MB, attitude0=np.array([Q, Q, 2 * Q])), (ValueError, "rotation matrices (Q^T Q = 1 within 1e-10, det Q = +1) (body 2)")),
    ("integrate batch NaN names body", lambda: _integrate(m0=np.array([M, [np.nan, 0, 0], M]), attitude0=QUATB), (ValueError, "m0 contains non-finite values (NaN or infinity) (body 1)")),
    ("integrate torque writes Q", lambda: _integrate(torque=lambda t, Q: Q.__setitem__((0, 0, 0), 5.0)), (ValueError, "(method RK4, step 1) must not modify Q in place")),
    ("integrate torque None", lambda: _integrate(torque=lambda t, Q: None), (ValueError, "(method RK4, step 1) returned None")),
    ("integrate torque strings", lambda: _integrate(torque=lambda t, Q: np.array([["1", "2", "3"]])), (ValueError, "must return real numbers, got dtype <U1")),
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


def test_dmv_integrate_former_argument_order_is_deprecated():
    with pytest.warns(DeprecationWarning, match=r"now \(m0, q0, inertia, h, nsteps\)"):
        old = frb.dmv_integrate(M, QUAT, 0.1, 5, I)
    new = frb.dmv_integrate(M, QUAT, I, 0.1, 5)
    assert np.array_equal(old[0], new[0]) and np.array_equal(old[1], new[1])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        frb.dmv_integrate(M, QUAT, I, 0.1, 5)          # the new order: no warning


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
    (["3", "--input", "{tmp}/missing.dat"], "No such file"),
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
    status = cli.main(argv + ["--no-compare"] if "--output" not in argv else argv + ["--no-compare"])
    err = capsys.readouterr().err
    assert status == 2
    assert err.count("\n") == 1 and err.startswith("frb-example: error: "), err
    assert fragment in err, err
    assert "np.float64" not in err


def test_integrate_batch_of_incompatible_scales_is_refused():
    m = np.array([[0.3, 0.5, 0.8], [0.3 * 2.0**-900, 0.5 * 2.0**-900, 0.8 * 2.0**-900]]) * 2.0**400
    with pytest.raises(ValueError, match=r"the batch spans too many scales: body 1 has \|m\|"):
        frb.integrate(m, QUATB[:2], I, 0.1 * 2.0**-400, 2, method="RK4")
    # each alone is fine, rescaled or not
    for k in range(2):
        assert np.isfinite(frb.integrate(m[k], QUAT, I, 0.1 * 2.0**-400, 2, method="RK4").m).all()
