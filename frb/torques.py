"""Torques of :func:`frb.integrate`: one protocol for built-in and user torques.

A torque is the body torque ``T_b`` (body frame) as a function of the time ``t`` and the attitude
``Q`` (columns = body axes in the fixed frame); the body obeys ``m' = m x I^-1 m + T_b``,
``Q' = Q hat(I^-1 m)``. Every torque is a :class:`Torque`, called as a user torque is::

    torque(t, Q)        # t a float, Q of shape (N, 3, 3) or (3, 3) -> T_b of shape (N, 3) or (3,)
    torque(t, Q, m)     # the protocol's third argument: the body angular momentum (N, 3)

A plain callable ``f(t, Q)`` given to :func:`frb.integrate` is wrapped into a :class:`Torque` by
:func:`as_torque`. A torque has a potential energy where one exists (``has_potential``,
``potential(Q)``), and the built-in ones have a compiled form (``compiled``) that the engine
evaluates inside its time loop, without calling Python.

Built in:

* :func:`constant_field` ``(u0)``: a constant spatial field acting on the third body axis,
  ``T_b = (Q^T u0) x e3`` with potential ``U = u0 . Q e3`` (Celledoni and Zanna 2010, example 1).
* :func:`heavy_top` ``(weight, center)``: a top on a fixed point at the origin, gravity of size
  ``weight`` (mass times g) along ``-z`` of the fixed frame, centre of mass at the body vector
  ``center``: ``T_b = weight (Q^T e_z) x center``, potential ``U = weight (Q center)_z``.
* :func:`gravity_gradient` ``(n)``: a satellite on a circular orbit of rate ``n`` in the fixed
  x-y plane; with ``r(t) = (cos nt, sin nt, 0)`` the direction to the planet and ``c = Q^T r``,
  ``T_b = 3 n^2 c x (I c)`` (time-dependent; no potential). It needs the moments of inertia,
  which it takes where it is evaluated: ``torque(t, Q, inertia=I)`` (the engine passes them).

Torques of the angular momentum ``m`` (``w = I^-1 m``), called ``torque(t, Q, m)`` (and
``inertia=I`` where they need it):

* :func:`linear_damping` ``(c)``: ``T_b = -c m``, ``c >= 0``. With no other torque the motion is
  the free motion in the time ``(1 - e^{-ct}) / c`` with ``m`` scaled by ``e^{-ct}``, which
  ``method="EXACT"`` computes exactly.
* :func:`rotor` ``(h)``: an internal rotor of constant body momentum ``h`` (a momentum wheel, a
  gyrostat), ``T_b = h x w``; ``m`` is the momentum of the rigid part, ``Q (m + h)`` and
  ``m . I^-1 m / 2`` are conserved (``Trajectory.spatial_momentum`` adds ``h``).
* :func:`attitude_control` ``(q_ref, kp, kd)``: the PD law ``T_b = -kp s e_v - kd w`` with
  ``e = conj(q_ref) q`` (scalar first), ``e_v`` its vector part and ``s = sign(e0)`` (+1 when
  ``e0 = 0``); ``q_ref`` one unit quaternion or one per body; the gains numbers or 3 x 3
  matrices (``kp = k J``).

Any two torques add up (``a + b``, :class:`TorqueSum`); a sum of built-in torques keeps a
compiled form (at most ``MAX_TORQUE_TERMS`` terms), also with parameters per body (the torques
of a batch with one inertia tensor per body, :mod:`frb.inertia`). A torque made only of
built-in torques that cannot stay compiled (more terms, or a subclass) is evaluated from Python
and says so (:class:`NotCompiledWarning`). A user torque with three positional parameters, ``f(t, Q, m)``, receives the
momenta (N, 3), read-only.

Torques are immutable: their parameters are fixed when they are made. ``torque.in_frame(R)``
is the torque seen in a body frame turned by the rotation ``R`` (the principal frame of an
inertia tensor, :mod:`frb.inertia`).
"""
from __future__ import annotations

import inspect
import math
import warnings
from typing import Any, Callable, NamedTuple, Optional, Sequence, cast

import numpy as np
from numpy.typing import ArrayLike, NDArray

from . import _validate
from ._references import RotatingReference, TurnedReference, unit_quaternions
from .rotations import (matrix_to_quat, matrix_to_quat_unchecked, quat_to_matrix_unchecked,
                        quaternion_product, rotate, rotate_back, rotation_argument)

__all__ = ["Torque", "CompiledTorque", "ConstantField", "HeavyTop", "GravityGradient",
           "LinearDamping", "Rotor", "AttitudeControl", "TorqueSum", "UserTorque", "as_torque",
           "constant_field", "heavy_top", "gravity_gradient", "linear_damping", "rotor",
           "attitude_control", "NotCompiledWarning", "gain_matrices"]

# torque kinds of the compiled loop (fortran/torques.f90)
from ._numbers_table import (  # noqa: E402
    TORQUE_FIELD as KIND_FIELD, TORQUE_GRAVITY_GRADIENT as KIND_GRAVITY_GRADIENT,
    TORQUE_DAMPING as KIND_DAMPING, TORQUE_ROTOR as KIND_ROTOR,
    TORQUE_ATTITUDE_CONTROL as KIND_ATTITUDE_CONTROL, MAX_TORQUE_TERMS, TORQUE_TERM_REALS,
    TORQUE_TERM_HEADER, CONTROL_GAINS, CONTROL_KP, CONTROL_KD, CONTROL_Q_REF, CONTROL_RATE,
    CONTROL_T_REF)
from ._messages import NotCompiledWarning  # noqa: E402


def _scales(*parts: tuple[int, tuple[int, int]]) -> tuple[tuple[int, int], ...]:
    """A row of PARAMETER_SCALES: (count, (a, b)) pieces, padded with (0, 0)."""
    row = [ab for count, ab in parts for _ in range(count)]
    return tuple(row + [(0, 0)] * (TORQUE_TERM_REALS - len(row)))


#: The powers of two of each parameter of a term in the units of a rescaled run, as
#: (a, b): the parameter is multiplied by 2**(a ka + b kb) when the momenta are multiplied by
#: 2**ka and the moments by 2**kb (the time by 2**(kb - ka)): a torque scales as 2ka - kb, a
#: rate as ka - kb, a momentum as ka (the same for the per-body parameters of a term).
PARAMETER_SCALES: dict[int, tuple[tuple[int, int], ...]] = {
    KIND_FIELD: _scales((3, (2, -1))),
    KIND_GRAVITY_GRADIENT: _scales((1, (1, -1))),
    KIND_DAMPING: _scales((1, (1, -1))),
    KIND_ROTOR: _scales((3, (1, 0))),
    KIND_ATTITUDE_CONTROL: _scales((1, (0, 0)), (9, (2, -1)), (9, (1, 0)), (4, (0, 0)),
                                   (3, (1, -1)), (1, (-1, 1))),
}


class CompiledTorque(NamedTuple):
    """The compiled form of a built-in torque or of a sum of them: the kinds of its terms, their
    parameters (one row of ``TORQUE_TERM_REALS`` reals a term: field ``u0, c``; gravity
    gradient ``n``; damping ``c``; rotor ``h``; attitude control the form of the gains, ``Kp``,
    ``Kd``, ``q_ref`` in the slots ``CONTROL_*``), and the per-body parameters ``body`` (N,
    ``TORQUE_TERM_REALS`` times the number of blocks): the terms whose parameters are given per
    body (a rotor's ``h``, reference quaternions, a body point, gains per body) each take a
    block of ``TORQUE_TERM_REALS`` columns (``blocks[i]``: 1-based, 0 for shared parameters)."""

    kinds: tuple[int, ...]
    parameters: NDArray[np.float64]
    body: Optional[NDArray[np.float64]] = None
    #: the block of each term's per-body parameters in ``body`` (1-based), 0 for none
    blocks: tuple[int, ...] = ()
    #: the terms as the compiled loop takes them, made once (read-only): one row a term, its
    #: kind and its block (as reals) then its parameters
    terms: Optional[NDArray[np.float64]] = None
    #: the smallest nonzero and the largest magnitude of the parameters (shared and per body),
    #: or None when all are zero
    extent: Optional[tuple[float, float]] = None

    @property
    def kind(self) -> int:
        """The kind of a one-term torque (the first term's)."""
        return self.kinds[0]


def _compiled_form(kind: int, values: ArrayLike,
                   body: Optional[NDArray[np.float64]] = None) -> CompiledTorque:
    """The form of one term: its parameters ``values`` (at most TORQUE_TERM_REALS), or per body
    ``body`` (N, TORQUE_TERM_REALS)."""
    parameters = np.zeros((1, TORQUE_TERM_REALS))
    v = np.asarray(values, dtype=np.float64).ravel()
    parameters[0, :v.size] = v
    parameters.setflags(write=False)
    if body is not None:
        body = np.ascontiguousarray(body, dtype=np.float64)
        body.setflags(write=False)
    blocks = (0,) if body is None else (1,)
    return CompiledTorque((kind,), parameters, body, blocks,
                          compiled_terms((kind,), parameters, blocks), _extent(parameters, body))


def _extent(parameters: NDArray[np.float64], body: Optional[NDArray[np.float64]]
            ) -> Optional[tuple[float, float]]:
    """CompiledTorque.extent of these parameters."""
    size = np.abs(parameters.ravel() if body is None else
                  np.concatenate((parameters.ravel(), body.ravel())))
    size = size[(size > 0) & np.isfinite(size)]
    return (float(size.min()), float(size.max())) if size.size else None


def compiled_terms(kinds: tuple[int, ...], parameters: NDArray[np.float64],
                   blocks: tuple[int, ...] | None = None) -> NDArray[np.float64]:
    """The terms of a compiled torque as the compiled loop takes them (read-only): a row a term,
    its kind and its per-body block (``TORQUE_TERM_HEADER`` reals) then its
    ``TORQUE_TERM_REALS`` parameters."""
    terms = np.zeros((len(kinds), TORQUE_TERM_HEADER + TORQUE_TERM_REALS))
    terms[:, 0] = kinds
    terms[:, 1] = blocks if blocks else 0
    terms[:, TORQUE_TERM_HEADER:] = parameters
    terms.setflags(write=False)
    return terms


def _sum_form(forms: list[CompiledTorque]) -> Optional[CompiledTorque]:
    """The compiled form of a sum of compiled terms, or None (more than MAX_TORQUE_TERMS terms,
    or per-body parameters of different numbers of bodies: the sum is then called from
    Python)."""
    kinds = tuple(k for f in forms for k in f.kinds)
    if len(kinds) > MAX_TORQUE_TERMS:
        return None
    parameters = np.concatenate([f.parameters for f in forms])
    parameters.setflags(write=False)
    bodies = [f.body for f in forms if f.body is not None]
    if len({b.shape[0] for b in bodies}) > 1:
        return None
    blocks: list[int] = []
    used = 0
    for f in forms:
        blocks.extend(used + b if b else 0 for b in (f.blocks or (0,) * len(f.kinds)))
        if f.body is not None:
            used += f.body.shape[1] // TORQUE_TERM_REALS
    body = None
    if bodies:
        body = np.concatenate(bodies, axis=1) if len(bodies) > 1 else bodies[0]
        body.setflags(write=False)
    return CompiledTorque(kinds, parameters, body, tuple(blocks),
                          compiled_terms(kinds, parameters, tuple(blocks)),
                          _extent(parameters, body))


def gain_matrices(k: Any, name: str) -> float | NDArray[np.float64]:
    """A gain: a number >= 0, or a 3 x 3 matrix (or one per body, (N, 3, 3)) of finite reals
    whose symmetric part is positive semidefinite (read-only); ValueError / TypeError naming
    ``name``."""
    a = np.array(_validate.real_array(k, name, finite=False), dtype=np.float64)
    if a.ndim == 0:
        v = float(a)
        if not math.isfinite(v) or v < 0:
            raise ValueError(f"{name} must be a finite number >= 0 or a 3 x 3 matrix, got "
                             f"{_validate.fmt(v)}")
        return v
    if a.shape[-2:] != (3, 3) or a.ndim > 3 or a.shape[0] == 0:
        raise ValueError(f"{name} must be a number or a 3 x 3 matrix (or one per body, "
                         f"(N, 3, 3) with N >= 1), got shape {a.shape}")
    if not np.isfinite(a).all():
        raise ValueError(f"{name} must be finite")
    # a matrix gain is >= 0 when its symmetric part is positive semidefinite (to the rounding of
    # its largest eigenvalue): no axis along which the law feeds energy in
    eig = np.linalg.eigvalsh((a + np.swapaxes(a, -1, -2)) / 2)
    low = eig[..., 0] < -1e-12 * np.abs(eig).max(axis=-1)
    if low.any():
        b = int(np.argmax(low.reshape(-1)))
        raise ValueError(f"{name} must be a number >= 0 or a matrix whose symmetric part is "
                         "positive semidefinite (a gain that feeds no energy in along any axis); "
                         f"its symmetric part has the eigenvalue "
                         f"{_validate.fmt(float(eig.reshape(-1, 3)[b, 0]))}"
                         + (f" (body {b})" if a.ndim == 3 else ""))
    a.setflags(write=False)
    return a


def _gain_block(k: float | NDArray[np.float64], n: int | None) -> NDArray[np.float64]:
    """The 9 reals of a gain as the compiled loop takes them, (9,) or (n, 9) (column by column;
    a number in the first slot)."""
    if isinstance(k, float):
        out = np.zeros(9)
        out[0] = k
        return out if n is None else np.broadcast_to(out, (n, 9))
    cols = np.swapaxes(k, -1, -2).reshape(k.shape[:-2] + (9,))
    return cols if n is None or cols.ndim == 2 else np.broadcast_to(cols, (n, 9))


class Torque:
    """Base of every torque of :func:`frb.integrate`.

    Subclasses define ``__call__(t, Q, m=None)`` returning the body torque, and may define a
    potential (``has_potential = True`` and ``potential(Q)``) and a compiled form
    (``compiled``). Instances are immutable.
    """

    __slots__ = ("_given",)
    #: True when :meth:`potential` gives the potential energy (``T(m) + U(Q)`` is conserved).
    has_potential: bool = False
    #: True when ``T_b`` depends on the angular momentum ``m`` (the third argument).
    uses_momentum: bool = False
    #: True when the torque needs the moments of inertia (``torque(t, Q, m, inertia=I)``).
    needs_inertia: bool = False
    #: The constant internal angular momentum of rotors in the body (body frame): (3,), (N, 3)
    #: per body, or None. The conserved spatial momentum is then ``Q (m + h)``.
    internal_momentum: Optional[NDArray[np.float64]] = None
    #: True when a body's torque depends on the other bodies of the batch (e.g. dipoles acting
    #: on one another): such a torque is called for the whole batch at once, never for parts of
    #: it (:mod:`frb.dask` refuses it).
    couples_bodies: bool = False

    def __add__(self, other: Any) -> Torque:
        """The sum of two torques (a torque; a sum of built-in torques stays compiled); adding
        None (no torque) gives the torque itself."""
        if other is None:
            return self
        return TorqueSum([self, as_torque(other)])

    def __radd__(self, other: Any) -> Torque:
        if other is None or (isinstance(other, (int, float)) and other == 0):
            return self       # sum([...]) starts from 0
        return TorqueSum([as_torque(other), self])

    def __call__(self, t: float, Q: ArrayLike, m: ArrayLike | None = None, *,
                 inertia: ArrayLike | None = None) -> NDArray[np.float64]:
        raise NotImplementedError(f"{type(self).__name__} defines no __call__(t, Q, m=None): a "
                                  "subclass of frb.torques.Torque gives the body torque")

    def potential(self, Q: ArrayLike) -> Any:
        """Potential energy at the attitudes Q (..., 3, 3); AttributeError where there is none."""
        raise AttributeError(f"the torque {self!r} has no potential energy")

    @property
    def compiled(self) -> CompiledTorque | None:
        """The form the engine evaluates in its time loop, or None (then the engine calls the
        torque from Python once per stage for the whole batch)."""
        return None

    def in_frame(self, R: ArrayLike) -> Torque:
        """The torque seen in the body frame turned by ``R``: ``T'(t, Q', m') = R^T T(t, Q' R^T,
        R m')``, for the attitudes ``Q' = Q R`` and momenta ``m' = R^T m`` of that frame (the
        principal frame of an inertia tensor, :mod:`frb.inertia`). ``R``: a rotation (3, 3),
        or one per body (N, 3, 3).

        Here (the general case, every user torque, and any torque with ``R`` per body) the
        result is a :class:`UserTorque` that calls this torque from Python once per stage:
        correct, but slower than a compiled torque. The built-in torques with one ``R``
        return built-in torques (compiled): :class:`ConstantField` and :class:`HeavyTop` with
        the body point ``R^T c``, :class:`GravityGradient` itself.

        Examples
        --------
        >>> import numpy as np
        >>> import frb
        >>> R = frb.quat_to_matrix([np.cos(0.3), 0.0, np.sin(0.3), 0.0])
        >>> top = frb.torques.heavy_top(2.0, [0.0, 0.0, 1.0])
        >>> turned = top.in_frame(R)
        >>> Q = frb.quat_to_matrix([0.8, 0.6, 0.0, 0.0])
        >>> bool(np.allclose(turned(0.0, Q @ R), R.T @ top(0.0, Q)))
        True
        """
        return frame_torque(self, R)

    def bodies(self, start: int, stop: int) -> Torque:
        """The torque of the bodies ``start`` to ``stop - 1`` of the batch alone (their per-body
        parameters; the torque itself when it has none), for a part of a batch run on its own
        (:mod:`frb.dask`); ``0 <= start <= stop`` integers, ``stop`` at most the number of
        bodies the per-body parameters are given for."""
        return self._bodies(*_validate.body_range(start, stop, self.bodies_count, shown(self)))

    @property
    def bodies_count(self) -> int | None:
        """The number of bodies the per-body parameters are given for, else None (one set for
        all bodies)."""
        form = self.compiled
        return None if form is None or form.body is None else int(form.body.shape[0])

    def _bodies(self, start: int, stop: int) -> Torque:
        """:meth:`bodies` of checked ``start``, ``stop`` (a torque with per-body parameters
        overrides it)."""
        return self

    def _frame(self, R: ArrayLike) -> NDArray[np.float64]:
        """The rotation(s) of :meth:`in_frame`, checked; rotations per body must be as many as
        the bodies of the per-body parameters."""
        Rm = rotation_argument(R)
        if Rm.ndim == 3 and Rm.shape[0] == 0:
            raise ValueError("R must hold at least one rotation, got shape (0, 3, 3)")
        form = self.compiled
        if Rm.ndim == 3 and form is not None and form.body is not None and \
                form.body.shape[0] != Rm.shape[0]:
            raise ValueError(f"R is given for {Rm.shape[0]} bodies, the per-body parameters of "
                             f"{shown(self)} for {form.body.shape[0]}")
        return Rm

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError(f"{type(self).__name__} is immutable: make a new torque instead of "
                             f"setting {name!r}")

    def __delattr__(self, name: str) -> None:
        raise AttributeError(f"{type(self).__name__} is immutable")

    def _init(self, **values: Any) -> None:
        for name, value in values.items():
            object.__setattr__(self, name, value)


#: The longest text of a torque in a message (parameters per body of a large batch are cut).
SHOWN_MAX = 200


def shown(torque: Any) -> str:
    """The torque as the messages show it: the one the user gave (a torque turned into the
    principal frame of an inertia tensor remembers it, :func:`given_as`), cut to SHOWN_MAX
    characters."""
    text = getattr(torque, "_given", None) or repr(torque)
    if len(text) > SHOWN_MAX:
        text = f"{text[:SHOWN_MAX - 40]} ... ({len(text)} characters)"
    return text


def given_as(torque: Any, given: Any) -> Any:
    """``torque`` (the user's torque ``given``, turned into another frame), shown in messages as
    ``given``."""
    if isinstance(torque, Torque) and torque is not given:
        object.__setattr__(torque, "_given", shown(given))
    return torque


def _attitudes(Q: ArrayLike, who: str, any_batch: bool = False) -> NDArray[np.float64]:
    """The attitudes of a direct call of a torque: finite (3, 3) or (N, 3, 3) ((..., 3, 3) with
    ``any_batch``) (TypeError / ValueError naming ``Q``; how far from a rotation is left to the
    caller: the methods' own attitudes are rotations to their accuracy), entries at most 2 in
    size (a rotation's are at most 1)."""
    a = _validate.real_array(Q, "Q")
    if a.ndim < 2 or (a.ndim > 3 and not any_batch) or a.shape[-2:] != (3, 3):
        shapes = "(..., 3, 3)" if any_batch else "(3, 3) or (N, 3, 3)"
        raise ValueError(f"{who}: Q must have shape {shapes}, got {a.shape}")
    if not (np.abs(a) <= 2.0).all():
        raise ValueError(f"{who}: Q must be rotation matrices, but it has an entry of size "
                         f"{float(np.abs(a).max()):.3g}")
    return a


def _time(t: Any) -> float:
    """The time of a direct call of a torque: a finite real number (naming ``t``)."""
    return t if type(t) is float and t - t == 0.0 else _validate.real_scalar(t, "t")


def _unused(Qa: NDArray[np.float64], m: Any, inertia: Any, who: str) -> None:
    """Check the momenta and the inertia given to a torque that does not use them as a torque
    that uses them would (a direct call: what is given is right or refused)."""
    if m is not None:
        _batch_of(_validate.real_array(m, "m"), Qa, "m", who, (3,))
    if inertia is not None:
        _inertia_form(inertia, Qa, who)


def _finite_result(value: Any, what: str) -> None:
    """ValueError when a torque's result left the float64 range (its parameters too large)."""
    if not np.isfinite(value).all():
        raise ValueError(f"{what} is beyond the float64 range (the torque's parameters are too "
                         "large for these values)")


def _batch_of(a: NDArray[np.float64], Q: NDArray[np.float64], name: str, who: str,
              item: tuple[int, ...]) -> NDArray[np.float64]:
    """``a``, of one body's shape ``item`` or one per attitude of ``Q`` (ValueError naming
    ``name`` otherwise)."""
    batch = Q.shape[:-2]
    if a.shape != item and a.shape != batch + item:
        want = f"{item}" if not batch else f"{item} or {batch + item} (one per attitude of Q)"
        raise ValueError(f"{who}: {name} must have shape {want} for Q of shape {Q.shape}, got "
                         f"{a.shape}")
    return a


def _per_body(param: NDArray[np.float64], Q: NDArray[np.float64], name: str, who: str) -> None:
    """ValueError when a parameter given per body (N, k) does not match the bodies of ``Q``
    (the axis before the matrices: ``Q`` of shape (N, 3, 3), or (K, N, 3, 3) along a run)."""
    if param.ndim == 2 and (Q.ndim < 3 or Q.shape[-3] != param.shape[0]):
        bodies = Q.shape[0] if Q.ndim == 3 else 1
        raise ValueError(f"{who}: {name} is given for {param.shape[0]} bodies, Q holds "
                         f"{bodies if Q.ndim <= 3 else Q.shape[:-2]}")


def _inertia_form(inertia: Any, Q: NDArray[np.float64], who: str
                  ) -> tuple[NDArray[np.float64], bool]:
    """The inertia of a direct call: moments (3,) or one row per attitude of ``Q``, or tensors
    (3, 3) or one per attitude (the moments rule first: for three attitudes (3, 3) is three
    rows of moments, as everywhere in frb); ``(array, is_tensor)``. Moments must be positive,
    tensors symmetric positive definite (their inverse is used)."""
    if inertia is None:
        raise TypeError(f"{who} needs the moments of inertia: call it as "
                        "torque(t, Q, m, inertia=I)")
    a = _validate.real_array(inertia, "inertia")
    batch = Q.shape[:-2]
    if a.shape in ((3,), batch + (3,)):
        if not (a > 0).all():
            raise ValueError(f"{who}: inertia must contain strictly positive moments of inertia")
        return a, False
    if a.shape in ((3, 3), (1, 3, 3), batch + (3, 3)):
        J = a[0] if a.shape == (1, 3, 3) else a
        if not np.allclose(J, np.swapaxes(J, -1, -2), rtol=0.0,
                           atol=1e-12 * float(np.abs(J).max(initial=0.0))):
            raise ValueError(f"{who}: inertia must be a symmetric matrix (an inertia tensor)")
        if not (np.linalg.eigvalsh(J) > 0).all():
            raise ValueError(f"{who}: inertia must be positive definite (an inertia tensor)")
        return J, True
    moments = "(3,)" if not batch else f"(3,) or {batch + (3,)}"
    tensors = "(3, 3)" if not batch else f"(3, 3) or {batch + (3, 3)}"
    raise ValueError(f"{who}: inertia must have shape {moments} (principal moments) or "
                     f"{tensors} (tensors), got {a.shape}")


def _times_inertia(inertia: Any, c: NDArray[np.float64], Q: NDArray[np.float64], who: str
                   ) -> NDArray[np.float64]:
    """``I c`` (moments or tensors, :func:`_inertia_form`)."""
    J, tensor = _inertia_form(inertia, Q, who)
    return np.einsum("...ij,...j->...i", J, c) if tensor else J * c


def _velocity(m: Any, inertia: Any, Q: NDArray[np.float64], who: str) -> NDArray[np.float64]:
    """``w = I^-1 m`` of a direct call (moments or tensors, :func:`_inertia_form`)."""
    if m is None:
        raise TypeError(f"{who} depends on the angular momentum: call it as torque(t, Q, m)")
    mm = _batch_of(_validate.real_array(m, "m"), Q, "m", who, (3,))
    J, tensor = _inertia_form(inertia, Q, who)
    with np.errstate(over="ignore", invalid="ignore"):
        if not tensor:
            w = mm / J
        else:
            Jb, mb = np.broadcast_arrays(J, mm[..., None])
            w = np.linalg.solve(Jb, mb)[..., 0]
    if not np.isfinite(w).all():
        raise ValueError(f"{who}: the angular velocity I^-1 m of m and inertia is beyond the "
                         "float64 range")
    return w


def _finite_vector(x: ArrayLike, name: str, per_body: bool = False) -> NDArray[np.float64]:
    """x as a finite float64 vector (3,), or with ``per_body`` also one per body (N, 3)
    (read-only)."""
    a = np.array(_validate.real_array(x, name, finite=False), dtype=np.float64)
    if a.shape != (3,) and not (per_body and a.ndim == 2 and a.shape[1] == 3):
        raise ValueError(f"{name} must have shape (3,){' or (N, 3)' if per_body else ''}, got "
                         f"{a.shape}")
    if not np.isfinite(a).all():
        raise ValueError(f"{name} must be finite")
    a.setflags(write=False)
    return a


def _field_form(u: NDArray[np.float64], c: NDArray[np.float64]) -> CompiledTorque:
    """The compiled field term of the field u and the body point c (3,), or per body (N, 3)."""
    if c.ndim == 1:
        return _compiled_form(KIND_FIELD, u.tolist() + c.tolist())
    body = np.zeros((c.shape[0], TORQUE_TERM_REALS))
    body[:, :3] = u
    body[:, 3:6] = c
    return _compiled_form(KIND_FIELD, [], body)


def _turned_back(R: NDArray[np.float64], v: NDArray[np.float64]) -> NDArray[np.float64]:
    """R^T v for R (3, 3) or (N, 3, 3) and v (3,) or (N, 3)."""
    return np.einsum("...ji,...j->...i", R, v)


_E3 = np.array([0.0, 0.0, 1.0])
_E3.setflags(write=False)


class ConstantField(Torque):
    """A body point ``c`` in a constant spatial field ``u0``: ``T_b = (Q^T u0) x c``, potential
    ``u0 . (Q c)``. :func:`constant_field` is ``c = e3`` (Celledoni and Zanna 2010, example 1:
    ``T_b = (u_2, -u_1, 0)`` with ``u = Q^T u0``); ``ConstantField(u0, center)`` takes any
    body point (the field of :meth:`in_frame`).

    ``Q`` is constant along the torque's own flow, hence so is ``T_b``: :meth:`flow` is exact.

    Attributes
    ----------
    u0 : numpy.ndarray
        The field, shape ``(3,)`` (read-only copy).
    center : numpy.ndarray
        The body point ``c``, shape ``(3,)``, or one per body ``(N, 3)`` (read-only; ``e3`` for
        :func:`constant_field`).
    """

    __slots__ = ("u0", "center", "_u", "_form")
    has_potential = True
    u0: NDArray[np.float64]
    center: NDArray[np.float64]
    _u: tuple[float, ...]
    _form: CompiledTorque

    def __init__(self, u0: ArrayLike, center: ArrayLike | None = None) -> None:
        u = _finite_vector(u0, "u0")
        c = _E3 if center is None else _finite_vector(center, "center", per_body=True)
        self._init(u0=u, center=c, _u=tuple(u.tolist()), _form=_field_form(u, c))

    def body_field(self, Q: ArrayLike) -> NDArray[np.float64]:
        """The field in body coordinates, ``u = Q^T u0``."""
        return np.asarray(Q, dtype=np.float64).T @ self.u0

    def potential(self, Q: ArrayLike) -> Any:
        """Potential energy ``u0 . (Q c)``: a float for one matrix, an array for (..., 3, 3)."""
        Qa = _attitudes(Q, "potential", any_batch=True)
        _per_body(self.center, Qa, "center", "potential")
        with np.errstate(over="ignore", invalid="ignore"):
            v = np.einsum("...ij,...j->...i", Qa, self.center) @ self.u0
        _finite_result(v, "the potential u0 . (Q c)")
        return float(v) if v.ndim == 0 else v

    def torque(self, t: float, Q: ArrayLike) -> NDArray[np.float64]:
        """Body torque ``(Q^T u0) x c`` for Q of shape (..., 3, 3)."""
        if type(t) is not float:
            _validate.real_scalar(t, "t")
        Qa = _attitudes(Q, "torque", any_batch=True)
        _per_body(self.center, Qa, "center", "torque")
        with np.errstate(over="ignore", invalid="ignore"):
            u = np.einsum("...ji,j->...i", Qa, self.u0)
            out = np.cross(u, self.center)
        _finite_result(out, "the torque (Q^T u0) x c")
        return out

    def __call__(self, t: Any, Q: ArrayLike, m: Any = None, *, inertia: ArrayLike | None = None
                 ) -> Any:
        """``torque(t, Q)``; called as a torque flow ``(m, Q, t)`` of
        :func:`frb.splitting.integrate` (an array first), it returns :meth:`flow` (deprecated)."""
        if np.ndim(t) == 0:
            _time(t)
            if m is not None or inertia is not None:
                _unused(_attitudes(Q, "torque", any_batch=True), m, inertia, "torque")
            return self.torque(t, Q)
        warnings.warn("calling a constant field as flow(m, Q, t) is deprecated: use its "
                      ".flow(m, Q, t), or torque(t, Q)", DeprecationWarning, stacklevel=2)
        return self.flow(t, Q, m)

    def flow(self, m: ArrayLike, Q: ArrayLike, t: float
             ) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
        """Exact flow of the torque alone over time ``t`` (one body): ``(m + t T_b(Q), Q)``."""
        Qa = _attitudes(Q, "flow")
        if Qa.shape != (3, 3):
            raise ValueError(f"flow: Q must have shape (3, 3) (one body), got {Qa.shape}")
        mn = np.array(_validate.real_array(m, "m"), dtype=np.float64)
        if mn.shape != (3,):
            raise ValueError(f"flow: m must have shape (3,) (one body), got {mn.shape}")
        t = _validate.real_scalar(t, "t")
        with np.errstate(over="ignore", invalid="ignore"):
            moved = self._flow(mn, Qa, t)
        if not np.isfinite(moved[0]).all():
            raise ValueError("the flow of the field gives a non-finite m (m + t T_b beyond the "
                             "float64 range: the field or t too large)")
        return moved

    def _flow(self, mn: NDArray[np.float64], Qa: NDArray[np.float64], t: float
              ) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
        if self.center is _E3:
            x, y, z = self._u
            # u = Q^T u0, only its first two components are needed: T_b = (u2, -u1, 0)
            u1 = Qa[0, 0] * x + Qa[1, 0] * y + Qa[2, 0] * z
            u2 = Qa[0, 1] * x + Qa[1, 1] * y + Qa[2, 1] * z
            mn[0] += t * u2
            mn[1] -= t * u1
        else:
            mn += t * self.torque(0.0, Qa)
        return mn, Qa

    def __reduce__(self) -> tuple[Any, ...]:
        if self.center is _E3:
            return (type(self), (self.u0,))
        return (type(self), (self.u0, self.center))

    @property
    def compiled(self) -> CompiledTorque | None:
        if type(self) not in (ConstantField, HeavyTop):
            return None         # a subclass may change the torque: called from Python
        return self._form

    def in_frame(self, R: ArrayLike) -> Torque:
        """As :meth:`Torque.in_frame`: the same field acting on the body point ``R^T c`` (per
        body for ``R`` per body; a built-in torque, compiled)."""
        Rm = self._frame(R)
        if type(self) is ConstantField:
            return ConstantField(self.u0, _turned_back(Rm, self.center))
        return super().in_frame(Rm)

    def _bodies(self, start: int, stop: int) -> Torque:
        """As :meth:`Torque.bodies`: the body points of those bodies when given per body."""
        if self.center.ndim == 1 or type(self) is not ConstantField:
            return self
        return ConstantField(self.u0, self.center[start:stop])

    def __repr__(self) -> str:
        if self.center is not _E3:
            return f"ConstantField({self.u0.tolist()!r}, center={self.center.tolist()!r})"
        return f"constant_field({self.u0.tolist()!r})"


class HeavyTop(ConstantField):
    """Heavy top: fixed point at the origin, gravity ``weight`` along ``-z`` (fixed frame),
    centre of mass at the body vector ``center``.

    ``T_b(Q) = weight (Q^T e_z) x center``; potential energy ``weight (Q center)_z``: the field
    ``u0 = (0, 0, weight)`` acting on the body point ``center``.
    """

    __slots__ = ("weight",)
    weight: float

    def __init__(self, weight: float, center: ArrayLike) -> None:
        w = _validate.real_scalar(weight, "weight")
        u0 = np.array([0.0, 0.0, w])
        u0.setflags(write=False)
        c = _finite_vector(center, "center", per_body=True)
        self._init(weight=w, center=c, u0=u0, _u=tuple(u0.tolist()), _form=_field_form(u0, c))

    def __reduce__(self) -> tuple[Any, ...]:
        return (HeavyTop, (self.weight, self.center))

    def in_frame(self, R: ArrayLike) -> Torque:
        """As :meth:`Torque.in_frame`: the heavy top of centre ``R^T center`` (per body for
        ``R`` per body; compiled)."""
        Rm = self._frame(R)
        if type(self) is HeavyTop:
            return HeavyTop(self.weight, _turned_back(Rm, self.center))
        return Torque.in_frame(self, Rm)

    def _bodies(self, start: int, stop: int) -> Torque:
        """As :meth:`Torque.bodies`: the centres of those bodies when given per body."""
        if self.center.ndim == 1 or type(self) is not HeavyTop:
            return self
        return HeavyTop(self.weight, self.center[start:stop])

    def potential(self, Q: ArrayLike) -> Any:
        """Potential energy ``weight (Q center)_z`` for Q of shape (..., 3, 3)."""
        Qa = _attitudes(Q, "potential", any_batch=True)
        _per_body(self.center, Qa, "center", "potential")
        with np.errstate(over="ignore", invalid="ignore"):
            v = self.weight * np.einsum("...i,...i->...", Qa[..., 2, :], self.center)
        _finite_result(v, "the potential weight (Q center)_z")
        return v

    def torque(self, t: float, Q: ArrayLike) -> NDArray[np.float64]:
        """Body torque ``weight (Q^T e_z) x center`` for Q of shape (..., 3, 3)."""
        if type(t) is not float:
            _validate.real_scalar(t, "t")
        Qa = _attitudes(Q, "torque", any_batch=True)
        _per_body(self.center, Qa, "center", "torque")
        with np.errstate(over="ignore", invalid="ignore"):
            out = np.cross(self.weight * Qa[..., 2, :], self.center)
        _finite_result(out, "the torque weight (Q^T e_z) x center")
        return out

    def __repr__(self) -> str:
        return f"heavy_top({self.weight!r}, {self.center.tolist()!r})"


class GravityGradient(Torque):
    """Gravity-gradient torque of a satellite on a circular orbit of rate ``n`` in the fixed
    x-y plane: ``r(t) = (cos nt, sin nt, 0)``, ``c = Q^T r``, ``T_b = 3 n^2 c x (I c)``.

    It needs the moments of inertia ``I``, given where it is evaluated:
    ``torque(t, Q, inertia=I)`` (``frb.integrate`` passes the bodies' own)."""

    __slots__ = ("rate", "_form")
    needs_inertia = True
    rate: float
    _form: CompiledTorque

    def __init__(self, n: float) -> None:
        rate = _validate.real_scalar(n, "n")
        self._init(rate=rate, _form=_compiled_form(KIND_GRAVITY_GRADIENT, [rate]))

    def __call__(self, t: float, Q: ArrayLike, m: ArrayLike | None = None, *,
                 inertia: ArrayLike | None = None) -> NDArray[np.float64]:
        if inertia is None:
            raise TypeError("gravity_gradient needs the moments of inertia: call it as "
                            "torque(t, Q, inertia=I)")
        out = self.torque(t, Q, inertia)
        if m is not None:
            _unused(_attitudes(Q, "gravity_gradient"), m, None, "gravity_gradient")
        return out

    def torque(self, t: float, Q: ArrayLike, inertia: ArrayLike) -> NDArray[np.float64]:
        """Body torque for Q of shape (3, 3) or (N, 3, 3) and the moments (3,) or (N, 3), or
        inertia tensors (3, 3) or (N, 3, 3) in the frame of Q (``T_b = 3 n^2 c x (J c)``)."""
        tt = _time(t)
        Qa = _attitudes(Q, "gravity_gradient")
        r = np.array([math.cos(self.rate * tt), math.sin(self.rate * tt), 0.0])
        c = np.einsum("...ji,j->...i", Qa, r)
        with np.errstate(over="ignore", invalid="ignore"):
            out = 3.0 * self.rate**2 * np.cross(c, _times_inertia(inertia, c, Qa,
                                                                  "gravity_gradient"))
        if not np.isfinite(out).all():
            raise ValueError("gravity_gradient: the torque 3 n^2 c x (I c) of n and inertia is "
                             "beyond the float64 range")
        return out

    def __reduce__(self) -> tuple[Any, ...]:
        return (GravityGradient, (self.rate,))

    def in_frame(self, R: ArrayLike) -> Torque:
        """As :meth:`Torque.in_frame`: the torque itself, for any ``R`` (one or per body). With
        ``c' = Q'^T r = R^T c`` and the moments of the frame ``I' = R^T I R``,
        ``R^T (c x I c) = c' x I' c'``: in the principal frame of an inertia tensor it is the
        same formula with the principal moments, which the engine passes."""
        Rm = self._frame(R)
        if type(self) is GravityGradient:
            return self
        return super().in_frame(Rm)

    @property
    def compiled(self) -> CompiledTorque | None:
        if type(self) is not GravityGradient:
            return None
        return self._form

    def __repr__(self) -> str:
        return f"gravity_gradient({self.rate!r})"


def _momentum(m: Any, Qa: NDArray[np.float64], who: str) -> NDArray[np.float64]:
    """The momenta of a direct call: (3,) or one per attitude of ``Qa``."""
    if m is None:
        raise TypeError(f"{who} depends on the angular momentum: call it as torque(t, Q, m)")
    return _batch_of(_validate.real_array(m, "m"), Qa, "m", who, (3,))


def _nonnegative(x: Any, name: str) -> float:
    v = _validate.real_scalar(x, name)
    if v < 0:
        raise ValueError(f"{name} must be >= 0, got {v!r}")
    return v


class LinearDamping(Torque):
    """Linear damping ``T_b = -c m`` (``c >= 0``, a rate: 1 / time); the energy decays, and
    with no other torque the motion is the free motion in the time ``s = (1 - e^{-ct}) / c``
    with ``m`` scaled by ``e^{-ct}`` (EXACT computes it exactly)."""

    __slots__ = ("c", "_form")
    uses_momentum = True
    c: float
    _form: CompiledTorque

    def __init__(self, c: float) -> None:
        value = _nonnegative(c, "c")
        self._init(c=value, _form=_compiled_form(KIND_DAMPING, [value]))

    def __call__(self, t: float, Q: ArrayLike, m: ArrayLike | None = None, *,
                 inertia: ArrayLike | None = None) -> NDArray[np.float64]:
        _time(t)
        Qa = _attitudes(Q, "linear_damping")
        mm = _momentum(m, Qa, "linear_damping")
        _unused(Qa, None, inertia, "linear_damping")
        return -self.c * np.broadcast_to(mm, Qa.shape[:-2] + (3,))

    @property
    def compiled(self) -> CompiledTorque | None:
        return self._form if type(self) is LinearDamping else None

    def in_frame(self, R: ArrayLike) -> Torque:
        """As :meth:`Torque.in_frame`: the torque itself (``-c m`` has no direction of its own)."""
        rotation_argument(R)
        return self if type(self) is LinearDamping else super().in_frame(R)

    def __reduce__(self) -> tuple[Any, ...]:
        return (LinearDamping, (self.c,))

    def __repr__(self) -> str:
        return f"linear_damping({self.c!r})"


class Rotor(Torque):
    """An internal rotor of constant angular momentum ``h`` (body frame: a momentum wheel, the
    rotor of a gyrostat); ``m`` is the momentum of the rigid part. ``T_b = h x w``,
    ``w = I^-1 m``. The spatial momentum ``Q (m + h)`` and the energy ``m . I^-1 m / 2`` are
    conserved by the motion (its potential is zero): to rounding by the exact flow and the
    exact-flow splittings, to their order by the other methods (which kick the rotor's torque).
    ``h`` of shape (3,), or (N, 3) one per body. The body with rotors alone is a gyrostat, whose
    flow ``method="EXACT"`` computes exactly (rotors may be summed); the exact-flow splittings
    take that flow as their free part."""

    __slots__ = ("h", "_form")
    uses_momentum = True
    needs_inertia = True
    has_potential = True
    h: NDArray[np.float64]
    _form: CompiledTorque

    def __init__(self, h: ArrayLike) -> None:
        # (named "rotor h": the routes' h is the time step)
        a = np.array(_validate.real_array(h, "rotor h", finite=False), dtype=np.float64)
        if a.ndim not in (1, 2) or a.shape[-1] != 3:
            raise ValueError(f"rotor h (the rotor's angular momentum) must have shape (3,) or "
                             f"(N, 3), got {a.shape}")
        if not np.isfinite(a).all():
            raise ValueError("rotor h must be finite")
        a.setflags(write=False)
        if a.ndim == 1:
            form = _compiled_form(KIND_ROTOR, a.tolist())
        else:
            body = np.zeros((a.shape[0], TORQUE_TERM_REALS))
            body[:, :3] = a
            form = _compiled_form(KIND_ROTOR, [], body)
        self._init(h=a, _form=form)

    @property
    def internal_momentum(self) -> NDArray[np.float64]:  # type: ignore[override]
        return self.h

    def __call__(self, t: float, Q: ArrayLike, m: ArrayLike | None = None, *,
                 inertia: ArrayLike | None = None) -> NDArray[np.float64]:
        _time(t)
        Qa = _attitudes(Q, "rotor")
        w = _velocity(m, inertia, Qa, "rotor")
        _per_body(self.h, Qa, "h", "rotor")
        return np.cross(self.h, w)

    def potential(self, Q: ArrayLike) -> Any:
        """Zero: the energy of a gyrostat is the kinetic energy of its rigid part."""
        Qa = _attitudes(Q, "potential", any_batch=True)
        if self.h.ndim == 2 and Qa.shape[-3:-2] != self.h.shape[:1]:
            raise ValueError(f"potential: h is given for {self.h.shape[0]} bodies, Q of shape "
                             f"{Qa.shape} holds {Qa.shape[-3] if Qa.ndim > 2 else 1} on its last "
                             "batch axis")
        return 0.0 if Qa.ndim == 2 else np.zeros(Qa.shape[:-2])

    @property
    def compiled(self) -> CompiledTorque | None:
        return self._form if type(self) is Rotor else None

    def in_frame(self, R: ArrayLike) -> Torque:
        """As :meth:`Torque.in_frame`: the rotor of momentum ``R^T h`` (per body for ``R`` per
        body; compiled)."""
        Rm = self._frame(R)
        if type(self) is not Rotor:
            return super().in_frame(Rm)
        return Rotor(np.einsum("...ji,...j->...i", Rm, self.h))

    def _bodies(self, start: int, stop: int) -> Torque:
        """As :meth:`Torque.bodies`: the momenta of those bodies when given per body."""
        if self.h.ndim == 1 or type(self) is not Rotor:
            return self
        return Rotor(self.h[start:stop])

    def __reduce__(self) -> tuple[Any, ...]:
        return (Rotor, (self.h,))

    def __repr__(self) -> str:
        return f"rotor({self.h.tolist()!r})"



class AttitudeControl(Torque):
    """The PD attitude law ``T_b = -kp s e_v - kd (w - w_r)``: ``e = conj(q_r) q`` (scalar
    first), ``e_v`` its vector part, ``s = sign(e0)`` (+1 when ``e0 = 0``: the law is the same
    for ``q`` and ``-q``), ``w = I^-1 m``; ``kp``, ``kd`` numbers ``>= 0`` (torque, and torque
    per angular velocity) or 3 x 3 matrices whose symmetric part is positive semidefinite (e.g.
    ``kp = k J`` with ``J`` the inertia tensor;
    ``-Kp s e_v - Kd w``), or one matrix per body (N, 3, 3). The reference ``q_r``: a fixed
    unit quaternion ``q_ref`` (one, or one per body (N, 4); ``w_r = 0``), a reference turning
    at a constant rate (:func:`frb.wheel_laws.rotating_reference`, compiled; ``w_r = E(e)^T
    rate`` its rate in the body frame), or a Python function of time ``q_ref(t)`` (a tracking
    profile; evaluated from Python, with a NotCompiledWarning, ``w_r = 0``)."""

    __slots__ = ("q_ref", "kp", "kd", "_form")
    uses_momentum = True
    needs_inertia = True
    q_ref: Any
    kp: float | NDArray[np.float64]
    kd: float | NDArray[np.float64]
    _form: Optional[CompiledTorque]

    def __init__(self, q_ref: Any, kp: float | ArrayLike, kd: float | ArrayLike) -> None:
        rate = None
        q: Any
        ref: Any
        if isinstance(q_ref, RotatingReference):
            q, rate, ref = q_ref.q0, q_ref.rate, q_ref
        elif callable(q_ref) and not isinstance(q_ref, (np.ndarray, list, tuple)):
            if not _validate.takes_positional(q_ref, 1):
                raise TypeError(f"q_ref {getattr(q_ref, '__name__', None) or q_ref!r} must take "
                                "the time alone: q_ref(t) -> unit quaternions")
            q, ref = None, q_ref
        else:
            q = ref = unit_quaternions(q_ref, "q_ref")
        kp_, kd_ = gain_matrices(kp, "kp"), gain_matrices(kd, "kd")
        counts = {x.shape[0] for x in (q, rate, kp_, kd_) if isinstance(x, np.ndarray) and
                  x.ndim == (3 if x is kp_ or x is kd_ else 2)}
        if len(counts) > 1:
            raise ValueError(f"q_ref, kp and kd given per body must be given for the same number "
                             f"of bodies, got {sorted(counts)}")
        n = counts.pop() if counts else None
        form = None
        if q is not None:
            matrices = not (isinstance(kp_, float) and isinstance(kd_, float))
            turning = np.zeros(4) if rate is None else np.concatenate(
                [np.broadcast_to(rate, (n, 3)) if n else rate,
                 np.full((n, 1) if n else (1,), ref.t_ref)], axis=-1)
            blocks = [np.full((n,) if n else (), float(matrices))[..., None],
                      _gain_block(kp_ if not matrices or not isinstance(kp_, float)
                                  else kp_ * np.eye(3), n),
                      _gain_block(kd_ if not matrices or not isinstance(kd_, float)
                                  else kd_ * np.eye(3), n),
                      np.broadcast_to(q, (n, 4)) if n else q,
                      np.broadcast_to(turning, (n, 4)) if n else turning]
            row = np.concatenate(blocks, axis=-1)
            form = _compiled_form(KIND_ATTITUDE_CONTROL, row) if n is None else \
                _compiled_form(KIND_ATTITUDE_CONTROL, [], np.pad(
                    row, ((0, 0), (0, TORQUE_TERM_REALS - row.shape[1]))))
        self._init(q_ref=ref, kp=kp_, kd=kd_, _form=form)

    def reference(self, t: float) -> NDArray[np.float64]:
        """The reference quaternions at the time ``t``, (4,) or (N, 4)."""
        t = _time(t)
        if isinstance(self.q_ref, np.ndarray):
            return self.q_ref
        q = unit_quaternions(self.q_ref(t), "q_ref(t)")
        return q

    def _rate(self) -> Optional[NDArray[np.float64]]:
        return self.q_ref.rate if isinstance(self.q_ref, RotatingReference) else None

    def error(self, Q: ArrayLike, t: float = 0.0) -> NDArray[np.float64]:
        """The error quaternions ``conj(q_r(t)) q`` of attitudes ``Q`` (..., 3, 3), with
        ``e0 >= 0``."""
        tt = _time(t)
        Qa = _attitudes(Q, "error", any_batch=True)
        qr = self.reference(tt)
        _per_body(qr, Qa, "q_ref" if qr is self.q_ref else "q_ref(t)", "attitude_control")
        q = np.asarray(matrix_to_quat_unchecked(Qa))
        conj = qr * np.array([1.0, -1.0, -1.0, -1.0])
        e = quaternion_product(conj, q)
        return np.where(e[..., :1] < 0, -e, e)

    def __call__(self, t: float, Q: ArrayLike, m: ArrayLike | None = None, *,
                 inertia: ArrayLike | None = None) -> NDArray[np.float64]:
        tt = _time(t)
        Qa = _attitudes(Q, "attitude_control")
        w = _velocity(m, inertia, Qa, "attitude_control")
        if isinstance(self.q_ref, np.ndarray):
            _per_body(self.q_ref, Qa, "q_ref", "attitude_control")
        e = self.error(Qa, tt)
        rate = self._rate()
        if rate is not None:
            Qe = np.asarray(quat_to_matrix_unchecked(e))
            w = w - np.einsum("...ji,...j->...i", Qe, np.broadcast_to(rate, np.shape(w)))
        return -_times(self.kp, e[..., 1:]) - _times(self.kd, w)

    @property
    def compiled(self) -> CompiledTorque | None:
        return self._form if type(self) is AttitudeControl else None

    @property
    def not_compiled_reason(self) -> Optional[str]:
        """Why the law is evaluated from Python (None when it is compiled)."""
        if self._form is None:
            return ("attitude_control takes q_ref as a Python function of time (a reference "
                    "turning at a constant rate, frb.wheel_laws.rotating_reference, stays "
                    "compiled)")
        return None

    def in_frame(self, R: ArrayLike) -> Torque:
        """As :meth:`Torque.in_frame`: the law with the reference ``q_ref r`` (``r`` the
        quaternion of ``R``; a rate ``R^T rate``) and gain matrices ``R^T K R`` (per body for
        ``R`` per body; compiled unless ``q_ref`` is a Python function of time)."""
        Rm = self._frame(R)
        if type(self) is not AttitudeControl:
            return super().in_frame(Rm)
        r = np.asarray(matrix_to_quat(Rm))
        ref: Any
        if isinstance(self.q_ref, RotatingReference):
            q = quaternion_product(self.q_ref.q0, r)
            ref = RotatingReference(q / np.linalg.norm(q, axis=-1, keepdims=True),
                                    np.einsum("...ji,...j->...i", Rm, self.q_ref.rate),
                                    self.q_ref.t_ref)
        elif isinstance(self.q_ref, np.ndarray):
            q = quaternion_product(self.q_ref, r)
            ref = q / np.linalg.norm(q, axis=-1, keepdims=True)
        else:
            ref = TurnedReference(self.q_ref, r)
        return AttitudeControl(ref, turned_gain(self.kp, Rm), turned_gain(self.kd, Rm))

    def _bodies(self, start: int, stop: int) -> Torque:
        """As :meth:`Torque.bodies`: the references and gains of those bodies when given per
        body."""
        if type(self) is not AttitudeControl or self._form is None or self._form.body is None:
            return self
        ref: Any = self.q_ref
        if isinstance(ref, RotatingReference):
            ref = RotatingReference(_rows(ref.q0, start, stop, 1), _rows(ref.rate, start, stop, 1),
                                    ref.t_ref)
        else:
            ref = _rows(ref, start, stop, 1)
        return AttitudeControl(ref, _rows(self.kp, start, stop, 2), _rows(self.kd, start, stop, 2))

    def __reduce__(self) -> tuple[Any, ...]:
        return (AttitudeControl, (self.q_ref, self.kp, self.kd))

    def __repr__(self) -> str:
        def text(x: Any) -> str:
            return repr(x) if isinstance(x, float) else repr(x.tolist())
        ref = repr(self.q_ref.tolist()) if isinstance(self.q_ref, np.ndarray) else repr(self.q_ref)
        return f"attitude_control({ref}, {text(self.kp)}, {text(self.kd)})"


def _times(k: float | NDArray[np.float64], v: NDArray[np.float64]) -> NDArray[np.float64]:
    """k v for a gain k (a number, a matrix (3, 3) or one per body (N, 3, 3)) and vectors v
    (..., 3)."""
    if isinstance(k, float):
        return k * v
    return np.einsum("...ij,...j->...i", k, v)


def turned_gain(k: float | NDArray[np.float64], R: NDArray[np.float64]
                ) -> float | NDArray[np.float64]:
    """A gain seen in the frame turned by R (3, 3) or (N, 3, 3): a number as it is, a matrix
    ``R^T K R`` (per body for R or K per body)."""
    if isinstance(k, float):
        return k
    return np.einsum("...ji,...jk,...kl->...il", R, k, R)


def _rows(x: Any, start: int, stop: int, ndim: int) -> Any:
    """x[start:stop] when x is given per body (an array of ndim + 1 dimensions), else x."""
    if isinstance(x, np.ndarray) and x.ndim == ndim + 1:
        return x[start:stop]
    return x


def _rotors_combined(terms: list[Torque]) -> list[Torque]:
    """The terms with their rotors (:class:`Rotor`) combined into one, of momentum the sum of
    theirs, where the first stood: constant rotors add, and their sum is one gyrostat whatever
    the number of wheels. Per-body rotors of different numbers of bodies are refused."""
    where = [i for i, tq in enumerate(terms) if type(tq) is Rotor]
    if len(where) < 2:
        return terms
    rotors = [cast(Rotor, terms[i]) for i in where]
    counts = sorted({r.h.shape[0] for r in rotors if r.h.ndim == 2})
    if len(counts) > 1:
        raise ValueError(f"rotor h: the rotors of a sum are given for {counts} bodies; per-body "
                         "rotors (h of shape (N, 3)) added together must have the same N")
    total = rotors[0].h
    for r in rotors[1:]:
        total = total + r.h
    combined = Rotor(total)
    # (by position: the same rotor may be a term more than once, r + r)
    return [combined if i == where[0] else tq for i, tq in enumerate(terms)
            if i == where[0] or type(tq) is not Rotor]


class TorqueSum(Torque):
    """A sum of torques (``a + b``). A sum of built-in torques has a compiled form (at most
    ``MAX_TORQUE_TERMS`` terms, per-body parameters in one of them at most); any other is
    called from Python. It has a potential when every term has one. Rotors in a sum are
    combined into one (their momenta added)."""

    __slots__ = ("terms", "_form")
    terms: tuple[Torque, ...]
    _form: Optional[CompiledTorque]

    def __init__(self, terms: Sequence[Any]) -> None:
        if isinstance(terms, (str, bytes)) or not hasattr(terms, "__iter__"):
            raise TypeError(f"terms must be a sequence of torques, got {type(terms).__name__}")
        flat: list[Torque] = []
        for term in terms:
            tq = as_torque(term)
            if tq is None:
                continue
            flat.extend(tq.terms if type(tq) is TorqueSum else (tq,))
        if not flat:
            raise ValueError("a sum of torques needs at least one torque")
        flat = _rotors_combined(flat)
        forms = [tq.compiled for tq in flat]
        form = None if any(f is None for f in forms) else _sum_form(
            [f for f in forms if f is not None])
        self._init(terms=tuple(flat), _form=form)

    @property
    def uses_momentum(self) -> bool:  # type: ignore[override]
        return any(tq.uses_momentum for tq in self.terms)

    @property
    def needs_inertia(self) -> bool:  # type: ignore[override]
        return any(tq.needs_inertia for tq in self.terms)

    @property
    def has_potential(self) -> bool:  # type: ignore[override]
        return all(tq.has_potential for tq in self.terms)

    @property
    def internal_momentum(self) -> Optional[NDArray[np.float64]]:  # type: ignore[override]
        hs = [tq.internal_momentum for tq in self.terms if tq.internal_momentum is not None]
        if not hs:
            return None
        total = hs[0]
        for h in hs[1:]:
            total = total + h
        return total

    def __call__(self, t: float, Q: ArrayLike, m: ArrayLike | None = None, *,
                 inertia: ArrayLike | None = None) -> NDArray[np.float64]:
        total: Any = 0.0
        Q = _attitudes(Q, "torque")
        want = Q.shape[:-2] + (3,)
        for tq in self.terms:
            if tq.needs_inertia:
                res = tq(t, Q, m, inertia=inertia)
            elif tq.uses_momentum:
                res = tq(t, Q, m)
            else:
                res = tq(t, Q)
            # each term's result as a torque alone is checked (no broadcast of one term over
            # the bodies, no conversion of strings)
            arr = _validate.returned(res, f"torque {shown(tq)} in a sum") if res is not None \
                else np.empty(0, dtype=object)
            if arr.dtype.kind not in "iuf" or arr.dtype == bool:
                raise TypeError(f"torque {shown(tq)} in a sum must return real numbers, got "
                                 f"{'None' if res is None else f'dtype {arr.dtype}'}")
            if arr.shape == (3,) and want == (1, 3):
                arr = arr.reshape(1, 3)     # (one body: (3,) as a torque alone may give it)
            if arr.shape != want:
                raise ValueError(f"torque {shown(tq)} in a sum must return an array of shape "
                                 f"{want}, got {arr.shape}")
            total = total + arr.astype(np.float64)
        return np.asarray(total)

    def potential(self, Q: ArrayLike) -> Any:
        """The sum of the terms' potentials (AttributeError when one has none)."""
        if not self.has_potential:
            raise AttributeError(f"the torque {self!r} has no potential energy")
        return sum(tq.potential(Q) for tq in self.terms)

    @property
    def compiled(self) -> CompiledTorque | None:
        return self._form

    def in_frame(self, R: ArrayLike) -> Torque:
        """As :meth:`Torque.in_frame`: the sum of the terms in that frame."""
        return TorqueSum([tq.in_frame(R) for tq in self.terms])

    @property
    def couples_bodies(self) -> bool:  # type: ignore[override]
        return any(tq.couples_bodies for tq in self.terms)

    def _bodies(self, start: int, stop: int) -> Torque:
        """As :meth:`Torque.bodies`: the sum of the terms of those bodies."""
        return TorqueSum([tq.bodies(start, stop) for tq in self.terms])

    def __reduce__(self) -> tuple[Any, ...]:
        return (TorqueSum, (self.terms,))

    def __repr__(self) -> str:
        return " + ".join(repr(tq) for tq in self.terms)


class UserTorque(Torque):
    """A plain callable ``function(t, Q)`` or ``function(t, Q, m)`` as a :class:`Torque`
    (:func:`as_torque` makes one). ``Q`` has shape (N, 3, 3) and ``m`` (N, 3), both
    read-only; the result has shape (N, 3). ``couples_bodies``: whether a body's torque
    depends on the other bodies (default: the function's attribute ``couples_bodies``, else
    False)."""

    __slots__ = ("function", "uses_momentum", "couples_bodies")
    function: Callable[..., ArrayLike]
    uses_momentum: bool
    couples_bodies: bool

    def __init__(self, function: Callable[..., ArrayLike], couples_bodies: bool | None = None
                 ) -> None:
        if not callable(function):
            raise TypeError(f"torque must be callable, got {type(function).__name__}")
        if couples_bodies is None:
            couples_bodies = getattr(function, "couples_bodies", False) is True
        elif not isinstance(couples_bodies, bool):
            raise TypeError(f"couples_bodies must be True or False, got {couples_bodies!r}")
        code = getattr(function, "__code__", None)
        if code is not None and inspect.isfunction(function) and code.co_argcount < 2 and \
                not code.co_flags & inspect.CO_VARARGS:
            raise TypeError(f"torque {getattr(function, '__name__', None) or function!r} must "
                            "take the time and the attitudes, torque(t, Q) or torque(t, Q, m), "
                            f"but it takes {code.co_argcount} positional argument(s)")
        required = _required_positional(function)
        if required is not None and required > 3:
            raise TypeError(f"torque {getattr(function, '__name__', None) or function!r} must "
                            "take the time and the attitudes, torque(t, Q) or torque(t, Q, m), "
                            f"but it requires {required} positional arguments")
        self._init(function=function, uses_momentum=_positional_count(function) >= 3,
                   couples_bodies=couples_bodies)

    def __call__(self, t: float, Q: ArrayLike, m: ArrayLike | None = None, *,
                 inertia: ArrayLike | None = None) -> NDArray[np.float64]:
        t = _time(t)
        Qa = _attitudes(Q, self.name)
        if self.uses_momentum:
            mm = None if m is None else _momentum(m, Qa, self.name)
            _unused(Qa, None, inertia, self.name)
            return _validate.returned(self.function(t, Qa, mm), f"torque {self.name}")
        _unused(Qa, m, inertia, self.name)
        return _validate.returned(self.function(t, Qa), f"torque {self.name}")

    def _bodies(self, start: int, stop: int) -> Torque:
        """As :meth:`Torque.bodies`: a torque seen in rotated frames given per body takes
        those bodies' rotations; any other user torque is itself (it is called with the
        attitudes of the bodies it acts on)."""
        select = getattr(self.function, "bodies", None)
        if isinstance(self.function, FrameTorque) and callable(select):
            return UserTorque(select(start, stop), self.couples_bodies)
        return self

    def __reduce__(self) -> tuple[Any, ...]:
        return (UserTorque, (self.function, self.couples_bodies))

    @property
    def name(self) -> str:
        """The callable's name, for messages."""
        return getattr(self.function, "__name__", None) or repr(self.function)

    def __repr__(self) -> str:
        return f"UserTorque({self.function!r})"


# Torques seen in a rotated body frame (Torque.in_frame; the principal frame of an inertia tensor)

class FrameTorque:
    """A torque seen in a rotated body frame: ``T'(t, Q') = R^T T(t, Q' R^T)`` (``R`` (3, 3)
    or one per body (n, 3, 3)), the function of the :class:`~UserTorque` that
    :func:`frame_torque` makes. The attitudes passed to ``torque`` are read-only (so that one
    modified in place is reported as for any user torque); a result that is not a real array
    of shape (n, 3) or (3,) is returned as it is, for the engine to report."""

    def __init__(self, torque: Torque, R: NDArray[np.float64]) -> None:
        self.torque = torque
        self.R = R
        name = torque.name if isinstance(torque, UserTorque) else repr(torque)
        self.__name__ = name

    def bodies(self, start: int, stop: int) -> FrameTorque:
        """This torque for the bodies start .. stop - 1 alone (their rotations when per body)."""
        start, stop = _validate.body_range(start, stop)
        if self.R.ndim == 3 and stop > self.R.shape[0]:
            raise ValueError(f"stop = {stop} is beyond the {self.R.shape[0]} bodies R is given "
                             "for")
        R = self.R if self.R.ndim == 2 else self.R[start:stop]
        return type(self)(self.torque.bodies(start, stop), R)

    def user_attitude(self, Q: NDArray[np.float64]) -> NDArray[np.float64]:
        """``Q' R^T``, read-only."""
        Qu = np.asarray(Q, dtype=np.float64) @ np.swapaxes(self.R, -1, -2)
        Qu.flags.writeable = False
        return Qu

    def principal_torque(self, res: Any) -> Any:
        """``R^T T`` of a result ``T`` of the torque (unchanged when it is not one)."""
        if res is None:
            return None
        try:
            arr = _validate.returned(res, "torque")
        except TypeError:       # (a boolean or bytes inside a list, masked entries)
            raise
        except Exception:       # noqa: BLE001 - left to the engine's checks
            return res
        if arr.dtype.kind not in "iuf" or arr.shape[-1:] != (3,) or arr.ndim > 2:
            return res
        return rotate_back(self.R, arr.astype(np.float64))

    def __call__(self, t: float, Q: NDArray[np.float64]) -> Any:
        return self.principal_torque(self.torque(t, self.user_attitude(Q)))

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.torque!r}, R)"


class FrameTorqueOfMomentum(FrameTorque):
    """:class:`FrameTorque` of a torque of the angular momentum: ``T'(t, Q', m') = R^T T(t,
    Q' R^T, R m')`` (``R m'`` read-only)."""

    def __call__(self, t: float, Q: NDArray[np.float64],  # type: ignore[override]
                 m: NDArray[np.float64]) -> Any:
        mu = rotate(self.R, np.asarray(m, dtype=np.float64))
        mu.flags.writeable = False
        return self.principal_torque(self.torque(t, self.user_attitude(Q), mu))


def frame_torque(torque: Torque, R: ArrayLike) -> UserTorque:
    """``torque`` seen in the frame rotated by ``R``, as a :class:`~UserTorque`
    (called from Python once per stage): ``T'(t, Q', m') = R^T T(t, Q' R^T, R m')``. The
    generic :meth:`frb.torques.Torque.in_frame`."""
    Rm = rotation_argument(R)
    cls = FrameTorqueOfMomentum if torque.uses_momentum else FrameTorque
    return UserTorque(cls(torque, Rm), couples_bodies=torque.couples_bodies)


def _positional_count(function: Callable[..., Any]) -> int:
    """Number of required positional parameters of a callable (2 when it cannot be told)."""
    code = getattr(function, "__code__", None)
    if code is not None and not isinstance(function, type):
        # a plain function (the usual torque): its code object, without inspect's cost on
        # every call of integrate
        return code.co_argcount - len(getattr(function, "__defaults__", None) or ())
    try:
        params = inspect.signature(function).parameters.values()
    except (TypeError, ValueError):
        return 2
    return sum(1 for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)
               and p.default is p.empty)


def _required_positional(function: Callable[..., Any]) -> Optional[int]:
    """The positional parameters a callable requires (inspect.signature; bound methods without
    their instance), or None when its signature cannot be read."""
    try:
        params = inspect.signature(function).parameters.values()
    except (TypeError, ValueError):
        return None
    return sum(1 for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)
               and p.default is p.empty)


def as_torque(torque: Any) -> Optional[Torque]:
    """``torque`` as a :class:`Torque`: None stays None, a Torque is returned as it is, a plain
    callable is wrapped into a :class:`UserTorque`; anything else raises TypeError."""
    if torque is None:
        return torque
    if isinstance(torque, Torque):
        if type(torque).__call__ is Torque.__call__:
            raise TypeError(f"torque: {type(torque).__name__} defines no __call__(t, Q, m=None) "
                            "(frb.torques.Torque is the base of torques: a subclass gives the "
                            "body torque, or pass a plain callable torque(t, Q) -> T_b)")
        return torque
    if callable(torque):
        return UserTorque(torque)
    raise TypeError("torque must be None, a torque of frb.torques or a callable torque(t, Q) -> "
                    f"T_b, got {type(torque).__name__}")


def constant_field(u0: ArrayLike) -> ConstantField:
    """Torque of a constant spatial field ``u0`` on the third body axis; see
    :class:`ConstantField`.

    Examples
    --------
    >>> import numpy as np
    >>> import frb
    >>> field = frb.torques.constant_field([0.0, 0.0, 1.0])
    >>> field(0.0, np.eye(3))                    # T_b = (Q^T u0) x e3
    array([0., 0., 0.])
    """
    return ConstantField(u0)


def heavy_top(weight: float, center: ArrayLike) -> HeavyTop:
    """Heavy top with gravity ``weight`` along ``-z`` and centre of mass ``center`` (body frame);
    see :class:`HeavyTop`.

    Examples
    --------
    A top of mass 1 kg in g = 9.81 m/s^2, centre of mass 0.1 m up its third axis:

    >>> import frb
    >>> top = frb.torques.heavy_top(9.81, [0.0, 0.0, 0.1])
    >>> tr = frb.integrate([0.0, 0.0, 5.0], [1.0, 0.0, 0.0, 0.0], [0.02, 0.02, 0.01], 1e-3, 100,
    ...                    method="RKN6_14", torque=top)
    >>> print(f"{tr.energy[0]:.4f}")                 # kinetic 1250 J, potential 0.981 J
    1250.9810
    """
    return HeavyTop(weight, center)


def gravity_gradient(n: float) -> GravityGradient:
    """Gravity-gradient torque of a circular orbit of rate ``n``; see :class:`GravityGradient`.

    Examples
    --------
    >>> import frb
    >>> gg = frb.torques.gravity_gradient(1.1e-3)          # orbital rate in rad/s (low Earth orbit)
    >>> tr = frb.integrate([0.0, 0.0, 0.05], [1.0, 0.0, 0.0, 0.0], [10.0, 12.0, 15.0], 1.0, 600,
    ...                    method="RKN6_14", torque=gg, save_every=None)
    >>> tr.t
    array([600.])
    """
    return GravityGradient(n)


def linear_damping(c: float) -> LinearDamping:
    """Linear damping ``T_b = -c m`` with ``c >= 0``; see :class:`LinearDamping`.

    Examples
    --------
    >>> import frb
    >>> tr = frb.integrate([0.3, 0.5, 0.8], [1.0, 0.0, 0.0, 0.0], [1.0, 2.0, 3.0], 0.1, 10,
    ...                    method="EXACT", torque=frb.torques.linear_damping(0.5))
    >>> bool(abs(tr.kinetic_energy[-1] / tr.kinetic_energy[0] - 2.718281828459045**-1) < 1e-12)
    True
    """
    return LinearDamping(c)


def rotor(h: ArrayLike) -> Rotor:
    """An internal rotor (momentum wheel) of constant body momentum ``h``; see :class:`Rotor`."""
    return Rotor(h)


def attitude_control(q_ref: Any, kp: float | ArrayLike, kd: float | ArrayLike
                     ) -> AttitudeControl:
    """The PD attitude law ``-kp s e_v - kd (w - w_r)`` towards ``q_ref`` (gains numbers or
    3 x 3 matrices; ``q_ref`` a unit quaternion, one per body, a
    :func:`frb.wheel_laws.rotating_reference` or a Python function of time); see
    :class:`AttitudeControl`."""
    return AttitudeControl(q_ref, kp, kd)

