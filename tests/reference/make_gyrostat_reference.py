"""Generate tests/data/reference_gyrostat.npz: the gyrostat (a rigid body with a constant rotor)
at h = 0.01, 1, 100, 1e4 (and -1, and 30: a phase just below the long steps) from the Taylor-series reference (gyrostat_taylor.py) for
random bodies and the edge families of gyrostat_cases.py.

    python tests/reference/make_gyrostat_reference.py [--random 24] [--procs 2] [--out FILE]
    python tests/reference/make_gyrostat_reference.py --sample 2000 [--procs 2] [--out FILE]

Fixed start of the random generator: the file is reproducible. The stored float64 inputs (m0, hr,
inertia, q0, h) are the values the reference integrates from (converted exactly); m1, q1 are its
results rounded to float64. Arrays: m0, hr (n, 3), inertia (n, 3), q0 (n, 4), h (n,), m1 (n, 3),
q1 (n, 4), label (n,) (unicode), steps (n,) (Taylor steps of the period).

--sample N writes tests/data/reference_gyrostat_sample.npz instead: N bodies of
gyrostat_cases.sample_body (random rotors of any direction and size, rotors along principal axes,
orbits near saddles (the separatrices), minima and maxima), each at the three steps of
gyrostat_cases.sample_steps (short to long, random signs). Arrays per body: m0, hr, inertia (N, 3),
q0 (N, 4), kind (N,) (index of gyrostat_cases.SAMPLE_KINDS), h (N, 3), m1 (N, 3, 3), q1 (N, 3, 4)
(m1[i, j], q1[i, j] the flow of body i over h[i, j]).
"""

import argparse
import os
import sys
import time
from multiprocessing import Pool

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import gyrostat_cases  # noqa: E402
import gyrostat_taylor  # noqa: E402

DATA = os.path.join(os.path.dirname(HERE), "data")
RNG_STATE = 20240617
SAMPLE_RNG_STATE = 20261127
H_VALUES = (0.01, 1.0, 100.0, 1e4, -1.0, 30.0)


def reference(c):
    """The flow of one body at every h of H_VALUES: [(m1, q1), ...] and the Taylor steps of its
    period."""
    g = gyrostat_taylor.Gyrostat(c["m0"], c["hr"], c["inertia"])
    g.period()
    out = []
    for h in H_VALUES:
        m1, q1 = g.flow(c["q0"], h)
        out.append((np.array([float(x) for x in m1]), np.array([float(x) for x in q1])))
    return out, len(g.steps)


def sample_reference(c):
    """The flow of one body of the sample at its steps: (m1 (3, 3), q1 (3, 4))."""
    g = gyrostat_taylor.Gyrostat(c["m0"], c["hr"], c["inertia"])
    g.period()
    m1, q1 = [], []
    for h in c["h"]:
        m, q = g.flow(c["q0"], h)
        m1.append([float(x) for x in m])
        q1.append([float(x) for x in q])
    return np.array(m1), np.array(q1)


def sample(n, procs, out):
    """The random sample (--sample): n bodies, three steps each."""
    rng = np.random.default_rng(SAMPLE_RNG_STATE)
    todo = []
    for _ in range(n):
        c, kind = gyrostat_cases.sample_body(rng)
        c["kind"] = kind
        c["h"] = gyrostat_cases.sample_steps(rng)
        todo.append(c)
    t0 = time.time()
    results = []
    with Pool(procs) as pool:
        for i, res in enumerate(pool.imap(sample_reference, todo, chunksize=4)):
            results.append(res)
            if (i + 1) % 100 == 0 or i + 1 == n:
                # (the first k bodies of the sample are those of any longer one: the file written
                # every 100 bodies is the sample of the bodies done)
                _save_sample(todo[:i + 1], results, out)
                print(f"{i + 1}/{n} {time.time() - t0:.0f} s", flush=True)
    print(f"{n} bodies in {time.time() - t0:.0f} s -> {out}")


def _save_sample(todo, results, out):
    arrays = {k: np.array([c[k] for c in todo]) for k in ("m0", "hr", "inertia", "q0", "h")}
    arrays["kind"] = np.array([c["kind"] for c in todo], dtype=np.int8)
    arrays["m1"] = np.array([r[0] for r in results])
    arrays["q1"] = np.array([r[1] for r in results])
    np.savez_compressed(out, **arrays)


def cases(n_random):
    rng = np.random.default_rng(RNG_STATE)
    out = [gyrostat_cases.random_body(rng) for _ in range(n_random)]
    return out + gyrostat_cases.edge_families(rng)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--random", type=int, default=24)
    ap.add_argument("--procs", type=int, default=2)
    ap.add_argument("--sample", type=int, default=0,
                    help="write the random sample of this many bodies instead")
    ap.add_argument("--out", default=None)
    args = ap.parse_args()
    if args.sample:
        sample(args.sample, args.procs,
               args.out or os.path.join(DATA, "reference_gyrostat_sample.npz"))
        return
    args.out = args.out or os.path.join(DATA, "reference_gyrostat.npz")
    todo = cases(args.random)
    t0 = time.time()
    results = []
    with Pool(args.procs) as pool:
        for i, res in enumerate(pool.imap(reference, todo)):
            results.append(res)
            print(f"{i + 1}/{len(todo)} {todo[i]['label']}: {res[1]} steps, {time.time() - t0:.0f} s",
                  flush=True)
    rows = {k: [] for k in ("m0", "hr", "inertia", "q0", "h", "m1", "q1", "label", "steps")}
    for c, (res, steps) in zip(todo, results):
        for h, (m1, q1) in zip(H_VALUES, res):
            for k in ("m0", "hr", "inertia", "q0", "label"):
                rows[k].append(c[k])
            rows["h"].append(h)
            rows["m1"].append(m1)
            rows["q1"].append(q1)
            rows["steps"].append(steps)
    arrays = {k: np.array(v) for k, v in rows.items()}
    arrays["label"] = arrays["label"].astype(str)
    np.savez_compressed(args.out, **arrays)
    print(f"{len(todo)} bodies, {len(arrays['h'])} cases in {time.time() - t0:.0f} s -> {args.out}")


if __name__ == "__main__":
    main()
