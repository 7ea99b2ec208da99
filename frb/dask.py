"""Batches of bodies as dask arrays: steps and integrations chunk by chunk (optional extra
``dask``: ``pip install frb[dask]``).

:func:`frb_step`, :func:`quat_step` and :func:`integrate` take the arguments of their
namesakes in :mod:`frb`, with the per-body arrays given as dask arrays (or anything
``dask.array.asarray`` takes) whose first axis is the body. Each chunk of bodies (the chunks
of ``m`` along its first axis; the other per-body arrays are rechunked to match) goes through
the in-process function (``frb.frb_step``, ``frb.quat_step``, ``frb.integrate``) by
``dask.array.map_blocks``, wherever dask runs it: threads, processes, or the workers of a
``dask.distributed`` cluster. Every body's arithmetic is independent of the other bodies, so
the results equal those of one in-process call bit for bit.

Nothing runs until the result is computed (``.compute()``, ``dask.compute``); invalid values
then raise in the chunk that holds them, the message naming the chunk's bodies. The scalar
arguments (method, ``h``, ``nsteps``, ...) are checked at once.

A cluster::

    from dask.distributed import Client
    client = Client("tcp://scheduler:8786")       # or Client() for a local cluster
    m = dask.array.from_array(m_numpy, chunks=(100_000, 3))
    traj = frb.dask.integrate(m, q, inertia, 0.01, 10_000, method="DMV6", save_every=None)
    m_final, q_final = dask.compute(traj.m[-1], traj.q[-1])

Every worker needs frb installed. Each chunk runs on the threads of its worker's compiled
loops (``threads=``, default :func:`frb.get_num_threads` on the worker): with several dask
threads per worker, pass ``threads=1`` (or start the workers with ``threads_per_worker=1``).
"""
from __future__ import annotations

import dataclasses
import math
import re
from typing import Any, Callable, Literal, NoReturn, Sequence

import numpy as np
from numpy.typing import ArrayLike, NDArray

try:
    import dask
    import dask.array as da
except ImportError as exc:  # pragma: no cover - exercised only without the extra
    raise ImportError("frb.dask needs dask: pip install 'frb[dask]' "
                      "(or pip install 'dask[distributed]')") from exc

from . import _segments
from . import engine
from . import flows
from .inertia import inertia_layout, shared_tensor
from .rotations import quat_to_matrix_unchecked

__all__ = ["frb_step", "quat_step", "integrate", "DaskTrajectory"]


def _known(a: da.Array, name: str) -> None:
    """ValueError naming ``name`` for a dask array whose chunk sizes are unknown (NaN)."""
    if any(math.isnan(c) for dim in a.chunks for c in dim):
        raise ValueError(f"{name} has chunks of unknown size (NaN, e.g. after boolean "
                         f"indexing): call {name}.compute_chunk_sizes() first")


def _body_array(x: ArrayLike, name: str, n: int, chunks: tuple[int, ...], tail: tuple[int, ...]
                ) -> da.Array:
    """x as a dask array of shape (n,) + tail chunked like the bodies (one chunk on the other
    axes)."""
    a = da.asarray(x)
    _known(a, name)
    if a.shape != (n,) + tail:
        raise ValueError(f"{name} must have shape {(n,) + tail}, got {a.shape}")
    return a.astype(np.float64).rechunk((chunks,) + tuple(-1 for _ in tail))


def _bodies(m: Any, name: str = "m") -> tuple[da.Array, int, tuple[int, ...]]:
    m = da.asarray(m)
    _known(m, name)
    if m.ndim != 2 or m.shape[1] != 3:
        raise ValueError(f"{name} must be a batch of shape (n, 3), got {m.shape}")
    m = m.astype(np.float64).rechunk({1: -1})
    return m, m.shape[0], m.chunks[0]


def _shared_or_per_body(x: ArrayLike, name: str, n: int, chunks: tuple[int, ...],
                        tail: tuple[int, ...]) -> tuple[Any, da.Array | None]:
    """(shared value, None) for a value shared by every body (passed to every chunk), or
    (None, dask array) for a per-body array: a dask array, or one with a leading body axis."""
    if isinstance(x, da.Array) or np.ndim(x) == len(tail) + 1:
        return None, _body_array(x, name, n, chunks, tail)
    return x, None


def _inertia(inertia: ArrayLike, n: int, chunks: tuple[int, ...]
             ) -> tuple[Any, da.Array | None, tuple[int, ...]]:
    """_shared_or_per_body of inertia, moments or tensors (frb.inertia), and the shape of one
    body's: a tensor shared by all bodies goes to every chunk as (1, 3, 3), unambiguous for a
    chunk of any size."""
    layout = inertia_layout(inertia, n)
    if layout == "shared tensor":
        return shared_tensor(inertia), None, (3, 3)
    shape = (3, 3) if layout == "tensors" else (3,)
    return (*_shared_or_per_body(inertia, "inertia", n, chunks, shape), shape)


def _pack(parts: Sequence[da.Array]) -> da.Array:
    """One (n, k) dask array of the per-body arrays, flattened per body."""
    flat = [p.reshape(p.shape[0], -1) if p.ndim != 2 else p for p in parts]
    flat = [p[:, None] if p.ndim == 1 else p for p in flat]
    return da.concatenate(flat, axis=1).rechunk({1: -1})


def _where(block_info: Any) -> tuple[int, int]:
    start, stop = block_info[0]["array-location"][0]
    return start, stop


def _check_shared_inertia(inertia: Any) -> None:
    """The values of an inertia shared by every body, checked at once (a ValueError naming
    inertia, not a body of a chunk): one torque-free step of zero length of a body at rest."""
    flows.quat_step(np.zeros(3), np.array([1.0, 0.0, 0.0, 0.0]), 0.0, inertia)


def _reraise(exc: Exception, start: int, stop: int) -> NoReturn:
    """Re-raise an error of a chunk with the bodies numbered in the whole batch."""
    msg = re.sub(r"\bbody (\d+)", lambda g: f"body {int(g.group(1)) + start}", str(exc))
    msg += f" [in the dask chunk of bodies {start}..{stop - 1}]"
    if isinstance(exc, engine.IntegrationError):
        raise engine.IntegrationError(msg, exc.method, exc.step, exc.body + start) from None
    raise type(exc)(msg) from None


def _unpack(block: NDArray[np.float64], widths: Sequence[int]) -> list[NDArray[np.float64]]:
    out, j = [], 0
    for w in widths:
        out.append(np.ascontiguousarray(block[:, j:j + w]))
        j += w
    return out


def _step_block(block: NDArray[np.float64], *,
                step: Callable[..., tuple[NDArray[np.float64], NDArray[np.float64]]],
                attitude_shape: tuple[int, ...], h: Any, inertia: Any, per_body: Sequence[str],
                quadrature: int, threads: int | None, block_info: dict[Any, Any] | None = None,
                inertia_shape: tuple[int, ...] = (3,)) -> NDArray[np.float64]:
    start, stop = _where(block_info)
    widths = [3, int(np.prod(attitude_shape))] + [1 if k == "h" else int(np.prod(inertia_shape))
                                                  for k in per_body]
    parts = _unpack(block, widths)
    m, att = parts[0], parts[1].reshape((-1,) + attitude_shape)
    values = dict(zip(per_body, parts[2:]))
    hh = values["h"][:, 0] if "h" in values else h
    ii = values["inertia"].reshape((-1,) + inertia_shape) if "inertia" in values else inertia
    try:
        m_out, att_out = step(m, att, hh, ii, quadrature, threads=threads)
    except (ValueError, TypeError, RuntimeError) as exc:
        _reraise(exc, start, stop)
    return np.concatenate([m_out, att_out.reshape(len(m_out), -1)], axis=1)


def _step(step: Callable[..., tuple[NDArray[np.float64], NDArray[np.float64]]], attitude_name: str,
          attitude_shape: tuple[int, ...], m: ArrayLike, attitude: ArrayLike, h: ArrayLike,
          inertia: ArrayLike, quadrature: int, threads: int | None) -> tuple[da.Array, da.Array]:
    m, n, chunks = _bodies(m)
    # the scalar arguments (and shared values) are checked now, on an empty batch
    h_shared, h_body = _shared_or_per_body(h, "h", n, chunks, ())
    i_shared, i_body, i_shape = _inertia(inertia, n, chunks)
    if i_body is None:
        _check_shared_inertia(i_shared)
    step(np.empty((0, 3)), np.empty((0,) + attitude_shape),
         0.0 if h_body is not None else h_shared,
         np.ones(3) if i_body is not None else i_shared, quadrature, threads=threads)
    att = _body_array(attitude, attitude_name, n, chunks, attitude_shape)
    per_body = [k for k, v in (("h", h_body), ("inertia", i_body)) if v is not None]
    packed = _pack([m, att] + [v for v in (h_body, i_body) if v is not None])
    width = 3 + int(np.prod(attitude_shape))
    out = packed.map_blocks(
        _step_block, step=step, attitude_shape=attitude_shape, h=h_shared,
        inertia=None if i_shared is None else np.asarray(i_shared, dtype=np.float64),
        per_body=per_body, quadrature=quadrature, threads=threads, inertia_shape=i_shape,
        chunks=(chunks, (width,)), dtype=np.float64, meta=np.empty((0, 0)))
    return out[:, :3], out[:, 3:].reshape((n,) + attitude_shape)


def frb_step(m: da.Array, Q: da.Array, h: ArrayLike, inertia: ArrayLike, quadrature: int = 0,
             threads: int | None = None) -> tuple[da.Array, da.Array]:
    """:func:`frb.frb_step` of a batch of dask arrays, chunk by chunk.

    Parameters
    ----------
    m : dask array, shape (n, 3)
        Body angular momenta; its chunks along the first axis are the chunks of bodies.
    Q : dask array, shape (n, 3, 3)
        Rotation matrices (rechunked to the chunks of ``m``).
    h : float or array_like of shape (n,)
        Time step, shared or per body.
    inertia : array_like, shape (3,), (n, 3), (3, 3), (1, 3, 3) or (n, 3, 3)
        Principal moments of inertia, or inertia tensors (as :func:`frb.frb_step`; the rule
        for (3, 3) with exactly 3 bodies applies to the whole batch, not to its chunks), shared
        or per body.
    quadrature, threads
        As for :func:`frb.frb_step` (``threads`` on each worker).

    Returns
    -------
    m_out, Q_out : dask arrays of shapes (n, 3), (n, 3, 3), chunked like ``m``, equal bit for
    bit to ``frb.frb_step`` of the whole batch.
    """
    return _step(flows.frb_step, "Q", (3, 3), m, Q, h, inertia, quadrature, threads)


def quat_step(m: da.Array, q: da.Array, h: ArrayLike, inertia: ArrayLike, quadrature: int = 0,
              threads: int | None = None) -> tuple[da.Array, da.Array]:
    """:func:`frb.quat_step` of a batch of dask arrays, chunk by chunk; as :func:`frb_step`
    with ``q`` of shape (n, 4), unit quaternions (scalar first). Returns ``m_out, q_out``.

    Examples
    --------
    >>> import numpy as np
    >>> import dask.array as da
    >>> import frb, frb.dask
    >>> m = da.from_array(np.random.default_rng(0).normal(size=(1000, 3)), chunks=(250, 3))
    >>> q = da.from_array(np.tile([1.0, 0.0, 0.0, 0.0], (1000, 1)), chunks=(250, 4))
    >>> m1, q1 = frb.dask.quat_step(m, q, 0.1, [1.0, 2.0, 3.0])
    >>> bool((q1.compute() == frb.quat_step(m.compute(), q.compute(), 0.1, [1.0, 2.0, 3.0])[1]).all())
    True
    """
    return _step(flows.quat_step, "q", (4,), m, q, h, inertia, quadrature, threads)


@dataclasses.dataclass(eq=False, repr=False)
class DaskTrajectory:
    """Result of :func:`integrate`: the kept states of every body as dask arrays.

    Attributes
    ----------
    t : numpy.ndarray, shape (K,)
        Times of the kept states (known at once).
    m : dask array, shape (K, n, 3)
        Body angular momenta, chunked like the bodies.
    q : dask array, shape (K, n, 4)
        Attitudes as unit quaternions (scalar first).
    form : {"quaternion", "matrix"}
        The form ``attitude0`` was given in.
    method : str
        The method's name.

    ``Q`` (dask array (K, n, 3, 3)) and ``attitude`` are computed from ``q`` on demand;
    :meth:`compute` returns the :class:`frb.Trajectory` of the in-process
    :func:`frb.integrate` (same values bit for bit). With ``save_every=None`` K is 1:
    ``m[0]``, ``q[0]`` are the final states.
    """

    t: NDArray[np.float64]
    m: da.Array
    q: da.Array
    form: str
    method: str
    inertia: Any
    torque: engine.TorqueLike | None

    @property
    def Q(self) -> da.Array:
        return self.q.map_blocks(quat_to_matrix_unchecked, new_axis=3, chunks=self.q.chunks[:2] + ((3,), (3,)),
                                 dtype=np.float64, meta=np.empty((0, 0, 0, 0)))

    @property
    def attitude(self) -> da.Array:
        return self.Q if self.form == "matrix" else self.q

    def compute(self, **kwargs: Any) -> engine.Trajectory:
        """The in-process :class:`frb.Trajectory` (computes ``m``, ``q`` and a per-body
        inertia together; keyword arguments go to ``dask.compute``)."""
        m, q, inertia = dask.compute(self.m, self.q, self.inertia, **kwargs)
        return engine.Trajectory(self.t, m, q, self.form, self.method, inertia, self.torque)

    def __repr__(self) -> str:
        return (f"<DaskTrajectory {self.method}: {self.m.shape[1]} bodies in "
                f"{len(self.m.chunks[1])} chunks, {len(self.t)} states, attitude as {self.form}>")


def _integrate_block(block: NDArray[np.float64], *, attitude_shape: tuple[int, ...], inertia: Any,
                     per_body_inertia: bool, kwargs: dict[str, Any],
                     block_info: dict[Any, Any] | None = None,
                     inertia_shape: tuple[int, ...] = (3,)) -> NDArray[np.float64]:
    start, stop = _where(block_info)
    widths = [3, int(np.prod(attitude_shape))] + ([int(np.prod(inertia_shape))]
                                                  if per_body_inertia else [])
    parts = _unpack(block, widths)
    m, att = parts[0], parts[1].reshape((-1,) + attitude_shape)
    ii = parts[2].reshape((-1,) + inertia_shape) if per_body_inertia else inertia
    try:
        tr = engine.integrate(m, att, ii, **kwargs)
    except (ValueError, TypeError, RuntimeError) as exc:
        _reraise(exc, start, stop)
    return np.concatenate([tr.m, tr.q], axis=2)


def integrate(m0: da.Array, attitude0: da.Array, inertia: ArrayLike, h: float, nsteps: int, *,
              method: str | None = None, torque: engine.TorqueLike | None = None,
              save_every: int | Literal["final"] | None = 1,
              coefficients: tuple[ArrayLike, ArrayLike] | None = None, quadrature: int = 0,
              threads: int | None = None, t0: float = 0.0) -> DaskTrajectory:
    """:func:`frb.integrate` of a batch of dask arrays, chunk by chunk.

    Parameters
    ----------
    m0 : dask array, shape (n, 3)
        Initial body angular momenta; its chunks along the first axis are the chunks of bodies.
    attitude0 : dask array, shape (n, 4) or (n, 3, 3)
        Initial attitudes, unit quaternions (scalar first) or rotation matrices.
    inertia : array_like, shape (3,), (n, 3), (3, 3), (1, 3, 3) or (n, 3, 3)
        Principal moments of inertia, or inertia tensors (as :func:`frb.integrate`), shared or
        per body.
    h, nsteps, method, torque, save_every, coefficients, quadrature, threads, t0
        As for :func:`frb.integrate` (``threads`` on each worker; ``t0`` the time of the
        initial state, which a time-dependent torque sees as ``t0 + k h``). A user torque (a
        callable, which must pickle to reach the workers) is called once per stage for each
        chunk.

    Returns
    -------
    DaskTrajectory
        ``t`` (numpy), ``m`` (K, n, 3) and ``q`` (K, n, 4) dask arrays chunked like the bodies;
        ``save_every=None`` keeps the final states only (K = 1).

    Raises
    ------
    TypeError, ValueError
        At once for the scalar arguments, a shared ``inertia``, shapes and chunks of unknown
        size, and kept states of a chunk that would not fit in this machine's memory; the
        values of the per-body arrays when the result is computed (naming the chunk's bodies).
    """
    m, n, chunks = _bodies(m0, "m0")
    att = da.asarray(attitude0)
    _known(att, "attitude0")
    attitude_shape = (3, 3) if att.ndim == 3 else (4,)
    att = _body_array(att, "attitude0", n, chunks, attitude_shape)
    i_shared, i_body, i_shape = _inertia(inertia, n, chunks)
    if i_body is None:
        _check_shared_inertia(i_shared)
    kwargs: dict[str, Any] = dict(h=h, nsteps=nsteps, method=method, torque=torque,
                                  save_every=save_every, coefficients=coefficients,
                                  quadrature=quadrature, threads=threads, t0=t0)
    # the kept states of the largest chunk must fit in a worker (this machine's memory)
    kept = _segments.kept_count(engine._int_arg(nsteps, "nsteps", 0),
                                _segments.save_every_arg(save_every, engine._int_arg))
    _segments.check_kept_states(kept, max(chunks, default=0), 7, " in one dask chunk")
    # the scalar arguments are checked now, and the kept times found, on an empty batch
    empty = engine.integrate(np.empty((0, 3)), np.empty((0,) + attitude_shape),
                              np.ones((0, 3)) if i_body is not None else i_shared, **kwargs)
    nk = len(empty.t)
    packed = _pack([m, att] + ([i_body] if i_body is not None else []))
    out = packed.map_blocks(
        _integrate_block, attitude_shape=attitude_shape,
        inertia=None if i_shared is None else np.asarray(i_shared, dtype=np.float64),
        per_body_inertia=i_body is not None, kwargs=kwargs, new_axis=0, inertia_shape=i_shape,
        chunks=((nk,), chunks, (7,)), dtype=np.float64, meta=np.empty((0, 0, 0)))
    form = "matrix" if attitude_shape == (3, 3) else "quaternion"
    inertia_out = i_body if i_body is not None else np.broadcast_to(
        np.asarray(i_shared, dtype=np.float64), (n,) + i_shape)
    return DaskTrajectory(empty.t, out[:, :, :3], out[:, :, 3:], form, empty.method,
                          inertia_out, torque)
