"""One compiled, batched entry point for every integrator of the field.

:func:`integrate` validates the input, picks the method's family (one Fortran module per
method family: ``fortran/exact_splittings.f90``, ``approximate_free_flows.f90``,
``runge_kutta.f90``, ``lie_stormer_verlet.f90``, ``midpoint_trapezoid.f90``) and runs the one
compiled time loop (``fortran/engine.f90``) over the whole batch. :func:`frb.splitting.integrate`,
:func:`frb.dmv_step` and :func:`frb.dmv_integrate` are thin wrappers over the same loop.

Equations: ``m' = m x I^-1 m + T_b(t, Q)``, ``Q' = Q hat(I^-1 m)``; ``m`` the body angular
momentum, ``I`` the principal moments, ``Q`` the attitude (columns = body axes in the fixed
frame), ``T_b`` the body torque (:mod:`frb.torques`). Quaternions are **scalar first**,
``q = (q0, q1, q2, q3)``, ``Q = E(q)`` (scipy's ``Rotation`` is scalar last).

The loop holds the attitude as a unit quaternion (scalar first); a matrix ``attitude0`` is converted on entry
and the trajectory converted back on demand (``Trajectory.Q``).
"""
from __future__ import annotations

import functools
import math
from dataclasses import dataclass
from typing import Any, Callable, Literal, NoReturn, Union

import numpy as np
from numpy.typing import ArrayLike, NDArray

from . import _core, _engine, _segments
# the numbers shared with the compiled loop (frb._numbers_table): method families, torque
# kinds, info codes
from ._numbers_table import (
    FAMILY_EXACT_SPLITTINGS as _CZ, FAMILY_APPROXIMATE_FREE_FLOWS as _VILMART,
    FAMILY_RUNGE_KUTTA as _GANAPATHI, FAMILY_LIE_STORMER_VERLET as _TERZE,
    FAMILY_MIDPOINT_TRAPEZOID as _KRYSL,
    TORQUE_NONE as _T_NONE, TORQUE_TERM_REALS, TORQUE_BODY_REALS,
    INFO_NO_CONVERGENCE as _INFO_NO_CONVERGENCE, INFO_NON_FINITE as _INFO_NON_FINITE,
    INFO_NO_SOLUTION as _INFO_NO_SOLUTION, INFO_NOT_IMPLEMENTED as _INFO_NOT_IMPLEMENTED,
    BAD_QUATERNION, BAD_ROTATION)
from . import _numbers_table as _sn
from . import schedules
from . import _validate
from ._validate import IntegrationError
from .threads import resolve as _resolve_threads, get_num_threads
from .flows import ORTHOGONALITY_TOLERANCE
from .rotations import is_rotation, matrix_to_quat_unchecked, quat_to_matrix_unchecked
from .torques import (BODY_SCALES, PARAMETER_SCALES, ConstantField, LinearDamping, Torque,
                      UserTorque, as_torque)
from .inertia import tensor_frame, tensor_kinetic_energy

__all__ = ["integrate", "Trajectory", "IntegrationError", "METHODS", "MethodInfo"]


#: Bodies stepped together by the compiled loop when the torque is built in (a user torque
#: runs the whole batch together, so that it is called once per stage).
CHUNK = 64
# the per-body workspace of the compiled loop (reals)
_WORKSPACE = int(_engine.engine_workspace())
#: Newton tolerance of the implicit methods (4 eps, shared with the compiled loop): the
#: iteration stops when the update is at most this times the size of the unknown.
NEWTON_RTOL: float = _sn.NEWTON_RTOL
#: Iteration cap of the implicit methods (50, shared with the compiled loop).
NEWTON_MAX_ITER: int = _sn.NEWTON_MAX_ITER

#: A torque of :func:`integrate`: a :class:`frb.torques.Torque` (built in, or made by
#: :func:`frb.torques.as_torque`), or a vectorised callable ``torque(t, Q) -> T_b`` (``Q`` of
#: shape (N, 3, 3), ``T_b`` of shape (N, 3)), wrapped into one.
TorqueLike = Union[Torque, Callable[..., ArrayLike]]

#: The torque classes of a method that takes any torque, of NYSTROM4 (the flow of the modified
#: potential {U, {U, T}} is known for the field torques only), and of the free flow EXACT.
ANY_TORQUE: tuple[type, ...] = (Torque,)
FIELD_TORQUES: tuple[type, ...] = (ConstantField,)
NO_TORQUE: tuple[type, ...] = ()
#: EXACT: linear damping alone (its exact flow is a time change of the free flow).
DAMPING_ONLY: tuple[type, ...] = (LinearDamping,)


@dataclass(frozen=True)
class MethodInfo:
    """What :func:`integrate` knows of a method: its reference, order and properties.

    ``torques`` lists the torque classes the method takes (``()``: torque-free only);
    :meth:`accepts` tells whether a given torque is one of them."""

    name: str
    family: int
    variant: int
    reference: str
    order: int | None
    implicit: bool
    conserves: str
    description: str
    torques: tuple[type, ...] = ANY_TORQUE
    #: why the method takes only the torques above (the end of its refusal message)
    torque_note: str = ""
    #: whether it takes torques of the angular momentum (``torque(t, Q, m)``, damping, rotors,
    #: attitude control), and its order with them (None with ``momentum``: exact)
    momentum: bool = False
    momentum_order: int | None = None

    def accepts(self, torque: Any) -> bool:
        """True when the method takes ``torque`` (None, a Torque or a plain callable)."""
        if torque is None:
            return True
        tq = as_torque(torque)
        if tq is None or not isinstance(tq, self.torques):
            return tq is None
        return self.momentum or not tq.uses_momentum

    def refusal(self, torque: Any) -> str:
        """Why the method does not take ``torque`` (for its ValueError)."""
        tq = as_torque(torque)
        if tq is not None and isinstance(tq, self.torques) and tq.uses_momentum:
            return (f"method {self.name} does not take torques of the angular momentum "
                    f"({tq!r}): use STRANG, YOSHIDA4, RK4 or a DMV method")
        return f"method {self.name} {self.torque_note}"


def _m(name: str, family: int, variant: int, reference: str, order: int | None, implicit: bool,
       conserves: str, description: str, torques: tuple[type, ...] = ANY_TORQUE,
       torque_note: str = "", momentum: bool = False, momentum_order: int | None = None
       ) -> tuple[str, MethodInfo]:
    return name, MethodInfo(name, family, variant, reference, order, implicit, conserves,
                            description, torques, torque_note, momentum, momentum_order)


_CZ2010 = "Celledoni and Zanna 2010 (ACM TOMS Algorithm 903)"
_V2013 = "Vilmart 2013, Rigid body dynamics"
_K2008 = "Krysl 2008"
#: The methods of :func:`integrate` (case-insensitive names).
METHODS: dict[str, MethodInfo] = dict([
    _m("EXACT", _CZ, 0, _CZ2010 + ", the exact flow", None, False, "|m|, E, Qm (exact flow)",
       "one exact free flow a step (torque-free bodies, or linear damping alone: the free flow "
       "in the time (1 - e^{-ch}) / c, m scaled by e^{-ch}, exact)", DAMPING_ONLY,
       "is the exact flow: it takes no torque but linear_damping (use STRANG, RKN6_14 or "
       "another method for a torqued body)", True),
    _m("STRANG", _CZ, 1, _CZ2010 + ", splitting with the exact free flow", 2, False,
       "|m|, Qm (torque-free: exact)",
       "A(h/2) B(h) A(h/2), A the exact free flow, B the exact flow of the torque (Q fixed)",
       momentum=True, momentum_order=2),
    _m("RKN6_14", _CZ, 1, "Blanes and Moan 2002, RKN6 of 14 stages; " + _CZ2010 + ", eq. (23)",
       6, False, "|m|, Qm (torque-free: exact)",
       "14-stage sixth-order splitting, A exact free flow (order 6 for torques of Q only: its "
       "coefficients assume a kick that does not depend on m: order 4 measured with torques of m)",
       momentum=True, momentum_order=4),
    _m("YOSHIDA4", _CZ, 1, "Yoshida 1990 (triple jump of Strang); " + _CZ2010 + ", splitting "
       "with the exact free flow", 4, False, "|m|, Qm (torque-free: exact)",
       "S(g1 h) S(g2 h) S(g1 h), S = STRANG, g1 = 1 / (2 - 2^(1/3)), g2 = 1 - 2 g1: order 4 "
       "also for torques of m", momentum=True, momentum_order=4),
    _m("DMV2", _VILMART, 2, "Moser and Veselov 1991; " + _V2013 + ", Algorithm 3 (eq. (16) with "
       "a torque)", 2, True, "|m|, E, Qm (torque-free); vertical Qm (heavy top)",
       "discrete Moser-Veselov; with a torque the free part of Strang eq. (16)",
       momentum=True, momentum_order=2),
    *(_m(f"DMV{p}", _VILMART, p, "Hairer and Vilmart 2006; " + _V2013 + ", Algorithm 4, Table 1",
         p, True, "|m|, E, Qm (torque-free); vertical Qm (heavy top)",
         f"preprocessed DMV of order {p} (order 2 with a torque: free part of Strang eq. (16))",
         momentum=True, momentum_order=2)
      for p in (4, 6, 8)),
    _m("SPLIT3", _VILMART, 10, _V2013 + ", splitting into three rotations (symmetric "
       "composition)", 2, False, "|m|, Qm (torque-free; not E); vertical Qm (heavy top)",
       "R3(h/2) R2(h/2) R1(h) R2(h/2) R3(h/2); with a torque the free part of Strang eq. (16)",
       momentum=True, momentum_order=2),
    _m("SYMROT", _VILMART, 11, _V2013 + ", Algorithm 2 (with alpha, beta corrected)", 2,
       False, "|m|, Qm (torque-free; not E); exact for I1 = I2 or I2 = I3, not I1 = I3",
       "symmetric + rotation splitting R(h/2) S(h) R(h/2) (axis 3 the symmetric axis); with a "
       "torque the free part of Strang eq. (16)", momentum=True, momentum_order=2),
    _m("MIDPOINT", _VILMART, 12, _V2013 + ", Remark 4", 2, True,
       "all quadratic invariants: |m|, E, Qm, Q^T Q (torque-free)",
       "implicit midpoint rule (Newton); with a torque the free part of Strang eq. (16)",
       momentum=True, momentum_order=2),
    _m("NYSTROM4", _VILMART, 13, _V2013 + ", fourth-order Nystrom splitting (flow of the "
       "modified potential corrected)", 4, False,
       "|m| of the free part; Qm (vertical) for the heavy top",
       "U(h/6) T(h/2) U(2h/3) V(-h^3/72) T(h/2) U(h/6), T the exact free flow", FIELD_TORQUES,
       "needs the flow of the modified potential {U,{U,T}}: it supports torque=None, "
       "constant_field and heavy_top only"),
    _m("RK4", _GANAPATHI, 1, "Ganapathi 2005, sections 3.1-3.4 and 7 (q' = q (0, omega) / 2; the "
       "torque at every stage)", 4, False,
       "|q| = 1 by renormalisation only (no invariant exact; not symmetric)",
       "classical RK4 on (q, omega); the torque at the normalised stage quaternion",
       momentum=True, momentum_order=4),
    _m("TERZE", _TERZE, 1, "Terze, Mueller and Zlatar 2015 (explicit Lie-group Stormer-Verlet "
       "scheme)", 2, False, "Qm, |m| (torque-free); (Qm)_z for the heavy top; not E; not "
       "symmetric", "explicit Lie-group Stormer-Verlet type scheme (one torque evaluation a step)"),
    # Krysl 2008: variant, name, where in the paper, conserved quantities, the step
    *(_m(name, _KRYSL, variant, _K2008 + where, 2, True, conserves, step)
      for variant, (name, where, conserves, step) in enumerate([
          ("TRAP", ", eq. (14)", "the 'midpoint' energy E(m - h/2 w x m) (torque-free)",
           "trapezoidal: fE(h/2) then bE(h/2)"),
          ("IMID", ", algorithm IMID (torque at t + h/2)", "E, |m| (torque-free)",
           "midpoint: bE(h/2) then fE(h/2)"),
          ("TRAPM", ", eq. (20)", "Qm (torque-free); vertical Qm (heavy top)",
           "momentum trapezoidal: (18)(h/2) then (19)(h/2)"),
          ("IMIDM", ", algorithm IMIDM", "Qm (torque-free); vertical Qm (heavy top)",
           "momentum midpoint: (19)(h/2) then (18)(h/2)"),
          ("SWC1", ", SWC1 (Simo and Wong 1991, ALGO_C1)",
           "E, Qm (torque-free); vertical Qm (heavy top)",
           "Simo-Wong energy-momentum; T_{n-1/2} = T(t + h/2, R exp[Psi/2]) (frb's choice)"),
          ("AKW", ", AKW (Austin, Krishnaprasad and Wang 1993; Cayley map of h omega / 2)",
           "E, Qm (torque-free); E and vertical Qm (heavy top)",
           "Austin-Krishnaprasad-Wang implicit midpoint"),
          ("BBTRAP", ", BBTRAP (Bottasso and Borri 1998)",
           "E, Qm (torque-free); vertical Qm (heavy top)", "Bottasso-Borri trapezoidal, dexp^-1 ~ 1"),
          ("BBTRAPWD", ", BBTRAPWD (Bottasso and Borri 1998)",
           "Qm (torque-free); vertical Qm (heavy top); not symmetric",
           "Bottasso-Borri trapezoidal with dexp^-1"),
      ], start=1)),
])

#: A splitting of the exact free flow with the user's coefficients (``coefficients=(a, b)``).
SPLITTING = MethodInfo("SPLITTING", _CZ, 1, _CZ2010 + ", splitting with the exact free flow",
                       None, False, "", "user splitting coefficients", momentum=True)


class Trajectory:
    """Result of :func:`integrate`.

    Attributes
    ----------
    t : ndarray, shape (K,)
        Times of the saved states.
    m : ndarray, shape (K, 3) or (K, N, 3)
        Body angular momentum.
    q : ndarray, shape (K, 4) or (K, N, 4)
        Attitude as unit quaternions, scalar first (converted on demand if a matrix was given).
    Q : ndarray, shape (K, 3, 3) or (K, N, 3, 3)
        Attitude as rotation matrices (converted on demand if a quaternion was given).
    form : {"quaternion", "matrix"}
        The form ``attitude0`` was given in; ``attitude`` returns that form.
    method : str
        The method's name.
    inertia : ndarray, shape (3,), (N, 3), (3, 3) or (N, 3, 3)
        The principal moments, or the inertia tensors (in the frame of ``m`` and the attitude).
    """

    t: NDArray[np.float64]
    m: NDArray[np.float64]
    form: str
    method: str
    inertia: NDArray[np.float64]
    torque: TorqueLike | None

    def __init__(self, t: NDArray[np.float64], m: NDArray[np.float64],
                 q: NDArray[np.float64] | None, form: str, method: str,
                 inertia: NDArray[np.float64], torque: TorqueLike | None,
                 Q: NDArray[np.float64] | None = None) -> None:
        self.t = t
        self.m = m
        self._q = q
        self._Q = Q
        self.form = form
        self.method = method
        self.inertia = inertia
        self.torque = torque

    @property
    def q(self) -> NDArray[np.float64]:
        if self._q is None:
            assert self._Q is not None
            self._q = matrix_to_quat_unchecked(self._Q)
        return self._q

    @property
    def Q(self) -> NDArray[np.float64]:
        if self._Q is None:
            assert self._q is not None
            self._Q = quat_to_matrix_unchecked(self._q)
        return self._Q

    @property
    def attitude(self) -> NDArray[np.float64]:
        return self.Q if self.form == "matrix" else self.q

    @property
    def kinetic_energy(self) -> NDArray[np.float64]:
        """``sum m_j^2 / (2 I_j)`` at the saved states (``dot(m, J^-1 m) / 2`` for tensors)."""
        if self.inertia.ndim == self.m.ndim:    # inertia tensors (3, 3) or (N, 3, 3)
            return tensor_kinetic_energy(self.m, self.inertia)
        return 0.5 * np.sum(self.m**2 / self.inertia, axis=-1)

    @property
    def potential_energy(self) -> NDArray[np.float64]:
        """The torque's potential at the saved states (zero for a free body); raises
        ValueError, saying so, for a torque without a potential (gravity gradient, damping,
        attitude control, a user torque)."""
        if self.torque is None:
            return np.zeros(self.t.shape + self.m.shape[1:-1])
        # a Torque says whether it has one; a plain callable may bring a potential(Q) method
        tq = self.torque
        if isinstance(tq, Torque) and not tq.has_potential or \
                not callable(getattr(tq, "potential", None)):
            raise ValueError(f"the torque {self.torque!r} has no potential energy, so the "
                             "trajectory has no total energy (kinetic plus potential): "
                             "kinetic_energy gives the kinetic energy")
        return tq.potential(self.Q)  # type: ignore[union-attr]

    @property
    def energy(self) -> NDArray[np.float64]:
        """Total energy, kinetic plus the torque's potential (the kinetic energy of a free
        body); ValueError, saying so, for a torque without a potential
        (:attr:`kinetic_energy` is always there)."""
        return self.kinetic_energy + self.potential_energy

    @property
    def spatial_momentum(self) -> NDArray[np.float64]:
        """``Q m`` at the saved states; ``Q (m + h)`` with rotors of internal momentum ``h``
        (:func:`frb.torques.rotor`), the conserved total."""
        h = getattr(self.torque, "internal_momentum", None)
        return np.einsum("...ij,...j->...i", self.Q, self.m if h is None else self.m + h)

    def __repr__(self) -> str:
        n = "1 body" if self.m.ndim == 2 else f"{self.m.shape[1]} bodies"
        return (f"<Trajectory {self.method}: {n}, {len(self.t)} states, "
                f"t = {self.t[0]:g} .. {self.t[-1]:g}, attitude as {self.form}>")


def _real_array(x: ArrayLike, name: str, item_ndim: int = 1) -> NDArray[np.float64]:
    return _validate.real_array(x, name, item_ndim=item_ndim)


def _int_arg(x: Any, name: str, low: int, high: int = 2**31 - 1) -> int:
    if type(x) is int and low <= x <= high:
        return x
    return _validate.integer(x, name, low, high)


def _method(method: str | None, coefficients: tuple[ArrayLike, ArrayLike] | None
            ) -> tuple[str, MethodInfo, tuple[tuple[float, ...], tuple[float, ...]] | None]:
    if coefficients is None and isinstance(method, str):
        try:
            return _named_method(method)
        except KeyError:
            pass        # reported below
    if coefficients is not None:
        a, b = schedules.coefficients(None, coefficients)
        return "SPLITTING", SPLITTING, (a, b)
    if method is None:
        raise TypeError("integrate() needs method= (one of " + ", ".join(METHODS)
                        + ") or coefficients=(a, b)")
    raise ValueError(f"method must be one of {', '.join(METHODS)}, got {method!r}")


@functools.lru_cache(maxsize=64)
def _named_method(method: str
                  ) -> tuple[str, MethodInfo, tuple[tuple[float, ...], tuple[float, ...]] | None]:
    """_method of a valid name (cached: a call of integrate looks it up once)."""
    name = method.upper()
    return name, METHODS[name], schedules.SPLITTING_METHODS.get(name)


def _read_only(a: NDArray[Any]) -> NDArray[Any]:
    a.flags.writeable = False
    return a


# the flows of a step without a schedule (kinds, fractions), and the parameters of no torque:
# inputs of the compiled loop, which only reads them (made once, read-only)
_ONE_FREE_FLOW = (_read_only(np.zeros(1, dtype=np.intc)), _read_only(np.ones(1)))
#: The compiled torque arguments of a run without a built-in torque: kinds, parameters
#: (TORQUE_TERM_REALS, 1), per-body parameters (TORQUE_BODY_REALS, 1).
_NO_TORQUE_KINDS = _read_only(np.array([_T_NONE], dtype=np.intc))
_NO_TORQUE_PARAMETERS = _read_only(np.zeros((1, TORQUE_TERM_REALS)))
_NO_TORQUE_BODY = _read_only(np.zeros((1, TORQUE_BODY_REALS)))


def _scaled_form(form: Any, ka: int, kb: int) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """The parameters and per-body parameters of a compiled torque in the units of a rescaled
    run (momenta times 2**ka, moments times 2**kb; frb.torques.PARAMETER_SCALES)."""
    par = np.array(form.parameters)
    for i, kind in enumerate(form.kinds):
        for j, (a, b) in enumerate(PARAMETER_SCALES[kind]):
            par[i, j] = math.ldexp(par[i, j], a * ka + b * kb)
    body = form.body
    if body is not None:
        a, b = BODY_SCALES[form.kinds[form.body_term]]
        body = np.ldexp(body, a * ka + b * kb)
    return par, body


class _TorqueCallback:
    """The f2py call-back of a torque without a compiled form (a user torque, or a subclass of a
    built-in one): calls torque(t, Q) once for the batch and checks
    its result. An exception (from the torque, from the checks, or KeyboardInterrupt) is kept
    and the torque returned as NaN, so that the compiled loop stops at the end of that step
    (a non-finite state); integrate then raises the kept exception. (Raising through the
    call-back would make f2py unwind the Fortran frames and print to stderr.)"""

    def __init__(self, torque: Torque, method: str,
                 inertia: NDArray[np.float64] | None = None) -> None:
        function = torque.function if isinstance(torque, UserTorque) else torque
        self.torque: Callable[..., Any] = function
        #: the momenta are passed (a torque of m), and the moments (a torque that needs them)
        self.momentum = torque.uses_momentum
        self.inertia = inertia if torque.needs_inertia else None
        self.momentum_exp: int | None = None
        self.method = method
        self.label = getattr(function, "__name__", None) or repr(function)
        self.error: BaseException | None = None
        # powers of two of a rescaled run (_scale_of): the loop's time and torque in those units
        self.time_exp: int | None = None
        self.torque_exp: int | None = None

    def __call__(self, nb: int, t: float, step: int, qt: NDArray[np.float64],
                 m: NDArray[np.float64], tb: NDArray[np.float64]) -> NDArray[np.float64]:
        if self.error is None:
            try:
                tb.T[...] = self._evaluate(nb, t, step, qt, m)
                return tb
            except BaseException as exc:  # noqa: BLE001 - re-raised by integrate
                self.error = exc
        tb[...] = np.nan
        return tb

    def _evaluate(self, nb: int, t: float, step: int, qt: NDArray[np.float64],
                  m: NDArray[np.float64]) -> NDArray[np.float64]:
        torque, method, label = self.torque, self.method, self.label
        Q = qt.T  # (n, 3, 3), Q[j] the attitude of body j
        Q.flags.writeable = False
        if self.time_exp is not None:
            t = math.ldexp(t, self.time_exp)
        try:
            if self.inertia is not None or self.momentum:
                mb = m.T if self.momentum_exp is None else np.ldexp(m.T, self.momentum_exp)
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
            raise ValueError(f"torque {label} (method {method}, step {step}) returned None "
                             f"instead of an array of shape ({nb}, 3)")
        try:
            arr = np.asarray(res)
        except Exception as exc:  # pragma: no cover
            raise ValueError(f"torque {label} (method {method}, step {step}) returned "
                             f"something that is not an array: {exc}") from None
        if arr.dtype.kind not in "iuf" or arr.dtype == bool:
            raise ValueError(f"torque {label} (method {method}, step {step}) must return real "
                             f"numbers, got dtype {arr.dtype}")
        if arr.shape == (3,) and nb == 1:
            arr = arr.reshape(1, 3)
        if arr.shape != (nb, 3):
            raise ValueError(f"torque {label} (method {method}, step {step}) must return an "
                             f"array of shape ({nb}, 3), got {arr.shape}")
        if not np.isfinite(arr).all():
            bad = ~np.isfinite(arr).all(axis=1)
            raise ValueError(f"torque {label} (method {method}, step {step}) returned a "
                             f"non-finite torque for body {int(np.argmax(bad))}")
        if self.torque_exp is not None:
            arr = np.ldexp(arr, self.torque_exp)
        return arr


def _no_torque(nb: int, t: float, step: int, qt: NDArray[np.float64], m: NDArray[np.float64],
               tb: NDArray[np.float64]
               ) -> NDArray[np.float64]:  # pragma: no cover - never called for built-in torques
    return tb


#: The names of integrate's arguments in the messages of the input checks.
_NAMES = {"m": "m0", "attitude": "attitude0"}


def _attitude(attitude0: ArrayLike, single: bool, n: int, matrices: bool
              ) -> tuple[str, NDArray[np.float64]]:
    """(form, attitudes of the engine): unit quaternions (n, 4), or for a method that holds
    matrices (``matrices``) and rotation matrices given, the matrices as (n, 9)."""
    a = _validate.real_array(attitude0, "attitude0", finite=False)
    if not np.isfinite(a).all():
        item = 2 if a.shape[-2:] == (3, 3) and a.ndim == (2 if single else 3) else 1
        raise ValueError("attitude0 contains non-finite values (NaN or infinity)"
                         + _validate.first_nonfinite(a, item))
    if a.shape[-1:] == (4,) and a.ndim == (1 if single else 2) and (single or a.shape[0] == n):
        q = a.reshape(-1, 4)
        if np.abs(np.sqrt(np.sum(q * q, axis=1)) - 1.0).max(initial=0.0) > ORTHOGONALITY_TOLERANCE:
            bad = int(np.argmax(np.abs(np.sqrt(np.sum(q * q, axis=1)) - 1.0)))
            raise ValueError(_validate.check_message(BAD_QUATERNION, _NAMES, None if single else bad,
                                                     plural=True, original=attitude0))
        return "quaternion", np.ascontiguousarray(q)
    if a.shape[-2:] == (3, 3) and a.ndim == (2 if single else 3) and (single or a.shape[0] == n):
        Q = a.reshape(-1, 3, 3)
        if not is_rotation(Q):
            bad = next(j for j in range(Q.shape[0]) if not is_rotation(Q[j:j + 1]))
            raise ValueError(_validate.check_message(BAD_ROTATION, _NAMES, None if single else bad,
                                                     plural=True, original=attitude0))
        if matrices:
            return "matrix", np.ascontiguousarray(Q).reshape(-1, 9)
        return "matrix", np.ascontiguousarray(matrix_to_quat_unchecked(Q))
    want = "(4,) or (3, 3)" if single else f"({n}, 4) or ({n}, 3, 3)"
    raise ValueError(f"attitude0 must have shape {want}, got {a.shape}")


_FLOAT64 = np.dtype(np.float64)


def _as_shape(x: ArrayLike, name: str, shapes: tuple[tuple[int, ...], ...]
              ) -> NDArray[np.float64] | None:
    """x as a float64 array if its shape is one of shapes, else None. A float64 ndarray is
    taken as it is (its values are checked by _one_body); anything else goes through
    _real_array (the type rules and finiteness check of the general path)."""
    if type(x) is not np.ndarray or x.dtype is not _FLOAT64:
        x = _real_array(x, name)
    return x if x.shape in shapes else None


def _one_body(m0: ArrayLike, attitude0: ArrayLike, inertia: ArrayLike, matrices: bool
              ) -> tuple[NDArray[np.float64], str, NDArray[np.float64], NDArray[np.float64]] | None:
    """(m2, form, q2, I2) of integrate for one body (m0 (3,), attitude0 (4,) or (3, 3), inertia
    (3,)); q2 the matrix as (1, 9) when ``matrices`` (see _attitude): the set-up of the general path, with the value checks in one compiled call
    (checks, those of frb.quat_step / frb.frb_step) instead of numpy passes over tiny
    arrays; None for anything else (the general path then validates and reports). Raises the
    general path's messages, in its order (m0, attitude0, inertia)."""
    m = _as_shape(m0, "m0", ((3,),))
    if m is None:
        return None
    a = _as_shape(attitude0, "attitude0", ((4,), (3, 3)))
    if a is None:
        return None
    I = _as_shape(inertia, "inertia", ((3,),))
    if I is None:
        return None
    quaternion = a.shape == (4,)
    if quaternion:
        code = _core.check_single_quat(m, a, I, ORTHOGONALITY_TOLERANCE)
    elif matrices:
        code = _core.check_single_matrix(m, a, I, ORTHOGONALITY_TOLERANCE)
        q = np.ascontiguousarray(a).reshape(9)
    else:   # (and the quaternion of the matrix, that of matrix_to_quat bit for bit)
        code, q = _core.check_single_matrix_quat(m, a, I, ORTHOGONALITY_TOLERANCE)
    if code:
        raise ValueError(_validate.check_message(code, _NAMES, plural=True, original=attitude0))
    # (1, 3) and (1, 4) views: the compiled loop copies an input that is not contiguous
    if quaternion:
        return m[None], "quaternion", a[None], I[None]
    return m[None], "matrix", q[None], I[None]


def integrate(m0: ArrayLike, attitude0: ArrayLike, inertia: ArrayLike, h: float, nsteps: int, *,
              method: str | None = None, torque: TorqueLike | None = None,
              save_every: int | Literal["final"] | None = 1,
              coefficients: tuple[ArrayLike, ArrayLike] | None = None, quadrature: int = 0,
              threads: int | None = None, progress: bool = False, t0: float = 0.0
              ) -> Trajectory:
    """Integrate one or many (torqued) rigid bodies with any method of the field.

    Parameters
    ----------
    m0 : array_like, shape (3,) or (N, 3)
        Initial body angular momentum.
    attitude0 : array_like, shape (4,), (N, 4), (3, 3) or (N, 3, 3)
        Initial attitude: unit quaternions (scalar first, ``|q| = 1`` within 1e-10) or rotation
        matrices (columns = body axes in the fixed frame).
    inertia : array_like, shape (3,), (N, 3), (3, 3), (1, 3, 3) or (N, 3, 3)
        Principal moments of inertia, positive, in any order; or inertia tensors, symmetric
        positive definite, in the body frame of ``attitude0``: (3, 3) for all bodies (for
        exactly N = 3 bodies (3, 3) is the moments of each body: give a shared tensor as
        (1, 3, 3)), (N, 3, 3) one per body. ``m0``, the attitude, the torque and the trajectory
        stay in that frame; the run is made in the principal frame (:mod:`frb.inertia`), at no
        cost per step except for a torque that must then be called from Python (a user
        torque, or a built-in one with a tensor per body).
    h : float
        Step length (negative integrates backwards).
    nsteps : int
        Number of steps, ``0 <= nsteps < 2**31``.
    method : str
        Case-insensitive name, one of :data:`METHODS` (``frb.engine.METHODS[name]`` gives
        its reference, order and properties).
    torque : None, a torque of :mod:`frb.torques`, or callable ``torque(t, Q) -> T_b``
        ``None`` for a free body. A callable receives ``Q`` of shape ``(N, 3, 3)`` and returns
        ``(N, 3)``; it is called once per stage for the whole batch.
    save_every : int, None or "final"
        Keep the states after the steps ``0, save_every, 2 save_every, ...`` and always the last;
        ``None`` (or ``"final"``) keeps the final state only (K = 1), so that a long run of a
        large batch needs memory for its current state only.
    coefficients : pair of sequences, optional
        ``(a, b)``, the first half of a symmetric splitting of the exact free flow and the torque
        kick (see :mod:`frb.splitting`); replaces ``method``.
    quadrature : int
        Free flows of the exact-flow splittings: 0 exact, ``1..10`` Gauss-Legendre nodes.
    threads : int, optional
        Threads sharing the chunks of bodies (default: :func:`frb.get_num_threads`); the
        results are the same bit for bit for every count. A user torque runs on one thread
        (the Python callable needs the GIL; it is called once per stage for the whole batch).
    progress : bool
        Show a progress bar (tqdm when installed, else a line on stderr).
    t0 : float
        The time of the initial state: the states are at ``t0 + k h`` and a time-dependent
        torque sees those times (a run continued from another).

    Returns
    -------
    Trajectory
        ``t`` (K,), ``m`` (K, 3) or (K, N, 3), ``q`` / ``Q`` and ``attitude`` in the form given.

    Notes
    -----
    The compiled loop is entered in segments of about 0.1 s of work (of steps, and of bodies for
    a batch whose single step takes longer), the state carried between them: Ctrl-C stops a
    run within a fraction of a second (KeyboardInterrupt), and the results are those of an
    uninterrupted loop bit for bit. The compiled work releases the GIL (except with a user
    torque).

    Raises
    ------
    TypeError, ValueError
        Invalid arguments, or a user torque whose result is not a finite (N, 3) array (the
        message names the torque, the method and the step).
    IntegrationError
        An implicit step did not converge (within :data:`NEWTON_MAX_ITER` iterations to
        :data:`NEWTON_RTOL`), had no solution, or the state became non-finite; the message
        names the method, the step and the body.

    Examples
    --------
    A heavy top by the sixth-order splitting RKN6_14, 1000 bodies, every 100th state kept:

    >>> import numpy as np
    >>> import frb
    >>> from frb.torques import heavy_top
    >>> m0 = np.random.default_rng(0).normal(size=(1000, 3))
    >>> q0 = np.tile([1.0, 0.0, 0.0, 0.0], (1000, 1))
    >>> tr = frb.integrate(m0, q0, [0.8, 1.1, 1.7], 0.05, 400, method="RKN6_14",
    ...                    torque=heavy_top(1.0, [0.0, 0.0, 1.0]), save_every=100)
    >>> tr.t
    array([ 0.,  5., 10., 15., 20.])
    >>> tr.m.shape, tr.Q.shape
    ((5, 1000, 3), (5, 1000, 3, 3))
    >>> bool(np.abs(tr.energy[-1] - tr.energy[0]).max() < 1e-6)
    True
    """
    frame = tensor_frame(inertia, m0)
    if frame is not None:   # inertia tensors: the run in their principal frame (frb.inertia)
        return frame.integrate(integrate, m0, attitude0, h, nsteps, method=method, torque=torque,
                               save_every=save_every, coefficients=coefficients,
                               quadrature=quadrature, threads=threads, progress=progress,
                               t0=t0)
    name, info, coef = _method(method, coefficients)
    # the exact-flow splittings hold a matrix attitude as a matrix (the free flow of frb.frb_step,
    # so that frb.splitting.integrate, repeated frb.frb_step and this agree bit for bit)
    matrices = info.family == _CZ
    one = _one_body(m0, attitude0, inertia, matrices)
    if one is not None:
        single, n = True, 1
        m2, form, q2, I2 = one
    else:
        m = _real_array(m0, "m0")
        if m.ndim not in (1, 2) or m.shape[-1] != 3:
            raise ValueError(f"m0 must have shape (3,) or (N, 3), got {m.shape}")
        single = m.ndim == 1
        m2 = np.ascontiguousarray(m.reshape(-1, 3))
        n = m2.shape[0]
        form, q2 = _attitude(attitude0, single, n, matrices)
        I = _real_array(inertia, "inertia")
        if I.shape == (3,):
            I2 = np.broadcast_to(I, (n, 3))
        elif not single and I.shape == (n, 3):
            I2 = I
        else:
            want = "(3,)" if single else f"(3,) or ({n}, 3)"
            raise ValueError(f"inertia must have shape {want}, got {I.shape}")
        if not (I2 > 0).all():
            bad = "" if single else f" (body {int(np.argmin((I2 > 0).all(axis=1)))})"
            raise ValueError("inertia must contain strictly positive moments of inertia" + bad)
        I2 = np.ascontiguousarray(I2)
    h = _validate.real_scalar(h, "h")
    phase: Any   # a float for one body, an array for a batch
    big_m, i_min, i_max = 0.0, 1.0, 1.0      # (an empty batch)
    if n == 1:   # (Python floats: cheaper than numpy for one body)
        x, y, z = m2.ravel().tolist()
        i1, i2, i3 = I2.ravel().tolist()
        big_m, i_min, i_max = max(x, -x, y, -y, z, -z), min(i1, i2, i3), max(i1, i2, i3)
        phase = _validate.phase_scalar(h, math.hypot(x, y, z), i_min)
        if phase > _validate.PHASE_LIMIT:
            raise ValueError(_validate.phase_message("h", phase, "" if single else " (body 0)"))
    elif n:
        phase = _validate.phase(h, _validate.norm3(m2), I2.min(axis=1))
        if (phase > _validate.PHASE_LIMIT).any():
            b = int(np.argmax(phase > _validate.PHASE_LIMIT))
            raise ValueError(_validate.phase_message("h", float(phase[b]), f" (body {b})"))
        big_m, i_min, i_max = float(np.abs(m2).max()), float(I2.min()), float(I2.max())
    nsteps = _int_arg(nsteps, "nsteps", 0)
    save_every = _segments.save_every_arg(save_every, _int_arg)
    quadrature = _int_arg(quadrature, "quadrature", 0, 10)
    threads = _resolve_threads(threads)
    progress = _segments.check_progress(progress)
    tq = as_torque(torque)
    if tq is not None and not info.accepts(tq):
        raise ValueError(info.refusal(tq))
    check_dmv_inertia(info, I2, single)
    if quadrature and info.family != _CZ:
        raise ValueError(f"quadrature applies to the exact-flow splittings, not to {name}")

    plan = None
    if info.family == _CZ and tq is not None and coef is not None:
        # (EXACT, whose torque is linear damping alone, has no schedule)
        plan = schedules.plan(*coef)[:2]
        if len(plan[1]) > 64:
            raise ValueError("coefficients: at most 64 flows a step")
    if t0 != 0.0 or type(t0) is not float:
        t0 = _validate.real_scalar(t0, "t0")
    t_out, m_out, q_out, failure = run_validated(name, info, m2, q2, I2, h, nsteps, tq, plan,
                                                 save_every, quadrature, threads, progress,
                                                 big_m, i_min, i_max, single, t0=t0)
    if failure is not None:
        raise failure
    if q_out.shape[-1] == 9:
        Q_out = q_out.reshape(q_out.shape[:-1] + (3, 3))
        if single:
            return Trajectory(t_out, m_out[:, 0], None, form, name, I2[0], torque, Q_out[:, 0])
        return Trajectory(t_out, m_out, None, form, name, I2, torque, Q_out)
    if single:
        return Trajectory(t_out, m_out[:, 0], q_out[:, 0], form, name, I2[0], torque)
    return Trajectory(t_out, m_out, q_out, form, name, I2, torque)


def run_validated(name: str, info: MethodInfo, m2: NDArray[np.float64], q2: NDArray[np.float64],
                  I2: NDArray[np.float64], h: float, nsteps: int, torque: Torque | None,
                  plan: tuple[NDArray[np.intc], NDArray[np.float64]] | None, save_every: int,
                  quadrature: int, threads: int, progress: bool, big_m: float, i_min: float,
                  i_max: float, single: bool | None = None, label: str = "", t0: float = 0.0
                  ) -> tuple[NDArray[np.float64], NDArray[np.float64], NDArray[np.float64],
                             IntegrationError | None]:
    """The engine under :func:`integrate` and its wrappers (:func:`frb.splitting.integrate`,
    :func:`frb.dmv_integrate`), for inputs they have validated: float64 C-ordered m2 (n, 3),
    q2 (n, 4) unit quaternions, I2 (n, 3) positive moments; ``plan`` the flows ``(kinds,
    fractions)`` of one step of an exact-flow splitting (None: one free flow a step); q2 may be
    matrices (n, 9) for an exact-flow splitting (their outputs then have 9 columns too); big_m,
    i_min, i_max the largest |m_i| and the extreme moments of the batch (for the rescaling of
    extreme scales). Returns the kept times (K,), momenta (K, n, 3) and quaternions (K, n, 4),
    filled up to the failure if there is one, and the IntegrationError of the failure (not raised;
    its message names the body unless ``single``, by default n == 1) or None. Raises the
    exception of a user torque. ``label`` names the run on its progress bar (default
    ``frb.integrate NAME``)."""
    n = m2.shape[0]
    # the torque: its compiled form, or the Python call-back (kind, parameters, callable)
    form = None if torque is None else torque.compiled
    user = None
    tkinds, tpar, tbody, tbody_term = _NO_TORQUE_KINDS, _NO_TORQUE_PARAMETERS, _NO_TORQUE_BODY, 0
    if form is not None:
        tpar = form.parameters
        tkinds = form.codes if form.codes is not None else np.array(form.kinds, dtype=np.intc)
        if form.body is not None:
            if form.body.shape[0] != n:
                raise ValueError(f"torque {torque!r}: its per-body parameters are given for "
                                 f"{form.body.shape[0]} bodies, the run has {n}")
            tbody, tbody_term = form.body, form.body_term + 1
    elif torque is not None:
        user = torque
    kinds, frac = _ONE_FREE_FLOW if plan is None else plan
    variant = info.variant
    if info.family == _CZ and plan is None:
        variant = 0
    _segments.check_kept_states(_segments.kept_count(nsteps, save_every), n, 3 + q2.shape[1])
    saved = _segments.kept_steps(nsteps, save_every)
    t_out = saved * h          # t0 + k h, as the compiled loop
    if t0 != 0.0:
        t_out = t0 + t_out
    elif not h > 0:
        t_out += 0.0           # (0 h = -0.0 for h < 0; the loop's 0.0 + 0 h is +0.0)
    scale = _scale_of(big_m, i_min, i_max, h) if n else None
    if scale is not None and n > 1:
        _check_common_scale(m2, I2, scale)
    m_run, I_run, h_run = m2, I2, h
    if scale is not None:
        # the same motion in units where |m| and the moments are about 1 (see _scale_of)
        ka, kb = scale
        m_run, I_run, h_run = np.ldexp(m2, ka), np.ldexp(I2, kb), math.ldexp(h, kb - ka)
        if form is not None:
            tpar, scaled_body = _scaled_form(form, ka, kb)
            if scaled_body is not None:
                tbody = scaled_body
    # the kept states, the initial one included, are written by the compiled loop
    m_out = np.empty((len(saved), n, 3))
    q_out = np.empty((len(saved), n, q2.shape[1]))
    failure = None
    if n:
        cb: Any = _TorqueCallback(user, name, I2) if user is not None else _no_torque
        if scale is not None and user is not None:
            cb.time_exp, cb.torque_exp, cb.momentum_exp = ka - kb, 2 * ka - kb, -ka
        tuser = 0 if user is None else 2 if user.uses_momentum or user.needs_inertia else 1
        torque_args = (tkinds, tpar.T, tuser, tbody.T, tbody_term)
        t0_run = t0 if scale is None else math.ldexp(t0, kb - ka)
        fail = _run_engine(name, info.family, variant, quadrature, kinds, frac, torque_args,
                           nsteps, save_every, h_run, t0_run, m_run, q2, I_run, m_out, q_out, cb,
                           user is not None, threads, progress, label or f"frb.integrate {name}")
        if user is not None and cb.error is not None:
            raise cb.error
        if fail is not None:
            fail_step, fail_body, status = fail
            failure = _failure(name, int(status), int(fail_step), int(fail_body) - 1,
                               n == 1 if single is None else single)
    if scale is not None:
        m_out = np.ldexp(m_out, -ka)
    return t_out, m_out, q_out, failure


def _run_engine(name: str, family: int, variant: int, quadrature: int, kinds: NDArray[np.intc],
                frac: NDArray[np.float64], torque_args: tuple[Any, ...], nsteps: int,
                save_every: int, h: float, t0: float, m2: NDArray[np.float64],
                q2: NDArray[np.float64],
                I2: NDArray[np.float64], m_out: NDArray[np.float64], q_out: NDArray[np.float64],
                cb: Callable[[int, float, int, NDArray[np.float64], NDArray[np.float64],
                              NDArray[np.float64]], NDArray[np.float64]],
                user: bool, threads: int, progress: bool, label: str
                ) -> tuple[int, int, int] | None:
    """The compiled loop over the whole run, entered in segments (frb._segments.run) from the
    initial state m2, q2: the state (m, q, the per-body workspace) is carried between them and
    the kept states written into m_out, q_out in place (n >= 1 bodies). Returns None, or (step, body 1-based,
    status) of the earliest failure."""
    n = m2.shape[0]
    threads = 1 if user else (threads or get_num_threads())
    if nsteps == 0 or not (user or progress) and n * nsteps <= _segments.FIRST_WORK:
        # a short run is one call (what _segments.run would make of it); also a run of no step,
        # whose call writes the initial state (the call-back, never called then, may be a user's)
        tkinds, tpar, _, tbody, tbody_term = torque_args
        status, fail_step, fail_body = _engine.engine_integrate_builtin(
            family, variant, quadrature, kinds, frac, tkinds, tpar, tbody, tbody_term, nsteps,
            save_every, CHUNK, threads, h, t0, m2.T, q2.T, I2.T, m_out.T, q_out.T)
        return (fail_step, fail_body, status) if status else None
    # the state between segments (not touched by a run in one segment: no page faults)
    m = np.empty_like(m2)
    q = np.empty_like(q2)
    ws = np.empty((n, _WORKSPACE))
    if user:
        # the callable needs the GIL and is called once per stage for the whole batch
        compiled, chunk, split = _engine.engine_integrate_gil, n, False
    else:
        compiled, chunk, split = _engine.engine_integrate, CHUNK, True
    args_m0, args_q0, args_m, args_q, args_ws = m2.T, q2.T, m.T, q.T, ws.T
    args_i, out_m, out_q = I2.T, m_out.T, q_out.T

    tkinds, tpar, tuser, tbody, tbody_term = torque_args

    def advance(b_first: int, b_last: int, k_first: int, k_last: int
                ) -> tuple[int, int, int] | None:
        status, fail_step, fail_body = compiled(
            family, variant, quadrature, kinds, frac, tkinds, tpar, tuser, tbody, tbody_term,
            nsteps, save_every, chunk, threads, b_first + 1, b_last, k_first, k_last, h, t0,
            args_m0, args_q0, args_m, args_q, args_ws, args_i, out_m, out_q, cb)
        return (fail_step, fail_body, status) if status else None

    return _segments.run(advance, nsteps, n, align=chunk, split_bodies=split, threads=threads,
                         progress=progress, label=label)


#: |m| and the moments outside 2^-SAFE_EXPONENT .. 2^SAFE_EXPONENT: the run is rescaled.
SAFE_EXPONENT = 200
_SAFE_LO, _SAFE_HI = 2.0**-SAFE_EXPONENT, 2.0**SAFE_EXPONENT


def _scale_of(big_m: float, i_min: float, i_max: float, h: float) -> tuple[int, int] | None:
    """Powers of two (ka, kb) for a run whose |m| or moments lie outside 2^-200..2^200, else None.

    Every method, torque-free or not, is covariant under m -> a m, I -> b I, t -> t b / a with
    the torque T -> (a^2 / b) T (the built-in ones through their parameters: the field and the
    weight times a^2 / b, the orbital rate times a / b; a user torque is called at the original
    time and its result scaled), and powers of two scale every operation exactly; so the loop
    runs with max |m| and max I about 1 (a = 2^ka, b = 2^kb for the whole batch), where no
    square overflows or underflows (before, RK4 on moments of 1e180 was off by 7e-2 and DMV
    failed at every such scale). big_m is the largest |m_i| of the batch, i_min and i_max its
    extreme moments."""
    if (big_m == 0 or _SAFE_LO <= big_m <= _SAFE_HI) and _SAFE_LO <= i_min and i_max <= _SAFE_HI:
        return None
    ka = -math.frexp(big_m)[1] if big_m > 0 else 0
    kb = -math.frexp(i_max)[1]
    h_run = math.ldexp(h, kb - ka)
    if not math.isfinite(h_run) or (h != 0 and h_run == 0):
        return None
    return ka, kb


def _check_common_scale(m2: NDArray[np.float64], I2: NDArray[np.float64], scale: tuple[int, int]
                        ) -> None:
    """Raise ValueError if one scale for the whole batch would push a body out of the safe range
    (a batch spanning more than 2^400 in |m| or in the moments: no common scale keeps every body
    exact; split it into batches of similar scale)."""
    ka, kb = scale
    body_m = np.abs(m2).max(axis=1)
    small_m = np.ldexp(body_m, ka)
    bad_m = (body_m > 0) & (small_m < _SAFE_LO)
    bad_i = np.ldexp(I2.min(axis=1), kb) < _SAFE_LO
    if bad_m.any() or bad_i.any():
        b = int(np.argmax(bad_m | bad_i))
        what = "|m|" if bad_m[b] else "the moments of inertia"
        raise ValueError(f"the batch spans too many scales: body {b} has {what} below 2^-"
                         f"{SAFE_EXPONENT} of the largest in the batch, so no common rescaling "
                         "keeps every body exact (bodies of extreme scale are rescaled by powers "
                         "of two); integrate bodies of very different scales in separate calls")


def _failure(name: str, status: int, step: int, body: int, single: bool) -> IntegrationError:
    where = f"step {step}" + ("" if single else f", body {body}")
    if status == _INFO_NO_CONVERGENCE:
        msg = (f"method {name}: the implicit equation of {where} did not converge "
               f"(Newton's method, tolerance {NEWTON_RTOL:.1e} relative, {NEWTON_MAX_ITER} "
               "iterations); try a smaller step h")
    elif status == _INFO_NO_SOLUTION:
        msg = (f"method {name}: the implicit equation of {where} has no solution (the step h is "
               "too large for the angular velocity)")
    elif status == _INFO_NON_FINITE:
        msg = (f"method {name}: the state became non-finite at {where} (overflow, or for the "
               f"exact flows |m| grown until a step turns the body by more than "
               f"{_validate.PHASE_LIMIT:.0e} radians)")
    elif status == _INFO_NOT_IMPLEMENTED:
        raise NotImplementedError(f"method {name} is not available in this build")
    else:  # pragma: no cover
        msg = f"method {name}: failure code {status} at {where}"
    return IntegrationError(msg, name, step, body)


#: Largest I_max / I_min of each DMV order (frb.integrate's DMVp and frb.dmv_step /
#: frb.dmv_integrate): the h^2..h^6 corrections of the moments involve powers of the inverse
#: moments up to the seventh, which overflow beyond (order 2 has no corrections).
MAX_INERTIA_RATIO = {2: np.inf, 4: 1e100, 6: 1e50, 8: 1e40}


def check_dmv_inertia(info: MethodInfo, I2: NDArray[np.float64], single: bool) -> None:
    """Raise ValueError when ``info`` is a DMV method of order p and a body's I_max / I_min in
    I2 (n, 3) exceeds MAX_INERTIA_RATIO[p] (the message names the body unless ``single``).
    Non-finite or non-positive moments are left to the value checks."""
    if info.family != _VILMART or info.variant not in MAX_INERTIA_RATIO:
        return
    order = info.variant
    limit = MAX_INERTIA_RATIO[order]
    if limit == np.inf or not np.isfinite(I2).all() or not (I2 > 0).all():
        return
    ratio = I2.max(axis=1) / I2.min(axis=1)
    if (ratio > limit).any():
        b = int(np.argmax(ratio > limit))
        body = "" if single else f" (body {b})"
        raise ValueError(f"inertia: the DMV method of order {order} supports I_max / I_min up to "
                         f"{limit:.0e}, got {ratio[b]:.3g}{body} (its corrections of the moments "
                         "would overflow); use order 2 or frb.quat_step")
