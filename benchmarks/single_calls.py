"""Costs of small calls: one body per call, DMV on a few bodies, semi-exact
against exact steps, and the per-call set-up of the integrators, each as ratios in one run.

1. One public call per body (frb_step, quat_step, dmv_step of order 6; shapes (3,), (3, 3),
   (4,)) against the per-body cost of one batched call on 100,000 bodies, h = 0.1 (target: at
   most 15 times).
2. frb.dmv_integrate on 1, 2, 4 and 8 bodies against a hand-written Fortran loop of the same DMV
   step (benchmarks/dmv_harness.f90, built here with gfortran and the flags of meson.build),
   h = 0.01 and 0.1, order 6 (target: within 1.2 times); the final states of one body must be
   identical. Skipped with a message if gfortran is missing.
3. Semi-exact steps (quadrature 1..5) against the exact step, batched (2,000 bodies, the
   compiled loop quat_integrate_batch / frb_integrate_batch), h in {0.01, 0.1, 1}
   (target: quadrature <= 3 at most 0.8 times the exact step at h = 0.1).
4. The per-call set-up of frb.splitting.integrate (torque-free, compiled loop) and of
   frb.integrate (method EXACT): a one-body, one-step call minus the batched cost of one step
   (target: about 20 us).

Timings are CPU times (time.process_time) of calls interleaved in a random order, 5 repetitions
(--reps); a ratio is the median of the per-repetition ratios, an absolute time the minimum.

    python benchmarks/single_calls.py [--reps N] [--quick]
"""
from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from speed import cpu_model, import_frb, loadavg, measure, ratio  # noqa: E402

import numpy as np  # noqa: E402

INERTIA = np.array([0.8, 1.7, 2.6])
FLAGS = ["-O3", "-funroll-loops"]


def bodies(n, rng):
    """Random momenta (|m| about 1.7), unit quaternions and their matrices."""
    rng = np.random.default_rng(rng)
    m = rng.normal(size=(n, 3))
    q = rng.normal(size=(n, 4))
    q /= np.linalg.norm(q, axis=1, keepdims=True)
    return m, q


def single_calls(frb, n_single, n_batch, reps, log):
    """Section 1: one call per body against the batched per-body cost."""
    m, q = bodies(n_batch, 1)
    Q = frb.quat_to_matrix(q)
    h = 0.1
    ms, qs, Qs = list(m[:n_single]), list(q[:n_single]), list(Q[:n_single])

    def loop(step, att):
        def run():
            for mi, ai in zip(ms, att):
                step(mi, ai, h, INERTIA)
        return run

    calls = {"frb_step 1": loop(frb.frb_step, Qs), "frb_step n": lambda: frb.frb_step(m, Q, h, INERTIA),
             "quat_step 1": loop(frb.quat_step, qs), "quat_step n": lambda: frb.quat_step(m, q, h, INERTIA),
             "dmv_step 1": loop(frb.dmv_step, qs), "dmv_step n": lambda: frb.dmv_step(m, q, h, INERTIA)}
    cpu, _, _ = measure(calls, reps, rng=1)
    log(f"\n1. One call per body ({n_single} calls) against one batched call ({n_batch} bodies), "
        f"h = {h}")
    log(f"   {'call':10s} {'us per call':>12s} {'ns per body batched':>20s} {'ratio':>7s}   (target <= 15)")
    rows = {}
    for name in ("frb_step", "quat_step", "dmv_step"):
        one = cpu[name + " 1"].min() / n_single * 1e6
        per = cpu[name + " n"].min() / n_batch * 1e9
        r = ratio(cpu, name + " 1", name + " n", n_single, n_batch)
        rows[name] = (one, per, r)
        log(f"   {name:10s} {one:12.2f} {per:20.1f} {r:7.1f}")
    return rows


def dmv_vs_harness(frb, reps, log, body_steps=400_000):
    """Section 2: frb.dmv_integrate on a few bodies against the hand-written loop."""
    gfortran = shutil.which("gfortran")
    log("\n2. frb.dmv_integrate (order 6) against a hand-written Fortran loop of the same step "
        "(benchmarks/dmv_harness.f90)")
    if gfortran is None:
        log("   gfortran not found: skipped")
        return {}
    src = HERE.parent / "fortran"
    rows = {}
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        exe = tmp / "dmv_harness"
        subprocess.run([gfortran, *FLAGS, "-J", str(tmp), "-o", str(exe), str(src / "kinds.f90"),
                        str(src / "numbers_table.f90"), str(src / "moser_veselov.f90"),
                        str(HERE / "dmv_harness.f90")], check=True, cwd=tmp)
        log(f"   gfortran {' '.join(FLAGS)}; {body_steps} body-steps per run, best of {reps} runs")
        log(f"   {'h':>5s} {'bodies':>6s} {'frb ns/step':>12s} {'loop ns/step':>13s} {'ratio':>6s}"
            "   (target <= 1.2)  results")
        for h in (0.01, 0.1):
            for n in (1, 2, 4, 8):
                m, q = bodies(n, 100 + n)
                nsteps = body_steps // n
                with open(tmp / "in.txt", "w") as f:
                    f.write(f"{n} {nsteps} {h!r} 6\n")
                    for j in range(n):
                        f.write(" ".join(repr(float(x)) for x in (*m[j], *q[j], *INERTIA)) + "\n")
                args = (m[0], q[0]) if n == 1 else (m, q)
                best_frb, best_loop = np.inf, np.inf
                for _ in range(reps):   # the two alternate, so that both see the same load
                    out = subprocess.run([str(exe), str(tmp / "in.txt"), str(tmp / "out.txt")],
                                         check=True, capture_output=True, text=True).stdout
                    best_loop = min(best_loop, float(out))
                    c0 = time.process_time()
                    mf, qf = frb.dmv_integrate(*args, INERTIA, h, nsteps, 6)
                    best_frb = min(best_frb, (time.process_time() - c0) * 1e9 / (n * nsteps))
                final = np.loadtxt(tmp / "out.txt").reshape(n, 7)
                diff = max(np.abs(np.atleast_2d(mf) - final[:, :3]).max(),
                           np.abs(np.atleast_2d(qf) - final[:, 3:]).max())
                same = "identical" if diff == 0 else f"max diff {diff:.1e}"
                if n > 1 and diff:
                    same += " (lock-step lanes iterate until all converge)"
                rows[h, n] = (best_frb, best_loop, best_frb / best_loop, diff)
                log(f"   {h:5.2f} {n:6d} {best_frb:12.1f} {best_loop:13.1f} "
                    f"{best_frb / best_loop:6.2f}   {same}")
    return rows


def semi_exact(frb, n, reps, log, body_steps=200_000):
    """Section 3: semi-exact against exact steps, batched in the compiled loop."""
    import frb._testing
    core = frb._testing
    m, q = bodies(n, 3)
    m /= np.linalg.norm(m, axis=1, keepdims=True)
    Q = frb.quat_to_matrix(q)
    It = INERTIA.reshape(3, 1)
    nsteps = max(1, body_steps // n)
    log(f"\n3. Semi-exact (quadrature 1..5) against exact steps, {n} unit momenta, {nsteps} steps "
        "in the compiled loop (ratio of the cost per step)")
    log(f"   {'form':10s} {'h':>5s} {'exact ns':>9s}  " + " ".join(f"{'q' + str(k):>5s}" for k in range(1, 6))
        + "   (target: q <= 3 at most 0.8 at h = 0.1)")
    rows = {}
    for form, fn, att in (("quaternion", core.quat_integrate_batch, q.T),
                          ("matrix", core.frb_integrate_batch, Q.T)):
        for h in (0.01, 0.1, 1.0):
            harr = np.array([h])
            calls = {k: (lambda k=k: fn(m.T, att, harr, It, k, nsteps)) for k in range(6)}
            cpu, _, _ = measure(calls, reps, rng=3)
            exact = cpu[0].min() / (n * nsteps) * 1e9
            r = [ratio(cpu, k, 0) for k in range(1, 6)]
            rows[form, h] = (exact, r)
            log(f"   {form:10s} {h:5.2f} {exact:9.1f}  " + " ".join(f"{x:5.2f}" for x in r))
    return rows


def set_up(frb, n_calls, reps, log):
    """Section 4: per-call set-up of the integrators (one body, one step)."""
    m, q = bodies(1000, 4)
    Q = frb.quat_to_matrix(q)
    m0, q0, Q0 = m[0], q[0], Q[0]
    h = 0.1
    split = frb.splitting.integrate

    def loop(f):
        def run():
            for _ in range(n_calls):
                f()
        return run

    calls = {"splitting": loop(lambda: split(m0, Q0, INERTIA, h, 1)),
             "integrate q": loop(lambda: frb.integrate(m0, q0, INERTIA, h, 1, method="EXACT")),
             "integrate Q": loop(lambda: frb.integrate(m0, Q0, INERTIA, h, 1, method="EXACT")),
             "frb steps": lambda: frb.frb_step(m, Q, h, INERTIA),
             "quat steps": lambda: frb.quat_step(m, q, h, INERTIA)}
    cpu, _, _ = measure(calls, reps, rng=4)
    step_Q = cpu["frb steps"].min() / len(m) * 1e6
    step_q = cpu["quat steps"].min() / len(m) * 1e6
    log(f"\n4. Per-call set-up: a one-body, one-step call ({n_calls} calls) minus the batched cost of "
        f"the step ({step_Q:.2f} us matrix, {step_q:.2f} us quaternion)")
    log(f"   {'call':52s} {'us per call':>11s} {'set-up us':>9s}   (target about 20)")
    rows = {}
    for key, label, step in (("splitting", "frb.splitting.integrate(m, Q, I, h, 1)", step_Q),
                             ("integrate q", "frb.integrate(m, q, I, h, 1, method='EXACT')", step_q),
                             ("integrate Q", "frb.integrate(m, Q, I, h, 1, method='EXACT')", step_q)):
        call = cpu[key].min() / n_calls * 1e6
        rows[key] = (call, call - step)
        log(f"   {label:52s} {call:11.1f} {call - step:9.1f}")
    return rows


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--reps", type=int, default=5)
    p.add_argument("--quick", action="store_true", help="smaller runs (a few seconds)")
    a = p.parse_args(argv)
    frb = import_frb()
    log = print
    log(f"frb {frb.__file__}; {cpu_model()}; load average {loadavg()}")
    quick = a.quick
    single_calls(frb, 500 if quick else 2000, 20_000 if quick else 100_000, a.reps, log)
    dmv_vs_harness(frb, a.reps, log, 100_000 if quick else 400_000)
    semi_exact(frb, 2000, a.reps, log, 50_000 if quick else 200_000)
    set_up(frb, 300 if quick else 2000, a.reps, log)
    log(f"\nload average at the end {loadavg()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
