"""Error tables in ulps of frb's elliptic routines and of both exact flows, written as a page of
the manual (docs/error_tables.rst), as Boost.Math publishes its functions' errors.

Elliptic routines (frb._testing, elementwise): Carlson's R_F, R_J, R_C, the incomplete integral of
the first kind F and K, Jacobi's sn, cn, dn and the amplitude, the Maclaurin series of sn, cn, dn
for short steps, and the integral of the third kind Pi, against mpmath at 54 significant digits
(mp.dps = 54), on the families of arguments the test suite uses (tests/test_elliptic.py). The
error of a value is |computed - reference| / ulp(reference), ulp(x) = numpy.spacing(|x|).

Flows: frb.frb_step (the matrix flow) and frb.quat_step (the quaternion flow), exact
(quadrature 0), against the extended-precision references of the tests (tests/data/
reference_*.npz: the exact flow of the stored float64 inputs, correctly rounded), one body at a
time (the scalar code) and batched under each SIMD target this CPU supports (frb.simd). The error
of a vector (m, a row set of Q, q) is max_i |x_i - r_i| / ulp(max_i |r_i|): ulps of its largest
component.

    python benchmarks/error_tables.py [--out docs/error_tables.rst] [--n 400]

Needs frb built with the meson option testing (frb._testing), mpmath, and the test data.
"""
from __future__ import annotations

import argparse
import datetime
import platform
import re
import sys
from pathlib import Path

import mpmath as mp
import numpy as np

import frb
import frb._testing as T

REPO = Path(__file__).resolve().parents[1]
DATA = REPO / "tests" / "data"
DPS = 54


# ---- elliptic routines ---------------------------------------------------------------------------
def ulps(got, ref) -> np.ndarray:
    """|got - ref| / ulp(ref) elementwise; ref are mpmath numbers."""
    got = np.asarray(got, dtype=float)
    out = np.empty(got.shape)
    for i, (g, r) in enumerate(zip(got.ravel(), ref)):
        rf = float(r)
        unit = np.spacing(abs(rf)) if rf != 0 else np.spacing(0.0)
        out.ravel()[i] = float(abs(mp.mpf(g) - r)) / unit
    return out


def moduli(n, rng, tiny=-12):
    """k, k' with 1 - k^2 log-uniform down to 10**tiny (half) and uniform (half)."""
    kp = np.concatenate([10.0 ** rng.uniform(tiny / 2, 0, n // 2), rng.uniform(0, 1, n - n // 2)])
    return np.sqrt((1 - kp) * (1 + kp)), kp


def elliptic_rows(n: int) -> list[tuple[str, str, np.ndarray]]:
    """(routine, family, errors in ulps) of every routine and family."""
    mp.mp.dps = DPS
    rng = np.random.default_rng(20261127)
    rows = []

    # Carlson's symmetric integrals
    x, y, z = 10.0 ** rng.uniform(-8, 4, (3, n))
    p = 10.0 ** rng.uniform(-8, 4, n)
    rf, rj, rc = T.ell_carlson(x, y, z, p)
    M = [mp.mpf(float(v)) for v in np.concatenate([x, y, z, p])]
    X, Y, Z, P = M[:n], M[n:2 * n], M[2 * n:3 * n], M[3 * n:]
    rows.append(("R_F(x, y, z)", "x, y, z in 1e-8..1e4", ulps(rf, [mp.elliprf(a, b, c) for a, b, c in zip(X, Y, Z)])))
    rows.append(("R_J(x, y, z, p)", "x, y, z, p in 1e-8..1e4",
                 ulps(rj, [mp.elliprj(a, b, c, d) for a, b, c, d in zip(X, Y, Z, P)])))
    rows.append(("R_C(x, y)", "x, y in 1e-8..1e4", ulps(rc, [mp.elliprc(a, b) for a, b in zip(X, Y)])))
    delta = rng.uniform(1e-4, 3e-2, n)
    base = 10.0 ** rng.uniform(-3, 3, n)
    xs, ys, zs, ps = base * (1 + delta * rng.uniform(-1, 1, (4, n)))
    rj = T.ell_carlson(xs, ys, zs, ps)[1]
    rows.append(("R_J(x, y, z, p)", "arguments within 3e-2 of each other (series)",
                 ulps(rj, [mp.elliprj(*(mp.mpf(float(v)) for v in t)) for t in zip(xs, ys, zs, ps)])))

    # first kind, Jacobi's functions
    k, kp = moduli(n, rng)
    mm = [1 - mp.mpf(float(v)) ** 2 for v in kp]
    phi = rng.uniform(-30, 30, n)
    f, kc = T.ell_first_kind(phi, k, kp)
    def by_modulus(routine, args, e):
        """Two rows: k' = sqrt(1 - k^2) log-uniform in 1e-6..1 (k near 1), and uniform in 0..1."""
        for family, part in (("k' log-uniform 1e-6..1", e[:n // 2]), ("k' uniform 0..1", e[n // 2:])):
            rows.append((routine, ", ".join(a for a in (args, family) if a), part))

    by_modulus("F(phi, k)", "|phi| <= 30",
               ulps(f, [mp.ellipf(mp.mpf(float(a)), m) for a, m in zip(phi, mm)]))
    by_modulus("K(k)", "", ulps(kc, [mp.ellipk(m) for m in mm]))
    u = rng.uniform(-0.9, 0.9, n) * kc
    sn, cn, dn, am = T.ell_jacobi(u, k, kp)
    refs = [[mp.ellipfun(fn, mp.mpf(float(a)), m=m) for a, m in zip(u, mm)] for fn in ("sn", "cn", "dn")]
    amp = [mp.asin(s) if c >= 0 else mp.pi * mp.sign(s) - mp.asin(s) for s, c in zip(refs[0], refs[1])]
    for name, got, ref in (("sn(u, k)", sn, refs[0]), ("cn(u, k)", cn, refs[1]),
                           ("dn(u, k)", dn, refs[2]), ("am(u, k)", am, amp)):
        by_modulus(name, "|u| <= 0.9 K", ulps(got, ref))
    vmax = T.ell_jacobi_series(np.zeros(1), np.zeros(1))[3]
    v = rng.uniform(-vmax, vmax, n)
    v[v == 0] = vmax
    m = np.concatenate([rng.uniform(0, 1, n // 2), 1 - 10.0 ** rng.uniform(-16, 0, n - n // 2)])
    ss, cs, ds, _ = T.ell_jacobi_series(v, m)
    for fn, got in (("sn", ss), ("cn", cs), ("dn", ds)):
        ref = [mp.ellipfun(fn, mp.mpf(float(a)), m=mp.mpf(float(b))) for a, b in zip(v, m)]
        rows.append((f"{fn} series", f"|v| <= {vmax:.3f}, m in [0, 1]", ulps(got, ref)))

    # third kind
    nn = np.concatenate([-(10.0 ** rng.uniform(-3, 3, n // 2)), rng.uniform(0, 0.95, n - n // 2)])
    phi1 = rng.uniform(-8, 8, n)
    phi2 = rng.uniform(-8, 8, n)
    pi1, pi2, _, _ = T.ell_third_kind(phi1, phi2, nn, k, kp, 0)
    ref = [mp.ellippi(mp.mpf(float(a)), mp.mpf(float(b)), m) for a, b, m in zip(nn, phi1, mm)]
    by_modulus("Pi(n, phi, k)", "n in -1e3..0.95, |phi| <= 8", ulps(pi1, ref))
    return rows


# ---- flows -----------------------------------------------------------------------------------------
FAMILIES = {"special": [("on an axis", r"^axis"), ("near an axis", r"^near axis"),
                        ("on the separatrix", r"^separatrix"),
                        ("near the separatrix", r"^near separatrix"),
                        ("symmetric, nearly symmetric", r"symmetric|spher"),
                        ("scale of |m|", r"^scale"),
                        ("long / negative steps", r"^(long step|negative step|h )")],
            "long": [("asymmetric, phase 1e3-1e17", r"^asymmetric phase"),
                     ("symmetric, phase 1e3-1e17", r"^symmetric phase"),
                     ("moment ratio 1e120-1e250", r"^ratio")]}


def families(name: str, labels: np.ndarray) -> list[tuple[str, np.ndarray]]:
    if name == "generic":
        return [("generic (random m, I in [0.5, 3])", np.ones(len(labels), bool))]
    if name == "api":
        return [("|m| = 1e-6 .. 1e6, permuted moments", np.ones(len(labels), bool))]
    out = []
    for fam, pattern in FAMILIES[name]:
        sel = np.array([re.search(pattern, str(l)) is not None for l in labels])
        if sel.any():
            out.append((fam, sel))
    return out


def vector_ulps(got: np.ndarray, ref: np.ndarray) -> np.ndarray:
    """max_i |x_i - r_i| / ulp(max_i |r_i|) over the last axis."""
    return np.max(np.abs(got - ref), axis=-1) / np.spacing(np.max(np.abs(ref), axis=-1))


def flow_errors(ref: dict, route: str, target: str | None):
    """Errors in ulps of m and of the attitude (rows of Q, or q) of one route over a set."""
    n = len(ref["h"])
    if route == "frb_step":
        att0, att1 = ref["Q0"], ref["Q1"]
        fn = frb.frb_step
    else:
        att0, att1 = ref["q0"], ref["q1"]
        fn = frb.quat_step
    if target is None:                    # one body at a time: the scalar code
        outs = [fn(ref["m0"][i], att0[i], ref["h"][i], ref["inertia"][i]) for i in range(n)]
        m1 = np.array([o[0] for o in outs])
        a1 = np.array([o[1] for o in outs])
    else:
        frb.set_cpu_target(target)
        m1, a1 = fn(ref["m0"], att0, ref["h"], ref["inertia"])
    em = vector_ulps(m1, ref["m1"])
    ea = vector_ulps(a1, att1)
    if ea.ndim == 2:                      # Q: the worst of its rows
        ea = ea.max(axis=1)
    return em, ea


def flow_rows():
    targets = list(frb.simd.supported_cpu_targets())
    before = frb.cpu_dispatch()
    rows = []
    for name in ("generic", "api", "special", "long"):
        with np.load(DATA / f"reference_{name}.npz") as f:
            ref = {k: f[k] for k in f.files}
        for route in ("frb_step", "quat_step"):
            if route == "quat_step" and "q1" not in ref:
                continue
            cols = {"one body": flow_errors(ref, route, None)}
            for t in targets:
                cols[t] = flow_errors(ref, route, t)
            for fam, sel in families(name, ref["label"]):
                rows.append((route, name, fam, int(sel.sum()),
                             {c: (e[0][sel], e[1][sel]) for c, e in cols.items()}))
    frb.set_cpu_target(before)
    return rows, ["one body", *targets]


# ---- the page ----------------------------------------------------------------------------------------
def table(header: list[str], body: list[list[str]]) -> str:
    body = [[f"``{c}``" if "|" in c else c for c in r] for r in body]   # (|x|: no substitution)
    widths = [max(len(r[i]) for r in [header, *body]) for i in range(len(header))]
    line = "  ".join("=" * w for w in widths)
    fmt = lambda r: "  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip()
    return "\n".join([line, fmt(header), line, *(fmt(r) for r in body), line])


def cell(e: np.ndarray) -> str:
    return f"{e.max():.2f} / {e.mean():.2f}"


def page(ell, flows, columns, n) -> str:
    cpu = "unknown CPU"
    try:
        for line in open("/proc/cpuinfo"):
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    out = [".. _error_tables:", "", "Error tables", "============", "",
           "The largest and the mean error in ulps of frb's elliptic routines and of both exact "
           "flows, measured by ``benchmarks/error_tables.py`` (which writes this page) on "
           f"{datetime.date.today().isoformat()}: frb {frb.__version__}, {cpu}, "
           f"{platform.system()} {platform.machine()}, numpy {np.__version__}, "
           f"mpmath {mp.__version__}. Each cell is *largest / mean*.", "",
           "Elliptic routines", "-----------------", "",
           f"Against mpmath at {DPS} significant digits, {n} arguments a family (the families of "
           "the test suite, ``tests/test_elliptic.py``), through the elementwise routines of "
           "``frb._testing``. The error of a value ``x`` with reference ``r`` is "
           "``|x - r| / ulp(r)``, ``ulp(r) = numpy.spacing(|r|)``. For ``k`` near 1 "
           "(``k'`` small) ``cn`` and ``dn`` at ``u`` near ``0.9 K`` are small numbers computed "
           "from ``O(1)`` quantities, so their relative error grows like ``1/cn`` "
           "(conditioning of the argument reduction, not of frb's series).", "",
           table(["routine", "arguments", "ulps (largest / mean)"],
                 [[r, fam, cell(e)] for r, fam, e in ell]), "",
           "Exact flows", "-----------", "",
           "``frb.frb_step`` (attitude a rotation matrix) and ``frb.quat_step`` (a unit "
           "quaternion), exact (``quadrature=0``), against the extended-precision references "
           "of the test suite (``tests/data/reference_*.npz``, made by "
           "``tests/reference/make_reference.py`` and ``make_long_reference.py``: the exact "
           "flow of the stored double inputs, correctly rounded). The error of a vector is "
           "``max_i |x_i - r_i| / ulp(max_i |r_i|)`` (ulps of its largest component; for ``Q`` "
           "the worst of its rows). *one body*: one call a body (the scalar code); the other "
           "columns: all bodies of the set in one batched call under that SIMD target "
           "(:mod:`frb.simd`), which gives the same bits as the one-body code. On and near "
           "the separatrix, and near the middle axis, the flow itself is ill conditioned (a "
           "perturbation of the state grows like ``exp(lambda t)`` there, ``lambda`` the rate "
           "of the unstable axis), so roundings of the intermediate quantities of the size of "
           "an ulp come out amplified; the *long* set reaches phases of 1e17 radians "
           "(``tests/reference/make_long_reference.py``).", ""]
    for what, idx in (("m", 0), ("attitude", 1)):
        body = [[route, name, fam, str(count), *(cell(cols[c][idx]) for c in columns)]
                for route, name, fam, count, cols in flows]
        out += [f"Error of ``{what}`` (ulps, largest / mean):", "",
                table(["route", "set", "family", "n", *columns], body), ""]
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--out", type=Path, default=REPO / "docs" / "error_tables.rst")
    p.add_argument("--n", type=int, default=400, help="arguments a family of the elliptic routines")
    a = p.parse_args(argv)
    ell = elliptic_rows(a.n)
    flows, columns = flow_rows()
    text = page(ell, flows, columns, a.n)
    a.out.write_text(text + "\n")
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
