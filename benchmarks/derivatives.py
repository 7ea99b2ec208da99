"""Cost of the exact step with its jacobian against the step alone, side by side.

    python benchmarks/derivatives.py [--bodies 100000] [--repeat 5] [--threads 1]

For each step length h and each of two families of bodies: the batched exact step
(frb.quat_step, the lock-step lanes under the SIMD target in use) and the same step with its
state transition matrix (frb.quat_step(..., jacobian=True): the matrix and d/dh; the derivatives
in the moments are formed only when read), on the same bodies, one thread by default. The
families: random momenta (normal) and random unit quaternions with
  * shared moments (1, 2, 3), and
  * per-body moments, each body its own three moments uniform in [0.5, 3] in random order.
Prints ns per body of processor time (time.process_time: on a machine shared with other work,
wall time would count the waits), the minimum over the repetitions, the two timed alternately,
and their ratio.
"""
from __future__ import annotations

import argparse
import os
import time

import numpy as np

import frb


def best_of(fn, repeat):
    times = []
    for _ in range(repeat):
        t0 = time.process_time()
        fn()
        times.append(time.process_time() - t0)
    return min(times)


def families(n, rng):
    """(name, inertia) of the two families of moments."""
    return (("moments (1, 2, 3)", np.array([1.0, 2.0, 3.0])),
            ("per-body moments", rng.uniform(0.5, 3.0, size=(n, 3))))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--bodies", type=int, default=100_000)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--threads", type=int, default=1)
    args = ap.parse_args()
    rng = np.random.default_rng(0)
    n = args.bodies
    m = rng.normal(size=(n, 3))
    q = rng.normal(size=(n, 4))
    q /= np.linalg.norm(q, axis=1)[:, None]
    print(f"frb {frb.__version__}, SIMD target {frb.cpu_dispatch()}, {n} bodies, "
          f"{args.threads} thread(s), load average {os.getloadavg()[0]:.2f}")
    for name, inertia in families(n, rng):
        print(name)
        print(f"{'h':>6} {'step ns':>9} {'step+jacobian ns':>17} {'ratio':>6}")
        for h in (0.01, 0.1, 1.0, 2.0):
            step = jac = np.inf
            for _ in range(args.repeat):
                step = min(step, best_of(lambda: frb.quat_step(m, q, h, inertia,
                                                               threads=args.threads), 1))
                jac = min(jac, best_of(lambda: frb.quat_step(m, q, h, inertia, jacobian=True,
                                                             threads=args.threads), 1))
            print(f"{h:6.2f} {step / n * 1e9:9.1f} {jac / n * 1e9:17.1f} {jac / step:6.2f}")


if __name__ == "__main__":
    main()
