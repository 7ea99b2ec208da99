"""Reaction wheels: :class:`Wheels`, the wheels of a spacecraft as states of the compiled loop.

A body carries ``nw`` wheels with unit spin axes ``a_i`` (body frame) and axial momenta ``h_i``
(each wheel's absolute angular momentum about its axis). With ``A = [a_1 .. a_nw]`` (3 x nw),
``m = I w`` the angular momentum of the body without the wheels' axial inertia and
``M = m + A h`` the total momentum (body frame), the motion is (F. L. Markley and J. L.
Crassidis, *Fundamentals of Spacecraft Attitude Determination and Control*, Springer 2014, eqs.
(3.147)-(3.152); P. C. Hughes, *Spacecraft Attitude Dynamics*, Wiley 1986, chapter 6)::

    M' = M x w + T_ext(t, Q, m),   h' = u(t, Q, m, h),   m' = M x w + T_ext - A u,   Q' = Q hat(w)

with ``u`` the motor torques of a law (:mod:`frb.wheel_laws`). Without external torques the
spatial momentum ``Q M`` is conserved; with ``u = 0`` the body is a gyrostat (a rotor of
constant momentum ``A h``, :func:`frb.torques.rotor`).

The wheels go to :func:`frb.integrate` as ``wheels=Wheels(axes, h0)`` with a law
``wheel_law=...``; the trajectory then has the wheel momenta (``Trajectory.wheel_momentum``),
the total momentum ``Q (m + A h)`` (``Trajectory.total_momentum``) and, for wheels of given
axial inertia, their speeds and energy.
"""
from __future__ import annotations

from typing import Any, Optional

import numpy as np
from numpy.typing import ArrayLike, NDArray

from . import _validate
from ._numbers_table import MAX_WHEELS
from .rotations import rotation_argument

__all__ = ["Wheels", "AXIS_TOLERANCE", "RANK_TOLERANCE", "MAX_WHEELS"]

#: Largest ``| |a_i| - 1 |`` of a wheel axis.
AXIS_TOLERANCE = 1e-10
#: The axes span the three body axes when the smallest singular value of ``A`` is at least this
#: (the pseudo-inverse of a law that distributes a body torque over the wheels needs rank 3).
RANK_TOLERANCE = 1e-6


def _read_only(a: NDArray[Any]) -> NDArray[Any]:
    a.setflags(write=False)
    return a


class Wheels:
    """The reaction wheels of a body, or of each body of a batch.

    Parameters
    ----------
    axes : array_like, shape (nw, 3) or (N, nw, 3)
        Unit spin axes in the body frame (``| |a_i| - 1 | <= 1e-10``), for all bodies or one set
        per body; ``1 <= nw <= MAX_WHEELS`` (8).
    h0 : array_like, shape (nw,) or (N, nw)
        Initial axial momenta of the wheels (N m s), for all bodies or per body.
    inertia : array_like, shape (nw,) or (N, nw), optional
        Axial moments of inertia of the wheels (kg m^2), positive: with them the trajectory
        has the wheel speeds (``Trajectory.wheel_speed``) and energies
        (``Trajectory.wheel_energy``). They do not enter the motion: ``I`` is the inertia of the
        body without them.

    Raises
    ------
    TypeError, ValueError
        Not real numbers, wrong shapes, axes not unit, non-finite momenta, inertias not
        positive (the message names the argument and the body of a batch).

    Examples
    --------
    Four wheels in a pyramid of half-angle 54.74 degrees about the third body axis:

    >>> import numpy as np
    >>> import frb
    >>> b = np.arctan(np.sqrt(2.0))                      # cos b = 1 / sqrt(3)
    >>> axes = [[np.sin(b) * np.cos(a), np.sin(b) * np.sin(a), np.cos(b)]
    ...         for a in np.radians([45.0, 135.0, 225.0, 315.0])]
    >>> wheels = frb.Wheels(axes, np.zeros(4))
    >>> wheels.count, wheels.matrix().shape
    (4, (3, 4))
    """

    __slots__ = ("axes", "h0", "inertia")
    axes: NDArray[np.float64]
    h0: NDArray[np.float64]
    inertia: Optional[NDArray[np.float64]]

    def __init__(self, axes: ArrayLike, h0: ArrayLike, inertia: ArrayLike | None = None) -> None:
        a = np.array(_validate.real_array(axes, "axes", finite=False), dtype=np.float64)
        if a.ndim not in (2, 3) or a.shape[-1] != 3 or a.shape[-2] < 1:
            raise ValueError(f"axes must have shape (nw, 3) or (N, nw, 3) with at least one wheel "
                             f"(nw >= 1), got {a.shape}")
        nw = a.shape[-2]
        if nw > MAX_WHEELS:
            raise ValueError(f"axes: at most {MAX_WHEELS} wheels a body, got {nw}")
        if not np.isfinite(a).all():
            raise ValueError("axes must be finite" + _body_of(~np.isfinite(a).all(axis=(-2, -1))
                                                          if a.ndim == 3 else None))
        with np.errstate(over="ignore"):
            norm = np.sqrt(np.sum(a * a, axis=-1))
        bad = np.abs(norm - 1.0) > AXIS_TOLERANCE
        if bad.any():
            index = np.unravel_index(int(np.argmax(bad)), bad.shape)
            where = f"axis {index[-1]}" + (f" of body {index[0]}" if a.ndim == 3 else "")
            raise ValueError(f"axes must be unit vectors (| |a| - 1 | <= {AXIS_TOLERANCE:g}): "
                             f"{where} has |a| = {_validate.fmt(norm[index])}")
        h = np.array(_validate.real_array(h0, "h0", finite=False), dtype=np.float64)
        if h.shape not in ((nw,),) and not (h.ndim == 2 and h.shape[1] == nw):
            raise ValueError(f"h0 must have shape ({nw},) or (N, {nw}) for {nw} wheels, got "
                             f"{h.shape}")
        if not np.isfinite(h).all():
            raise ValueError("h0 must be finite" + _body_of(~np.isfinite(h).all(axis=-1)
                                                         if h.ndim == 2 else None))
        J = None
        if inertia is not None:
            J = np.array(_validate.real_array(inertia, "inertia", finite=False),
                         dtype=np.float64)
            if J.shape != (nw,) and not (J.ndim == 2 and J.shape[1] == nw):
                raise ValueError(f"inertia of the wheels must have shape ({nw},) or (N, {nw}), "
                                 f"got {J.shape}")
            good = np.isfinite(J) & (J > 0)
            if not good.all():
                bad = np.flatnonzero(~good.reshape(-1))[0]
                raise ValueError("inertia of the wheels must be finite and positive, got "
                                 f"{_validate.fmt(float(J.reshape(-1)[bad]))} for wheel {bad % nw}"
                                 + _body_of(~good.all(axis=-1) if J.ndim == 2 else None))
            _read_only(J)
        counts = {x.shape[0] for x, d in ((a, 3), (h, 2), (J, 2)) if x is not None and x.ndim == d}
        if len(counts) > 1:
            raise ValueError(f"axes, h0 and inertia given per body must be given for the same "
                             f"number of bodies, got {sorted(counts)}")
        object.__setattr__(self, "axes", _read_only(a))
        object.__setattr__(self, "h0", _read_only(h))
        object.__setattr__(self, "inertia", J)

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError(f"Wheels are immutable: make new wheels instead of setting {name!r}")

    @property
    def count(self) -> int:
        """Wheels a body, ``nw``."""
        return int(self.axes.shape[-2])

    @property
    def bodies_count(self) -> Optional[int]:
        """The number of bodies the wheels are given for (per body), else None (all bodies)."""
        for x, d in ((self.axes, 3), (self.h0, 2), (self.inertia, 2)):
            if x is not None and x.ndim == d:
                return int(x.shape[0])
        return None

    def matrix(self) -> NDArray[np.float64]:
        """``A``: the axes as columns, (3, nw), or (N, 3, nw) per body."""
        return np.swapaxes(self.axes, -1, -2)

    def momentum(self, h: ArrayLike) -> NDArray[np.float64]:
        """The wheels' momentum ``A h`` in the body frame, for momenta ``h`` whose last axis is
        the wheels (the bodies on the second-last axis when the axes are per body)."""
        a = _validate.real_array(h, "h")
        nw, per_body = self.axes.shape[-2], self.axes.ndim == 3
        if a.ndim < 1 or a.shape[-1] != nw or (per_body and (
                a.ndim < 2 or a.shape[-2] != self.axes.shape[0])):
            want = f"(..., {self.axes.shape[0]}, {nw})" if per_body else f"(..., {nw})"
            raise ValueError(f"h (the wheels' momenta) must have shape {want}, got {a.shape}")
        with np.errstate(over="ignore", invalid="ignore"):
            out = np.einsum("...ij,...i->...j", self.axes, a)
        if not np.isfinite(out).all():
            raise ValueError("the wheels' momentum A h of h is beyond the float64 range")
        return out

    def pseudo_inverse(self, name: str = "axes") -> NDArray[np.float64]:
        """``A^+ = A^T (A A^T)^-1``, (nw, 3) or (N, nw, 3): the wheel torques ``u = -A^+ L`` that
        give the body torque ``L`` with the least ``|u|``. ValueError naming ``name`` when the
        axes do not span the three body axes (rank of ``A`` below 3)."""
        A = self.matrix()
        sv = np.linalg.svd(A, compute_uv=False)
        low = sv[..., -1] < RANK_TOLERANCE if sv.shape[-1] == 3 else np.ones(sv.shape[:-1], bool)
        if np.any(low):
            b = int(np.argmax(np.ravel(low)))
            where = f" (body {b})" if A.ndim == 3 else ""
            raise ValueError(f"{name} do not span the three body axes{where}: the law "
                             "distributes a body torque over the wheels by the pseudo-inverse of "
                             f"A = [a_1 .. a_nw], which needs rank 3 (the {self.count} axes give "
                             f"singular values {_validate.fmt(np.reshape(sv, (-1, sv.shape[-1]))[b])})")
        AAt = A @ np.swapaxes(A, -1, -2)
        return np.swapaxes(np.linalg.solve(AAt, A), -1, -2)

    def in_frame(self, R: ArrayLike) -> Wheels:
        """The wheels seen in the body frame turned by ``R`` (3, 3) or one per body (N, 3, 3):
        the axes ``R^T a_i`` (the principal frame of an inertia tensor, :mod:`frb.inertia`);
        the momenta are the same."""
        Rm = rotation_argument(R)
        Rw = Rm if Rm.ndim == 2 else Rm[:, None]
        axes = np.einsum("...ji,...j->...i", Rw, self.axes)
        axes = axes / np.linalg.norm(axes, axis=-1, keepdims=True)
        return Wheels(axes, self.h0, self.inertia)

    def bodies(self, start: int, stop: int) -> Wheels:
        """The wheels of the bodies ``start`` to ``stop - 1`` (those given per body sliced;
        ``0 <= start <= stop`` integers, ``stop`` at most the bodies they are given for)."""
        start, stop = _validate.body_range(start, stop)
        if self.bodies_count is None:
            return self
        if stop > self.bodies_count:
            raise ValueError(f"stop = {stop} is beyond the {self.bodies_count} bodies the "
                             f"per-body parameters of {self!r} are given for")
        return Wheels(self.axes[start:stop] if self.axes.ndim == 3 else self.axes,
                      self.h0[start:stop] if self.h0.ndim == 2 else self.h0,
                      None if self.inertia is None else
                      self.inertia[start:stop] if self.inertia.ndim == 2 else self.inertia)

    def __reduce__(self) -> tuple[Any, ...]:
        return (Wheels, (self.axes, self.h0, self.inertia))

    def __repr__(self) -> str:
        count = self.bodies_count
        per = "" if count is None else f", {count} bod{'y' if count == 1 else 'ies'}"
        return f"<Wheels: {self.count} a body{per}>"


def _body_of(bad: Any) -> str:
    """' (body k)' of the first True of bad, or '' (one set for all bodies)."""
    if bad is None or not bad.any():
        return ""
    return f" (body {int(np.argmax(bad))})"
