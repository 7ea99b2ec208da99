"""Cost of trajectory sensitivities against the run alone, side by side.

    python benchmarks/sensitivities.py [--bodies 10000] [--steps 20] [--repeat 3] [--threads 1]

For RK4, STRANG, YOSHIDA4 with a heavy top and with the gravity gradient, RK4 free and EXACT
free and damped: frb.integrate of the same bodies (random momenta, moments (1, 2, 3), random
unit quaternions, h = 0.05, the last state kept) alone, with ``sensitivities=True`` (the state
transition matrix Phi, 6 columns) and with every part (Phi, h, the moments, the torque's
parameters), one thread by default. Prints ns per body-step of processor time
(time.process_time: on a shared machine wall time would count the waits), the minimum over the
repetitions, the runs timed alternately, and the ratios to the run alone. With frb._testing (a
build with -Dtesting=true) the RK4 rows add Phi with the lane steps turned off (the one-body
tangent code, "+Phi 1b").
"""
from __future__ import annotations

import argparse
import os
import time

import numpy as np

import frb
from frb import torques

try:
    from frb import _testing
except ImportError:                                   # a build without -Dtesting=true
    _testing = None

HEAVY_TOP = ("heavy top", lambda: torques.heavy_top(9.81, [0.0, 0.0, 1.0]))
GRADIENT = ("gravity gradient", lambda: torques.gravity_gradient(0.8))
CASES = [
    ("RK4", *HEAVY_TOP),
    ("RK4", *GRADIENT),
    ("STRANG", *HEAVY_TOP),
    ("STRANG", *GRADIENT),
    ("YOSHIDA4", *HEAVY_TOP),
    ("YOSHIDA4", *GRADIENT),
    ("RK4", "free", None),
    ("EXACT", "free", None),
    ("EXACT", "damping", lambda: torques.linear_damping(0.2)),
]


def timed(fn):
    t0 = time.process_time()
    fn()
    return time.process_time() - t0


def lanes(on):
    if _testing is not None:
        _testing.lane_steps_use(1 if on else 0)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--bodies", type=int, default=10_000)
    ap.add_argument("--steps", type=int, default=20)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--threads", type=int, default=1)
    args = ap.parse_args()
    rng = np.random.default_rng(0)
    n, k = args.bodies, args.steps
    m = rng.normal(size=(n, 3))
    q = rng.normal(size=(n, 4))
    q /= np.linalg.norm(q, axis=1)[:, None]
    inertia = np.array([1.0, 2.0, 3.0])
    print(f"frb {frb.__version__}, SIMD target {frb.cpu_dispatch()}, {n} bodies x {k} steps, "
          f"{args.threads} thread(s), load average {os.getloadavg()[0]:.2f}")
    print(f"{'method':>9} {'torque':>17} {'run ns':>8} {'+Phi ns':>9} {'ratio':>6} "
          f"{'+all ns':>9} {'ratio':>6} {'+Phi 1b ns':>11} {'ratio':>6}")
    for method, name, make in CASES:
        tq = make() if make else None
        every = ("state", "h", "inertia") + (("torque",) if tq is not None else ())
        base = dict(method=method, torque=tq, save_every=None, threads=args.threads)
        runs = [(None, True), (True, True), (every, True)]
        if method == "RK4" and _testing is not None:
            runs.append((True, False))
        best = [np.inf] * len(runs)
        for _ in range(args.repeat):
            for i, (sens, on) in enumerate(runs):
                lanes(on)
                try:
                    best[i] = min(best[i], timed(lambda: frb.integrate(
                        m, q, inertia, 0.05, k, sensitivities=sens, **base)))
                finally:
                    lanes(True)
        ns = [b / (n * k) * 1e9 for b in best]
        line = (f"{method:>9} {name:>17} {ns[0]:8.1f} {ns[1]:9.1f} {ns[1] / ns[0]:6.2f} "
                f"{ns[2]:9.1f} {ns[2] / ns[0]:6.2f}")
        if len(ns) > 3:
            line += f" {ns[3]:11.1f} {ns[3] / ns[0]:6.2f}"
        print(line, flush=True)


if __name__ == "__main__":
    main()
