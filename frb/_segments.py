"""Long compiled runs entered in segments: Ctrl-C, progress and the kept states.

A compiled time loop (``frb.integrate``'s engine, ``frb.dmv_integrate``, the compiled loop of
``frb.splitting.integrate``) is called for a segment of steps (and, for a large batch, of
bodies) at a time, each call about :data:`TARGET_SECONDS` of work, with the state carried from
one call to the next. Between two calls Python runs, so Ctrl-C (KeyboardInterrupt) stops a run
within a fraction of a second and a progress bar can be updated. Every body's arithmetic is
independent of where the segments start and end, so a run in segments gives the results of a
run in one call bit for bit.
"""
from __future__ import annotations

import sys
import time

import numpy as np

#: Wall time aimed at for one compiled call between two returns to Python (seconds).
TARGET_SECONDS = 0.1
#: Body-steps of the first call of a run (a few milliseconds for the slowest methods); the
#: later calls are sized from the measured speed of the previous ones.
FIRST_WORK = 1 << 14
#: Largest growth of the work of a call over the previous one.
MAX_GROWTH = 4.0
#: Seconds between two redraws of the plain progress line.
PLAIN_INTERVAL = 0.5


def saved_steps(nsteps: int, save_every: int) -> np.ndarray:
    """The step numbers whose states are kept (the numbering of ``save_slot`` in
    ``fortran/parallel.f90``): ``0, save_every, 2 save_every, ...`` and always ``nsteps``;
    only ``nsteps`` for ``save_every = 0``."""
    if save_every == 0:
        return np.array([nsteps], dtype=np.int64)
    ks = np.arange(0, nsteps + 1, save_every, dtype=np.int64)
    if nsteps % save_every:
        ks = np.append(ks, nsteps)
    return ks


def save_every_arg(save_every, int_arg):
    """``save_every`` as the compiled loops take it: an integer >= 1, or 0 for ``None`` /
    ``"final"`` (keep the final state only)."""
    if save_every is None or (isinstance(save_every, str) and save_every == "final"):
        return 0
    if isinstance(save_every, str):
        raise ValueError(f"save_every must be a positive integer, None or 'final', got {save_every!r}")
    return int_arg(save_every, "save_every", 1)


def _tqdm_class():
    try:
        from tqdm.auto import tqdm
    except ImportError:
        return None
    return tqdm


class _Plain:
    """A progress line on stderr, redrawn at most every PLAIN_INTERVAL seconds."""

    def __init__(self, total_steps, n, label):
        self.total, self.n, self.label = total_steps, max(n, 1), label
        self.start = self.last = time.perf_counter()
        self.done = 0.0

    def update(self, work):
        self.done += work
        now = time.perf_counter()
        if now - self.last >= PLAIN_INTERVAL:
            self.last = now
            self._draw(now, "\r")

    def _draw(self, now, end):
        steps = self.done / self.n
        pct = 100.0 * steps / self.total if self.total else 100.0
        sys.stderr.write(f"\r{self.label}: {pct:5.1f}% ({steps:.0f}/{self.total} steps, "
                         f"{now - self.start:.1f} s)" + ("\n" if end == "\n" else ""))
        sys.stderr.flush()

    def close(self):
        self._draw(time.perf_counter(), "\n")


class Progress:
    """Progress of a run of ``total_steps`` steps of ``n`` bodies, counted in body-steps:
    a tqdm bar when tqdm is installed, a plain line on stderr otherwise; nothing when
    ``enabled`` is false."""

    def __init__(self, enabled, total_steps, n, label):
        self.bar = None
        if not enabled:
            return
        tqdm = _tqdm_class()
        if tqdm is None:
            self.bar = _Plain(total_steps, n, label)
        else:
            self.bar = tqdm(total=total_steps * n, desc=label, unit="body-step", unit_scale=True,
                            file=sys.stderr, leave=True)

    def update(self, work):
        if self.bar is not None:
            self.bar.update(work)

    def close(self):
        if self.bar is not None:
            self.bar.close()
            self.bar = None


def check_progress(progress):
    if not isinstance(progress, bool):
        raise TypeError(f"progress must be True or False, got {progress!r}")
    return progress


def run(advance, nsteps, n, *, align=1, split_bodies=True, progress=False, label="frb"):
    """Run steps 1..nsteps of n bodies through ``advance(b_first, b_last, k_first, k_last)``,
    which takes the steps ``k_first + 1 .. k_last`` of the bodies ``b_first .. b_last - 1``
    (0-based) in one compiled call and returns None, or on failure a tuple ordered by
    (step, body, ...). A step range is done for every body before the next one starts; body
    blocks (multiples of ``align`` bodies, only with ``split_bodies``) are used when a single
    step of the batch is more work than one call should take. Returns None, or the smallest
    failure of the first step range with one (the run stops there)."""
    bar = Progress(progress, nsteps, n, label)
    try:
        work = float(FIRST_WORK)     # body-steps of the next call
        k = 0
        while k < nsteps:
            if split_bodies and work < n:
                block = max(align, int(work) // align * align)
                ns = 1
            else:
                block = n
                ns = int(max(1, min(nsteps - k, work // max(n, 1))))
            failures = []
            for b0 in range(0, n, block):
                b1 = min(n, b0 + block)
                start = time.perf_counter()
                fail = advance(b0, b1, k, k + ns)
                elapsed = time.perf_counter() - start
                done = float(b1 - b0) * ns
                bar.update(done)
                if fail is not None:
                    failures.append(fail)
                # the next call's work from this one's speed (at most MAX_GROWTH times more)
                rate = done / max(elapsed, 1e-6)
                work = min(rate * TARGET_SECONDS, MAX_GROWTH * done)
            if failures:
                return min(failures)
            k += ns
        return None
    finally:
        bar.close()
