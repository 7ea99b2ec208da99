"""Accuracy of the exact flow for symmetric and nearly symmetric bodies at long steps, the
spread of the invariants over many steps from one state, and the drift of chained steps.

Three measurements (print only; run with ``python benchmarks/symmetric_accuracy.py``):

1. ``--bodies`` random bodies per family at steps of ``|h| |m| / I_min`` up to just below the
   switch to quadruple precision (``long_step_threshold``): symmetric bodies (two equal moments,
   either pair) against the closed form of the free symmetric top in mpmath (40 digits), and
   nearly symmetric ones (``I1/I2 - 1`` up to 1e-6, and asymmetric ones for comparison) against
   the extended-precision Taylor integrator of ``reference_longdouble`` (eps 1.1e-19). Reports the
   largest error of ``m/|m|`` and of the quaternion (random attitudes).
2. From one state, 1000 single steps to times spread over ``(0, T]``: the spread (max - min) of
   ``|m|``, the energy and ``Q m`` computed in double precision from the returned states, in ulps
   of their size (``Q m`` as ``frb.quat_to_matrix`` of the normalised quaternion times ``m``, and
   by the rotation formula of the quaternion); and the spread of the exact value of ``Q m`` for
   the returned doubles (``E(q / |q|) m`` in 30-digit mpmath), the quality of the states themselves,
   free of the evaluation's rounding. For symmetric bodies the same figures of the correctly
   rounded exact states (the floor of each evaluation).
3. ``--steps`` chained exact steps (h = 0.1) of 16 random free bodies
   (``frb._testing.quat_integrate_batch``): the relative drift of ``|m|``, the energy and ``Q m``.
"""
from __future__ import annotations

import argparse
import os
import sys
import time

import mpmath as mp
import numpy as np

import frb
from frb import _testing
from frb._numbers_table import LONG_STEP_THRESHOLD

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import reference_longdouble as rl  # noqa: E402


def qmul(a, b):
    a0, a1, a2, a3 = np.moveaxis(a, -1, 0)
    b0, b1, b2, b3 = np.moveaxis(b, -1, 0)
    return np.stack([a0 * b0 - a1 * b1 - a2 * b2 - a3 * b3, a0 * b1 + a1 * b0 + a2 * b3 - a3 * b2,
                     a0 * b2 - a1 * b3 + a2 * b0 + a3 * b1, a0 * b3 + a1 * b2 - a2 * b1 + a3 * b0], -1)


def rotate(q, v):
    """E(q) v for unit quaternions q (scalar first)."""
    w = qmul(qmul(q, np.concatenate([np.zeros(v.shape[:-1] + (1,)), v], -1)),
             q * np.array([1.0, -1.0, -1.0, -1.0]))
    return w[..., 1:]


def symmetric_top(m0, q0, h, inertia):
    """40-digit m(h), q(h) of a symmetric body: with A the equal moments, C the other on axis s,
    Omega = m_s (1/A - 1/C): m(t) = R_s(Omega t) m0 and q(t) = q0 (cos(a/2), sin(a/2) m0/|m0|)
    (cos(b/2), -sin(b/2) e_s), a = |m0| t / A, b = Omega t (Landau and Lifshitz, Mechanics, 33)."""
    with mp.workdps(40):
        I = [mp.mpf(float(x)) for x in inertia]
        m = [mp.mpf(float(x)) for x in m0]
        s = 2 if I[0] == I[1] else (0 if I[1] == I[2] else 1)
        A, C = I[(s + 1) % 3], I[s]
        t = mp.mpf(float(h))
        g = mp.sqrt(sum(x * x for x in m))
        a, b = g * t / A, m[s] * (1 / A - 1 / C) * t
        qa = [mp.cos(a / 2)] + [mp.sin(a / 2) * x / g for x in m]
        qb = [mp.cos(b / 2), 0, 0, 0]
        qb[1 + s] = -mp.sin(b / 2)
        q = [mp.mpf(float(x)) for x in q0]

        def mul(x, y):
            return [x[0] * y[0] - x[1] * y[1] - x[2] * y[2] - x[3] * y[3],
                    x[0] * y[1] + x[1] * y[0] + x[2] * y[3] - x[3] * y[2],
                    x[0] * y[2] - x[1] * y[3] + x[2] * y[0] + x[3] * y[1],
                    x[0] * y[3] + x[1] * y[2] - x[2] * y[1] + x[3] * y[0]]
        qq = mul(q, mul(qa, qb))
        i, j = (s + 1) % 3, (s + 2) % 3
        m1 = list(m)
        m1[i] = mp.cos(b) * m[i] - mp.sin(b) * m[j]
        m1[j] = mp.sin(b) * m[i] + mp.cos(b) * m[j]
        return ([float(x / g) for x in m1], [float(x) for x in qq],
                [float(x / g - float(x / g)) for x in m1], [float(x - float(x)) for x in qq])


def random_bodies(rng, n, family):
    m = rng.normal(size=(n, 3))
    q = rng.normal(size=(n, 4))
    q /= np.linalg.norm(q, axis=1)[:, None]
    A = rng.uniform(1, 3, n)
    ratio = rng.uniform(1.05, 4, n)
    pair_low = rng.random(n) < 0.5
    C = np.where(pair_low, A * ratio, A / ratio)
    if family == "asymmetric":
        inertia = np.sort(rng.uniform(1, 3, (n, 3)), 1)
    else:
        eps = 0.0 if family == "symmetric" else 1e-6 * rng.random(n)
        a1 = A * (1 - eps)
        inertia = np.where(pair_low[:, None], np.stack([a1, A, C], 1), np.stack([C, a1, A], 1))
    phase = LONG_STEP_THRESHOLD * rng.uniform(0.0, 1.0, n) ** 0.5
    h = phase * inertia.min(1) / np.linalg.norm(m, axis=1) * 0.999
    return m, q, h, inertia


def errors_vs(m, q, h, inertia, family):
    mo, qo = frb.quat_step(m, q, h, inertia)
    mo_u = mo / np.linalg.norm(mo, axis=1)[:, None]
    if family == "symmetric":
        em = np.empty(len(m))
        eq = np.empty(len(m))
        for k in range(len(m)):
            m1, q1, m1l, q1l = symmetric_top(m[k], q[k], h[k], inertia[k])
            s = 1.0 if np.dot(qo[k], q1) >= 0 else -1.0
            em[k] = np.max(np.abs((mo_u[k] - m1) - m1l))
            eq[k] = np.max(np.abs((s * qo[k] - q1) - q1l))
        return em, eq
    m1, _, q1 = rl.flow(m.astype(rl.LD), inertia.astype(rl.LD), h.astype(rl.LD), q0=q.astype(rl.LD))
    m1u = m1 / np.sqrt((m1 * m1).sum(1))[:, None]
    s = np.sign((qo * q1).sum(1))[:, None]
    return (np.abs(mo_u - m1u).max(1).astype(float), np.abs(s * qo - q1).max(1).astype(float))


def invariants(m, q, inertia):
    """|m|, the energy and Q m in double precision (frb's own evaluations)."""
    return (np.linalg.norm(m, axis=-1), frb.kinetic_energy(m, inertia),
            np.einsum("...ij,...j->...i", frb.quat_to_matrix(q / np.linalg.norm(q, axis=-1)[..., None]), m))


def rotated_by_formula(q, m):
    """E(q/|q|) m in double precision by the rotation formula m + 2 q0 (u x m) + 2 u x (u x m)."""
    q = q / np.linalg.norm(q, axis=-1)[..., None]
    u = q[..., 1:]
    t = 2 * np.cross(u, m)
    return m + q[..., :1] * t + np.cross(u, t)


def exact_rotated(q, m):
    """The exact E(q/|q|) m of the doubles q, m in 30-digit mpmath,
    ((q0^2 - |u|^2) m + 2 (u . m) u + 2 q0 (u x m)) / |q|^2, less that of the first state (so that
    the differences, whose spread is wanted, are rounded to double only at their own size)."""
    out = []
    with mp.workdps(30):
        for k in range(len(q)):
            q0, u1, u2, u3 = (mp.mpf(float(x)) for x in q[k])
            x, y, z = (mp.mpf(float(v)) for v in m[k])
            n2 = q0 * q0 + u1 * u1 + u2 * u2 + u3 * u3
            a = q0 * q0 - (u1 * u1 + u2 * u2 + u3 * u3)
            d = 2 * (u1 * x + u2 * y + u3 * z)
            out.append([(a * x + d * u1 + 2 * q0 * (u2 * z - u3 * y)) / n2,
                        (a * y + d * u2 + 2 * q0 * (u3 * x - u1 * z)) / n2,
                        (a * z + d * u3 + 2 * q0 * (u1 * y - u2 * x)) / n2])
        return np.array([[float(v - w) for v, w in zip(row, out[0])] for row in out])


def spread_ulps(m, q, inertia):
    """|m|, the energy, Q m (matrix), Q m (rotation formula), exact Q m: spreads in ulps."""
    g, e, M = invariants(m, q, inertia)
    ug = np.spacing(g.max())
    return np.array([np.ptp(g) / ug, np.ptp(e) / np.spacing(e.max()), np.ptp(M, axis=0).max() / ug,
                     np.ptp(rotated_by_formula(q, m), axis=0).max() / ug,
                     np.ptp(exact_rotated(q, m), axis=0).max() / ug])


def spread(rng, n_times=1000, bodies=8):
    """Largest spread in ulps over a few bodies a family; for symmetric bodies also the spread of
    the same evaluations on the correctly rounded exact states (the floor of the evaluation)."""
    out = {}
    for family in ("symmetric", "nearly symmetric", "asymmetric"):
        worst = np.zeros(5)
        floor = np.zeros(5)
        for _ in range(bodies):
            m, q, h, inertia = random_bodies(rng, 1, family)
            t = np.sort(rng.uniform(0, 1, n_times)) * h[0]
            mo, qo = frb.quat_step(np.repeat(m, n_times, 0), np.repeat(q, n_times, 0), t,
                                   np.repeat(inertia, n_times, 0))
            worst = np.maximum(worst, spread_ulps(mo, qo, inertia[0]))
            if family == "symmetric":
                ref = [symmetric_top(m[0], q[0], tk, inertia[0]) for tk in t]
                g = np.linalg.norm(m[0])
                mr = np.array([r[0] for r in ref]) * g
                qr = np.array([r[1] for r in ref])
                floor = np.maximum(floor, spread_ulps(mr, qr, inertia[0]))
        out[family] = (worst, floor if family == "symmetric" else None)
    return out


def drift(rng, steps, n=16, h=0.1, record=10):
    m = rng.normal(size=(n, 3))
    q = rng.normal(size=(n, 4))
    q /= np.linalg.norm(q, axis=1)[:, None]
    inertia = np.sort(rng.uniform(1, 3, (n, 3)), 1)
    g0, e0, M0 = invariants(m, q, inertia)
    hs = np.full(n, h)
    worst = np.zeros(3)
    for _ in range(record):
        mo, qo = _testing.quat_integrate_batch(m.T, q.T, hs, inertia.T, 0, steps // record, threads=1)
        m, q = np.ascontiguousarray(mo.T), np.ascontiguousarray(qo.T)
        g, e, M = invariants(m, q, inertia)
        worst = np.maximum(worst, [np.max(np.abs(g / g0 - 1)), np.max(np.abs(e / e0 - 1)),
                                   np.max(np.linalg.norm(M - M0, axis=1) / g0)])
    return worst


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--bodies", type=int, default=10000)
    ap.add_argument("--steps", type=int, default=100000)
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args()
    rng = np.random.default_rng(args.seed)
    print(f"1. largest errors, {args.bodies} bodies a family, |h| |m| / I_min in (0, {LONG_STEP_THRESHOLD})")
    for family in ("symmetric", "nearly symmetric", "asymmetric"):
        t0 = time.perf_counter()
        m, q, h, inertia = random_bodies(rng, args.bodies, family)
        em, eq = errors_vs(m, q, h, inertia, family)
        print(f"   {family:17s} m/|m| {em.max():.2e}   q {eq.max():.2e}   ({time.perf_counter() - t0:.0f} s)")
    print("2. spread of the invariants over 1000 single steps from one state (ulps of their size)")
    for family, (w, floor) in spread(rng).items():
        print(f"   {family:17s} |m| {w[0]:.1f}   energy {w[1]:.1f}   Q m {w[2]:.1f} (formula {w[3]:.1f}, "
              f"exact {w[4]:.1f})")
        if floor is not None:
            print(f"   {'(exact states)':17s} |m| {floor[0]:.1f}   energy {floor[1]:.1f}   Q m {floor[2]:.1f} "
                  f"(formula {floor[3]:.1f}, exact {floor[4]:.1f})")
    w = drift(rng, args.steps)
    print(f"3. {args.steps} chained steps h = 0.1, 16 bodies: relative drift |m| {w[0]:.2e}   "
          f"energy {w[1]:.2e}   Q m {w[2]:.2e}")


if __name__ == "__main__":
    main()
