"""Threads of the compiled batched loops (OpenMP).

The batched steps (:func:`frb.frb_step`, :func:`frb.quat_step`, :func:`frb.dmv_step`), the
compiled time loops (:func:`frb.dmv_integrate`, :func:`frb.integrate`) share their chunks of
bodies among threads. The chunks are fixed by the batch alone and every body's arithmetic is
independent of the others, so the results are the same bit for bit for every thread count.

The thread count of a call is, in this order: its ``threads=`` argument; the count set by
:func:`set_num_threads`; the OpenMP default (``OMP_NUM_THREADS``, or one thread per core).
frb asks the OpenMP runtime for at most :data:`THREAD_LIMIT` threads (four per processor this
process may run on, at least 8, at most 4096): a larger count, from any of the three, is lowered
to it (the results are the same for every count, and threads beyond the processors only wait),
so that an ``OMP_NUM_THREADS`` or a ``threads=`` beyond what the process can start never reaches
the runtime. Every compiled call is given its count explicitly.
A build without OpenMP (a compiler that lacks it) runs everything on one thread.
The compiled work runs without the GIL, so other Python threads run meanwhile.
"""
from __future__ import annotations

import numbers
import os

import numpy as np

from . import _core

__all__ = ["set_num_threads", "get_num_threads", "openmp_enabled", "THREAD_LIMIT"]


def _usable_processors() -> int:
    """The processors this process may run on (its affinity mask, else the machine's)."""
    try:
        return len(os.sched_getaffinity(0)) or 1
    except (AttributeError, OSError):   # (no affinity on this platform)
        return os.cpu_count() or 1


#: Most threads frb asks the OpenMP runtime for: four per usable processor, at least 8, at most
#: 4096 (the largest ``threads=`` accepted).
THREAD_LIMIT: int = min(4096, max(8, 4 * _usable_processors()))

_num_threads: int | None = None
#: (enabled, default thread count) of the OpenMP runtime, read once: the default is
#: OMP_NUM_THREADS or the cores, fixed when the runtime starts (frb never changes it)
_OPENMP = tuple(int(x) for x in _core.openmp_info())


def _check(n: object, name: str) -> int:
    # (numpy's timedelta64 is an Integral subclass, but a duration, not a count)
    if isinstance(n, (bool, np.timedelta64)) or not isinstance(n, numbers.Integral):
        raise TypeError(f"{name} must be a positive integer or None, got {n!r}")
    if not 1 <= int(n) <= 4096:
        raise ValueError(f"{name} must be a positive integer (at most 4096), got {n}")
    return int(n)


def set_num_threads(n: int | None) -> None:
    """Set the thread count of every later compiled call that has no ``threads=`` argument.

    Parameters
    ----------
    n : int or None
        Number of threads, ``1 .. 4096`` (frb uses at most :data:`THREAD_LIMIT` of them);
        ``None`` returns to the OpenMP default (``OMP_NUM_THREADS``, or one per core).

    Raises
    ------
    TypeError, ValueError
        ``n`` is not a positive integer or None.

    Examples
    --------
    >>> import frb
    >>> frb.set_num_threads(1)
    >>> frb.get_num_threads()
    1
    >>> frb.set_num_threads(None)                  # back to OMP_NUM_THREADS / all cores
    """
    global _num_threads
    _num_threads = None if n is None else _check(n, "n")


def get_num_threads() -> int:
    """The thread count a compiled call uses without a ``threads=`` argument (1 in a build
    without OpenMP).

    Examples
    --------
    >>> import frb
    >>> frb.get_num_threads() >= 1
    True
    """
    enabled, default = _OPENMP
    if not enabled:
        return 1
    return min(_num_threads if _num_threads is not None else max(default, 1), THREAD_LIMIT)


def openmp_enabled() -> bool:
    """True when this build runs the batched loops on several threads (OpenMP)."""
    return bool(_OPENMP[0])


def resolve(threads: int | None) -> int:
    """The ``threads`` value passed to the compiled code (always >= 1, at most
    :data:`THREAD_LIMIT`): the argument, else :func:`get_num_threads`."""
    if threads is None:
        return get_num_threads()
    return min(_check(threads, "threads"), THREAD_LIMIT)
