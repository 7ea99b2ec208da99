"""Instructions per body-step of the batched compiled loop (quat_integrate_batch), exact
(quadrature 0) and semi-exact (1..5), counted by valgrind's callgrind: reproducible on a noisy
machine, where timings of one run vary by tens of percent.

Each count runs the loop of 2,000 unit momenta (moments (0.8, 1.7, 2.6)) for 20 steps on one
thread under callgrind, collecting only inside the loop's OpenMP body (library calls included).

    python benchmarks/callgrind_steps.py [--h 0.1] [--steps 20] [--quadratures 0,1,2,3,4,5]
    python benchmarks/callgrind_steps.py --targets baseline,avx2,avx512 [--h 0.1] [--n 20000]

The second form counts one call of frb.quat_step and of frb.frb_step (exact, n bodies, one thread)
under each SIMD target (FRB_CPU_TARGET), collecting inside the compiled run (engine_whole: the
input checks and the steps), and prints the instructions per body split by routine (the
routines' own instructions, callgrind_annotate; routines under half an instruction a body left
out). valgrind runs no AVX-512: under it the CPU reports AVX2 at most (cpu_features.c), so an
avx512 column repeats avx2's.

Needs valgrind on PATH. For the split by part of the step, build with -g (meson setup
-Dfortran_args=-g; the generated code is the same) and run callgrind_annotate on the output.
"""
from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

DRIVER = """
import sys, numpy as np, frb, frb._testing
n, steps, quad, h = 2000, int(sys.argv[1]), int(sys.argv[2]), float(sys.argv[3])
rng = np.random.default_rng(3)
m = rng.normal(size=(n, 3)); m /= np.linalg.norm(m, axis=1, keepdims=True)
q = rng.normal(size=(n, 4)); q /= np.linalg.norm(q, axis=1, keepdims=True)
frb._testing.quat_integrate_batch(m.T, q.T, np.array([h]), np.array([[0.8], [1.7], [2.6]]), quad,
                                  steps, threads=1)
"""


def count(quad, h, steps, tmp):
    """Instructions per body-step for one quadrature."""
    driver = tmp / "driver.py"
    driver.write_text(DRIVER)
    out = subprocess.run(["valgrind", "--tool=callgrind", "--toggle-collect=*flow_batch._omp_fn.*",
                          f"--callgrind-out-file={tmp / 'cg.out'}", sys.executable, str(driver),
                          str(steps), str(quad), repr(h)], capture_output=True, text=True, check=True)
    collected = int(re.search(r"Collected : (\d+)", out.stderr).group(1))
    return collected / (2000 * steps)


STEP_DRIVER = """
import sys, numpy as np, frb
n, h, form = int(sys.argv[1]), float(sys.argv[2]), sys.argv[3]
rng = np.random.default_rng(2026)
m = np.abs(rng.normal(size=(n, 3))); m /= np.linalg.norm(m, axis=1)[:, None]
q = rng.normal(size=(n, 4)); q /= np.linalg.norm(q, axis=1)[:, None]
inertia = np.array([0.8, 1.7, 2.6])
if form == "quaternion":
    frb.quat_step(m, q, h, inertia, threads=1)
else:
    frb.frb_step(m, frb.quat_to_matrix(q), h, inertia, threads=1)
"""


def count_routines(target, form, h, n, tmp):
    """{routine: instructions per body} of one step call under target (callgrind_annotate)."""
    driver = tmp / "step_driver.py"
    driver.write_text(STEP_DRIVER)
    out_file = tmp / f"cg_{target}_{form}.out"
    env = dict(os.environ, FRB_CPU_TARGET=target, OMP_NUM_THREADS="1")
    subprocess.run(["valgrind", "--tool=callgrind", "--toggle-collect=engine_whole_",
                    f"--callgrind-out-file={out_file}", sys.executable, str(driver), str(n),
                    repr(h), form], capture_output=True, text=True, check=True, env=env)
    text = subprocess.run(["callgrind_annotate", "--threshold=100", str(out_file)],
                          capture_output=True, text=True, check=True).stdout
    routines = {}
    for line in text.splitlines():
        match = re.match(r"\s*([\d,]+)\s+\([\s\d.]+%\)\s+(\S+?):(\S+)", line)
        if match and match.group(2) != "PROGRAM":
            name = match.group(3).split("_MOD_")[-1] if "_MOD_" in match.group(3) else match.group(3)
            module = re.sub(r"^__", "", match.group(3).split("_MOD_")[0]) if "_MOD_" in match.group(3) else ""
            key = f"{module}.{name}" if module else name
            routines[key] = routines.get(key, 0) + int(match.group(1).replace(",", "")) / n
    return routines


def main_targets(targets, h, n):
    with tempfile.TemporaryDirectory() as tmp:
        for form in ("quaternion", "matrix"):
            counts = {t: count_routines(t, form, h, n, Path(tmp)) for t in targets}
            print(f"exact step, {form}, h = {h}: instructions per body ({n} bodies, one call)")
            print(f"   {'routine':60s} " + " ".join(f"{t:>9s}" for t in targets))
            names = sorted({k for c in counts.values() for k in c},
                           key=lambda k: -max(c.get(k, 0) for c in counts.values()))
            for name in names:
                if max(c.get(name, 0) for c in counts.values()) < 0.5:
                    continue
                cells = " ".join(f"{counts[t].get(name, 0):9.1f}" for t in targets)
                print(f"   {name[:60]:60s} {cells}")
            print(f"   {'total':60s} " + " ".join(f"{sum(counts[t].values()):9.1f}" for t in targets))
    return 0


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--h", type=float, default=0.1)
    p.add_argument("--steps", type=int, default=20)
    p.add_argument("--quadratures", default="0,1,2,3,4,5",
                   help="the quadratures counted (0 exact, 1..5 semi-exact), comma-separated")
    p.add_argument("--targets", default="",
                   help="SIMD targets (e.g. baseline,avx2,avx512): count frb.quat_step and "
                        "frb.frb_step per routine instead")
    p.add_argument("--n", type=int, default=20000, help="bodies of the step calls (--targets)")
    a = p.parse_args(argv)
    if a.targets:
        if shutil.which("valgrind") is None:
            print("valgrind not found")
            return 1
        return main_targets(a.targets.split(","), a.h, a.n)
    quads = [int(k) for k in a.quadratures.split(",")]
    if shutil.which("valgrind") is None:
        print("valgrind not found")
        return 1
    with tempfile.TemporaryDirectory() as tmp:
        counts = [count(k, a.h, a.steps, Path(tmp)) for k in quads]
    print(f"h = {a.h}: instructions per body-step (quat_integrate_batch, 2,000 bodies, {a.steps} steps)")
    print("   " + " ".join(f"{'q' + str(k):>7s}" for k in quads))
    print("   " + " ".join(f"{c:7.0f}" for c in counts))
    if quads[0] == 0 and len(quads) > 1:
        print("   ratio to exact " + " ".join(f"{c / counts[0]:5.2f}" for c in counts[1:]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
