"""Cost of trajectory sensitivities against the run alone, side by side.

    python benchmarks/sensitivities.py [--bodies 10000] [--steps 20] [--repeat 3] [--threads 1]

For each supported method and torque: frb.integrate of the same bodies (random momenta, moments
(1, 2, 3), random unit quaternions, h = 0.05, the last state kept) alone, with
``sensitivities=True`` (the state transition matrix Phi, 6 columns) and with every part
(Phi, h, the moments, the torque's parameters), one thread by default. Prints ns per body-step of
processor time (time.process_time: on a shared machine wall time would count the waits), the
minimum over the repetitions, the runs timed alternately, and the ratios to the run alone.
"""
from __future__ import annotations

import argparse
import os
import time

import numpy as np

import frb
from frb import torques

CASES = [
    ("EXACT", None),
    ("EXACT", lambda: torques.linear_damping(0.2)),
    ("STRANG", lambda: torques.gravity_gradient(0.8)),
    ("RK4", lambda: torques.rotor([0.1, -0.2, 0.3])),
    ("YOSHIDA4", lambda: torques.constant_field([0.2, -0.1, 0.4])),
    ("RK4", None),
    ("RK4", lambda: torques.constant_field([0.2, -0.1, 0.4])),
]


def timed(fn):
    t0 = time.process_time()
    fn()
    return time.process_time() - t0


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
    print(f"{'method':>9} {'torque':>16} {'run ns':>8} {'+Phi ns':>9} {'ratio':>6} "
          f"{'+all ns':>9} {'ratio':>6}")
    for method, make in CASES:
        tq = make() if make else None
        every = ("state", "h", "inertia") + (("torque",) if tq is not None else ())
        base = dict(method=method, torque=tq, save_every=None, threads=args.threads)
        best = [np.inf] * 3
        for _ in range(args.repeat):
            for i, sens in enumerate((None, True, every)):
                best[i] = min(best[i], timed(lambda: frb.integrate(m, q, inertia, 0.05, k,
                                                                   sensitivities=sens, **base)))
        ns = [b / (n * k) * 1e9 for b in best]
        name = type(tq).__name__ if tq is not None else "free"
        print(f"{method:>9} {name:>16} {ns[0]:8.1f} {ns[1]:9.1f} {ns[1] / ns[0]:6.2f} "
              f"{ns[2]:9.1f} {ns[2] / ns[0]:6.2f}")


if __name__ == "__main__":
    main()
