"""Cost of the exact gyrostat step against the exact free step, per body, side by side.

    python benchmarks/gyrostat.py [--bodies 100000] [--h 0.1,1,10] [--repeats 3] [--ratios -3,3]

For each step h: one thread, the same random bodies (m normal, moments uniform in [0.5, 3]) with
attitudes as quaternions, timed alternately (best of --repeats):
* free: frb._testing.quat_integrate_batch (the lock-step exact free flow, SIMD dispatch), one step;
* gyrostat: frb._testing.gyrostat_quat_batch (gyrostat_flow.gyrostat_step body by body) with
  rotors of random direction and |h_r| / |m| log-uniform in [10^a, 10^b] (--ratios a,b; default
  -3,3);
* through frb.integrate(method="EXACT", torque=rotor(h_r)) (the prepared run, checks included).
Prints ns per body-step and the ratio gyrostat / free. Needs the build option -Dtesting=true.
"""
from __future__ import annotations

import argparse
import time

import numpy as np

import frb
from frb import _testing
from frb.torques import rotor


def best(f, repeats):
    t = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        f()
        t.append(time.perf_counter() - t0)
    return min(t)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--bodies", type=int, default=100_000)
    ap.add_argument("--h", default="0.1,1,10")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--ratios", default="-3,3",
                    help="log10 of the range of |h_r| / |m| (log-uniform), or one value")
    args = ap.parse_args()
    n = args.bodies
    rng = np.random.default_rng(1)
    m = rng.normal(size=(n, 3))
    q = rng.normal(size=(n, 4))
    q /= np.linalg.norm(q, axis=1)[:, None]
    inertia = rng.uniform(0.5, 3.0, size=(n, 3))
    hr = rng.normal(size=(n, 3))
    lo, hi = (float(x) for x in (args.ratios.split(",") * 2)[:2])
    hr *= (10 ** rng.uniform(lo, hi, size=(n, 1))) * np.linalg.norm(m, axis=1)[:, None] / \
        np.linalg.norm(hr, axis=1)[:, None]
    mT, qT, IT, hT = (np.asfortranarray(a.T) for a in (m, q, inertia, hr))
    print(f"{n} bodies, one thread, ns per body-step (best of {args.repeats})")
    print(f"{'h':>6} {'free':>9} {'gyrostat':>9} {'ratio':>6} {'integrate':>10} {'ratio':>6}")
    for h in (float(x) for x in args.h.split(",")):
        hv = np.array([h])
        free = gyro = run = np.inf
        for _ in range(args.repeats):
            free = min(free, best(lambda: _testing.quat_integrate_batch(
                mT, qT, hv, IT, 0, 1, threads=1), 1))
            gyro = min(gyro, best(lambda: _testing.gyrostat_quat_batch(
                mT, qT, hT, hv, IT, threads=1), 1))
            run = min(run, best(lambda: frb.integrate(
                m, q, inertia, h, 1, method="EXACT", torque=rotor(hr), save_every="final",
                threads=1), 1))
        ns = 1e9 / n
        print(f"{h:>6g} {free * ns:>9.0f} {gyro * ns:>9.0f} {gyro / free:>6.2f} "
              f"{run * ns:>10.0f} {run / free:>6.2f}")


if __name__ == "__main__":
    main()
