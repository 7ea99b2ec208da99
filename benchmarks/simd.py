"""Cost of the batched flows under each SIMD target this CPU supports (frb.simd).

    python benchmarks/simd.py [--n 100000] [--reps 7] [--out benchmarks/results]
                              [--routes exact-quaternion,...] [--h 0.1,1]

One thread, a batch of n bodies (unit momenta uniform on the sphere in the first octant,
inertia (0.8, 1.7, 2.6), random attitudes), one call per figure: the exact step (quaternion and
matrix forms), the semi-exact step with 3 nodes, and 10 steps of DMV order 6
(frb.dmv_integrate), at h in {0.01, 0.1, 1, 2} (DMV up to h = 1: beyond, its equation has no
solution for some of these bodies). The targets are switched in one process
(frb.set_cpu_target) and their calls interleaved in each repetition, so that a ratio compares
calls made under the same load; the ratio to the baseline is the median over the repetitions of
the per-repetition ratios (CPU time of the process), the ns per body-step the minimum. The
results of every target are checked to be those of the baseline bit for bit.

Prints a Markdown table and writes it to --out/simd.md (--routes, --h: a part of the table, e.g.
--routes exact-quaternion --h 0.1,1; the routes by the names of ROUTE_KEYS).
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import time
from datetime import datetime
from pathlib import Path

os.environ.setdefault("OMP_NUM_THREADS", "1")

import numpy as np  # noqa: E402

import frb  # noqa: E402

H_VALUES = (0.01, 0.1, 1.0, 2.0)
ROUTE_KEYS = ("exact-quaternion", "exact-matrix", "semi-exact", "dmv")
INERTIA = np.array([0.8, 1.7, 2.6])
DMV_STEPS = 10


def _bodies(n: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(2026)
    m = np.abs(rng.normal(size=(n, 3)))
    m /= np.linalg.norm(m, axis=1)[:, None]
    q = rng.normal(size=(n, 4))
    q /= np.linalg.norm(q, axis=1)[:, None]
    return m, q


def _routes(m: np.ndarray, q: np.ndarray) -> dict[str, tuple[int, object]]:
    """name -> (body-steps of one call, call(h))."""
    Q = frb.quat_to_matrix(q)
    n = len(m)
    return {
        "exact, quaternion": (n, lambda h: frb.quat_step(m, q, h, INERTIA, threads=1)),
        "exact, matrix": (n, lambda h: frb.frb_step(m, Q, h, INERTIA, threads=1)),
        "semi-exact, 3 nodes": (n, lambda h: frb.quat_step(m, q, h, INERTIA, quadrature=3,
                                                           threads=1)),
        f"DMV6, {DMV_STEPS} steps": (n * DMV_STEPS, lambda h: frb.dmv_integrate(
            m, q, INERTIA, h, DMV_STEPS, order=6, threads=1)),
    }


def _cpu_model() -> str:
    try:
        with open("/proc/cpuinfo", encoding="ascii", errors="replace") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=100_000, help="bodies (default 1e5)")
    parser.add_argument("--reps", type=int, default=7, help="repetitions (default 7)")
    parser.add_argument("--out", type=Path, default=Path(__file__).resolve().parent / "results")
    parser.add_argument("--routes", default=",".join(ROUTE_KEYS),
                        help="routes to time, of " + ", ".join(ROUTE_KEYS) + " (default all)")
    parser.add_argument("--h", default=",".join(f"{h:g}" for h in H_VALUES),
                        help="steps (default 0.01,0.1,1,2)")
    args = parser.parse_args()
    keys = args.routes.split(",")
    if not set(keys) <= set(ROUTE_KEYS):
        parser.error(f"--routes: unknown route in {args.routes!r} (known: {', '.join(ROUTE_KEYS)})")
    h_values = [float(h) for h in args.h.split(",")]

    targets = frb.simd.supported_cpu_targets()
    before = frb.cpu_dispatch()
    m, q = _bodies(args.n)
    rows = []
    for key, (name, (work, call)) in zip(ROUTE_KEYS, _routes(m, q).items()):
        if key not in keys:
            continue
        for h in h_values:
            if name.startswith("DMV") and h > 1:
                continue         # (the DMV equation has no solution for some of these bodies)
            best = {t: float("inf") for t in targets}
            ratios: dict[str, list[float]] = {t: [] for t in targets}
            results = {}
            for _ in range(args.reps):
                spent = {}
                for target in targets:
                    frb.set_cpu_target(target)
                    start = time.process_time()
                    results[target] = call(h)
                    spent[target] = time.process_time() - start
                    best[target] = min(best[target], spent[target])
                for target in targets:
                    ratios[target].append(spent[target] / spent["baseline"])
            for target in targets[1:]:
                for a, b in zip(results[target], results["baseline"]):
                    if not np.array_equal(a, b):
                        raise SystemExit(f"{name}, h = {h}: {target} differs from the baseline")
            rows.append((name, h, {t: best[t] / work * 1e9 for t in targets},
                         {t: statistics.median(ratios[t]) for t in targets}))
    frb.set_cpu_target(before)

    load = os.getloadavg() if hasattr(os, "getloadavg") else (float("nan"),) * 3
    lines = [
        "# The batched flows under each SIMD target",
        "",
        f"Generated by `benchmarks/simd.py` on {datetime.now():%Y-%m-%d %H:%M}: {_cpu_model()}, "
        f"{os.cpu_count()} cores, targets supported: {', '.join(targets)}; frb {frb.__version__}, "
        f"numpy {np.__version__}, Python {platform.python_version()}. One thread, "
        f"{args.n} bodies, {args.reps} repetitions, load average at the end "
        f"{load[0]:.2f}. ns per body-step (minimum over the repetitions), and in brackets the "
        "ratio to the baseline (median of the per-repetition ratios). Every target's results "
        "are the baseline's bit for bit (checked here).",
        "",
        "| route | h | " + " | ".join(targets) + " |",
        "|---|---:|" + "---:|" * len(targets),
    ]
    for name, h, ns, ratio in rows:
        cells = [f"{ns[t]:.1f}" + ("" if t == "baseline" else f" ({ratio[t]:.2f})")
                 for t in targets]
        lines.append(f"| {name} | {h:g} | " + " | ".join(cells) + " |")
    text = "\n".join(lines) + "\n"
    print(text)
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "simd.md").write_text(text, encoding="utf-8")


if __name__ == "__main__":
    main()
