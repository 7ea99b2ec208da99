"""Accuracy map of the exact flows (Fig. 5 of Celledoni & Zanna, ACM TOMS 903).

    python benchmarks/accuracy_map.py [--nx 100 --ny 50 --nmom 20 --rng 0 --h 1]
                                      [--ymin 0.5] [--validate 20] [--out benchmarks/results]

Inertia I = (x, y, 1) on the triangle 0 < 1 - y <= x < y < 1 (x = I1/I3, y = I2/I3),
sampled by a rectangular grid of NX x NY points superimposed on it: x_i = i / (NX + 1),
i = 1..NX, and y_j = ymin + (1 - ymin) j / (NY + 1), j = 1..NY; only the points strictly
inside the triangle are kept.  The default ymin = 1/2 makes the grid cover the bounding box
[0, 1] x [1/2, 1] of the triangle (square cells for 100 x 50, as in the paper); --ymin 0 puts
the y grid on (0, 1) (then only about half of the rows meet the triangle).

At each point NMOM initial momenta, uniform on the unit sphere in the first octant, Q0 = 1,
q0 = (1, 0, 0, 0), one step h for frb_step (matrix) and quat_step (quaternion).  The
reference is an independent Taylor-series integration in np.longdouble
(benchmarks/reference_longdouble.py), itself checked against the 180-bit fixed-point
mpmath integrator of tests/reference/taylor.py on --validate cases (the worst cases of each
flow, the corners of the triangle and random ones).

Error of one IVP: max abs error over the components of m/|m| and of the attitude (entries of
Q for the matrix flow, of q for the quaternion flow).  Per grid point: the mean over the
momenta of log10(max(error, 1e-17)).

Writes to --out: accuracy_map.csv (x, y, mean_log10_err_matrix, mean_log10_err_quat,
max_err_matrix, max_err_quat), accuracy_map.png (needs matplotlib; skipped with a message
otherwise) and accuracy_map.md (summary).  The file stem can be changed with --stem.
"""

from __future__ import annotations

import argparse
import csv
import os
import platform
import sys
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
sys.path.insert(0, str(HERE))
import reference_longdouble as ref  # noqa: E402

LD = np.longdouble
CLIP = 1e-17
BUG_THRESHOLD = 1e-13


def import_frb():
    """The installed, compiled package (the source folder has no _core)."""
    # running from the repository root with -m or -c would put the source folder first
    sys.path[:] = [p for p in sys.path if os.path.abspath(p or os.getcwd()) != str(REPO)]
    import frb

    try:
        import frb._core  # noqa: F401
    except ImportError as exc:  # pragma: no cover - environment problem
        raise SystemExit(f"frb imported from {frb.__file__} has no compiled core ({exc}); "
                         "install the package and do not run from the repository root") from exc
    return frb


# ------------------------------------------------------------------ grid and data

def make_grid(nx, ny, ymin=0.5):
    """Points (x, y) of the rectangular grid strictly inside the triangle.

    Returns xs (nx,), ys (ny,), and the index arrays (ix, iy) of the kept points.
    """
    xs = np.arange(1, nx + 1) / (nx + 1.0)
    ys = ymin + (1.0 - ymin) * np.arange(1, ny + 1) / (ny + 1.0)
    X, Y = np.meshgrid(xs, ys, indexing="ij")
    inside = (1.0 - Y < X) & (X < Y) & (Y < 1.0) & (X > 0.0)
    ix, iy = np.nonzero(inside)
    return xs, ys, ix, iy


def random_momenta(npts, nmom, rng):
    """Unit momenta uniform on the first-octant part of the sphere, (npts, nmom, 3)."""
    rng = np.random.default_rng(rng)
    m = np.abs(rng.standard_normal((npts, nmom, 3)))
    return m / np.linalg.norm(m, axis=-1, keepdims=True)


def unit_ld(m):
    m = np.asarray(m, dtype=LD)
    return m / np.sqrt((m * m).sum(axis=-1, keepdims=True))


def errors(m_ref, Q_ref, q_ref, m_mat, Q_mat, m_quat, q_quat):
    """Per-IVP errors (max abs) of both flows against the reference (all (n, ...))."""
    u_ref = unit_ld(m_ref)
    e_m_mat = np.abs(unit_ld(m_mat) - u_ref).max(axis=1)
    e_Q = np.abs(np.asarray(Q_mat, dtype=LD) - Q_ref).max(axis=(1, 2))
    e_m_quat = np.abs(unit_ld(m_quat) - u_ref).max(axis=1)
    dq = np.asarray(q_quat, dtype=LD)
    e_q = np.abs(dq - q_ref).max(axis=1)
    e_q_flip = np.abs(dq + q_ref).max(axis=1)      # same rotation, other sign
    return {
        "matrix": np.maximum(e_m_mat, e_Q).astype(np.float64),
        "quat": np.maximum(e_m_quat, e_q).astype(np.float64),
        "m_matrix": e_m_mat.astype(np.float64),
        "Q": e_Q.astype(np.float64),
        "m_quat": e_m_quat.astype(np.float64),
        "q": e_q.astype(np.float64),
        "q_flip": e_q_flip.astype(np.float64),
    }


# ------------------------------------------------------------------ validation

def validate_reference(cases, h, log=print):
    """Compare the longdouble reference with tests/reference/taylor.py (mpmath, 180 bits).

    cases: list of (label, m0 (3,), inertia (3,)).  Returns a list of dicts (label,
    inertia, m0, err, seconds) or None when the mpmath integrator is unavailable.
    """
    try:
        sys.path.insert(0, str(REPO / "tests" / "reference"))
        import taylor
        from mpmath import mp, mpf
    except ImportError as exc:
        log(f"reference validation skipped: {exc}")
        return None
    finally:
        if sys.path[0] == str(REPO / "tests" / "reference"):
            sys.path.pop(0)
    m0 = np.array([c[1] for c in cases])
    inertia = np.array([c[2] for c in cases])
    m1, Q1, q1 = ref.flow(m0, inertia, h)
    out = []
    for i, (label, m, I) in enumerate(cases):
        t0 = time.perf_counter()
        mm, QQ, qq = taylor.flow(m, np.eye(3), [1.0, 0.0, 0.0, 0.0], I, h)
        with mp.workprec(200):
            def to_mp(v):
                hi, lo = ref.split_float64(v)
                return mpf(float(hi)) + mpf(float(lo))
            e = max([abs(to_mp(m1[i, j]) - mm[j]) for j in range(3)]
                    + [abs(to_mp(Q1[i, j, k]) - QQ[j][k]) for j in range(3) for k in range(3)]
                    + [abs(to_mp(q1[i, j]) - qq[j]) for j in range(4)])
        out.append(dict(label=label, inertia=I, m0=m, err=float(e),
                        seconds=time.perf_counter() - t0))
    return out


def validation_cases(P, M, err, ntotal, rng):
    """Worst IVPs of each flow, the grid points nearest the triangle's corners, then random
    ones up to ntotal distinct IVPs."""
    npts, nmom = M.shape[:2]
    chosen = []
    for key in ("matrix", "quat"):
        order = np.argsort(err[key].ravel())[::-1]
        for flat in order[:3]:
            chosen.append((f"worst {key}", flat))
    for name, (cx, cy) in (("corner (0,1)", (0.0, 1.0)), ("corner (1/2,1/2)", (0.5, 0.5)),
                           ("corner (1,1)", (1.0, 1.0))):
        ip = int(np.argmin((P[:, 0] - cx) ** 2 + (P[:, 1] - cy) ** 2))
        for k in range(2):
            chosen.append((name, ip * nmom + k))
    seen, cases = set(), []

    def add(label, flat):
        if flat not in seen:
            seen.add(flat)
            ip, k = divmod(int(flat), nmom)
            cases.append((label, M[ip, k], np.array([P[ip, 0], P[ip, 1], 1.0])))

    for label, flat in chosen:
        add(label, int(flat))
    target = max(ntotal, len(cases))
    while len(cases) < min(target, npts * nmom):
        add("random", int(rng.integers(npts * nmom)))
    return cases


def sensitivity(m0, inertia, h, nrep=16, rng=0):
    """Conditioning floor of IVPs: max change of the exact solution (m/|m|, Q, q, by the
    reference) under random relative perturbations of 2**-53 of every component of m0 and of
    the inertia, i.e. the error a backward-stable float64 method may make.  m0, inertia (n, 3).
    """
    rng = np.random.default_rng(rng)
    n = m0.shape[0]
    base = ref.flow(m0, inertia, h)
    pm = np.repeat(np.asarray(m0, dtype=LD), nrep, axis=0)
    pI = np.repeat(np.asarray(inertia, dtype=LD), nrep, axis=0)
    u = LD(2.0 ** -53)
    pm *= 1 + u * rng.choice([-1, 1], pm.shape)
    pI *= 1 + u * rng.choice([-1, 1], pI.shape)
    pert = ref.flow(pm, pI, h)

    def flat(out, reps):
        u_ = unit_ld(out[0])
        return np.concatenate([u_, out[1].reshape(-1, 9), out[2]], axis=1)

    b = np.repeat(flat(base, 1), nrep, axis=0)
    d = np.abs(flat(pert, nrep) - b).max(axis=1).reshape(n, nrep).max(axis=1)
    return d.astype(np.float64)


# ------------------------------------------------------------------ output

def write_csv(path, P, mean_mat, mean_quat, max_mat, max_quat):
    with open(path, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["x", "y", "mean_log10_err_matrix", "mean_log10_err_quat",
                    "max_err_matrix", "max_err_quat"])
        for (x, y), a, b, c, d in zip(P, mean_mat, mean_quat, max_mat, max_quat):
            w.writerow([repr(float(x)), repr(float(y)), f"{a:.4f}", f"{b:.4f}",
                        f"{c:.3e}", f"{d:.3e}"])


def plot(path, xs, ys, ix, iy, mean_mat, mean_quat, worst, h):
    """Two heat maps with a common colour scale; returns a message."""
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return "matplotlib not installed: accuracy_map.png NOT written (pip install matplotlib)"
    grids = []
    for vals in (mean_mat, mean_quat):
        Z = np.full((xs.size, ys.size), np.nan)
        Z[ix, iy] = vals
        grids.append(Z)
    vmin = float(np.floor(min(np.nanmin(Z) for Z in grids) * 2) / 2)
    vmax = float(np.ceil(max(np.nanmax(Z) for Z in grids) * 2) / 2)
    # cell edges halfway between grid nodes
    def edges(v):
        mid = (v[1:] + v[:-1]) / 2
        return np.concatenate([[2 * v[0] - mid[0]], mid, [2 * v[-1] - mid[-1]]])
    ex, ey = edges(xs), edges(ys)
    fig, axes = plt.subplots(1, 2, figsize=(12, 3.7), constrained_layout=True)
    for ax, Z, name, key in zip(axes, grids, ("matrix (frb_step)", "quaternion (quat_step)"),
                                ("matrix", "quat")):
        im = ax.pcolormesh(ex, ey, Z.T, vmin=vmin, vmax=vmax, cmap="viridis", shading="flat")
        ax.plot([0, 0.5, 1, 0], [1, 0.5, 1, 1], "k-", lw=0.8)
        e, (x, y) = worst[key]
        ax.plot([x], [y], "rx", ms=8)
        ax.set_title(f"{name}: worst error {e:.2e} at x={x:.3f}, y={y:.3f}", fontsize=10)
        ax.set_xlabel("x = I1/I3")
        ax.set_ylabel("y = I2/I3")
        ax.set_xlim(0, 1)
        ax.set_ylim(min(0.5, ey[0]), 1)
        ax.set_aspect("equal")
    cb = fig.colorbar(im, ax=axes, shrink=0.9)
    cb.set_label("mean log10 error")
    fig.suptitle(f"Exact flows vs extended-precision Taylor reference, h = {h:g} "
                 "(colour: mean log10 error over the initial momenta)", fontsize=10)
    fig.savefig(path, dpi=130)
    plt.close(fig)
    return f"wrote {path}"


def fmt_case(x, y, m):
    return f"x={float(x)!r}, y={float(y)!r}, m0=[{', '.join(repr(float(c)) for c in m)}]"


# ------------------------------------------------------------------ main

def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--nx", type=int, default=100)
    ap.add_argument("--ny", type=int, default=50)
    ap.add_argument("--nmom", type=int, default=20)
    ap.add_argument("--rng", type=int, default=0)
    ap.add_argument("--h", type=float, default=1.0)
    ap.add_argument("--ymin", type=float, default=0.5,
                    help="lower end of the y grid (0.5: bounding box of the triangle; 0: (0, 1))")
    ap.add_argument("--validate", type=int, default=20,
                    help="number of IVPs checked against the mpmath reference (0: none)")
    ap.add_argument("--out", default=str(HERE / "results"))
    ap.add_argument("--stem", default="accuracy_map")
    args = ap.parse_args(argv)

    t_start = time.perf_counter()
    frb = import_frb()
    ref.check_precision()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)

    xs, ys, ix, iy = make_grid(args.nx, args.ny, args.ymin)
    P = np.stack([xs[ix], ys[iy]], axis=1)
    npts, nmom = P.shape[0], args.nmom
    if npts == 0:
        raise SystemExit("no grid point inside the triangle")
    M = random_momenta(npts, nmom, args.rng)
    n = npts * nmom
    m0 = M.reshape(n, 3)
    inertia = np.repeat(np.column_stack([P, np.ones(npts)]), nmom, axis=0)
    print(f"grid {args.nx} x {args.ny} (y from {args.ymin:g}): {npts} points in the triangle, "
          f"{nmom} momenta each, {n} IVPs per flow, h = {args.h:g}")
    print(ref.precision_note())

    t0 = time.perf_counter()
    m_ref, Q_ref, q_ref, nsteps = ref.flow(m0, inertia, args.h, return_nsteps=True)
    t_ref = time.perf_counter() - t0
    defects = {k: float(v.max()) for k, v in
               ref.invariant_defects(m0, inertia, m_ref, Q_ref, q_ref).items()}
    print(f"reference: {t_ref:.1f} s, Taylor order {ref.ORDER}, steps per IVP mean "
          f"{nsteps.mean():.1f} max {nsteps.max()}; invariant defects max "
          + ", ".join(f"{k} {v:.1e}" for k, v in defects.items()))

    eye = np.broadcast_to(np.eye(3), (n, 3, 3)).copy()
    q1 = np.zeros((n, 4))
    q1[:, 0] = 1.0
    t0 = time.perf_counter()
    m_mat, Q_mat = frb.frb_step(m0, eye, args.h, inertia)
    t_mat = time.perf_counter() - t0
    t0 = time.perf_counter()
    m_quat, q_quat = frb.quat_step(m0, q1, args.h, inertia)
    t_quat = time.perf_counter() - t0
    print(f"frb_step {t_mat:.2f} s, quat_step {t_quat:.2f} s for {n} IVPs each")

    err = errors(m_ref, Q_ref, q_ref, m_mat, Q_mat, m_quat, q_quat)
    err = {k: v.reshape(npts, nmom) for k, v in err.items()}
    logs = {k: np.log10(np.maximum(err[k], CLIP)).mean(axis=1) for k in ("matrix", "quat")}
    maxes = {k: err[k].max(axis=1) for k in ("matrix", "quat")}

    worst, lines = {}, []
    for key, name in (("matrix", "matrix (frb_step)"), ("quat", "quaternion (quat_step)")):
        flat = int(np.argmax(err[key]))
        ip, k = divmod(flat, nmom)
        worst[key] = (float(err[key][ip, k]), (float(P[ip, 0]), float(P[ip, 1])))
        wp = int(np.argmax(logs[key]))
        parts = ("m_matrix", "Q") if key == "matrix" else ("m_quat", "q")
        lines.append(dict(
            name=name, key=key, worst=float(err[key][ip, k]), case=fmt_case(P[ip, 0], P[ip, 1], M[ip, k]),
            worst_m=float(err[parts[0]][ip, k]), worst_att=float(err[parts[1]][ip, k]),
            median=float(np.median(err[key])), median_log=float(np.median(logs[key])),
            worst_mean=float(logs[key][wp]), worst_mean_at=(float(P[wp, 0]), float(P[wp, 1])),
            frac13=float((err[key] > 1e-13).mean()), frac14=float((err[key] > 1e-14).mean()),
            frac15=float((err[key] > 1e-15).mean())))

    # table
    print(f"\n{'flow':24s} {'worst error':>12s} {'median':>10s} {'>1e-14':>8s} {'>1e-13':>8s}  "
          "worst mean log10 at (x, y)")
    for L in lines:
        print(f"{L['name']:24s} {L['worst']:12.2e} {L['median']:10.2e} {L['frac14']:8.2%} "
              f"{L['frac13']:8.2%}  {L['worst_mean']:.2f} at ({L['worst_mean_at'][0]:.3f}, "
              f"{L['worst_mean_at'][1]:.3f})")
        print(f"{'':24s} worst IVP: {L['case']} (m part {L['worst_m']:.1e}, attitude "
              f"{L['worst_att']:.1e})")
    flips = int(((err["q"] > 1e-8) & (err["q_flip"] < 1e-8)).sum())
    if flips:
        print(f"NOTE: {flips} quaternion results equal MINUS the continuous solution (same rotation)")

    # the 5 worst IVPs of each flow, with the conditioning floor of the problem
    worst_list = {}
    for key in ("matrix", "quat"):
        flats = np.argsort(err[key].ravel())[::-1][:5]
        ips, ks = np.divmod(flats, nmom)
        sens = sensitivity(M[ips, ks], np.column_stack([P[ips], np.ones(ips.size)]), args.h)
        worst_list[key] = [(float(err[key][i, k]), float(s_), fmt_case(P[i, 0], P[i, 1], M[i, k]))
                           for i, k, s_ in zip(ips, ks, sens)]
        print(f"5 worst {key} IVPs (error / conditioning floor = change of the exact solution "
              "under 2^-53 relative perturbations of m0 and I):")
        for e, s_, case in worst_list[key]:
            print(f"  {e:.2e} / {s_:.1e}  {case}")

    bad = []
    for key in ("matrix", "quat"):
        for ip, k in zip(*np.nonzero(err[key] > BUG_THRESHOLD)):
            bad.append((float(err[key][ip, k]), key, fmt_case(P[ip, 0], P[ip, 1], M[ip, k])))
    bad.sort(reverse=True)
    if bad:
        print(f"\n{len(bad)} IVPs with error > {BUG_THRESHOLD:g} (largest first):")
        for e, key, case in bad[:20]:
            print(f"  {key:6s} {e:.2e}  {case}")

    # validation of the reference itself
    val = None
    t_val = 0.0
    if args.validate > 0:
        t0 = time.perf_counter()
        cases = validation_cases(P, M, err, args.validate, np.random.default_rng(args.rng + 1))
        val = validate_reference(cases, args.h)
        t_val = time.perf_counter() - t0
        if val:
            e = max(v["err"] for v in val)
            print(f"\nreference vs mpmath (tests/reference/taylor.py, 180 bits) on {len(val)} IVPs: "
                  f"max error {e:.2e} ({t_val:.0f} s)")

    write_csv(out / f"{args.stem}.csv", P, logs["matrix"], logs["quat"], maxes["matrix"], maxes["quat"])
    msg = plot(out / f"{args.stem}.png", xs, ys, ix, iy, logs["matrix"], logs["quat"], worst, args.h)
    print(msg)
    t_total = time.perf_counter() - t_start

    # markdown summary
    md = [f"# Accuracy map (Fig. 5 of TOMS 903), h = {args.h:g}", ""]
    md.append(f"- Command: `python benchmarks/accuracy_map.py --nx {args.nx} --ny {args.ny} "
              f"--nmom {nmom} --rng {args.rng} --h {args.h:g} --ymin {args.ymin:g}`")
    md.append(f"- Grid: {args.nx} x {args.ny} (x_i = i/{args.nx + 1}, y_j = {args.ymin:g} + "
              f"{1 - args.ymin:g} j/{args.ny + 1}), {npts} points strictly inside "
              f"0 < 1 - y <= x < y < 1; {nmom} random unit momenta per point (first octant, rng "
              f"{args.rng}); {n} IVPs per flow; Q0 = 1, q0 = (1, 0, 0, 0).")
    md.append("- Error of an IVP: max abs error of m/|m| and of the attitude entries (Q or q); "
              f"per point the mean of log10(max(error, {CLIP:g})).")
    md.append(f"- Reference: Taylor series of order {ref.ORDER} in {ref.precision_note()}, "
              f"{nsteps.mean():.1f} steps per IVP on average (max {nsteps.max()}); invariant defects "
              "(max over all IVPs): " + ", ".join(f"{k} {v:.1e}" for k, v in defects.items()) + ".")
    if val:
        worst_val = max(val, key=lambda v: v["err"])
        md.append(f"- Reference checked against the 180-bit mpmath Taylor integrator "
                  f"(tests/reference/taylor.py) on {len(val)} IVPs (worst IVPs of each flow, "
                  f"triangle corners, random): max error {worst_val['err']:.2e} "
                  f"(at x={worst_val['inertia'][0]:.4f}, y={worst_val['inertia'][1]:.4f}).")
    elif args.validate > 0:
        md.append("- Reference validation against mpmath skipped (mpmath/taylor.py unavailable).")
    md += ["", "| flow | worst error | worst IVP | median error | worst point mean log10 | "
           "IVPs > 1e-15 | > 1e-14 | > 1e-13 |", "|---|---|---|---|---|---|---|---|"]
    for L in lines:
        md.append(f"| {L['name']} | {L['worst']:.2e} (m {L['worst_m']:.1e}, attitude "
                  f"{L['worst_att']:.1e}) | {L['case']} | {L['median']:.2e} | {L['worst_mean']:.2f} at "
                  f"({L['worst_mean_at'][0]:.3f}, {L['worst_mean_at'][1]:.3f}) | {L['frac15']:.2%} | "
                  f"{L['frac14']:.2%} | {L['frac13']:.2%} |")
    md.append("")
    md.append("Worst IVPs of each flow; `floor` is the conditioning of the problem: the largest "
              "change of the exact solution (reference) under random relative perturbations of "
              "2^-53 of m0 and I, i.e. what a backward-stable float64 method may lose.")
    md.append("")
    md += ["| flow | error | floor | IVP |", "|---|---|---|---|"]
    for key in ("matrix", "quat"):
        md += [f"| {key} | {e:.2e} | {s_:.1e} | {case} |" for e, s_, case in worst_list[key]]
    md.append("")
    if flips:
        md.append(f"Note: {flips} quaternion results are minus the continuous solution.")
        md.append("")
    if bad:
        md.append(f"IVPs with error > {BUG_THRESHOLD:g} ({len(bad)}; largest 20):")
        md.append("")
        md += [f"- {key}: {e:.2e}, {case}" for e, key, case in bad[:20]]
    else:
        md.append(f"No IVP has an error above {BUG_THRESHOLD:g}.")
    md.append("")
    md.append(f"Run time: total {t_total:.0f} s (reference {t_ref:.1f} s, frb_step {t_mat:.2f} s, "
              f"quat_step {t_quat:.2f} s, mpmath validation {t_val:.0f} s) on {platform.machine()}, "
              f"{os.cpu_count()} cores, numpy {np.__version__}.")
    md.append(f"Plot: {'`' + args.stem + '.png`' if msg.startswith('wrote') else msg}. "
              f"Data: `{args.stem}.csv`.")
    (out / f"{args.stem}.md").write_text("\n".join(md) + "\n")
    print(f"wrote {out / (args.stem + '.csv')} and {out / (args.stem + '.md')}; total {t_total:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
