"""Independent checks of the reference integrator (taylor.py) and of the files.

    python tests/reference/check_reference.py [--quick]

1. mpmath.odefun (mpmath's own Taylor integrator, 60 digits) on the unscaled
   16-dimensional system (m, Q, q) for a selection of stored cases.
2. Closed-form symmetric-top / sphere solution (uniform precession, no elliptic
   functions) for every symmetric case of the special set.
3. Truncation-order convergence: order 24 against the default order.
4. The stored files: load with allow_pickle=False, shapes, Q0 = E(q0) to rounding.
All differences are printed in units of |m| (for m) and absolute (for Q and q).
"""

import argparse
import os
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.dirname(HERE))
import taylor  # noqa: E402
import refdata  # noqa: E402
from mpmath import mp, mpf  # noqa: E402
import mpmath  # noqa: E402


def diffs(a, b, G):
    m1, Q1, q1 = a
    m2, Q2, q2 = b
    return (float(max(abs(x - y) for x, y in zip(m1, m2)) / G),
            float(max(abs(Q1[i][j] - Q2[i][j]) for i in range(3) for j in range(3))),
            float(max(abs(x - y) for x, y in zip(q1, q2))))


def odefun_flow(m0, Q0, q0, inertia, h, dps=60):
    with mp.workdps(dps):
        I = [mpf(float(x)) for x in inertia]
        y0 = ([mpf(float(x)) for x in m0] + [mpf(float(Q0[i][j])) for i in range(3) for j in range(3)]
              + [mpf(float(x)) for x in q0])
        sgn = 1 if h >= 0 else -1

        def F(t, y):
            m = y[0:3]
            w = [m[i] / I[i] for i in range(3)]
            dm = [m[1] * w[2] - m[2] * w[1], m[2] * w[0] - m[0] * w[2], m[0] * w[1] - m[1] * w[0]]
            dQ = []
            for i in range(3):
                x = y[3 + 3 * i: 6 + 3 * i]      # row i of Q: row' = row x w
                dQ += [x[1] * w[2] - x[2] * w[1], x[2] * w[0] - x[0] * w[2],
                       x[0] * w[1] - x[1] * w[0]]
            dq = taylor.quat_mul_mp(y[12:16], [0] + w)
            return [sgn * v for v in dm + dQ + [v / 2 for v in dq]]

        sol = mpmath.odefun(F, 0, y0)
        y = sol(abs(mpf(float(h))))
        return (y[0:3], [y[3:6], y[6:9], y[9:12]], y[12:16])


def expm_hat(v):
    th = mp.sqrt(sum(x * x for x in v))
    H = [[0, -v[2], v[1]], [v[2], 0, -v[0]], [-v[1], v[0], 0]]
    H2 = [[sum(H[i][k] * H[k][j] for k in range(3)) for j in range(3)] for i in range(3)]
    if th == 0:
        a, b = mpf(1), mpf(0.5)
    else:
        a, b = mp.sin(th) / th, (1 - mp.cos(th)) / th ** 2
    return [[(1 if i == j else 0) + a * H[i][j] + b * H2[i][j] for j in range(3)]
            for i in range(3)]


def matmul(A, B):
    return [[sum(A[i][k] * B[k][j] for k in range(3)) for j in range(3)] for i in range(3)]


def symmetric_flow(m0, Q0, inertia, h):
    """Uniform precession for I_a = I_b (d the distinct axis; any for the sphere)."""
    with mp.workprec(taylor.MP_PREC):
        I = [mpf(float(x)) for x in inertia]
        m = [mpf(float(x)) for x in m0]
        Q0 = [[mpf(float(Q0[i][j])) for j in range(3)] for i in range(3)]
        t = mpf(float(h))
        if I[0] == I[1]:
            d = 2
        elif I[1] == I[2]:
            d = 0
        else:
            d = 1
        a = I[(d + 1) % 3]
        Om = m[d] * (1 / I[d] - 1 / a)
        ed = [mpf(1 if i == d else 0) for i in range(3)]
        A = expm_hat([t * x / a for x in m])
        B = expm_hat([t * Om * x for x in ed])
        R = matmul(A, B)
        Bt = [[B[j][i] for j in range(3)] for i in range(3)]
        m1 = [sum(Bt[i][k] * m[k] for k in range(3)) for i in range(3)]
        return m1, matmul(Q0, R)


def check_files():
    print("files:")
    for name in ("generic", "api", "special"):
        try:
            d = refdata.load(name)
        except FileNotFoundError:
            print("  %s: missing" % name)
            continue
        n = d["h"].shape[0]
        assert d["m0"].shape == (n, 3) and d["Q0"].shape == (n, 3, 3) and d["q0"].shape == (n, 4)
        assert d["inertia"].shape == (n, 3) and d["m1"].shape == (n, 3)
        assert d["Q1"].shape == (n, 3, 3) and d["q1"].shape == (n, 4) and d["label"].shape == (n,)
        orth = np.abs(np.einsum("nij,nkj->nik", d["Q0"], d["Q0"]) - np.eye(3)).max()
        q = d["q0"] / np.linalg.norm(d["q0"], axis=1)[:, None]
        v = q[:, 1:]
        H = np.zeros((n, 3, 3))
        H[:, 0, 1], H[:, 0, 2], H[:, 1, 2] = -v[:, 2], v[:, 1], -v[:, 0]
        H -= H.transpose(0, 2, 1)
        E = np.eye(3) + 2 * q[:, 0, None, None] * H + 2 * H @ H
        print("  %-8s n=%3d  |Q0 Q0^T - 1| %.1e  |Q0 - E(q0)| %.1e  |Q1 Q1^T - 1| %.1e"
              % (name, n, orth, np.abs(E - d["Q0"]).max(),
                 np.abs(np.einsum("nij,nkj->nik", d["Q1"], d["Q1"]) - np.eye(3)).max()))


def main(argv=None):
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true", help="fewer odefun cases")
    a = ap.parse_args(argv)
    check_files()

    # 1. odefun
    # odefun caps its step at 1 time unit, so only cases with |h| <~ 10 are picked
    pick = {"generic": [0, 1, 3, 7, 20], "api": [12, 19, 45, 52]}
    sp = refdata.load("special")
    want = ("axis 2 exactly", "near axis 2 (angle 1e-06)", "separatrix m1 opp", "near separatrix eps=+1e-09",
            "nearly symmetric I2=I1(1+1e-06)", "scale |m|=1e+08, inertia*1e-06")
    pick["special"] = []
    for w in want:
        idx = [i for i, s in enumerate(sp["label"]) if s.startswith(w)]
        if idx:
            pick["special"].append(idx[0])
    if a.quick:
        pick = {k: v[:1] for k, v in pick.items()}
    print("mpmath.odefun (dps 60) vs taylor.flow, differences (m/|m|, Q, q):")
    worst = [0.0, 0.0, 0.0]
    for name, idxs in pick.items():
        d = refdata.load(name)
        for i in idxs:
            args = (d["m0"][i], d["Q0"][i], d["q0"][i], d["inertia"][i], d["h"][i])
            t0 = time.perf_counter()
            with mp.workprec(taylor.MP_PREC):
                ref = taylor.flow(*args)
                G = mp.sqrt(sum(mpf(float(x)) ** 2 for x in args[0]))
            t1 = time.perf_counter()
            ode = odefun_flow(*args)
            t2 = time.perf_counter()
            dd = diffs(ref, ode, G)
            worst = [max(x, y) for x, y in zip(worst, dd)]
            print("  %.1e %.1e %.1e  (taylor %.2fs, odefun %.1fs)  %s #%d: %s"
                  % (dd + (t1 - t0, t2 - t1, name, i, d["label"][i].split(": ")[-1])))
    print("  worst: %.1e %.1e %.1e" % tuple(worst))

    # 2. closed-form symmetric top
    print("closed-form symmetric top vs stored / taylor.flow (special set):")
    worst_hp = [0.0, 0.0]
    worst_st = [0.0, 0.0]
    n = 0
    for i, lab in enumerate(sp["label"]):
        I = sp["inertia"][i]
        if not (I[0] == I[1] or I[1] == I[2] or I[0] == I[2]):
            continue
        n += 1
        args = (sp["m0"][i], sp["Q0"][i], sp["q0"][i], I, sp["h"][i])
        with mp.workprec(taylor.MP_PREC):
            m1, Q1, _ = taylor.flow(*args)
            ms, Qs = symmetric_flow(sp["m0"][i], sp["Q0"][i], I, sp["h"][i])
            G = mp.sqrt(sum(mpf(float(x)) ** 2 for x in args[0]))
            dm = float(max(abs(x - y) for x, y in zip(m1, ms)) / G)
            dQ = float(max(abs(Q1[r][c] - Qs[r][c]) for r in range(3) for c in range(3)))
        sm = float(np.abs(sp["m1"][i] - np.array([float(x) for x in ms])).max() / float(G))
        sQ = float(np.abs(sp["Q1"][i] - np.array([[float(x) for x in r] for r in Qs])).max())
        worst_hp = [max(worst_hp[0], dm), max(worst_hp[1], dQ)]
        worst_st = [max(worst_st[0], sm), max(worst_st[1], sQ)]
    print("  %d cases; high precision: m %.1e Q %.1e; stored float64: m %.1e Q %.1e"
          % (n, worst_hp[0], worst_hp[1], worst_st[0], worst_st[1]))

    # 3. order convergence
    print("order 24 vs order %d (same step rule):" % taylor.ORDER)
    d = refdata.load("generic")
    for i in (0, 2):
        args = (d["m0"][i], d["Q0"][i], d["q0"][i], d["inertia"][i], d["h"][i])
        with mp.workprec(taylor.MP_PREC):
            a1 = taylor.flow(*args)
            a2 = taylor.flow(*args, order=24)
            G = mp.sqrt(sum(mpf(float(x)) ** 2 for x in args[0]))
        print("  %.1e %.1e %.1e  generic #%d" % (diffs(a1, a2, G) + (i,)))


if __name__ == "__main__":
    main()
