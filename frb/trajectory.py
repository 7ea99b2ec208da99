"""The result of every trajectory of frb: :class:`Trajectory`, the kept states of a run.

A trajectory holds the kept times ``t`` (numpy) and the states of every body at those times:
the body angular momenta ``m``, the attitudes (``q`` unit quaternions, scalar first, or ``Q``
rotation matrices; the other form is computed on demand) and, for a spacecraft with reaction
wheels (:class:`frb.Wheels`), the wheel momenta ``wheel_momentum``. The arrays are numpy arrays, or dask
arrays for a run of :mod:`frb.dask` (``lazy`` is then true and :meth:`Trajectory.compute` gives
the trajectory with numpy arrays).
"""
from __future__ import annotations

from typing import Any, Callable, NamedTuple, Optional, Union

import numpy as np
from numpy.typing import ArrayLike, NDArray

from ._kept import beyond_memory, memory_size
from .inertia import PrincipalFrame, tensor_kinetic_energy
from .rotations import kinetic_energy_unchecked, matrix_to_quat_unchecked, \
    quat_to_matrix_unchecked
from .torques import Torque
from .wheels import Wheels

__all__ = ["Trajectory", "TorqueLike", "Sensitivities"]

#: A torque of :func:`frb.integrate`: a :class:`frb.torques.Torque` (built in, or made by
#: :func:`frb.torques.as_torque`), or a vectorised callable ``torque(t, Q) -> T_b`` (``Q`` of
#: shape (N, 3, 3), ``T_b`` of shape (N, 3)), wrapped into one.
TorqueLike = Union[Torque, Callable[..., ArrayLike]]



def states_kinetic_energy(m: NDArray[np.float64], inertia: NDArray[np.float64]
                          ) -> NDArray[np.float64]:
    """``sum m_j^2 / (2 I_j)`` of states ``m`` (..., 3) with principal moments, or
    ``dot(m, J^-1 m) / 2`` with inertia tensors (an ``inertia`` of as many axes as ``m``)."""
    if inertia.ndim == m.ndim:    # inertia tensors (3, 3) or (N, 3, 3)
        return tensor_kinetic_energy(m, inertia)
    return kinetic_energy_unchecked(m, inertia)

class Sensitivities(NamedTuple):
    """The derivatives of the kept states of a run (:func:`frb.integrate` with
    ``sensitivities=``) with respect to what was asked, None for the parts not asked. Rows in
    the order ``(dm, dtheta)``, ``dtheta`` the attitude perturbation in the body frame
    (``Q~ = Q exp(hat(dtheta))``, ``q~ = q (1, dtheta/2)`` to first order); a leading axis K
    (the kept states) and, for a batch, N (the bodies).

    Attributes
    ----------
    state : (K, [N,] 6, 6)
        ``Phi``, the derivative of the state with respect to the initial state ``(dm0, dtheta0)``.
    h : (K, [N,] 6)
        The derivative with respect to the step ``h`` (the kept states at the same step numbers).
    inertia : (K, [N,] 6, 3)
        The derivatives with respect to the three principal moments.
    torque : (K, [N,] 6, terms, TORQUE_TERM_REALS)
        The derivatives with respect to the parameters of each term of a built-in torque, in
        the order of its compiled form (``Torque.compiled``): field ``u0, c``; gravity gradient
        ``n``; damping ``c``; rotor ``h``; attitude control ``kp, kd, q_ref``.
    """

    state: Optional[NDArray[np.float64]] = None
    h: Optional[NDArray[np.float64]] = None
    inertia: Optional[NDArray[np.float64]] = None
    torque: Optional[NDArray[np.float64]] = None


def _is_lazy(a: Any) -> bool:
    """True for a dask array (without importing dask)."""
    return type(a).__module__.startswith("dask.")


class Trajectory:
    """The kept states of a run: the result of :func:`frb.integrate`,
    :func:`frb.splitting.integrate` and :func:`frb.dask.integrate`.

    Attributes
    ----------
    t : numpy.ndarray, shape (K,)
        Times of the kept states.
    m : numpy.ndarray (a dask array when ``lazy``), shape (K, 3) or (K, N, 3)
        Body angular momentum.
    q : array, shape (K, 4) or (K, N, 4)
        Attitude as unit quaternions, scalar first (converted on demand if a matrix was given).
    Q : array, shape (K, 3, 3) or (K, N, 3, 3)
        Attitude as rotation matrices (converted on demand if a quaternion was given).
    form : {"quaternion", "matrix"}
        The form the initial attitude was given in; ``attitude`` returns that form.
    method : str
        The method's name.
    inertia : array, shape (3,), (N, 3), (3, 3) or (N, 3, 3)
        The principal moments, or the inertia tensors (in the frame of ``m`` and the attitude).
    torque : the torque of the run (None for a free body)
    wheels : frb.Wheels or None
        The reaction wheels of the run (in the frame of ``m``).
    wheel_momentum : array, shape (K, nw) or (K, N, nw), or None
        The axial momenta of the wheels (None without wheels).
    sensitivity : array, shape (K, 6, 6) or (K, N, 6, 6), or None
        With ``sensitivities=`` (:func:`frb.integrate`): ``Phi``, the derivative of each kept
        state ``(m, theta)`` with respect to the initial state, rows and columns in the order
        ``(dm, dtheta)`` (``sensitivities.state``).
    sensitivities : Sensitivities or None
        All the derivatives asked for (the state, ``h``, the moments, the torque's parameters).
    lazy : bool
        True when the arrays are dask arrays (:mod:`frb.dask`): nothing is computed until
        :meth:`compute` (or dask's own ``compute``) is called.
    """

    t: NDArray[np.float64]
    m: NDArray[np.float64]
    form: str
    method: str
    inertia: NDArray[np.float64]
    #: the torque of the run as given: a torque, a torque flow of frb.splitting.integrate, None
    torque: Any
    wheels: Wheels | None
    wheel_momentum: Any

    def __init__(self, t: NDArray[np.float64], m: Any, q: Any, form: str, method: str,
                 inertia: Any, torque: Any, Q: Any = None, *, wheels: Wheels | None = None,
                 wheel_momentum: Any = None, sensitivities: Optional[Sensitivities] = None) -> None:
        self.t = t
        self.m = m
        self._q = q
        self._Q = Q
        self.form = form
        self.method = method
        self.inertia = inertia
        self.torque = torque
        self.wheels = wheels
        self.wheel_momentum = wheel_momentum
        self.sensitivities = sensitivities

    @property
    def sensitivity(self) -> Optional[NDArray[np.float64]]:
        return None if self.sensitivities is None else self.sensitivities.state

    @property
    def lazy(self) -> bool:
        return _is_lazy(self.m)

    def compute(self, **kwargs: Any) -> Trajectory:
        """This trajectory with numpy arrays: itself when it is not lazy, else the arrays
        computed together (keyword arguments go to ``dask.compute``), the same values bit for
        bit as :func:`frb.integrate` of the whole batch in this process."""
        if not self.lazy:
            return self
        import dask
        att = self._q if self._q is not None else self._Q
        m, att, inertia, h, sens = dask.compute(self.m, att, self.inertia, self.wheel_momentum,
                                                self.sensitivities, **kwargs)
        wheels = dict(wheels=self.wheels, wheel_momentum=h,
                      sensitivities=None if sens is None else Sensitivities(*sens))
        if self._q is not None:
            return Trajectory(self.t, m, att, self.form, self.method, inertia, self.torque,
                              **wheels)
        return Trajectory(self.t, m, None, self.form, self.method, inertia, self.torque, att,
                          **wheels)

    @property
    def q(self) -> NDArray[np.float64]:
        if self._q is None:
            self._q = _map(matrix_to_quat_unchecked, self._Q, (4,))
        return self._q

    @property
    def Q(self) -> NDArray[np.float64]:
        if self._Q is None:
            if not _is_lazy(self._q):
                need = 72.0 * (self._q.size // 4)
                free = beyond_memory(need)
                if free is not None:
                    raise ValueError(f"Trajectory.Q: the rotation matrices of the {self._q.size // 4} "
                                     f"kept attitudes would take {memory_size(need)}, more than "
                                     f"the memory available ({memory_size(free)}); use q (the "
                                     "quaternions), or frb.quat_to_matrix on part of it")
            self._Q = _map(quat_to_matrix_unchecked, self._q, (3, 3))
        return self._Q

    def _per_matrices(self, f: Callable[..., NDArray[np.float64]], *with_states: Any
                      ) -> NDArray[np.float64]:
        """``f(Q, *with_states)`` of the kept attitudes (f maps the leading axes of its arguments,
        ``Q`` of shape (..., 3, 3), to its result's), from the quaternions in blocks of kept
        states (the arrays ``with_states``, of the same leading axis, sliced alike) when the
        matrices are not kept: those of all states at once may not fit in memory."""
        if self._Q is not None or self.t.shape[0] <= 1:
            return f(self.Q, *with_states)
        q = self._q
        block = max(1, (1 << 20) // max(1, q[0].size // 4))
        return np.concatenate([f(quat_to_matrix_unchecked(q[k:k + block]),
                                 *(a[k:k + block] for a in with_states))
                               for k in range(0, q.shape[0], block)])

    @property
    def attitude(self) -> NDArray[np.float64]:
        return self.Q if self.form == "matrix" else self.q

    @property
    def kinetic_energy(self) -> NDArray[np.float64]:
        """``sum m_j^2 / (2 I_j)`` at the kept states (``dot(m, J^-1 m) / 2`` for tensors)."""
        if self.lazy:
            return self.compute().kinetic_energy
        return states_kinetic_energy(self.m, self.inertia)

    @property
    def potential_energy(self) -> NDArray[np.float64]:
        """The torque's potential at the kept states (zero for a free body); raises
        ValueError, saying so, for a torque without a potential (gravity gradient, damping,
        attitude control, a user torque)."""
        if self.torque is None:
            return np.zeros(self.t.shape + tuple(self.m.shape[1:-1]))
        # a Torque says whether it has one; a plain callable may bring a potential(Q) method
        tq = self.torque
        if isinstance(tq, Torque) and not tq.has_potential or \
                not callable(getattr(tq, "potential", None)):
            raise ValueError(f"the torque {self.torque!r} has no potential energy, so the "
                             "trajectory has no total energy (kinetic plus potential): "
                             "kinetic_energy gives the kinetic energy")
        tr = self.compute()
        if tr.m.ndim == 2 and isinstance(tq, Torque) and tq.bodies_count == 1:
            # one body whose torque gives its parameters per body, for that one body
            return tr._per_matrices(lambda Q: tq.potential(Q[:, None])[:, 0])
        return tr._per_matrices(tq.potential)

    @property
    def energy(self) -> NDArray[np.float64]:
        """Total energy, kinetic plus the torque's potential (the kinetic energy of a free
        body), plus the wheels' energy with reaction wheels (:attr:`wheel_energy`); ValueError,
        saying so, for a torque without a potential or wheels without axial inertias
        (:attr:`kinetic_energy` is always there)."""
        energy = self.kinetic_energy + self.potential_energy
        if self.wheels is not None:
            energy = energy + self.wheel_energy
        return energy

    @property
    def spatial_momentum(self) -> NDArray[np.float64]:
        """``Q m`` at the kept states; with rotors of internal momentum ``h``
        (:func:`frb.torques.rotor`) and reaction wheels, ``Q (m + h + A h_w)``: the total, which
        is conserved without external torques (:attr:`total_momentum`)."""
        if self.lazy:
            return self.compute().spatial_momentum
        h = getattr(self.torque, "internal_momentum", None)
        inner = self.m if h is None else self.m + h
        if self.wheels is not None and self.wheel_momentum is not None:
            if self.m.ndim == 2 and self.wheels.bodies_count == 1:
                # one body whose wheels are given per body, for that one body
                inner = inner + self.wheels.momentum(self.wheel_momentum[:, None])[:, 0]
            else:
                inner = inner + self.wheels.momentum(self.wheel_momentum)
        return self._per_matrices(lambda Q, v: np.einsum("...ij,...j->...i", Q, v),
                                  np.broadcast_to(inner, self.m.shape))

    @property
    def total_momentum(self) -> NDArray[np.float64]:
        """The spatial total momentum ``Q (m + A h)`` of body and wheels (and rotors) at the kept
        states, (K, 3) or (K, N, 3): conserved without external torques."""
        return self.spatial_momentum

    def _wheel_inertia(self, what: str) -> NDArray[np.float64]:
        if self.wheels is None or self.wheel_momentum is None:
            raise ValueError(f"the trajectory has no reaction wheels, so no {what}")
        if self.wheels.inertia is None:
            raise ValueError(f"the {what} needs the wheels' axial inertias: give "
                             "frb.Wheels(axes, h0, inertia=...)")
        return self.wheels.inertia

    @property
    def wheel_energy(self) -> NDArray[np.float64]:
        """The kinetic energy of the wheels' spin ``sum h_i^2 / (2 J_i)`` (the part of the
        wheels' energy that the body's ``m^T I^-1 m / 2`` leaves out, ``I`` the inertia without
        their axial inertias ``J_i``), (K,) or (K, N). Needs ``Wheels(..., inertia=J)``."""
        J = self._wheel_inertia("wheel energy")
        if self.lazy:
            return self.compute().wheel_energy
        return 0.5 * np.sum(self.wheel_momentum**2 / J, axis=-1)

    @property
    def wheel_speed(self) -> NDArray[np.float64]:
        """The wheels' spin rates relative to the body ``h_i / J_i - a_i^T w`` (rad/s), (K, nw)
        or (K, N, nw). Needs ``Wheels(..., inertia=J)``."""
        J = self._wheel_inertia("wheel speed")
        if self.lazy:
            return self.compute().wheel_speed
        w = self.body_rate
        assert self.wheels is not None
        return self.wheel_momentum / J - np.einsum("...ij,...j->...i", self.wheels.axes, w)

    @property
    def body_rate(self) -> NDArray[np.float64]:
        """The body angular velocity ``w = I^-1 m`` (body frame), (K, 3) or (K, N, 3)."""
        if self.lazy:
            return self.compute().body_rate
        with np.errstate(over="ignore"):
            if self.inertia.ndim == self.m.ndim:    # inertia tensors (3, 3) or (N, 3, 3)
                J = np.asarray(self.inertia, dtype=np.float64)
                frame = PrincipalFrame.of(J, J.ndim == 2, J.ndim == 2)
                w = frame.momentum_out(frame.momentum_in(self.m) / frame.moments)
            else:
                w = self.m / self.inertia
        if not np.isfinite(w).all() and np.isfinite(self.m).all():
            raise ValueError("body_rate: the angular velocity I^-1 m is beyond the float64 range "
                             "for these momenta and moments of inertia")
        return w

    def __repr__(self) -> str:
        n = "1 body" if self.m.ndim == 2 else f"{self.m.shape[1]} bodies"
        lazy = ", lazy (dask)" if self.lazy else ""
        wheels = f", {self.wheels.count} wheels" if self.wheels is not None else ""
        return (f"<Trajectory {self.method}: {n}{wheels}, {len(self.t)} states, "
                f"t = {self.t[0]:g} .. {self.t[-1]:g}, attitude as {self.form}{lazy}>")


def _map(convert: Callable[[Any], Any], a: Any, item: tuple[int, ...]) -> Any:
    """``convert`` (a conversion of the attitudes' last axes) of an array, blockwise for a
    dask array."""
    if not _is_lazy(a):
        return convert(a)
    old = a.shape[a.ndim - (2 if a.shape[-2:] == (3, 3) else 1):]
    lead = a.ndim - len(old)
    if len(item) > len(old):
        return a.map_blocks(convert, new_axis=a.ndim, chunks=a.chunks[:lead] + tuple((k,) for k in item),
                            dtype=np.float64)
    return a.map_blocks(convert, drop_axis=a.ndim - 1, chunks=a.chunks[:lead] + tuple((k,) for k in item),
                        dtype=np.float64)
