"""Scaling: threads (OpenMP) and Dask against one thread in process.

    python benchmarks/scale.py [--n 1000000] [--steps 5] [--reps 5] [--quick] [--no-dask]
                               [--out benchmarks/results]

Every figure is a RATIO of two wall times measured in the same run, the timed calls interleaved
(in a random order inside each repetition) and the ratio taken as the median over repetitions of
the per-repetition ratios; the median absolute times and the load average are printed too.
Nothing here is a test.

1. Threads: one exact step (``frb.quat_step``, ``frb.frb_step``) of n bodies, and
   ``frb.integrate`` DMV6 over a few steps (final state only), with 1, 2 and all threads:
   speed-up = time with 1 thread / time with t threads.
2. Dask: the same work through ``frb.dask`` on a LocalCluster of two worker processes with one
   thread each (``threads=1`` in the workers), against the in-process call with all threads and
   with one thread; the bodies either sent from this process with the graph, or already on the
   workers (persisted beforehand). The results are checked bit for bit against the in-process
   ones.

Writes ``scale.md`` to --out. On a machine shared with other work the threads get the cores
only when nothing else runs (with Linux autogroups, a session's share does not grow with its
thread count): the CPU/wall column tells how much of the two cores the run had.
"""
from __future__ import annotations

import argparse
import logging
import os
import platform
import random
import statistics
import sys
import time
import warnings
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
REPO = HERE.parent


def import_frb():
    """The installed, compiled package (the source folder has no _core)."""
    sys.path[:] = [p for p in sys.path if os.path.abspath(p or os.getcwd()) != str(REPO)]
    import frb
    import frb._core  # noqa: F401
    return frb


def bodies(n, rng=0):
    rng = np.random.default_rng(rng)
    m = rng.normal(size=(n, 3))
    m /= np.linalg.norm(m, axis=1, keepdims=True)
    q = rng.normal(size=(n, 4))
    q /= np.linalg.norm(q, axis=1, keepdims=True)
    return m, q


def measure(calls, reps, cpu=None):
    """Wall times of each call in reps repetitions (interleaved, in a random order); the CPU
    time of this process (all its threads) over the same calls goes to cpu[k] if given."""
    times = {k: [] for k in calls}
    for _ in range(reps):
        order = list(calls)
        random.shuffle(order)
        for k in order:
            c = time.process_time()
            t = time.perf_counter()
            calls[k]()
            times[k].append(time.perf_counter() - t)
            if cpu is not None:
                cpu.setdefault(k, []).append(time.process_time() - c)
    return times


def ratio(times, num, den):
    return statistics.median(a / b for a, b in zip(times[num], times[den]))


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--n", type=int, default=1_000_000)
    ap.add_argument("--steps", type=int, default=5)
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--quick", action="store_true", help="1e5 bodies, 3 repetitions")
    ap.add_argument("--no-dask", action="store_true")
    ap.add_argument("--out", type=Path, default=HERE / "results")
    args = ap.parse_args(argv)
    if args.quick:
        args.n, args.reps = 100_000, 3
    frb = import_frb()
    n, steps, reps = args.n, args.steps, args.reps
    inertia = np.array([0.8, 1.7, 2.6])
    h = 0.1
    m, q = bodies(n)
    Q = frb.quat_to_matrix(q)
    all_threads = frb.get_num_threads()
    counts = sorted({1, 2, all_threads})
    lines = []

    def out(s=""):
        print(s, flush=True)
        lines.append(s)

    out(f"# Scaling (benchmarks/scale.py), n = {n:,} bodies, {reps} repetitions")
    out()
    out(f"Machine: {platform.processor() or platform.machine()}, {os.cpu_count()} logical CPUs, "
        f"OpenMP {'on' if frb.threads.openmp_enabled() else 'off'}, default threads "
        f"{all_threads}; load average before: {os.getloadavg()[0]:.2f}")
    out()

    # ---------------------------------------------------------------- threads
    calls = {}
    for t in counts:
        calls[("quat_step", t)] = lambda t=t: frb.quat_step(m, q, h, inertia, threads=t)
        calls[("frb_step", t)] = lambda t=t: frb.frb_step(m, Q, h, inertia, threads=t)
        calls[("DMV6", t)] = lambda t=t: frb.integrate(m, q, inertia, h, steps, method="DMV6",
                                                       save_every=None, threads=t)
    for t in counts[1:]:   # equal bit for bit
        for what in ("quat_step", "frb_step", "DMV6"):
            a, b = calls[(what, 1)](), calls[(what, t)]()
            if what == "DMV6":
                a, b = (a.m, a.q), (b.m, b.q)
            assert all(np.array_equal(x, y) for x, y in zip(a, b)), (what, t)
    cpu = {}
    times = measure(calls, reps, cpu)
    out("## Threads: speed-up against one thread (the same results bit for bit)")
    out()
    out("Speed-up = wall time with 1 thread / with t threads; CPU/wall = CPU time of the "
        f"process / wall time with {counts[-1]} threads (about {counts[-1]} when every thread "
        "had a core of its own, less when other work took the cores).")
    out()
    out("| work | " + " | ".join(f"{t} thread{'s' if t > 1 else ''}" for t in counts)
        + f" | CPU/wall, {counts[-1]} threads | time with 1 thread |")
    out("|---|" + "---|" * (len(counts) + 2))
    labels = {"quat_step": "exact step, quaternion (`frb.quat_step`)",
              "frb_step": "exact step, matrix (`frb.frb_step`)",
              "DMV6": f"`frb.integrate` DMV6, {steps} steps, final state only"}
    for what, label in labels.items():
        cells = [f"{ratio(times, (what, 1), (what, t)):.2f}" for t in counts]
        use = statistics.median(c / w for c, w in zip(cpu[(what, counts[-1])],
                                                      times[(what, counts[-1])]))
        out(f"| {label} | " + " | ".join(cells)
            + f" | {use:.2f} | {statistics.median(times[(what, 1)]):.3f} s |")
    out()

    # ------------------------------------------------------------------- dask
    if not args.no_dask:
        try:
            import dask
            import dask.array as da
            import distributed
            import frb.dask
        except ImportError as exc:
            out(f"Dask: skipped ({exc}; pip install 'frb[dask]')")
        else:
            with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                          dashboard_address=None,
                                          silence_logs=logging.ERROR) as cluster, \
                    distributed.Client(cluster) as client:
                client.run(import_frb)          # the workers import frb before the timing
                # "Sending large graph": the bodies go with the graph, the point of "sent"
                warnings.filterwarnings("ignore", "Sending large graph", UserWarning)
                chunk = max(1, n // 8)
                dm = da.from_array(m, chunks=(chunk, 3))
                dq = da.from_array(q, chunks=(chunk, 4))
                pm, pq = client.persist([dm, dq])
                distributed.wait([pm, pq])

                def kept(lazy):     # computed, the results left on the workers
                    distributed.wait(client.persist(list(lazy)))

                def dask_step(mm, qq):
                    return dask.compute(*frb.dask.quat_step(mm, qq, h, inertia, threads=1))

                def dask_dmv(mm, qq):
                    tr = frb.dask.integrate(mm, qq, inertia, h, steps, method="DMV6",
                                            save_every=None, threads=1)
                    return dask.compute(tr.m[0], tr.q[0])

                want_step = frb.quat_step(m, q, h, inertia)
                want_dmv = frb.integrate(m, q, inertia, h, steps, method="DMV6", save_every=None)
                for got, want in ((dask_step(dm, dq), want_step),
                                  (dask_dmv(pm, pq), (want_dmv.m[0], want_dmv.q[0]))):
                    assert all(np.array_equal(x, y) for x, y in zip(got, want))
                dcalls = {
                    ("step", "sent"): lambda: dask_step(dm, dq),
                    ("step", "on workers"): lambda: dask_step(pm, pq),
                    ("step", "kept"): lambda: kept(frb.dask.quat_step(pm, pq, h, inertia,
                                                                      threads=1)),
                    ("step", "all"): lambda: frb.quat_step(m, q, h, inertia),
                    ("step", "one"): lambda: frb.quat_step(m, q, h, inertia, threads=1),
                    ("DMV6", "sent"): lambda: dask_dmv(dm, dq),
                    ("DMV6", "on workers"): lambda: dask_dmv(pm, pq),
                    ("DMV6", "kept"): lambda: kept(frb.dask.integrate(
                        pm, pq, inertia, h, steps, method="DMV6", save_every=None,
                        threads=1).m),
                    ("DMV6", "all"): lambda: frb.integrate(m, q, inertia, h, steps,
                                                           method="DMV6", save_every=None),
                    ("DMV6", "one"): lambda: frb.integrate(m, q, inertia, h, steps,
                                                           method="DMV6", save_every=None,
                                                           threads=1),
                }
                dtimes = measure(dcalls, reps)
            out("## Dask (LocalCluster, 2 worker processes x 1 thread) against in process "
                "(the same results bit for bit)")
            out()
            out("Time of the Dask run / time of the in-process call with all threads (with 1 "
                f"thread in the last ratio); the bodies in {-(-n // chunk)} chunks, sent from "
                "this process with the graph or already on the workers; the results gathered "
                "into this process, or left on the workers (`persist`).")
            out()
            out("| work | sent, gathered | on workers, gathered | on workers, left there | "
                "on workers, gathered / 1 thread | Dask time (on workers, gathered) |")
            out("|---|---|---|---|---|---|")
            for what, label in (("step", "exact step, quaternion"),
                                ("DMV6", f"`frb.integrate` DMV6, {steps} steps, final only")):
                out(f"| {label} | {ratio(dtimes, (what, 'sent'), (what, 'all')):.2f} | "
                    f"{ratio(dtimes, (what, 'on workers'), (what, 'all')):.2f} | "
                    f"{ratio(dtimes, (what, 'kept'), (what, 'all')):.2f} | "
                    f"{ratio(dtimes, (what, 'on workers'), (what, 'one')):.2f} | "
                    f"{statistics.median(dtimes[(what, 'on workers')]):.3f} s |")
            out()
    out(f"Load average after: {os.getloadavg()[0]:.2f}")
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "scale.md").write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
