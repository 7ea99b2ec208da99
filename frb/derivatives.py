"""Exact derivatives of the exact free flow: the state transition matrix of a step and its
sensitivities to the step and to the inertia.

Conventions. The state is ``x = (m, Q)`` (or ``(m, q)``); a perturbation is ``(dm, dtheta)``
with the attitude perturbed in the **body frame**, ``Q~ = Q exp(hat(dtheta))`` (for quaternions
the same ``dtheta``: ``q~ = q (1, dtheta/2)`` to first order). For one step of length ``h``:

* ``jac.state``, the 6 x 6 state transition matrix ``Phi``: ``(dm1, dtheta1) = Phi (dm0, dtheta0)``;
* ``jac.h``, the derivative of ``(m1, theta1)`` with respect to ``h`` (a 6-vector: for the exact
  flow the vector field at the end, ``(m1 x w1, w1)``, ``w1 = I^-1 m1``);
* ``jac.inertia``, the derivatives with respect to the inertia: 6 x 3 for the principal moments
  ``inertia = (I1, I2, I3)``; for a tensor ``J``, 6 x 6 with respect to its independent
  components ``(J11, J22, J33, J12, J13, J23)`` (a change of ``J12`` moves ``J12`` and ``J21``).
  Computed when first read (it costs several times the step).

Rows and columns in the order ``(dm, dtheta)``. The variational equations of the free body, which
the matrices solve, are ``dm' = dm x w + m x I^-1 dm`` and ``dtheta' = I^-1 dm - w x dtheta``.

The derivatives come from the closed form of the flow itself (the Jacobi functions and
elliptic integrals differentiated in argument and parameter, through the flow's own reductions,
its quadruple precision for long steps included), not from finite differences or an integration
of the variational equations: see the manual, "Exact flow", section "Derivatives of the flow".
The states returned are those of :func:`frb.frb_step` / :func:`frb.quat_step` bit for bit.
"""
from __future__ import annotations

from typing import Any, Callable

import numpy as np
from numpy.typing import ArrayLike, NDArray

from . import _validate
from ._run import Request, Route, StepJacobian, inertia_jacobian, jacobian, prepare
from ._step_routes import ROUTES as STEP_ROUTES
from .inertia import PrincipalFrame, tensor_frame
from .methods import METHODS
from .rotations import matrix_to_quat_unchecked, quaternion_product

__all__ = ["FlowJacobian", "flow_jacobian", "TENSOR_COMPONENTS", "REPEATED_MOMENTS"]

#: The components of an inertia tensor of the columns of ``jac.inertia`` (0-based indices).
TENSOR_COMPONENTS = ((0, 0), (1, 1), (2, 2), (0, 1), (0, 2), (1, 2))

#: Two principal moments of a tensor closer than this (relative to the largest) are taken as
#: equal by the derivatives with respect to the tensor (see :func:`flow_jacobian`).
REPEATED_MOMENTS = float(np.sqrt(np.finfo(np.float64).eps))

_F64 = NDArray[np.float64]
_EXACT = METHODS["EXACT"]

#: The routes of the steps with their jacobian, by the name of the attitude argument: those of
#: frb_step ("Q") and quat_step ("q"), and of flow_jacobian, which takes both forms.
ROUTES = {
    "Q": STEP_ROUTES["Q"],
    "q": STEP_ROUTES["q"],
    None: Route("frb.derivatives.flow_jacobian",
                {"m": "m", "attitude": "attitude", "h": "h", "inertia": "inertia"},
                forms=("quaternion", "matrix"), h_per_body=True),
}


class FlowJacobian:
    """The derivatives of one step (of each body of a batch: a leading axis of length n).

    Attributes
    ----------
    state : ndarray, shape (6, 6) or (n, 6, 6)
        ``Phi``, with ``(dm1, dtheta1) = Phi (dm0, dtheta0)``.
    h : ndarray, shape (6,) or (n, 6)
        ``d(m1, theta1)/dh``.
    inertia : ndarray, shape (6, 3), (n, 6, 3), (6, 6) or (n, 6, 6)
        ``d(m1, theta1)/dI`` for the principal moments (6 x 3), or with respect to the
        components ``(J11, J22, J33, J12, J13, J23)`` of inertia tensors (6 x 6); computed when
        first read.
    """

    __slots__ = ("state", "h", "_inertia", "_compute")

    def __init__(self, state: _F64, h: _F64, inertia: Callable[[], _F64] | _F64) -> None:
        self.state = state
        self.h = h
        if callable(inertia):
            self._inertia: _F64 | None = None
            self._compute: Callable[[], _F64] | None = inertia
        else:
            self._inertia = inertia
            self._compute = None

    @property
    def inertia(self) -> _F64:
        if self._inertia is None:
            assert self._compute is not None
            self._inertia = self._compute()
            self._compute = None
        return self._inertia

    def __repr__(self) -> str:
        return f"<FlowJacobian: state {self.state.shape}, h {self.h.shape}>"


def flow_jacobian(m: ArrayLike, attitude: ArrayLike, h: ArrayLike, inertia: ArrayLike,
                  quadrature: int = 0, threads: int | None = None, *, form: str | None = None
                  ) -> tuple[_F64, _F64, FlowJacobian]:
    """One exact step of the free rigid body with its derivatives.

    Parameters
    ----------
    m, h, inertia, quadrature, threads
        As :func:`frb.frb_step` (``m`` (3,) or (n, 3); ``h`` a number or (n,); ``inertia``
        moments (3,) or (n, 3), or tensors (3, 3), (1, 3, 3) or (n, 3, 3)). With
        ``quadrature`` 1..10 the derivatives are those of the semi-exact flow.
    attitude : array_like
        Unit quaternions (4,) or (n, 4), scalar first, or rotation matrices (3, 3) or (n, 3, 3).
    form : {"Q", "q"}, optional
        Only this form of the attitude, named so in the messages (:func:`frb.frb_step` and
        :func:`frb.quat_step` with ``jacobian=True``).

    Returns
    -------
    m1 : ndarray, shape of ``m``
    attitude1 : ndarray, shape of ``attitude``
        The state after the step, that of :func:`frb.frb_step` / :func:`frb.quat_step` bit for
        bit.
    jac : FlowJacobian
        ``jac.state`` (6, 6), ``jac.h`` (6,), ``jac.inertia`` (6, 3), or (6, 6) for a tensor,
        each with a leading axis n for a batch. Rows and columns in the order (dm, dtheta),
        ``dtheta`` the attitude perturbation in the body frame (module :mod:`frb.derivatives`).

    Raises
    ------
    TypeError, ValueError
        As :func:`frb.frb_step`, with the same messages; ValueError also when the state
        transition matrix or ``jac.h`` is beyond the float64 range (the step itself finite).

    Notes
    -----
    Accuracy (measured against the variational equations integrated in extended precision,
    benchmarks/results/jacobian_accuracy.md): the state transition matrix and ``jac.h`` to about
    1e-14 relative to their largest entry; ``jac.inertia`` to about 1e-14, and to a few 1e-12 for
    short steps of nearly symmetric bodies (the modulus is a ratio of differences of the moments:
    its derivatives cancel, leaving about the unit roundoff over their relative difference,
    against entries of the size of the step; nearly spherical bodies and the shortest such steps
    are taken in quadruple precision). The attitude's derivative in the momentum is of the size
    of the step's turn ``phi = |h| |m| / I_min``; exact steps with ``phi <= 1/16`` take it from
    the Taylor series of the variational equations, to a few 1e-16 relative to that block
    (the closed form leaves about 1e-16 / ``phi`` of it, so up to about 3e-14 at
    ``1/16 < phi < 1``; the semi-exact flow's, ``quadrature`` 1..10, keeps that error for all
    ``phi``). The jacobian itself becomes large near
    the separatrix and the middle axis (it grows like ``exp(mu t)`` along the unstable steady
    rotation, and like ``t`` times the derivative of the period near the separatrix): frb
    returns it as computed while finite; its relative accuracy there is that of its largest
    entries (see the manual for the measure of this conditioning). With tensors, the derivatives
    with respect to the off-diagonal components pass through the principal axes, whose
    derivatives are of the size of 1 / (difference of two moments): for moments closer than
    :data:`REPEATED_MOMENTS` relative, the pair is taken as equal (exact for equal moments, an
    error of the size of their difference otherwise), else the error is about the unit roundoff
    times the largest moment over their difference.

    Examples
    --------
    >>> import numpy as np
    >>> import frb
    >>> m1, q1, jac = frb.derivatives.flow_jacobian([0.3, 0.5, 0.8], [1.0, 0.0, 0.0, 0.0], 0.1,
    ...                                             [1.0, 2.0, 3.0])
    >>> jac.state.shape, jac.h.shape, jac.inertia.shape
    ((6, 6), (6,), (6, 3))
    >>> bool(abs(np.linalg.det(jac.state) - 1) < 1e-12)
    True
    """
    _validate.choice(form, "form", ROUTES, "'Q' (rotation matrices) or 'q' (quaternions)")
    # (the derivatives with respect to the inertia are computed when first read: from copies of
    # the arguments, which the caller may change in place meanwhile)
    for a, name in ((m, "m"), (attitude, form or "attitude"), (h, "h"), (inertia, "inertia")):
        if isinstance(a, np.ndarray):
            _validate.fits_expanded(a, name)    # (a broadcast view copied whole)
    # (copies that keep their class: a masked array is refused by the input rule, not unmasked)
    m, attitude, h, inertia = (np.array(a, subok=True) if isinstance(a, np.ndarray) else a
                               for a in (m, attitude, h, inertia))
    frame = tensor_frame(inertia, m)
    if frame is not None:
        return _tensor_jacobian(frame, m, attitude, h, quadrature, threads, form)
    return _moments_jacobian(m, attitude, h, inertia, quadrature, threads, form)


def _moments_jacobian(m: ArrayLike, attitude: ArrayLike, h: ArrayLike, inertia: ArrayLike,
                      quadrature: Any, threads: int | None, form: str | None
                      ) -> tuple[_F64, _F64, FlowJacobian]:
    """The step with its derivatives for principal moments (a run of EXACT, one step)."""
    run = prepare(Request(ROUTES[form], _EXACT, m, attitude, inertia, h, 1, None, None, None,
                          quadrature, threads))
    out: StepJacobian = jacobian(run)
    shape = (3, 3) if run.natt == 9 else (4,)

    def moments() -> _F64:
        di = inertia_jacobian(run)
        return di[0] if run.single else di

    if run.single:
        return (out.m[0], out.attitude[0].reshape(shape),
                FlowJacobian(out.state[0], out.h[0], moments))
    return (out.m, out.attitude.reshape((run.n,) + shape),
            FlowJacobian(out.state, out.h, moments))


def _blocks(R: _F64) -> _F64:
    """diag(R, R) of rotations R (n, 3, 3): (n, 6, 6)."""
    D = np.zeros(R.shape[:-2] + (6, 6))
    D[..., :3, :3] = R
    D[..., 3:, 3:] = R
    return D


def _tensor_jacobian(frame: PrincipalFrame, m: ArrayLike, attitude: ArrayLike, h: ArrayLike,
                     quadrature: Any, threads: int | None, form: str | None
                     ) -> tuple[_F64, _F64, FlowJacobian]:
    """The step of inertia tensors J = R diag(I) R^T in their principal frame
    (:mod:`frb.inertia`), its jacobian mapped back, and the derivatives with respect to J.

    A change dJ is S = R^T dJ R in the principal frame: its diagonal changes the moments; an
    off-diagonal S_kl with I_k != I_l turns the principal axes by the angle vector a with
    hat(a)_kl = S_kl / (I_l - I_k), whose effect on the step is
    G(a) = Phi (m0' x a, a) + (a x m1', -a) (the body seen from axes turned by a). For a pair of
    equal moments (within REPEATED_MOMENTS) the body is symmetric about the third axis j, and in
    the principal frame V turned by 45 degrees about j the change is diagonal, S_kl (e_k e_k^T -
    e_l e_l^T): the derivative with respect to the moments at the state seen in V."""
    name = form or "attitude"
    mp = frame.momentum_argument(m, "m")
    ap = frame.attitude_argument(attitude, name)
    m1p, a1p, jp = _moments_jacobian(mp, ap, h, frame.moments, quadrature, threads, form)
    single = frame.single
    n = 1 if single else np.shape(m1p)[0]
    R = np.broadcast_to(np.eye(3) if frame.R is None else frame.R, (n, 3, 3))
    D = _blocks(R)
    phi = jp.state.reshape(n, 6, 6)
    state = D @ phi @ np.swapaxes(D, -1, -2)
    dhu = np.einsum("nij,nj->ni", D, jp.h.reshape(n, 6))

    def components() -> _F64:
        m0b = np.asarray(mp, dtype=np.float64).reshape(n, 3)
        a0b = np.asarray(ap, dtype=np.float64)
        a0b = a0b.reshape((n,) + a0b.shape[(0 if single else 1):])
        m1b = m1p.reshape(n, 3)
        dmom = jp.inertia.reshape(n, 6, 3)
        moments = np.broadcast_to(frame.moments, (n, 3))
        dt = np.zeros((n, 6, 6))
        scale = np.abs(moments).max(axis=1)
        pairs = ((0, 1, 2), (0, 2, 1), (1, 2, 0))
        repeated = {}
        for k, l, j in pairs:
            equal = np.abs(moments[:, l] - moments[:, k]) <= REPEATED_MOMENTS * scale
            if equal.any():
                repeated[(k, l, j)] = (equal, _turned_pair(m0b[equal], a0b[equal], h,
                                                           moments[equal], quadrature, threads,
                                                           form, (k, l, j), n, equal))
        for c, (p, r) in enumerate(TENSOR_COMPONENTS):
            dJ = np.zeros((3, 3))
            dJ[p, r] = dJ[r, p] = 1.0
            S = np.swapaxes(R, -1, -2) @ dJ @ R
            col = np.einsum("nik,nk->ni", dmom, np.diagonal(S, axis1=1, axis2=2))
            angle = np.zeros((n, 3))
            for k, l, j in pairs:
                gap = moments[:, l] - moments[:, k]
                equal = np.abs(gap) <= REPEATED_MOMENTS * scale
                turn = np.where(equal, 0.0, S[:, k, l] / np.where(equal, 1.0, gap))
                # hat(a)_kl = A_kl: a_j = -A_kl for (k, l, j) cyclic, +A_kl otherwise
                angle[:, j] += turn * (1.0 if (k, l, j) == (0, 2, 1) else -1.0)
                if (k, l, j) in repeated:
                    sel, values = repeated[(k, l, j)]
                    col[sel] += S[sel, k, l][:, None] * values
            v = np.concatenate([np.cross(m0b, angle), angle], axis=1)
            col += np.einsum("nij,nj->ni", phi, v)
            col[:, :3] += np.cross(angle, m1b)
            col[:, 3:] -= angle
            dt[:, :, c] = col
        dtu = D @ dt
        return dtu[0] if single else dtu

    m1u = frame.momentum_out(m1p)
    a1u = frame.attitude_out(a1p)
    if single:
        return m1u, a1u, FlowJacobian(state[0], dhu[0], components)
    return m1u, a1u, FlowJacobian(state, dhu, components)


def _turned_pair(m0: _F64, a0: _F64, h: ArrayLike, moments: _F64, quadrature: Any,
                 threads: int | None, form: str | None, pair: tuple[int, int, int], n: int,
                 sel: NDArray[np.bool_]) -> _F64:
    """For bodies with equal moments k, l (principal frame, states m0, a0): the derivative of the
    step with respect to the change e_k e_k^T - e_l e_l^T of the inertia seen in the principal
    frame V turned by 45 degrees about axis j, mapped back to the principal frame (6-vectors)."""
    k, l, _ = pair
    c = np.sqrt(0.5)
    V = np.eye(3)
    V[k, k] = V[l, l] = c
    V[l, k] = c
    V[k, l] = -c
    mt = m0 @ V                       # V^T m per body
    if a0.shape[-1] == 4:
        at = quaternion_product(a0, matrix_to_quat_unchecked(V))
    else:
        at = a0 @ V
    hb = np.asarray(h, dtype=np.float64)
    hb = hb if hb.ndim == 0 else np.broadcast_to(hb, (n,))[sel]
    _, _, jt = _moments_jacobian(mt, at, hb, moments, quadrature, threads, form)
    d = jt.inertia.reshape(-1, 6, 3)
    diff = d[:, :, k] - d[:, :, l]
    return np.einsum("ij,nj->ni", _blocks(V), diff)
