"""Cost per body-step of the methods of frb.integrate with and without the lane steps, per SIMD
target, measured side by side in one run.

    python benchmarks/lanes_methods.py [--n 10000] [--steps 20] [--reps 7]
                                       [--main-python /tmp/venv-main/bin/python] [--callgrind]
                                       [--cache-sim]

A batch of n random bodies (momenta of norm 1, random attitudes, moments in [0.8, 2.6]), a heavy
top (``heavy_top(1, (0, 0, 1))``), h = 0.05, ``steps`` steps with only the final state kept, one
thread. Each method runs in these forms, their calls interleaved in a random order within each
repetition (the machine is shared and noisy):

- ``baseline one-body``, ``avx2 one-body``: the lanes turned off (frb._testing.lane_steps_use(0)):
  every step is the method family's own step, the code of a build without the lane steps (whose
  free flows and DMV steps already run in lanes under the target chosen);
- ``baseline``, ``avx2``, ``avx512``: the lane steps on, under each SIMD target this CPU has;
- ``main``: with ``--main-python``, another installation of frb (e.g. a build of another revision in another
  virtual environment) timed by that interpreter in a worker process under the AVX2 target,
  between the same calls.

Printed: ns per body-step (the best repetition) and the median over the repetitions of each
form's ratio to ``avx2 one-body`` (and to ``main``). With ``--callgrind`` also the instructions
per body-step of the compiled loop (valgrind's callgrind, 2,000 bodies, steady on a noisy
machine), and with ``--cache-sim`` its simulated misses of the first-level data cache and of the
last-level cache per body-step. The results of every form are checked to be the same bit for
bit.
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
METHODS = ("RK4", "STRANG", "YOSHIDA4", "RKN6_14", "TERZE", "SYMROT", "MIDPOINT", "DMV6",
           "TRAP", "IMID", "TRAPM", "IMIDM", "SWC1", "AKW", "BBTRAP", "BBTRAPWD")

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
target, lanes = form.split()[0], not form.endswith("one-body")
if hasattr(_testing, "lane_steps_use"):             # (another frb, --main-python, has none)
    _testing.lane_steps_use(int(lanes))
frb.set_cpu_target(target)
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


def instructions(name, form, steps, tmp, python=sys.executable, cache_sim=False):
    """Instructions per body-step of the compiled loop (callgrind), 2,000 bodies; with cache_sim
    (instructions, first-level data misses, last-level data misses) per body-step."""
    driver = tmp / "driver.py"
    driver.write_text(CALLGRIND)
    # (a short run is one call of the binding engine_whole)
    out = subprocess.run(["valgrind", "--tool=callgrind", "--toggle-collect=engine_whole_",
                          f"--cache-sim={'yes' if cache_sim else 'no'}",
                          f"--callgrind-out-file={tmp / 'cg.out'}", python, str(driver),
                          str(steps), repr(H), name, form], capture_output=True, text=True,
                         check=True, cwd=tmp)
    counts = [int(c) / (2000 * steps)
              for c in re.search(r"Collected :([\d ]+)", out.stderr).group(1).split()]
    if not cache_sim:
        return counts[0]
    # (events Ir Dr Dw I1mr D1mr D1mw ILmr DLmr DLmw)
    return counts[0], counts[4] + counts[5], counts[7] + counts[8]


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--n", type=int, default=10000)
    ap.add_argument("--steps", type=int, default=20)
    ap.add_argument("--reps", type=int, default=7)
    ap.add_argument("--methods", default=",".join(METHODS))
    ap.add_argument("--main-python", default=None)
    ap.add_argument("--callgrind", action="store_true")
    ap.add_argument("--callgrind-only", action="store_true", help="no timings")
    ap.add_argument("--cache-sim", action="store_true",
                    help="with --callgrind: the simulated cache misses too")
    args = ap.parse_args(argv)
    methods = [name for name in args.methods.split(",") if name in frb.METHODS]
    m, q, inertia = bodies(args.n)
    top = heavy_top(1.0, [0.0, 0.0, 1.0])
    targets = frb.simd.supported_cpu_targets()
    forms = ("baseline one-body",) + (("avx2 one-body",) if "avx2" in targets else ()) + targets
    ref_form = forms[1]

    def run(name, form):
        _testing.lane_steps_use(0 if form.endswith("one-body") else 1)
        frb.set_cpu_target(form.split()[0])
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
            for a, b in zip(finals[(name, form)], finals[(name, forms[0])]):
                assert np.array_equal(a, b), f"{name} {form}: not the one-body results"
    rng = np.random.default_rng(0)
    for _ in range(0 if args.callgrind_only else args.reps):
        order = list(rng.permutation(len(keys) + (1 if args.main_python else 0)))
        for i in order:
            if i == len(keys):
                res = subprocess.run([args.main_python, "-c", WORKER, str(args.n), str(args.steps),
                                      repr(H), ",".join(methods)], capture_output=True, text=True,
                                     check=True, cwd=tempfile.gettempdir(),
                                     env=dict(os.environ, FRB_CPU_TARGET="avx2"))
                for name, (t, _) in json.loads(res.stdout).items():
                    main_times[name].append(t)
            else:
                times[keys[i]].append(run(*keys[i])[0])
    _testing.lane_steps_use(1)
    frb.set_cpu_target(None)

    timing = "" if args.callgrind_only else (f", n = {args.n}, {args.steps} steps of h = {H}, one "
                                             f"thread, {args.reps} interleaved repetitions")
    head = [f"# frb.integrate per body-step, heavy top{timing} ({os.cpu_count()} cores, load "
            f"{os.getloadavg()[0]:.1f})", ""]
    lines = list(head)
    if not args.callgrind_only:
        cols = list(forms) + (["main"] if args.main_python else [])
        lines += [f"ns per body-step (best repetition); in brackets the median ratio to {ref_form}"
                  + (" / to main (AVX2)" if args.main_python else ""), "",
                  "| method | " + " | ".join(cols) + " |", "|---" * (len(cols) + 1) + "|"]
        for name in methods:
            ref = np.array(times[(name, ref_form)])
            cells = []
            for form in cols:
                t = np.array(main_times[name] if form == "main" else times[(name, form)])
                cell = f"{t.min() * 1e9:.0f}"
                if form != ref_form:
                    cell += f" ({np.median(t / ref):.2f}"
                    if args.main_python and form != "main":
                        cell += f" / {np.median(t / np.array(main_times[name])):.2f}"
                    cell += ")"
                cells.append(cell)
            lines.append(f"| {name} | " + " | ".join(cells) + " |")
    if args.callgrind and shutil.which("valgrind"):
        # (valgrind runs no AVX-512: the forms of the baseline and AVX2)
        cg_forms = [form for form in forms if form.split()[0] in ("baseline", "avx2")]
        main_forms = ["avx2 one-body", "avx2"] if args.main_python else []
        cols = cg_forms + ["main " + form for form in main_forms]
        events = (("Instructions", 0),) + ((("First-level data cache misses", 1),
                                            ("Last-level data cache misses", 2))
                                           if args.cache_sim else ())
        counts = {}
        with tempfile.TemporaryDirectory() as tmp:
            for name in methods:
                for form in cg_forms:
                    counts[(name, form)] = instructions(name, form, 5, Path(tmp),
                                                        cache_sim=args.cache_sim)
                for form in main_forms:
                    counts[(name, "main " + form)] = instructions(
                        name, form, 5, Path(tmp), args.main_python, cache_sim=args.cache_sim)
        for title, e in events:
            lines += ["", f"{title} per body-step of the compiled loop (callgrind, 2,000 bodies, "
                      "5 steps); in brackets the ratio to avx2 one-body" +
                      (" / to the same form of main" if args.main_python else ""), "",
                      "| method | " + " | ".join(cols) + " |", "|---" * (len(cols) + 1) + "|"]
            for name in methods:
                def value(form):
                    c = counts[(name, form)]
                    return c[e] if args.cache_sim else c
                ref = value("avx2 one-body")
                cells = []
                for form in cols:
                    cell = f"{value(form):.{0 if e == 0 else 2}f}"
                    if form != "avx2 one-body" and ref > 0:
                        cell += f" ({value(form) / ref:.2f}"
                        if form in main_forms and value("main " + form) > 0:
                            cell += f" / {value(form) / value('main ' + form):.2f}"
                        cell += ")"
                    cells.append(cell)
                lines.append(f"| {name} | " + " | ".join(cells) + " |")
    text = "\n".join(lines) + "\n"
    print(text)
    out = Path(__file__).resolve().parent / "results"
    out.mkdir(exist_ok=True)
    (out / "lanes_by_method.md").write_text(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
