"""Progress of a long run: a tqdm bar when tqdm is installed, a plain line on stderr otherwise."""
from __future__ import annotations

import sys
import time
from typing import Any

__all__ = ["Progress", "PLAIN_INTERVAL"]

#: Seconds between two redraws of the plain progress line.
PLAIN_INTERVAL = 0.5


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


