"""Reference solutions for single exact steps of asymmetric and nearly symmetric bodies up to the
switch to quadruple precision: tests/data/reference_precise.npz.

    python tests/reference/make_precise_reference.py [--procs 2]     (about 5 minutes on 2 cores)

Each case is integrated by the Taylor integrator of taylor.py (180-bit fixed point, about 54
digits; no elliptic function, no code of frb) from the stored float64 inputs, converted exactly.
The results m1 / |m1| and q1 are stored split in two float64 each (hi + lo), so that the tests can
measure errors far below one ulp of the double-precision result.

Families (label):
* ``asymmetric``: moments uniform in [0.5, 3], in random order;
* ``nearly symmetric``: two moments A (1 - eps), A with eps log-uniform in [1e-12, 1e-4], the
  third C with C / A in [1/4, 1/1.05] or [1.05, 4], in random order;
* ``nearly symmetric (1e-6)``: the same with eps uniform in [0, 1e-6] and C / A in [1.05, 4]
  or its inverse (the bodies of benchmarks/symmetric_accuracy.py), and four such bodies where moving m onto the invariants of the scaled (rounded) inputs instead
  of the exact ones costs most (SENSITIVE);
* ``near axis``: asymmetric moments, the momentum within 1e-3..1e-8 (angle) of the axis of the
  largest or the smallest moment;
* ``near separatrix``: asymmetric moments, 2 T I_2 / |m|^2 - 1 log-uniform in +-[1e-8, 1e-3].
Random momenta (|m| from 1e-3 to 1e3), random unit quaternions rounded to float64, steps of both
signs with |h| |m| / I_min log-uniform in [1, 63.9] (frb's switch to quadruple precision is at 64).
Stored: m0 (n,3), q0 (n,4), inertia (n,3), h (n,), u1_hi, u1_lo (n,3), q1_hi, q1_lo (n,4),
phase (n,), label (n,).
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

OUT = os.path.join(HERE, "..", "data", "reference_precise.npz")
SEED = 20261127
COUNTS = {"asymmetric": 80, "nearly symmetric": 80, "nearly symmetric (1e-6)": 60, "near axis": 20,
          "near separatrix": 40}


def _unit(rng):
    v = rng.normal(size=3)
    return v / np.linalg.norm(v)


def _case(rng, family):
    if family.startswith("nearly symmetric"):
        A = rng.uniform(0.7, 2.5)
        if family == "nearly symmetric":
            ratio = rng.uniform(1.05, 4.0) ** rng.choice([-1.0, 1.0])
            eps = 10.0 ** rng.uniform(-12, -4)
        else:
            ratio = rng.uniform(1.05, 4.0) ** rng.choice([-1.0, 1.0])
            eps = 1e-6 * rng.uniform(0, 1)
        inertia = np.array([A * (1 - eps), A, A * ratio])
    else:
        inertia = np.sort(rng.uniform(0.5, 3.0, 3))
    s = np.sort(inertia)
    if family == "near axis":
        axis = 0 if rng.random() < 0.5 else 2
        u = np.zeros(3)
        u[axis] = rng.choice([-1.0, 1.0])
        d = _unit(rng)
        d[axis] = 0
        d /= np.linalg.norm(d)
        u = u + 10.0 ** rng.uniform(-8, -3) * d
        u /= np.linalg.norm(u)
    elif family == "near separatrix":
        # x = m^2 on the unit sphere with sum x_i / I_i = (1 + delta) / I_2
        delta = 10.0 ** rng.uniform(-8, -3) * rng.choice([-1.0, 1.0])
        target = (1 + delta) / s[1]
        x2 = rng.uniform(0.0, 0.5)
        # x1 / I1 + x3 / I3 = target - x2 / I2, x1 + x3 = 1 - x2
        rest = 1 - x2
        x1 = (target - x2 / s[1] - rest / s[2]) / (1 / s[0] - 1 / s[2])
        x3 = rest - x1
        if x1 <= 0 or x3 <= 0:
            return _case(rng, family)
        u = np.sqrt([x1, x2, x3]) * rng.choice([-1.0, 1.0], 3)
    else:
        u = _unit(rng)
    perm = rng.permutation(3)
    # (u is in the frame of the sorted moments s for the families near an axis or the separatrix)
    inertia = (inertia if family.startswith("nearly symmetric") else s)[perm]
    u = u[perm]
    m0 = u * 10.0 ** rng.uniform(-3, 3)
    q0 = rng.normal(size=4)
    q0 /= np.linalg.norm(q0)
    phase = 63.9 ** rng.uniform(0, 1)
    h = phase * inertia.min() / np.linalg.norm(m0) * rng.choice([-1.0, 1.0])
    return m0, q0, inertia, h


# Nearly symmetric bodies where moving m onto the invariants of the scaled inputs (instead of the
# exact ones) costs most: found among 2000 bodies of benchmarks/symmetric_accuracy.py (m0, q0,
# inertia, h).
SENSITIVE = [
    ([0.1723448306166561, 1.177229266226221, 0.11067280667093225],
     [0.5076881022639343, -0.32363575476071177, -0.12310578387487024, 0.7888964792903205],
     [1.1557604057140631, 1.1557610910908769, 1.8320062444491323], 54.0092128577835),
    ([-0.7998800043292799, -0.15194724209616367, 0.13037779211500275],
     [-0.4154385011571526, 0.3118949480834171, -0.846694038289969, 0.11507214537222148],
     [1.7194472729534809, 1.7194486441833077, 2.0861688233672058], 95.43721171848973),
    ([-0.16129392021041167, 0.3640355610109848, 0.015742139387184016],
     [0.6275719957272734, 0.36870480019902613, -0.5510185492622232, -0.4081528131203293],
     [1.198317177952821, 1.1983176277709162, 2.8428995621861044], 152.89658428329213),
    ([0.19603870539369217, 2.966522012180741, -0.708830436882523],
     [-0.44634165059838715, 0.3171614056303036, 0.01750334366882543, -0.8365891504676164],
     [1.3422512892155243, 1.7528449195222962, 1.7528459688569102], 15.11385379876757),
]


def cases():
    rng = np.random.default_rng(SEED)
    out = []
    for family, n in COUNTS.items():
        for _ in range(n):
            out.append((family,) + _case(rng, family))
    for m0, q0, inertia, h in SENSITIVE:
        out.append(("nearly symmetric (1e-6)", np.array(m0), np.array(q0), np.array(inertia), h))
    return out


def _split(x):
    hi = np.array([float(v) for v in x])
    lo = np.array([float(v - mpf(float(v))) for v in x])
    return hi, lo


def solve(args):
    _, m0, q0, inertia, h = args
    with mp.workprec(taylor.MP_PREC):
        m1, _, q1 = taylor.flow(m0, np.eye(3), q0, inertia, h)
        g = mp.sqrt(sum(x * x for x in m1))
        return _split([x / g for x in m1]), _split(q1)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--procs", type=int, default=2)
    args = ap.parse_args()
    t0 = time.time()
    cs = cases()
    with Pool(args.procs) as pool:
        res = pool.map(solve, cs, chunksize=4)
    m0 = np.array([c[1] for c in cs])
    q0 = np.array([c[2] for c in cs])
    inertia = np.array([c[3] for c in cs])
    h = np.array([c[4] for c in cs])
    u1_hi = np.array([r[0][0] for r in res]); u1_lo = np.array([r[0][1] for r in res])
    q1_hi = np.array([r[1][0] for r in res]); q1_lo = np.array([r[1][1] for r in res])
    phase = np.abs(h) * np.linalg.norm(m0, axis=1) / inertia.min(1)
    label = np.array([c[0] for c in cs])
    np.savez_compressed(OUT, m0=m0, q0=q0, inertia=inertia, h=h, u1_hi=u1_hi, u1_lo=u1_lo,
                        q1_hi=q1_hi, q1_lo=q1_lo, phase=phase, label=label)
    print("wrote", os.path.normpath(OUT), len(h), "cases in %.0f s" % (time.time() - t0))


if __name__ == "__main__":
    main()
