"""Torques for :func:`frb.integrate`: built-in torques compiled into every time loop.

A torque is the body torque as a function of time and attitude, ``T_b(t, Q)`` (body frame,
``Q`` the attitude matrix whose columns are the body axes in the fixed frame). The body then
obeys ``m' = m x I^-1 m + T_b(t, Q)``, ``Q' = Q hat(I^-1 m)``.

Built in (evaluated in Fortran inside the time loop of every method):

* :func:`constant_field` ``(u0)``: a constant spatial field acting on the third body axis,
  ``T_b = (Q^T u0) x e3`` with potential ``U = u0 . Q e3`` (Algorithm 903, example 1).
* :func:`heavy_top` ``(weight, center)``: a top on a fixed point at the origin, gravity of size
  ``weight`` (mass times g) along ``-z`` of the fixed frame, centre of mass at the body vector
  ``center``: ``T_b = weight (Q^T e_z) x center``, potential ``U = weight (Q center)_z``.
* :func:`gravity_gradient` ``(n)``: a satellite on a circular orbit of rate ``n`` in the fixed
  x-y plane; with ``r(t) = (cos nt, sin nt, 0)`` the direction to the planet and ``c = Q^T r``,
  ``T_b = 3 n^2 c x (I c)`` (time-dependent; no potential is reported).

Any other torque is a vectorised callable ``torque(t, Q) -> T_b``: it receives the whole batch,
``Q`` of shape ``(N, 3, 3)`` (read-only), and returns an array of shape ``(N, 3)``; it is called
once per stage of the method for all bodies.
"""
from __future__ import annotations

import math

import numpy as np
from numpy.typing import ArrayLike, NDArray

from . import _validate
from .splitting import ConstantField, constant_field

__all__ = ["constant_field", "heavy_top", "gravity_gradient", "ConstantField", "HeavyTop",
           "GravityGradient"]


def _finite_vector(x: ArrayLike, name: str) -> NDArray[np.float64]:
    a = np.array(_validate.real_array(x, name, finite=False), dtype=np.float64)
    if a.shape != (3,):
        raise ValueError(f"{name} must have shape (3,), got {a.shape}")
    if not np.isfinite(a).all():
        raise ValueError(f"{name} must be finite")
    a.setflags(write=False)
    return a


def _finite_real(x: float, name: str) -> float:
    return _validate.real_scalar(x, name)


class HeavyTop:
    """Heavy top: fixed point at the origin, gravity ``weight`` along ``-z`` (fixed frame),
    centre of mass at the body vector ``center``.

    ``T_b(Q) = weight (Q^T e_z) x center``; potential energy ``weight (Q center)_z``.
    """

    __slots__ = ("weight", "center", "u0")
    weight: float
    center: NDArray[np.float64]
    u0: NDArray[np.float64]

    def __init__(self, weight: float, center: ArrayLike) -> None:
        self.weight = _finite_real(weight, "weight")
        self.center = _finite_vector(center, "center")
        u0 = np.array([0.0, 0.0, self.weight])
        u0.setflags(write=False)
        self.u0 = u0

    def potential(self, Q: ArrayLike) -> NDArray[np.float64]:
        """Potential energy ``weight (Q center)_z`` for Q of shape (..., 3, 3)."""
        Q = np.asarray(Q, dtype=np.float64)
        return self.weight * (Q[..., 2, :] @ self.center)

    def __call__(self, t: float, Q: ArrayLike) -> NDArray[np.float64]:
        """Body torque ``weight (Q^T e_z) x center`` for Q of shape (..., 3, 3)."""
        Q = np.asarray(Q, dtype=np.float64)
        return np.cross(self.weight * Q[..., 2, :], self.center)

    def __repr__(self) -> str:
        return f"heavy_top({self.weight!r}, {self.center.tolist()!r})"


class GravityGradient:
    """Gravity-gradient torque of a satellite on a circular orbit of rate ``n`` in the fixed
    x-y plane: ``r(t) = (cos nt, sin nt, 0)``, ``c = Q^T r``, ``T_b = 3 n^2 c x (I c)``."""

    __slots__ = ("rate",)
    rate: float

    def __init__(self, n: float) -> None:
        self.rate = _finite_real(n, "n")

    def torque(self, t: float, Q: ArrayLike, inertia: ArrayLike) -> NDArray[np.float64]:
        """Body torque for Q of shape (..., 3, 3) and inertia broadcastable to (..., 3)."""
        Q = np.asarray(Q, dtype=np.float64)
        r = np.array([math.cos(self.rate * t), math.sin(self.rate * t), 0.0])
        c = np.einsum("...ji,j->...i", Q, r)
        return 3.0 * self.rate**2 * np.cross(c, np.asarray(inertia) * c)

    def __repr__(self) -> str:
        return f"gravity_gradient({self.rate!r})"


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

