"""frb.integrate (RK4, TERZE) against the hand-written loops of benchmarks/explicit_harness.f90.

Builds the harness with gfortran (the flags of meson.build: -O3 -funroll-loops), runs it and
frb.integrate on the same random bodies (torque-free and the heavy top of weight 1, centre
(0, 0, 1)), checks that both give the same final states and prints ns per body-step and the
ratio frb / harness (the target: within 2x). Skips with a message if gfortran is missing.

    python benchmarks/explicit_vs_harness.py [n_bodies] [n_steps]
"""
from __future__ import annotations

import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

import frb
from frb.torques import heavy_top

HERE = Path(__file__).resolve().parent
FLAGS = ["-O3", "-funroll-loops"]


def bodies(n, rng=12345):
    rng = np.random.default_rng(rng)
    m = rng.normal(size=(n, 3))
    inertia = rng.uniform(0.5, 2.0, size=(n, 3))
    q = rng.normal(size=(n, 4))
    q /= np.linalg.norm(q, axis=1, keepdims=True)
    return m, q, inertia


def time_frb(method, m, q, inertia, h, nsteps, torque, reps=3):
    best = np.inf
    for _ in range(reps):
        t0 = time.perf_counter()
        tr = frb.integrate(m, q, inertia, h, nsteps, method=method, torque=torque,
                           save_every=nsteps)
        best = min(best, time.perf_counter() - t0)
    return 1e9 * best / (len(m) * nsteps), tr


def main(n=10_000, nsteps=100, h=0.05):
    gfortran = shutil.which("gfortran")
    if gfortran is None:
        print("gfortran not found: skipping the hand-written harness comparison")
        return 0
    m, q, inertia = bodies(n)
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        exe = tmp / "harness"
        subprocess.run([gfortran, *FLAGS, "-o", str(exe), str(HERE / "explicit_harness.f90")],
                       check=True, cwd=tmp)
        with open(tmp / "in.txt", "w") as f:
            f.write(f"{n} {nsteps} {h!r}\n")
            for j in range(n):
                f.write(" ".join(repr(float(x)) for x in (*m[j], *q[j], *inertia[j])) + "\n")
        out = subprocess.run([str(exe), str(tmp / "in.txt"), str(tmp / "out.txt")],
                             check=True, capture_output=True, text=True).stdout
        final = np.loadtxt(tmp / "out.txt").reshape(4, n, 7)
    harness = {}
    for line in out.split("\n"):
        if line.strip():
            meth, tq, ns = line.split()
            harness[meth, tq] = float(ns)

    print(f"{n} random bodies, {nsteps} steps of h = {h}; gfortran {' '.join(FLAGS)}")
    print(f"{'method':7s} {'torque':6s} {'frb ns':>9s} {'harness ns':>11s} {'ratio':>6s} "
          f"{'max |frb - harness|':>20s}")
    case = 0
    for meth in ("RK4", "TERZE"):
        for tname, torque in (("free", None), ("heavy", heavy_top(1.0, (0.0, 0.0, 1.0)))):
            ns, tr = time_frb(meth, m, q, inertia, h, nsteps, torque)
            diff = max(np.abs(tr.m[-1] - final[case, :, :3]).max(),
                       np.abs(tr.q[-1] - final[case, :, 3:]).max())
            ref = harness[meth, tname]
            print(f"{meth:7s} {tname:6s} {ns:9.1f} {ref:11.1f} {ns / ref:6.2f} {diff:20.2e}")
            case += 1
    for meth in ("DMV6", "STRANG"):
        if meth in frb.METHODS:
            for tname, torque in (("free", None), ("heavy", heavy_top(1.0, (0.0, 0.0, 1.0)))):
                try:
                    ns, _ = time_frb(meth, m, q, inertia, h, nsteps, torque, reps=1)
                    print(f"{meth:7s} {tname:6s} {ns:9.1f}  (frb.integrate, for comparison)")
                except NotImplementedError:
                    print(f"{meth:7s} {tname:6s} not available in this build")
    return 0


if __name__ == "__main__":
    sys.exit(main(*(int(a) for a in sys.argv[1:3])))
