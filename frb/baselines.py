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
from . import engine as _engine_py
from .engine import MAX_INERTIA_RATIO, METHODS
from .flows import (ORTHOGONALITY_TOLERANCE, as_float_array, common_arrays, lean_array, raise_for,
                    single_body)
from .inertia import tensor_frame
from .threads import resolve as _resolve_threads

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


def _check_ratio(inertia2: NDArray[np.float64], order: int) -> None:
    """MAX_INERTIA_RATIO of the order (frb.engine.check_dmv_inertia, the check of frb.integrate)."""
    _engine_py.check_dmv_inertia(METHODS[f"DMV{order}"], inertia2, inertia2.shape[0] == 1)


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
    """Validate the shapes here and the values in compiled code (as frb.quat_step does), then
    take nsteps DMV steps through the engine of frb.integrate (method DMV<order>, torque-free,
    the final state only): one engine run per distinct value of h. One body of a short run
    takes the lean binding dmv_integrate_single, the engine's steps for one body."""
    q_in = q
    if threads is not None:
        _resolve_threads(threads)   # (checked for one body too)
    # one body, a run short enough for one compiled call (Ctrl-C, see _SINGLE_CALL_WORK)
    short = type(nsteps) is int and nsteps <= _SINGLE_CALL_WORK
    one = single_body(m, h, inertia, 0) if short and not progress else None
    if one is not None:
        if type(order) is not int or order not in DMV_ORDERS:
            order = _order(order)   # (the checks and messages of the general path)
        q1 = lean_array(q, "q", (4,))
        if q1 is not None and _lean_scales(one[0], one[2], order):
            # one body: the lean binding (the checks of a batch of one, the engine's steps)
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
    info, where = _core.dmv_check_batch(m2.T, q2.T, h1, inertia2.T, ORTHOGONALITY_TOLERANCE,
                                        threads)
    if info:
        raise_for(info, where if not single else -1, "q", m2, h1, inertia2, q_in)
    scaled = _rescaled(m2, h1, inertia2)
    if scaled is None:
        m_k, h_k, i_k = m2, h1, inertia2
    else:
        m_k, h_k, i_k = (np.ascontiguousarray(a) for a in scaled[:3])
    m_out, q_out, bad = _run_engine(m_k, q2, h_k, i_k, order, nsteps, threads, progress)
    if bad is not None:
        body = "" if single else f" (body {bad})"
        raise RuntimeError(_NO_SOLUTION.replace("no solution", f"no solution{body}", 1))
    if scaled is not None:
        m_out = np.ldexp(m_out, -scaled[3][:, None])
    if single:
        return m_out[0], q_out[0]
    return m_out, q_out


#: Body-steps of a one-body DMV run done by the lean binding in one compiled call (about
#: 0.05 s); a longer run, or one with a progress bar, goes through the engine's segments.
_SINGLE_CALL_WORK = 1 << 21


def _run_engine(m2: NDArray[np.float64], q2: NDArray[np.float64], h1: NDArray[np.float64],
                inertia2: NDArray[np.float64], order: int, nsteps: int, threads: int,
                progress: bool) -> tuple[NDArray[np.float64], NDArray[np.float64], int | None]:
    """nsteps steps of the validated bodies m2 (n, 3), q2 (n, 4) with the moments inertia2
    ((1, 3) or (n, 3)) and the steps h1 ((1,) or (n,)) by frb.engine.run_validated (method
    DMV<order>, torque-free, the final state only), one run per distinct value of h, the
    results scattered back. Returns (m, q, the smallest body that failed or None)."""
    n = m2.shape[0]
    name = f"DMV{order}"
    info = METHODS[name]
    i_all = np.ascontiguousarray(np.broadcast_to(inertia2, (n, 3)))
    values = np.unique(h1)
    if values.size == 1:
        groups: list[tuple[float, NDArray[np.intp] | None]] = [(float(values[0]), None)]
    else:
        h_n = np.broadcast_to(h1, (n,))
        groups = [(float(v), np.flatnonzero(h_n == v)) for v in values]
    m_out = np.empty((n, 3))
    q_out = np.empty((n, 4))
    bad: int | None = None
    for hv, idx in groups:
        if idx is None:
            mg, qg, ig = m2, q2, i_all
        else:
            mg, qg, ig = m2[idx], q2[idx], i_all[idx]
        _, mo, qo, failure = _engine_py.run_validated(
            name, info, mg, qg, ig, hv, nsteps, None, None, 0, 0, threads, progress,
            float(np.abs(mg).max()), float(ig.min()), float(ig.max()), False,
            f"frb.dmv_integrate order {order}")
        if failure is not None:
            b = failure.body if idx is None else int(idx[failure.body])
            bad = b if bad is None else min(bad, b)
            continue
        if idx is None:
            m_out, q_out = mo[-1], qo[-1]
        else:
            m_out[idx] = mo[-1]
            q_out[idx] = qo[-1]
    return m_out, q_out, bad


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
        Bodies are stepped in blocks of 16 sharing a step; for an ``h`` given per body, the bodies
        of equal ``h`` are stepped together, one run of the engine per distinct value.
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
    frame = tensor_frame(inertia, m)
    if frame is not None:   # inertia tensors: the step in their principal frame (frb.inertia)
        return frame.step(_run, m, q, h, order, 1, threads, names=("m", "q"))
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
    inertia : array_like, shape (3,), (n, 3), (3, 3), (1, 3, 3) or (n, 3, 3)
        Principal moments of inertia, or inertia tensors, as :func:`dmv_step`.
    h : float or array_like of shape (n,)
        Step length. For an ``h`` given per body, the bodies of equal ``h`` run together: one
        run of the engine per distinct value (a scalar ``h`` is one run).
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
    :func:`dmv_step` calls (up to roundoff). The steps are those of
    ``frb.integrate(m0, q0, inertia, h, nsteps, method=f"DMV{order}", save_every=None)``, with
    the same results bit for bit (for a scalar ``h``). A long run is entered in segments of about 0.1 s of
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
    frame = tensor_frame(inertia, m0)
    if frame is not None:   # inertia tensors: the run in their principal frame (frb.inertia)
        return frame.step(_run, m0, q0, h, order, nsteps, threads, progress, names=("m", "q"))
    return _run(m0, q0, h, inertia, order, nsteps, threads, progress)
