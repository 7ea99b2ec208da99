"""The result of every trajectory of frb: :class:`Trajectory`, the kept states of a run.

A trajectory holds the kept times ``t`` (numpy) and the states of every body at those times:
the body angular momenta ``m`` and the attitudes (``q`` unit quaternions, scalar first, or ``Q``
rotation matrices; the other form is computed on demand). The arrays are numpy arrays, or dask
arrays for a run of :mod:`frb.dask` (``lazy`` is then true and :meth:`Trajectory.compute` gives
the trajectory with numpy arrays).
"""
from __future__ import annotations

from typing import Any, Callable, Union

import numpy as np
from numpy.typing import ArrayLike, NDArray

from .inertia import tensor_kinetic_energy
from .rotations import kinetic_energy_unchecked, matrix_to_quat_unchecked, \
    quat_to_matrix_unchecked
from .torques import Torque

__all__ = ["Trajectory", "TorqueLike"]

#: A torque of :func:`frb.integrate`: a :class:`frb.torques.Torque` (built in, or made by
#: :func:`frb.torques.as_torque`), or a vectorised callable ``torque(t, Q) -> T_b`` (``Q`` of
#: shape (N, 3, 3), ``T_b`` of shape (N, 3)), wrapped into one.
TorqueLike = Union[Torque, Callable[..., ArrayLike]]


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

    def __init__(self, t: NDArray[np.float64], m: Any, q: Any, form: str, method: str,
                 inertia: Any, torque: Any, Q: Any = None) -> None:
        self.t = t
        self.m = m
        self._q = q
        self._Q = Q
        self.form = form
        self.method = method
        self.inertia = inertia
        self.torque = torque

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
        m, att, inertia = dask.compute(self.m, att, self.inertia, **kwargs)
        if self._q is not None:
            return Trajectory(self.t, m, att, self.form, self.method, inertia, self.torque)
        return Trajectory(self.t, m, None, self.form, self.method, inertia, self.torque, att)

    @property
    def q(self) -> NDArray[np.float64]:
        if self._q is None:
            self._q = _map(matrix_to_quat_unchecked, self._Q, (4,))
        return self._q

    @property
    def Q(self) -> NDArray[np.float64]:
        if self._Q is None:
            self._Q = _map(quat_to_matrix_unchecked, self._q, (3, 3))
        return self._Q

    @property
    def attitude(self) -> NDArray[np.float64]:
        return self.Q if self.form == "matrix" else self.q

    @property
    def kinetic_energy(self) -> NDArray[np.float64]:
        """``sum m_j^2 / (2 I_j)`` at the kept states (``dot(m, J^-1 m) / 2`` for tensors)."""
        if self.lazy:
            return self.compute().kinetic_energy
        if self.inertia.ndim == self.m.ndim:    # inertia tensors (3, 3) or (N, 3, 3)
            return tensor_kinetic_energy(self.m, self.inertia)
        return kinetic_energy_unchecked(self.m, self.inertia)

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
        return tq.potential(self.compute().Q)

    @property
    def energy(self) -> NDArray[np.float64]:
        """Total energy, kinetic plus the torque's potential (the kinetic energy of a free
        body); ValueError, saying so, for a torque without a potential
        (:attr:`kinetic_energy` is always there)."""
        return self.kinetic_energy + self.potential_energy

    @property
    def spatial_momentum(self) -> NDArray[np.float64]:
        """``Q m`` at the kept states; ``Q (m + h)`` with rotors of internal momentum ``h``
        (:func:`frb.torques.rotor`), the conserved total."""
        if self.lazy:
            return self.compute().spatial_momentum
        h = getattr(self.torque, "internal_momentum", None)
        return np.einsum("...ij,...j->...i", self.Q, self.m if h is None else self.m + h)

    def __repr__(self) -> str:
        n = "1 body" if self.m.ndim == 2 else f"{self.m.shape[1]} bodies"
        lazy = ", lazy (dask)" if self.lazy else ""
        return (f"<Trajectory {self.method}: {n}, {len(self.t)} states, "
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
