"""The kept states of a run: which steps are kept, and whether they fit in memory.

A run keeps the states after the steps ``0, save_every, 2 save_every, ...`` and always the last
(``save_every = 0``: the last only); the compiled loop numbers them the same way
(``save_slot`` in ``fortran/parallel.f90``), so that a run in segments fills the same slots as a
run in one call.
"""
from __future__ import annotations

import functools
import math
import os

import numpy as np
from numpy.typing import NDArray

__all__ = ["kept_steps", "kept_count", "check_kept_states", "available_memory",
           "memory_size"]


#: The largest number of kept steps whose array kept_steps caches (32 KiB).
CACHED_KEPT = 4096


def kept_steps(nsteps: int, save_every: int) -> NDArray[np.float64]:
    """The step numbers whose states are kept (the numbering of ``save_slot`` in
    ``fortran/parallel.f90``): ``0, save_every, 2 save_every, ...`` and always ``nsteps``;
    only ``nsteps`` for ``save_every = 0``. As float64, read-only; cached up to CACHED_KEPT steps
    (the usual calls repeat a few short (nsteps, save_every) pairs; a long list is made per call)."""
    if kept_count(nsteps, save_every) <= CACHED_KEPT:
        return _kept_steps_cached(nsteps, save_every)
    return _kept_steps(nsteps, save_every)


@functools.lru_cache(maxsize=256)
def _kept_steps_cached(nsteps: int, save_every: int) -> NDArray[np.float64]:
    return _kept_steps(nsteps, save_every)


def _kept_steps(nsteps: int, save_every: int) -> NDArray[np.float64]:
    if save_every == 0:
        ks = np.array([nsteps], dtype=np.float64)
    else:
        ks = np.arange(0, nsteps + 1, save_every, dtype=np.int64).astype(np.float64)
        if nsteps % save_every:
            ks = np.append(ks, float(nsteps))
    ks.flags.writeable = False
    return ks


def _free_memory() -> float:
    """Bytes of memory available now (MemAvailable of /proc/meminfo, else the physical memory;
    inf when neither is known)."""
    try:
        with open("/proc/meminfo", encoding="ascii") as fh:
            for line in fh:
                if line.startswith("MemAvailable:"):
                    return float(line.split()[1]) * 1024.0
    except (OSError, ValueError, IndexError):
        pass
    try:
        return float(os.sysconf("SC_PHYS_PAGES")) * float(os.sysconf("SC_PAGE_SIZE"))
    except (AttributeError, OSError, ValueError):
        return math.inf


def available_memory() -> float:
    """Bytes of memory a run may take now: :func:`_free_memory`, within the address-space
    limit of the process (``ulimit -v``) when there is one."""
    free = _free_memory()
    try:
        import resource
        soft = resource.getrlimit(resource.RLIMIT_AS)[0]
    except (ImportError, OSError, ValueError, AttributeError):
        return free
    return free if soft in (resource.RLIM_INFINITY, -1) else min(free, float(soft))


def memory_size(nbytes: float) -> str:
    """A number of bytes in words (e.g. ``'1.5 GiB'``)."""
    for unit, scale in (("TiB", 2.0**40), ("GiB", 2.0**30), ("MiB", 2.0**20)):
        if nbytes >= scale:
            return f"{nbytes / scale:.1f} {unit}"
    return f"{nbytes / 1024:.1f} KiB"


def beyond_memory(need: float) -> float | None:
    """The memory available (bytes) when ``need`` bytes would not fit in 90 % of it, else None
    (needs of at most 64 MiB are always allowed, without a system call)."""
    if need <= 2.0**26:
        return None
    free = available_memory()
    return free if need > 0.9 * free else None


def kept_count(nsteps: int, save_every: int) -> int:
    """``len(kept_steps(nsteps, save_every))``, without making the array."""
    if save_every == 0:
        return 1
    return nsteps // save_every + 1 + (1 if nsteps % save_every else 0)


def check_kept_states(kept: int, n: int, values: int, where: str = "",
                      remedy: str | None = None, what: str = "the kept states") -> None:
    """Raise ValueError before allocating when ``kept`` states (and their times) of ``n``
    bodies of ``values`` float64 each would not fit in the memory available, saying what they
    would take and pointing to ``save_every`` (or to ``remedy``, the arguments of a caller
    that keeps every state). ``where``: added to the message (e.g. a dask chunk); ``what``:
    the message's name of the states."""
    need = 8.0 * kept * (n * values + 3)          # (the times, and two temporaries of them)
    free = beyond_memory(need)
    if free is None:
        return
    remedy = remedy or ("keep fewer with save_every (every k-th state; save_every=None keeps "
                        "the final state only) or run fewer bodies at a time")
    raise ValueError(f"{what} would take {memory_size(need)} ({kept} state"
                     f"{'' if kept == 1 else 's'} of {n} "
                     f"bod{'y' if n == 1 else 'ies'}{where}, {values} values each), more than "
                     f"the memory available ({memory_size(free)}): {remedy}")


