"""Cost of every method of frb.integrate per body-step, relative to DMV6.

    python benchmarks/methods.py [--n 10000] [--steps 20] [--reps 5] [--out benchmarks/results]

A batch of n random bodies (momenta of norm 1, random attitudes, moments in [0.8, 2.6]),
h = 0.05, ``steps`` steps of frb.integrate with save_every = steps (only the first and last
states are kept), torque-free and with ``heavy_top(1, (0, 0, 1))``. Every figure is the
median over the repetitions of the per-repetition ratio to DMV6 under the same torque, the
calls of one repetition interleaved in a random order (these machines are noisy; absolute
times drift). Also printed: a vectorised user torque (numpy, the heavy top written as a
callable) against the built-in heavy top, for RKN6_14, STRANG and RK4. Writes method_comparison.md.
"""
from __future__ import annotations

import argparse
import os
import platform
import time
from pathlib import Path

for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import numpy as np  # noqa: E402

import frb  # noqa: E402
from frb.torques import heavy_top  # noqa: E402

H = 0.05


def bodies(n, rng=1):
    rng = np.random.default_rng(rng)
    m = rng.normal(size=(n, 3))
    m /= np.linalg.norm(m, axis=1, keepdims=True)
    q = rng.normal(size=(n, 4))
    q /= np.linalg.norm(q, axis=1, keepdims=True)
    inertia = rng.uniform(0.8, 2.6, size=(n, 3))
    return m, q, inertia


def top_user(t, Q):
    """The heavy top of weight 1, centre (0, 0, 1), as a vectorised user torque."""
    u = Q[:, 2, :]
    return np.stack([u[:, 1], -u[:, 0], np.zeros(len(u))], axis=1)


def timed(fn):
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--n", type=int, default=10000)
    ap.add_argument("--steps", type=int, default=20)
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--out", default=str(Path(__file__).resolve().parent / "results"))
    args = ap.parse_args(argv)
    m, q, inertia = bodies(args.n)
    top = heavy_top(1.0, [0.0, 0.0, 1.0])
    methods = [name for name in frb.METHODS]
    cases = {}
    for name in methods:
        for label, torque in (("free", None), ("heavy top", top)):
            if name == "EXACT" and torque is not None:
                continue
            cases[(name, label)] = (name, torque)
    for name in ("RKN6_14", "STRANG", "RK4"):
        cases[(name, "user torque")] = (name, top_user)

    def run(name, torque):
        return lambda: frb.integrate(m, q, inertia, H, args.steps, method=name, torque=torque,
                                     save_every=args.steps)

    # warm up, and drop methods this build does not have
    for key, (name, torque) in list(cases.items()):
        try:
            frb.integrate(m[:8], q[:8], inertia[:8], H, 2, method=name, torque=torque)
        except NotImplementedError:
            del cases[key]
    rng = np.random.default_rng(0)
    times = {key: [] for key in cases}
    keys = list(cases)
    for _ in range(args.reps):
        for i in rng.permutation(len(keys)):
            key = keys[i]
            times[key].append(timed(run(*cases[key])) / (args.n * args.steps))
    best = {key: min(v) for key, v in times.items()}

    def ratio(key, ref):
        if ref not in times:
            return float("nan")
        return float(np.median(np.array(times[key]) / np.array(times[ref])))

    lines = [f"# Cost per body-step relative to DMV6 ({platform.processor() or platform.machine()}, "
             f"{os.cpu_count()} cores; n = {args.n}, {args.steps} steps of h = {H}, "
             f"median of {args.reps} interleaved repetitions)", "",
             "| method | free: ns | free / DMV6 | heavy top: ns | heavy top / DMV6 (heavy top) |",
             "|---|---|---|---|---|"]
    for name in methods:
        f, t = (name, "free"), (name, "heavy top")
        if f not in best:
            continue
        cells = [name, f"{best[f] * 1e9:.0f}", f"{ratio(f, ('DMV6', 'free')):.2f}"]
        if t in best:
            cells += [f"{best[t] * 1e9:.0f}", f"{ratio(t, ('DMV6', 'heavy top')):.2f}"]
        else:
            cells += ["-", "-"]
        lines.append("| " + " | ".join(cells) + " |")
    lines += ["", "Vectorised user torque (numpy) / the same torque built in:", ""]
    for name in ("RKN6_14", "STRANG", "RK4"):
        if (name, "user torque") in times:
            lines.append(f"- {name}: {ratio((name, 'user torque'), (name, 'heavy top')):.2f} "
                         f"({best[(name, 'user torque')] * 1e9:.0f} ns a body-step)")
    text = "\n".join(lines) + "\n"
    print(text)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "method_comparison.md").write_text(text)


if __name__ == "__main__":
    main()
