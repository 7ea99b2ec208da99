"""The messages of frb's failures in one place: the check codes of the compiled input checks,
the phase limit, the failures of a step (:class:`IntegrationError`), the warning of a built-in
torque or wheel law that a run must evaluate from Python (:class:`NotCompiledWarning`).

Every route names its own arguments in these messages (``m0`` or ``m``, ``attitude0``, ``Q`` or
``q``) and the body of a batch (0-based), through the ``names`` and ``body`` of
:func:`check_message`.
"""
from __future__ import annotations

import math
import re
from typing import Mapping

import numpy as np
from numpy.typing import ArrayLike

from . import _numbers_table as _sn

__all__ = ["IntegrationError", "NotCompiledWarning", "check_message", "phase_message",
           "low_precision_hint", "failure", "step_renamed"]

#: Tolerance of the attitude checks (the shared ``ATTITUDE_TOLERANCE``).
ORTHOGONALITY_TOLERANCE: float = _sn.ATTITUDE_TOLERANCE
#: Longest step of the exact flows: ``|h| |m| / I_min`` at most this (radians).
PHASE_LIMIT: float = _sn.PHASE_LIMIT


class IntegrationError(RuntimeError):
    """A step failed: an implicit equation did not converge, had no solution, or the state
    became non-finite. ``method``, ``step`` (1-based) and ``body`` (0-based) say where.
    (Public as ``frb.IntegrationError``; raised by :func:`frb.integrate` and the compiled loop of
    :func:`frb.splitting.integrate`.)"""

    method: str
    step: int
    body: int

    def __init__(self, message: str, method: str, step: int, body: int) -> None:
        super().__init__(message)
        self.method = method
        self.step = step
        self.body = body

    # pickles with its attributes (errors travel from dask workers)
    def __reduce__(self) -> tuple[type[IntegrationError], tuple[str, str, int, int]]:
        return type(self), (str(self), self.method, self.step, self.body)


class NotCompiledWarning(UserWarning):
    """A run evaluates from Python, once per stage, a torque or a wheel law made of built-in
    ones (which are otherwise compiled into the time loop): correct, but many times slower. The
    message says why (a sum of more terms than the compiled loop holds, a subclass of a
    built-in torque, a reference quaternion given as a Python function of time) and how to stay
    compiled. (Public as ``frb.NotCompiledWarning``.)"""




def low_precision_hint(value: ArrayLike) -> str:
    """A hint for an attitude that failed the 1e-10 check because it was rounded to float32 or
    float16 (empty for float64 input)."""
    try:
        dtype = np.asarray(value).dtype
    except Exception:  # pragma: no cover - the value was converted once already
        return ""
    if dtype.kind == "f" and dtype.itemsize < 8:
        eps = float(np.finfo(dtype).eps)
        return (f"; the input is {dtype} (rounding about {eps:.0e}, far above the tolerance "
                f"{ORTHOGONALITY_TOLERANCE:g}): convert it to float64 and re-normalise it, e.g. "
                "q / np.linalg.norm(q), or for a matrix frb.quat_to_matrix(frb.matrix_to_quat(Q)) "
                "computed in float64")
    return ""




def phase_message(name_h: str, phase: float, body: str = "", name_m: str = "m") -> str:
    """The message of a step beyond :data:`PHASE_LIMIT` (``name_h``, ``name_m``: the names of
    the step and of the momentum in the caller's route)."""
    size = f"= {phase:.3g} exceeds" if np.isfinite(phase) else "is beyond the float64 range, above"
    return (f"{name_h} is too long{body}: |h| |m| / I_min {size} {PHASE_LIMIT:.0e} "
            "radians, where quadruple precision (34 digits) leaves no correct digit of the angle "
            "the body turns through (the result would be an arbitrary point of the orbit); check "
            f"the units of {name_h.split(' ')[0]}, {name_m} and inertia")


def per_body_torque_message(shown_torque: str, given: int, n: int) -> str:
    """The message of a torque whose per-body parameters do not match the run's bodies."""
    return (f"torque {shown_torque}: its per-body parameters are given for {given} bodies, the "
            f"run has {n}")


def gyrostat_phase_message(name_h: str, phase: float, name_m: str = "m",
                           body: int | None = None, wheels: bool = False) -> str:
    """The message of a gyrostat step beyond :data:`PHASE_LIMIT` (its phase counts the rotor's
    momentum ``h_r``, frb.torques.rotor, and that of wheels without a law, ``A h0``); ``body``
    (0-based) names the body of a batch."""
    size = f"= {phase:.3g} exceeds" if np.isfinite(phase) else "is beyond the float64 range, above"
    where = f" (body {body})" if body is not None else ""
    rotor = ("the wheels' momenta A h0 of wheels= and the torque's rotors" if wheels else
             "the rotor's momentum of the torque")
    what = "the wheels' h0" if wheels else "the rotor"
    return (f"{name_h} is too long for the gyrostat{where}: |h| (|m| + |h_r|) / I_min {size} "
            f"{PHASE_LIMIT:.0e} radians (h_r {rotor}), where quadruple "
            f"precision (34 digits) leaves no correct digit of the motion; check the units of "
            f"{name_h}, {name_m}, {what} and inertia")


#: The argument of each check code's message (``check_message``'s ``names`` maps these roles to
#: the names of the route's arguments).
_CODE_ROLE = {_sn.BAD_M: "m", _sn.BAD_H: "h", _sn.BAD_INERTIA_VALUE: "inertia",
              _sn.BAD_INERTIA_SIGN: "inertia", _sn.BAD_ATTITUDE_VALUE: "attitude",
              _sn.BAD_ROTATION: "attitude", _sn.BAD_QUATERNION: "attitude", _sn.BAD_PHASE: "h"}
_DEFAULT_NAMES = {"m": "m", "h": "h", "inertia": "inertia"}


def check_message(code: int, names: Mapping[str, str] | None = None, body: int | None = None, *,
                  original: ArrayLike | None = None, phase: float = math.inf,
                  plural: bool = False, terse: bool = False,
                  inertia: ArrayLike | None = None) -> str:
    """The ValueError message of a check code of the compiled checks (``BAD_M`` ... ``BAD_PHASE``
    of :mod:`frb._numbers_table`), naming the argument and the body; ``""`` for ``INPUT_OK``.

    ``names`` maps the roles ``"m"``, ``"h"``, ``"inertia"``, ``"attitude"`` to the argument
    names of the route (defaults ``m``, ``h``, ``inertia``, and ``Q`` for ``BAD_ROTATION``, ``q``
    for ``BAD_QUATERNION``, ``attitude`` for ``BAD_ATTITUDE_VALUE``), e.g. ``{"m": "m0",
    "attitude": "attitude0"}``. ``body``: the 0-based body of a batch (`` (body k)``; None or
    negative for none). ``original``: the attitude as given, for the hint of an attitude
    rounded to float32 (``BAD_ROTATION``, ``BAD_QUATERNION``). ``phase``: ``|h| |m| / I_min``
    of the step, for ``BAD_PHASE`` (inf: beyond the float64 range). ``plural``: the batch
    wording of the attitude checks ("must be rotation matrices"). ``terse``: the short wording
    ("m0 must be finite", "inertia must be positive, got [...]", with ``inertia`` the
    moments as given)."""
    code = int(code)
    if code == _sn.INPUT_OK:
        return ""
    role = _CODE_ROLE.get(code)
    if role is None:
        raise ValueError(f"unknown check code {code}")
    default = {_sn.BAD_ROTATION: "Q", _sn.BAD_QUATERNION: "q"}.get(code, "attitude")
    name = (names or {}).get(role) or _DEFAULT_NAMES.get(role, default)
    where = f" (body {body})" if body is not None and body >= 0 else ""
    if code == _sn.BAD_PHASE:
        return phase_message(name, phase, where,
                             (names or {}).get("m") or _DEFAULT_NAMES.get("m", "m"))
    tol = ORTHOGONALITY_TOLERANCE
    if code == _sn.BAD_ROTATION:
        text = ("must be rotation matrices" if plural else "must be a rotation matrix") + \
            f" (Q^T Q = 1 within {tol}, det Q = +1)"
    elif code == _sn.BAD_QUATERNION:
        text = ("must be unit quaternions" if plural else "must be a unit quaternion") + \
            f", scalar first (|q| = 1 within {tol})"
    elif terse:
        text = "must be finite" if code != _sn.BAD_INERTIA_SIGN else \
            f"must be positive, got {np.asarray(inertia).tolist()}"
    elif code == _sn.BAD_INERTIA_SIGN:
        text = "must contain strictly positive moments of inertia"
    else:
        text = "contains non-finite values (NaN or infinity)"
    hint = low_precision_hint(original) if original is not None and code in (
        _sn.BAD_ROTATION, _sn.BAD_QUATERNION) else ""
    return f"{name} {text}{where}{hint}"


def failure(method: str, status: int, step: int, body: int, single: bool) -> IntegrationError:
    """The :class:`IntegrationError` of a step that failed with the info code ``status`` (of the
    shared numbers) at ``step`` (1-based) for ``body`` (0-based; not named when ``single``)."""
    where = f"step {step}" + ("" if single else f", body {body}")
    if status == _sn.INFO_NO_CONVERGENCE:
        msg = (f"method {method}: the implicit equation of {where} did not converge "
               f"(Newton's method, tolerance {_sn.NEWTON_RTOL:.1e} relative, "
               f"{_sn.NEWTON_MAX_ITER} iterations); try a smaller step h")
    elif status == _sn.INFO_NO_SOLUTION:
        msg = (f"method {method}: the implicit equation of {where} has no solution (the step h "
               "is too large for the angular velocity)")
    elif status == _sn.INFO_NON_FINITE:
        msg = (f"method {method}: the state became non-finite at {where} (overflow, or for the "
               f"exact flows |m| grown until a step turns the body by more than "
               f"{PHASE_LIMIT:.0e} radians)")
    elif status == _sn.INFO_NOT_IMPLEMENTED:
        raise NotImplementedError(f"method {method} is not available in this build")
    else:
        raise RuntimeError(f"method {method}: the compiled loop reported the code {status} at "
                           f"{where} (arrays of the wrong sizes: a bug of frb)")
    return IntegrationError(msg, method, step, body)


def step_renamed(exc: Exception, step: str) -> Exception:
    """``exc`` (a ValueError or an :class:`IntegrationError` of a route, which names the step
    ``h``) with the step named as the caller's user gave it, ``step`` (``dt``, ``t_final / n``);
    the formula ``|h| |m| / I_min`` is left as it is."""
    text = re.sub(r"(^|[\s(])h\b(?![\w(|])", lambda g: g.group(1) + step, str(exc))
    if isinstance(exc, IntegrationError):
        return IntegrationError(text, exc.method, exc.step, exc.body)
    return type(exc)(text)
