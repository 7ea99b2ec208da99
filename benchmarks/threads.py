"""Two threads against one: idle, while two other processes keep the cores busy, and right
after a numpy call that used its BLAS's threads.

Prints, per scenario and route, the best time of a call with one thread and with two and their
ratio (one thread's time over two threads': above 1 the second thread pays). The three scenarios
run in this one process; ``--runs N`` repeats them and ends with the minimum, median and maximum
of each ratio over the runs; ``--policy active`` runs the same in a child process with
``OMP_WAIT_POLICY=ACTIVE`` (the OpenMP default frb replaces) for comparison.

The idle scenario also prints the machine's ceiling for each route: the one-thread call timed
while a second process runs the same call on one thread without pause, 2 t_alone / t_beside. Two
cores that share their floating-point units or caches (virtual CPUs on one physical core's
hardware threads, for instance) cannot give more to two threads than they give to two processes.

    python benchmarks/threads.py [--repeats 7] [--runs 1] [--policy active]
"""
from __future__ import annotations

import argparse
import os
import resource
import subprocess
import sys
import time

import numpy as np

import frb
from frb.torques import heavy_top

from explicit_vs_harness import bodies

BUSY = "while True: pass"


def routes():
    """(name, call(threads)) of the routes measured."""
    big = bodies(100_000)
    big = big + (frb.quat_to_matrix(big[1]),)
    small = bodies(1_000, rng=1)
    mid = bodies(10_000, rng=2)
    many = bodies(100_000, rng=3)
    top = heavy_top(1.0, [0.1, 0.2, 0.8])
    return [
        ("quat_step, 1e5 bodies, h = 0.1", lambda t: frb.quat_step(*big[:2], 0.1, big[2], threads=t)),
        ("frb_step, 1e5 bodies, h = 0.1", lambda t: frb.frb_step(big[0], big[3], 0.1, big[2],
                                                                   threads=t)),
        ("quat_step, 1e3 bodies, h = 0.1", lambda t: frb.quat_step(*small[:2], 0.1, small[2], threads=t)),
        ("integrate RK4 heavy top, 1e4 bodies x 10", lambda t: frb.integrate(
            *mid[:2], mid[2], 0.01, 10, method="RK4", torque=top, save_every=None, threads=t)),
        ("integrate STRANG heavy top, 1e4 bodies x 10", lambda t: frb.integrate(
            *mid[:2], mid[2], 0.01, 10, method="STRANG", torque=top, save_every=None, threads=t)),
        ("integrate RK4 heavy top, 1e5 bodies x 10", lambda t: frb.integrate(
            *many[:2], many[2], 0.01, 10, method="RK4", torque=top, save_every=None, threads=t)),
        ("integrate STRANG heavy top, 1e5 bodies x 10", lambda t: frb.integrate(
            *many[:2], many[2], 0.01, 10, method="STRANG", torque=top, save_every=None, threads=t)),
    ]


def blas_call(a):
    """A matrix product large enough for numpy's BLAS to use its threads."""
    return a @ a


def minor_faults():
    """The process's page faults served without I/O so far (first touches of fresh memory)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_minflt


def best_times(call, repeats, before=None):
    """Best time of call(1) and of call(2), interleaved so that a drift of the machine's load
    reaches both, and the page faults of a call (mean over all); before() runs right before
    each call when given."""
    best = {1: np.inf, 2: np.inf}
    faults = 0
    for _ in range(repeats):
        for t in (1, 2):
            if before is not None:
                before()
            first = minor_faults()
            start = time.perf_counter()
            call(t)
            best[t] = min(best[t], time.perf_counter() - start)
            faults += minor_faults() - first
    return best[1], best[2], faults / (2 * repeats)


def twin(index):
    """Runs route index on one thread without pause (the second process of the ceiling)."""
    call = routes()[index][1]
    call(1)
    print("ready", flush=True)
    while True:
        call(1)


def ceiling(index, call, repeats):
    """2 t_alone / t_beside of call(1): t_beside while a second process runs the same call."""
    alone = min(timed(call) for _ in range(repeats))
    other = subprocess.Popen([sys.executable, __file__, "--twin", str(index)], stdout=subprocess.PIPE,
                             text=True)
    try:
        other.stdout.readline()
        beside = min(timed(call) for _ in range(repeats))
    finally:
        other.kill()
        other.wait()
    return 2 * alone / beside


def timed(call):
    start = time.perf_counter()
    call(1)
    return time.perf_counter() - start


def report(scenario, results, ratios):
    """Prints the times of a scenario; appends each route's ratio to ratios[(scenario, route)]."""
    print(f"\n{scenario}")
    print(f"  {'route':46s} {'1 thread':>10s} {'2 threads':>10s} {'1/2 ratio':>10s} "
          f"{'faults/call':>12s}")
    for name, (t1, t2, faults) in results:
        print(f"  {name:46s} {t1 * 1e3:8.3f}ms {t2 * 1e3:8.3f}ms {t1 / t2:10.2f} {faults:12.0f}")
        ratios.setdefault((scenario, name), []).append(t1 / t2)


IDLE = "idle (as the machine is)"
BUSY_SCENARIO = "two other processes keep both cores busy"
CEILING = "the machine's ceiling: two processes, one thread each"
BLAS = "right after a numpy matrix product (600 x 600) before each call"


def measure(table, repeats, ratios):
    report(IDLE, [(n, best_times(c, repeats)) for n, c in table], ratios)
    print(f"  the machine's ceiling (two processes, one thread each: 2 t_alone / t_beside)")
    for index, (name, call) in enumerate(table):
        bound = ceiling(index, call, repeats)
        print(f"  {name:46s} {bound:43.2f}")
        ratios.setdefault((CEILING, name), []).append(bound)

    busy = [subprocess.Popen([sys.executable, "-c", BUSY]) for _ in range(2)]
    try:
        time.sleep(0.5)
        report(BUSY_SCENARIO, [(n, best_times(c, repeats)) for n, c in table], ratios)
    finally:
        for p in busy:
            p.kill()
            p.wait()

    a = np.random.default_rng(3).normal(size=(600, 600))
    report(BLAS, [(n, best_times(c, repeats, before=lambda: blas_call(a))) for n, c in table],
           ratios)


def summary(ratios, runs):
    """The minimum, median and maximum of each ratio over the runs."""
    print(f"\nratios one thread / two threads over {runs} runs: min / median / max")
    scenario = None
    for (where, name), values in ratios.items():
        if where != scenario:
            scenario = where
            print(f"\n{where}")
        print(f"  {name:46s} {min(values):6.2f} {float(np.median(values)):6.2f} "
              f"{max(values):6.2f}")


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--runs", type=int, default=1, help="runs of the three scenarios")
    parser.add_argument("--policy", choices=("default", "active"), default="default",
                        help="active: run in a child process with OMP_WAIT_POLICY=ACTIVE")
    parser.add_argument("--twin", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.twin is not None:
        return twin(args.twin)
    if args.policy == "active":
        env = dict(os.environ, OMP_WAIT_POLICY="ACTIVE")
        return subprocess.call([sys.executable, __file__, "--repeats", str(args.repeats),
                                "--runs", str(args.runs)], env=env)
    print(f"frb {frb.__version__}, {os.cpu_count()} cores, SIMD target {frb.cpu_dispatch()}, "
          f"OMP_WAIT_POLICY={os.environ.get('OMP_WAIT_POLICY', '(frb: PASSIVE)')}")
    table = routes()
    for _, call in table:   # warm up: first calls, page faults
        call(1), call(2)
    ratios = {}
    for _ in range(args.runs):
        measure(table, args.repeats, ratios)
    if args.runs > 1:
        summary(ratios, args.runs)
    return 0


if __name__ == "__main__":
    sys.exit(main())
