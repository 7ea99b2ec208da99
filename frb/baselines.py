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
scalar quartic, solved by Newton's method; see ``fortran/dmv.f90``). That equation has a
solution only for steps of at most about a quarter turn: ``|h| |W m|`` below about 1, where
``W`` is the diagonal of (modified) inverse moments of inertia (``W = 1/I`` for order 2; the
corrections of orders 4 to 8 move the limit). For larger steps :class:`RuntimeError` is raised.
"""
from __future__ import annotations

import numbers

import numpy as np

from . import _core, _segments
from .flows import (ORTHOGONALITY_TOLERANCE, _as_float_array, _common, _lean_array, _raise_for,
                    _single_body)
from .threads import _resolve as _resolve_threads, get_num_threads

__all__ = ["dmv_step", "dmv_integrate"]

DMV_ORDERS = (2, 4, 6, 8)
_NO_SOLUTION = ("the DMV equation has no solution: the step h is too large for the angular "
                "velocity (need |h| |m / inertia| below about 1; see frb.baselines)")


def _order(order):
    if isinstance(order, bool) or not isinstance(order, numbers.Integral):
        raise TypeError(f"order must be an integer in {DMV_ORDERS}, got {order!r}")
    if int(order) not in DMV_ORDERS:
        raise ValueError(f"order must be one of {DMV_ORDERS}, got {order}")
    return int(order)


def _run(m, q, h, inertia, order, nsteps, threads=None, progress=False):
    """Validate the shapes here and the values in the compiled loop (as frb.quat_step does),
    then take nsteps DMV steps: in one compiled call for a short run, else in segments of
    steps (frb._segments) with the same results bit for bit."""
    # one body, a run short enough for one compiled call (Ctrl-C, see _SINGLE_CALL_WORK)
    short = type(nsteps) is int and nsteps <= _SINGLE_CALL_WORK
    one = _single_body(m, h, inertia, 0) if short and not progress else None
    if one is not None:
        if type(order) is not int or order not in DMV_ORDERS:
            order = _order(order)   # (the checks and messages of the general path)
        q1 = _lean_array(q, "q", (4,))
        if q1 is not None:
            # one body: the lean binding (the checks and results of a batch of one)
            m_out, q_out, info, nfail = _core.dmv_integrate_single(
                one[0], q1, one[1], one[2], order, nsteps, ORTHOGONALITY_TOLERANCE)
            if info:
                _raise_for(info, -1, "q")
            if nfail:
                raise RuntimeError(_NO_SOLUTION)
            return m_out, q_out
    single, n, m2, h1, inertia2, _ = _common(m, h, inertia, 0, check_finite=False)
    order = _order(order)
    threads = _resolve_threads(threads)
    progress = _segments.check_progress(progress)
    q = _as_float_array(q, "q", check_finite=False)
    expected = (4,) if single else (n, 4)
    if q.shape != expected:
        raise ValueError(f"q must have shape {expected}, got {q.shape}")
    if n == 0:
        return np.empty((0, 3)), np.empty((0, 4))
    q2 = np.ascontiguousarray(q.reshape(-1, 4))
    m2 = np.ascontiguousarray(m2)
    if (nsteps <= 1 or n * nsteps <= _SINGLE_CALL_WORK) and not progress:
        m_out, q_out, info, where, nfail = _core.dmv_integrate_checked(
            m2.T, q2.T, h1, inertia2.T, order, nsteps, ORTHOGONALITY_TOLERANCE, threads)
        _raise_for(info, where if not single else -1, "q")
        m_out, q_out = m_out.T, q_out.T
    else:
        m_out, q_out = _run_segments(m2, q2, h1, inertia2, order, nsteps, threads, progress,
                                     single)
        nfail = int(np.count_nonzero(~(np.isfinite(m_out).all(axis=1)
                                       & np.isfinite(q_out).all(axis=1))))
    if nfail:
        raise RuntimeError(_NO_SOLUTION)
    if single:
        return m_out[0].copy(), q_out[0].copy()
    return m_out, q_out


#: Body-steps of a DMV run done in one compiled call (about 0.05 s); a longer run, or one with
#: a progress bar, is entered in segments. One step of any batch is one call.
_SINGLE_CALL_WORK = 1 << 21

#: Bodies of a segment of a long DMV run are whole blocks of this many bodies (a multiple of
#: the lanes of fortran/dmv.f90, dmv_lanes_width = 16, so that the lanes hold the same bodies).
_DMV_ALIGN = 64


def _run_segments(m2, q2, h1, inertia2, order, nsteps, threads, progress, single):
    """A long run in segments: input checks, the modified moments of inertia from the initial
    state (as dmv_integrate_many computes them), then the steps with the state carried."""
    info, where = _core.dmv_check_batch(m2.T, q2.T, h1, inertia2.T, ORTHOGONALITY_TOLERANCE,
                                        threads)
    _raise_for(info, where if not single else -1, "q")
    w = _core.dmv_prepare_batch(m2.T, h1, inertia2.T, order, threads)
    m = m2.copy()
    q = q2.copy()
    mT, qT = m.T, q.T

    def advance(b_first, b_last, k_first, k_last):
        _core.dmv_advance_batch(mT, qT, h1, w, k_last - k_first, b_first + 1, b_last, threads)

    _segments.run(advance, nsteps, m.shape[0], align=_DMV_ALIGN,
                  threads=threads or get_num_threads(), progress=progress,
                  label=f"frb.dmv_integrate order {order}")
    return m, q


def dmv_step(m, q, h, inertia, order=6, threads=None):
    """One step of the preprocessed discrete Moser-Veselov method (Hairer and Vilmart 2006).

    Parameters
    ----------
    m : array_like, shape (3,) or (n, 3)
        Body angular momentum.
    q : array_like, shape (4,) or (n, 4)
        Unit quaternions ``(q0, q1, q2, q3)``, scalar first, of norm 1 within 1e-10;
        ``Q = E(q)``, ``E(q) m`` is the spatial momentum.
    h : float or array_like of shape (n,)
        Time step, any sign (the method is symmetric: a step of ``-h`` undoes a step of ``h``).
    inertia : array_like, shape (3,) or (n, 3)
        Principal moments of inertia, strictly positive, in any order.
    order : int
        2 (plain DMV), 4, 6 or 8: the global error is ``O(h^order)``.
    threads : int, optional
        Threads sharing a batch (default :func:`frb.get_num_threads`); the results are the
        same bit for bit for every count.

    Returns
    -------
    m_out, q_out : new arrays of the input shapes, the approximation at time ``h``.

    Raises
    ------
    TypeError, ValueError
        Invalid arguments (as :func:`frb.quat_step`; ``order`` not in 2, 4, 6, 8).
    RuntimeError
        The step is too large for the DMV equation to have a solution.

    Notes
    -----
    The step is ``Y = alpha m + (h/2) Y x (W Y)``, ``e = (h/2) W Y``, ``alpha = 1 + |e|^2``
    (solved to machine precision), ``m_out = m + (h/alpha) Y x (W Y)``,
    ``q_out = q (1, e) / sqrt(alpha)``, where ``W`` is the diagonal of modified inverse moments
    of inertia ``1/I_j (1 + h^2 s3 + h^4 s5 + h^6 s7) + h^2 t3 + h^4 t5 + h^6 t7`` (Vilmart,
    Table 1; all corrections vanish for order 2).
    """
    return _run(m, q, h, inertia, order, 1, threads)


def dmv_integrate(m0, q0, h, nsteps, inertia, order=6, threads=None, progress=False):
    """``nsteps`` steps of :func:`dmv_step` of size ``h``, looping in compiled code.

    Parameters as for :func:`dmv_step`, with ``nsteps`` a non-negative integer, and
    ``progress=True`` for a progress bar (tqdm when installed, else a line on stderr).
    Returns the final state ``(m, q)`` at time ``nsteps * h``. The modified moments of inertia
    are computed once per body: they depend only on ``|m|`` and the energy, which the method
    conserves, so this is the same method as repeated :func:`dmv_step` calls (up to roundoff).
    A long run is entered in segments of about 0.1 s of work (Ctrl-C stops it within a
    fraction of a second) with the results of one uninterrupted loop bit for bit.
    """
    if isinstance(nsteps, bool) or not isinstance(nsteps, numbers.Integral):
        raise TypeError(f"nsteps must be a non-negative integer, got {nsteps!r}")
    if not 0 <= int(nsteps) <= np.iinfo(np.int32).max:
        raise ValueError(f"nsteps must be a non-negative 32-bit integer, got {nsteps}")
    return _run(m0, q0, h, inertia, order, int(nsteps), threads, progress)
