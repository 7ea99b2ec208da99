"""Long compiled runs entered in segments: Ctrl-C, progress and the kept states.

A compiled time loop (``frb.integrate``'s engine, ``frb.dmv_integrate``, the compiled loop of
``frb.splitting.integrate``) is called for a block of bodies and a segment of its steps at a
time, each call about :data:`TARGET_SECONDS` of work, with the state carried from one call to
the next. Between two calls Python runs, so Ctrl-C (KeyboardInterrupt) stops a run
within a fraction of a second and a progress bar can be updated. Every body's arithmetic is
independent of where the segments start and end, so a run in segments gives the results of a
run in one call bit for bit.
"""
from __future__ import annotations

import functools
import math
import os
import sys
import time
from typing import Any, Callable, Optional, Tuple

import numpy as np
from numpy.typing import NDArray

#: Wall time aimed at for one compiled call between two returns to Python (seconds).
TARGET_SECONDS = 0.1
#: Body-steps of the first call of a run (about 0.01 s for DMV6 in frb.integrate, 0.2 s for
#: the slowest methods); the later calls are sized from the measured speed of the previous ones.
FIRST_WORK = 1 << 16
#: A block of bodies has at least this many chunks (of ``align`` bodies) per thread, so that
#: every thread has work in every call.
CHUNKS_PER_THREAD = 4
#: Largest growth of the work of a call over the previous one.
MAX_GROWTH = 4.0
#: Seconds between two redraws of the plain progress line.
PLAIN_INTERVAL = 0.5

#: ``advance(b_first, b_last, k_first, k_last)`` of :func:`run`: None, or a failure tuple
#: ordered by (step, body, ...).
Advance = Callable[[int, int, int, int], Optional[Tuple[Any, ...]]]


@functools.lru_cache(maxsize=256)
def kept_steps(nsteps: int, save_every: int) -> NDArray[np.float64]:
    """The step numbers whose states are kept (the numbering of ``save_slot`` in
    ``fortran/parallel.f90``): ``0, save_every, 2 save_every, ...`` and always ``nsteps``;
    only ``nsteps`` for ``save_every = 0``. As float64, read-only and cached (the usual calls
    repeat a few (nsteps, save_every) pairs)."""
    if save_every == 0:
        ks = np.array([nsteps], dtype=np.float64)
    else:
        ks = np.arange(0, nsteps + 1, save_every, dtype=np.int64).astype(np.float64)
        if nsteps % save_every:
            ks = np.append(ks, float(nsteps))
    ks.flags.writeable = False
    return ks


def save_every_arg(save_every: int | str | None, int_arg: Callable[[Any, str, int], int]) -> int:
    """``save_every`` as the compiled loops take it: an integer >= 1, or 0 for ``None`` /
    ``"final"`` (keep the final state only)."""
    if type(save_every) is int and save_every >= 1:      # (the usual call, at once)
        return save_every
    if save_every is None or (isinstance(save_every, str) and save_every == "final"):
        return 0
    if isinstance(save_every, str):
        raise ValueError(f"save_every must be a positive integer, None or 'final', got {save_every!r}")
    return int_arg(save_every, "save_every", 1)


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


def _size(nbytes: float) -> str:
    for unit, scale in (("TiB", 2.0**40), ("GiB", 2.0**30), ("MiB", 2.0**20)):
        if nbytes >= scale:
            return f"{nbytes / scale:.1f} {unit}"
    return f"{nbytes / 1024:.1f} KiB"


def kept_count(nsteps: int, save_every: int) -> int:
    """``len(kept_steps(nsteps, save_every))``, without making the array."""
    if save_every == 0:
        return 1
    return nsteps // save_every + 1 + (1 if nsteps % save_every else 0)


def check_kept_states(kept: int, n: int, values: int, where: str = "") -> None:
    """Raise ValueError before allocating when ``kept`` states (and their times) of ``n``
    bodies of ``values`` float64 each would not fit in the memory available, saying what they
    would take and pointing to ``save_every``. ``where``: added to the message (e.g. a dask
    chunk)."""
    need = 8.0 * kept * (n * values + 3)          # (the times, and two temporaries of them)
    if need < 2.0**26:                  # (64 MiB: always allowed, no system call)
        return
    free = available_memory()
    if need <= 0.9 * free:
        return
    raise ValueError(f"the kept states would take {_size(need)} ({kept} states of {n} "
                     f"bod{'y' if n == 1 else 'ies'}{where}, {values} values each), more than the "
                     f"memory available ({_size(free)}): keep fewer with save_every (every k-th "
                     "state; save_every=None keeps the final state only) or run fewer bodies "
                     "at a time")


def _tqdm_class() -> Any:
    try:
        from tqdm.auto import tqdm
    except ImportError:
        return None
    return tqdm


class _Plain:
    """A progress line on stderr, redrawn at most every PLAIN_INTERVAL seconds."""

    def __init__(self, total_steps: int, n: int, label: str) -> None:
        self.total, self.n, self.label = total_steps, max(n, 1), label
        self.start = self.last = time.perf_counter()
        self.done = 0.0

    def update(self, work: float) -> None:
        self.done += work
        now = time.perf_counter()
        if now - self.last >= PLAIN_INTERVAL:
            self.last = now
            self._draw(now, "\r")

    def _draw(self, now: float, end: str) -> None:
        steps = self.done / self.n
        pct = 100.0 * steps / self.total if self.total else 100.0
        sys.stderr.write(f"\r{self.label}: {pct:5.1f}% ({steps:.0f}/{self.total} steps, "
                         f"{now - self.start:.1f} s)" + ("\n" if end == "\n" else ""))
        sys.stderr.flush()

    def close(self) -> None:
        self._draw(time.perf_counter(), "\n")


class Progress:
    """Progress of a run of ``total_steps`` steps of ``n`` bodies, counted in body-steps:
    a tqdm bar when tqdm is installed, a plain line on stderr otherwise; nothing when
    ``enabled`` is false."""

    def __init__(self, enabled: bool, total_steps: int, n: int, label: str) -> None:
        self.bar: Any = None
        if not enabled:
            return
        tqdm = _tqdm_class()
        if tqdm is None:
            self.bar = _Plain(total_steps, n, label)
        else:
            self.bar = tqdm(total=total_steps * n, desc=label, unit="body-step", unit_scale=True,
                            file=sys.stderr, leave=True)

    def update(self, work: float) -> None:
        if self.bar is not None:
            self.bar.update(work)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()
            self.bar = None


def check_progress(progress: bool) -> bool:
    if not isinstance(progress, bool):
        raise TypeError(f"progress must be True or False, got {progress!r}")
    return progress


def run(advance: Advance, nsteps: int, n: int, *, align: int = 1, split_bodies: bool = True,
        threads: int = 1, progress: bool = False, label: str = "frb",
        first_work: int | None = None) -> tuple[Any, ...] | None:
    """Run steps 1..nsteps of n bodies through ``advance(b_first, b_last, k_first, k_last)``,
    which takes the steps ``k_first + 1 .. k_last`` of the bodies ``b_first .. b_last - 1``
    (0-based) in one compiled call and returns None, or on failure a tuple ordered by
    (step, body, ...).

    The bodies go in blocks (multiples of ``align`` bodies, at least CHUNKS_PER_THREAD times
    ``align`` per thread, only with ``split_bodies``), each block through all its steps before the next one, in calls of about
    TARGET_SECONDS: a short run of a block is one call from its initial state. After a failure
    at step s the later blocks run up to step s - 1 only (a failure there would come earlier),
    so the failure returned is the earliest (smallest step, then smallest body), whatever the
    blocks and calls; None when every body ran through. ``first_work``: the body-steps of the
    first call (and the largest run made in one call; default FIRST_WORK)."""
    if first_work is None:
        first_work = FIRST_WORK
    if not progress and 0 < n * nsteps <= first_work:
        # a short run is one call (what the loop below makes of it, without its bookkeeping)
        return advance(0, n, 0, nsteps)
    bar = Progress(progress, nsteps, n, label)
    try:
        work = float(first_work)     # body-steps of the next call
        limit = nsteps               # steps every block must reach (lowered by a failure)
        failure = None
        smallest = align * max(1, CHUNKS_PER_THREAD * threads)
        b0 = 0
        while b0 < n and limit > 0:
            if split_bodies:
                block = max(smallest, int(work // limit) // align * align)
            else:
                block = n
            b1 = min(n, b0 + block)
            k = 0
            while k < limit:
                ns = int(max(1, min(limit - k, work // (b1 - b0))))
                start = time.perf_counter()
                fail = advance(b0, b1, k, k + ns)
                elapsed = time.perf_counter() - start
                done = float(b1 - b0) * ns
                bar.update(done)
                # the next call's work from this one's speed (at most MAX_GROWTH times more)
                rate = done / max(elapsed, 1e-6)
                work = max(1.0, min(rate * TARGET_SECONDS, MAX_GROWTH * max(work, done)))
                if fail is not None:
                    failure = fail if failure is None else min(failure, fail)
                    limit = fail[0] - 1
                    break
                k += ns
            b0 = b1
        return failure
    finally:
        bar.close()
