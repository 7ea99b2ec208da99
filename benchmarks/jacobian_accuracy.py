"""Accuracy of frb.derivatives.flow_jacobian against the variational equations.

    python benchmarks/jacobian_accuracy.py [--bodies 2000] [--out PATH]

(default --out benchmarks/results/jacobian_accuracy.md)

Two measurements, relative to the largest entry of each matrix (state transition matrix Phi, d/dh,
d/dinertia), per body:

1. Random bodies (the generator of tests/reference/make_jacobian_reference.py, set "random":
   moments in [0.5, 3] in random order, |m| in [0.5, 2], h log-uniform from 1e-3 to 1e3 with a
   random sign), tabulated by the decade of |h|. The reference integrates the variational
   equations of the free body (and the state) by a Taylor-series method in 80-bit extended
   precision (numpy.longdouble, unit roundoff 5.4e-20), vectorised over the bodies, written
   below without frb: order 24, the step e^-2 times the radius of convergence estimated from
   the last two coefficients (Jorba and Zou). Its own error is checked against the
   fixed-point multi-precision reference (tests/reference/taylor.py, 140 bits) on the random
   bodies of tests/data/reference_jacobian.npz.
2. The edge families of tests/data/reference_jacobian.npz (principal axes, near axes, the
   separatrix and near it, symmetric, nearly symmetric and spherical bodies, scales, negative and
   long steps, inertia tensors), against that multi-precision reference.
"""
from __future__ import annotations

import argparse
import os
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(ROOT, "tests", "reference"))

import frb  # noqa: E402
from frb.derivatives import flow_jacobian  # noqa: E402

LD = np.longdouble
ORDER = 24
FACTOR = np.exp(-2.0)


def _cross_sum(x, y):
    """sum_i x[i] x y[k - i] for stacked coefficients x, y (k+1, ..., 3)."""
    return np.cross(x, y[::-1]).sum(axis=0)


def extended_reference(m0, inertia, h):
    """Phi (n, 6, 6), dh (n, 6), dinertia (n, 6, 3) of bodies with principal moments, by the
    Taylor method in long double (see the module docstring); the scaled variables of
    tests/reference/taylor.py: mu = m / |m0|, tau = h |m0| / I_min, W = I_min / I."""
    n = len(h)
    m0 = np.asarray(m0, dtype=LD)
    inertia = np.asarray(inertia, dtype=LD)
    g = np.sqrt((m0 * m0).sum(axis=1))
    s = inertia.min(axis=1)
    w3 = s[:, None] / inertia                      # W = diag(w3)
    dw = -s[:, None] / inertia**2                  # dW_p = diag(dw_p e_p)
    tau = np.asarray(h, dtype=LD) * g / s
    # directions: 0..2 dm0 = e_j, 3..5 dth0 = e_j, 6..8 the moments
    mu = m0 / g[:, None]
    a = np.zeros((n, 9, 3), dtype=LD)
    b = np.zeros((n, 9, 3), dtype=LD)
    for j in range(3):
        a[:, j, j] = 1
        b[:, 3 + j, j] = 1
    remaining = np.abs(tau)
    sign = np.sign(tau)
    active = np.nonzero(remaining > 0)[0]
    while active.size:
        M = np.zeros((ORDER + 1, active.size, 3), dtype=LD)
        A = np.zeros((ORDER + 1, active.size, 9, 3), dtype=LD)
        B = np.zeros((ORDER + 1, active.size, 9, 3), dtype=LD)
        Wm = np.zeros_like(M)
        Wa = np.zeros_like(A)
        F = np.zeros_like(A)
        M[0], A[0], B[0] = mu[active], a[active], b[active]
        wa, dwa = w3[active], dw[active]
        for k in range(ORDER):
            Wm[k] = wa * M[k]
            Wa[k] = wa[:, None, :] * A[k]
            for p in range(3):
                F[k, :, 6 + p, p] = dwa[:, p] * M[k, :, p]
            M[k + 1] = _cross_sum(M[:k + 1], Wm[:k + 1]) / (k + 1)
            ca = (_cross_sum(A[:k + 1], Wm[:k + 1, :, None, :])
                  + _cross_sum(M[:k + 1, :, None, :], Wa[:k + 1])
                  + _cross_sum(M[:k + 1, :, None, :], F[:k + 1]))
            A[k + 1] = ca / (k + 1)
            B[k + 1] = (Wa[k] + F[k] - _cross_sum(Wm[:k + 1, :, None, :], B[:k + 1])) / (k + 1)
        rho = np.full(active.size, np.inf, dtype=LD)
        for k in (ORDER - 1, ORDER):
            big = np.maximum(np.abs(M[k]).max(axis=1), LD(1e-300))
            rho = np.minimum(rho, big ** (-LD(1) / k))
        step = np.minimum(np.minimum(rho * LD(FACTOR), LD(1)), remaining[active])
        hs = step * sign[active]
        mu_n, a_n, b_n = M[ORDER], A[ORDER], B[ORDER]
        for k in range(ORDER - 1, -1, -1):
            mu_n = mu_n * hs[:, None] + M[k]
            a_n = a_n * hs[:, None, None] + A[k]
            b_n = b_n * hs[:, None, None] + B[k]
        mu[active], a[active], b[active] = mu_n, a_n, b_n
        remaining[active] -= step
        active = active[remaining[active] > 0]
    m1 = g[:, None] * mu
    phi = np.zeros((n, 6, 6), dtype=LD)
    phi[:, :3, :3] = np.swapaxes(a[:, 0:3], 1, 2)
    phi[:, 3:, :3] = np.swapaxes(b[:, 0:3], 1, 2) / g[:, None, None]
    phi[:, :3, 3:] = g[:, None, None] * np.swapaxes(a[:, 3:6], 1, 2)
    phi[:, 3:, 3:] = np.swapaxes(b[:, 3:6], 1, 2)
    di = np.zeros((n, 6, 3), dtype=LD)
    di[:, :3, :] = g[:, None, None] * np.swapaxes(a[:, 6:9], 1, 2)
    di[:, 3:, :] = np.swapaxes(b[:, 6:9], 1, 2)
    w1 = m1 / inertia
    dh = np.concatenate([np.cross(m1, w1), w1], axis=1)
    return phi.astype(np.float64), dh.astype(np.float64), di.astype(np.float64)


def relative_error(x, ref):
    """max |x - ref| / max |ref| per body (leading axis)."""
    axes = tuple(range(1, x.ndim))
    return np.abs(x - ref).max(axis=axes) / np.abs(ref).max(axis=axes)


def frb_jacobians(m0, inertia, h):
    q = np.tile([1.0, 0.0, 0.0, 0.0], (len(h), 1))
    _, _, jac = flow_jacobian(m0, q, h, inertia)
    return jac


def family(label):
    """The edge family of a label of the special set."""
    rules = (("axis", "principal axes"), ("near axis", "near axes"),
             ("near separatrix", "near the separatrix"), ("separatrix", "on the separatrix"),
             ("nearly symmetric", "nearly symmetric"), ("nearly spherical", "nearly spherical"),
             ("symmetric", "symmetric bodies"), ("sphere", "the sphere"),
             ("negative step", "negative steps"), ("h = ", "h = 0"), ("scale", "scales of m, I"),
             ("long step", "long steps (h|m|/I_min 100, 1000)"), ("random", "random (suite)"),
             ("tensor", "inertia tensors"))
    found = "other"
    for key, name in rules:
        if label.startswith(key) or (key in ("tensor",) and key in label):
            found = name
    if label.startswith("near axis"):
        found = "near axes"
    return found


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--bodies", type=int, default=2000)
    ap.add_argument("--out", default=os.path.join(HERE, "results", "jacobian_accuracy.md"))
    ap.add_argument("--cache", default=None,
                    help="an .npz file keeping the reference of the random bodies (written when "
                         "missing, read when present)")
    args = ap.parse_args()
    import make_jacobian_reference as mjr

    lines = ["# Accuracy of the derivatives of the exact step", "",
             "Generated by `benchmarks/jacobian_accuracy.py`: frb %s. Relative error: max |frb - "
             "reference| / max |reference| of each matrix of one body (state transition matrix "
             "Phi, d/dh, d/dinertia)." % frb.__version__, ""]

    # --- the extended-precision reference checked against the multi-precision one ---
    data = np.load(os.path.join(ROOT, "tests", "data", "reference_jacobian.npz"))
    rnd = np.array([str(x).startswith("random") for x in data["label"]])
    t0 = time.perf_counter()
    phi_e, dh_e, di_e = extended_reference(data["m0"][rnd], data["inertia"][rnd], data["h"][rnd])
    check = max(relative_error(phi_e, data["phi"][rnd]).max(),
                relative_error(dh_e, data["dh"][rnd]).max(),
                relative_error(di_e, data["dinertia"][rnd]).max())
    lines += ["The extended-precision reference of the random bodies against the 140-bit one on "
              "the %d random bodies of the suite: largest relative difference %.1e (%.0f s)."
              % (rnd.sum(), check, time.perf_counter() - t0), ""]
    print(lines[-2], flush=True)

    # --- random bodies ---
    cases = mjr.set_random()[:args.bodies]
    m0 = np.array([c["m0"] for c in cases])
    inertia = np.array([c["inertia"] for c in cases])
    h = np.array([c["h"] for c in cases])
    t0 = time.perf_counter()
    if args.cache and os.path.exists(args.cache):
        with np.load(args.cache) as f:
            phi_r, dh_r, di_r = f["phi"], f["dh"], f["dinertia"]
    else:
        phi_r, dh_r, di_r = extended_reference(m0, inertia, h)
        if args.cache:
            np.savez(args.cache, phi=phi_r, dh=dh_r, dinertia=di_r)
    t_ref = time.perf_counter() - t0
    jac = frb_jacobians(m0, inertia, h)
    err = np.stack([relative_error(jac.state, phi_r), relative_error(jac.h, dh_r),
                    relative_error(jac.inertia, di_r)], axis=1)
    lines += ["## %d random bodies (reference in %.0f s%s)" % (len(h), t_ref,
              ", from the cache" if args.cache and os.path.exists(args.cache) else ""), "",
              "| abs(h) | bodies | Phi max | Phi median | d/dh max | d/dI max | d/dI median "
              "| above 1e-11 |", "|---|---:|---:|---:|---:|---:|---:|---:|"]
    decades = np.floor(np.log10(np.abs(h))).astype(int)
    for d in range(-3, 3):
        sel = decades == d
        e = err[sel]
        lines.append("| 1e%d .. 1e%d | %d | %.1e | %.1e | %.1e | %.1e | %.1e | %d |" % (
            d, d + 1, sel.sum(), e[:, 0].max(), np.median(e[:, 0]), e[:, 1].max(), e[:, 2].max(),
            np.median(e[:, 2]), (e.max(axis=1) > 1e-11).sum()))
    lines.append("| all | %d | %.1e | %.1e | %.1e | %.1e | %.1e | %d |" % (
        len(h), err[:, 0].max(), np.median(err[:, 0]), err[:, 1].max(), err[:, 2].max(),
        np.median(err[:, 2]), (err.max(axis=1) > 1e-11).sum()))
    lines.append("")
    print("\n".join(lines[-10:]), flush=True)

    # --- the edge families (multi-precision reference) ---
    jm = frb_jacobians(data["m0"], data["inertia"], data["h"])
    groups: dict[str, list[float]] = {}
    for i, label in enumerate(data["label"]):
        e = max(relative_error(jm.state[i:i + 1], data["phi"][i:i + 1])[0],
                relative_error(jm.h[i:i + 1], data["dh"][i:i + 1])[0],
                relative_error(jm.inertia[i:i + 1], data["dinertia"][i:i + 1])[0]
                if np.abs(data["dinertia"][i]).max() > 0 else 0.0)
        groups.setdefault(family(str(label)), []).append(e)
    if "tensor_label" in data.files:
        for i, label in enumerate(data["tensor_label"]):
            _, _, jt = flow_jacobian(data["tensor_m0"][i], [1.0, 0.0, 0.0, 0.0],
                                     data["tensor_h"][i], data["tensor_inertia"][i])
            e = max(relative_error(jt.state[None], data["tensor_phi"][i][None])[0],
                    relative_error(jt.h[None], data["tensor_dh"][i][None])[0],
                    relative_error(jt.inertia[None], data["tensor_dinertia"][i][None])[0])
            groups.setdefault("inertia tensors", []).append(e)
    lines += ["## Edge families (tests/data/reference_jacobian.npz, 140-bit reference)", "",
              "| family | cases | largest relative error (Phi, d/dh, d/dinertia) |",
              "|---|---:|---:|"]
    for name, errs in groups.items():
        lines.append("| %s | %d | %.1e |" % (name, len(errs), max(errs)))
    lines.append("")
    print("\n".join(lines[-len(groups) - 4:]), flush=True)
    with open(args.out, "w", encoding="utf-8") as f:
        f.write("\n".join(lines))
    print("wrote", args.out)


if __name__ == "__main__":
    main()
