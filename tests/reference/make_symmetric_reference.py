"""Reference solutions for symmetric bodies at long steps: tests/data/reference_symmetric.npz.

    python tests/reference/make_symmetric_reference.py [--check]     (a few seconds)

A body with two equal moments A (axes i, j) and a third C (axis s, (i, j, s) cyclic) has, with
Omega = m_s (1/A - 1/C), the Euler equations m_i' = -Omega m_j, m_j' = Omega m_i, m_s' = 0, so
m(t) = R_s(Omega t) m0; its angular velocity is omega = m/A - Omega e_s, and
Q(t) = Q0 exp(t hat(m0)/A) exp(-Omega t hat(e_s)) solves Q' = Q hat(omega) (the free symmetric
top, Landau and Lifshitz, Mechanics, section 33). In quaternions
q(t) = q0 (cos(a/2), sin(a/2) m0/|m0|) (cos(b/2), -sin(b/2) e_s), a = |m0| t / A, b = Omega t.
Evaluated with 40-digit mpmath numbers from the stored float64 inputs (converted exactly); no
code of frb is used. --check also integrates four cases (h > 0) over one radian with mpmath.odefun (Taylor
series) and compares.

Cases: random momenta (scales 1e-3 to 1e3), the equal pair on any two axes (moments in any
order), C / A from 1/4 to 4 (and some spheres), random unit quaternions rounded to float64, steps
of both signs with |h| |m| / I_min up to just below 64 (frb's switch to quadruple precision).
Stored (float64): m0 (n,3), q0 (n,4), inertia (n,3), h (n,), and the results split in two
float64 each, u1 = u1_hi + u1_lo (m1 / |m1|, n,3) and q1 = q1_hi + q1_lo (n,4); phase (n,).
"""
import argparse
import os

import mpmath as mp
import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "..", "data", "reference_symmetric.npz")
SEED = 20261127
N = 400


def qmul(x, y):
    return [x[0] * y[0] - x[1] * y[1] - x[2] * y[2] - x[3] * y[3],
            x[0] * y[1] + x[1] * y[0] + x[2] * y[3] - x[3] * y[2],
            x[0] * y[2] - x[1] * y[3] + x[2] * y[0] + x[3] * y[1],
            x[0] * y[3] + x[1] * y[2] - x[2] * y[1] + x[3] * y[0]]


def symmetric_top(m0, q0, h, inertia):
    """(m1 / |m1|, q1) as mpmath numbers (40 digits)."""
    I = [mp.mpf(float(x)) for x in inertia]
    m = [mp.mpf(float(x)) for x in m0]
    q = [mp.mpf(float(x)) for x in q0]
    t = mp.mpf(float(h))
    s = 2 if I[0] == I[1] else (0 if I[1] == I[2] else 1)
    i, j = (s + 1) % 3, (s + 2) % 3
    A, C = I[i], I[s]
    g = mp.sqrt(sum(x * x for x in m))
    a, b = g * t / A, m[s] * (1 / A - 1 / C) * t
    qa = [mp.cos(a / 2)] + [mp.sin(a / 2) * x / g for x in m]
    qb = [mp.cos(b / 2), 0, 0, 0]
    qb[1 + s] = -mp.sin(b / 2)
    u = [x / g for x in m]
    u1 = list(u)
    u1[i] = mp.cos(b) * u[i] - mp.sin(b) * u[j]
    u1[j] = mp.sin(b) * u[i] + mp.cos(b) * u[j]
    return u1, qmul(q, qmul(qa, qb))


def odefun_solution(m0, q0, h, inertia):
    """The same by mpmath's Taylor-series integrator of m' = m x w, q' = q (0, w) / 2, w = m / I."""
    I = [mp.mpf(float(x)) for x in inertia]

    def f(_, y):
        m, q = y[:3], y[3:]
        w = [m[k] / I[k] for k in range(3)]
        dm = [m[1] * w[2] - m[2] * w[1], m[2] * w[0] - m[0] * w[2], m[0] * w[1] - m[1] * w[0]]
        return dm + [x / 2 for x in qmul(q, [0] + w)]

    y = mp.odefun(f, 0, [mp.mpf(float(x)) for x in m0] + [mp.mpf(float(x)) for x in q0])(mp.mpf(float(h)))
    g = mp.sqrt(sum(x * x for x in y[:3]))
    return [x / g for x in y[:3]], y[3:]


def cases(rng):
    m0 = rng.normal(size=(N, 3)) * 10.0 ** rng.uniform(-3, 3, size=(N, 1))
    A = rng.uniform(0.5, 3.0, N)
    ratio = np.exp(rng.uniform(np.log(0.25), np.log(4.0), N))
    ratio[::25] = 1.0                                   # spheres
    C = A * ratio
    axis = rng.integers(0, 3, N)
    inertia = np.repeat(A[:, None], 3, axis=1)
    inertia[np.arange(N), axis] = C
    q0 = rng.normal(size=(N, 4))
    q0 /= np.linalg.norm(q0, axis=1)[:, None]
    phase = 63.9 * rng.uniform(0, 1, N) ** 0.5
    h = phase * inertia.min(1) / np.linalg.norm(m0, axis=1) * rng.choice([-1.0, 1.0], N)
    return m0, q0, inertia, h


def split(x):
    hi = np.array([[float(v) for v in row] for row in x])
    lo = np.array([[float(v - mp.mpf(float(v))) for v in row] for row in x])
    return hi, lo


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--check", action="store_true", help="compare 4 cases with mpmath.odefun (slow)")
    args = ap.parse_args()
    mp.mp.dps = 40
    m0, q0, inertia, h = cases(np.random.default_rng(SEED))
    res = [symmetric_top(*c) for c in zip(m0, q0, h, inertia)]
    u1_hi, u1_lo = split([r[0] for r in res])
    q1_hi, q1_lo = split([r[1] for r in res])
    phase = np.abs(h) * np.linalg.norm(m0, axis=1) / inertia.min(1)
    np.savez_compressed(OUT, m0=m0, q0=q0, inertia=inertia, h=h, u1_hi=u1_hi, u1_lo=u1_lo,
                        q1_hi=q1_hi, q1_lo=q1_lo, phase=phase)
    print("wrote", os.path.normpath(OUT), len(h), "cases")
    if args.check:
        mp.mp.dps = 25
        for k in np.flatnonzero(h > 0)[:4]:      # (odefun integrates forwards only)
            t = h[k] / phase[k]          # one radian of |h| |m| / I_min
            u, q = odefun_solution(m0[k], q0[k], t, inertia[k])
            v, p = symmetric_top(m0[k], q0[k], t, inertia[k])
            print("case", k, "odefun - closed form:", float(max(abs(a - b) for a, b in zip(u + q, v + p))))


if __name__ == "__main__":
    main()
