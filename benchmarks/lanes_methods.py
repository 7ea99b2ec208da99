"""Cost per body-step of the methods of frb.integrate with and without the lane steps, per SIMD
target, measured side by side in one run.

    python benchmarks/lanes_methods.py [--n 10000] [--steps 20] [--reps 7]
                                       [--main-python /tmp/venv-main/bin/python] [--callgrind]

A batch of n random bodies (momenta of norm 1, random attitudes, moments in [0.8, 2.6]), a heavy
top (``heavy_top(1, (0, 0, 1))``), h = 0.05, ``steps`` steps with only the final state kept, one
thread. Each method runs in these forms, their calls interleaved in a random order within each
repetition (the machine is shared and noisy):

- ``one-body``: the lanes turned off (frb._testing.lane_steps_use(0)), the baseline target: every
  step is the method family's own step, the code of a build without the lane steps;
- ``baseline``, ``avx2``, ``avx512``: the lane steps on, under each SIMD target this CPU has;
- ``main``: with ``--main-python``, another installation of frb (e.g. a build of main in another
  virtual environment) timed by that interpreter in a worker process, between the same calls.

Printed: ns per body-step (the best repetition) and the median over the repetitions of each
form's ratio to ``one-body`` (and to ``main``). With ``--callgrind`` also the instructions per
body-step of the compiled loop (valgrind's callgrind, 2,000 bodies, steady on a noisy machine).
The results of every form are checked to be the same bit for bit.
"""
from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import numpy as np  # noqa: E402

import frb  # noqa: E402
from frb import _testing  # noqa: E402
from frb.torques import heavy_top  # noqa: E402

H = 0.05
METHODS = ("RK4", "STRANG", "YOSHIDA4", "RKN6_14", "TERZE", "SYMROT", "MIDPOINT", "DMV6")

# the timing of one repetition, run by this interpreter or another frb's (--main-python)
WORKER = r"""
import json, os, sys, time
import numpy as np
import frb
from frb.torques import heavy_top
n, steps, h, methods = int(sys.argv[1]), int(sys.argv[2]), float(sys.argv[3]), sys.argv[4].split(",")
rng = np.random.default_rng(1)
m = rng.normal(size=(n, 3)); m /= np.linalg.norm(m, axis=1, keepdims=True)
q = rng.normal(size=(n, 4)); q /= np.linalg.norm(q, axis=1, keepdims=True)
inertia = rng.uniform(0.8, 2.6, size=(n, 3))
top = heavy_top(1.0, [0.0, 0.0, 1.0])
out = {}
for name in methods:
    frb.integrate(m[:16], q[:16], inertia[:16], h, 2, method=name, torque=top, threads=1)
    t0 = time.perf_counter()
    tr = frb.integrate(m, q, inertia, h, steps, method=name, torque=top, save_every=None, threads=1)
    out[name] = [(time.perf_counter() - t0) / (n * steps), float(np.sum(tr.m[-1]))]
print(json.dumps(out))
"""

CALLGRIND = r"""
import sys, numpy as np, frb
from frb import _testing
from frb.torques import heavy_top
n, steps, h, name, form = 2000, int(sys.argv[1]), float(sys.argv[2]), sys.argv[3], sys.argv[4]
rng = np.random.default_rng(1)
m = rng.normal(size=(n, 3)); m /= np.linalg.norm(m, axis=1, keepdims=True)
q = rng.normal(size=(n, 4)); q /= np.linalg.norm(q, axis=1, keepdims=True)
inertia = rng.uniform(0.8, 2.6, size=(n, 3))
_testing.lane_steps_use(0 if form == "one-body" else 1)
frb.set_cpu_target("baseline" if form == "one-body" else form)
frb.integrate(m, q, inertia, h, steps, method=name, torque=heavy_top(1.0, [0.0, 0.0, 1.0]),
              save_every=None, threads=1)
"""


def bodies(n):
    rng = np.random.default_rng(1)
    m = rng.normal(size=(n, 3))
    m /= np.linalg.norm(m, axis=1, keepdims=True)
    q = rng.normal(size=(n, 4))
    q /= np.linalg.norm(q, axis=1, keepdims=True)
    return m, q, rng.uniform(0.8, 2.6, size=(n, 3))


def instructions(name, form, steps, tmp):
    """Instructions per body-step of the compiled loop (callgrind), 2,000 bodies."""
    driver = tmp / "driver.py"
    driver.write_text(CALLGRIND)
    out = subprocess.run(["valgrind", "--tool=callgrind", "--toggle-collect=*engine_run*",
                          f"--callgrind-out-file={tmp / 'cg.out'}", sys.executable, str(driver),
                          str(steps), repr(H), name, form], capture_output=True, text=True,
                         check=True)
    return int(re.search(r"Collected : (\d+)", out.stderr).group(1)) / (2000 * steps)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--n", type=int, default=10000)
    ap.add_argument("--steps", type=int, default=20)
    ap.add_argument("--reps", type=int, default=7)
    ap.add_argument("--methods", default=",".join(METHODS))
    ap.add_argument("--main-python", default=None)
    ap.add_argument("--callgrind", action="store_true")
    args = ap.parse_args(argv)
    methods = [name for name in args.methods.split(",") if name in frb.METHODS]
    m, q, inertia = bodies(args.n)
    top = heavy_top(1.0, [0.0, 0.0, 1.0])
    forms = ("one-body",) + frb.simd.supported_cpu_targets()

    def run(name, form):
        _testing.lane_steps_use(0 if form == "one-body" else 1)
        frb.set_cpu_target("baseline" if form == "one-body" else form)
        t0 = time.perf_counter()
        tr = frb.integrate(m, q, inertia, H, args.steps, method=name, torque=top,
                           save_every=None, threads=1)
        return (time.perf_counter() - t0) / (args.n * args.steps), tr.m[-1], tr.q[-1]

    keys = [(name, form) for name in methods for form in forms]
    times = {key: [] for key in keys}
    main_times = {name: [] for name in methods}
    finals = {}
    for key in keys:                                   # warm up, and the results of each form
        finals[key] = run(*key)[1:]
    for name in methods:
        for form in forms[1:]:
            for a, b in zip(finals[(name, form)], finals[(name, "one-body")]):
                assert np.array_equal(a, b), f"{name} {form}: not the one-body results"
    rng = np.random.default_rng(0)
    for _ in range(args.reps):
        order = list(rng.permutation(len(keys) + (1 if args.main_python else 0)))
        for i in order:
            if i == len(keys):
                res = subprocess.run([args.main_python, "-c", WORKER, str(args.n), str(args.steps),
                                      repr(H), ",".join(methods)], capture_output=True, text=True,
                                     check=True, cwd=tempfile.gettempdir())
                for name, (t, _) in json.loads(res.stdout).items():
                    main_times[name].append(t)
            else:
                times[keys[i]].append(run(*keys[i])[0])
    _testing.lane_steps_use(1)
    frb.set_cpu_target(None)

    head = [f"# frb.integrate per body-step, heavy top, n = {args.n}, {args.steps} steps of h = {H}, "
            f"one thread, {args.reps} interleaved repetitions ({os.cpu_count()} cores, load "
            f"{os.getloadavg()[0]:.1f})", ""]
    cols = list(forms) + (["main"] if args.main_python else [])
    lines = head + ["ns per body-step (best repetition); in brackets the median ratio to one-body"
                    + (" / to main" if args.main_python else ""), "",
                    "| method | " + " | ".join(cols) + " |", "|---" * (len(cols) + 1) + "|"]
    for name in methods:
        ref = np.array(times[(name, "one-body")])
        cells = []
        for form in cols:
            t = np.array(main_times[name] if form == "main" else times[(name, form)])
            cell = f"{t.min() * 1e9:.0f}"
            if form != "one-body":
                cell += f" ({np.median(t / ref):.2f}"
                if args.main_python and form != "main":
                    cell += f" / {np.median(t / np.array(main_times[name])):.2f}"
                cell += ")"
            cells.append(cell)
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    if args.callgrind and shutil.which("valgrind"):
        lines += ["", "Instructions per body-step of the compiled loop (callgrind, 2,000 bodies):", "",
                  "| method | " + " | ".join(forms) + " |", "|---" * (len(forms) + 1) + "|"]
        with tempfile.TemporaryDirectory() as tmp:
            for name in methods:
                counts = [instructions(name, form, 5, Path(tmp)) for form in forms]
                lines.append(f"| {name} | " + " | ".join(
                    f"{c:.0f}" + ("" if i == 0 else f" ({c / counts[0]:.2f})")
                    for i, c in enumerate(counts)) + " |")
    text = "\n".join(lines) + "\n"
    print(text)
    out = Path(__file__).resolve().parent / "results"
    out.mkdir(exist_ok=True)
    (out / "lanes_methods.md").write_text(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
