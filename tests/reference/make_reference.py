"""Generate the extended-precision reference sets tests/data/reference_<set>.npz.

    python tests/reference/make_reference.py [--set generic|api|special|all]
                                             [--check] [--procs 2]

Every set uses its own fixed start of the random generator, so the files are reproducible.  The
stored float64 inputs (m0, Q0, q0, inertia, h) are exactly the values the
reference integrates from (converted exactly to mpmath numbers); see taylor.py
for the method.  --check additionally integrates every case again with half the
step size and prints the largest differences (the data written do not depend
on --check).
"""

import argparse
import itertools
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
RNG_STATES = {"generic": 20240601, "api": 20240602, "special": 20240603}


# ------------------------------------------------------------------ helpers

def unit(rng, n):
    while True:
        v = rng.normal(size=n)
        nv = np.linalg.norm(v)
        if nv > 1e-3:
            return v / nv


def quat_and_matrix(q):
    """q0 as float64 and Q0 = E(q0 / |q0|) computed in high precision, rounded."""
    q = np.asarray(q, dtype=float)
    with mp.workprec(taylor.MP_PREC):
        qm = [mpf(float(x)) for x in q]
        n = mp.sqrt(sum(x * x for x in qm))
        E = taylor.quat_to_matrix_mp([x / n for x in qm])
        Q = np.array([[float(E[i][j]) for j in range(3)] for i in range(3)])
    return q, Q


def case(rng, label, m0, inertia, h, q0=None):
    if q0 is None:
        q0 = unit(rng, 4)
    q0, Q0 = quat_and_matrix(q0)
    return dict(label=label, m0=np.asarray(m0, dtype=float),
                inertia=np.asarray(inertia, dtype=float), h=float(h), q0=q0, Q0=Q0)


def tau_of(c):
    G = float(np.linalg.norm(c["m0"]))
    return abs(c["h"]) * G / float(np.min(c["inertia"]))


def fmt(x):
    return "%.3g" % x


def round_vec_mp(v):
    return np.array([float(x) for x in v])


def separatrix_offset(m, inertia):
    """(G^2 - 2 T I2) / G^2 from the float64 inputs, in high precision (I2 = middle)."""
    with mp.workprec(taylor.MP_PREC):
        order = np.argsort(inertia, kind="stable")
        I = [mpf(float(inertia[i])) for i in order]
        x = [mpf(float(m[i])) for i in order]
        d2 = x[0] ** 2 * (I[0] - I[1]) / I[0] + x[2] ** 2 * (I[2] - I[1]) / I[2]
        return float(d2 / sum(y * y for y in x))


def separatrix_point(Isorted, m2ratio, s1, s3, eps=0.0, G=1.0):
    """m (sorted frame) with (G^2 - 2 T I2)/G^2 = eps, m2 = m2ratio * m1-scale.

    On the separatrix m1^2 (I2-I1)/I1 = m3^2 (I3-I2)/I3.  Computed in high
    precision, then scaled to |m| = G and rounded to float64.
    """
    with mp.workprec(taylor.MP_PREC):
        I1, I2, I3 = [mpf(float(x)) for x in Isorted]
        a = (I2 - I1) / I1
        b = (I3 - I2) / I3
        m1 = mp.sqrt(b)
        m2 = mpf(m2ratio)
        m3 = mp.sqrt(a)          # m1^2 a = m3^2 b on the separatrix
        G2 = m1 * m1 + m2 * m2 + m3 * m3
        for _ in range(60):      # Delta2 = -m1^2 a + m3^2 b = eps G^2
            m3 = mp.sqrt((m1 * m1 * a + eps * G2) / b)
            G2 = m1 * m1 + m2 * m2 + m3 * m3
        n = mp.sqrt(G2)
        m = [s1 * m1 / n * G, m2 / n * G, s3 * m3 / n * G]
        return np.array([float(x) for x in m])


def near_axis(rng, axis, angle, sign=1.0, G=1.0):
    e = np.zeros(3)
    e[axis] = 1.0
    u = unit(rng, 3)
    u -= u[axis] * e
    u /= np.linalg.norm(u)
    with mp.workprec(taylor.MP_PREC):
        c, s = mp.cos(angle), mp.sin(angle)
        m = [sign * G * (c * e[i] + s * float(u[i])) for i in range(3)]
        return np.array([float(x) for x in m])


# ------------------------------------------------------------------ the sets

def set_generic():
    rng = np.random.default_rng(RNG_STATES["generic"])
    cases = []
    hs = [0.5, 1.0, 3.0]
    for i in range(60):
        while True:
            I = rng.uniform(0.5, 3.0, size=3)
            if np.min(np.diff(np.sort(I))) > 0.05:
                break
        if i % 2 == 0:
            I = np.sort(I)
            order = "sorted"
        else:
            I = I[rng.permutation(3)]
            order = "random order"
        h = hs[i % 3] * (-1.0 if i % 4 == 3 else 1.0)
        m0 = unit(rng, 3)
        lab = "generic #%d: inertia %s, unit m, h=%s" % (i, order, fmt(h))
        cases.append(case(rng, lab, m0, I, h))
    return cases


def set_api():
    rng = np.random.default_rng(RNG_STATES["api"])
    triples = {"A": np.array([0.7, 1.3, 2.9]), "B": np.array([1.1, 1.6, 2.05])}
    cases = []
    for tname, T in triples.items():
        for k in (-6, -3, 0, 3, 6):
            G = 10.0 ** k
            u = unit(rng, 3)
            q0 = unit(rng, 4)
            s = rng.uniform(0.5, 5.0) * rng.choice([-1.0, 1.0])
            h = s * T.min() / G
            for p in itertools.permutations(range(3)):
                p = list(p)
                I = T[p]
                m0 = G * u[p]
                lab = "api triple %s perm %d%d%d |m|=1e%d h|m|/minI=%s" % (
                    tname, p[0], p[1], p[2], k, fmt(s))
                cases.append(case(rng, lab, m0, I, h, q0=q0))
    return cases


def set_special():
    rng = np.random.default_rng(RNG_STATES["special"])
    cases = []
    S = np.array([0.8, 1.7, 2.6])          # generic sorted body
    U = np.array([1.7, 2.6, 0.8])          # same body, unsorted
    S2 = np.array([1.0, 1.05, 4.0])        # second generic body

    def add(lab, m0, I, h, q0=None):
        cases.append(case(rng, lab, m0, I, h, q0))

    # principal axes, exactly
    for I, iname in ((S, "sorted"), (U, "unsorted")):
        for ax in range(3):
            for sg in (1.0, -1.0):
                m0 = np.zeros(3)
                m0[ax] = sg * 1.3
                add("axis %d exactly, sign %+d, inertia %s" % (ax + 1, sg, iname), m0, I, 2.1)
    # near the axes
    for I, iname, sg in ((S, "sorted", 1.0), (U, "unsorted", -1.0)):
        for ax in range(3):
            for ang in (1e-12, 1e-9, 1e-6):
                m0 = near_axis(rng, ax, ang, sg)
                add("near axis %d (angle %g), sign %+d, inertia %s" % (ax + 1, ang, sg, iname),
                    m0, I, 2.7 * sg)
    # near the intermediate axis, longer steps (unstable equilibrium)
    for ang in (1e-12, 1e-9, 1e-6):
        m0 = near_axis(rng, 1, ang, 1.0)
        add("near axis 2 (angle %g), inertia sorted, long h" % ang, m0, S, 12.0)
    # exactly on the separatrix (after rounding: within ~1e-16)
    for I, iname in ((S, "sorted"), (S2, "sorted2")):
        for s1, s3 in ((1, 1), (1, -1), (-1, 1), (-1, -1)):
            for m2r in (0.5, -2.0):
                m0 = separatrix_point(I, m2r, s1, s3)
                add("separatrix m1 %s m3 (signs %+d %+d), m2 ratio %g, inertia %s, off=%.1e"
                    % ("=" if s1 == s3 else "opp", s1, s3, m2r, iname,
                       separatrix_offset(m0, I)), m0, I, 1.9)
    for s1, s3, h in ((1, 1, 3.0), (1, -1, -3.0)):
        m0 = separatrix_point(S, 0.0, s1, s3)
        add("separatrix m2=0, signs %+d %+d, inertia sorted, off=%.1e"
            % (s1, s3, separatrix_offset(m0, S)), m0, S, h)
    for p in ([1, 2, 0], [2, 0, 1], [0, 2, 1], [2, 1, 0]):
        m0s = separatrix_point(S, 0.7, 1, -1)
        I = S[p]                 # axis i of this body is axis p[i] of S
        m0 = m0s[p]
        add("separatrix, signs +1 -1, inertia perm %s, off=%.1e"
            % ("".join(map(str, p)), separatrix_offset(m0, I)), m0, I, 2.3)
    for h in (8.0, -8.0):
        m0 = separatrix_point(S, 0.3, 1, 1)
        add("separatrix, longer h=%g, inertia sorted, off=%.1e" % (h, separatrix_offset(m0, S)),
            m0, S, h)
    # near the separatrix, both sides
    for eps in (1e-14, 1e-12, 1e-9, 1e-6):
        for side in (1.0, -1.0):
            m0 = separatrix_point(S, 0.6, 1, 1, side * eps)
            add("near separatrix eps=%+.0e (actual %+.3e), m1 m3 same sign, sorted"
                % (side * eps, separatrix_offset(m0, S)), m0, S, 2.2)
            m0s = separatrix_point(S, -1.1, 1, -1, side * eps)
            p = [2, 0, 1]
            m0 = m0s[p]
            I = S[p]
            add("near separatrix eps=%+.0e (actual %+.3e), m1 m3 opposite, unsorted"
                % (side * eps, separatrix_offset(m0, I)), m0, I, -2.2)
    # symmetric bodies
    sym = ((np.array([1.5, 1.5, 2.5]), "I1=I2<I3"), (np.array([0.9, 2.0, 2.0]), "I1<I2=I3"),
           (np.array([2.5, 1.5, 1.5]), "unsorted I1>I2=I3"), (np.array([2.0, 0.9, 2.0]),
                                                             "unsorted I1=I3>I2"))
    for I, name in sym:
        add("symmetric %s, random m" % name, unit(rng, 3), I, 1.7)
        add("symmetric %s, random m, negative h" % name, unit(rng, 3) * 2.0, I, -2.9)
        ax = int(np.argmax(np.abs(I - np.median(I))))
        m0 = np.zeros(3)
        m0[ax] = -0.8
        add("symmetric %s, m along the distinct axis %d" % (name, ax + 1), m0, I, 2.0)
        m0 = near_axis(rng, ax, 1e-9, 1.0)
        add("symmetric %s, m within 1e-9 of the distinct axis %d" % (name, ax + 1), m0, I, 2.0)
    Sph = np.array([1.7, 1.7, 1.7])
    add("sphere, random m", unit(rng, 3), Sph, 2.5)
    add("sphere, random m, negative h", unit(rng, 3) * 3.0, Sph, -1.1)
    add("sphere, m along axis 2", np.array([0.0, 1.2, 0.0]), Sph, 4.0)
    # nearly symmetric bodies
    for g in (1e-12, 1e-9, 1e-6, 1e-3):
        I = np.array([1.2, 1.2 * (1 + g), 2.7])
        gap = (I[1] - I[0]) / I[0]
        add("nearly symmetric I2=I1(1+%g) (actual %.4e), random m" % (g, gap), unit(rng, 3), I, 2.4)
        add("nearly symmetric I2=I1(1+%g), random m, negative h" % g, unit(rng, 3), I, -1.3)
        I = np.array([0.6, 2.1, 2.1 * (1 + g)])
        gap = (I[2] - I[1]) / I[1]
        add("nearly symmetric I3=I2(1+%g) (actual %.4e), random m" % (g, gap), unit(rng, 3), I, 1.1)
        add("nearly symmetric I3=I2(1+%g), random m, negative h" % g, unit(rng, 3), I, -0.7)
        I = np.array([2.1 * (1 + g), 0.6, 2.1])
        add("nearly symmetric unsorted I1=I3(1+%g), random m" % g, unit(rng, 3), I, 1.5)
        I = np.array([1.0, 1.0 + g, 1.0 + 2 * g])
        add("nearly spherical (1, 1+%g, 1+2*%g), random m" % (g, g), unit(rng, 3), I, 2.0)
    # negative steps
    for h in (-0.5, -1.0, -3.0, -7.0):
        I = S if h > -2 else U
        add("negative step h=%g, random m" % h, unit(rng, 3), I, h)
    # h = 0
    add("h = 0, random m", unit(rng, 3), U, 0.0)
    add("h = -0.0, random m", unit(rng, 3), S, -0.0)
    add("h = 0, m on axis 3", np.array([0.0, 0.0, 1.0]), S, 0.0)
    # scales
    for G in (1e-8, 1e8):
        for isc in (1e-6, 1.0, 1e6):
            I = U * isc
            for sg in (1.0, -1.0):
                h = sg * 2.3 * I.min() / G
                add("scale |m|=%g, inertia*%g, h|m|/minI=%+g" % (G, isc, sg * 2.3),
                    unit(rng, 3) * G, I, h)
    for isc in (1e-6, 1e6):
        h = 1.7 * (S * isc).min()
        add("scale |m|=1, inertia*%g, h|m|/minI=1.7" % isc, unit(rng, 3), S * isc, h)
    # long steps
    for tau, variants in ((100.0, 4), (1000.0, 3), (10000.0, 2)):
        for v in range(variants):
            I = (S, U, S2, Sph)[v]
            sg = 1.0 if v % 2 == 0 else -1.0
            m0 = unit(rng, 3) * (1.0, 2.0, 0.5, 1.0)[v]
            G = float(np.linalg.norm(m0))
            h = sg * tau * I.min() / G
            add("long step h|m|/minI=%+g, inertia %s" % (sg * tau, ("sorted", "unsorted",
                                                               "sorted2", "sphere")[v]),
                m0, I, h)
    return cases


SETS = {"generic": set_generic, "api": set_api, "special": set_special}


# ------------------------------------------------------------------ driver

def _run(args):
    idx, c, check = args
    t0 = time.perf_counter()
    (m1, Q1, q1), diag = taylor.flow(c["m0"], c["Q0"], c["q0"], c["inertia"], c["h"],
                                     with_diagnostics=True)
    out = dict(m1=round_vec_mp(m1),
               Q1=np.array([[float(Q1[i][j]) for j in range(3)] for i in range(3)]),
               q1=round_vec_mp(q1), diag=diag)
    if check:
        m2, Q2, q2 = taylor.flow(c["m0"], c["Q0"], c["q0"], c["inertia"], c["h"],
                                 factor=taylor.FACTOR / 2)
        G = mpf(float(np.linalg.norm(c["m0"]))) or mpf(1)
        out["check"] = dict(
            m=float(max(abs(a - b) for a, b in zip(m1, m2)) / G),
            Q=float(max(abs(Q1[i][j] - Q2[i][j]) for i in range(3) for j in range(3))),
            q=float(max(abs(a - b) for a, b in zip(q1, q2))))
    out["time"] = time.perf_counter() - t0
    return idx, out


def generate(name, procs=2, check=False):
    cases = SETS[name]()
    n = len(cases)
    t0 = time.perf_counter()
    order = sorted(range(n), key=lambda i: -tau_of(cases[i]))
    jobs = [(i, cases[i], check) for i in order]
    results = [None] * n
    if procs > 1:
        with Pool(procs) as pool:
            for i, out in pool.imap_unordered(_run, jobs, chunksize=1):
                results[i] = out
    else:
        for j in jobs:
            i, out = _run(j)
            results[i] = out
    elapsed = time.perf_counter() - t0
    labels = [c["label"] for c in cases]
    width = max(len(s) for s in labels)
    arrays = dict(
        m0=np.array([c["m0"] for c in cases]),
        Q0=np.array([c["Q0"] for c in cases]),
        q0=np.array([c["q0"] for c in cases]),
        inertia=np.array([c["inertia"] for c in cases]),
        h=np.array([c["h"] for c in cases]),
        m1=np.array([r["m1"] for r in results]),
        Q1=np.array([r["Q1"] for r in results]),
        q1=np.array([r["q1"] for r in results]),
        label=np.array(labels, dtype="U%d" % width),
    )
    os.makedirs(DATA, exist_ok=True)
    path = os.path.join(DATA, "reference_%s.npz" % name)
    np.savez(path, **arrays)
    inv = {k: max(r["diag"][k] for r in results)
           for k in ("norm", "energy", "spatial", "orth", "quatnorm", "quat_vs_matrix")}
    print("set %-8s cases %4d  time %8.1f s (%d procs)  steps max %d  -> %s"
          % (name, n, elapsed, procs, max(r["diag"]["nsteps"] for r in results), path))
    print("  invariant defects (max over set, scaled units): "
          + ", ".join("%s %.1e" % kv for kv in inv.items()))
    slow = sorted(range(n), key=lambda i: -results[i]["time"])[:3]
    for i in slow:
        print("  slowest: %7.1f s  %s" % (results[i]["time"], labels[i]))
    if check:
        for k in ("m", "Q", "q"):
            worst = max(range(n), key=lambda i: results[i]["check"][k])
            print("  step-halving max diff %s: %.2e  (%s)" % (k, results[worst]["check"][k],
                                                           labels[worst]))
    return arrays


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--set", default="all", choices=["all"] + list(SETS))
    ap.add_argument("--procs", type=int, default=2)
    ap.add_argument("--check", action="store_true",
                    help="also integrate with half the step size and print differences")
    a = ap.parse_args(argv)
    names = list(SETS) if a.set == "all" else [a.set]
    for name in names:
        generate(name, a.procs, a.check)


if __name__ == "__main__":
    main()
