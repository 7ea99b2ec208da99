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
corrections of orders 4 to 8 move the limit). For larger steps :class:`RuntimeError` is raised.
"""
from __future__ import annotations

import warnings
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from . import _core, _segments
from . import _validate
from .flows import (ORTHOGONALITY_TOLERANCE, as_float_array, common_arrays, lean_array, raise_for,
                    single_body)
from .threads import resolve as _resolve_threads, get_num_threads

__all__ = ["dmv_step", "dmv_integrate"]

DMV_ORDERS = (2, 4, 6, 8)
_NO_SOLUTION = ("the DMV equation has no solution: the step h is too large for the angular "
                "velocity (need |h| |m / inertia| below about 1; see frb.baselines)")

# |m| and the moments are brought within these powers of two (exactly, by powers of two) before
# the compiled kernel, whose squares would otherwise overflow or underflow
_SAFE_EXPONENT = 200
_LO, _HI = 2.0**-_SAFE_EXPONENT, 2.0**_SAFE_EXPONENT
_LO2, _HI2 = _LO * _LO, _HI * _HI


def _order(order: int) -> int:
    order = _validate.integer(order, f"order (one of {DMV_ORDERS})")
    if order not in DMV_ORDERS:
        raise ValueError(f"order must be one of {DMV_ORDERS}, got {order}")
    return order


#: Largest I_max / I_min of each order: the h^2..h^6 corrections of the moments involve powers of
#: the inverse moments up to the seventh, which overflow beyond (order 2 has no corrections).
MAX_INERTIA_RATIO = {2: np.inf, 4: 1e100, 6: 1e50, 8: 1e40}


def _check_ratio(inertia2: NDArray[np.float64], order: int) -> None:
    limit = MAX_INERTIA_RATIO[order]
    if limit == np.inf or not np.isfinite(inertia2).all() or not (inertia2 > 0).all():
        return   # (invalid values are reported by the compiled checks)
    ratio = inertia2.max(axis=1) / inertia2.min(axis=1)
    if (ratio > limit).any():
        b = int(np.argmax(ratio > limit))
        body = f" (body {b})" if inertia2.shape[0] > 1 else ""
        raise ValueError(f"inertia: the DMV method of order {order} supports I_max / I_min up to "
                         f"{limit:.0e}, got {ratio[b]:.3g}{body} (its corrections of the moments "
                         "would overflow); use order 2 or frb.quat_step")


def _lean_scales(m: NDArray[np.float64], inertia: NDArray[np.float64], order: int) -> bool:
    """True when one body (m, inertia float64 of shape (3,)) needs neither the rescaling nor the
    ratio check of the general path (the usual case; NaN and non-positive moments go there too).
    (Plain float arithmetic: a numpy call would cost more than the DMV step.)"""
    a, b, c = m.tolist()
    i, j, k = inertia.tolist()
    s = a * a + b * b + c * c
    return ((_LO2 <= s <= _HI2 or (a == 0 and b == 0 and c == 0))
            and _LO <= i <= _HI and _LO <= j <= _HI and _LO <= k <= _HI
            and (order == 2 or max(i, j, k) <= MAX_INERTIA_RATIO[order] * min(i, j, k)))


def _rescaled(m2: NDArray[np.float64], h1: NDArray[np.float64], inertia2: NDArray[np.float64]
              ) -> tuple[NDArray[np.float64], NDArray[np.float64], NDArray[np.float64],
                         NDArray[Any]] | None:
    """The same bodies rescaled by powers of two, m -> a m, I -> b I, h -> h b / a (the method
    is covariant under this scaling, and powers of two scale every operation exactly), when a
    body's |m| or moments lie outside 2^-200..2^200; returns (m, h, inertia, log2 a) or None.
    Invalid values are left alone for the compiled checks to report."""
    with np.errstate(all="ignore"):
        big_m = np.abs(m2).max(axis=1)
        big_i = inertia2.max(axis=1)
        if not (np.isfinite(m2).all() and np.isfinite(h1).all() and np.isfinite(inertia2).all()
                and (inertia2 > 0).all()):
            return None
        lo, hi = 2.0**-_SAFE_EXPONENT, 2.0**_SAFE_EXPONENT
        if not (((big_m > 0) & ((big_m < lo) | (big_m > hi))).any() or ((big_i < lo) | (big_i > hi)).any()):
            return None
        n = m2.shape[0]
        ka = np.where(big_m > 0, -np.frexp(big_m)[1], 0)
        kb = np.broadcast_to(-np.frexp(big_i)[1], (n,))
        m_s = np.ldexp(m2, ka[:, None])
        i_s = np.ldexp(np.broadcast_to(inertia2, (n, 3)), kb[:, None])
        h_s = np.ldexp(np.broadcast_to(h1, (n,)), kb - ka)
        if not np.isfinite(h_s).all():
            return None
    return m_s, h_s, i_s, ka


def _run(m: ArrayLike, q: ArrayLike, h: ArrayLike, inertia: ArrayLike, order: int, nsteps: int,
         threads: int | None = None, progress: bool = False
         ) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """Validate the shapes here and the values in the compiled loop (as frb.quat_step does),
    then take nsteps DMV steps: in one compiled call for a short run, else in segments of
    steps (frb._segments) with the same results bit for bit."""
    q_in = q
    # one body, a run short enough for one compiled call (Ctrl-C, see _SINGLE_CALL_WORK)
    short = type(nsteps) is int and nsteps <= _SINGLE_CALL_WORK
    one = single_body(m, h, inertia, 0) if short and not progress else None
    if one is not None:
        if type(order) is not int or order not in DMV_ORDERS:
            order = _order(order)   # (the checks and messages of the general path)
        q1 = lean_array(q, "q", (4,))
        if q1 is not None and _lean_scales(one[0], one[2], order):
            # one body: the lean binding (the checks and results of a batch of one)
            m_out, q_out, info, nfail = _core.dmv_integrate_single(
                one[0], q1, one[1], one[2], order, nsteps, ORTHOGONALITY_TOLERANCE)
            if info:
                raise_for(info, -1, "q", one[0], one[1], one[2], q)
            if nfail:
                raise RuntimeError(_NO_SOLUTION)
            return m_out, q_out
    single, n, m2, h1, inertia2, _ = common_arrays(m, h, inertia, 0, check_finite=False)
    order = _order(order)
    _check_ratio(inertia2, order)
    threads = _resolve_threads(threads)
    progress = _segments.check_progress(progress)
    q = as_float_array(q, "q", check_finite=False)
    expected = (4,) if single else (n, 4)
    if q.shape != expected:
        raise ValueError(f"q must have shape {expected}, got {q.shape}")
    if n == 0:
        return np.empty((0, 3)), np.empty((0, 4))
    q2 = np.ascontiguousarray(q.reshape(-1, 4))
    m2 = np.ascontiguousarray(m2)
    scaled = _rescaled(m2, h1, inertia2)
    if scaled is None:
        m_k, h_k, i_k = m2, h1, inertia2
    else:
        m_k, h_k, i_k = (np.ascontiguousarray(a) for a in scaled[:3])
    if (nsteps <= 1 or n * nsteps <= _SINGLE_CALL_WORK) and not progress:
        m_out, q_out, info, where, nfail = _core.dmv_integrate_checked(
            m_k.T, q2.T, h_k, i_k.T, order, nsteps, ORTHOGONALITY_TOLERANCE, threads)
        raise_for(info, where if not single else -1, "q", m2, h1, inertia2, q_in)
        m_out, q_out = m_out.T, q_out.T
    else:
        m_out, q_out = _run_segments(m_k, q2, h_k, i_k, order, nsteps, threads, progress,
                                     single, (m2, h1, inertia2, q_in))
        nfail = int(np.count_nonzero(~(np.isfinite(m_out).all(axis=1)
                                       & np.isfinite(q_out).all(axis=1))))
    if nfail:
        bad = ~(np.isfinite(m_out).all(axis=1) & np.isfinite(q_out).all(axis=1))
        body = "" if single else f" (body {int(np.argmax(bad))})"
        raise RuntimeError(_NO_SOLUTION.replace("no solution", f"no solution{body}", 1))
    if scaled is not None:
        m_out = np.ldexp(m_out, -scaled[3][:, None])
    if single:
        return m_out[0].copy(), q_out[0].copy()
    return m_out, q_out


#: Body-steps of a DMV run done in one compiled call (about 0.05 s); a longer run, or one with
#: a progress bar, is entered in segments. One step of any batch is one call.
_SINGLE_CALL_WORK = 1 << 21

#: Bodies of a segment of a long DMV run are whole blocks of this many bodies (a multiple of
#: the lanes of fortran/moser_veselov.f90, dmv_lanes_width = 16, so that the lanes hold the same bodies).
_DMV_ALIGN = 64


def _run_segments(m2: NDArray[np.float64], q2: NDArray[np.float64], h1: NDArray[np.float64],
                  inertia2: NDArray[np.float64], order: int, nsteps: int, threads: int,
                  progress: bool, single: bool, given: tuple[Any, ...] | None = None
                  ) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """A long run in segments: input checks, the modified moments of inertia from the initial
    state (as dmv_integrate_many computes them), then the steps with the state carried.
    ``given``: (m, h, inertia, q) as the caller gave them, for the messages."""
    info, where = _core.dmv_check_batch(m2.T, q2.T, h1, inertia2.T, ORTHOGONALITY_TOLERANCE,
                                        threads)
    if info:
        raise_for(info, where if not single else -1, "q", *(given or ()))
    w = _core.dmv_prepare_batch(m2.T, h1, inertia2.T, order, threads)
    m = m2.copy()
    q = q2.copy()
    mT, qT = m.T, q.T

    def advance(b_first: int, b_last: int, k_first: int, k_last: int) -> None:
        _core.dmv_advance_batch(mT, qT, h1, w, k_last - k_first, b_first + 1, b_last, threads)

    _segments.run(advance, nsteps, m.shape[0], align=_DMV_ALIGN,
                  threads=threads or get_num_threads(), progress=progress,
                  label=f"frb.dmv_integrate order {order}")
    return m, q


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
    inertia : array_like, shape (3,) or (n, 3)
        Principal moments of inertia, strictly positive, in any order.
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
    RuntimeError
        The step is too large for the DMV equation to have a solution.

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
    return _run(m, q, h, inertia, order, 1, threads)


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
    inertia : array_like, shape (3,) or (n, 3)
        Principal moments of inertia, strictly positive, in any order.
    h : float or array_like of shape (n,)
        Step length.
    nsteps : int
        Number of steps, 0..2**31 - 1.
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
    TypeError, ValueError, RuntimeError
        As :func:`dmv_step`; ``nsteps`` not an integer in 0..2**31 - 1.

    Notes
    -----
    The modified moments of inertia are computed once per body: they depend only on ``|m|``
    and the energy, which the method conserves, so this is the same method as repeated
    :func:`dmv_step` calls (up to roundoff). A long run is entered in segments of about 0.1 s of
    work (Ctrl-C stops it within a fraction of a second) with the results of one uninterrupted
    loop bit for bit. The former order ``(m0, q0, h, nsteps, inertia)`` still works, with a
    DeprecationWarning, when given positionally (recognised by an array in the fifth place).

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
    if type(nsteps) is not int and np.ndim(nsteps) >= 1:   # an array there: the former order
        warnings.warn("dmv_integrate(m0, q0, h, nsteps, inertia) is deprecated: the arguments are "
                      "now (m0, q0, inertia, h, nsteps), as in frb.integrate", DeprecationWarning,
                      stacklevel=2)
        inertia, h, nsteps = nsteps, inertia, h
    if type(nsteps) is not int or not 0 <= nsteps <= _validate.INT32_MAX:
        nsteps = _validate.integer(nsteps, "nsteps", 0, _validate.INT32_MAX)
    return _run(m0, q0, h, inertia, order, nsteps, threads, progress)
