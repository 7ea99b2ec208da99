"""Instructions per body-step of the batched compiled loop (quat_integrate_batch), exact
(quadrature 0) and semi-exact (1..5), counted by valgrind's callgrind: reproducible on a noisy
machine, where timings of one run vary by tens of percent.

Each count runs the loop of 2,000 unit momenta (moments (0.8, 1.7, 2.6)) for 20 steps on one
thread under callgrind, collecting only inside the loop's OpenMP body (library calls included).

    python benchmarks/callgrind_steps.py [--h 0.1] [--steps 20] [--quadratures 0,1,2,3,4,5]

Needs valgrind on PATH. For the split by part of the step, build with -g (meson setup
-Dfortran_args=-g; the generated code is the same) and run callgrind_annotate on the output.
"""
from __future__ import annotations

import argparse
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


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--h", type=float, default=0.1)
    p.add_argument("--steps", type=int, default=20)
    p.add_argument("--quadratures", default="0,1,2,3,4,5",
                   help="the quadratures counted (0 exact, 1..5 semi-exact), comma-separated")
    a = p.parse_args(argv)
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
