"""Generate tests/data/reference_gyrostat.npz: the gyrostat (a rigid body with a constant rotor)
at h = 0.01, 1, 100, 1e4 (and -1, and 30: a phase just below the long steps) from the Taylor-series reference (gyrostat_taylor.py) for
random bodies and the edge families of gyrostat_cases.py.

    python tests/reference/make_gyrostat_reference.py [--random 24] [--procs 2] [--out FILE]

Fixed start of the random generator: the file is reproducible. The stored float64 inputs (m0, hr,
inertia, q0, h) are the values the reference integrates from (converted exactly); m1, q1 are its
results rounded to float64. Arrays: m0, hr (n, 3), inertia (n, 3), q0 (n, 4), h (n,), m1 (n, 3),
q1 (n, 4), label (n,) (unicode), steps (n,) (Taylor steps of the period).
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


def cases(n_random):
    rng = np.random.default_rng(RNG_STATE)
    out = [gyrostat_cases.random_body(rng) for _ in range(n_random)]
    return out + gyrostat_cases.edge_families(rng)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--random", type=int, default=24)
    ap.add_argument("--procs", type=int, default=2)
    ap.add_argument("--out", default=os.path.join(DATA, "reference_gyrostat.npz"))
    args = ap.parse_args()
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
