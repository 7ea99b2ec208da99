"""Extended-precision reference jacobians of the exact step (tests/data/reference_jacobian.npz).

    python tests/reference/make_jacobian_reference.py [--set suite|random] [--out PATH]
                                                      [--procs 2] [--check]

The variational equations of the free body (taylor.variational_flow: fixed-point Taylor series,
no elliptic function) give, for each case, the state transition matrix phi (6 x 6, rows and
columns (dm, dth), dth the attitude perturbation in the body frame), the derivative dh with
respect to the step and dinertia with respect to the moments (6 x 3) or the components J11, J22,
J33, J12, J13, J23 of an inertia tensor (6 x 6). The attitude does not enter them.

Sets:
* suite (the tests, written to tests/data/reference_jacobian.npz): the inputs of the special set
  (reference_special.npz: principal axes, near axes, the separatrix and near it, symmetric,
  nearly symmetric and spherical bodies, negative and zero steps, scales, long steps up to
  h |m| / I_min = 1000), 40 random bodies with h from 1e-3 to 1e3, and inertia tensors (random,
  symmetric, nearly symmetric, diagonal);
* random (the accuracy measurement benchmarks/jacobian_accuracy.py, written to --out): 2000
  random bodies, moments in [0.5, 3] in random order, |m| in [0.5, 2], random direction, h
  log-uniform from 1e-3 to 1e3 with a random sign.
Each set has its own fixed start of the random generator. --check integrates every case again
with the step halved (factor e^-2 / 2) and prints the largest differences.
"""

import argparse
import os
import sys
import time
from multiprocessing import Pool

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import taylor  # noqa: E402
from mpmath import mp, mpf  # noqa: E402

DATA = os.path.join(os.path.dirname(HERE), "data")
RNG_STATES = {"suite": 20260701, "random": 20260702}
ORDER, PREC = 30, 140


def unit(rng, n):
    while True:
        v = rng.normal(size=n)
        nv = np.linalg.norm(v)
        if nv > 1e-3:
            return v / nv


def random_rotation(rng):
    """A rotation matrix rounded to float64 (from a random unit quaternion, in high precision)."""
    q = unit(rng, 4)
    with mp.workprec(taylor.MP_PREC):
        qm = [mpf(float(x)) for x in q]
        n = mp.sqrt(sum(x * x for x in qm))
        E = taylor.quat_to_matrix_mp([x / n for x in qm])
        return [[E[i][j] for j in range(3)] for i in range(3)]


def tensor(rng, moments):
    """R diag(moments) R^T for a random rotation R, in high precision, rounded to float64 and
    symmetric exactly."""
    R = random_rotation(rng)
    with mp.workprec(taylor.MP_PREC):
        J = [[sum(R[i][k] * mpf(float(moments[k])) * R[j][k] for k in range(3)) for j in range(3)]
             for i in range(3)]
        J = np.array([[float(J[i][j]) for j in range(3)] for i in range(3)])
    return np.triu(J) + np.triu(J, 1).T


def random_body(rng):
    inertia = rng.uniform(0.5, 3.0, size=3)
    m0 = unit(rng, 3) * rng.uniform(0.5, 2.0)
    h = 10.0 ** rng.uniform(-3.0, 3.0) * rng.choice([-1.0, 1.0])
    return m0, inertia, h


def set_suite():
    rng = np.random.default_rng(RNG_STATES["suite"])
    with np.load(os.path.join(DATA, "reference_special.npz"), allow_pickle=False) as f:
        special = {k: f[k] for k in f.files}
    cases = []
    for m0, inertia, h, label in zip(special["m0"], special["inertia"], special["h"],
                                     special["label"]):
        tau = abs(h) * np.linalg.norm(m0) / inertia.min()
        if tau <= 1000.0 * (1 + 1e-9):
            cases.append(dict(label=str(label), m0=m0, inertia=inertia, h=float(h)))
    for i in range(40):
        m0, inertia, h = random_body(rng)
        cases.append(dict(label="random #%d h=%.3g" % (i, h), m0=m0, inertia=inertia, h=h))
    for i in range(8):
        moments = rng.uniform(0.5, 3.0, size=3)
        cases.append(dict(label="tensor random #%d" % i, m0=unit(rng, 3), inertia=tensor(rng,
                          moments), h=float(rng.choice([0.3, 1.7, -4.0, 25.0]))))
    for i, moments in enumerate(([1.5, 1.5, 2.5], [0.9, 2.0, 2.0])):
        for h in (1.3, -3.1):
            cases.append(dict(label="tensor symmetric %s h=%g" % (moments, h), m0=unit(rng, 3),
                              inertia=tensor(rng, moments), h=h))
    for gap in (1e-6, 1e-3):
        moments = [1.2, 1.2 * (1 + gap), 2.7]
        cases.append(dict(label="tensor nearly symmetric gap %g" % gap, m0=unit(rng, 3),
                          inertia=tensor(rng, moments), h=2.2))
    cases.append(dict(label="tensor diagonal", m0=unit(rng, 3),
                      inertia=np.diag([0.8, 1.7, 2.6]), h=1.9))
    return cases


def set_random():
    rng = np.random.default_rng(RNG_STATES["random"])
    cases = []
    for i in range(2000):
        m0, inertia, h = random_body(rng)
        cases.append(dict(label="random #%d" % i, m0=m0, inertia=inertia, h=h))
    return cases


SETS = {"suite": set_suite, "random": set_random}


def _floats(rows):
    return np.array([[float(x) for x in row] for row in rows])


def _run(args):
    idx, c, factor = args
    t0 = time.perf_counter()
    r = taylor.variational_flow(c["m0"], c["inertia"], c["h"], order=ORDER, prec=PREC,
                                factor=factor)
    return idx, dict(phi=_floats(r["phi"]), dh=np.array([float(x) for x in r["dh"]]),
                     dinertia=_floats(r["dinertia"]), seconds=time.perf_counter() - t0)


def scaled_time(c):
    """|h| |m| / I_min of a case."""
    inertia = np.asarray(c["inertia"], dtype=float)
    imin = inertia.min() if inertia.ndim == 1 else np.linalg.eigvalsh(inertia).min()
    return abs(c["h"]) * np.linalg.norm(c["m0"]) / imin


def compute(cases, procs, factor=taylor.FACTOR):
    out = [None] * len(cases)
    # the longest first, so that the pool ends together
    order = sorted(range(len(cases)), key=lambda i: -scaled_time(cases[i]))
    with Pool(procs) as pool:
        for n, (idx, res) in enumerate(pool.imap_unordered(_run, [(i, cases[i], factor)
                                                                   for i in order])):
            out[idx] = res
            if (n + 1) % 50 == 0:
                print("  %d / %d" % (n + 1, len(cases)), flush=True)
    return out


def write(path, cases, results):
    moments = [i for i, c in enumerate(cases) if np.ndim(c["inertia"]) == 1]
    tensors = [i for i, c in enumerate(cases) if np.ndim(c["inertia"]) == 2]
    data = {}
    for prefix, idx in (("", moments), ("tensor_", tensors)):
        if not idx:
            continue
        data[prefix + "label"] = np.array([cases[i]["label"] for i in idx])
        data[prefix + "m0"] = np.array([cases[i]["m0"] for i in idx], dtype=float)
        data[prefix + "inertia"] = np.array([cases[i]["inertia"] for i in idx], dtype=float)
        data[prefix + "h"] = np.array([cases[i]["h"] for i in idx], dtype=float)
        data[prefix + "phi"] = np.array([results[i]["phi"] for i in idx])
        data[prefix + "dh"] = np.array([results[i]["dh"] for i in idx])
        data[prefix + "dinertia"] = np.array([results[i]["dinertia"] for i in idx])
    np.savez_compressed(path, **data)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--set", choices=sorted(SETS), default="suite")
    ap.add_argument("--out", default=None)
    ap.add_argument("--procs", type=int, default=2)
    ap.add_argument("--check", action="store_true")
    args = ap.parse_args()
    cases = SETS[args.set]()
    path = args.out or os.path.join(DATA, "reference_jacobian.npz")
    t0 = time.perf_counter()
    results = compute(cases, args.procs)
    print("%s: %d cases in %.0f s (longest %.1f s)" % (args.set, len(cases),
                                                      time.perf_counter() - t0,
                                                      max(r["seconds"] for r in results)))
    write(path, cases, results)
    print("wrote", path)
    if args.check:
        halved = compute(cases, args.procs, taylor.FACTOR / 2)
        worst = max(max(np.abs(a[k] - b[k]).max() / max(np.abs(a[k]).max(), 1e-300)
                        for k in ("phi", "dh", "dinertia")) for a, b in zip(results, halved))
        print("step halved: largest relative difference %.2e" % worst)


if __name__ == "__main__":
    main()
