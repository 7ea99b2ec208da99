"""Inertia tensors: a full symmetric positive-definite tensor wherever ``inertia`` is accepted.

Every public function of frb takes ``inertia`` either as principal moments, shape (3,) for all
bodies or (N, 3) one per body (``m`` and the attitude then given in the principal frame), or as
an inertia **tensor** ``J``, shape (3, 3) for all bodies or (N, 3, 3) one per body, given in the
body frame of the attitude (any body frame, not necessarily the principal one). With a tensor,
``m``, the attitude, the torques and every output stay in that frame (the user's):

* the equations are ``m' = m x J^-1 m + T_b(t, Q, m)``, ``Q' = Q hat(J^-1 m)``;
* frb writes ``J = R diag(I) R^T`` (:func:`principal_axes`, ``R`` a proper rotation), runs the
  route in the principal frame, ``m' = R^T m``, ``Q' = Q R``, ``q' = q r`` (``r`` the quaternion
  of ``R``, scalar first), ``T'(t, Q', m') = R^T T(t, Q' R^T, R m')`` (:meth:`Torque.in_frame
  <frb.torques.Torque.in_frame>`), and maps the results back with ``R``;
* the mapping is done once on entry and once for all the kept states on exit (one batched
  numpy operation): the compiled loops run as for principal moments, at no cost per step. A
  torque seen in a frame rotated per body, and every user torque, is called from Python once per
  stage (as a user torque always is); a built-in torque with one tensor for all bodies stays
  compiled (the constant field and the heavy top with their body point ``R^T c``; the gravity
  gradient is the same formula with the principal moments). So NYSTROM4, which takes the field
  torques only, takes them with one tensor for all bodies, not with a tensor per body.

Shapes. A (3, 3) ``inertia`` is one tensor for all bodies when ``m`` is one body (3,) or a batch
of ``N != 3`` bodies. For a batch of exactly three bodies, (3, 3) means the
principal moments of each body, one row per body; one tensor shared by three bodies is given as
(1, 3, 3) (accepted for any batch). (N, 3, 3) gives each body its tensor.

An exactly diagonal tensor ``diag(I)`` is taken as the moments ``I`` as given (no
eigen-decomposition, ``R = 1``): its results are those of ``inertia=I`` bit for bit.

Checks: a tensor must be finite, symmetric to ``SYMMETRY_TOLERANCE`` (1e-12) relative to its
largest entry, and positive definite; a tensor that is not exactly diagonal must moreover have
its smallest moment at least ``CONDITION_LIMIT`` (1e-12) times its largest (below, the
decomposition leaves the smallest moment fewer than three correct digits: a tensor singular up to
rounding, such as a rotated ``diag(0, 1, 2)``, is refused, not run with a moment of 1e-17);
ValueError names ``inertia`` (and the body of a batch).
The moments are computed by ``numpy.linalg.eigh`` on the symmetrised tensor, scaled by a power
of two: their absolute accuracy is about the rounding of the largest moment, so a tensor whose
moments span many orders of magnitude is better given by its principal moments and axes.
"""
from __future__ import annotations

from typing import Any, Callable

import numpy as np
from numpy.typing import ArrayLike, NDArray

from . import _validate
from .rotations import kinetic_energy as rotations_kinetic_energy
from .rotations import (kinetic_energy_unchecked, matrix_to_quat_unchecked, quaternion_product,
                        rotate, rotate_back)
from ._messages import per_body_torque_message
from .torques import as_torque, given_as, shown

__all__ = ["SYMMETRY_TOLERANCE", "CONDITION_LIMIT", "principal_axes", "PrincipalFrame",
           "kinetic_energy", "tensor_frame",
           "tensor_kinetic_energy", "inertia_layout", "shared_tensor", "FrameFlow"]

#: Largest ``|J - J^T|`` of an inertia tensor, relative to its largest entry ``|J|_max``.
SYMMETRY_TOLERANCE = 1e-12
#: Smallest principal moment of a tensor that is decomposed (not exactly diagonal), relative
#: to its largest: ``I_min >= 1e-12 I_max``. The moments of ``numpy.linalg.eigh`` are those of
#: a tensor within a few roundings of ``I_max`` of the one given (a backward-stable
#: decomposition; Golub and Van Loan, "Matrix Computations", 4th ed., 2013, sec. 8.1 and
#: 8.3), an absolute error of about ``3 eps I_max`` (``eps = 2^-52``), which is also the
#: rounding of a tensor written in a rotated frame: at the bound the smallest moment keeps
#: about three correct digits; below it has fewer, and near ``3 eps I_max`` not even its sign.
CONDITION_LIMIT = 1e-12


def tensor_array(value: ArrayLike, name: str = "inertia", one: bool | None = None
                 ) -> tuple[NDArray[np.float64], bool]:
    """``value`` as float64 tensors (k, 3, 3) and whether it was one tensor (3, 3): the input
    rule of :mod:`frb._validate` (TypeError), the shape, finiteness and symmetry (ValueError
    naming ``name`` and, in a batch, the body; ``one``: no body in the messages, default for
    one tensor (3, 3))."""
    J = _validate.real_array(value, name, finite=False)
    if J.ndim not in (2, 3) or J.shape[-2:] != (3, 3):
        raise ValueError(f"{name} must have shape (3, 3) or (N, 3, 3) (inertia tensors), "
                         f"got {J.shape}")
    single = J.ndim == 2
    J3 = J.reshape(-1, 3, 3)
    one = single if one is None else one
    if not np.isfinite(J3).all():
        raise ValueError(f"{name} contains non-finite values (NaN or infinity)"
                         + ("" if one else _validate.first_nonfinite(J3, 2)))
    check_symmetric(J3, name, one)
    return J3, single


def check_symmetric(J3: NDArray[np.float64], name: str, single: bool) -> None:
    """Raise ValueError when a tensor of J3 (k, 3, 3), finite, is not symmetric within
    SYMMETRY_TOLERANCE relative to its largest entry."""
    if not J3.size:
        return
    big = np.abs(J3).max(axis=(1, 2))
    gap = np.abs(J3 - np.swapaxes(J3, 1, 2)).max(axis=(1, 2))
    bad = gap > SYMMETRY_TOLERANCE * big
    if bad.any():
        b = int(np.argmax(bad))
        i, j = np.unravel_index(int(np.argmax(np.abs(J3[b] - J3[b].T))), (3, 3))
        where = "" if single else f" (body {b})"
        raise ValueError(f"{name} must be a symmetric matrix (an inertia tensor){where}: "
                         f"J[{i}, {j}] = {_validate.fmt(J3[b, i, j])} and J[{j}, {i}] = "
                         f"{_validate.fmt(J3[b, j, i])} differ by more than "
                         f"{SYMMETRY_TOLERANCE:g} of its largest entry")


def eigen(J3: NDArray[np.float64]) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """Eigenvalues (k, 3), ascending, and eigenvectors (k, 3, 3) (columns; det +1) of the
    symmetric parts of J3 (k, 3, 3), finite. Each tensor is scaled by a power of two before
    numpy.linalg.eigh (exact), so that no entry overflows or underflows."""
    if not J3.shape[0]:
        return np.empty((0, 3)), np.empty((0, 3, 3))
    exponent = np.frexp(np.abs(J3).max(axis=(1, 2)))[1]
    Js = np.ldexp(J3, -exponent[:, None, None])
    w, V = np.linalg.eigh(0.5 * (Js + np.swapaxes(Js, 1, 2)))
    # eigh's vectors are orthonormal (also for repeated eigenvalues); make the basis
    # right-handed by turning the third vector where it is not
    left = np.einsum("ki,ki->k", np.cross(V[:, :, 0], V[:, :, 1]), V[:, :, 2]) < 0
    V[left, :, 2] *= -1.0
    with np.errstate(over="ignore"):    # (a moment beyond float64: refused by the checks)
        return np.ldexp(w, exponent[:, None]), V


def check_positive(moments: NDArray[np.float64], name: str, single: bool,
                   decomposed: NDArray[np.bool_] | None = None) -> None:
    """Raise ValueError when a body's moments (k, 3) are not all strictly positive, or, for the
    tensors that were decomposed (``decomposed``, default all), when the smallest is below
    :data:`CONDITION_LIMIT` times the largest."""
    huge = ~np.isfinite(moments).all(axis=1)
    if huge.any():
        b = int(np.argmax(huge))
        where = "" if single else f" (body {b})"
        raise ValueError(f"{name} has a principal moment beyond the float64 range (an inertia "
                         f"tensor){where}: give it in smaller units")
    bad = ~(moments > 0).all(axis=1)
    if bad.any():
        b = int(np.argmax(bad))
        where = "" if single else f" (body {b})"
        raise ValueError(f"{name} must be positive definite (an inertia tensor){where}: its "
                         f"eigenvalues are {_validate.fmt(np.sort(moments[b]))}")
    if not moments.shape[0]:
        return
    ill = ~(moments.min(axis=1) >= CONDITION_LIMIT * moments.max(axis=1))
    if decomposed is not None:
        ill &= decomposed
    if ill.any():
        b = int(np.argmax(ill))
        where = "" if single else f" (body {b})"
        w = np.sort(moments[b])
        raise ValueError(f"{name} is singular up to rounding (an inertia tensor){where}: its "
                         f"eigenvalues are {_validate.fmt(w)}, the smallest {w[0] / w[2]:.2g} "
                         f"of the largest, below {CONDITION_LIMIT:g}, where the decomposition "
                         "leaves it fewer than three correct digits; give the principal moments "
                         "and axes instead (inertia=moments, with m and the attitude in the "
                         "principal frame)")


def principal_axes(J: ArrayLike) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """Principal moments and axes of inertia tensors: ``J = R diag(moments) R^T``.

    Parameters
    ----------
    J : array_like, shape (3, 3) or (N, 3, 3)
        Symmetric positive-definite inertia tensors (symmetric within 1e-12 of the largest
        entry), in any body frame.

    Returns
    -------
    moments : ndarray, shape (3,) or (N, 3)
        The principal moments, ascending.
    R : ndarray, shape (3, 3) or (N, 3, 3)
        Proper rotations (``det R = +1``) whose columns are the principal axes in the frame of
        ``J``: a principal-frame vector ``x'`` is ``R x'`` in that frame. With repeated
        moments (a symmetric top, a sphere) the axes of the repeated moment are any
        orthonormal pair of that plane.

    Raises
    ------
    TypeError
        ``J`` is not an array of real numbers.
    ValueError
        Wrong shape, non-finite entries, not symmetric, not positive definite (the message
        names ``inertia`` and, for a batch, the body).

    Examples
    --------
    A body whose principal axes are turned a quarter turn about ``z``:

    >>> import numpy as np
    >>> import frb
    >>> J = np.array([[2.0, 0.0, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, 3.0]])
    >>> moments, R = frb.principal_axes(J)
    >>> moments
    array([1., 2., 3.])
    >>> bool(np.allclose(R @ np.diag(moments) @ R.T, J)), round(float(np.linalg.det(R)), 12)
    (True, 1.0)
    """
    J3, single = tensor_array(J, "inertia")
    moments, R = eigen(J3)
    diagonal = off_diagonal_zero(J3)
    if diagonal.any():
        # diagonal tensors: their entries, ascending, and the permutation of the axes (a proper
        # rotation: a column negated where the permutation is odd), exact at any ratio of the
        # moments (where the eigenvalue solver loses the small ones beside the large)
        d = np.diagonal(J3[diagonal], axis1=1, axis2=2)
        order = np.argsort(d, axis=1, kind="stable")
        moments[diagonal] = np.take_along_axis(d, order, axis=1)
        P = np.eye(3)[:, order].transpose(1, 0, 2)
        P[:, :, 0] *= np.sign(np.linalg.det(P))[:, None]
        R[diagonal] = P
    check_positive(moments, "inertia", single, ~diagonal)
    if single:
        return moments[0], R[0]
    return moments, R


def off_diagonal_zero(J3: NDArray[np.float64]) -> NDArray[np.bool_]:
    """True for each tensor of J3 (k, 3, 3) whose off-diagonal entries are exactly zero."""
    off = J3.reshape(-1, 9)[:, [1, 2, 3, 5, 6, 7]]
    return (off == 0).all(axis=1)


class FrameFlow:
    """A torque flow of :func:`frb.splitting.integrate`, ``flow(m, Q, t) -> (m_new, Q_new)``,
    seen in the principal frame: ``(R^T m_new, Q_new R)`` of ``flow(R m', Q' R^T, t)`` (one
    body, ``R`` (3, 3)). A result that is not a pair of real arrays of shapes (3,) and (3, 3)
    is returned as it is, for splitting's checks to report."""

    def __init__(self, flow: Callable[..., Any], R: NDArray[np.float64]) -> None:
        self.flow = flow
        self.R = R
        self.__name__ = getattr(flow, "__name__", None) or repr(flow)

    def __call__(self, m: NDArray[np.float64], Q: NDArray[np.float64], t: float) -> Any:
        R = self.R
        mu = R @ m
        Qu = Q @ R.T
        mu.flags.writeable = False
        Qu.flags.writeable = False
        res = self.flow(mu, Qu, t)
        try:
            m_new, Q_new = res
            m_new = _validate.real_array(m_new, "m", finite=False)
            Q_new = _validate.real_array(Q_new, "Q", finite=False)
        except (TypeError, ValueError):
            return res
        if m_new.shape != (3,) or Q_new.shape != (3, 3):
            return res
        return R.T @ m_new, Q_new @ R


class PrincipalFrame:
    """The principal frame of inertia tensors ``J = R diag(moments) R^T``, and the maps of the
    states into it and back.

    Attributes
    ----------
    tensor : ndarray, shape (3, 3) or (n, 3, 3)
        The tensors as given, one (3, 3) for all bodies (``shared``) or one per body.
    moments : ndarray, shape (3,) or (n, 3)
        The principal moments (as given on the diagonal of an exactly diagonal tensor, else
        ascending); the ``inertia`` of the routes in the principal frame.
    R : ndarray of shape (3, 3) or (n, 3, 3), or None
        The principal axes (columns), proper rotations; None when every tensor is exactly
        diagonal (the identity: nothing is mapped).
    r : ndarray of shape (4,) or (n, 4), or None
        The quaternions of ``R`` (scalar first).
    shared : bool
        One tensor for all bodies.
    single : bool
        The route's ``m`` is one body (3,).
    """

    __slots__ = ("tensor", "moments", "R", "r", "shared", "single")

    def __init__(self, tensor: NDArray[np.float64], moments: NDArray[np.float64],
                 R: NDArray[np.float64] | None, shared: bool, single: bool) -> None:
        # (a copy: the trajectories keep it, and the caller's array may change afterwards)
        self.tensor = np.array(tensor, dtype=np.float64)
        self.moments = moments
        self.R = R
        self.r = None if R is None else matrix_to_quat_unchecked(R)
        self.shared = shared
        self.single = single

    @classmethod
    def of(cls, J: ArrayLike, shared: bool, single: bool) -> PrincipalFrame:
        """The frame of tensors J, (3, 3) or (1, 3, 3) when ``shared``, else (n, 3, 3): checked
        (ValueError naming ``inertia``), then decomposed; an exactly diagonal tensor keeps its
        moments as given with the identity."""
        one = single or shared
        J3, _ = tensor_array(J, "inertia", one)
        diagonal = off_diagonal_zero(J3)
        moments = np.ascontiguousarray(np.diagonal(J3, axis1=1, axis2=2))
        R: NDArray[np.float64] | None = None
        if not diagonal.all():
            w, V = eigen(J3)
            moments = np.where(diagonal[:, None], moments, w)
            V[diagonal] = np.eye(3)
            R = V
        check_positive(moments, "inertia", one, ~diagonal)
        if shared:
            tensor = J3[0]
            moments = moments[0]
            R = None if R is None else R[0]
        else:
            tensor = J3
        if R is not None:
            R.setflags(write=False)
        return cls(tensor, moments, R, shared, single)

    # --- the states, into the principal frame and back (any leading axes) ---

    def momentum_in(self, m: NDArray[np.float64], name: str = "m") -> NDArray[np.float64]:
        """``R^T m``; ValueError naming the momentum ``name`` when its principal-frame
        components are beyond the float64 range."""
        return m if self.R is None else rotate_back(
            self.R, m, f"{name}: the momentum along the principal axes of inertia")

    def momentum_out(self, m: NDArray[np.float64], name: str = "m") -> NDArray[np.float64]:
        """``R m'``, as :meth:`momentum_in`."""
        return m if self.R is None else rotate(
            self.R, m, f"{name}: the momentum along the axes of the inertia tensor's frame")

    def matrix_in(self, Q: NDArray[np.float64]) -> NDArray[np.float64]:
        """``Q R``."""
        return Q if self.R is None else Q @ self.R

    def matrix_out(self, Q: NDArray[np.float64]) -> NDArray[np.float64]:
        """``Q' R^T``."""
        return Q if self.R is None else Q @ np.swapaxes(self.R, -1, -2)

    def quat_in(self, q: NDArray[np.float64]) -> NDArray[np.float64]:
        """``q r``."""
        return q if self.r is None else quaternion_product(q, self.r)

    def quat_out(self, q: NDArray[np.float64]) -> NDArray[np.float64]:
        """``q' r*``."""
        if self.r is None:
            return q
        return quaternion_product(q, self.r * np.array([1.0, -1.0, -1.0, -1.0]))

    def kinetic_energy(self, m: NDArray[np.float64]) -> NDArray[np.float64]:
        """``m . J^-1 m / 2`` of user-frame momenta (..., 3) (bodies on the second-last axis),
        computed in the principal frame."""
        m = np.asarray(m, dtype=np.float64)
        if self.R is None:
            return kinetic_energy_unchecked(m, self.moments)
        # each body's momentum scaled by a power of two into the principal frame (exact), its
        # energy scaled back: no overflow of the rotated components
        with np.errstate(over="ignore", invalid="ignore"):
            e = _validate.binary_exponents(np.max(np.abs(m), axis=-1, keepdims=True))
            mp = rotate_back(self.R, np.ldexp(m, -e))
            return np.ldexp(kinetic_energy_unchecked(mp, self.moments), 2 * e[..., 0])

    def torque_in(self, torque: Any) -> Any:
        """The torque of a route in the principal frame (:meth:`frb.torques.Torque.in_frame`);
        None, and what is not a torque (left to the route's checks), unchanged."""
        if torque is None or self.R is None:
            return torque
        try:
            tq = as_torque(torque)
        except TypeError:
            return torque
        if tq is None:
            return None
        # (turning per-body parameters by per-body frames needs their counts to agree)
        for term in getattr(tq, "terms", (tq,)) if self.R.ndim == 3 else ():
            form = term.compiled
            if form is not None and form.body is not None and \
                    form.body.shape[0] != self.R.shape[0]:
                raise ValueError(per_body_torque_message(shown(tq), form.body.shape[0],
                                                         self.R.shape[0]))
        return given_as(tq.in_frame(self.R), tq)

    # --- the inputs of the routes, as given ---

    def fits(self, a: NDArray[np.float64], item: tuple[int, ...]) -> bool:
        """True when a has the shape of the route's bodies with items of shape ``item``."""
        if self.single:
            return a.shape == item
        return a.shape[1:] == item and a.ndim == 1 + len(item) and (
            self.shared or a.shape[0] == self.tensor.shape[0])

    def momentum_argument(self, m: ArrayLike, name: str) -> Any:
        """The momentum as given, into the principal frame when it has a body's shape (else as
        given: the route reports it)."""
        if self.R is None:
            return m
        a = _validate.real_array(m, name, finite=False)
        return self.momentum_in(a, name) if self.fits(a, (3,)) else a

    def attitude_argument(self, attitude: ArrayLike, name: str) -> Any:
        """The attitude as given (quaternions or matrices) into the principal frame."""
        if self.R is None:
            return attitude
        a = _validate.real_array(attitude, name, finite=False)
        if self.fits(a, (4,)):
            return self.quat_in(a)
        if self.fits(a, (3, 3)):
            return self.matrix_in(a)
        return a

    def attitude_out(self, a: NDArray[np.float64]) -> NDArray[np.float64]:
        """Attitudes (quaternions (..., 4) or matrices (..., 3, 3)) back to the user's frame."""
        return self.quat_out(a) if a.shape[-1] == 4 else self.matrix_out(a)

    def user_tensor(self, n: int) -> NDArray[np.float64]:
        """The tensors for a trajectory of n bodies: (3, 3) for one body, else (n, 3, 3)."""
        if self.single:
            return self.tensor if self.shared else self.tensor[0]
        if self.shared:
            return np.broadcast_to(self.tensor, (n, 3, 3))
        return self.tensor

    # --- the routes ---

    def step(self, route: Callable[..., tuple[NDArray[np.float64], NDArray[np.float64]]],
             m: ArrayLike, attitude: ArrayLike, h: ArrayLike, *args: Any,
             names: tuple[str, str] = ("m", "attitude"), **kwargs: Any
             ) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
        """``route(m', attitude', h, moments, *args, **kwargs)`` (a one-step or final-state
        route: frb_step, quat_step, dmv_step, dmv_integrate) in the principal frame, its state
        mapped back."""
        mp = self.momentum_argument(m, names[0])
        ap = self.attitude_argument(attitude, names[1])
        m_out, a_out = route(mp, ap, h, self.moments, *args, **kwargs)
        return self.momentum_out(m_out), self.attitude_out(a_out)

    def integrate(self, route: Callable[..., Any], m0: ArrayLike, attitude0: ArrayLike,
                  h: float, nsteps: int, *, torque: Any = None, **kwargs: Any) -> Any:
        """``route(m0', attitude0', moments, h, nsteps, torque=torque', **kwargs)``
        (:func:`frb.integrate`) in the principal frame; its Trajectory with every kept state
        mapped back at once, the tensors as its ``inertia`` and the torque as given. Its
        sensitivities (the state's and h's; the moments' and the torque's are those of the
        principal frame, refused for tensors that are not diagonal) mapped back too:
        D S D^T, D = diag(R, R)."""
        sens = kwargs.get("sensitivities")
        if self.R is not None and sens is not None and sens is not True and sens is not False:
            try:
                names = (sens,) if isinstance(sens, str) else tuple(sens)
            except TypeError:
                names = ()          # (refused by the route, which names it)
            if "inertia" in names or "torque" in names:
                raise ValueError("sensitivities: the derivatives with respect to the inertia "
                                 "and the torque's parameters are computed for principal "
                                 "moments (or diagonal tensors), not for inertia tensors")
        mp = self.momentum_argument(m0, "m0")
        ap = self.attitude_argument(attitude0, "attitude0")
        wheels = kwargs.get("wheels")
        if self.R is not None:
            kwargs = {**kwargs, **self.wheels_in(wheels, kwargs.get("wheel_law"))}
        tr = route(mp, ap, self.moments, h, nsteps, torque=self.torque_in(torque), **kwargs)
        n = 1 if tr.m.ndim == 2 else tr.m.shape[1]
        inertia = self.user_tensor(n)
        if self.R is None:
            tr.inertia = inertia
            return tr
        m = self.momentum_out(tr.m)
        sensitivities = tr.sensitivities
        if sensitivities is not None:
            D = np.zeros(np.shape(self.R)[:-2] + (6, 6))
            D[..., :3, :3] = self.R
            D[..., 3:, 3:] = self.R
            state = sensitivities.state
            if state is not None:
                state = D @ state @ np.swapaxes(D, -1, -2)
            dh = sensitivities.h
            if dh is not None:
                dh = (D @ dh[..., None])[..., 0]
            sensitivities = sensitivities._replace(state=state, h=dh)
        kept = dict(wheels=wheels, wheel_momentum=tr.wheel_momentum, sensitivities=sensitivities)
        if tr.form == "matrix":
            return type(tr)(tr.t, m, None, tr.form, tr.method, inertia, torque,
                            Q=self.matrix_out(tr.Q), **kept)
        return type(tr)(tr.t, m, self.quat_out(tr.q), tr.form, tr.method, inertia, torque, **kept)

    def wheels_in(self, wheels: Any, law: Any) -> dict[str, Any]:
        """The reaction wheels and their law of a route in the principal frame (the axes
        ``R^T a_i``, the law's reference and gains turned: :meth:`frb.Wheels.in_frame`,
        :meth:`frb.wheel_laws.WheelLaw.in_frame`); what is not wheels or a law is left to the
        route's checks."""
        from .wheel_laws import WheelLaw, as_wheel_law
        from .wheels import Wheels
        out: dict[str, Any] = {}
        if isinstance(wheels, Wheels):
            R = self.R
            assert R is not None
            if R.ndim == 3 and wheels.bodies_count is not None and \
                    wheels.bodies_count != R.shape[0]:
                raise ValueError(f"wheels: given per body for {wheels.bodies_count} bodies, the "
                                 f"run has {R.shape[0]}")
            out["wheels"] = wheels.in_frame(R)
        try:
            law_in = as_wheel_law(law)
        except TypeError:
            return out
        if isinstance(law_in, WheelLaw) and self.R is not None:
            count = getattr(law_in, "bodies_count", None)
            if self.R.ndim == 3 and count is not None and count != self.R.shape[0]:
                raise ValueError(f"wheel_law: given per body for {count} bodies, the run has "
                                 f"{self.R.shape[0]}")
            out["wheel_law"] = law_in.in_frame(self.R)
        return out

    def splitting(self, route: Callable[..., Any], m0: ArrayLike, Q0: ArrayLike, h: float,
                  nsteps: int, torque: Any, engine_torque: bool, **kwargs: Any) -> Any:
        """``route(m0', Q0', moments, h, nsteps, torque', **kwargs)``
        (:func:`frb.splitting.integrate`, one body) in the principal frame: a torque of the
        engine (``engine_torque``) by :meth:`torque_in`, a torque flow by :class:`FrameFlow`;
        its trajectory mapped back."""
        mp = self.momentum_argument(m0, "m0")
        Qp = self.attitude_argument(Q0, "Q0")
        given = torque
        if self.R is not None and torque is not None:
            if engine_torque:
                torque = self.torque_in(torque)
            elif callable(torque):
                torque = FrameFlow(torque, self.R)
        wheels = kwargs.get("wheels")
        if self.R is not None:
            kwargs = {**kwargs, **self.wheels_in(wheels, kwargs.get("wheel_law"))}
        tr = route(mp, Qp, self.moments, h, nsteps, torque, **kwargs)
        inertia = self.user_tensor(1)
        if self.R is None:
            tr.inertia = inertia
            return tr
        return type(tr)(tr.t, self.momentum_out(tr.m), None, tr.form, tr.method, inertia, given,
                        Q=self.matrix_out(tr.Q), wheels=wheels, wheel_momentum=tr.wheel_momentum)


def inertia_layout(inertia: Any, n: int, single: bool = False) -> str:
    """What ``inertia`` is for a route of ``n`` bodies (``single``: ``m`` of shape (3,)), from
    its shape alone: ``"shared tensor"`` ((3, 3) for one body or ``n != 3``; (1, 3, 3)),
    ``"tensors"`` ((n, 3, 3)), else ``"moments"`` (the route checks them). See the module
    documentation for the rule of (3, 3) with three bodies."""
    try:
        shape = np.shape(inertia)
    except Exception:           # noqa: BLE001 - not an array: the route reports it
        return "moments"
    if shape == (3, 3):
        return "shared tensor" if single or n != 3 else "moments"
    if len(shape) == 3 and shape[1:] == (3, 3):
        if shape[0] == 1:
            return "shared tensor"
        if not single and shape[0] == n:
            return "tensors"
    return "moments"


def shared_tensor(inertia: ArrayLike) -> NDArray[np.float64]:
    """One tensor for all bodies, (3, 3) or (1, 3, 3), as a float64 array of shape (1, 3, 3)
    (unambiguous for a batch of any size); the input rule of :mod:`frb._validate`."""
    J = _validate.real_array(inertia, "inertia")
    if J.shape not in ((3, 3), (1, 3, 3)):
        raise ValueError(f"inertia must have shape (3, 3) or (1, 3, 3), got {J.shape}")
    return J.reshape(1, 3, 3)


#: The types of the rows of a nested list that may hold tensors (tensor_frame's quick exit).
NESTED_TYPES = frozenset((list, tuple, np.ndarray))


def tensor_frame(inertia: Any, m: Any) -> PrincipalFrame | None:
    """The principal frame of ``inertia`` when it holds inertia tensors for the bodies of
    ``m`` (the route's momentum as given), else None (principal moments, or arguments the route
    reports). Raises ValueError naming ``inertia`` for tensors that are not symmetric positive
    definite, and for a tensor batch whose size is neither 1 nor the number of bodies.

    Cheap for moments: a float64 array of fewer than two dimensions, or a flat list, returns
    at once."""
    kind = type(inertia)
    if kind is np.ndarray:
        if inertia.ndim < 2:
            return None
    elif kind is list or kind is tuple:
        first = type(inertia[0]) if inertia else None
        if first is float or first is int or first not in NESTED_TYPES:
            return None
    try:
        shape = np.shape(inertia)
        m_shape = np.shape(m)
    except Exception:           # noqa: BLE001 - not arrays: the route reports it
        return None
    if m_shape == (3,):
        single, n = True, 1
    elif len(m_shape) == 2 and m_shape[1] == 3:
        single, n = False, m_shape[0]
    else:
        return None             # the route reports m
    layout = inertia_layout(inertia, n, single)
    if layout == "moments":
        if len(shape) == 3:
            want = "(3, 3) or (1, 3, 3)" if single else f"(3, 3), (1, 3, 3) or ({n}, 3, 3)"
            raise ValueError(f"inertia tensors must have shape {want}, got {shape}")
        return None
    try:
        return PrincipalFrame.of(inertia, layout == "shared tensor", single)
    except ValueError as exc:
        if shape == (3, 3) and not single:
            # (moments of 3 bodies given for a batch of another size read as one tensor)
            raise ValueError(f"{exc} (an inertia of shape (3, 3) for a batch of {n} bodies is one "
                             f"inertia tensor shared by all; principal moments one a body need "
                             f"shape ({n}, 3))") from None
        raise


def kinetic_energy(m: ArrayLike, inertia: ArrayLike) -> NDArray[np.float64]:
    """Kinetic energy ``T = m^T J^-1 m / 2`` of the body momentum ``m`` (kg m^2 / s, body frame).

    ``inertia`` as everywhere in frb: principal moments ``(..., 3)`` broadcasting with ``m``
    (``T = sum_i m_i^2 / (2 I_i)``), or inertia tensors (kg m^2, symmetric positive definite):
    ``(3, 3)`` one tensor for ``m`` of one body (3,) or of ``N != 3`` bodies (N, 3) (for exactly
    three bodies (3, 3) holds their principal moments, one row each), ``(1, 3, 3)`` one tensor
    for any batch, ``(N, 3, 3)`` one a body. The result has the bodies' shape (a numpy scalar
    for one body). ValueError for moments that are not strictly positive and for tensors that
    are not symmetric positive definite.

    Examples
    --------
    >>> import numpy as np
    >>> import frb
    >>> print(frb.kinetic_energy([0.3, 0.5, 0.8], [1.0, 2.0, 3.0]))
    0.21416666666666667
    >>> frb.kinetic_energy(np.ones((2, 3)), [1.0, 2.0, 3.0])
    array([0.916667, 0.916667])
    >>> J = [[1.5, 0.5, 0.0], [0.5, 1.5, 0.0], [0.0, 0.0, 3.0]]   # moments 1, 2, 3
    >>> print(round(float(frb.kinetic_energy([1.0, 1.0, 0.0], J)), 15))
    0.5
    """
    # (the input rule first: the shapes below of a ragged or unreadable m would be numpy's error)
    m = _validate.real_array(m, "m", finite=False)
    frame = tensor_frame(inertia, m)
    if frame is None and np.ndim(m) > 2 and np.shape(inertia) == (1, 3, 3):
        # one tensor for momenta of any batch shape (..., 3)
        frame = PrincipalFrame.of(inertia, True, False)
    if frame is None:
        try:
            return rotations_kinetic_energy(m, inertia)
        except ValueError as exc:
            if np.shape(inertia) == (3, 3) and np.shape(m) == (3, 3):
                raise ValueError(f"{exc} (for a batch of exactly three bodies an inertia of "
                                 "shape (3, 3) holds their principal moments, one row each; "
                                 "one tensor for the three is given as (1, 3, 3))") from None
            raise
    return frame.kinetic_energy(_validate.real_array(m, "m"))


def tensor_kinetic_energy(m: ArrayLike, J: ArrayLike) -> NDArray[np.float64]:
    """Kinetic energy ``m . J^-1 m / 2`` of momenta ``m`` (K, 3) with one tensor J (3, 3), or
    (K, n, 3) with tensors (n, 3, 3): through the principal frame (an exactly diagonal tensor
    gives ``sum m_j^2 / (2 I_j)`` bit for bit)."""
    J = _validate.real_array(J, "J")
    if J.shape != (3, 3) and not (J.ndim == 3 and J.shape[1:] == (3, 3)):
        raise ValueError(f"J must have shape (3, 3) or (n, 3, 3), got {J.shape}")
    mm = _validate.real_array(m, "m")
    if mm.ndim < 1 or mm.shape[-1] != 3 or (J.ndim == 3 and (mm.ndim < 2 or
                                                              mm.shape[-2] != J.shape[0])):
        want = "(..., 3)" if J.ndim == 2 else f"(..., {J.shape[0]}, 3)"
        raise ValueError(f"m must have shape {want} for J of shape {J.shape}, got {mm.shape}")
    frame = PrincipalFrame.of(J, J.ndim == 2, J.ndim == 2)
    return frame.kinetic_energy(mm)
