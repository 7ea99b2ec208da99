"""Exact and semi-exact flows of the free rigid body (the public steps of frb).

The free rigid body is ``m' = m x I^-1 m`` (body angular momentum ``m``) with the attitude
``Q' = Q hat(I^-1 m)`` (rotation matrix, columns = body axes in the fixed frame) or
``q' = q (0, I^-1 m) / 2`` (unit quaternion, scalar first). Both steps compute the exact solution
at time ``h`` (elliptic functions and Carlson's integrals), or with ``quadrature = np`` in 1..10 the
semi-exact solution whose attitude angle uses ``np``-node Gauss-Legendre quadrature (order
``2 np``; the momentum stays exact). Units are any consistent set: ``m`` in angular momentum units,
``inertia`` in moment of inertia units, ``h`` in time units, so that ``m / inertia`` is an angular
velocity in radians per time unit.

A step is one run of method EXACT of the time loop (:mod:`frb._run`): one step, the final state
kept, ``h`` shared or per body.
"""
from __future__ import annotations

from functools import partial
from typing import TYPE_CHECKING, Literal, overload

import numpy as np
from numpy.typing import ArrayLike, NDArray

from ._run import Request, execute, lean_free_steps, prepare
from ._step_routes import ROUTES
from ._validate import ORTHOGONALITY_TOLERANCE, flag
from .inertia import tensor_frame
from .methods import METHODS

if TYPE_CHECKING:
    from .derivatives import FlowJacobian

__all__ = ["frb_step", "quat_step", "ORTHOGONALITY_TOLERANCE"]

_Step = tuple[NDArray[np.float64], NDArray[np.float64]]
_StepJacobian = tuple[NDArray[np.float64], NDArray[np.float64], "FlowJacobian"]

_EXACT = METHODS["EXACT"]
_SHAPES = {"Q": (3, 3), "q": (4,)}


def _step(name: str, m: ArrayLike, attitude: ArrayLike, h: ArrayLike, inertia: ArrayLike,
          quadrature: int, threads: int | None
          ) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """frb_step (name "Q", matrices) and quat_step (name "q", quaternions)."""
    if threads is None:
        one = lean_free_steps(ROUTES[name], _EXACT, m, attitude, h, inertia, quadrature, 1)
        if one is not None:
            return one
    frame = tensor_frame(inertia, m)
    if frame is not None:   # inertia tensors: the step in their principal frame (frb.inertia)
        return frame.step(partial(_step, name), m, attitude, h, quadrature, threads,
                          names=("m", name))
    run = prepare(Request(ROUTES[name], _EXACT, m, attitude, inertia, h,
                          quadrature=quadrature, threads=threads))
    out = execute(run)
    if out.failure is not None:
        raise out.failure
    shape = _SHAPES[name]
    if run.single:
        return out.m[0, 0], out.attitude[0, 0].reshape(shape)
    return out.m[0], out.attitude[0].reshape((run.n,) + shape)


def _with_jacobian(name: str, m: ArrayLike, attitude: ArrayLike, h: ArrayLike,
                   inertia: ArrayLike, quadrature: int, threads: int | None) -> _StepJacobian:
    """The step with its derivatives (:func:`frb.derivatives.flow_jacobian`, the attitude form
    name "Q" or "q")."""
    from .derivatives import flow_jacobian   # (imported when used: frb.derivatives is larger)
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
        With ``jacobian=True``: ``jac.state`` the state transition matrix (6, 6) (or (n, 6, 6)),
        ``jac.h`` the derivative in ``h`` (6,) (or (n, 6)), ``jac.inertia`` the derivatives in
        the inertia (6, 3), or (6, 6) for a tensor (components J11, J22, J33, J12, J13, J23);
        rows and columns in the order (dm, dtheta), ``dtheta`` the attitude perturbation in the
        body frame, ``Q~ = Q exp(hat(dtheta))`` (:mod:`frb.derivatives`).

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

    The step with its state transition matrix:

    >>> m1, Q1, jac = frb.frb_step([0.3, 0.5, 0.8], np.eye(3), 0.1, [1.0, 2.0, 3.0], jacobian=True)
    >>> jac.state.shape, jac.h.shape, jac.inertia.shape
    ((6, 6), (6,), (6, 3))
    """
    if flag(jacobian, "jacobian"):
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
    ``jacobian=True`` also ``jac`` (as :func:`frb_step`; the perturbation of ``q`` is
    ``q~ = q (1, dtheta/2)`` to first order).

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
    if flag(jacobian, "jacobian"):
        return _with_jacobian("q", m, q, h, inertia, quadrature, threads)
    return _step("q", m, q, h, inertia, quadrature, threads)
