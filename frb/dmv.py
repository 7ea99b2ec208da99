"""Approximate free rigid body integrators to compare the exact flow with.

The preprocessed discrete Moser-Veselov (DMV) method of E. Hairer and G. Vilmart,
"Preprocessed discrete Moser-Veselov algorithm for the full dynamics of the rigid body",
J. Phys. A 39 (2006) 13225-13235 (see also G. Vilmart, "Rigid body dynamics", 2013,
Algorithms 3 and 4). Order 2 is the plain DMV algorithm (equivalent to RATTLE); orders 4, 6, 8
apply DMV with moments of inertia modified by ``h^2``, ``h^4``, ``h^6`` corrections that depend
on the state only through the invariants ``|m|^2 / 2`` and the energy.

Conventions are those of :func:`frb.quat_step`: ``m' = m x I^-1 m`` and
``q' = q (0, I^-1 m) / 2`` with unit quaternions, scalar first. The methods conserve exactly
(up to roundoff) ``|m|``, the energy ``sum m_j^2 / (2 I_j)``, the spatial momentum
``E(q) m`` and ``|q|``, and are symmetric (a step of ``-h`` undoes a step of ``h``).

Each step solves the implicit DMV equation to machine precision (reduced exactly to one
scalar quartic, solved by Newton's method; see ``fortran/moser_veselov.f90``). That equation has a
solution only for steps of at most about a quarter turn: ``|h| |W m|`` below about 1, where
``W`` is the diagonal of (modified) inverse moments of inertia (``W = 1/I`` for order 2; the
corrections of orders 4 to 8 move the limit). For larger steps :class:`frb.IntegrationError` (a RuntimeError) is raised.

Both functions are runs of the methods ``DMV2`` ... ``DMV8`` of the time loop (:mod:`frb._run`):
torque-free, the final state kept, ``h`` shared or per body.
"""
from __future__ import annotations

from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from . import _validate
from ._run import Request, Route, execute, lean_free_steps, prepare
from .inertia import tensor_frame
from .methods import MAX_INERTIA_RATIO, METHODS

__all__ = ["dmv_step", "dmv_integrate", "DMV_ORDERS", "MAX_INERTIA_RATIO"]

DMV_ORDERS = (2, 4, 6, 8)
#: The routes of :func:`dmv_step` and :func:`dmv_integrate`.
ROUTE_STEP = Route("frb.dmv_step", {"m": "m", "attitude": "q", "h": "h", "inertia": "inertia"},
                   forms=("quaternion",), h_per_body=True)
ROUTE_INTEGRATE = Route("frb.dmv_integrate", {"m": "m0", "attitude": "q0", "h": "h",
                                               "inertia": "inertia"},
                        forms=("quaternion",), h_per_body=True)


def _order(order: Any) -> int:
    if type(order) is int and order in DMV_ORDERS:
        return order
    order = _validate.integer(order, f"order (one of {DMV_ORDERS})")
    if order not in DMV_ORDERS:
        raise ValueError(f"order must be one of {DMV_ORDERS}, got {order}")
    return order


def _run(route: Route, m: ArrayLike, q: ArrayLike, h: ArrayLike, inertia: ArrayLike, order: int,
         nsteps: int, *, threads: int | None = None, progress: bool = False
         ) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """nsteps DMV steps of order ``order`` through the time loop, the final state."""
    if threads is None and progress is False and type(order) is int and order in DMV_ORDERS and \
            type(nsteps) is int:
        one = lean_free_steps(route, METHODS[f"DMV{order}"], m, q, h, inertia, 0, nsteps)
        if one is not None:
            return one
    run = prepare(Request(route, METHODS[f"DMV{_order(order)}"], m, q, inertia, h, nsteps,
                          threads=threads, progress=progress))
    out = execute(run)
    if out.failure is not None:
        raise out.failure
    if run.single:
        return out.m[0, 0], out.attitude[0, 0]
    return out.m[0], out.attitude[0]


def dmv_step(m: ArrayLike, q: ArrayLike, h: ArrayLike, inertia: ArrayLike, order: int = 6,
             threads: int | None = None) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """One step of the preprocessed discrete Moser-Veselov method (Hairer and Vilmart 2006).

    Parameters
    ----------
    m : array_like, shape (3,) or (n, 3)
        Body angular momentum.
    q : array_like, shape (4,) or (n, 4)
        Unit quaternions ``(q0, q1, q2, q3)``, **scalar first** (scipy's ``as_quat`` is scalar
        last: convert with :func:`frb.from_rotation`), of norm 1 within 1e-10;
        ``Q = E(q)``, ``E(q) m`` is the spatial momentum.
    h : float or array_like of shape (n,)
        Time step, any sign (the method is symmetric: a step of ``-h`` undoes a step of ``h``).
        Bodies are stepped 16 at a time in lock-step, each with its own step when ``h`` is given
        per body.
    inertia : array_like, shape (3,), (n, 3), (3, 3), (1, 3, 3) or (n, 3, 3)
        Principal moments of inertia, strictly positive, in any order; or inertia tensors in
        the body frame of ``q`` (as :func:`frb.quat_step`; :mod:`frb.inertia`).
    order : int
        2 (plain DMV), 4, 6 or 8: the global error is ``O(h^order)``.
    threads : int, optional
        As :func:`frb.quat_step`: threads sharing a batch, the same results for every count.

    Returns
    -------
    m_out, q_out : new arrays of the input shapes, the approximation at time ``h``.

    Raises
    ------
    TypeError, ValueError
        Invalid arguments (as :func:`frb.quat_step`; ``order`` not in 2, 4, 6, 8; ``I_max / I_min``
        above :data:`MAX_INERTIA_RATIO` of the order).
    frb.IntegrationError
        The step is too large for the DMV equation to have a solution (a RuntimeError).

    Notes
    -----
    The step is ``Y = alpha m + (h/2) Y x (W Y)``, ``e = (h/2) W Y``, ``alpha = 1 + |e|^2``
    (solved to machine precision), ``m_out = m + (h/alpha) Y x (W Y)``,
    ``q_out = q (1, e) / sqrt(alpha)``, where ``W`` is the diagonal of modified inverse moments
    of inertia ``1/I_j (1 + h^2 s3 + h^4 s5 + h^6 s7) + h^2 t3 + h^4 t5 + h^6 t7`` (Vilmart,
    Table 1; all corrections vanish for order 2).

    Examples
    --------
    >>> import numpy as np
    >>> import frb
    >>> m, q = frb.dmv_step([0.3, 0.5, 0.8], [1.0, 0.0, 0.0, 0.0], 0.1, [1.0, 2.0, 3.0])
    >>> m_exact, q_exact = frb.quat_step([0.3, 0.5, 0.8], [1.0, 0.0, 0.0, 0.0], 0.1, [1.0, 2.0, 3.0])
    >>> bool(np.abs(m - m_exact).max() < 1e-12)      # order 6: the local error is O(h^7)
    True
    """
    frame = tensor_frame(inertia, m)
    if frame is not None:   # inertia tensors: the step in their principal frame (frb.inertia)
        return frame.step(dmv_step, m, q, h, order, threads, names=("m", "q"))
    return _run(ROUTE_STEP, m, q, h, inertia, order, 1, threads=threads)


def dmv_integrate(m0: ArrayLike, q0: ArrayLike, inertia: ArrayLike, h: ArrayLike, nsteps: int,
                  order: int = 6, threads: int | None = None, progress: bool = False
                  ) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """``nsteps`` steps of :func:`dmv_step` of size ``h``, looping in compiled code.

    The arguments are in the order of :func:`frb.integrate` and :func:`frb.splitting.integrate`,
    ``(m0, q0, inertia, h, nsteps)``; the one-step functions :func:`frb.frb_step`,
    :func:`frb.quat_step` and :func:`dmv_step` take ``(m, attitude, h, inertia)``.

    Parameters
    ----------
    m0 : array_like, shape (3,) or (n, 3)
        Initial body angular momentum.
    q0 : array_like, shape (4,) or (n, 4)
        Initial unit quaternions, **scalar first** ``(q0, q1, q2, q3)``.
    inertia : array_like, shape (3,), (n, 3), (3, 3), (1, 3, 3) or (n, 3, 3)
        Principal moments of inertia, or inertia tensors, as :func:`dmv_step`.
    h : float or array_like of shape (n,)
        Step length, shared or one per body.
    nsteps : int
        Number of steps, 0..2**31 - 2.
    order : int
        2, 4, 6 or 8.
    threads : int, optional
        As :func:`dmv_step`.
    progress : bool
        True for a progress bar (tqdm when installed, else a line on stderr).

    Returns
    -------
    m, q : the final state at time ``nsteps * h``.

    Raises
    ------
    TypeError, ValueError, frb.IntegrationError
        As :func:`dmv_step`; ``nsteps`` not an integer in 0..2**31 - 2.

    Notes
    -----
    The modified moments of inertia are computed once per body: they depend only on ``|m|``
    and the energy, which the method conserves, so this is the same method as repeated
    :func:`dmv_step` calls (up to roundoff). The steps are those of
    ``frb.integrate(m0, q0, inertia, h, nsteps, method=f"DMV{order}", save_every=None)``, with
    the same results bit for bit (for a scalar ``h``). A long run is entered in segments of about 0.1 s of
    work (Ctrl-C stops it within a fraction of a second) with the results of one uninterrupted
    loop bit for bit.

    Examples
    --------
    >>> import numpy as np
    >>> import frb
    >>> m, q = frb.dmv_integrate([0.3, 0.5, 0.8], [1.0, 0.0, 0.0, 0.0], [1.0, 2.0, 3.0], 0.1, 100,
    ...                          order=8)
    >>> m_exact, q_exact = frb.quat_step([0.3, 0.5, 0.8], [1.0, 0.0, 0.0, 0.0], 10.0, [1.0, 2.0, 3.0])
    >>> bool(np.abs(m - m_exact).max() < 1e-12)
    True
    """
    frame = tensor_frame(inertia, m0)
    if frame is not None:   # inertia tensors: the run in their principal frame (frb.inertia)
        return frame.step(_principal_integrate, m0, q0, h, order, nsteps, threads, progress,
                          names=("m0", "q0"))
    return _run(ROUTE_INTEGRATE, m0, q0, h, inertia, order, nsteps, threads=threads, progress=progress)


def _principal_integrate(m0: ArrayLike, q0: ArrayLike, h: ArrayLike, inertia: ArrayLike,
                         order: int, nsteps: int, threads: int | None, progress: bool
                         ) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """:func:`dmv_integrate` in the argument order of PrincipalFrame.step (principal moments)."""
    return _run(ROUTE_INTEGRATE, m0, q0, h, inertia, order, nsteps, threads=threads, progress=progress)
