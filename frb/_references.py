"""Reference attitudes of the attitude laws (frb.torques.attitude_control and
frb.wheel_laws.quaternion_feedback): unit quaternions checked once, a reference turning at a
constant rate, and a reference function of time seen in a turned frame. Scalar-first
quaternions."""

from __future__ import annotations

from typing import Any, Callable

import numpy as np
from numpy.typing import ArrayLike, NDArray

from . import _validate
from .rotations import quaternion_product

__all__ = ["RotatingReference", "TurnedReference", "exp_quaternion", "normalized",
           "rotating_reference", "unit_quaternions"]


def unit_quaternions(q: ArrayLike, name: str) -> NDArray[np.float64]:
    """q as read-only unit quaternions (4,) or (N, 4), N >= 1, |q| = 1 within 1e-10; a
    ValueError naming ``name`` otherwise."""
    a = np.array(_validate.real_array(q, name, finite=False), dtype=np.float64)
    if a.ndim not in (1, 2) or a.shape[-1] != 4 or not a.shape[0]:
        raise ValueError(f"{name} must have shape (4,) or (N, 4) with N >= 1, got {a.shape}")
    if not np.isfinite(a).all():
        raise ValueError(f"{name} must be finite" + _validate.first_nonfinite(a))
    with np.errstate(over="ignore"):      # (entries far beyond 1: refused)
        signed = np.sqrt(np.sum(a * a, axis=-1)) - 1.0
    dev = np.abs(signed)
    if not (dev <= 1e-10).all():
        where, worst = "", float(signed) if a.ndim == 1 else 0.0
        if a.ndim == 2:
            b = int(np.argmax(~(dev <= 1e-10)))
            where, worst = f" (body {b})", float(signed[b])
        raise ValueError(f"{name} must be unit quaternions (|q| = 1 within 1e-10){where}, got "
                         f"|q| - 1 = {worst:.3g}")
    a.setflags(write=False)
    return a


def exp_quaternion(v: NDArray[np.float64]) -> NDArray[np.float64]:
    """The unit quaternions of the rotation vectors v (..., 3)."""
    big = np.max(np.abs(v), axis=-1, keepdims=True)
    with np.errstate(invalid="ignore", divide="ignore"):
        # (the norm of v / max_i |v_i|: no overflow of the squares)
        angle = big * np.linalg.norm(v / np.where(big > 0, big, 1.0), axis=-1, keepdims=True)
    half = 0.5 * angle
    with np.errstate(invalid="ignore", divide="ignore"):
        s = np.where(angle > 0, np.sin(half) / np.where(angle > 0, angle, 1.0), 0.5)
    return np.concatenate([np.cos(half), s * v], axis=-1)


class RotatingReference:
    """A reference attitude turning at a constant rate: ``q_r(t) = q0 exp((t - t_ref) rate / 2)``
    (``rate`` the angular velocity in the reference's own frame, rad/s; scalar-first
    quaternions). Callable as ``q_r(t)``; :func:`frb.wheel_laws.quaternion_feedback` compiles
    it (and takes ``w_r = E(e)^T rate`` in its rate term). Made by :func:`rotating_reference`."""

    __slots__ = ("q0", "rate", "t_ref")
    q0: NDArray[np.float64]
    rate: NDArray[np.float64]
    t_ref: float

    def __init__(self, q0: ArrayLike, rate: ArrayLike, t_ref: float = 0.0) -> None:
        q = unit_quaternions(q0, "q0")
        r = np.array(_validate.real_array(rate, "rate", finite=False), dtype=np.float64)
        if r.ndim not in (1, 2) or r.shape[-1] != 3 or (r.ndim == 2 and not r.shape[0]):
            raise ValueError(f"rate must have shape (3,) or (N, 3) with N >= 1, got {r.shape}")
        if not np.isfinite(r).all():
            raise ValueError("rate must be finite")
        if q.ndim == 2 and r.ndim == 2 and q.shape[0] != r.shape[0]:
            raise ValueError(f"q0 and rate given per body must be given for the same number of "
                             f"bodies, got {q.shape[0]} and {r.shape[0]}")
        r.setflags(write=False)
        object.__setattr__(self, "q0", q)
        object.__setattr__(self, "rate", r)
        object.__setattr__(self, "t_ref", _validate.real_scalar(t_ref, "t_ref"))

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError("a reference is immutable")

    def __call__(self, t: float) -> NDArray[np.float64]:
        """The reference at the time ``t`` (a finite real number)."""
        t = _validate.real_scalar(t, "t")
        with np.errstate(over="ignore", invalid="ignore"):
            turn = (t - self.t_ref) * self.rate
        if not np.isfinite(turn).all():
            raise ValueError(f"t: the reference's turn (t - t_ref) rate at t = {t!r} is beyond "
                             "the float64 range")
        return quaternion_product(self.q0, exp_quaternion(turn))

    def __reduce__(self) -> tuple[Any, ...]:
        return (RotatingReference, (self.q0, self.rate, self.t_ref))

    def __repr__(self) -> str:
        return (f"rotating_reference({self.q0.tolist()!r}, {self.rate.tolist()!r}, "
                f"{self.t_ref!r})")


def rotating_reference(q0: ArrayLike, rate: ArrayLike, t_ref: float = 0.0) -> RotatingReference:
    """A reference ``q0`` at ``t_ref`` turning at the constant ``rate`` (rad/s, in its own frame;
    one or per body): see :class:`RotatingReference`.

    Examples
    --------
    A target frame that turns once an orbit about its third axis (nadir pointing on a circular
    orbit of rate 1.1e-3 rad/s):

    >>> import frb
    >>> ref = frb.wheel_laws.rotating_reference([1.0, 0.0, 0.0, 0.0], [0.0, 0.0, 1.1e-3])
    >>> ref(1000.0).round(6)
    array([0.852525, 0.      , 0.      , 0.522687])
    """
    return RotatingReference(q0, rate, t_ref)


class TurnedReference:
    """A reference function of time seen in a turned frame: ``q_ref(t) r``."""

    def __init__(self, function: Callable[[float], ArrayLike], r: NDArray[np.float64]) -> None:
        self.function = function
        self.r = r
        self.__name__ = getattr(function, "__name__", None) or repr(function)

    def __call__(self, t: float) -> NDArray[np.float64]:
        q = _validate.real_array(self.function(t), f"q_ref(t) ({self.__name__})", finite=False)
        return normalized(quaternion_product(q, self.r))


def normalized(q: NDArray[np.float64]) -> NDArray[np.float64]:
    """q / |q| over the last axis."""
    return q / np.linalg.norm(q, axis=-1, keepdims=True)
