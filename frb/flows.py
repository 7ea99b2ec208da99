"""Exact and semi-exact flows of the free rigid body (the public steps of frb).

The free rigid body is ``m' = m x I^-1 m`` (body angular momentum ``m``) with the attitude
``Q' = Q hat(I^-1 m)`` (rotation matrix, columns = body axes in the fixed frame) or
``q' = q (0, I^-1 m) / 2`` (unit quaternion, scalar first). Both steps compute the exact solution
at time ``h`` (elliptic functions and Carlson's integrals), or with ``quadrature = np`` in 1..10 the
semi-exact solution whose attitude angle uses ``np``-node Gauss-Legendre quadrature (order
``2 np``; the momentum stays exact). Units are any consistent set: ``m`` in angular momentum units,
``inertia`` in moment of inertia units, ``h`` in time units, so that ``m / inertia`` is an angular
velocity in radians per time unit.
"""
from __future__ import annotations

from functools import partial
from typing import TYPE_CHECKING, Any, Callable, Literal, overload

import numpy as np
from numpy.typing import ArrayLike, NDArray

from . import _core
from . import _numbers_table as _sn
from . import _validate
from ._validate import ORTHOGONALITY_TOLERANCE
from .inertia import tensor_frame
from . import _segments
from .threads import resolve as _resolve_threads, get_num_threads

if TYPE_CHECKING:
    from .derivatives import FlowJacobian

__all__ = ["frb_step", "quat_step"]

_Step = tuple[NDArray[np.float64], NDArray[np.float64]]
_StepJacobian = tuple[NDArray[np.float64], NDArray[np.float64], "FlowJacobian"]


def as_float_array(value: ArrayLike, name: str, check_finite: bool = True) -> NDArray[np.float64]:
    """``value`` as a float64 array under the input rule of :mod:`frb._validate`."""
    return _validate.real_array(value, name, finite=check_finite)


def raise_for(info: int, where: int, attitude: str, m: ArrayLike | None = None,
               h: ArrayLike | None = None, inertia: ArrayLike | None = None,
               original: ArrayLike | None = None) -> None:
    """Raise the ValueError for a check code of the compiled loop (checks), if any: the message of
    :func:`frb._validate.check_message`, naming ``attitude`` (``"Q"`` or ``"q"``) and the body
    ``where`` (negative: none).

    ``m`` (n, 3), ``h`` (nh,), ``inertia`` (ni, 3) give the phase of a step beyond the limit
    (``BAD_PHASE``); ``original`` the attitude as given, for a hint when it was rounded to float32."""
    if info == _sn.INPUT_OK:
        return
    info = int(info)
    phase = float("inf")
    if info == _sn.BAD_PHASE and m is not None:
        b = max(where, 0)
        mb = np.asarray(m, dtype=np.float64).reshape(-1, 3)[b]
        hb = np.asarray(h, dtype=np.float64).reshape(-1)
        ib = np.asarray(inertia, dtype=np.float64).reshape(-1, 3)
        phase = float(_validate.phase(hb[min(b, hb.size - 1)], _validate.norm3(mb),
                                      ib[min(b, ib.shape[0] - 1)].min()))
    raise ValueError(_validate.check_message(info, {"attitude": attitude}, where,
                                             original=original, phase=phase))


def _fortran_ordered(m: object, attitude: object) -> bool:
    """True for a batch whose m and attitude are float64 arrays in Fortran order (not C order)."""
    return all(isinstance(a, np.ndarray) and a.ndim >= 2 and a.dtype == np.float64
               and a.flags.f_contiguous and not a.flags.c_contiguous for a in (m, attitude))


_FLOAT64 = np.dtype(np.float64)
_H_WANT = "a real number (or, for a batch, an array of real numbers)"


def lean_array(value: ArrayLike, name: str, shape: tuple[int, ...]) -> NDArray[np.float64] | None:
    """value as a float64 array if it has the given shape, else None: the conversion of the
    single-body path (``single_body``). A float64 ndarray is taken as it is, without a call;
    anything else goes through :func:`as_float_array` (the type rules of the general path).
    The values are checked by the single-body bindings."""
    if type(value) is not np.ndarray or value.dtype is not _FLOAT64:
        value = as_float_array(value, name, check_finite=False)
    return value if value.shape == shape else None


def single_body(m: ArrayLike, h: ArrayLike, inertia: ArrayLike, quadrature: int
                 ) -> tuple[NDArray[np.float64], float, NDArray[np.float64], int] | None:
    """(m, h, inertia, quadrature) of a one-body call ready for the single-body bindings
    (``_core.*_single``: m and inertia float64 arrays of shape (3,), h a float), or None when
    the call is not one body of shapes (3,), scalar, (3,): the general path then validates and
    reports (its shape messages). The arguments are converted in the order of :func:`common_arrays`,
    so a type error is the one the general path would raise. (``lean_array`` written out for
    m and inertia: this runs on every single-body call.)"""
    if type(m) is not np.ndarray or m.dtype is not _FLOAT64:
        m = as_float_array(m, "m", check_finite=False)
    if m.shape != (3,):
        return None
    if type(inertia) is not np.ndarray or inertia.dtype is not _FLOAT64:
        inertia = as_float_array(inertia, "inertia", check_finite=False)
    if inertia.shape != (3,):
        return None
    if type(h) is not float:
        h = _validate.real_array(h, "h", False, want=_H_WANT)
        if h.ndim != 0:
            return None
        h = float(h)
    if type(quadrature) is not int or not 0 <= quadrature <= 10:
        quadrature = _quadrature(quadrature)   # (the checks and messages of the general path)
    return m, h, inertia, quadrature


def _quadrature(quadrature: int) -> int:
    return _validate.integer(quadrature, "quadrature (0 exact, 1..10 Gauss-Legendre nodes)", 0, 10)


def common_arrays(m: ArrayLike, h: ArrayLike, inertia: ArrayLike, quadrature: int,
            check_finite: bool = True
            ) -> tuple[bool, int, NDArray[np.float64], NDArray[np.float64], NDArray[np.float64],
                       int]:
    """Validate m (3,) or (n,3), h scalar or (n,), inertia (3,) or (n,3); return Fortran views.

    With check_finite=False the values are left to the compiled loop, which checks them."""
    m = as_float_array(m, "m", check_finite)
    if m.ndim not in (1, 2) or m.shape[-1] != 3:
        raise ValueError(f"m must have shape (3,) or (n, 3), got {m.shape}")
    single = m.ndim == 1
    m2 = m.reshape(-1, 3)  # contiguous copies, where needed, are made by the callers
    n = m2.shape[0]

    inertia = as_float_array(inertia, "inertia", check_finite)
    if inertia.shape == (3,):
        inertia2 = inertia.reshape(1, 3)
    elif inertia.ndim == 2 and inertia.shape[1] == 3 and inertia.shape[0] in (1, n) and not single:
        inertia2 = inertia
    elif single:
        raise ValueError(f"inertia must have shape (3,) for one body (m of shape (3,)), "
                         f"got {inertia.shape}")
    else:
        raise ValueError(f"inertia must have shape (3,) or ({n}, 3), got {inertia.shape}")
    if check_finite and np.any(inertia2 <= 0):
        raise ValueError("inertia must contain strictly positive moments of inertia")
    inertia2 = np.ascontiguousarray(inertia2)

    h = _validate.real_array(h, "h", check_finite, want=_H_WANT)
    if h.ndim == 0:
        h1 = h.reshape(1)
    elif h.ndim == 1 and h.shape[0] in (1, n) and not single:
        h1 = np.ascontiguousarray(h)
    elif single:
        raise ValueError(f"h must be a single number for one body (m of shape (3,)), got shape {h.shape}")
    else:
        raise ValueError(f"h must be a scalar or have shape ({n},), got shape {h.shape}")
    return single, n, m2, h1, inertia2, _quadrature(quadrature)


#: The bindings and the item shape of each attitude form: one body, a batch, a Fortran-ordered
#: batch, the shape of one attitude.
_FORMS: dict[str, tuple[Any, Any, Any, tuple[int, ...]]] = {
    "Q": (_core.frb_step_single, _core.frb_step_batch, _core.frb_step_batch_f, (3, 3)),
    "q": (_core.quat_step_single, _core.quat_step_batch, _core.quat_step_batch_f, (4,)),
}


def _step(name: str, m: ArrayLike, attitude: ArrayLike, h: ArrayLike, inertia: ArrayLike,
          quadrature: int, threads: int | None
          ) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """frb_step (name "Q", matrices) and quat_step (name "q", quaternions)."""
    step_single, step_batch, step_batch_f, shape = _FORMS[name]
    nthreads = _resolve_threads(threads)   # (checked for one body too, which runs on one thread)
    # one body of plain floats: its lean binding (the same checks and results as a batch of one)
    one = single_body(m, h, inertia, quadrature)
    if one is not None:
        a1 = lean_array(attitude, name, shape)
        if a1 is not None:
            m_out, a_out, info = step_single(one[0], a1, one[1], one[2], one[3],
                                             ORTHOGONALITY_TOLERANCE)
            if info:
                raise_for(info, -1, name, one[0], one[1], one[2], attitude)
            return m_out, a_out
    frame = tensor_frame(inertia, m)
    if frame is not None:   # inertia tensors: the step in their principal frame (frb.inertia)
        return frame.step(partial(_step, name), m, attitude, h, quadrature, threads,
                          names=("m", name))
    m_in, given = m, attitude
    single, n, m2, h1, inertia2, quadrature = common_arrays(m, h, inertia, quadrature,
                                                            check_finite=False)
    a = as_float_array(attitude, name, check_finite=False)
    expected = shape if single else (n,) + shape
    if a.shape != expected:
        raise ValueError(f"{name} must have shape {expected}, got {a.shape}")
    if n == 0:
        return np.empty((0, 3)), np.empty((0,) + shape)
    if _fortran_ordered(m_in, a):
        # Fortran-ordered batches go in and come out without any transposing copy
        assert isinstance(m_in, np.ndarray)
        m_f = np.empty(m_in.shape, order="F")
        a_f = np.empty(a.shape, order="F")

        def advance_f(b0: int, b1: int, k0: int, k1: int) -> tuple[int, int, int] | None:
            mo, ao, info, where = step_batch_f(
                m_in[b0:b1], a[b0:b1], _rows(h1, b0, b1), _rows(inertia2, b0, b1).T,
                quadrature, ORTHOGONALITY_TOLERANCE, nthreads)
            if info:
                return (1, b0 + int(where), int(info))
            m_f[b0:b1], a_f[b0:b1] = mo, ao
            return None

        _raise_first(_in_segments(advance_f, n, nthreads), name, m_in, h1, inertia2, given)
        return m_f, a_f
    return _batch_step(step_batch, m2, a.reshape((-1,) + shape), h1, inertia2, quadrature,
                       nthreads, single, name, given)


#: Bodies of one call of a batched binding are a multiple of this (whole chunks of the
#: compiled batch, whatever its lane width).
_ALIGN = 64
#: Bodies of the first call of a batch (a batch this small is one call): a step in quadruple
#: precision (a long h) takes up to about 0.1 ms a body, the usual step about 1 us.
_FIRST_BODIES = 1024


def _rows(x: NDArray[np.float64], b0: int, b1: int) -> NDArray[np.float64]:
    """The rows b0..b1-1 of a per-body array, or the array itself when shared (one row)."""
    return x if x.shape[0] == 1 else x[b0:b1]


def _in_segments(advance: _segments.Advance, n: int, threads: int) -> tuple[Any, ...] | None:
    """One step of n bodies through ``advance`` in calls of about 0.1 s of work
    (frb._segments.run): Python runs between them, so Ctrl-C stops a long batch (quadruple
    precision steps, millions of bodies) within a fraction of a second. Each body's arithmetic
    does not depend on the calls, so the results are those of one call bit for bit."""
    return _segments.run(advance, 1, n, align=_ALIGN, threads=max(threads or get_num_threads(), 1),
                         first_work=_FIRST_BODIES)


def _raise_first(failure: tuple[Any, ...] | None, name: str, m: NDArray[np.float64],
                 h1: NDArray[np.float64], inertia2: NDArray[np.float64], given: ArrayLike,
                 single: bool = False) -> None:
    if failure is not None:
        raise_for(failure[2], -1 if single else failure[1], name, m, h1, inertia2, given)


def _batch_step(step_batch: Callable[..., Any], m2: NDArray[np.float64],
                attitude: NDArray[np.float64], h1: NDArray[np.float64],
                inertia2: NDArray[np.float64], quadrature: int, threads: int, single: bool,
                name: str, given: ArrayLike) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """A batch (n, 3) with its attitudes (n, 3, 3) or (n, 4) through the batched binding (C-ordered
    arrays passed as their transposes), in segments (:func:`_in_segments`); errors name the
    argument ``name`` (``given``: as given)."""
    m2 = np.ascontiguousarray(m2)
    a2 = np.ascontiguousarray(attitude)
    n = m2.shape[0]
    m_out = np.empty_like(m2)
    a_out = np.empty_like(a2)

    def advance(b0: int, b1: int, k0: int, k1: int) -> tuple[int, int, int] | None:
        mo, ao, info, where = step_batch(m2[b0:b1].T, a2[b0:b1].T, _rows(h1, b0, b1),
                                         _rows(inertia2, b0, b1).T, quadrature,
                                         ORTHOGONALITY_TOLERANCE, threads)
        if info:
            return (1, b0 + int(where), int(info))
        m_out[b0:b1], a_out[b0:b1] = mo.T, ao.T
        return None

    _raise_first(_in_segments(advance, n, threads), name, m2, h1, inertia2, given, single)
    if single:
        return m_out[0].copy(), a_out[0].copy()
    return m_out, a_out


def _with_jacobian(name: str, m: ArrayLike, attitude: ArrayLike, h: ArrayLike, inertia: ArrayLike,
                   quadrature: int, threads: int | None) -> _StepJacobian:
    """The step with its derivatives (:func:`frb.derivatives.flow_jacobian`, the attitude form
    name "Q" or "q")."""
    from .derivatives import flow_jacobian   # (frb.derivatives uses this module's helpers)
    return flow_jacobian(m, attitude, h, inertia, quadrature, threads, form=name)


@overload
def frb_step(m: ArrayLike, Q: ArrayLike, h: ArrayLike, inertia: ArrayLike, quadrature: int = ...,
             threads: int | None = ..., jacobian: Literal[False] = ...) -> _Step: ...
@overload
def frb_step(m: ArrayLike, Q: ArrayLike, h: ArrayLike, inertia: ArrayLike, quadrature: int = ...,
             threads: int | None = ..., *, jacobian: Literal[True]) -> _StepJacobian: ...
def frb_step(m: ArrayLike, Q: ArrayLike, h: ArrayLike, inertia: ArrayLike, quadrature: int = 0,
             threads: int | None = None, jacobian: bool = False) -> _Step | _StepJacobian:
    """Free rigid body step with the attitude as a rotation matrix (Algorithm 1 of TOMS 903).

    Parameters
    ----------
    m : array_like, shape (3,) or (n, 3)
        Body angular momentum; any norm (``m = 0`` is a body at rest).
    Q : array_like, shape (3, 3) or (n, 3, 3)
        Rotation matrices (orthogonal to 1e-10, determinant +1); ``Q @ m`` is the spatial momentum.
    h : float or array_like of shape (n,)
        Time step, any sign (negative runs time backwards).
    inertia : array_like, shape (3,), (n, 3), (3, 3), (1, 3, 3) or (n, 3, 3)
        Principal moments of inertia, strictly positive, in any order; equal moments allowed.
        Or inertia tensors, symmetric positive definite, in the body frame of ``Q`` (``m``,
        ``Q`` and the results stay in that frame; :mod:`frb.inertia`): (3, 3) for all bodies
        (for a batch of exactly 3 bodies (3, 3) is the moments of each body: give a shared
        tensor as (1, 3, 3)), or (n, 3, 3) one per body.
    quadrature : int
        0 for the exact flow, 1..10 for the semi-exact flow with that many Gauss-Legendre nodes.
    threads : int, optional
        Threads sharing a batch (default :func:`frb.get_num_threads`); the results are the
        same bit for bit for every count.
    jacobian : bool
        Also return the derivatives of the step (:func:`frb.derivatives.flow_jacobian`).

    Returns
    -------
    m_out, Q_out : new arrays of the input shapes, the state at time ``h``.
    jac : FlowJacobian
        With ``jacobian=True``: the state transition matrix ``jac.state`` and the derivatives
        ``jac.h``, ``jac.inertia`` (:mod:`frb.derivatives`).

    Raises
    ------
    TypeError
        An argument that is not (an array of) real numbers: None, bools, complex numbers,
        strings (the rule of :mod:`frb._validate`); ``quadrature`` not an integer.
    ValueError
        Wrong shapes; non-finite values; inertia not strictly positive (a tensor not symmetric
        positive definite); ``Q`` not a rotation
        within 1e-10; ``quadrature`` outside 0..10; a step with ``|h| |m| / I_min`` above 1e18
        radians (no digit of the result would be right). In a batch the message names the
        first offending body.

    Examples
    --------
    One body, one exact step; ``Q m`` (the spatial momentum) is conserved:

    >>> import numpy as np
    >>> import frb
    >>> m, Q = frb.frb_step([0.3, 0.5, 0.8], np.eye(3), 0.1, [1.0, 2.0, 3.0])
    >>> m
    array([0.29326 , 0.515747, 0.792467])
    >>> Q @ m
    array([0.3, 0.5, 0.8])

    A batch of bodies, with one step per body, and the semi-exact flow with 3 nodes:

    >>> m0 = np.random.default_rng(0).normal(size=(1000, 3))
    >>> Q0 = np.broadcast_to(np.eye(3), (1000, 3, 3))
    >>> m1, Q1 = frb.frb_step(m0, Q0, np.full(1000, 0.1), [1.0, 2.0, 3.0], quadrature=3)
    >>> m1.shape, Q1.shape
    ((1000, 3), (1000, 3, 3))

    An inertia tensor in the frame of ``Q`` (here the moments 1, 2, 3 about turned axes):

    >>> J = [[1.5, 0.5, 0.0], [0.5, 1.5, 0.0], [0.0, 0.0, 3.0]]
    >>> m, Q = frb.frb_step([0.3, 0.5, 0.8], np.eye(3), 0.1, J)
    >>> Q @ m
    array([0.3, 0.5, 0.8])
    """
    if jacobian:
        return _with_jacobian("Q", m, Q, h, inertia, quadrature, threads)
    return _step("Q", m, Q, h, inertia, quadrature, threads)


@overload
def quat_step(m: ArrayLike, q: ArrayLike, h: ArrayLike, inertia: ArrayLike, quadrature: int = ...,
              threads: int | None = ..., jacobian: Literal[False] = ...) -> _Step: ...
@overload
def quat_step(m: ArrayLike, q: ArrayLike, h: ArrayLike, inertia: ArrayLike, quadrature: int = ...,
              threads: int | None = ..., *, jacobian: Literal[True]) -> _StepJacobian: ...
def quat_step(m: ArrayLike, q: ArrayLike, h: ArrayLike, inertia: ArrayLike, quadrature: int = 0,
              threads: int | None = None, jacobian: bool = False) -> _Step | _StepJacobian:
    """Free rigid body step with the attitude as a unit quaternion (Algorithm 2 of TOMS 903).

    Parameters as for :func:`frb_step` (``inertia`` moments or tensors), with ``q`` of shape
    (4,) or (n, 4): unit quaternions
    ``(q0, q1, q2, q3)``, **scalar first** (scipy's ``Rotation.as_quat`` is scalar last: convert
    with :func:`frb.from_rotation`), of norm 1 within 1e-10; ``Q = E(q)``.

    Returns
    -------
    m_out, q_out : new arrays of the input shapes, the state at time ``h``; with
    ``jacobian=True`` also ``jac`` (:func:`frb.derivatives.flow_jacobian`).

    Raises
    ------
    TypeError, ValueError
        As :func:`frb_step` (``|q| = 1`` within 1e-10 instead of the rotation check).

    Examples
    --------
    >>> import numpy as np
    >>> import frb
    >>> m, q = frb.quat_step([0.3, 0.5, 0.8], [1.0, 0.0, 0.0, 0.0], 0.1, [1.0, 2.0, 3.0])
    >>> q
    array([0.999721, 0.01483 , 0.012696, 0.013271])

    The step is exact at any length, and ``-h`` undoes ``h``:

    >>> m2, q2 = frb.quat_step(m, q, -0.1, [1.0, 2.0, 3.0])
    >>> bool(np.abs(q2 - [1.0, 0.0, 0.0, 0.0]).max() < 1e-15)
    True
    """
    if jacobian:
        return _with_jacobian("q", m, q, h, inertia, quadrature, threads)
    return _step("q", m, q, h, inertia, quadrature, threads)
