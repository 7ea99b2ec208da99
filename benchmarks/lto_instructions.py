"""Instructions of the compiled hot loops under two or more builds of frb, counted by valgrind's
callgrind side by side in one run: what link-time optimisation (or any other build option) buys.

Each build is an installed frb (a directory for PYTHONPATH, e.g. ``pip install --target DIR``).
Workloads (one thread, collection only inside the named compiled function, library calls
included):

- ``batch exact h=0.1`` / ``h=1``: the batched exact quaternion step (frb._testing's
  quat_integrate_batch), 2,000 unit momenta, 10 steps, inside ``flow_batch._omp_fn``;
- ``one body``: frb.quat_step of one body, 300 calls, inside ``engine_segment``;
- ``integrate METHOD``: frb.integrate of 200 bodies with a heavy top, 10 steps, inside
  ``engine_run._omp_fn``.

    python benchmarks/lto_instructions.py --build lto=/tmp/instA --build nolto=/tmp/instB \
        [--target avx2]

valgrind does not decode AVX-512: the lanes run under ``--target`` (default avx2). Prints the
instructions per body-step of each build and the ratio of each build to the first.
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

DRIVER = r"""
import sys, numpy as np, frb
kind, arg = sys.argv[1], sys.argv[2]
rng = np.random.default_rng(3)
if kind == "batch":
    import frb._testing
    n, steps, h = 2000, 10, float(arg)
    m = rng.normal(size=(n, 3)); m /= np.linalg.norm(m, axis=1, keepdims=True)
    q = rng.normal(size=(n, 4)); q /= np.linalg.norm(q, axis=1, keepdims=True)
    frb._testing.quat_integrate_batch(m.T, q.T, np.array([h]), np.array([[0.8], [1.7], [2.6]]),
                                      0, steps, threads=1)
elif kind == "one":
    m, q = np.array([0.3, 0.5, 0.8]), np.array([1.0, 0, 0, 0])
    for _ in range(300):
        m, q = frb.quat_step(m, q, 0.1, [0.8, 1.7, 2.6])
else:
    from frb.torques import heavy_top
    n = 200
    m = rng.normal(size=(n, 3)); q = rng.normal(size=(n, 4))
    q /= np.linalg.norm(q, axis=1, keepdims=True)
    frb.integrate(m, q, [0.8, 1.7, 2.6], 0.05, 10, method=arg, torque=heavy_top(1.0, [0, 0, 1]),
                  save_every="final", threads=1)
"""

WORKLOADS = [("batch exact h=0.1", "batch", "0.1", "*flow_batch._omp_fn.*", 2000 * 10),
             ("batch exact h=1", "batch", "1.0", "*flow_batch._omp_fn.*", 2000 * 10),
             ("one body quat_step", "one", "-", "engine_segment*", 300),
             ("integrate STRANG", "integrate", "STRANG", "*engine_run._omp_fn.*", 2000),
             ("integrate RKN6_14", "integrate", "RKN6_14", "*engine_run._omp_fn.*", 2000),
             ("integrate RK4", "integrate", "RK4", "*engine_run._omp_fn.*", 2000),
             ("integrate TERZE", "integrate", "TERZE", "*engine_run._omp_fn.*", 2000),
             ("integrate DMV6", "integrate", "DMV6", "*engine_run._omp_fn.*", 2000)]


def count(path: str, target: str, kind: str, arg: str, toggle: str, tmp: Path) -> int:
    """Instructions collected inside ``toggle`` for one workload under the build at ``path``."""
    driver = tmp / "driver.py"
    driver.write_text(DRIVER)
    env = {**os.environ, "PYTHONPATH": path, "FRB_CPU_TARGET": target, "OMP_NUM_THREADS": "1"}
    out = subprocess.run(["valgrind", "--tool=callgrind", f"--toggle-collect={toggle}",
                          f"--callgrind-out-file={tmp / 'cg.out'}", sys.executable, str(driver),
                          kind, arg], capture_output=True, text=True, env=env, cwd=tmp)
    if out.returncode != 0:
        raise RuntimeError(out.stderr[-2000:])
    return int(re.search(r"Collected : (\d+)", out.stderr).group(1))


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--build", action="append", required=True, metavar="NAME=DIR",
                   help="an installed frb (PYTHONPATH directory); the first is the reference")
    p.add_argument("--target", default="avx2", help="SIMD target of the lanes (valgrind: not avx512)")
    a = p.parse_args(argv)
    if shutil.which("valgrind") is None:
        print("valgrind not found")
        return 1
    builds = [b.split("=", 1) for b in a.build]
    print(f"instructions per body-step (callgrind, one thread, SIMD target {a.target})")
    print(f"{'workload':24s}" + "".join(f"{name:>14s}" for name, _ in builds)
          + "".join(f"{name + '/' + builds[0][0]:>16s}" for name, _ in builds[1:]))
    with tempfile.TemporaryDirectory() as tmp:
        for label, kind, arg, toggle, units in WORKLOADS:
            counts = [count(path, a.target, kind, arg, toggle, Path(tmp)) / units
                      for _, path in builds]
            print(f"{label:24s}" + "".join(f"{c:14.0f}" for c in counts)
                  + "".join(f"{c / counts[0]:16.3f}" for c in counts[1:]), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
