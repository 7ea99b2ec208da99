"""A trial of hostile calls across the public API: every public function, each argument in turn
replaced by a hostile value (wrong types, bools for integers, NaN and infinities, huge and tiny
magnitudes, subnormals, empty batches, wrong shapes, ragged lists, masked and object arrays), the
other arguments valid.

Each call must either return results of the right shapes whose values are finite and pass the
check of the function (a rotation is a rotation, an energy is the energy computed here in exact
rational arithmetic, ...), or raise TypeError or ValueError whose message names the hostile
argument (the type the input rule of ``frb._validate`` says: TypeError for what is not a number
of the right kind, ValueError for a wrong value or shape). A method that cannot take a step of a
valid body (the state of an explicit method grown beyond the float64 range) may raise
:class:`frb.IntegrationError`, naming the method and the step; nothing else is allowed: no other
exception, no crash, no warning.
"""
import decimal
import fractions
import math
import os
import shutil
import tempfile
import warnings

import numpy as np
import pytest

import frb
from frb import torques

M, QUAT, Q, I = (np.array([0.3, 0.5, 0.8]), np.array([1.0, 0.0, 0.0, 0.0]), np.eye(3),
                 np.array([1.0, 2.0, 3.0]))
Q_TURNED = frb.quat_to_matrix(np.array([0.6, 0.0, 0.8, 0.0]))

# ------------------------------------------------------------------------- the hostile values

#: Not real numbers at all, for any argument: TypeError.
NOT_NUMBERS = [None, True, False, np.bool_(True), "0.1", b"0.1", 1j, complex(0.5, 0.0),
               np.complex128(1.0), object(), {"a": 1}, {1.0}, slice(1), Ellipsis]

#: Scalars for a real argument (a step, a time, a rate).
SCALARS = NOT_NUMBERS + [
    math.nan, math.inf, -math.inf, np.float32("nan"), np.float16("inf"), 1e308, -1e308,
    1.7976931348623157e308, 1e-308, 5e-324, -5e-324, 0.0, -0.0, 10**400, -(10**400), 10**20,
    np.float32(0.1), np.int64(3), np.uint8(7), fractions.Fraction(1, 10), decimal.Decimal("0.1"),
    decimal.Decimal("NaN"), np.longdouble("0.1"), [0.1], [[0.1]], np.array(0.1), np.array([]),
    np.array([0.1, 0.2, 0.3]), [True], [None], -1.0, 1e18, 1e-18, 1e100]

#: Values for an integer argument (a count, an order).
INTEGERS = NOT_NUMBERS + [
    2.0, 1.5, math.nan, math.inf, -1, 0, 1, 2**31, 2**31 - 1, 2**63, 10**20, -(2**63), 10**400,
    np.int8(3), np.uint64(2**64 - 1), np.int64(-5), np.float64(2.0), [2], np.array(2),
    np.array([2]), fractions.Fraction(2, 1), decimal.Decimal(2)]


def _vectors(good, item):
    """Hostile arrays for an argument whose one-body value is ``good`` (shape ``item``)."""
    good = np.asarray(good, dtype=float)
    k = good.size
    flat = good.ravel()
    out = NOT_NUMBERS + [
        good * 1e300, good * 1e-300, good * 1e-320, good * 1e154, good * 1e-160, -good,
        np.zeros(item), np.where(np.arange(k).reshape(item) == 0, np.nan, good),
        np.where(np.arange(k).reshape(item) == k - 1, np.inf, good),
        np.where(np.arange(k).reshape(item) == 1, -np.inf, good),
        good.astype(np.float32), good.astype(np.float16), good.astype(np.longdouble),
        np.round(good * 10).astype(int), good.astype(bool), good.astype(complex),
        good.astype(str), good.astype(object), np.array([None] * k, dtype=object).reshape(item),
        flat[:-1], np.append(flat, 1.0), flat.reshape((1,) + (k,)), np.empty((0,) + item),
        np.tile(good, (2,) + (1,) * len(item)), np.tile(good, (3,) + (1,) * len(item)),
        np.empty((0,)), [], [[]], flat.tolist()[:-1] + [[1.0, 2.0]], flat.tolist()[:-1] + [True],
        np.ma.masked_array(flat, mask=[True] + [False] * (k - 1)).reshape(item),
        np.ma.masked_array(good, mask=False), good.tolist(), tuple(flat.tolist()),
        [fractions.Fraction(1, 3)] * k if len(item) == 1 else good.tolist(),
        [decimal.Decimal("0.5")] * k if len(item) == 1 else good.tolist(),
        [10**400] + [1.0] * (k - 1) if len(item) == 1 else good * 1e308,
        np.full(item, 5e-324), np.full(item, 1.7976931348623157e308),
        np.asfortranarray(np.tile(good, (2,) + (1,) * len(item))),
        np.tile(good, (2,) + (1,) * len(item))[::-1],
        np.broadcast_to(good, (4,) + item),
        good[..., None], np.array(good.tolist(), dtype=np.dtype([("x", float)] * 1))
        if False else np.zeros(item, dtype=[("x", float)]),
    ]
    return out


M_VALUES = _vectors(M, (3,))
I_VALUES = _vectors(I, (3,)) + [np.diag([2.0, 1.0, 3.0]) + 0.1, np.diag([0.0, 1.0, 2.0]),
                                np.array([[1.0, 2.0, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, 1.0]]),
                                -np.eye(3), np.diag([1e-300, 1.0, 1e300]), np.eye(3)[None] * 2]
QUAT_VALUES = _vectors(QUAT, (4,)) + [np.array([0.6, 0.0, 0.8, 0.0]), np.array([1.0, 1e-9, 0, 0]),
                                      np.array([-1.0, 0.0, 0.0, 0.0])]
Q_VALUES = _vectors(Q, (3, 3)) + [Q_TURNED, -np.eye(3), np.diag([1.0, 1.0, -1.0]),
                                  np.eye(3) * (1 + 1e-9), np.ones((3, 3))]


# ------------------------------------------------------------------------------- the checks

def _finite(*arrays):
    for a in arrays:
        a = np.asarray(a)
        assert a.dtype.kind == "f", a.dtype
        assert np.isfinite(a).all(), a


def _rotations(Qs):
    Qs = np.asarray(Qs).reshape(-1, 3, 3)
    assert np.abs(np.swapaxes(Qs, 1, 2) @ Qs - np.eye(3)).max(initial=0) < 1e-9
    assert (np.linalg.det(Qs) > 0).all()


def _units(qs):
    qs = np.asarray(qs).reshape(-1, 4)
    assert np.abs(np.linalg.norm(qs, axis=1) - 1).max(initial=0) < 1e-9


def _step_result(form):
    """The check of a step: m (n, 3) or (3,), the attitude of the same bodies, finite, unit."""
    def check(result, args):
        m, att = result
        _finite(m, att)
        assert m.shape[-1] == 3
        if form == "matrix":
            assert att.shape == m.shape[:-1] + (3, 3)
            _rotations(att)
        else:
            assert att.shape == m.shape[:-1] + (4,)
            _units(att)
    return check


def _trajectory(result, args):
    assert isinstance(result, frb.Trajectory)
    _finite(result.t, result.m, result.attitude)
    assert result.m.shape[0] == result.t.shape[0] == result.attitude.shape[0]
    if result.form == "matrix":
        _rotations(result.attitude)
    else:
        _units(result.attitude)
    if result.sensitivities is not None:
        sens = result.sensitivities
        for part in (sens.state, sens.h, sens.inertia, sens.torque):
            if part is not None:
                assert not np.isnan(part).any()
                assert part.shape[:2] == result.m.shape[:2] or part.shape[0] == result.m.shape[0]


def _jacobian_result(form):
    """The check of a step with its derivatives: the step's check; Phi (6, 6), d/dh (6,) and
    d/dinertia (6, 3 or 6) a body, without NaN."""
    step = _step_result(form)

    def check(result, args):
        if len(result) == 2:
            step(result, args)
            return
        m, att, jac = result
        step((m, att), args)
        assert jac.state.shape == m.shape[:-1] + (6, 6)
        assert jac.h.shape == m.shape[:-1] + (6,)
        assert jac.inertia.shape[:-1] == m.shape[:-1] + (6,)
        for part in (jac.state, jac.h, jac.inertia):
            assert not np.isnan(part).any()
    return check


def _float(x):
    try:
        return float(x)
    except OverflowError:
        return math.inf


def _kinetic(result, args):
    """The energy computed here in exact rational arithmetic, correctly rounded (inf beyond
    the float64 range)."""
    m, inertia = np.broadcast_arrays(*(np.asarray(args[k], dtype=float)
                                       for k in ("m", "inertia")))
    exact = [_float(sum(fractions.Fraction(float(x)) ** 2 / (2 * fractions.Fraction(float(i)))
                        for x, i in zip(mm, ii)))
             for mm, ii in zip(m.reshape(-1, 3), inertia.reshape(-1, 3))]
    got = np.asarray(result).reshape(-1)
    assert np.shape(result) == m.shape[:-1]
    for g, e in zip(got, exact):
        assert g == e or abs(g - e) <= max(4e-16 * abs(e), 1e-323), (g, e)


def _shape(shape):
    def check(result, args):
        _finite(result)
        assert np.shape(result) == shape, np.shape(result)
    return check


def _any_finite(result, args):
    for a in (result if isinstance(result, tuple) else (result,)):
        if isinstance(a, np.ndarray):
            _finite(a)


# ------------------------------------------------------------------------ the functions tried

def _call(function, order):
    """A call of ``function`` with the arguments of the dict in ``order`` (positional) and the
    rest as keywords."""
    def call(args):
        args = dict(args)
        pos = [args.pop(k) for k in order]
        return function(*pos, **args)
    return call


_INTEGRATE = dict(m0=M, attitude0=QUAT, inertia=I, h=0.1, nsteps=3)
#: A batch of m0 that does not match the attitudes is named by either; a torque whose
#: parameters leave the float64 range when the run is rescaled to bodies of this scale names
#: the torque.
_M0_NAMES = ("m0", "attitude0", "torque: its parameters")

#: (name, call, valid arguments, hostile values by argument, names a message may use for each
#: argument (default its own), check of a result)
FUNCTIONS = [
    ("frb_step", _call(frb.frb_step, ["m", "Q", "h", "inertia"]),
     dict(m=M, Q=Q, h=0.1, inertia=I),
     dict(m=M_VALUES, Q=Q_VALUES, h=SCALARS, inertia=I_VALUES, quadrature=INTEGERS,
          threads=INTEGERS), {}, _step_result("matrix")),
    ("quat_step", _call(frb.quat_step, ["m", "q", "h", "inertia"]),
     dict(m=M, q=QUAT, h=0.1, inertia=I),
     dict(m=M_VALUES, q=QUAT_VALUES, h=SCALARS, inertia=I_VALUES, quadrature=INTEGERS),
     {}, _step_result("quaternion")),
    ("frb_step-jacobian", _call(frb.frb_step, ["m", "Q", "h", "inertia"]),
     dict(m=M, Q=Q, h=0.1, inertia=I, jacobian=True),
     dict(m=M_VALUES, Q=Q_VALUES, h=SCALARS, inertia=I_VALUES, quadrature=INTEGERS,
          threads=INTEGERS, jacobian=NOT_NUMBERS + [1, 0, "yes", np.array(True)]), {},
     _jacobian_result("matrix")),
    ("quat_step-jacobian", _call(frb.quat_step, ["m", "q", "h", "inertia"]),
     dict(m=M, q=QUAT, h=0.1, inertia=I, jacobian=True),
     dict(m=M_VALUES, q=QUAT_VALUES, h=SCALARS, inertia=I_VALUES), {},
     _jacobian_result("quaternion")),
    ("dmv_step", _call(frb.dmv_step, ["m", "q", "h", "inertia"]),
     dict(m=M, q=QUAT, h=0.1, inertia=I),
     dict(m=M_VALUES, q=QUAT_VALUES, h=SCALARS, inertia=I_VALUES, order=INTEGERS),
     {"m": ("m", "q")}, _step_result("quaternion")),
    ("dmv_integrate", _call(frb.dmv_integrate, ["m0", "q0", "inertia", "h", "nsteps"]),
     dict(m0=M, q0=QUAT, inertia=I, h=0.1, nsteps=3),
     dict(m0=M_VALUES, q0=QUAT_VALUES, h=SCALARS, nsteps=INTEGERS, order=INTEGERS,
          progress=NOT_NUMBERS + [1, 0, "yes"]),
     {"m0": ("m0", "q0")}, _step_result("quaternion")),
    ("integrate", _call(frb.integrate, ["m0", "attitude0", "inertia", "h", "nsteps"]),
     dict(_INTEGRATE, method="RK4"),
     dict(m0=M_VALUES, attitude0=QUAT_VALUES + Q_VALUES, inertia=I_VALUES, h=SCALARS,
          nsteps=INTEGERS, save_every=INTEGERS + ["final", "all", ""], t0=SCALARS,
          threads=INTEGERS, method=NOT_NUMBERS + ["rk4", "RK5", "", "EXACT ", 4],
          torque=NOT_NUMBERS[4:] + [lambda t, Q: None, lambda t, Q: np.ones((2, 3)),
                                     lambda t, Q: np.full((len(Q), 3), np.nan),
                                     lambda t, Q: "x", lambda t: 1.0, 3.0,
                                     lambda t, Q: np.ones((len(Q), 3), complex)],
          quadrature=INTEGERS[:14] + [3]),
     {"torque": ("torque", "method RK4"), "quadrature": ("quadrature",),
      "m0": _M0_NAMES}, _trajectory),
    ("integrate-exact", _call(frb.integrate, ["m0", "attitude0", "inertia", "h", "nsteps"]),
     dict(_INTEGRATE, method="EXACT"),
     dict(m0=M_VALUES, attitude0=QUAT_VALUES, inertia=I_VALUES, h=SCALARS,
          coefficients=NOT_NUMBERS + [([0.5], [0.5]), ((0.5, 0.0), (0.5,)), ([1.0], []),
                                      ([np.nan, 0.0], [0.5]), ([[0.5, 0.0]], [0.5]), ("ab", "c"),
                                      ([0.5, 0.0], [True]), (None, None)]),
     {"coefficients": ("coefficients",), "m0": _M0_NAMES}, _trajectory),
    ("integrate-sensitivities", _call(frb.integrate, ["m0", "attitude0", "inertia", "h", "nsteps"]),
     dict(_INTEGRATE, method="STRANG", torque=torques.gravity_gradient(0.5),
          sensitivities=("state", "h", "inertia", "torque")),
     dict(m0=M_VALUES, attitude0=QUAT_VALUES + Q_VALUES, inertia=I_VALUES, h=SCALARS,
          save_every=INTEGERS[:20] + ["final"],
          sensitivities=NOT_NUMBERS[4:] + [1, 0, "moments", ("state", 3), ["h", "h"], (), "all"],
          method=["DMV4", "IMID", "MIDPOINT"],
          torque=[torques.rotor(M), torques.gravity_gradient(0.5) + torques.rotor(M),
                  lambda t, Q: np.zeros(Q.shape[:-2] + (3,))],
          quadrature=[1, 5]),
     {"m0": _M0_NAMES, "inertia": ("inertia", "torque: its parameters"),
      "method": ("sensitivities",), "torque": ("sensitivities",),
      "quadrature": ("sensitivities", "quadrature")}, _trajectory),
    ("integrate-torque", _call(frb.integrate, ["m0", "attitude0", "inertia", "h", "nsteps"]),
     dict(_INTEGRATE, method="RKN6_14", torque=torques.heavy_top(1.0, [0.0, 0.0, 0.5])),
     dict(m0=M_VALUES, attitude0=QUAT_VALUES, inertia=I_VALUES, h=SCALARS),
     {"m0": _M0_NAMES, "inertia": ("inertia", "torque: its parameters")}, _trajectory),
    ("splitting.integrate", _call(frb.splitting.integrate, ["m0", "Q0", "inertia", "h", "nsteps"]),
     dict(m0=M, Q0=Q, inertia=I, h=0.1, nsteps=3, torque=torques.constant_field([0, 0, 1.0])),
     dict(m0=M_VALUES, Q0=Q_VALUES, inertia=I_VALUES, h=SCALARS, nsteps=INTEGERS,
          save_every=INTEGERS, t0=SCALARS, quadrature=INTEGERS,
          method=NOT_NUMBERS + ["strang", "RK4", ""],
          torque=NOT_NUMBERS[4:] + [lambda m, Q, t: None, lambda m, Q, t: (m,),
                                     lambda m, Q, t: (m * np.nan, Q),
                                     lambda m, Q, t: (m, 2 * Q), 3.0]),
     {"torque": ("torque",), "m0": _M0_NAMES + ("Q0",),
      "inertia": ("inertia", "torque: its parameters")}, _trajectory),
    ("hat", _call(frb.hat, ["v"]), dict(v=M), dict(v=M_VALUES), {}, _any_finite),
    ("quat_mul", _call(frb.quat_mul, ["p", "q"]), dict(p=QUAT, q=QUAT),
     dict(p=QUAT_VALUES, q=QUAT_VALUES), {"p": ("p",), "q": ("q",)}, _any_finite),
    ("quat_conj", _call(frb.quat_conj, ["q"]), dict(q=QUAT), dict(q=QUAT_VALUES), {},
     _any_finite),
    ("quat_to_matrix", _call(frb.quat_to_matrix, ["q"]), dict(q=QUAT), dict(q=QUAT_VALUES), {},
     lambda r, a: _rotations(r)),
    ("matrix_to_quat", _call(frb.matrix_to_quat, ["Q"]), dict(Q=Q), dict(Q=Q_VALUES), {},
     lambda r, a: _units(r)),
    ("kinetic_energy", _call(frb.kinetic_energy, ["m", "inertia"]), dict(m=M, inertia=I),
     dict(m=M_VALUES, inertia=I_VALUES[:len(M_VALUES)]), {}, _kinetic),
    ("spatial_momentum", _call(frb.spatial_momentum, ["m", "Q"]), dict(m=M, Q=Q),
     dict(m=M_VALUES, Q=Q_VALUES), {}, _any_finite),
    ("principal_axes", _call(frb.principal_axes, ["J"]), dict(J=np.diag(I)),
     dict(J=I_VALUES + Q_VALUES), {"J": ("inertia",)},
     lambda r, a: (_finite(*r), _rotations(r[1]))),
    ("constant_field", _call(torques.constant_field, ["u0"]), dict(u0=M), dict(u0=M_VALUES),
     {}, lambda r, a: None),
    ("heavy_top", _call(torques.heavy_top, ["weight", "center"]),
     dict(weight=1.0, center=M), dict(weight=SCALARS, center=M_VALUES), {},
     lambda r, a: None),
    ("gravity_gradient", _call(torques.gravity_gradient, ["n"]), dict(n=1.0),
     dict(n=SCALARS), {}, lambda r, a: None),
    ("linear_damping", _call(torques.linear_damping, ["c"]), dict(c=1.0), dict(c=SCALARS), {},
     lambda r, a: None),
    ("rotor", _call(torques.rotor, ["h"]), dict(h=M), dict(h=M_VALUES), {}, lambda r, a: None),
    ("attitude_control", _call(torques.attitude_control, ["q_ref", "kp", "kd"]),
     dict(q_ref=QUAT, kp=1.0, kd=0.5), dict(q_ref=QUAT_VALUES, kp=SCALARS, kd=SCALARS), {},
     lambda r, a: None),
    ("gravity_gradient-call", lambda a: torques.gravity_gradient(1.0)(a["t"], a["Q"],
                                                                      inertia=a["inertia"]),
     dict(t=0.5, Q=Q_TURNED, inertia=I),
     dict(t=SCALARS, Q=Q_VALUES, inertia=I_VALUES), {}, _any_finite),
    ("rotor-call", lambda a: torques.rotor([[1.0, 0, 0], [0, 1.0, 0]])(
        0.0, a["Q"], a["m"], inertia=a["inertia"]),
     dict(Q=np.stack([Q, Q_TURNED]), m=np.stack([M, M]), inertia=I),
     dict(Q=Q_VALUES, m=M_VALUES, inertia=I_VALUES), {}, _any_finite),
    ("set_num_threads", _call(frb.set_num_threads, ["n"]), dict(n=None), dict(n=INTEGERS[1:]),
     {}, lambda r, a: None),
]


def _dask_step(args):
    import frb.dask
    m1, q1 = frb.dask.quat_step(args["m"], args["q"], args["h"], args["inertia"],
                                threads=args.get("threads"))
    return m1.compute(), q1.compute()


def _dask_integrate(args):
    import frb.dask
    args = dict(args)
    pos = [args.pop(k) for k in ("m0", "attitude0", "inertia", "h", "nsteps")]
    return frb.dask.integrate(*pos, **args).compute()


_DIR = tempfile.mkdtemp(prefix="frb-trial-")
_DAT = os.path.join(_DIR, "values.dat")
with open(_DAT, "w") as _fh:
    _fh.write("1.0 2*0.5 -7.5e-1, 3\n")


def _read_check(result, args):
    assert np.array_equal(result, [1.0, 0.5, 0.5, -0.75, 3.0])


def _write_and_read(args):
    path = os.path.join(_DIR, "out.dat") if args["path"] is _OUT else args["path"]
    frb.write_dat(path, args["values"])
    return frb.read_dat(path, max_values=None), np.asarray(args["values"], dtype=float)


def _round_trip(result, args):
    back, given = result
    assert np.array_equal(back, given.ravel(), equal_nan=True)


_OUT = object()   # (the default output path of the write_dat cases)

_COMPARE = dict(methods=["EXACT", "RK4"], bodies=2, t_final=1.0, steps=(2, 4), min_time=0.0)


def _compare_check(result, args):
    assert isinstance(result, frb.workprecision.Comparison)
    for r in result.rows:
        assert r.failure or (math.isfinite(r.error_m) and math.isfinite(r.error_attitude))
    assert "nan" not in result.format().lower()


_DASK = []
try:
    import dask.array  # noqa: F401
    _DASK = [
        ("dask.quat_step", _dask_step, dict(m=np.tile(M, (4, 1)), q=np.tile(QUAT, (4, 1)), h=0.1,
                                            inertia=I),
         dict(m=M_VALUES, q=QUAT_VALUES, h=SCALARS, inertia=I_VALUES, threads=INTEGERS[:20]),
         {"m": ("m", "q"), "q": ("q",)}, _step_result("quaternion")),
        ("dask.integrate", _dask_integrate,
         dict(m0=np.tile(M, (4, 1)), attitude0=np.tile(QUAT, (4, 1)), inertia=I, h=0.1,
              nsteps=3, method="RK4"),
         dict(m0=M_VALUES, attitude0=QUAT_VALUES, h=SCALARS, nsteps=INTEGERS,
              save_every=INTEGERS + ["final"], method=NOT_NUMBERS + ["nope"],
              torque=[lambda t, Q: np.zeros((len(Q), 3)), torques.rotor(np.ones((4, 3))),
                      torques.rotor(np.ones((3, 3))), 3.0]),
         {"m0": _M0_NAMES, "torque": ("torque",)}, _trajectory),
    ]
except ImportError:      # pragma: no cover - dask is an optional extra
    pass

_FIELD = torques.constant_field([0.0, 0.3, 1.0])
_TOP = torques.heavy_top(2.0, [0.1, 0.0, 0.5])
_SCALAR_TIMES = [v for v in SCALARS if np.ndim(v) == 0 or isinstance(v, (dict, set))]


def _experiment(args):
    from frb.experiments import run_experiment
    return run_experiment("ganapathi-symmetric", **args)


def _experiment_check(result, args):
    assert "nan" not in result.format().lower()
    assert all(math.isfinite(v) for v in result.numbers.values())


try:
    import scipy.spatial.transform  # noqa: F401
    _SCIPY = [("to_rotation", _call(frb.to_rotation, ["attitude"]), dict(attitude=QUAT),
               dict(attitude=QUAT_VALUES + Q_VALUES), {}, lambda r, a: None)]
except ImportError:      # pragma: no cover - scipy is optional
    _SCIPY = []

FUNCTIONS += _SCIPY + [
    ("constant_field.torque", lambda a: _FIELD.torque(a["t"], a["Q"]), dict(t=0.0, Q=Q_TURNED),
     dict(t=_SCALAR_TIMES, Q=Q_VALUES), {}, _any_finite),
    ("constant_field.flow", lambda a: _FIELD.flow(a["m"], a["Q"], a["t"]),
     dict(m=M, Q=Q_TURNED, t=0.1), dict(m=M_VALUES, Q=Q_VALUES, t=SCALARS), {}, _any_finite),
    ("heavy_top.potential", lambda a: _TOP.potential(a["Q"]), dict(Q=Q_TURNED),
     dict(Q=Q_VALUES), {}, _any_finite),
    ("heavy_top.torque", lambda a: _TOP.torque(a["t"], a["Q"]), dict(t=0.0, Q=Q_TURNED),
     dict(t=_SCALAR_TIMES, Q=Q_VALUES), {}, _any_finite),
    ("ganapathi-symmetric", _experiment, dict(dt=1.0 / 30.0, nsteps=30),
     dict(dt=SCALARS, nsteps=INTEGERS), {}, _experiment_check),
]

FUNCTIONS += _DASK + [
    ("read_dat", lambda a: frb.read_dat(a["path"], max_values=a["max_values"]),
     dict(path=_DAT, max_values=100),
     dict(path=NOT_NUMBERS + [3.5, [_DAT], os.path.join(_DIR, "missing.dat")],
          max_values=INTEGERS), {"path": ("path", "missing.dat")}, _read_check),
    ("write_dat", _write_and_read, dict(path=_OUT, values=M),
     dict(values=M_VALUES, path=[v for v in NOT_NUMBERS if not isinstance(v, (str, bytes))]
          + [3.5, [_DAT]]), {}, _round_trip),
    ("compare", lambda a: frb.compare(**a), _COMPARE,
     dict(t_final=SCALARS[:30], bodies=INTEGERS[:24], steps=[(2,), (), [0], [2.0], [True],
                                                             "2", 2, [-1], [2**31]],
          methods=NOT_NUMBERS[2:] + ["nope", ["EXACT", 3], "all"],
          repeat=INTEGERS[:20], saves=INTEGERS[:20], rng=INTEGERS[:20]),
     {"methods": ("method",)}, _compare_check),
]


def _cases():
    for name, call, valid, hostile, aliases, check in FUNCTIONS:
        for arg, values in hostile.items():
            for k, value in enumerate(values):
                yield pytest.param(call, valid, arg, value, aliases.get(arg, (arg,)), check,
                                   id=f"{name}-{arg}-{k}")


CASES = list(_cases())


@pytest.fixture(autouse=True, scope="module")
def _threads_back():
    yield
    frb.set_num_threads(None)
    shutil.rmtree(_DIR, ignore_errors=True)


@pytest.mark.parametrize("call, valid, arg, value, names, check", CASES)
def test_hostile_call(call, valid, arg, value, names, check):
    args = dict(valid)
    args[arg] = value
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        try:
            result = call(args)
        except (TypeError, ValueError) as exc:
            text = str(exc)
            assert any(n in text for n in names) or (
                arg in _PHASE_ARGUMENTS and _PHASE in text), \
                f"{type(exc).__name__} not naming {arg}: {text}"
            _right_type(exc, value, arg)
            return
        except frb.IntegrationError as exc:
            assert "step" in str(exc) and exc.step >= 1
            return
        except FileNotFoundError:
            assert arg == "path" and isinstance(value, (str, bytes))     # (a path that is none)
            return
    check(result, args)


#: The phase limit of the exact flows is a bound on |h| |m| / I_min: its message names the
#: three arguments in that formula.
_PHASE = "|h| |m| / I_min"
_PHASE_ARGUMENTS = {"m", "m0", "inertia", "h"}
#: Arguments that take a string (a method's name, "final"): another string is a wrong value.
_STRING_ARGUMENTS = {"method", "methods", "save_every", "sensitivities"}


def _right_type(exc, value, arg):
    """TypeError for what is not a number (None, bools, strings, complex numbers, objects)."""
    if isinstance(value, (str, bytes)) and arg in _STRING_ARGUMENTS:
        return
    if value is None and arg in ("save_every", "n", "threads", "torque", "coefficients"):
        return      # (None is a value of these: keep the final state, the default, no torque)
    if value is None or isinstance(value, (bool, np.bool_, str, bytes, complex, np.complexfloating,
                                           dict, set, slice)) or value is Ellipsis or \
            type(value) is object:
        assert isinstance(exc, TypeError), f"{type(exc).__name__} for {value!r}: {exc}"


def test_the_trial_is_large():
    """The trial makes well over a thousand hostile calls."""
    assert len(CASES) > 1000
