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
then raise in the chunk that holds them, the message naming the body in the whole batch. The
scalar arguments (method, ``h``, ``nsteps``, ...), the shapes and the dtypes are checked at
once. A torque whose per-body parameters are given per body (a rotor's momentum, a reference
quaternion) is split with the bodies (``Torque.bodies``); a torque that couples the bodies
(``couples_bodies``) cannot be split into chunks and is refused.

A cluster::

    from dask.distributed import Client
    client = Client("tcp://scheduler:8786")       # or Client() for a local cluster
    m = dask.array.from_array(m_numpy, chunks=(100_000, 3))
    traj = frb.dask.integrate(m, q, inertia, 0.01, 10_000, method="DMV6", save_every=None)
    m_final, q_final = dask.compute(traj.m[-1], traj.q[-1])    # (or traj.compute())

Every worker needs frb installed. Each chunk runs on the threads of its worker's compiled
loops (``threads=``, default :func:`frb.get_num_threads` on the worker): with several dask
threads per worker, pass ``threads=1`` (or start the workers with ``threads_per_worker=1``).
"""
from __future__ import annotations

import math
import re
from typing import Any, Callable, Literal, NoReturn, Sequence

import numpy as np
from numpy.typing import ArrayLike, NDArray

try:
    import dask.array as da
except ImportError as exc:  # pragma: no cover - exercised only without the extra
    raise ImportError("frb.dask needs dask: pip install 'frb[dask]' "
                      "(or pip install 'dask[distributed]')") from exc

from . import _validate
from ._kept import check_kept_states, kept_count
from ._messages import IntegrationError, per_body_torque_message
from .engine import OPTIONS, integrate as _integrate
from .flows import frb_step as _frb_step, quat_step as _quat_step
from .inertia import inertia_layout, shared_tensor
from .torques import Torque, as_torque, shown
from .wheel_laws import WheelLaw, as_wheel_law
from .wheels import Wheels
from .trajectory import Sensitivities, TorqueLike, Trajectory

__all__ = ["frb_step", "quat_step", "integrate"]


def _known(a: da.Array, name: str) -> None:
    """ValueError naming ``name`` for a dask array whose chunk sizes are unknown (NaN)."""
    if any(math.isnan(c) for dim in a.chunks for c in dim):
        raise ValueError(f"{name} has chunks of unknown size (NaN, e.g. after boolean "
                         f"indexing): call {name}.compute_chunk_sizes() first")


def _real(a: da.Array, name: str) -> da.Array:
    """a as float64 under the input rule (integers and floats; TypeError naming ``name`` for
    booleans, complex numbers, strings and other dtypes)."""
    kind = a.dtype.kind
    if kind in "iuf":
        return a.astype(np.float64)
    what = {"b": "booleans", "c": "complex numbers", "U": "strings", "S": "strings",
            "O": "Python objects"}.get(kind, f"dtype {a.dtype}")
    raise TypeError(f"{name} must be an array of real numbers, got {what} (dtype {a.dtype})")


def _as_dask(x: Any, name: str) -> da.Array:
    if isinstance(x, da.Array):
        return x
    return da.asarray(_validate.real_array(x, name, finite=False))


def _body_array(x: ArrayLike, name: str, n: int, chunks: tuple[int, ...], tail: tuple[int, ...]
                ) -> da.Array:
    """x as a float64 dask array of shape (n,) + tail chunked like the bodies (one chunk on the
    other axes)."""
    a = _as_dask(x, name)
    _known(a, name)
    if a.shape != (n,) + tail:
        raise ValueError(f"{name} must have shape {(n,) + tail}, got {a.shape}")
    return _real(a, name).rechunk((chunks,) + tuple(-1 for _ in tail))


def _bodies(m: Any, name: str) -> tuple[da.Array, int, tuple[int, ...]]:
    a = _as_dask(m, name)
    _known(a, name)
    if a.ndim != 2 or a.shape[1] != 3:
        raise ValueError(f"{name} must be a batch of shape (n, 3), got {a.shape}")
    a = _real(a, name).rechunk({1: -1})
    return a, a.shape[0], a.chunks[0]


def _detached(value: Any) -> Any:
    """``value`` with its numpy arrays copied (also inside lists and tuples): the chunks run at
    compute(), after the caller may have changed its arrays."""
    if isinstance(value, np.ndarray):
        return np.array(value)
    if isinstance(value, (list, tuple)):
        return type(value)(_detached(v) for v in value)
    return value


def _shared_or_per_body(x: ArrayLike, name: str, n: int, chunks: tuple[int, ...],
                        tail: tuple[int, ...]) -> tuple[Any, da.Array | None]:
    """(shared value, None) for a value shared by every body (passed to every chunk), or
    (None, dask array) for a per-body array: a dask array, or one with a leading body axis."""
    if isinstance(x, da.Array) or _validate.real_array(x, name, finite=False).ndim == \
            len(tail) + 1:
        return None, _body_array(x, name, n, chunks, tail)
    return _detached(x), None


def _inertia(inertia: ArrayLike, n: int, chunks: tuple[int, ...]
             ) -> tuple[Any, da.Array | None, tuple[int, ...]]:
    """_shared_or_per_body of inertia, moments or tensors (frb.inertia), and the shape of one
    body's: a tensor shared by all bodies goes to every chunk as (1, 3, 3), unambiguous for a
    chunk of any size."""
    if not isinstance(inertia, da.Array):
        _validate.real_array(inertia, "inertia", finite=False)     # (the input rule first)
    layout = inertia_layout(inertia, n)
    if layout == "shared tensor":
        return np.array(shared_tensor(inertia)), None, (3, 3)
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


def _reraise(exc: Exception, start: int, stop: int) -> NoReturn:
    """Re-raise an error of a chunk with the bodies numbered in the whole batch."""
    msg = re.sub(r"\bbody (\d+)", lambda g: f"body {int(g.group(1)) + start}", str(exc))
    msg += f" [in the dask chunk of bodies {start}..{stop - 1}]"
    if isinstance(exc, IntegrationError):
        raise IntegrationError(msg, exc.method, exc.step, exc.body + start) from None
    raise type(exc)(msg) from None


def _unpack(block: NDArray[np.float64], widths: Sequence[int]) -> list[NDArray[np.float64]]:
    out, j = [], 0
    for w in widths:
        out.append(np.ascontiguousarray(block[:, j:j + w]))
        j += w
    return out


def _check_torque(torque: Any) -> Torque | None:
    """The torque as a Torque, refused when it couples the bodies (chunks run apart)."""
    tq = as_torque(torque)
    if tq is not None and tq.couples_bodies:
        raise ValueError(f"torque {shown(tq)} couples the bodies (each body's torque depends on the "
                         "others), but frb.dask runs each chunk of bodies on its own: use "
                         "frb.integrate on the whole batch")
    return tq


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


def _step(step: Callable[..., tuple[NDArray[np.float64], NDArray[np.float64]]],
          form: tuple[str, tuple[int, ...]], m: ArrayLike, attitude: ArrayLike, h: ArrayLike,
          inertia: ArrayLike, quadrature: int, threads: int | None) -> tuple[da.Array, da.Array]:
    """``step`` chunk by chunk, the attitude of ``form`` (its argument name and shape a body)."""
    attitude_name, attitude_shape = form
    m, n, chunks = _bodies(m, "m")
    att = _body_array(attitude, attitude_name, n, chunks, attitude_shape)
    h_shared, h_body = _shared_or_per_body(h, "h", n, chunks, ())
    i_shared, i_body, i_shape = _inertia(inertia, n, chunks)
    # the scalar arguments and the shared values are checked now: one step of a body at rest
    # (zero length where h is per body), in the frame of the shared inertia
    probe_att = np.array([1.0, 0.0, 0.0, 0.0]) if attitude_shape == (4,) else np.eye(3)
    step(np.zeros(3), probe_att, 0.0 if h_body is not None else h_shared,
         np.ones(3) if i_body is not None else
         (i_shared[0] if np.shape(i_shared) == (1, 3, 3) else i_shared), quadrature,
         threads=threads)
    if n == 0:
        return da.zeros((0, 3), chunks=((0,), (3,))), da.zeros((0,) + attitude_shape)
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
    return _step(_frb_step, ("Q", (3, 3)), m, Q, h, inertia, quadrature, threads)


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
    return _step(_quat_step, ("q", (4,)), m, q, h, inertia, quadrature, threads)


def _integrate_block(block: NDArray[np.float64], *, attitude_shape: tuple[int, ...], inertia: Any,
                     per_body_inertia: bool, torque: Torque | None, kwargs: dict[str, Any],
                     block_info: dict[Any, Any] | None = None,
                     inertia_shape: tuple[int, ...] = (3,)) -> NDArray[np.float64]:
    start, stop = _where(block_info)
    widths = [3, int(np.prod(attitude_shape))] + ([int(np.prod(inertia_shape))]
                                                  if per_body_inertia else [])
    parts = _unpack(block, widths)
    m, att = parts[0], parts[1].reshape((-1,) + attitude_shape)
    ii = parts[2].reshape((-1,) + inertia_shape) if per_body_inertia else inertia
    chunk_torque = None if torque is None else torque.bodies(start, stop)
    try:
        tr = _integrate(m, att, ii, torque=chunk_torque, **_wheels_of(kwargs, start, stop))
    except (ValueError, TypeError, RuntimeError) as exc:
        _reraise(exc, start, stop)
    kept = [tr.m, tr.q] + ([tr.wheel_momentum] if tr.wheel_momentum is not None else [])
    if tr.sensitivities is not None:
        kept += [d.reshape(d.shape[:2] + (-1,)) for d in tr.sensitivities if d is not None]
    return np.concatenate(kept, axis=2)


def _wheels_of(kwargs: dict[str, Any], start: int, stop: int) -> dict[str, Any]:
    """kwargs with the wheels and the wheel law of the bodies start .. stop - 1."""
    wheels, law = kwargs.get("wheels"), kwargs.get("wheel_law")
    if wheels is None and law is None:
        return kwargs
    out = dict(kwargs)
    if isinstance(wheels, Wheels):
        out["wheels"] = wheels.bodies(start, stop)
    if isinstance(law, WheelLaw):
        out["wheel_law"] = law.bodies(start, stop)
    return out


def integrate(m0: da.Array, attitude0: da.Array, inertia: ArrayLike, h: float, nsteps: int, *,
              method: str | None = None, torque: TorqueLike | None = None,
              save_every: int | Literal["final"] | None = 1, **options: Any) -> Trajectory:
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
    h, nsteps, method, torque, save_every, **options
        As for :func:`frb.integrate` (``threads`` on each worker; ``t0`` the time of the
        initial state, which a time-dependent torque sees as ``t0 + k h``; ``progress`` is not
        taken; ``wheels`` and ``wheel_law`` split with the bodies when given per body;
        ``sensitivities`` gives ``Trajectory.sensitivities`` as dask arrays). A user
        torque or wheel law (a callable, which must pickle to reach the workers) is called
        once per stage for each chunk; a torque that couples the bodies is refused.

    Returns
    -------
    frb.Trajectory
        ``lazy``: ``t`` (numpy), ``m`` (K, n, 3) and ``q`` (K, n, 4) dask arrays chunked like
        the bodies (``Q`` and the energies on demand); ``compute()`` gives the trajectory with
        numpy arrays, equal bit for bit to :func:`frb.integrate` of the whole batch.
        ``save_every=None`` keeps the final states only (K = 1).

    Raises
    ------
    TypeError, ValueError
        At once for the scalar arguments, a shared ``inertia``, shapes and chunks of unknown
        size, and kept states of a chunk that would not fit in this machine's memory; the
        values of the per-body arrays when the result is computed (naming the chunk's bodies).
    """
    opts = _validate.options_of(options, {k: v for k, v in OPTIONS.items() if k != "progress"},
                      "frb.dask.integrate")
    tq = _check_torque(torque)
    wheels = opts.get("wheels")
    opts["wheel_law"] = as_wheel_law(opts.get("wheel_law"))
    m, n, chunks = _bodies(m0, "m0")
    att = _as_dask(attitude0, "attitude0")
    _known(att, "attitude0")
    attitude_shape = (3, 3) if att.ndim == 3 else (4,)
    att = _body_array(att, "attitude0", n, chunks, attitude_shape)
    i_shared, i_body, i_shape = _inertia(inertia, n, chunks)
    # (arrays copied: the chunks run at compute(), after the caller may have changed them)
    kwargs: dict[str, Any] = {k: _detached(v) for k, v in
                              dict(h=h, nsteps=nsteps, method=method, save_every=save_every,
                                   **opts).items()}
    # the kept states of the largest chunk must fit in a worker (this machine's memory)
    kept = kept_count(_validate.count(nsteps, "nsteps", 0, _validate.MAX_STEPS),
                      _validate.save_every(save_every))
    nw = wheels.count if isinstance(wheels, Wheels) else 0
    if isinstance(wheels, Wheels) and wheels.bodies_count not in (None, n):
        raise ValueError(f"wheels: given per body for {wheels.bodies_count} bodies, the run has {n}")
    compiled = tq.compiled if tq is not None else None
    if compiled is not None and compiled.body is not None and compiled.body.shape[0] != n:
        raise ValueError(per_body_torque_message(shown(tq), compiled.body.shape[0], n))
    check_kept_states(kept, max(chunks, default=0), 7 + nw, " in one dask chunk")
    # the scalar arguments, the shared inertia and the torque are checked now, and the kept
    # times found, on one body at rest (zero length of step where that is needed)
    probe_att = np.array([1.0, 0.0, 0.0, 0.0]) if attitude_shape == (4,) else np.eye(3)
    probe_inertia = np.ones(3) if i_body is not None else (
        i_shared[0] if np.shape(i_shared) == (1, 3, 3) else i_shared)
    probe = _integrate(np.zeros(3), probe_att, probe_inertia,
                       torque=None if tq is None or n == 0 else tq.bodies(0, 1),
                       **{**_wheels_of(kwargs, 0, 1), "nsteps": 0})
    # (the times do not depend on the wheels: a law given per body has none for no body)
    no_wheels = {k: v for k, v in kwargs.items() if k not in ("wheels", "wheel_law")}
    t = _integrate(np.empty((0, 3)), np.empty((0,) + attitude_shape), np.ones(3),
                   **{**no_wheels, "save_every": save_every}).t
    form = "matrix" if attitude_shape == (3, 3) else "quaternion"
    inertia_out = i_body if i_body is not None else np.broadcast_to(
        np.asarray(i_shared, dtype=np.float64), (n,) + i_shape)
    wheel_kept = nw if opts["wheel_law"] is not None or isinstance(wheels, Wheels) else 0
    # the derivatives asked (sensitivities=), by the probe's shapes of one body: (K, ...)
    asked = {} if probe.sensitivities is None else {
        name: d.shape[1:] for name, d in probe.sensitivities._asdict().items() if d is not None}
    width = 7 + wheel_kept + sum(int(np.prod(tail)) for tail in asked.values())
    if n == 0:
        empty = np.empty((len(t), 0, 3))
        return Trajectory(t, da.from_array(empty), da.from_array(np.empty((len(t), 0, 4))), form,
                          probe.method, inertia_out, torque, wheels=wheels,
                          wheel_momentum=None if not wheel_kept else
                          da.from_array(np.empty((len(t), 0, nw))),
                          sensitivities=None if not asked else Sensitivities(**{
                              name: da.from_array(np.empty((len(t), 0) + tail))
                              for name, tail in asked.items()}))
    packed = _pack([m, att] + ([i_body] if i_body is not None else []))
    out = packed.map_blocks(
        _integrate_block, attitude_shape=attitude_shape,
        inertia=None if i_shared is None else np.asarray(i_shared, dtype=np.float64),
        per_body_inertia=i_body is not None, torque=tq, kwargs=kwargs, new_axis=0,
        inertia_shape=i_shape, chunks=((len(t),), chunks, (width,)), dtype=np.float64,
        meta=np.empty((0, 0, 0)))
    derivatives: dict[str, da.Array] = {}
    first = 7 + wheel_kept
    for name, tail in asked.items():
        size = int(np.prod(tail))
        if size == 0:           # (e.g. the torque's parameters of a run without a torque)
            derivatives[name] = da.zeros((len(t), n) + tail, dtype=np.float64,
                                         chunks=((len(t),), chunks) + tuple((d,) for d in tail))
            continue
        derivatives[name] = out[:, :, first:first + size].reshape((len(t), n) + tail)
        first += size
    return Trajectory(t, out[:, :, :3], out[:, :, 3:7], form, probe.method, inertia_out, torque,
                      wheels=wheels, wheel_momentum=out[:, :, 7:7 + wheel_kept] if wheel_kept
                      else None,
                      sensitivities=Sensitivities(**derivatives) if derivatives else None)
