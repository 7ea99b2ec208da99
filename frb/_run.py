"""One prepared run behind every route, and its one execution.

Every public route to the compiled time loop (:func:`frb.integrate`,
:func:`frb.splitting.integrate`, :func:`frb.dmv_step`, :func:`frb.dmv_integrate`,
:func:`frb.frb_step`, :func:`frb.quat_step` and the blocks of :mod:`frb.dask`) declares what it
accepts in a :class:`Route` (the names of its arguments, the attitude forms and shapes it
allows), hands the arguments it was called with to :func:`prepare` as a :class:`Request`, and
gets one immutable :class:`Run`: the method and its codes, the arrays in the engine's layout, the
compiled torque, the reaction wheels and their law, the scaling, the states to keep. :func:`execute` is the only function of frb
that calls the compiled time loop; it enters long runs in segments (Ctrl-C, progress) and
returns the kept states. :func:`jacobian` and :func:`inertia_jacobian` are the only callers of
the compiled derivatives of a step (a prepared run of one step of EXACT).

The checks of :func:`prepare` are the same for every route: the input rule of
:mod:`frb._validate` (TypeError for what is not a number, ValueError for a wrong value, naming
the route's argument and the body of a batch), the value checks of the compiled
``check_bodies`` (finite values, positive moments, unit quaternions and rotation matrices, the
phase limit), one bound for every count, one rescaling policy (:mod:`frb._scaling`).
"""
from __future__ import annotations

import math
import time
import warnings
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping, NamedTuple, Optional, Tuple

import numpy as np
from numpy.typing import NDArray

from . import _core
from . import _numbers_table as _sn
from . import _validate
from ._kept import check_kept_states, kept_count, kept_steps
from ._messages import IntegrationError, check_message, failure, gyrostat_phase_message, \
    per_body_torque_message
from ._progress import Progress
from ._scaling import Scaling, scaling_of, torque_beyond
from .methods import MethodInfo, check_dmv_inertia
from .schedules import FREE_PLAN, plan as splitting_plan
from .threads import get_num_threads, resolve as resolve_threads
from .torques import PARAMETER_SCALES, AttitudeControl, NotCompiledWarning, Rotor, Torque, \
    TorqueSum, UserTorque, as_torque, compiled_terms, shown
from ._references import RotatingReference
from .wheel_laws import QuaternionFeedback, UserLaw, WheelLaw, as_wheel_law
from .wheels import Wheels

__all__ = ["Route", "Request", "Run", "Outcome", "prepare", "execute", "check", "lean_free_steps",
           "in_segments", "free_flow", "is_rotation_matrix", "StepJacobian", "jacobian",
           "inertia_jacobian"]


@dataclass(frozen=True)
class Route:
    """What a public route accepts, read by :func:`prepare`.

    ``names`` maps the roles ``m``, ``attitude``, ``h``, ``inertia`` to the route's argument
    names (in its messages); ``forms`` the attitude forms it takes (``"quaternion"``: (4,) or
    (N, 4); ``"matrix"``: (3, 3) or (N, 3, 3)); ``batch``: whether it takes batches;
    ``h_per_body``: whether ``h`` may be an array (N,) (torque-free runs of the exact flows and
    the approximate free flows); ``label``: the run's name on a progress bar; ``plural``,
    ``terse``: the wording of its messages."""

    label: str
    names: Mapping[str, str]
    forms: tuple[str, ...] = ("quaternion", "matrix")
    batch: bool = True
    h_per_body: bool = False
    #: the wording of the value checks' messages (frb._messages.check_message): "must be unit
    #: quaternions" (plural), "m0 must be finite" (terse)
    plural: bool = False
    terse: bool = False
    #: the shapes of one body's attitude (from forms)
    attitude_shapes: tuple[tuple[int, ...], ...] = field(init=False, default=())

    def __post_init__(self) -> None:
        object.__setattr__(self, "attitude_shapes", tuple(
            (4,) if form == "quaternion" else (3, 3) for form in self.forms))


class Request(NamedTuple):
    """The arguments of one call of a route, as given (the inertia as principal moments: the
    routes run inertia tensors in their principal frame, :mod:`frb.inertia`)."""

    route: Route
    method: MethodInfo
    m: Any
    attitude: Any
    inertia: Any
    h: Any
    nsteps: Any = 1
    torque: Any = None
    #: splitting coefficients (a, b) of an exact-flow splitting with a torque
    coefficients: Optional[Tuple[Tuple[float, ...], Tuple[float, ...]]] = None
    save_every: Any = None
    quadrature: Any = 0
    threads: Any = None
    progress: Any = False
    t0: Any = 0.0
    #: the method's name as the user chose it (progress bars; default the method's)
    name: str = ""
    #: reaction wheels (frb.Wheels) and the law of their motor torques (frb.wheel_laws, or a
    #: callable law(t, Q, m, h)); without a law the wheels keep their momenta (a gyrostat)
    wheels: Any = None
    wheel_law: Any = None

    #: the parts of the variational state to carry (frb.integrate's sensitivities: None, True,
    #: or names of SENSITIVITY_PARTS)
    sensitivities: Any = None


class WheelRun(NamedTuple):
    """The reaction wheels of a run: the wheels and the law as the run takes them (in the run's
    frame), the law's kind (WHEEL_LAW_*), the law Python calls back (None: compiled), and the
    keyword inputs of the compiled loop: ``wheels`` (WHEEL_REALS, nw, 1 or n) the axes and the
    rows of their pseudo-inverse, ``law`` (LAW_REALS, 1 or n) its parameters, ``h0`` (nw, n)
    the initial momenta (transposes of C-ordered arrays)."""

    wheels: Optional[Wheels]
    law: Optional[WheelLaw]
    kind: int
    user: Optional[UserLaw]
    inputs: Mapping[str, NDArray[np.float64]]
    #: the initial momenta (n, nw)
    h0: NDArray[np.float64]

    @property
    def wheel_count(self) -> int:
        """The wheels of a body."""
        return int(self.h0.shape[1])


#: The inputs of the compiled loop (engine_whole, engine_segment), in the order of its arguments.
EngineInputs = Tuple[NDArray[np.intc], NDArray[np.float64], NDArray[np.float64], NDArray[np.float64],
                     NDArray[np.float64], NDArray[np.float64], NDArray[np.float64],
                     NDArray[np.float64]]


class Run(NamedTuple):
    """One run of the compiled time loop, prepared: every array in the engine's layout
    (C-ordered (n, k) arrays passed as their (k, n) transposes), read-only."""

    route: Route
    method: MethodInfo
    #: the integer configuration of the compiled loop (slots RUN_* of the shared numbers)
    config: NDArray[np.intc]
    #: the flows of one step of an exact-flow splitting (flows, PLAN_ROWS): kind (0 the free
    #: flow, 1 the torque's flow) and fraction of h of each
    plan: NDArray[np.float64]
    #: the compiled torque in the run's units: its terms (terms, 1 + TORQUE_TERM_REALS), the kind
    #: then the parameters of each, and the per-body parameters (bodies, TORQUE_BODY_REALS)
    torque_terms: NDArray[np.float64]
    torque_body: NDArray[np.float64]
    #: the torque as given (None: a free body) and the one Python calls back (None: compiled)
    torque: Optional[Torque]
    user: Optional[Torque]
    #: the initial state and the moments, in the run's units: m (n, 3), attitude (n, natt)
    #: (unit quaternions, or matrices as (n, 9)), inertia (1, 3) shared or (n, 3) one a body
    m: NDArray[np.float64]
    attitude: NDArray[np.float64]
    inertia: NDArray[np.float64]
    #: the step in the run's units, (1,) or (n,) per body; the first time in the run's units
    h: NDArray[np.float64]
    t0: float
    #: the step and first time as given (the kept times are t0 + k h)
    h_given: float
    t0_given: float
    nsteps: int
    save_every: int
    threads: int
    progress: bool
    single: bool
    form: str
    scaling: Optional[Scaling]
    #: the moments (n, 3) and the attitude as given (the attitude for the messages' hints)
    inertia_given: NDArray[np.float64]
    original: Any
    #: the run's name on a progress bar
    label: str
    #: body-steps of the first compiled call of a run in segments (0: FIRST_WORK; fewer for
    #: the exact flows' long steps, which run in quadruple precision: about 0.1 ms a body-step)
    first_work: int
    #: the read-only inputs of the compiled loop, in the order of its arguments: config, plan,
    #: terms, body, times (t0, then the step or the steps), m0, att0, inertia
    engine_inputs: EngineInputs
    #: the longest free flow of a step, as a fraction of h (for the phase limit)
    longest: float
    #: the reaction wheels (no wheels: a WheelRun of none)
    wheel_run: WheelRun
    #: the variational state carried: its parts (VARIATIONAL_* bits, 0 none) and its columns
    variational: int = 0
    ncol: int = 0
    #: the steps as given, before a rescaling (None: not rescaled)
    h_unscaled: Optional[NDArray[np.float64]] = None

    @property
    def checked(self) -> bool:
        """True when the bodies are checked (else the compiled loop checks them first)."""
        return not self.config[_sn.RUN_CHECKS - 1]

    @property
    def n(self) -> int:
        return int(self.m.shape[0])

    @property
    def natt(self) -> int:
        return int(self.attitude.shape[1])

    def times(self) -> NDArray[np.float64]:
        """The kept times ``t0 + k h`` (``k`` the kept steps), as the compiled loop's."""
        saved = kept_steps(self.nsteps, self.save_every)
        t = saved * self.h_given
        if self.t0_given != 0.0:
            return self.t0_given + t
        if not self.h_given > 0:
            t = t + 0.0           # (0 h = -0.0 for h < 0; the loop's 0.0 + 0 h is +0.0)
        return t


class Outcome(NamedTuple):
    """The kept states of a run: momenta (K, n, 3), attitudes (K, n, natt) and wheel momenta
    (K, n, nw; None without wheels), in the user's units; filled up to the failure when there
    is one (``failure``, not raised); the kept variational states (K, n, 6, ncol) in the user's
    units when the run carries them."""

    m: NDArray[np.float64]
    attitude: NDArray[np.float64]
    failure: Optional[IntegrationError] = None
    h: Optional[NDArray[np.float64]] = None
    variational: Optional[NDArray[np.float64]] = None


#: The parts of a variational state (frb.integrate's ``sensitivities``), by name: the
#: derivatives with respect to the initial state, h, the principal moments and the parameters
#: of the torque's terms.
SENSITIVITY_PARTS = {"state": _sn.VARIATIONAL_STATE, "h": _sn.VARIATIONAL_H,
                     "inertia": _sn.VARIATIONAL_INERTIA, "torque": _sn.VARIATIONAL_TORQUE}


def variational_columns(parts: int, nterms: int) -> int:
    """The columns of a variational state of these parts for a torque of nterms built-in terms
    (the layout of fortran/variational.f90: state 6, h 1, moments 3, TORQUE_TERM_REALS a term)."""
    return (6 * bool(parts & _sn.VARIATIONAL_STATE) + bool(parts & _sn.VARIATIONAL_H)
            + 3 * bool(parts & _sn.VARIATIONAL_INERTIA)
            + _sn.TORQUE_TERM_REALS * nterms * bool(parts & _sn.VARIATIONAL_TORQUE))


def _variational_parts(value: Any, info: MethodInfo, user: Optional[Torque], quadrature: int,
                       name: str, without: Optional[str] = None) -> int:
    """The VARIATIONAL_* bits of frb.integrate's ``sensitivities`` (None / False: 0; True: the
    state; a name or names of SENSITIVITY_PARTS); ValueError for a method, torque or option
    whose sensitivities frb does not compute, naming it (``without``: the argument of the run
    that has none, wheels or attitude_control)."""
    if isinstance(value, np.bool_):
        value = bool(value)
    if value is None or value is False:
        return 0
    if value is True:
        names: tuple[Any, ...] = ("state",)
    elif isinstance(value, str):
        names = (value,)
    elif isinstance(value, (tuple, list)):
        names = tuple(value)
    else:
        raise TypeError("sensitivities must be True, False, None or names among "
                        f"{', '.join(SENSITIVITY_PARTS)}, got {_validate._short(value)}")
    parts = 0
    for part in names:
        if not isinstance(part, str):
            raise TypeError(f"sensitivities must name parts among {', '.join(SENSITIVITY_PARTS)}, "
                            f"got {_validate._short(part)} among them")
        if part not in SENSITIVITY_PARTS:
            raise ValueError(f"sensitivities: {part!r} is not one of "
                             f"{', '.join(SENSITIVITY_PARTS)}")
        parts |= SENSITIVITY_PARTS[part]
    if not parts:
        return 0
    if not info.sensitivities:
        raise ValueError(f"sensitivities are computed for EXACT, the exact-flow splittings "
                         f"(STRANG, YOSHIDA4, RKN6_14, coefficients=) and RK4, not for method "
                         f"{name or info.name}")
    if without is not None:
        raise ValueError(f"sensitivities are not available with {without}")
    if user is not None:
        raise ValueError("sensitivities are computed for the built-in torques of frb.torques "
                         "(their compiled form), not for a torque called from Python")
    if quadrature:
        raise ValueError("sensitivities are computed for the exact free flow (quadrature=0), "
                         "not for the semi-exact flows")
    return parts


def _without_derivatives(req: Request, tq: Optional[Torque], info: MethodInfo) -> Optional[str]:
    """The argument of a run whose derivatives frb does not compute: reaction wheels (``wheels``,
    ``wheel_law``), a rotor in EXACT or an exact-flow splitting (their free flow is then the
    gyrostat's), or an attitude-control term whose gains are matrices or whose reference turns or
    is a function of time; None."""
    if req.wheels is not None or req.wheel_law is not None:
        return "wheels"
    terms = getattr(tq, "terms", None) or (tq,)
    if info.family == _sn.FAMILY_EXACT_SPLITTINGS and any(isinstance(t, Rotor) for t in terms):
        return (f"a rotor (frb.torques.rotor) in {req.name or info.name}, whose free flow is then "
                "the exact gyrostat's")
    for term in terms:
        if isinstance(term, AttitudeControl) and not (
                isinstance(term.kp, float) and isinstance(term.kd, float)
                and isinstance(term.q_ref, np.ndarray)):
            return ("attitude_control (gains that are matrices, or a reference that turns or "
                    "is a function of time)")
    return None


def _read_only(a: NDArray[Any]) -> NDArray[Any]:
    a.flags.writeable = False
    return a


_NO_TORQUE_TERMS = _read_only(compiled_terms((_sn.TORQUE_NONE,),
                                             np.zeros((1, _sn.TORQUE_TERM_REALS))))
_NO_BODY = _read_only(np.zeros((1, _sn.TORQUE_TERM_REALS)))
_NO_WHEEL_AXES = _read_only(np.zeros((_sn.WHEEL_REALS, 1, 1), order="F"))
_NO_LAW = _read_only(np.zeros((_sn.LAW_REALS, 1), order="F"))


def _user_law_parameters(h_max: float) -> NDArray[np.float64]:
    """The compiled parameters of a Python law, (1, LAW_REALS): only the momentum limit h_max
    (inf for a law of the user's; quaternion_feedback's with q_ref a Python function), which the
    compiled loop applies after each step as for the compiled feedback."""
    p = np.zeros((1, _sn.LAW_REALS))
    p[0, _sn.LAW_H_MAX - 1] = h_max
    return p
# the wheel arrays of a run without wheel states: not read, one element each
_NO_H = _read_only(np.zeros((1, 1), order="F"))
_FLOAT64 = np.dtype(np.float64)
#: The stand-in body whose checks an empty batch's shared arguments get: at rest, unrotated,
#: a unit step and unit moments where the batch gives none.
_REST_M = _read_only(np.zeros((1, 3)))
_REST_ATTITUDE = {"quaternion": _read_only(np.array([[1.0, 0.0, 0.0, 0.0]])),
                  "matrix": _read_only(np.eye(3).reshape(1, 9))}
_REST_H = _read_only(np.ones(1))
_REST_I = _read_only(np.ones((1, 3)))
_H_WANT = "a real number (or, for a batch, an array of real numbers)"
# the configuration is made in the order of its slots
assert (_sn.RUN_FAMILY, _sn.RUN_VARIANT, _sn.RUN_QUADRATURE, _sn.RUN_USER_TORQUE,
        _sn.RUN_WHEEL_LAW, _sn.RUN_NSTEPS, _sn.RUN_SAVE_EVERY, _sn.RUN_CHUNK, _sn.RUN_THREADS,
        _sn.RUN_FIRST_BODY, _sn.RUN_LAST_BODY, _sn.RUN_FIRST_STEP, _sn.RUN_LAST_STEP,
        _sn.RUN_CHECKS, _sn.RUN_SCALE_EXPONENT, _sn.RUN_WHEEL_KICK, _sn.RUN_VARIATIONAL,
        _sn.RUN_SLOTS) == tuple(range(1, 18)) + (17,)


# ---------------------------------------------------------------------------------------------
# preparation

def _array(value: Any, name: str) -> NDArray[np.float64]:
    """value as a float64 array (values left to the compiled checks); a float64 ndarray at once."""
    if type(value) is np.ndarray and value.dtype is _FLOAT64:
        return value
    return _validate.real_array(value, name, finite=False)


def _momenta(req: Request) -> tuple[NDArray[np.float64], bool]:
    """(m (n, 3), single) of the request."""
    m = req.m
    if type(m) is not np.ndarray or m.dtype is not _FLOAT64:
        m = _validate.real_array(m, req.route.names["m"], finite=False)
    shape = m.shape
    if shape == (3,):
        return m.reshape(1, 3), True
    if req.route.batch and len(shape) == 2 and shape[1] == 3:
        return m, False
    want = "(3,) or (N, 3)" if req.route.batch else "(3,)"
    raise ValueError(f"{req.route.names['m']} must have shape {want}, got {shape}")


def _attitudes(req: Request, single: bool, n: int) -> tuple[str, NDArray[np.float64]]:
    """(form, attitudes (n, 4) or (n, 9)) of the request, shapes checked."""
    a = req.attitude
    if type(a) is not np.ndarray or a.dtype is not _FLOAT64:
        a = _validate.real_array(a, req.route.names["attitude"], finite=False)
    shape = a.shape
    body = shape if single else shape[1:]
    if (single or (shape and shape[0] == n)) and body in req.route.attitude_shapes:
        if body == (4,):
            return "quaternion", a.reshape(n, 4)
        return "matrix", a.reshape(n, 9)
    forms = req.route.attitude_shapes
    want = " or ".join(str(s) if single else str((n,) + s) for s in forms)
    raise ValueError(f"{req.route.names['attitude']} must have shape {want}, got {shape}")


def _moments(req: Request, single: bool, n: int) -> NDArray[np.float64]:
    """The moments (1, 3) or (n, 3) of the request."""
    I = req.inertia
    if type(I) is not np.ndarray or I.dtype is not _FLOAT64:
        I = _validate.real_array(I, "inertia", finite=False)
    if I.shape == (3,):
        return I.reshape(1, 3)
    if not single and I.shape in ((n, 3), (1, 3)):
        return I
    if single:
        raise ValueError(f"inertia must have shape (3,) for one body ({req.route.names['m']} of "
                         f"shape (3,)), got {I.shape}")
    raise ValueError(f"inertia must have shape (3,) or ({n}, 3), got {I.shape}")


def _steps(req: Request, single: bool, n: int) -> NDArray[np.float64]:
    """h as (1,) or, where the route takes it, (n,)."""
    h = req.h
    if type(h) is float and h - h == 0.0:
        return np.array([h])
    name = req.route.names["h"]
    if not req.route.h_per_body:
        return np.array([_validate.real_scalar(h, name)])
    a = _validate.real_array(h, name, finite=False, want=_H_WANT)
    if a.ndim == 0:
        return a.reshape(1)
    if single:
        raise ValueError(f"{name} must be a single number for one body ({req.route.names['m']} "
                         f"of shape (3,)), got shape {a.shape}")
    if a.ndim == 1 and a.shape[0] in (1, n):
        return np.ascontiguousarray(a)
    raise ValueError(f"{name} must be a scalar, or have shape (1,) or ({n},) (one step for all "
                     f"or one a body), got shape {a.shape}")


def _torque_form(torque: Optional[Torque], n: int
                 ) -> tuple[NDArray[np.float64], NDArray[np.float64], Optional[Torque]]:
    """(terms, per-body parameters, the torque Python calls back or None) of a torque. A torque
    of built-in torques only that has no compiled form warns (NotCompiledWarning)."""
    if torque is None:
        return _NO_TORQUE_TERMS, _NO_BODY, None
    form = torque.compiled
    if form is None:
        _warn_not_compiled(torque)
        rotor, rest = _rotor_apart(torque)
        if rotor is None:
            return _NO_TORQUE_TERMS, _NO_BODY, torque
        # the rotor compiled (the gyrostat's flow of the exact splittings), the rest from Python
        terms, body, _ = _torque_form(rotor, n)
        return terms, body, rest
    terms = form.terms if form.terms is not None else compiled_terms(form.kinds, form.parameters,
                                                                     form.blocks)
    if form.body is None:
        return terms, _NO_BODY, None
    if form.body.shape[0] != n:
        raise ValueError(per_body_torque_message(shown(torque), form.body.shape[0], n))
    return terms, form.body, None


def _rotor_apart(torque: Torque) -> tuple[Optional[Torque], Torque]:
    """(the rotor, the other terms) of a sum with a rotor term (rotors in a sum are one term);
    (None, the torque) for any other torque."""
    terms = getattr(torque, "terms", (torque,))
    rotors = [tq for tq in terms if type(tq) is Rotor]
    if len(terms) < 2 or len(rotors) != 1:
        return None, torque
    rest = [tq for tq in terms if tq is not rotors[0]]
    return rotors[0], rest[0] if len(rest) == 1 else TorqueSum(rest)


def _warn_not_compiled(torque: Torque) -> None:
    """NotCompiledWarning for a torque made of built-in torques only that the run evaluates from
    Python (a sum of more than MAX_TORQUE_TERMS terms, a subclass of a built-in torque)."""
    terms = getattr(torque, "terms", (torque,))
    if any(isinstance(tq, UserTorque) for tq in terms):
        return          # a user torque is Python's by nature (the documented rule)
    reasons = [r for r in (getattr(tq, "not_compiled_reason", None) for tq in terms) if r]
    why = (f"a sum of {len(terms)} terms (the compiled loop holds {_sn.MAX_TORQUE_TERMS})"
           if len(terms) > _sn.MAX_TORQUE_TERMS else reasons[0] if reasons else
           "a subclass of a built-in torque, which may change its formula")
    warnings.warn(f"the torque {shown(torque)} is evaluated from Python once per stage ({why}), many "
                  "times slower than a compiled torque", NotCompiledWarning, stacklevel=4)


def _wheel_run(req: Request, tq: Optional[Torque], n: int, single: bool, I2: NDArray[np.float64]
               ) -> tuple[WheelRun, Optional[Torque]]:
    """The reaction wheels of a request and the torque of the run: wheels without a law are a
    gyrostat, whose rotor ``A h0`` is added to the torque (frb.torques.rotor: compiled, the
    energy kept to rounding by the splittings); a law makes the wheel momenta states of the
    loop. ValueError / TypeError naming the argument."""
    wheels, law = req.wheels, as_wheel_law(req.wheel_law)
    if wheels is None:
        if law is not None:
            raise ValueError("wheel_law needs wheels=frb.Wheels(axes, h0)")
        return _NO_WHEELS, tq
    if not isinstance(wheels, Wheels):
        raise TypeError(f"wheels must be frb.Wheels(axes, h0), got {type(wheels).__name__}")
    info = req.method
    if not info.wheels and (law is not None or not info.accepts(Rotor(_ZEROS3))):
        raise ValueError(info.wheel_refusal())
    for what, count in (("wheels", wheels.bodies_count),
                        ("wheel_law", getattr(law, "bodies_count", None))):
        if count is not None and count != n and not (single and count == 1):
            raise ValueError(f"{what}: given per body for {count} bodies, the run has {n}")
    nw = wheels.count
    h0 = np.ascontiguousarray(np.broadcast_to(wheels.h0, (n, nw)))
    A = wheels.axes if wheels.axes.ndim == 2 else wheels.axes[:n]
    if law is None:
        rotor = Rotor(wheels.momentum(wheels.h0))
        if not info.wheels and not info.accepts(rotor if tq is None else rotor + tq):
            raise ValueError(f"method {info.name} takes wheels without a law (wheels=, their "
                             "momenta constant: a gyrostat) as rotors, with no other torque "
                             f"(torque={shown(tq)}): {info.refusal(tq)}")
        return WheelRun(wheels, None, _sn.WHEEL_LAW_NONE, None, _NO_WHEEL_INPUTS, h0), \
            rotor if tq is None else rotor + tq
    user: Optional[UserLaw] = None
    pinv = np.zeros_like(A)
    if isinstance(law, QuaternionFeedback):
        beyond = np.argwhere(np.abs(h0) > law.h_max)
        if beyond.size:
            body, wheel = (int(i) for i in beyond[0])
            where = f"wheel {wheel}" + ("" if wheels.bodies_count is None else f" of body {body}")
            raise ValueError(f"wheels: h0 = {float(h0[body, wheel])!r} of {where} is beyond the "
                             f"law's momentum limit h_max = {law.h_max!r} (a wheel starts "
                             "within it)")
        pinv = wheels.pseudo_inverse("axes")
        if not law.compiled:
            user = _python_feedback(law, I2, A, pinv, n)
    elif isinstance(law, UserLaw):
        user = law
    else:
        raise TypeError(f"wheel_law must be a law of frb.wheel_laws or a callable, got {law!r}")
    kind = _sn.WHEEL_LAW_USER if user is not None else _sn.WHEEL_LAW_FEEDBACK
    axes = np.concatenate([A, np.broadcast_to(pinv, A.shape)], axis=-1)
    if axes.ndim == 2:
        axes = axes[None]
    if kind == _sn.WHEEL_LAW_FEEDBACK and isinstance(law, QuaternionFeedback):
        parameters = law.parameters(n)
    else:
        parameters = _user_law_parameters(law.h_max if isinstance(law, QuaternionFeedback)
                                          else np.inf)
    inputs = {"wheels": _read_only(np.ascontiguousarray(axes).T),
              "law": _read_only(np.ascontiguousarray(parameters).T),
              "h0": _read_only(h0.T)}
    return WheelRun(wheels, law, kind, user, inputs, h0), tq


def _python_feedback(law: QuaternionFeedback, I2: NDArray[np.float64], A: NDArray[np.float64],
                     pinv: NDArray[np.float64], n: int) -> UserLaw:
    """The law quaternion_feedback with q_ref a Python function of time, as a user law (its
    numpy formula, called once per stage), with a NotCompiledWarning."""
    warnings.warn(f"the wheel law {law!r} takes q_ref as a Python function of time: it is "
                  "evaluated from Python once per stage, many times slower than compiled (a "
                  "reference turning at a constant rate, frb.wheel_laws.rotating_reference, "
                  "stays compiled)", NotCompiledWarning, stacklevel=4)
    moments = np.broadcast_to(I2, (n, 3))

    def feedback(t: float, Q: NDArray[np.float64], m: NDArray[np.float64],
                 h: NDArray[np.float64]) -> NDArray[np.float64]:
        return law.torques(t, Q, m, h, moments[:Q.shape[0]], A, pinv)

    feedback.__name__ = "quaternion_feedback"
    return UserLaw(feedback)


def _check_reference_turns(tq: Optional[Torque], law: Any, t0: float, h: NDArray[np.float64],
                           nsteps: int) -> None:
    """ValueError naming the torque or law whose reference turning at a constant rate
    (frb.wheel_laws.rotating_reference) would turn by an angle beyond the float64 range at a
    time of the run (a reference the compiled loop cannot evaluate)."""
    if tq is None and law is None:
        return
    owners = [("torque", term) for term in (getattr(tq, "terms", None) or (tq,))
              if term is not None]
    if law is not None:
        owners.append(("wheel_law", law))
    for name, owner in owners:
        ref = getattr(owner, "q_ref", None)
        if not isinstance(ref, RotatingReference):
            continue
        with np.errstate(over="ignore", invalid="ignore"):
            span = max(abs(t0 - ref.t_ref), float(np.max(np.abs(t0 + nsteps * h - ref.t_ref))))
            turn = span * float(np.max(np.abs(ref.rate)))
        if not math.isfinite(turn):
            raise ValueError(f"{name} {shown(owner)}: its reference's turn (t - t_ref) rate is beyond "
                             f"the float64 range at a time of the run (t from {t0!r} over "
                             f"{nsteps} steps)")


def _kick_order(info: MethodInfo, plan: NDArray[np.float64]) -> int:
    """The order of the wheel kick of a splitting (fortran/wheels.f90): 2 when its kicks b
    satisfy sum b^3 = 0 (the triple jump YOSHIDA4) or it has one kick (STRANG, and the free
    part of the approximate flows), else 4 (RKN6_14, user coefficients)."""
    if info.family != _sn.FAMILY_EXACT_SPLITTINGS:
        return 2
    b = plan[plan[:, 0] == 1, 1]
    return 2 if b.size <= 1 or abs(float(np.sum(b**3))) < 1e-12 else 4


def prepare(req: Request) -> Run:
    """The run of a request: every argument converted and checked (see the module)."""
    route, info = req.route, req.method
    m, a, I = req.m, req.attitude, req.inertia
    if type(m) is np.ndarray and type(a) is np.ndarray and type(I) is np.ndarray and \
            m.dtype is _FLOAT64 and a.dtype is _FLOAT64 and I.dtype is _FLOAT64 and \
            m.shape == (3,) and I.shape == (3,) and a.shape in route.attitude_shapes:
        # one body of float64 arrays (the usual call): its shapes at once
        single, n = True, 1
        m2, I2 = m.reshape(1, 3), I.reshape(1, 3).copy()
        form, att = ("quaternion", a.reshape(1, 4)) if a.shape == (4,) else \
            ("matrix", a.reshape(1, 9))
    else:
        m2, single = _momenta(req)
        n = m2.shape[0]
        form, att = _attitudes(req, single, n)
        I2 = _moments(req, single, n)
        for arr, name in ((m2, route.names["m"]), (att, route.names["attitude"]), (I2, "inertia")):
            _validate.fits_expanded(arr, name)
        # contiguous once here: the compiled loop would copy a strided or broadcast view at each
        # of its calls (the segments of a long run); the moments a copy, since the trajectory
        # keeps them and the caller's array may change afterwards
        m2, att = np.ascontiguousarray(m2), np.ascontiguousarray(att)
        I2 = np.array(I2, dtype=np.float64)
    h = req.h
    h = np.array((h,)) if type(h) is float and h - h == 0.0 else _steps(req, single, n)
    nsteps, save_every, quadrature = req.nsteps, req.save_every, req.quadrature
    if not (type(nsteps) is int and 0 <= nsteps <= _validate.MAX_STEPS):
        nsteps = _validate.count(nsteps, "nsteps", 0, _validate.MAX_STEPS)
    if not (type(save_every) is int and 1 <= save_every <= _validate.INT32_MAX):
        save_every = _validate.save_every(save_every)
    if not (type(quadrature) is int and 0 <= quadrature <= 10):
        quadrature = _validate.count(quadrature, "quadrature (0 exact, 1..10 Gauss-Legendre "
                                     "nodes)", 0, 10)
    threads = resolve_threads(req.threads)
    progress = req.progress is True or req.progress is not False and \
        _validate.flag(req.progress, "progress")
    t0 = req.t0 if type(req.t0) is float and math.isfinite(req.t0) else \
        _validate.real_scalar(req.t0, "t0")
    _validate.times_in_range(t0, h, nsteps, route.names["h"])
    tq = as_torque(req.torque)
    if tq is not None and not info.accepts(tq):
        raise ValueError(info.refusal(tq))
    wheel_run, tq = _wheel_run(req, tq, n, single, I2) if req.wheels is not None or \
        req.wheel_law is not None else (_NO_WHEELS, tq)
    _check_reference_turns(tq, req.wheel_law, t0, h, nsteps)
    wheels_active = wheel_run.kind != _sn.WHEEL_LAW_NONE
    if quadrature and info.family != _sn.FAMILY_EXACT_SPLITTINGS:
        raise ValueError(f"quadrature applies to the exact-flow methods, not to {info.name}")
    if h.shape[0] > 1 and (tq is not None or wheels_active or not info.free_steps):
        raise ValueError(f"{route.names['h']} per body is for torque-free runs of the exact "
                         "flows and the DMV methods")
    # the flows of a step: one free flow (EXACT, and every splitting without a torque), or the
    # splitting's schedule
    variant = info.variant
    plan, longest = FREE_PLAN
    if info.family == _sn.FAMILY_EXACT_SPLITTINGS:
        if tq is None and not wheels_active:
            variant = _sn.VARIANT_EXACT
        elif req.coefficients is not None:
            plan, longest = splitting_plan(*req.coefficients)
    if n and info.family == _sn.FAMILY_APPROXIMATE_FREE_FLOWS:
        check_dmv_inertia(info, I2, single)
    terms, tbody, user = _torque_form(tq, n)
    rotor_phase = 0.0
    if n and getattr(tq, "internal_momentum", None) is not None and np.isfinite(m2).all():
        # a gyrostat (rotors in the torque, or wheels without a law): its steps' phase counts
        # the rotor's momentum, in every method (a non-finite m is refused by the checks of the
        # bodies, naming it)
        with np.errstate(under="ignore"):   # (a subnormal step: its phase is what matters)
            longest_h = h * longest if longest != 1.0 else h
        rotor_phase, body = gyrostat_phase(tq, m2, longest_h, I2)
        if rotor_phase > _sn.PHASE_LIMIT:
            raise ValueError(gyrostat_phase_message(route.names["h"], rotor_phase,
                                                    route.names["m"], None if single else body,
                                                    wheels=req.wheels is not None))
        if info.family != _sn.FAMILY_EXACT_SPLITTINGS:
            rotor_phase = 0.0   # (the long steps of the gyrostat's exact flow only)
    user_law = wheel_run.user
    # a short run without Python in its loop is one compiled call, which checks the bodies
    # first; any other run is checked now (its scales size its calls and rescale it), and so are
    # matrices that the run holds as quaternions (checked before they are turned)
    whole = n * max(nsteps, 1) <= WHOLE_RUNS * FIRST_WORK and user is None and \
        user_law is None and not progress
    # matrices are held as quaternions by the families but the exact-flow splittings (and by
    # them too with wheels)
    matrices_turned = form == "matrix" and (info.family != _sn.FAMILY_EXACT_SPLITTINGS or
                                            wheels_active)
    extremes = None
    # (a compiled torque with a parameter beyond the method's range may rescale the run: its
    # bodies are checked now)
    form_given = tq.compiled if tq is not None else None
    torque_wide = form_given is not None and torque_beyond(form_given.extent,
                                                           info.scale_exponent)
    if n == 0:
        # an empty batch: its shared step and moments get the checks of a body (one at rest)
        _check_bodies(route, _REST_M, _REST_ATTITUDE[form], h[:1] if h.size else _REST_H,
                      I2[:1] if I2.size else _REST_I, 1, True, req.attitude)
        if I2.size and info.family == _sn.FAMILY_APPROXIMATE_FREE_FLOWS:
            check_dmv_inertia(info, I2[:1], True)
    if n and (not whole or matrices_turned or torque_wide):
        extremes = _check_bodies(route, m2, att, h * longest if longest != 1.0 else h, I2,
                                 threads, single, req.attitude)
    if matrices_turned and n:
        # held as quaternions by the other families (the conversion of frb.matrix_to_quat)
        att = _core.matrix_quaternions(att.reshape(n, 3, 3).T).T
    parts = _variational_parts(req.sensitivities, info, user, quadrature, req.name,
                               _without_derivatives(req, tq, info))
    ncol = variational_columns(parts, 0 if terms[0, 0] == _sn.TORQUE_NONE else terms.shape[0])
    if max(n, 1) * nsteps > 1 << 16:
        # (the times are kept for an empty batch too)
        # a kept state: m, the attitude, the wheels' momenta and the sensitivities (6 a column)
        check_kept_states(kept_count(nsteps, save_every), n,
                          3 + att.shape[1] + wheel_run.wheel_count + 6 * ncol)
    user_code = 0
    if user is not None:
        user_code = 2 if user.uses_momentum or user.needs_inertia else 1
    # a user torque or law: the whole batch a chunk on one thread (the callable needs the GIL
    # and is called once per stage for the batch)
    chunk, run_threads = (n, 1) if user is not None or user_law is not None else (
        _sn.ENGINE_CHUNK, threads or get_num_threads())
    config = _config((info.family, variant, quadrature, user_code, wheel_run.kind, nsteps,
                      save_every, chunk, run_threads, 1, n, 0, nsteps, int(extremes is None),
                      info.scale_exponent or 0, _kick_order(info, plan) if wheels_active else 2,
                      parts))
    # (in the order of the slots RUN_*)
    # the moments as the loop takes them: one row for all bodies, or one a body
    I_run = I2
    I_given = I2 if I2.shape[0] == n or n == 0 else np.broadcast_to(I2, (n, 3))
    times = np.array((t0, float(h[0]))) if h.shape[0] == 1 else np.concatenate(([t0], h))
    run = Run(route=route, method=info, config=config, plan=plan, torque_terms=terms,
              torque_body=tbody, torque=tq, user=user, m=m2, attitude=att, inertia=I_run, h=h,
              t0=t0, h_given=float(h[0]) if h.size else 0.0, t0_given=t0, nsteps=nsteps,
              save_every=save_every,
              threads=run_threads, progress=progress, single=single, form=form, scaling=None,
              inertia_given=I_given, original=req.attitude,
              label=f"{route.label} {req.name or info.name}", first_work=0,
              engine_inputs=(config, plan.T, terms.T, tbody.T, times, m2.T, att.T, I_run.T),
              longest=longest, wheel_run=wheel_run, variational=parts, ncol=ncol)
    if extremes is not None and rotor_phase > extremes[4]:
        # (the long steps of the exact flows, FIRST_WORK: the gyrostat's phase)
        extremes[4] = rotor_phase
    return run if extremes is None else _checked(run, extremes)


_CONFIGS: dict[tuple[int, ...], NDArray[np.intc]] = {}


def _config(slots: tuple[int, ...]) -> NDArray[np.intc]:
    """The configuration array of these slots, read-only (the usual ones made once)."""
    config = _CONFIGS.get(slots)
    if config is None:
        if len(_CONFIGS) > 1024:
            _CONFIGS.clear()
        config = _CONFIGS[slots] = _read_only(np.array(slots, dtype=np.intc))
    return config


def _checked(run: Run, extremes: NDArray[np.float64]) -> Run:
    """The run of bodies found valid, with their scales ``extremes`` (check_bodies): rescaled
    where the policy says so (frb._scaling), the first call sized for long steps, the compiled
    checks off."""
    config = np.array(run.config)
    config[_sn.RUN_CHECKS - 1] = 0
    first_work = 0      # (FIRST_WORK, read when the run is executed)
    if run.method.family == _sn.FAMILY_EXACT_SPLITTINGS and extremes[4] > LONG_STEP_PHASE:
        first_work = LONG_FIRST_WORK
    wheels_active = run.wheel_run.kind != _sn.WHEEL_LAW_NONE
    m, inertia, h, t0, terms, body = run.m, run.inertia, run.h, run.t0, run.torque_terms, \
        run.torque_body
    form = run.torque.compiled if run.torque is not None else None
    scaling = scaling_of(run.method, run.m, run.inertia, run.h,
                         run.torque is not None or wheels_active, extremes,
                         (form, terms, body if form.body is not None else None)
                         if form is not None else None, run.single, wheels_active)
    if scaling is not None and wheels_active:
        raise ValueError("a run with reaction wheels must be within the scales the methods "
                         f"hold: |m| and the moments of inertia within 2^-{run.method.scale_exponent}"
                         f" .. 2^{run.method.scale_exponent} (choose other units)")
    if scaling is not None:
        m, inertia, h = scaling.momenta(m), scaling.moments(inertia), scaling.time(h)
        t0 = float(scaling.time(np.array([t0]))[0]) if t0 != 0.0 else 0.0
        if form is not None:
            terms, scaled_body = scaling.torque_terms(form, terms,
                                                      body if form.body is not None else None)
            if scaled_body is not None:
                body = scaled_body
    times = np.concatenate(([t0], h))
    config = _read_only(config)
    inputs = (config, run.plan.T, terms.T, body.T, times, m.T, run.attitude.T, inertia.T)
    return run._replace(config=config, torque_terms=terms, torque_body=body, m=m,
                        inertia=inertia, h=h, t0=t0, scaling=scaling, first_work=first_work,
                        engine_inputs=inputs, h_unscaled=run.h if scaling is not None else None)


def gyrostat_phase(tq: Optional[Torque], m: NDArray[np.float64], h: NDArray[np.float64],
                   inertia: NDArray[np.float64]) -> tuple[float, int]:
    """The largest phase ``|h| (|m| + |h_r|) / I_min`` of the gyrostat steps of a run with the
    rotors ``h_r`` of the torque ``tq`` (0.0 without rotors), and the body (0-based) that has it:
    the radians the rigid momentum turns through about the total momentum (its frequency is
    about (|m| + |h_r|) / I_min, not |m| / I_min, for a rotor larger than m), the scale of the
    gyrostat flow's long steps. An upper bound of it (body 0) when that is below
    LONG_STEP_PHASE (all its callers need to know)."""
    hr = getattr(tq, "internal_momentum", None) if tq is not None else None
    if hr is None or m.shape[0] == 0 or not inertia.size:
        return 0.0, 0   # (no rotor)
    smallest = float(inertia.min())
    if not smallest > 0.0:
        return 0.0, 0   # (moments that the checks refuse)
    hmax = float(np.max(np.abs(h)))
    # an upper bound first (|m| + |h_r| <= 2 sqrt(3) times the largest component; no temporary
    # arrays): the phase itself only when it matters
    with np.errstate(all="ignore"):
        bound = hmax * 3.5 * float(max(m.max(), -m.min(), hr.max(), -hr.min())) / smallest
    if bound <= min(LONG_STEP_PHASE, _sn.PHASE_LIMIT):
        return bound, 0
    imin = np.min(inertia, axis=-1)
    steps = np.abs(np.asarray(h, dtype=np.float64)).reshape(-1)
    with np.errstate(all="ignore"):
        g = np.sqrt(np.einsum("ij,ij->i", m, m)) + np.sqrt(np.einsum("...j,...j->...", hr, hr))
        phases = steps * (g / imin)
    if not np.isfinite(phases).all():
        # (g / imin beyond the float64 range: the form of _validate.phase, without overflow)
        phases = _validate.phase(steps, g, imin)
    body = int(np.argmax(phases))
    return float(phases.reshape(-1)[body]), body


def check(run: Run) -> None:
    """The compiled checks of a prepared run's bodies, made now (a route that takes the states
    from the run without running it); ValueError naming the argument."""
    if not run.checked and run.n:
        _check_bodies(run.route, run.m, run.attitude,
                      run.h * run.longest if run.longest != 1.0 else run.h, run.inertia,
                      run.threads, run.single, run.original)


def lean_free_steps(route: Route, method: MethodInfo, m: Any, attitude: Any, h: Any,
                    inertia: Any, quadrature: Any, nsteps: int
                    ) -> tuple[NDArray[np.float64], NDArray[np.float64]] | None:
    """The one-body fast path of the routes of torque-free runs to their final state (frb_step,
    quat_step, dmv_step, dmv_integrate): for one body given as float64 arrays of its shapes, a
    float step, a valid state within the method's scale range, the final state by the lean
    compiled call (with the checks of check_bodies); None for anything else (the route then
    prepares and executes the run, which converts, checks, rescales and names what is
    wrong)."""
    if type(m) is not np.ndarray or type(attitude) is not np.ndarray or \
            type(inertia) is not np.ndarray or type(h) is not float or \
            type(quadrature) is not int or not 0 <= quadrature <= 10 or \
            not 0 <= nsteps <= SINGLE_CALL_WORK:
        return None
    shape = attitude.shape
    if m.shape != (3,) or inertia.shape != (3,) or shape not in route.attitude_shapes or \
            m.dtype is not _FLOAT64 or attitude.dtype is not _FLOAT64 or \
            inertia.dtype is not _FLOAT64:
        return None
    m1, a1, code, status = _core.free_steps_one(method.family, method.variant, quadrature,
                                                nsteps, m, attitude.ravel(), h, inertia)
    if code or status:
        return None
    return m1, a1.reshape(shape)


def _check_bodies(route: Route, m2: NDArray[np.float64], att: NDArray[np.float64],
                  h: NDArray[np.float64], I2: NDArray[np.float64], threads: int, single: bool,
                  original: Any) -> NDArray[np.float64]:
    """The compiled value checks of every body (check_bodies): ValueError naming the route's
    argument and the first invalid body; the scales of the batch (CHECK_EXTREMES) otherwise."""
    extremes = np.empty(_sn.CHECK_EXTREMES)
    code, body, _ = _core.check_bodies(m2.T, att.T, h, I2.T, threads, extremes)
    if code == _sn.INPUT_OK:
        return extremes
    b = max(int(body), 0)
    phase = math.inf
    if code == _sn.BAD_PHASE:
        phase = float(_validate.phase(h[min(b, h.shape[0] - 1)], _validate.norm3(m2[b]),
                                      I2[min(b, I2.shape[0] - 1)].min()))
    raise ValueError(check_message(code, route.names, None if single else b,
                                   plural=route.plural, terse=route.terse,
                                   inertia=I2[min(b, I2.shape[0] - 1)], original=original,
                                   phase=phase))


# ---------------------------------------------------------------------------------------------
# execution

#: Wall time aimed at for one compiled call between two returns to Python (seconds).
TARGET_SECONDS = 0.1
#: Body-steps of the first call of a run (about 0.01 s for DMV6, 0.2 s for the slowest methods);
#: the later calls are sized from the measured speed of the previous ones.
FIRST_WORK = 1 << 16
#: A run of at most WHOLE_RUNS times FIRST_WORK body-steps that calls no Python is one compiled
#: call (checks included), not a first call and a short second one: every call is a parallel
#: loop whose threads wait for each other at its end, which under load costs a thread's delay.
WHOLE_RUNS = 2
#: A block of bodies has at least this many chunks per thread, so that every thread has work in
#: every call.
CHUNKS_PER_THREAD = 4
#: Largest growth of the work of a call over the previous one.
MAX_GROWTH = 4.0
#: Body-steps of a one-body torque-free run made by the lean call (about 0.05 s of DMV steps).
SINGLE_CALL_WORK = 1 << 21
#: The first call's body-steps of a run of the exact flows with long steps (beyond
#: LONG_STEP_PHASE radians they run in quadruple precision, about 0.1 ms a body-step).
LONG_FIRST_WORK = _sn.LONG_RUN_WORK
LONG_STEP_PHASE = _sn.LONG_STEP_THRESHOLD

#: ``advance(b_first, b_last, k_first, k_last)`` of :func:`in_segments`: None, or a failure
#: tuple ordered by (step, body, ...).
Advance = Callable[[int, int, int, int], Optional[Tuple[Any, ...]]]


def execute(run: Run) -> Outcome:
    """The kept states of a prepared run (the only caller of the compiled time loop). Raises
    ValueError for an invalid body (when the compiled loop checks them) and the exception of a
    user torque; a failure of a step is returned in the Outcome."""
    n, natt = run.n, run.natt
    wheel_run = run.wheel_run
    nk = kept_count(run.nsteps, run.save_every)
    m_out = np.empty((nk, n, 3))
    att_out = np.empty((nk, n, natt))
    active = wheel_run.kind != _sn.WHEEL_LAW_NONE
    h_out = np.empty((nk, n, wheel_run.wheel_count)) if active else _NO_H_OUT
    # the kept variational states (nk, n, ncol 6): the Fortran (6 ncol, n, nk), passed flat (no
    # reals without)
    vs_out = np.empty((nk, n, run.ncol * _sn.VARIATIONAL_ROWS))
    if n == 0:
        return Outcome(m_out, att_out, None, None if wheel_run.wheels is None else
                       np.empty((nk, 0, wheel_run.wheels.count)), _variational_back(run, vs_out))
    cb: Any = _TorqueCallback(run) if run.user is not None else _no_torque
    lcb: Any = _LawCallback(run) if wheel_run.user is not None else _no_law
    outs = (m_out, att_out, h_out, vs_out)
    fail = _run_engine(run, outs, cb, lcb)
    if fail is not None and fail[2] in (_sn.INFO_BAD_INPUT, _sn.INFO_RESCALE, _sn.INFO_LONG_RUN):
        # the checks of the compiled loop: an invalid body, scales to rescale, or long steps to
        # run in segments
        h = run.h * run.longest if run.longest != 1.0 else run.h
        run = _checked(run, _check_bodies(run.route, run.m, run.attitude, h, run.inertia,
                                          run.threads, run.single, run.original))
        fail = _run_engine(run, outs, cb, lcb)
    for callback in (cb, lcb):
        if getattr(callback, "error", None) is not None:
            raise callback.error
    failure_error = None
    if fail is not None:
        step, body, status = fail
        failure_error = failure(run.method.name, int(status), int(step), int(body) - 1, run.single)
    if run.scaling is not None:
        beyond = run.scaling.first_beyond(m_out, run.m)
        if beyond is not None:
            # a momentum grown beyond the float64 range in the user's units (finite in the
            # run's): the run fails at that kept state's step, as an unscaled run's overflow
            step = int(kept_steps(run.nsteps, run.save_every)[beyond[0]])
            if failure_error is None or failure_error.step > step:
                failure_error = failure(run.method.name, _sn.INFO_NON_FINITE, step, beyond[1],
                                        run.single)
        m_out = run.scaling.momenta_back(m_out, run.route.names["m"], run.single,
                                         failed=failure_error is not None)
    h_kept: Optional[NDArray[np.float64]] = h_out if active else None
    if wheel_run.wheels is not None and not active:
        # wheels without a law keep their momenta
        h_kept = np.broadcast_to(wheel_run.h0, (nk,) + wheel_run.h0.shape)
    return Outcome(m_out, att_out, failure_error, h_kept, _variational_back(run, vs_out))


def _variational_back(run: Run, vs_out: NDArray[np.float64]) -> Optional[NDArray[np.float64]]:
    """The kept variational states (K, n, 6, ncol) of a run in the user's units, or None for a
    run without: a run rescaled by m -> 2^ka m, I -> 2^kb I, t -> 2^(kb - ka) t (frb._scaling)
    has the momentum rows 2^-ka times the run's, and the columns of m0 2^ka, of h 2^(kb - ka),
    of the moments 2^kb and of a torque parameter 2^(a ka + b kb) (its PARAMETER_SCALES)."""
    if not run.variational:
        return None
    s = np.swapaxes(vs_out.reshape(vs_out.shape[:2] + (run.ncol, _sn.VARIATIONAL_ROWS)), -1, -2)
    sc = run.scaling
    if sc is None or not run.ncol:
        return s
    ka, kb = sc.ka[:, 0], sc.kb[:, 0]
    rows = np.zeros((ka.shape[0], 6), dtype=ka.dtype)
    rows[:, :3] = -ka[:, None]
    cols = []
    parts = run.variational
    if parts & _sn.VARIATIONAL_STATE:
        cols += [ka] * 3 + [0 * ka] * 3
    if parts & _sn.VARIATIONAL_H:
        cols += [kb - ka]
    if parts & _sn.VARIATIONAL_INERTIA:
        cols += [kb] * 3
    form = run.torque.compiled if run.torque is not None else None
    if parts & _sn.VARIATIONAL_TORQUE and form is not None:
        for kind in form.kinds:
            cols += [a * ka + b * kb for a, b in PARAMETER_SCALES[kind]]
    # (the power of two of each entry applied at once: its factors apart may overflow where
    # their product does not; a derivative beyond the float64 range is infinite)
    exponents = rows[:, :, None] + np.stack(cols, axis=-1)[:, None, :]
    with np.errstate(over="ignore"):
        return np.ldexp(s, exponents[None])


def _run_engine(run: Run, outs: tuple[NDArray[np.float64], ...], cb: Any, lcb: Any
                ) -> tuple[int, int, int] | None:
    """The compiled loop over the whole run, in segments (in_segments) from the initial state:
    the state is carried between them and the kept states written into outs (m_out, att_out,
    h_out, vs_out) in place. Returns None, or (step, body 1-based, status) of the earliest failure."""
    n = run.n
    m_out, att_out, h_out, vs_out = outs
    user = run.user is not None or run.wheel_run.user is not None
    active = run.wheel_run.kind != _sn.WHEEL_LAW_NONE
    wheel_inputs = run.wheel_run.inputs if active else _NO_WHEEL_ARRAYS
    if not run.checked or run.nsteps == 0 or not (user or run.progress) and n * run.nsteps <= \
            (run.first_work or WHOLE_RUNS * FIRST_WORK):
        # a short run is one call (what in_segments would make of it), with no state carried;
        # also a run of no step, whose call writes the initial state
        status, fail_step, fail_body = _core.engine_whole(*run.engine_inputs, m_out=m_out.T,
                                                          att_out=att_out.T, h_out=h_out.T,
                                                          vs_out=vs_out.reshape(-1), **wheel_inputs)
        return (fail_step, fail_body, status) if status else None
    compiled = _core.engine_segment_gil if user else _core.engine_segment
    config = np.array(run.config)
    inputs = (config, *run.engine_inputs[1:])
    state = dict(m_out=m_out.T, att_out=att_out.T, h_out=h_out.T, vs_out=vs_out.reshape(-1),
                 cb=cb, lcb=lcb, **wheel_inputs)
    # the state between segments, of no body while every call takes its bodies through all the
    # steps: arrays of n bodies allocated and freed by every run make glibc give its heap back
    # to the system, and the next run's kept states are then fresh pages to fault in
    state.update(_carried(run, 0, h_out.shape[2] if active else 0))

    def advance(b_first: int, b_last: int, k_first: int, k_last: int
                ) -> tuple[int, int, int] | None:
        config[_sn.RUN_FIRST_BODY - 1] = b_first + 1
        config[_sn.RUN_LAST_BODY - 1] = b_last
        config[_sn.RUN_FIRST_STEP - 1] = k_first
        config[_sn.RUN_LAST_STEP - 1] = k_last
        if (k_first > 0 or k_last < run.nsteps) and state["m"].size != 3 * n:
            state.update(_carried(run, n, h_out.shape[2] if active else 0))
        status, fail_step, fail_body = compiled(*inputs, **state)
        return (fail_step, fail_body, status) if status else None

    return in_segments(advance, run.nsteps, n, align=int(run.config[_sn.RUN_CHUNK - 1]),
                       split_bodies=not user, threads=run.threads, progress=run.progress,
                       label=run.label, first_work=run.first_work or None)


def _carried(run: Run, bodies: int, wheels: int) -> dict[str, NDArray[np.float64]]:
    """The state carried between the compiled calls of a run, for bodies 0 or run.n bodies (the
    compiled loop's m, att, ws, vs flat, hw (wheels, bodies)); wheels: the wheels' count (0: no
    wheel law, whose hw is not read)."""
    hw = np.empty((bodies, wheels)) if wheels else np.zeros((1, 1))
    return dict(m=np.empty(bodies * 3), att=np.empty(bodies * run.natt),
                ws=np.empty(bodies * _sn.NWS), hw=hw.T,
                vs=np.empty(bodies * run.ncol * _sn.VARIATIONAL_ROWS))


def in_segments(advance: Advance, nsteps: int, n: int, *, align: int = 1,
                split_bodies: bool = True, threads: int = 1, progress: bool = False,
                label: str = "frb", first_work: int | None = None) -> tuple[Any, ...] | None:
    """Run steps 1..nsteps of n bodies through ``advance(b_first, b_last, k_first, k_last)``,
    which takes the steps ``k_first + 1 .. k_last`` of the bodies ``b_first .. b_last - 1``
    (0-based) in one compiled call and returns None, or on failure a tuple ordered by
    (step, body, ...).

    The bodies go in blocks (multiples of ``align`` bodies, at least CHUNKS_PER_THREAD times
    ``align`` per thread, only with ``split_bodies``), each block through all its steps before
    the next one, in calls of about TARGET_SECONDS: Python runs between them, so Ctrl-C stops a
    run within a fraction of a second and a progress bar is updated. After a failure at step s
    the later blocks run up to step s - 1 only (a failure there would come earlier), so the
    failure returned is the earliest (smallest step, then smallest body), whatever the blocks
    and calls. ``first_work``: the body-steps of the first call (default FIRST_WORK)."""
    if first_work is None:
        first_work = FIRST_WORK
    if not progress and 0 < n * nsteps <= first_work:
        return advance(0, n, 0, nsteps)
    bar = Progress(progress, nsteps, n, label)
    try:
        work = float(first_work)     # body-steps of the next call
        limit = nsteps               # steps every block must reach (lowered by a failure)
        found = None
        smallest = align * max(1, CHUNKS_PER_THREAD * threads)
        b0 = 0
        while b0 < n and limit > 0:
            block = max(smallest, int(work // limit) // align * align) if split_bodies else n
            b1 = min(n, b0 + block)
            k = 0
            while k < limit:
                ns = int(max(1, min(limit - k, work // (b1 - b0))))
                start = time.perf_counter()
                fail = advance(b0, b1, k, k + ns)
                elapsed = time.perf_counter() - start
                done = float(b1 - b0) * ns
                bar.update(done)
                # the next call's work from this one's speed (at most MAX_GROWTH times more)
                rate = done / max(elapsed, 1e-6)
                work = max(1.0, min(rate * TARGET_SECONDS, MAX_GROWTH * max(work, done)))
                if fail is not None:
                    found = fail if found is None else min(found, fail)
                    limit = fail[0] - 1
                    break
                k += ns
            b0 = b1
        return found
    finally:
        bar.close()


class _TorqueCallback:
    """The f2py call-back of a torque without a compiled form (a user torque, or a subclass of a
    built-in one): calls it once per stage for the batch and checks its result. An exception
    (from the torque, from the checks, or KeyboardInterrupt) is kept and the torque returned as
    NaN, so that the compiled loop stops at the end of that step (a non-finite state);
    :func:`execute` then raises the kept exception. (Raising through the call-back would make
    f2py unwind the Fortran frames and print to stderr.)"""

    def __init__(self, run: Run) -> None:
        torque = run.user
        assert torque is not None
        function = torque.function if isinstance(torque, UserTorque) else torque
        self.torque: Callable[..., Any] = function
        #: the momenta are passed (a torque of m), and the moments (a torque that needs them)
        self.momentum = torque.uses_momentum
        # the moments as the user gave them (the run's units are undone for the torque)
        self.inertia = run.inertia_given if torque.needs_inertia else None
        self.method = run.method.name
        self.label = getattr(function, "__name__", None) or repr(function)
        self.error: BaseException | None = None
        # powers of two of a rescaled run: the loop's time, torque and momenta in those units
        self.exponents = run.scaling.exponents if run.scaling is not None else None
        self.single = run.single

    def __call__(self, nb: int, t: float, step: int, qt: NDArray[np.float64],
                 m: NDArray[np.float64], tb: NDArray[np.float64]) -> NDArray[np.float64]:
        if self.error is None:
            try:
                tb.T[...] = self._evaluate(nb, t, step, qt, m)
                return tb
            except BaseException as exc:  # noqa: BLE001 - re-raised by execute
                self.error = exc
        tb[...] = np.nan
        return tb

    def _evaluate(self, nb: int, t: float, step: int, qt: NDArray[np.float64],
                  m: NDArray[np.float64]) -> NDArray[np.float64]:
        torque, method, label = self.torque, self.method, self.label
        # bodies whose state the steps made non-finite (an overflow): the torque sees a rest
        # state there and gives them NaN, so that the loop stops with its IntegrationError (the
        # built-in terms would refuse a non-finite Q or m as if the user had given it)
        diverged = ~np.isfinite(qt).all(axis=(0, 1))
        if self.inertia is not None or self.momentum:
            diverged |= ~np.isfinite(m).all(axis=0)
        if diverged.any():
            qt = qt.copy()
            qt[:, :, diverged] = np.eye(3)[:, :, None]
            m = m.copy()
            m[:, diverged] = 0.0
        Q = qt.T  # (n, 3, 3), Q[j] the attitude of body j
        Q.flags.writeable = False
        if self.exponents is not None:
            t = math.ldexp(t, self.exponents[0])
        try:
            if self.inertia is not None or self.momentum:
                mb = m.T if self.exponents is None else np.ldexp(m.T, self.exponents[2])
                mb.flags.writeable = False
                if self.inertia is not None:
                    res = torque(t, Q, mb, inertia=self.inertia)
                else:
                    res = torque(t, Q, mb)
            else:
                res = torque(t, Q)
        except ValueError as exc:
            if "read-only" in str(exc):
                raise ValueError(f"torque {label} (method {method}, step {step}) must not modify "
                                 f"{'Q or m' if self.momentum else 'Q'} in place; return a new "
                                 f"array ({exc})") from exc
            raise
        if res is None:
            raise TypeError(f"torque {label} (method {method}, step {step}) returned None "
                             f"instead of an array of shape ({nb}, 3)")
        try:
            # (booleans or bytes in a list, masked entries: TypeError; objects read as numbers)
            arr = _validate.returned(res, f"torque {label} (method {method}, step {step})")
        except TypeError:
            raise
        except Exception as exc:  # pragma: no cover
            raise ValueError(f"torque {label} (method {method}, step {step}) returned "
                             f"something that is not an array: {exc}") from None
        if arr.dtype.kind not in "iuf" or arr.dtype == bool:
            raise TypeError(f"torque {label} (method {method}, step {step}) must return real "
                             f"numbers, got dtype {arr.dtype}")
        if arr.shape == (3,) and nb == 1:
            arr = arr.reshape(1, 3)
        if arr.shape != (nb, 3):
            raise ValueError(f"torque {label} (method {method}, step {step}) must return an "
                             f"array of shape ({nb}, 3), got {arr.shape}")
        bad = ~np.isfinite(arr).all(axis=1) & ~diverged
        if bad.any():
            raise ValueError(f"torque {label} (method {method}, step {step}) returned a "
                             "non-finite torque" + ("" if self.single else
                                                    f" for body {int(np.argmax(bad))}"))
        if self.exponents is not None:
            arr = np.ldexp(arr, self.exponents[1])
        if diverged.any():
            arr = np.array(arr, dtype=np.float64)
            arr[diverged] = np.nan
        return arr


def _no_torque(nb: int, t: float, step: int, qt: NDArray[np.float64], m: NDArray[np.float64],
               tb: NDArray[np.float64]
               ) -> NDArray[np.float64]:  # pragma: no cover - never called for built-in torques
    return tb


class _LawCallback:
    """The f2py call-back of a wheel law evaluated from Python (a user law): calls it once per
    stage for the batch and checks its result (shape (N, nw), finite reals); an exception is
    kept and the torques returned as NaN, as :class:`_TorqueCallback` does."""

    def __init__(self, run: Run) -> None:
        law = run.wheel_run.user
        assert law is not None
        self.law = law.function
        self.method = run.method.name
        self.label = law.name
        self.error: BaseException | None = None
        self.single = run.single

    def __call__(self, nb: int, nw: int, t: float, step: int, qt: NDArray[np.float64],
                 m: NDArray[np.float64], hw: NDArray[np.float64], u: NDArray[np.float64]
                 ) -> NDArray[np.float64]:
        if self.error is None:
            try:
                u.T[...] = self._evaluate(nb, nw, t, step, qt, m, hw)
                return u
            except BaseException as exc:  # noqa: BLE001 - re-raised by execute
                self.error = exc
        u[...] = np.nan
        return u

    def _evaluate(self, nb: int, nw: int, t: float, step: int, qt: NDArray[np.float64],
                  m: NDArray[np.float64], hw: NDArray[np.float64]) -> NDArray[np.float64]:
        where = f"wheel_law {self.label} (method {self.method}, step {step})"
        Q, mb, hb = qt.T, m.T, hw.T
        for a in (Q, mb, hb):
            a.flags.writeable = False
        try:
            res = self.law(t, Q, mb, hb)
        except ValueError as exc:
            if "read-only" in str(exc):
                raise ValueError(f"{where} must not modify Q, m or h in place; return a new "
                                 f"array ({exc})") from exc
            raise
        if res is None:
            raise TypeError(f"{where} returned None instead of an array of shape ({nb}, {nw})")
        arr = _validate.returned(res, where)
        if arr.dtype.kind not in "iuf" or arr.dtype == bool:
            raise TypeError(f"{where} must return real numbers, got dtype {arr.dtype}")
        if arr.shape != (nb, nw):
            raise ValueError(f"{where} must return an array of shape ({nb}, {nw}) (one torque a "
                             f"wheel of each body), got {arr.shape}")
        if not np.isfinite(arr).all():
            bad = ~np.isfinite(arr).all(axis=1)
            raise ValueError(f"{where} returned a non-finite torque" + (
                "" if self.single else f" for body {int(np.argmax(bad))}"))
        return arr


def _no_law(nb: int, nw: int, t: float, step: int, qt: NDArray[np.float64],
            m: NDArray[np.float64], hw: NDArray[np.float64], u: NDArray[np.float64]
            ) -> NDArray[np.float64]:  # pragma: no cover - never called for compiled laws
    return u


_NO_WHEEL_INPUTS: Mapping[str, NDArray[np.float64]] = {}
_NO_WHEELS = WheelRun(None, None, _sn.WHEEL_LAW_NONE, None, _NO_WHEEL_INPUTS, np.zeros((0, 0)))
#: the wheel inputs of the compiled loop for a run without wheel states (not read)
_NO_WHEEL_ARRAYS: Mapping[str, NDArray[np.float64]] = {"wheels": _NO_WHEEL_AXES, "law": _NO_LAW,
                                                        "h0": _NO_H}
#: the kept wheel momenta of a run without wheel states (not written), as (K, n, nw)
_NO_H_OUT = np.zeros((1, 1, 1))


def free_flow(m: NDArray[np.float64], Q: NDArray[np.float64], tau: float,
              inertia: NDArray[np.float64], quadrature: int
              ) -> tuple[NDArray[np.float64], NDArray[np.float64], int]:
    """The exact (or semi-exact) free flow of one body over the time tau (m (3,), Q (3, 3)
    C-ordered, inertia (3,)): the lean call of :func:`execute`, for the loop of
    :func:`frb.splitting.integrate` that alternates it with a user's torque flow. Returns
    (m, Q, check code: INPUT_OK or what is wrong with the state)."""
    m1, a1, code, _ = _core.free_steps_one(_sn.FAMILY_EXACT_SPLITTINGS, _sn.VARIANT_EXACT,
                                           quadrature, 1, m, Q.reshape(9), tau, inertia)
    return m1, a1.reshape(3, 3), int(code)


# ---------------------------------------------------------------------------------------------
# the derivatives of a step

class StepJacobian(NamedTuple):
    """One step of each body of a run with its derivatives, in the user's units: the state
    after the step, m (n, 3) and attitude (n, natt), that of :func:`execute` bit for bit; the
    state transition matrices (n, 6, 6) and the derivatives in h (n, 6), rows and columns in the
    order (dm, dtheta) (frb.derivatives)."""

    m: NDArray[np.float64]
    attitude: NDArray[np.float64]
    state: NDArray[np.float64]
    h: NDArray[np.float64]


def _valid(run: Run) -> Run:
    """The run with its bodies checked (ValueError naming the route's argument) and rescaled as
    :func:`execute` would run it."""
    if run.checked or not run.n:
        return run
    h = run.h * run.longest if run.longest != 1.0 else run.h
    return _checked(run, _check_bodies(run.route, run.m, run.attitude, h, run.inertia,
                                       run.threads, run.single, run.original))


def _times_power(x: NDArray[np.float64], run: Run, a: int, b: int) -> NDArray[np.float64]:
    """x (n, i, j) times 2^(a ka + b kb) of each body of a rescaled run (the factor of a
    derivative of a quantity of units m^a' I^b' ..., see :func:`jacobian`), exactly (ldexp: no
    factor that overflows on its own; a derivative beyond the float64 range is infinite)."""
    assert run.scaling is not None
    e = a * run.scaling.ka + b * run.scaling.kb
    with np.errstate(over="ignore"):
        return np.ldexp(x, e[:, :, None])


def _moments_of_bodies(run: Run) -> NDArray[np.float64]:
    """The run's moments (n, 3), one row a body (the loop's shared row repeated)."""
    return np.ascontiguousarray(np.broadcast_to(run.inertia, (run.n, 3)))


def jacobian(run: Run) -> StepJacobian:
    """The step of a prepared run of one step of EXACT with its state transition matrix and its
    derivative in h (the compiled flow_jacobian: the state after the step is that of
    :func:`execute` bit for bit). Checks the bodies first (ValueError naming the argument)."""
    run = _valid(run)
    n, natt = run.n, run.natt
    if n == 0:
        return StepJacobian(np.empty((0, 3)), np.empty((0, natt)), np.empty((0, 6, 6)),
                            np.empty((0, 6)))
    # the state, Phi and d/dh of each body, their rescaled copies, and d/dI when it is read
    check_kept_states(1, n, 2 * (3 + natt + 42) + 18, remedy="derive fewer bodies at a time",
                      what="the steps and their derivatives")
    quadrature = int(run.config[_sn.RUN_QUADRATURE - 1])
    m1, a1, phit, dh, status = _core.flow_jacobian(run.m.T, run.attitude.T, run.h,
                                                   _moments_of_bodies(run).T, quadrature,
                                                   run.threads)
    if status != _sn.INFO_OK:   # pragma: no cover - sizes made here
        raise RuntimeError(f"flow_jacobian: status {status}")
    # (C-ordered (n, 6, 6), (n, 3), (n, natt), (n, 6) seen through .T: no copy)
    m1, a1, state, dh = m1.T, a1.T, phit.T, dh.T
    lost = _time_underflows(run)
    if lost is not None:
        # the derivatives of the bodies whose rescaled step left the normal range, from the
        # bodies as given (the compiled step rescales small momenta itself): exact powers of two
        # of the rescaled run's with the step's rounding, in place of those
        m0, a0, h0, i0 = _unscaled(run, lost)
        _, _, phit2, dh2, _ = _core.flow_jacobian(m0, a0, h0, i0, quadrature, run.threads)
    if run.scaling is not None:
        # m = 2^-ka m', t = 2^(ka - kb) t': dm/dtheta and dtheta/dm scale by 2^-+ka, d/dh by
        # 2^(kb - 2 ka) (momenta) and 2^(kb - ka) (angles)
        m1 = run.scaling.momenta_back(m1[None], run.route.names["m"], run.single)[0]
        state[:, :3, 3:] = _times_power(state[:, :3, 3:], run, -1, 0)
        state[:, 3:, :3] = _times_power(state[:, 3:, :3], run, 1, 0)
        dh[:, :3] = _times_power(dh[:, :3, None], run, -2, 1)[:, :, 0]
        dh[:, 3:] = _times_power(dh[:, 3:, None], run, -1, 1)[:, :, 0]
    if lost is not None:
        state[lost] = phit2.T
        dh[lost] = dh2.T
    names = run.route.names
    for part, value in (("the state", state), (names["h"], dh)):
        if not np.isfinite(value).all():
            raise ValueError(f"the derivative of the step with respect to {part} is beyond the "
                             f"float64 range for these values of {names['m']}, {names['h']} and "
                             "inertia (the step itself is finite: frb_step / quat_step without "
                             "jacobian=True)")
    return StepJacobian(m1, a1, state, dh)


def _time_underflows(run: Run) -> Optional[NDArray[np.intp]]:
    """The bodies of a rescaled run whose rescaled step (h 2^(kb - ka)) is below the normal
    range while the step given is not (its rounding would reach the derivatives), or None."""
    if run.scaling is None or run.h_unscaled is None:
        return None
    h = np.broadcast_to(run.h, (run.n,))
    given = np.broadcast_to(run.h_unscaled, (run.n,))
    tiny = np.finfo(np.float64).tiny
    lost = np.flatnonzero((np.abs(h) < tiny) & (np.abs(given) >= tiny))
    return lost if lost.size else None


def _unscaled(run: Run, bodies: NDArray[np.intp]
              ) -> tuple[NDArray[np.float64], NDArray[np.float64], NDArray[np.float64],
                         NDArray[np.float64]]:
    """(m.T, attitude.T, h, moments.T) of these bodies of a rescaled run as given."""
    assert run.scaling is not None and run.h_unscaled is not None
    ka = np.broadcast_to(run.scaling.ka, (run.n, 1))[bodies]
    kb = np.broadcast_to(run.scaling.kb, (run.n, 1))[bodies]
    m = np.ldexp(run.m[bodies], -ka)
    inertia = np.ldexp(_moments_of_bodies(run)[bodies], -kb)
    h = np.ascontiguousarray(np.broadcast_to(run.h_unscaled, (run.n,))[bodies])
    return m.T, run.attitude[bodies].T, h, inertia.T


def inertia_jacobian(run: Run) -> NDArray[np.float64]:
    """The derivatives (n, 6, 3) of the step of each body of a prepared run of one step of
    EXACT with respect to its three moments, in the user's units (the compiled
    flow_inertia_jacobian)."""
    run = _valid(run)
    n = run.n
    if n == 0:
        return np.empty((0, 6, 3))
    quadrature = int(run.config[_sn.RUN_QUADRATURE - 1])
    di, status = _core.flow_inertia_jacobian(run.m.T, run.h, _moments_of_bodies(run).T,
                                             quadrature, run.threads)
    if status != _sn.INFO_OK:   # pragma: no cover - sizes made here
        raise RuntimeError(f"flow_inertia_jacobian: status {status}")
    di = np.ascontiguousarray(di.transpose(2, 0, 1))
    if run.scaling is not None:
        di[:, :3] = _times_power(di[:, :3], run, -1, 1)
        di[:, 3:] = _times_power(di[:, 3:], run, 0, 1)
    lost = _time_underflows(run)
    if lost is not None:
        m, _, h, inertia = _unscaled(run, lost)
        di2, _ = _core.flow_inertia_jacobian(m, h, inertia, quadrature, run.threads)
        di[lost] = di2.transpose(2, 0, 1)
    return di


_ZEROS3 = _read_only(np.zeros(3))
_ONES3 = _read_only(np.ones(3))


def is_rotation_matrix(Q: NDArray[np.float64]) -> bool:
    """True when Q (float64 (3, 3)) is a rotation within the attitude tolerance: the compiled
    check of the attitudes (check_bodies), about 1 us where numpy's takes 15."""
    code, _, _ = _core.check_bodies(_ZEROS3.reshape(3, 1), Q.reshape(9, 1), np.zeros(1),
                                    _ONES3.reshape(3, 1), 1, np.empty(_sn.CHECK_EXTREMES))
    return code == _sn.INPUT_OK
