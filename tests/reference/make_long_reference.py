"""Reference solutions for very long steps and extreme moments: tests/data/reference_long.npz.

    python tests/reference/make_long_reference.py        (about a minute on 2 cores)

Two kinds of cases, both integrated by the Taylor integrator of taylor.py (54 digits) from the
stored float64 inputs, converted exactly; no elliptic function of frb is used.

* ``long``: |h| |m| / I_min from 1e3 to 1e18 (the longest steps frb accepts). The momentum is
  periodic with period T = 4 K(k) / lambda (K from mpmath, lambda and k from the invariants,
  Landau-Lifshitz section 37); over one period the attitude turns about the spatial momentum by
  an angle Delta: Q(T) = R(n, Delta) Q(0), n = Q(0) m0 / |m0| (checked: m(T) = m0 and R(T) m0 = m0
  to 1e-35). So Q(h) = R(n, j Delta) Q(0) R(d) with h = j T + d, 0 <= d < T, and R(d) integrated
  over d alone. Three quarters asymmetric bodies; one quarter symmetric (I1 = I2 or I2 = I3),
  whose reference is the closed form of uniform precession (symmetric_case).
* ``extreme``: moment ratios I_max / I_min from 1e120 to 1e300, and momentum and moments both
  subnormal, over |h| |m| / I_min in [0.1, 30]: integrated directly.

All steps are forwards (h > 0); the tests also take (-m0, -h), whose flow is (-m1, Q1).
Stored (float64): m0 (n,3), Q0 (n,3,3) a rotation rounded to float64, inertia (n,3), h (n,),
m1 (n,3), Q1 (n,3,3), phase (n,) = |h| |m0| / I_min, label (n,).
"""

import os
import sys
import time
from multiprocessing import Pool

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import mpmath  # noqa: E402
import taylor  # noqa: E402
from mpmath import mp, mpf  # noqa: E402

DATA = os.path.join(os.path.dirname(HERE), "data")
RNG_STATE = 20251115


def _mp3(v):
    return [mpf(float(x)) for x in v]


def _motion(m0, inertia, t):
    """m(t) and R(t) (R(0) = 1, Q(t) = Q0 R(t)) for an mpf time t >= 0 (taylor.integrate_scaled)."""
    m, I = _mp3(m0), _mp3(inertia)
    G = mpmath.sqrt(sum(x * x for x in m))
    s = min(I)
    if t == 0:
        return m, [[mpf(int(i == j)) for j in range(3)] for i in range(3)]
    mu, rows, _, _ = taylor.integrate_scaled([taylor._to_fx(x / G) for x in m],
                                             [taylor._to_fx(s / x) for x in I], taylor._to_fx(t * G / s))
    return [G * taylor._from_fx(x) for x in mu], [[taylor._from_fx(x) for x in r] for r in rows]


def _period(m0, inertia):
    order = sorted(range(3), key=lambda i: inertia[i])
    m = [mpf(float(m0[i])) for i in order]
    I1, I2, I3 = (mpf(float(inertia[i])) for i in order)
    M2 = sum(x * x for x in m)
    E2 = m[0] ** 2 / I1 + m[1] ** 2 / I2 + m[2] ** 2 / I3
    if M2 > E2 * I2:      # around the axis of the largest moment
        lam = mpmath.sqrt((I3 - I2) * (M2 - E2 * I1) / (I1 * I2 * I3))
        k2 = (I2 - I1) * (E2 * I3 - M2) / ((I3 - I2) * (M2 - E2 * I1))
    else:
        lam = mpmath.sqrt((I2 - I1) * (E2 * I3 - M2) / (I1 * I2 * I3))
        k2 = (I3 - I2) * (M2 - E2 * I1) / ((I2 - I1) * (E2 * I3 - M2))
    return 4 * mpmath.ellipk(k2) / lam


def _rot(n, angle):
    x, y, z = n
    c, s = mpmath.cos(angle), mpmath.sin(angle)
    C = 1 - c
    return [[c + x * x * C, x * y * C - z * s, x * z * C + y * s],
            [y * x * C + z * s, c + y * y * C, y * z * C - x * s],
            [z * x * C - y * s, z * y * C + x * s, c + z * z * C]]


def _mm(A, B):
    return [[sum(A[i][k] * B[k][j] for k in range(3)) for j in range(3)] for i in range(3)]


def symmetric_case(args):
    """Closed form for I_a = I_b = A, I_c = C (uniform precession): with
    kappa = (1/C - 1/A) m_c, m(t) = R(e_c, -kappa t) m0 and Q(t) = R(s, G t / A) Q0 R(e_c, kappa t),
    s = Q0 m0 / G (differentiate: Q' = Q hat(m / A + m_c (1/C - 1/A) e_c) = Q hat(I^-1 m))."""
    m0, Q0, inertia, h = args
    with mp.workprec(taylor.MP_PREC):
        m, I = _mp3(m0), _mp3(inertia)
        c = next(i for i in range(3) if I[(i + 1) % 3] == I[(i + 2) % 3])
        A, C = I[(c + 1) % 3], I[c]
        e = [mpf(int(i == c)) for i in range(3)]
        t = mpf(float(h))
        kappa = (1 / C - 1 / A) * m[c]
        G = mpmath.sqrt(sum(x * x for x in m))
        Q = [[mpf(float(Q0[i][k])) for k in range(3)] for i in range(3)]
        sp = [sum(Q[i][k] * m[k] for k in range(3)) / G for i in range(3)]
        R = _rot(e, -kappa * t)
        m1 = [sum(R[i][k] * m[k] for k in range(3)) for i in range(3)]
        Q1 = _mm(_mm(_rot(sp, G * t / A), Q), _rot(e, kappa * t))
        return [float(x) for x in m1], [[float(x) for x in r] for r in Q1]


def long_case(args):
    m0, Q0, inertia, h = args
    if len(set(float(x) for x in inertia)) < 3:
        return symmetric_case(args)
    with mp.workprec(taylor.MP_PREC):
        T = _period(m0, inertia)
        mT, RT = _motion(m0, inertia, T)
        assert max(abs(a - mpf(float(b))) for a, b in zip(mT, m0)) < mpf(10) ** -35
        G = mpmath.sqrt(sum(x * x for x in _mp3(m0)))
        u = [x / G for x in _mp3(m0)]   # R(T) turns about m0 (body frame): Q(T) = Q0 R(T)
        assert max(abs(sum(RT[i][k] * u[k] for k in range(3)) - u[i]) for i in range(3)) < mpf(10) ** -35
        c = (RT[0][0] + RT[1][1] + RT[2][2] - 1) / 2
        s = ((RT[2][1] - RT[1][2]) * u[0] + (RT[0][2] - RT[2][0]) * u[1] + (RT[1][0] - RT[0][1]) * u[2]) / 2
        delta = mpmath.atan2(s, c)
        hh = mpf(float(h))
        j = mpmath.floor(hh / T)
        md, Rd = _motion(m0, inertia, hh - j * T)
        # Q(jT + d) = Q0 R(T)^j R(d), R(T)^j the rotation about u by j delta
        Q = [[mpf(float(Q0[i][k])) for k in range(3)] for i in range(3)]
        Q1 = _mm(_mm(Q, _rot(u, j * delta)), Rd)
        return [float(x) for x in md], [[float(x) for x in r] for r in Q1]


def extreme_case(args):
    m0, Q0, inertia, h = args
    m1, Q1, _ = taylor.flow(m0, Q0, [1.0, 0, 0, 0], inertia, h)
    return [float(x) for x in m1], [[float(x) for x in r] for r in Q1]


def _norm(v):
    big = np.abs(v).max()
    return big * np.linalg.norm(v / big)


def _rotation(rng):
    q = rng.normal(size=4)
    q /= np.linalg.norm(q)
    w, x, y, z = q
    return np.array([[1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y)],
                     [2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x)],
                     [2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)]])


def cases():
    rng = np.random.default_rng(RNG_STATE)
    long, extreme = [], []
    for e in (3, 6, 9, 12, 14, 15, 16, 17):
        for kind in ("asymmetric", "asymmetric", "asymmetric", "symmetric"):
            inertia = rng.uniform(0.5, 2.0, 3)
            if kind == "symmetric":
                i, j = rng.permutation(3)[:2]
                inertia[j] = inertia[i]
            m0 = rng.normal(size=3) * 10.0 ** rng.integers(-3, 4)
            phase = 10.0 ** e * rng.uniform(1, 9.9)
            h = phase * inertia.min() / np.linalg.norm(m0)
            long.append((m0, _rotation(rng), inertia, h, f"{kind} phase 1e{e}"))
    for e in (120, 160, 200, 250, 300):
        inertia = np.array([1.0, 10.0 ** (e * rng.uniform(0.2, 0.8)), 10.0 ** e])
        inertia = rng.permutation(inertia) * 2.0 ** int(rng.integers(-20, 20))
        m0 = rng.normal(size=3)
        phase = rng.uniform(0.1, 30)
        h = phase * inertia.min() / _norm(m0)
        extreme.append((m0, _rotation(rng), inertia, h, f"ratio 1e{e}"))
    for scale in (1e-310, 1e-318):
        m0 = rng.normal(size=3) * scale
        inertia = rng.uniform(1, 3, 3) * scale
        h = rng.uniform(0.1, 3) * inertia.min() / _norm(m0)
        extreme.append((m0, _rotation(rng), inertia, h, f"m and inertia subnormal ({scale:g})"))
    return long, extreme


def main():
    t0 = time.time()
    long, extreme = cases()
    with Pool(2) as pool:
        res_long = pool.map(long_case, [c[:4] for c in long])
        res_ext = pool.map(extreme_case, [c[:4] for c in extreme])
    allc = long + extreme
    res = res_long + res_ext
    m0 = np.array([c[0] for c in allc])
    inertia = np.array([c[2] for c in allc])
    h = np.array([c[3] for c in allc])
    big = np.abs(m0).max(axis=1)
    phase = np.abs(h) * big * np.linalg.norm(m0 / big[:, None], axis=1) / inertia.min(axis=1)
    np.savez(os.path.join(DATA, "reference_long.npz"), m0=m0, Q0=np.array([c[1] for c in allc]),
             inertia=inertia, h=h, m1=np.array([r[0] for r in res]), Q1=np.array([r[1] for r in res]),
             phase=phase, label=np.array([c[4] for c in allc]))
    print(f"{len(allc)} cases in {time.time() - t0:.1f} s")


if __name__ == "__main__":
    main()
