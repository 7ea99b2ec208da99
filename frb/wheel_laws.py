"""Motor-torque laws of reaction wheels (:class:`frb.Wheels`): ``u = law(t, Q, m, h)``.

A law gives the motor torques ``u`` (N, nw) of the wheels of every body; the wheels' momenta obey
``h' = u`` and the body receives ``-A u`` (:mod:`frb.wheels`). Two kinds:

* :func:`quaternion_feedback` ``(q_ref, kp, kd, u_max=None, h_max=None, gyroscopic=False)``: the
  law of :func:`frb.torques.attitude_control` realised by the wheels, compiled into the time
  loop. The desired body torque is ``L = -Kp s e_v - Kd (w - w_r)`` with ``e = conj(q_r) q``
  (scalar first), ``s = sign(e0)`` (+1 when ``e0 = 0``), ``w = I^-1 m`` and ``w_r`` the rate of
  the reference in the body frame (zero for a fixed reference), optionally with the gyroscopic
  compensation ``+ w x (m + A h)``; it is distributed over the wheels by the pseudo-inverse,
  ``u = -A^+ L`` (the least ``|u|`` giving ``-A u = L``), and limited wheel by wheel:
  ``|u_i| <= u_max`` (clipped) and ``|h_i| <= h_max`` (a wheel at its momentum limit gives no
  torque that would carry it beyond; it stays at the limit). Markley and Crassidis,
  *Fundamentals of Spacecraft Attitude Determination and Control* (2014), eq. (7.10) and
  section 7.2.2; B. Wie, *Space Vehicle Dynamics and Control* (2008), section 7.3.
* any callable ``law(t, Q, m, h) -> u``: a user law, called from the compiled loop once per stage
  for the whole batch with ``Q`` (N, 3, 3), ``m`` (N, 3) and ``h`` (N, nw), read-only; it must
  return finite reals of shape (N, nw).

The reference ``q_ref`` is one unit quaternion, one per body (N, 4), a reference turning at a
constant rate (:func:`rotating_reference`, compiled), or any function of time ``q_ref(t) ->
(4,) or (N, 4)`` (tracking; the law is then evaluated from Python, with a
:class:`frb.NotCompiledWarning`).
"""
from __future__ import annotations

import math
from typing import Any, Callable, Optional, Union

import numpy as np
from numpy.typing import ArrayLike, NDArray

from . import _numbers_table as _sn
from . import _validate
from ._references import (RotatingReference, TurnedReference, normalized, rotating_reference,
                          unit_quaternions)
from .rotations import matrix_to_quat, quaternion_product, rotation_argument
from .torques import gain_matrices, turned_gain

__all__ = ["WheelLaw", "QuaternionFeedback", "RotatingReference", "UserLaw", "as_wheel_law",
           "quaternion_feedback", "rotating_reference"]

_CONJ = np.array([1.0, -1.0, -1.0, -1.0])


class WheelLaw:
    """Base of the wheel laws (immutable)."""

    __slots__ = ()

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError(f"{type(self).__name__} is immutable: make a new law instead of "
                             f"setting {name!r}")

    @property
    def compiled(self) -> bool:
        """True when the compiled loop evaluates the law (no Python call per stage)."""
        return False

    def in_frame(self, R: ArrayLike) -> WheelLaw:
        """The law seen in the body frame turned by ``R`` (3, 3) or (N, 3, 3) (the principal
        frame of an inertia tensor): ``law'(t, Q', m', h) = law(t, Q' R^T, R m', h)`` (the wheel
        torques are the same in every frame)."""
        raise NotImplementedError

    def bodies(self, start: int, stop: int) -> WheelLaw:
        """The law of the bodies ``start`` to ``stop - 1`` alone (``0 <= start <= stop``
        integers, at least one body and ``stop`` at most the number of bodies the per-body
        parameters are given for)."""
        count = getattr(self, "bodies_count", None)
        return self._bodies(*_validate.body_range(start, stop, count, repr(self)))

    def _bodies(self, start: int, stop: int) -> WheelLaw:
        """:meth:`bodies` of checked ``start``, ``stop`` (a law with per-body parameters
        overrides it)."""
        return self


Reference = Union[NDArray[np.float64], RotatingReference, Callable[[float], ArrayLike]]


class QuaternionFeedback(WheelLaw):
    """The quaternion feedback realised through the wheels (see the module): made by
    :func:`quaternion_feedback`.

    Attributes
    ----------
    q_ref : ndarray (4,) or (N, 4), a :class:`RotatingReference`, or a callable ``q_ref(t)``
    kp, kd : float, ndarray (3, 3) or (N, 3, 3)
    u_max, h_max : float (``inf``: no limit)
    gyroscopic : bool
    """

    __slots__ = ("q_ref", "kp", "kd", "u_max", "h_max", "gyroscopic")
    q_ref: Reference
    kp: float | NDArray[np.float64]
    kd: float | NDArray[np.float64]
    u_max: float
    h_max: float
    gyroscopic: bool

    def __init__(self, q_ref: Any, kp: Any, kd: Any, u_max: float | None = None,
                 h_max: float | None = None, gyroscopic: bool = False) -> None:
        if isinstance(q_ref, RotatingReference):
            ref: Reference = q_ref
        elif callable(q_ref):
            if not _validate.takes_positional(q_ref, 1):
                raise TypeError(f"q_ref {getattr(q_ref, '__name__', None) or q_ref!r} must take "
                                "the time alone: q_ref(t) -> unit quaternions")
            ref = q_ref
        else:
            ref = unit_quaternions(q_ref, "q_ref")
        values = dict(q_ref=ref, kp=gain_matrices(kp, "kp"), kd=gain_matrices(kd, "kd"),
                      u_max=_limit(u_max, "u_max"), h_max=_limit(h_max, "h_max"),
                      gyroscopic=_validate.flag(gyroscopic, "gyroscopic"))
        for name, value in values.items():
            object.__setattr__(self, name, value)
        if self.bodies_count is None and len(self._counts()) > 1:
            raise ValueError("q_ref, kp and kd given per body must be given for the same number "
                             f"of bodies, got {sorted(self._counts())}")

    def _counts(self) -> set[int]:
        counts = set()
        for x, d in ((self._quaternion(), 2), (self._rate(), 2), (self.kp, 3), (self.kd, 3)):
            if isinstance(x, np.ndarray) and x.ndim == d:
                counts.add(int(x.shape[0]))
        return counts

    @property
    def bodies_count(self) -> Optional[int]:
        """The number of bodies of the parameters given per body, else None."""
        counts = self._counts()
        return counts.pop() if len(counts) == 1 else None

    def _quaternion(self) -> Optional[NDArray[np.float64]]:
        if isinstance(self.q_ref, RotatingReference):
            return self.q_ref.q0
        return self.q_ref if isinstance(self.q_ref, np.ndarray) else None

    def _rate(self) -> Optional[NDArray[np.float64]]:
        return self.q_ref.rate if isinstance(self.q_ref, RotatingReference) else None

    @property
    def compiled(self) -> bool:
        """True unless ``q_ref`` is a Python function of time."""
        return type(self) is QuaternionFeedback and self._quaternion() is not None

    def parameters(self, n: int) -> NDArray[np.float64]:
        """The law's parameters as the compiled loop takes them: (1, LAW_REALS) for all bodies,
        or (n, LAW_REALS) when some are given per body (slots LAW_* of the shared numbers)."""
        q = self._quaternion()
        assert q is not None
        rate = self._rate()
        per_body = self.bodies_count is not None
        rows = n if per_body else 1
        p = np.zeros((rows, _sn.LAW_REALS))
        p[:, _sn.LAW_Q_REF - 1:_sn.LAW_Q_REF + 3] = q
        for slot, k in ((_sn.LAW_KP, self.kp), (_sn.LAW_KD, self.kd)):
            K = k * np.eye(3) if isinstance(k, float) else k
            p[:, slot - 1:slot + 8] = np.swapaxes(K, -1, -2).reshape(np.shape(K)[:-2] + (9,))
        if rate is not None:
            p[:, _sn.LAW_RATE - 1:_sn.LAW_RATE + 2] = rate
            p[:, _sn.LAW_T_REF - 1] = self.q_ref.t_ref        # type: ignore[union-attr]
        p[:, _sn.LAW_U_MAX - 1] = self.u_max
        p[:, _sn.LAW_H_MAX - 1] = self.h_max
        p[:, _sn.LAW_GYROSCOPIC - 1] = float(self.gyroscopic)
        return p

    def reference(self, t: float) -> NDArray[np.float64]:
        """The reference quaternions at the time t, (4,) or (N, 4)."""
        if not (type(t) is float and t - t == 0.0):
            t = _validate.real_scalar(t, "t")
        if isinstance(self.q_ref, np.ndarray):
            return self.q_ref
        return unit_quaternions(self.q_ref(t), "q_ref(t)")

    def torques(self, t: float, Q: ArrayLike, m: ArrayLike, h: ArrayLike, inertia: ArrayLike,
                axes: ArrayLike, pseudo_inverse: ArrayLike) -> NDArray[np.float64]:
        """The motor torques (N, nw) of the law for attitudes Q (N, 3, 3), momenta m (N, 3),
        wheel momenta h (N, nw), principal moments (N, 3) or (3,), axes (nw, 3) or (N, nw, 3)
        and their pseudo-inverse (nw, 3) or (N, nw, 3), in numpy (the law of a ``q_ref`` given
        as a Python function of time; the compiled loop evaluates the same formula)."""
        Qa = np.asarray(Q, dtype=np.float64)
        q = np.asarray(matrix_to_quat(Qa))
        qr = self.reference(t)
        if qr.ndim == 2 and qr.shape[0] != q.reshape(-1, 4).shape[0]:
            raise ValueError(f"q_ref(t) gives {qr.shape[0]} reference quaternions at t = "
                             f"{_validate.fmt(t)}, the run has {q.reshape(-1, 4).shape[0]} "
                             "bodies")
        e = quaternion_product(qr * _CONJ, q)
        ev = np.where(e[..., :1] < 0, -1.0, 1.0) * e[..., 1:]
        mm = np.asarray(m, dtype=np.float64)
        w = mm / np.asarray(inertia, dtype=np.float64)
        werr = w
        rate = self._rate()
        if rate is not None:
            werr = w - np.einsum("...ji,...j->...i", _matrix(e), np.broadcast_to(rate, w.shape))
        L = -_apply(self.kp, ev) - _apply(self.kd, werr)
        a = np.asarray(axes, dtype=np.float64)
        hh = np.asarray(h, dtype=np.float64)
        if self.gyroscopic:
            L = L + np.cross(w, mm + np.einsum("...ij,...i->...j", a, hh))
        u = -np.einsum("...ij,...j->...i", np.asarray(pseudo_inverse, dtype=np.float64), L)
        u = np.clip(u, -self.u_max, self.u_max)
        stop = ((hh >= self.h_max) & (u > 0)) | ((hh <= -self.h_max) & (u < 0))
        return np.where(stop, 0.0, u)

    def in_frame(self, R: ArrayLike) -> QuaternionFeedback:
        """As :meth:`WheelLaw.in_frame`: the reference ``q_ref r`` (its rate ``R^T rate``), the
        gains ``R^T K R`` (per body for ``R`` per body)."""
        Rm = rotation_argument(R)
        r = np.asarray(matrix_to_quat(Rm))
        ref: Any
        if isinstance(self.q_ref, RotatingReference):
            q0 = normalized(quaternion_product(self.q_ref.q0, r))
            ref = RotatingReference(q0, np.einsum("...ji,...j->...i", Rm, self.q_ref.rate),
                                    self.q_ref.t_ref)
        elif isinstance(self.q_ref, np.ndarray):
            ref = normalized(quaternion_product(self.q_ref, r))
        else:
            ref = TurnedReference(self.q_ref, r)
        return QuaternionFeedback(ref, turned_gain(self.kp, Rm), turned_gain(self.kd, Rm),
                                  self.u_max, self.h_max, self.gyroscopic)

    def _bodies(self, start: int, stop: int) -> QuaternionFeedback:
        """As :meth:`WheelLaw.bodies`: the parameters given per body sliced."""
        if self.bodies_count is None:
            return self
        ref: Any = self.q_ref
        if isinstance(ref, RotatingReference):
            ref = RotatingReference(_rows(ref.q0, start, stop, 1), _rows(ref.rate, start, stop, 1),
                                    ref.t_ref)
        elif isinstance(ref, np.ndarray):
            ref = _rows(ref, start, stop, 1)
        return QuaternionFeedback(ref, _rows(self.kp, start, stop, 2),
                                  _rows(self.kd, start, stop, 2), self.u_max, self.h_max,
                                  self.gyroscopic)

    def __reduce__(self) -> tuple[Any, ...]:
        return (QuaternionFeedback, (self.q_ref, self.kp, self.kd, self.u_max, self.h_max,
                                     self.gyroscopic))

    def __repr__(self) -> str:
        def text(x: Any) -> str:
            return repr(x.tolist()) if isinstance(x, np.ndarray) else repr(x)
        return (f"quaternion_feedback({text(self.q_ref)}, {text(self.kp)}, {text(self.kd)}, "
                f"u_max={self.u_max!r}, h_max={self.h_max!r}, gyroscopic={self.gyroscopic!r})")


class UserLaw(WheelLaw):
    """A plain callable ``function(t, Q, m, h) -> u`` as a wheel law (:func:`as_wheel_law`)."""

    __slots__ = ("function",)
    function: Callable[..., ArrayLike]

    def __init__(self, function: Callable[..., ArrayLike]) -> None:
        if not callable(function):
            raise TypeError(f"wheel_law must be callable, got {type(function).__name__}")
        if not _validate.takes_positional(function, 4):
            raise TypeError(f"wheel_law {getattr(function, '__name__', None) or function!r} must "
                            "take law(t, Q, m, h) (four positional arguments)")
        object.__setattr__(self, "function", function)

    def __call__(self, t: float, Q: NDArray[np.float64], m: NDArray[np.float64],
                 h: NDArray[np.float64]) -> Any:
        return self.function(t, Q, m, h)

    @property
    def name(self) -> str:
        return getattr(self.function, "__name__", None) or repr(self.function)

    def in_frame(self, R: ArrayLike) -> UserLaw:
        Rm = rotation_argument(R)
        return UserLaw(_FrameLaw(self.function, Rm))

    def _bodies(self, start: int, stop: int) -> UserLaw:
        select = getattr(self.function, "bodies", None)
        if isinstance(self.function, _FrameLaw) and callable(select):
            return UserLaw(select(start, stop))
        return self

    def __reduce__(self) -> tuple[Any, ...]:
        return (UserLaw, (self.function,))

    def __repr__(self) -> str:
        return f"UserLaw({self.function!r})"


class _FrameLaw:
    """A user law seen in a turned body frame: ``law(t, Q' R^T, R m', h)`` (read-only inputs)."""

    def __init__(self, function: Callable[..., ArrayLike], R: NDArray[np.float64]) -> None:
        self.function = function
        self.R = R
        self.__name__ = getattr(function, "__name__", None) or repr(function)

    def bodies(self, start: int, stop: int) -> _FrameLaw:
        return _FrameLaw(self.function, self.R if self.R.ndim == 2 else self.R[start:stop])

    def __call__(self, t: float, Q: NDArray[np.float64], m: NDArray[np.float64],
                 h: NDArray[np.float64]) -> Any:
        Qu = Q @ np.swapaxes(self.R, -1, -2)
        mu = np.einsum("...ij,...j->...i", self.R, m)
        Qu.flags.writeable = False
        mu.flags.writeable = False
        return self.function(t, Qu, mu, h)


def _apply(k: float | NDArray[np.float64], v: NDArray[np.float64]) -> NDArray[np.float64]:
    if isinstance(k, float):
        return k * v
    return np.einsum("...ij,...j->...i", k, v)


def _matrix(q: NDArray[np.float64]) -> NDArray[np.float64]:
    """E(q) (..., 3, 3) of quaternions q (..., 4)."""
    w, x, y, z = np.moveaxis(q, -1, 0)
    return np.stack([np.stack([1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y)], -1),
                     np.stack([2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x)], -1),
                     np.stack([2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)], -1)],
                    -2)


def _rows(x: Any, start: int, stop: int, ndim: int) -> Any:
    if isinstance(x, np.ndarray) and x.ndim == ndim + 1:
        return x[start:stop]
    return x


def _limit(x: float | None, name: str) -> float:
    if x is None:
        return math.inf
    # (inf, as None, is no limit)
    v = _validate.real_scalar(x, name, finite=False)
    if not v > 0:
        raise ValueError(f"{name} must be positive (or None for no limit), got {_validate.fmt(v)}")
    return v


def as_wheel_law(law: Any) -> Optional[WheelLaw]:
    """``law`` as a :class:`WheelLaw`: None stays None, a WheelLaw is returned as it is, a
    callable is wrapped into a :class:`UserLaw`; anything else raises TypeError."""
    if law is None or isinstance(law, WheelLaw):
        return law
    if callable(law):
        return UserLaw(law)
    raise TypeError("wheel_law must be None, a law of frb.wheel_laws or a callable "
                    f"law(t, Q, m, h) -> u, got {type(law).__name__}")


def quaternion_feedback(q_ref: Any, kp: float | ArrayLike, kd: float | ArrayLike,
                        u_max: float | None = None, h_max: float | None = None,
                        gyroscopic: bool = False) -> QuaternionFeedback:
    """The quaternion feedback through the wheels (see the module).

    Parameters
    ----------
    q_ref : array_like (4,) or (N, 4), a :func:`rotating_reference`, or a callable ``q_ref(t)``
        The reference attitude (unit quaternions, scalar first); a Python function of time is
        evaluated from Python once per stage (a :class:`frb.NotCompiledWarning` says so).
    kp, kd : float or array_like (3, 3)
        Gains: numbers ``>= 0`` (N m, N m s) or matrices whose symmetric part is positive
        semidefinite (e.g. ``k J``).
    u_max : float, optional
        Largest motor torque of a wheel (N m); None: no limit.
    h_max : float, optional
        Largest momentum of a wheel (N m s); None: no limit.
    gyroscopic : bool
        Add the gyroscopic compensation ``w x (m + A h)`` to the body torque asked for.

    Raises
    ------
    TypeError, ValueError
        Not real numbers, a ``q_ref`` that is not unit, negative gains, limits not positive.

    Examples
    --------
    A slew of three orthogonal wheels towards 90 degrees about the third body axis:

    >>> import numpy as np
    >>> import frb
    >>> law = frb.wheel_laws.quaternion_feedback([np.cos(np.pi / 4), 0, 0, np.sin(np.pi / 4)],
    ...                                          kp=0.5, kd=5.0, u_max=0.05, h_max=1.0)
    >>> tr = frb.integrate([0.0, 0.0, 0.0], [1.0, 0, 0, 0], [10.0, 12.0, 8.0], 0.5, 400,
    ...                    method="YOSHIDA4", wheels=frb.Wheels(np.eye(3), np.zeros(3)),
    ...                    wheel_law=law, save_every=None)
    >>> angle = 2 * np.degrees(np.arccos(min(1.0, abs(tr.q[-1] @ law.q_ref))))
    >>> bool(angle < 0.1), bool(np.abs(tr.total_momentum[-1]).max() < 1e-12)
    (True, True)
    """
    return QuaternionFeedback(q_ref, kp, kd, u_max, h_max, gyroscopic)
