"""Performance of the exact flows (Sec. 4.2 / Fig. 6 of Celledoni & Zanna, ACM TOMS 903).

    python benchmarks/speed.py [--quick] [--out benchmarks/results] [--n 2000] [--reps 5]

Every figure is a RATIO of two costs measured in the same run, with the timed calls
interleaved (in a random order inside each repetition) and the ratio taken as the median
over the repetitions of the per-repetition ratios; the absolute times (minimum over the
repetitions, CPU time of the process and wall time) and the load average are printed too.
Nothing here is a test: targets are reported as information only.

1. Fig. 6: integration over [0, 10] with N = floor(10/h) steps, h in {0.01, 0.05, 0.1, 0.5,
   1, 2}, a batch of n bodies (unit momenta uniform on the sphere in the first octant,
   inertia (0.8, 1.7, 2.6), identity attitude), the time loop in Fortran
   (``*_integrate_batch``).  Cost per step of the exact matrix (frb) and quaternion (quat)
   flows, of the semi-exact flows with 1..5 Gauss-Legendre nodes (both forms) and of the
   DMV methods of order 2, 4, 8, relative to DMV of order 6.
2. Accuracy at equal cost: the same runs, error at t = 10 (max abs over the momentum and
   attitude components and over the batch) against ONE exact step of length 10 (quaternion
   form for the quaternion methods, matrix form for the matrix ones), versus CPU time.
3. Target ratios: (a) exact step / DMV6 step at h = 0.1 on 1e5 bodies (one step through the
   public API and through the raw bindings with input checks, and ten steps of the bare
   kernels); (b) example 1 through ``frb.splitting.integrate`` / the same number of batched
   exact flows; (c) a Python loop of single-body calls / one batched call, per body.
4. Memory: peak RSS (and tracemalloc) increase of one ``frb.frb_step`` call on 1e6 bodies,
   relative to the size of its input and output arrays (measured in a child process).

Writes to --out: speed.md (tables), speed.csv (Fig. 6 / accuracy raw data), speed.png
(Fig. 6) and speed_accuracy.png (error vs CPU time); the PNGs need matplotlib (skipped with
a message otherwise).  --quick uses small batches and finishes in well under a minute.
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import platform
import subprocess
import sys
import time
from pathlib import Path

# numpy's BLAS threads are not used by anything timed here, but once started they spin on the
# other core and their CPU time would be counted by time.process_time: keep them out.
for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import numpy as np  # noqa: E402

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
DATA1 = REPO / "data" / "init_example1.dat"

H_VALUES = (0.01, 0.05, 0.1, 0.5, 1.0, 2.0)
T_FINAL = 10.0
INERTIA = (0.8, 1.7, 2.6)
QUADS = (1, 2, 3, 4, 5)
DMV_ORDERS = (2, 4, 6, 8)


def import_frb():
    """The installed, compiled package (the source folder has no _core); retried a few
    times because the package may be being rebuilt."""
    sys.path[:] = [p for p in sys.path if os.path.abspath(p or os.getcwd()) != str(REPO)]
    last = None
    for _ in range(10):
        try:
            import frb
            import frb._core  # noqa: F401
            import frb._testing  # noqa: F401  (meson option testing: the integrate loops)
            import frb.splitting  # noqa: F401
            return frb
        except ImportError as exc:  # pragma: no cover - environment problem / rebuild
            last = exc
            for name in [k for k in sys.modules if k == "frb" or k.startswith("frb.")]:
                del sys.modules[name]
            time.sleep(3)
    raise SystemExit(f"cannot import the compiled frb package ({last}); install it and do "
                     "not run from the repository root")


def loadavg():
    try:
        return tuple(round(x, 2) for x in os.getloadavg())
    except OSError:  # pragma: no cover
        return (float("nan"),) * 3


def cpu_model():
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


# ------------------------------------------------------------------ timing


def measure(calls, reps, rng=0):
    """Time the callables of ``calls`` (name -> f()) ``reps`` times, interleaved.

    Returns (cpu, wall, outputs): cpu[name] and wall[name] are arrays of ``reps`` times
    (process CPU time and wall time, seconds); outputs[name] is the last return value.
    """
    rng = np.random.default_rng(rng)
    names = list(calls)
    cpu = {k: np.empty(reps) for k in names}
    wall = {k: np.empty(reps) for k in names}
    outputs = {}
    for r in range(reps):
        for i in rng.permutation(len(names)):
            k = names[i]
            f = calls[k]
            c0, w0 = time.process_time(), time.perf_counter()
            out = f()
            c1, w1 = time.process_time(), time.perf_counter()
            cpu[k][r], wall[k][r] = c1 - c0, w1 - w0
            outputs[k] = out
            del out
    return cpu, wall, outputs


def ratio(times, num, den, scale_num=1.0, scale_den=1.0):
    """Median over the repetitions of (times[num]/scale_num) / (times[den]/scale_den)."""
    return float(np.median((times[num] / scale_num) / (times[den] / scale_den)))


# ------------------------------------------------------------------ data


def first_octant_momenta(n, rng):
    rng = np.random.default_rng(rng)
    m = np.abs(rng.standard_normal((n, 3)))
    m /= np.linalg.norm(m, axis=1)[:, None]
    return m


def identity_states(n):
    q = np.zeros((n, 4))
    q[:, 0] = 1.0
    Q = np.zeros((n, 3, 3))
    Q[:, 0, 0] = Q[:, 1, 1] = Q[:, 2, 2] = 1.0
    return q, Q


def nsteps_for(h):
    return int(np.floor(T_FINAL / h + 1e-9))


# ------------------------------------------------------------------ 1 + 2: Fig. 6, accuracy


def method_table():
    """(key, label, form, kind, parameter) of the methods of Fig. 6."""
    rows = [("frb", "exact matrix (frb)", "matrix", "exact", 0),
            ("quat", "exact quaternion (quat)", "quat", "exact", 0)]
    rows += [(f"quat_q{k}", f"semi-exact quat, {k} node{'s' * (k > 1)}", "quat", "semi", k) for k in QUADS]
    rows += [(f"frb_q{k}", f"semi-exact matrix, {k} node{'s' * (k > 1)}", "matrix", "semi", k) for k in QUADS]
    rows += [(f"dmv{o}", f"DMV order {o}", "quat", "dmv", o) for o in DMV_ORDERS]
    return rows


def quat_error(m, q, mr, qr):
    """Max abs error over m and q components and over the batch (q and -q identified)."""
    em = np.abs(m - mr).max(axis=1)
    eq = np.minimum(np.abs(q - qr).max(axis=1), np.abs(q + qr).max(axis=1))
    e = np.maximum(em, eq)
    bad = ~np.isfinite(e)
    return (float(np.max(e[~bad])) if (~bad).any() else float("nan")), int(bad.sum())


def matrix_error(m, Q, mr, Qr):
    e = np.maximum(np.abs(m - mr).max(axis=1), np.abs(Q - Qr).reshape(len(Q), 9).max(axis=1))
    bad = ~np.isfinite(e)
    return (float(np.max(e[~bad])) if (~bad).any() else float("nan")), int(bad.sum())


def fig6(frb, n, reps, rng, log):
    testing = frb._testing
    m = first_octant_momenta(n, rng)
    q, Q = identity_states(n)
    It = np.array([INERTIA]).T
    mT, qT, QT = m.T, q.T, Q.T
    methods = method_table()

    def make(key, form, kind, par, hh, N):
        harr = np.array([hh])
        if kind == "dmv":
            return lambda: testing.dmv_integrate_batch(mT, qT, harr, It, par, N)
        if form == "quat":
            return lambda: testing.quat_integrate_batch(mT, qT, harr, It, par, N)
        return lambda: testing.frb_integrate_batch(mT, QT, harr, It, par, N)

    # references: one exact step of length T_FINAL (timed as well: "exact, 1 step")
    ref_calls = {"quat_1step": make("quat", "quat", "exact", 0, T_FINAL, 1),
                 "frb_1step": make("frb", "matrix", "exact", 0, T_FINAL, 1)}
    rcpu, rwall, rout = measure(ref_calls, max(reps, 5), rng)
    mrq, qr = (a.T for a in rout["quat_1step"])
    mrQ, Qr = (a.T for a in rout["frb_1step"])
    # consistency of the two exact references (independent frames): E(q) vs Q
    cons = max(float(np.abs(mrq - mrQ).max()),
               float(np.abs(frb.rotations.quat_to_matrix(qr) - Qr).max()))
    ref = {"cpu_1step_quat": float(np.median(rcpu["quat_1step"])),
           "cpu_1step_frb": float(np.median(rcpu["frb_1step"])),
           "wall_1step_quat": float(np.min(rwall["quat_1step"])),
           "consistency": cons}
    log(f"  reference: one exact step of {T_FINAL}: quat {ref['cpu_1step_quat'] * 1e3:.3f} ms, "
        f"frb {ref['cpu_1step_frb'] * 1e3:.3f} ms CPU for n = {n}; |quat - frb| = {cons:.2e}")

    rows = []
    for h in H_VALUES:
        N = nsteps_for(h)
        hh = T_FINAL / N
        calls = {key: make(key, form, kind, par, hh, N) for key, _, form, kind, par in methods}
        la0 = loadavg()
        cpu, wall, outs = measure(calls, reps, rng)
        la1 = loadavg()
        for key, label, form, kind, par in methods:
            mo = outs[key][0].T
            if form == "quat":
                err, nbad = quat_error(mo, outs[key][1].T, mrq, qr)
            else:
                err, nbad = matrix_error(mo, outs[key][1].T, mrQ, Qr)
            rows.append(dict(h=h, nsteps=N, key=key, label=label, form=form, kind=kind,
                             n=n, ratio_dmv6=ratio(cpu, key, "dmv6"),
                             cpu_min=float(cpu[key].min()), cpu_med=float(np.median(cpu[key])),
                             wall_min=float(wall[key].min()),
                             ns_per_step=float(cpu[key].min()) / (n * N) * 1e9,
                             err=err, nonfinite=nbad, load=la1))
        r = {row["key"]: row for row in rows if row["h"] == h}
        log(f"  h = {h:<5} N = {N:5d}  load {la0} -> {la1}  dmv6 {r['dmv6']['ns_per_step']:.1f} "
            f"ns/step/body; ratio to dmv6: frb {r['frb']['ratio_dmv6']:.1f}, quat "
            f"{r['quat']['ratio_dmv6']:.1f}, quat_q1 {r['quat_q1']['ratio_dmv6']:.1f}, "
            f"quat_q5 {r['quat_q5']['ratio_dmv6']:.1f}, frb_q5 {r['frb_q5']['ratio_dmv6']:.1f}")
    return rows, ref


# ------------------------------------------------------------------ 3: target ratios


def target_a(frb, n, reps, rng, log):
    """Exact step / DMV6 step at h = 0.1 over n bodies, two ways, each with the same work on
    both sides: the public API (frb.quat_step / frb.frb_step vs frb.dmv_step: shape checks in
    Python, value checks in the compiled checks, on both sides), and the bare kernels over ten
    steps (frb/quat_integrate_batch vs dmv_integrate_batch of frb._testing: no checks on either
    side, the DMV's modified moments computed once per body for the ten steps)."""
    testing = frb._testing
    m = first_octant_momenta(n, rng + 1)
    q, Q = identity_states(n)
    inertia = np.array(INERTIA)
    It = inertia.reshape(3, 1)
    h = np.array([0.1])
    mT, qT, QT = m.T, q.T, Q.T
    calls = {
        "frb_public": lambda: frb.frb_step(m, Q, 0.1, inertia),
        "quat_public": lambda: frb.quat_step(m, q, 0.1, inertia),
        "dmv6_public": lambda: frb.dmv_step(m, q, 0.1, inertia, order=6),
        "frb_int10": lambda: testing.frb_integrate_batch(mT, QT, h, It, 0, 10),
        "quat_int10": lambda: testing.quat_integrate_batch(mT, qT, h, It, 0, 10),
        "dmv6_int10": lambda: testing.dmv_integrate_batch(mT, qT, h, It, 6, 10),
    }
    la = loadavg()
    cpu, wall, _ = measure(calls, reps, rng)
    res = dict(n=n, load=la, load_end=loadavg(),
               abs={k: (float(cpu[k].min()), float(wall[k].min())) for k in calls},
               ratios={"quat/dmv6, 1 step, public API": ratio(cpu, "quat_public", "dmv6_public"),
                       "frb/dmv6, 1 step, public API": ratio(cpu, "frb_public", "dmv6_public"),
                       "quat/dmv6, 10 steps, kernels": ratio(cpu, "quat_int10", "dmv6_int10"),
                       "frb/dmv6, 10 steps, kernels": ratio(cpu, "frb_int10", "dmv6_int10")})
    for k, v in res["ratios"].items():
        log(f"  (a) {k:34s} {v:6.2f}  (target <= 4: {'met' if v <= 4 else 'NOT met'})")
    return res


def example1_inputs(frb):
    d = frb.read_dat(DATA1)
    a, b, h, tfin = d[0:8], d[8:15], float(d[15]), float(d[16])
    m0, Q0 = d[17:20], d[20:29].reshape(3, 3, order="F")
    inertia, u0 = d[29:32], d[32:35]
    return a, b, h, tfin, m0, Q0, inertia, u0


def target_b(frb, nsteps, reps, rng, log):
    a, b, h, tfin, m0, Q0, inertia, u0 = example1_inputs(frb)
    torque = frb.splitting.constant_field(u0)
    # the 15 free-flow lengths of one RKN6_14 step: a1..a8, a7..a1 (times h)
    taus = np.concatenate([a, a[-2::-1]]) * h
    nfl = len(taus) * nsteps
    mb = np.tile(m0, (nfl, 1))
    Qb = np.tile(Q0, (nfl, 1, 1))
    hb = np.tile(taus, nsteps)
    calls = {
        "splitting": lambda: frb.splitting.integrate(m0, Q0, inertia, h, nsteps, torque=torque,
                                                     method="RKN6_14"),
        "batched": lambda: frb.frb_step(mb, Qb, hb, inertia),
    }
    la = loadavg()
    cpu, wall, _ = measure(calls, reps, rng)
    r = ratio(cpu, "splitting", "batched")
    res = dict(nsteps=nsteps, nflows=nfl, load=la, load_end=loadavg(),
               abs={k: (float(cpu[k].min()), float(wall[k].min())) for k in calls},
               ratio=r, us_per_flow_split=float(cpu["splitting"].min()) / nfl * 1e6,
               us_per_flow_batch=float(cpu["batched"].min()) / nfl * 1e6)
    log(f"  (b) example 1, {nsteps} steps ({nfl} flows): splitting.integrate "
        f"{res['us_per_flow_split']:.3f} us/flow, batched frb.frb_step "
        f"{res['us_per_flow_batch']:.3f} us/flow, ratio {r:.2f} "
        f"(target <= 1.5: {'met' if r <= 1.5 else 'NOT met'})")
    return res


def target_c(frb, n, reps, rng, log):
    m = first_octant_momenta(n, rng + 2)
    _, Q = identity_states(n)
    inertia = np.array(INERTIA)
    h = 0.1

    def loop_public():
        for i in range(n):
            frb.frb_step(m[i], Q[i], h, inertia)

    calls = {"public_batched": lambda: frb.frb_step(m, Q, h, inertia),
             "public_loop": loop_public}
    la = loadavg()
    cpu, wall, _ = measure(calls, reps, rng)
    per = {k: float(cpu[k].min()) / n * 1e6 for k in calls}
    res = dict(n=n, load=la, load_end=loadavg(), us_per_body=per,
               abs={k: (float(cpu[k].min()), float(wall[k].min())) for k in calls},
               ratio_public=ratio(cpu, "public_loop", "public_batched"))
    for name, key in (("frb.frb_step", "public"),):
        r = res[f"ratio_{key}"]
        log(f"  (c) {name:22s} loop {per[key + '_loop']:.2f} us/body, batched "
            f"{per[key + '_batched']:.3f} us/body, ratio {r:.1f} "
            f"(target >= 10: {'met' if r >= 10 else 'NOT met'})")
    return res


# ------------------------------------------------------------------ 4: memory


def _status_kb(field):
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1])
    return None


def mem_child(n, mode):
    """Run in a child process: one frb.frb_step call on n bodies; print JSON."""
    import gc
    import resource

    frb = import_frb()
    inertia = np.array(INERTIA)
    # warm up (lazy imports, first-call allocations)
    frb.frb_step(first_octant_momenta(4, 0), identity_states(4)[1], 0.1, inertia)
    m = first_octant_momenta(n, 0)
    Q = identity_states(n)[1]
    in_bytes = m.nbytes + Q.nbytes
    gc.collect()
    out = {"n": n, "mode": mode, "in_bytes": in_bytes}
    if mode == "tracemalloc":
        import tracemalloc
        tracemalloc.start()
        cur0, _ = tracemalloc.get_traced_memory()
        tracemalloc.reset_peak()
        mo, Qo = frb.frb_step(m, Q, 0.1, inertia)
        cur1, peak = tracemalloc.get_traced_memory()
        tracemalloc.stop()
        out.update(out_bytes=mo.nbytes + Qo.nbytes, peak_increase=peak - cur0,
                   retained=cur1 - cur0)
    else:
        reset = False
        try:  # reset the high-water mark VmHWM to the current RSS
            Path("/proc/self/clear_refs").write_text("5")
            reset = True
        except OSError:
            pass
        rss0 = _status_kb("VmRSS")
        hwm0 = _status_kb("VmHWM")
        maxrss0 = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        mo, Qo = frb.frb_step(m, Q, 0.1, inertia)
        hwm1 = _status_kb("VmHWM")
        maxrss1 = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        base = rss0 if reset else max(rss0 or 0, hwm0 or 0, maxrss0)
        peak = hwm1 if hwm1 is not None else maxrss1
        out.update(out_bytes=mo.nbytes + Qo.nbytes, hwm_reset=reset,
                   rss_before_kb=rss0, hwm_before_kb=hwm0, hwm_after_kb=hwm1,
                   maxrss_before_kb=maxrss0, maxrss_after_kb=maxrss1,
                   peak_increase=(peak - base) * 1024)
    print(json.dumps(out))


def memory(n, log):
    res = {}
    for mode in ("rss", "tracemalloc"):
        cmd = [sys.executable, str(Path(__file__).resolve()), "--_memchild", str(n), mode]
        for attempt in range(3):
            p = subprocess.run(cmd, capture_output=True, text=True, cwd=str(HERE))
            if p.returncode == 0:
                res[mode] = json.loads(p.stdout.strip().splitlines()[-1])
                break
            time.sleep(3)
        else:
            log(f"  memory ({mode}) failed: {p.stderr.strip()[-300:]}")
            continue
        d = res[mode]
        io = d["in_bytes"] + d["out_bytes"]
        d["ratio_io"] = d["peak_increase"] / io
        d["ratio_footprint"] = (d["in_bytes"] + d["peak_increase"]) / io
        d["ratio_out"] = d["peak_increase"] / d["out_bytes"]
        log(f"  memory ({mode:11s}) n = {n}: inputs {d['in_bytes'] / 1e6:.0f} MB, outputs "
            f"{d['out_bytes'] / 1e6:.0f} MB, peak increase {d['peak_increase'] / 1e6:.1f} MB = "
            f"{d['ratio_io']:.2f} x (in+out) (target <= 2: "
            f"{'met' if d['ratio_io'] <= 2 else 'NOT met'}); "
            f"(in + increase)/(in+out) = {d['ratio_footprint']:.2f}, increase/out = "
            f"{d['ratio_out']:.2f}")
    res["load"] = loadavg()
    return res


# ------------------------------------------------------------------ output


def fmt_e(x, nbad=0):
    if x != x:
        return f"NaN ({nbad})" if nbad else "NaN"
    s = f"{x:.1e}"
    return s + (f" ({nbad} NaN)" if nbad else "")


def cheapest_table(rows, ref, n):
    """For each tolerance: cheapest run (CPU per body) of each family reaching it."""
    fams = [("DMV (any order, any h)", lambda r: r["kind"] == "dmv"),
            ("semi-exact quat (1..5 nodes, any h)", lambda r: r["kind"] == "semi" and r["form"] == "quat"),
            ("semi-exact matrix (1..5 nodes, any h)", lambda r: r["kind"] == "semi" and r["form"] == "matrix"),
            ("exact quat, N steps", lambda r: r["key"] == "quat")]
    out = []
    for tol in (1e-3, 1e-6, 1e-9, 1e-12):
        line = {"tol": tol}
        for name, sel in fams:
            ok = [r for r in rows if sel(r) and r["nonfinite"] == 0 and r["err"] <= tol]
            if ok:
                best = min(ok, key=lambda r: r["cpu_min"])
                line[name] = (best["cpu_min"] / n * 1e6, best["label"], best["h"], best["err"])
            else:
                line[name] = None
        line["exact 1 step"] = ref["cpu_1step_quat"] / n * 1e6
        out.append((line, [f[0] for f in fams]))
    return out


def write_csv(path, rows):
    keys = ["h", "nsteps", "key", "label", "form", "kind", "n", "ratio_dmv6", "ns_per_step",
            "cpu_min", "cpu_med", "wall_min", "err", "nonfinite"]
    with open(path, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(keys)
        for r in rows:
            w.writerow([r[k] for k in keys])


def plots(out, rows, ref, n, log):
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        log("  matplotlib not available: speed.png and speed_accuracy.png skipped")
        return
    hs = np.array(H_VALUES)
    by = {}
    for r in rows:
        by.setdefault(r["key"], []).append(r)
    fig, ax = plt.subplots(figsize=(7.5, 5))
    style = {"frb": ("k-", "D"), "quat": ("k-", "x")}
    cm = plt.get_cmap("viridis")
    for key, label, form, kind, par in method_table():
        ys = [r["ratio_dmv6"] for r in by[key]]
        if kind == "exact":
            ax.plot(hs, ys, style[key][0], marker=style[key][1], label=label, lw=2)
        elif kind == "semi":
            c = cm((par - 1) / 5)
            ax.plot(hs, ys, "--" if form == "matrix" else ":", color=c,
                    marker="*" if form == "matrix" else "o", mfc="none", label=label)
        else:
            ax.plot(hs, ys, "-", color="tab:red", alpha=0.4 + 0.15 * DMV_ORDERS.index(par),
                    marker="^", label=label)
    ax.axhline(1.0, color="gray", lw=0.8)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("step size h")
    ax.set_ylabel("CPU time per step / DMV order 6")
    ax.set_title(f"Fig. 6: cost relative to DMV6, [0, 10], batch of {n} bodies")
    ax.legend(fontsize=7, ncol=2)
    ax.grid(True, which="both", alpha=0.3)
    fig.tight_layout()
    fig.savefig(out / "speed.png", dpi=120)
    plt.close(fig)

    fig, ax = plt.subplots(figsize=(7.5, 5))
    floor = 1e-17
    for key, label, form, kind, par in method_table():
        if form != "quat":
            continue
        xs = [r["cpu_min"] / n * 1e6 for r in by[key] if r["nonfinite"] == 0]
        ys = [max(r["err"], floor) for r in by[key] if r["nonfinite"] == 0]
        if kind == "dmv":
            ax.plot(xs, ys, "-^", color="tab:red", alpha=0.4 + 0.15 * DMV_ORDERS.index(par),
                    label=label)
        elif kind == "semi":
            ax.plot(xs, ys, ":o", color=cm((par - 1) / 5), mfc="none", label=label)
        else:
            ax.plot(xs, ys, "k-x", label="exact quat, N = 10/h steps")
    ax.plot([ref["cpu_1step_quat"] / n * 1e6], [max(ref["consistency"], floor)], "k*", ms=14,
            label="exact quat, 1 step (error: vs exact matrix)")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("CPU time per body for [0, 10] (us)")
    ax.set_ylabel("max error at t = 10")
    ax.set_title("Accuracy vs cost, quaternion forms (h = 2 left ... h = 0.01 right)")
    ax.legend(fontsize=7)
    ax.grid(True, which="both", alpha=0.3)
    fig.tight_layout()
    fig.savefig(out / "speed_accuracy.png", dpi=120)
    plt.close(fig)


def write_md(path, info, rows, ref, ra, rb, rc, rm, n):
    L = []
    P = L.append
    P("# Performance of the exact flows (TOMS 903, Sec. 4.2 / Fig. 6)")
    P("")
    P(f"Generated by `benchmarks/speed.py{' --quick' if info['quick'] else ''}` on "
      f"{info['date']}: {info['cpu']}, {info['ncpu']} cores, Python {info['python']}, "
      f"numpy {info['numpy']}, frb from `{info['frb']}`.")
    P(f"Load average (1, 5, 15 min) at start {info['load0']}, at end {info['load1']}. "
      "The machine is shared and noisy: every figure is a ratio of two costs measured in the "
      f"same run, calls interleaved in random order, {info['reps']} repetitions, ratio = median "
      "of the per-repetition ratios of CPU times (`time.process_time`); absolute times are the "
      "minimum over the repetitions. Targets are information, not tests.")
    P("")
    P("## 1. Fig. 6: cost per step relative to DMV order 6")
    P("")
    P(f"Integration over [0, 10] with N = floor(10/h) steps, the time loop in Fortran "
      f"(`*_integrate_batch`), batch of n = {n} bodies: unit momenta uniform on the sphere "
      f"in the first octant, inertia {INERTIA}, identity attitude.")
    P("")
    hdr = "| method | " + " | ".join(f"h = {h:g}" for h in H_VALUES) + " |"
    sep = "|---|" + "---:|" * len(H_VALUES)
    P(hdr)
    P(sep)
    by = {}
    for r in rows:
        by.setdefault(r["key"], {})[r["h"]] = r
    for key, label, *_ in method_table():
        P(f"| {label} | " + " | ".join(f"{by[key][h]['ratio_dmv6']:.2f}" for h in H_VALUES) + " |")
    P("| *DMV6 absolute, ns per step per body* | "
      + " | ".join(f"{by['dmv6'][h]['ns_per_step']:.1f}" for h in H_VALUES) + " |")
    P("| *exact quat absolute, ns per step per body* | "
      + " | ".join(f"{by['quat'][h]['ns_per_step']:.0f}" for h in H_VALUES) + " |")
    P("| *load average (1 min) after this h* | "
      + " | ".join(f"{by['dmv6'][h]['load'][0]:.2f}" for h in H_VALUES) + " |")
    P("")
    P("Paper: exact 8-20 x the DMV methods, semi-exact about a third of the exact cost. "
      "Plot: `speed.png`; raw data: `speed.csv`.")
    P("")
    P("## 2. Accuracy at equal cost")
    P("")
    P(f"The same runs. Error at t = 10: max abs over the components of m and of q (q and -q "
      "identified) or of Q, over the batch, against ONE exact step of length 10 (quaternion "
      "form for quaternion methods, matrix form for matrix methods). The two exact references "
      f"agree to {ref['consistency']:.1e} (max over m and E(q) - Q). \"NaN (k)\": the DMV "
      "equation had no solution for k bodies (step too large).")
    P("")
    P("### Error at t = 10")
    P("")
    P(hdr)
    P(sep)
    for key, label, *_ in method_table():
        P(f"| {label} | " + " | ".join(fmt_e(by[key][h]["err"], by[key][h]["nonfinite"])
                                       for h in H_VALUES) + " |")
    P("")
    P("### CPU time of the run, us per body (batch time / n)")
    P("")
    P(hdr)
    P(sep)
    for key, label, *_ in method_table():
        P(f"| {label} | " + " | ".join(f"{by[key][h]['cpu_min'] / n * 1e6:.3g}"
                                       for h in H_VALUES) + " |")
    P(f"| exact quat, ONE step of 10 | {ref['cpu_1step_quat'] / n * 1e6:.3g} | | | | | |")
    P(f"| exact matrix, ONE step of 10 | {ref['cpu_1step_frb'] / n * 1e6:.3g} | | | | | |")
    P("")
    P("### Cheapest run reaching a given accuracy (us per body; method, h, error)")
    P("")
    tab = cheapest_table(rows, ref, n)
    fams = tab[0][1]
    P("| tolerance | " + " | ".join(fams) + " | exact, 1 step |")
    P("|---|" + "---|" * (len(fams) + 1))
    for line, _ in tab:
        cells = []
        for f in fams:
            v = line[f]
            cells.append("none" if v is None else f"{v[0]:.3g} ({v[1]}, h = {v[2]:g}, {v[3]:.0e})")
        P(f"| {line['tol']:.0e} | " + " | ".join(cells) + f" | {line['exact 1 step']:.3g} |")
    P("")
    one = tab[0][0]["exact 1 step"]
    for line, _ in tab:
        d = line[fams[0]]
        if d is not None:
            P(f"- error <= {line['tol']:.0e}: cheapest DMV run {d[0]:.3g} us/body = "
              f"{d[0] / one:.2g} x one exact step of 10 ({one:.3g} us/body).")
    P("")
    P("DMV costs at h = 1 and 2 include bodies for which the DMV iteration failed (NaN); "
      "those runs are left out of the cheapest-run table and of the plot.")
    P("")
    P("Plot: `speed_accuracy.png` (error vs CPU time, quaternion forms).")
    P("")
    P("## 3. Target ratios")
    P("")
    P("| quantity | measured | target | met | absolute CPU (s, min) | load (1, 5, 15) |")
    P("|---|---:|---|---|---|---|")
    names = {"quat/dmv6, 1 step, public API": ("quat_public", "dmv6_public", 1),
             "frb/dmv6, 1 step, public API": ("frb_public", "dmv6_public", 1),
             "quat/dmv6, 1 step, raw + checks": ("quat_step", "dmv6_step", 1),
             "frb/dmv6, 1 step, raw + checks": ("frb_step", "dmv6_step", 1),
             "quat/dmv6, 10 steps, kernels": ("quat_int10", "dmv6_int10", 10),
             "frb/dmv6, 10 steps, kernels": ("frb_int10", "dmv6_int10", 10)}
    for k, v in ra["ratios"].items():
        a, b, ns = names[k]
        per = 1e9 / (ra["n"] * ns)
        P(f"| (a) exact / DMV6, h = 0.1, {ra['n']} bodies: {k} | {v:.2f} | <= 4 | "
          f"{'yes' if v <= 4 else 'no'} | {ra['abs'][a][0]:.4f} / {ra['abs'][b][0]:.4f} "
          f"({ra['abs'][a][0] * per:.0f} / {ra['abs'][b][0] * per:.0f} ns a step) | {ra['load']} |")
    P(f"| (b) example 1, `frb.splitting.integrate` ({rb['nsteps']} steps, {rb['nflows']} exact "
      f"flows) / `frb.frb_step` on {rb['nflows']} bodies (same flow lengths) | "
      f"{rb['ratio']:.2f} | <= 1.5 | {'yes' if rb['ratio'] <= 1.5 else 'no'} | "
      f"{rb['abs']['splitting'][0]:.4f} / {rb['abs']['batched'][0]:.4f} | {rb['load']} |")
    for name, key in (("`frb.frb_step`", "public"),):
        r = rc[f"ratio_{key}"]
        P(f"| (c) {name}: loop of single-body calls / one batched call, per body, "
          f"N = {rc['n']} | {r:.1f} | >= 10 | {'yes' if r >= 10 else 'no'} | "
          f"{rc['abs'][key + '_loop'][0]:.4f} / {rc['abs'][key + '_batched'][0]:.4f} | "
          f"{rc['load']} |")
    P("")
    P(f"Per flow in (b): {rb['us_per_flow_split']:.3f} us (splitting, includes the 14 torque "
      f"flows and the trajectory output) vs {rb['us_per_flow_batch']:.3f} us (batched). "
      f"Per body in (c): public loop {rc['us_per_body']['public_loop']:.2f} us, public batched "
      f"{rc['us_per_body']['public_batched']:.3f} us, raw loop {rc['us_per_body']['raw_loop']:.2f}"
      f" us (single-body views prebuilt), raw batched {rc['us_per_body']['raw_batched']:.3f} us.")
    P("")
    P("## 4. Memory of one `frb.frb_step` call")
    P("")
    P("| measure | bodies | inputs (MB) | outputs (MB) | peak increase (MB) | increase / (in+out) "
      "(target <= 2) | (in + increase) / (in+out) | increase / out |")
    P("|---|---:|---:|---:|---:|---:|---:|---:|")
    for mode, desc in (("rss", "peak RSS (VmHWM)"), ("tracemalloc", "tracemalloc (numpy allocations)")):
        if mode not in rm:
            P(f"| {desc} | failed | | | | | | |")
            continue
        d = rm[mode]
        P(f"| {desc} | {d['n']} | {d['in_bytes'] / 1e6:.0f} | {d['out_bytes'] / 1e6:.0f} | "
          f"{d['peak_increase'] / 1e6:.1f} | {d['ratio_io']:.2f} | {d['ratio_footprint']:.2f} | "
          f"{d['ratio_out']:.2f} |")
    P("")
    P(f"Measured in a child process after a warm-up call, inputs allocated and touched before; "
      f"load {rm.get('load')}.")
    P("")
    path.write_text("\n".join(L))


# ------------------------------------------------------------------ main


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true", help="small batches (< 1 minute)")
    ap.add_argument("--out", default=str(HERE / "results"))
    ap.add_argument("--n", type=int, default=None, help="batch size for Fig. 6 (default 2000)")
    ap.add_argument("--reps", type=int, default=None, help="repetitions (default 5, quick 3)")
    ap.add_argument("--rng", type=int, default=0)
    ap.add_argument("--_memchild", nargs=2, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args._memchild:
        mem_child(int(args._memchild[0]), args._memchild[1])
        return 0

    q = args.quick
    n = args.n or (200 if q else 2000)
    reps = args.reps or (3 if q else 5)
    n_a = 10_000 if q else 100_000
    steps_b = 1000 if q else 10_000
    n_c = 1000 if q else 10_000
    n_mem = 1_000_000

    frb = import_frb()

    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    log = lambda s: print(s, flush=True)  # noqa: E731
    info = dict(quick=q, date=time.strftime("%Y-%m-%d %H:%M"), cpu=cpu_model(),
                ncpu=os.cpu_count(), python=platform.python_version(), numpy=np.__version__,
                frb=frb.__file__, reps=reps, load0=loadavg())
    log(f"frb from {frb.__file__}; {info['cpu']}, load average {info['load0']}")
    t0 = time.perf_counter()
    log(f"1+2. Fig. 6 and accuracy (n = {n}, {reps} repetitions)")
    rows, ref = fig6(frb, n, reps, args.rng, log)
    log(f"3. target ratios (load {loadavg()})")
    ra = target_a(frb, n_a, max(reps, 5 if not q else 3), args.rng, log)
    rb = target_b(frb, steps_b, max(reps, 5 if not q else 3), args.rng, log)
    rc = target_c(frb, n_c, max(reps, 5 if not q else 3), args.rng, log)
    log(f"4. memory (load {loadavg()})")
    rm = memory(n_mem, log)
    info["load1"] = loadavg()
    write_csv(out / "speed.csv", rows)
    write_md(out / "speed.md", info, rows, ref, ra, rb, rc, rm, n)
    plots(out, rows, ref, n, log)
    log(f"wrote {out / 'speed.md'}, speed.csv, speed.png, speed_accuracy.png in "
        f"{time.perf_counter() - t0:.0f} s; load average {info['load1']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
