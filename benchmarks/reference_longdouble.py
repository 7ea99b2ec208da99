"""Vectorised extended-precision Taylor integrator for the free rigid body.

Independent reference for the accuracy map (benchmarks/accuracy_map.py): no
elliptic function is used, the ODEs

    m' = m x w,   Q' = Q hat(w),   q' = q * (0, w) / 2,   w = m / inertia,

are integrated by a Taylor-series method in ``np.longdouble`` (x87 80-bit
extended precision on x86-64, eps = 2**-63 = 1.1e-19), vectorised over all
cases at once.

Formulation.  Q and q are linear in themselves, so Q(t) = Q0 R(t) and
q(t) = q0 * r(t) with R(0) = 1, r(0) = (1, 0, 0, 0).  A row x of R obeys
x' = x hat(w) = x cross w, the same equation as m; m and the three rows of R
form one (4, 3) block integrated together with r.  Everything is scaled to
O(1) by powers of two only, so that the data are not rounded: with
2**a ~ |m0| and 2**b ~ min(inertia), mu = m / 2**a, J = inertia / 2**b and
tau = t 2**(a - b),

    mu' = mu x (mu / J),  R' = R hat(mu / J),  r' = r * (0, mu / J) / 2,

with |mu / J| <= 2.  w = mu / J is formed by division (no rounded 1 / J, whose
error would make a coherent frequency error).  Taylor coefficients follow from Cauchy products of the
quadratic right-hand side.  The step of every case is chosen from the decay of
its last two coefficients (Jorba & Zou 2005): rho = min_{k = N-1, N}
max|x_k|^(-1/k) (the state has norm ~1) and step = rho * tol**(1/N), so that
the truncation error of one step is ~tol.  Cases run with independent step
sequences; at each sweep only the still active cases are advanced, the last
step of each case lands exactly on its final time.
"""

from __future__ import annotations

import warnings

import numpy as np

LD = np.longdouble
LD_EPS = float(np.finfo(LD).eps)
#: True when np.longdouble is wider than float64 (x87 80-bit or IEEE quad)
EXTENDED = LD_EPS < 1e-18

ORDER = 30        # Taylor order
TOL = 1e-23       # target truncation error per step (state norm ~1)
HMAX = 4.0        # cap on the scaled step (|w| <= 2 in scaled units)
CHUNK = 4096      # cases per vectorised block (keeps temporaries in cache-ish sizes)


def precision_note() -> str:
    """Human-readable description of the working precision."""
    fi = np.finfo(LD)
    if LD_EPS < 1e-30:
        kind = "IEEE quad"
    elif EXTENDED:
        kind = "x87 80-bit extended"
    else:
        kind = "float64 only (NO extended precision)"
    return f"np.longdouble = {kind}, eps = {fi.eps:.3g}"


def check_precision(strict: bool = False) -> bool:
    """Warn (or raise if strict) when np.longdouble is only float64."""
    if not EXTENDED:
        msg = (f"np.longdouble has eps {LD_EPS:.3g} (no extended precision on this platform): "
               "the longdouble reference is NOT more accurate than the code under test")
        if strict:
            raise RuntimeError(msg)
        warnings.warn(msg, RuntimeWarning, stacklevel=2)
    return EXTENDED


def _series(V0, r0, J, N):
    """Taylor coefficients up to order N.

    V0 (4, 3, n): mu and the rows of R; r0 (4, n): the quaternion; J (3, n) the
    scaled inertia (w = mu / J by a correctly rounded division, no rounded 1/J).
    Returns V (N+1, 4, 3, n) and Rq (N+1, 4, n) (coefficients of t**k).
    """
    n = V0.shape[-1]
    V = np.empty((N + 1, 4, 3, n), dtype=LD)
    Rq = np.empty((N + 1, 4, n), dtype=LD)
    W = np.empty((N + 1, 3, n), dtype=LD)
    V[0] = V0
    Rq[0] = r0
    for k in range(N):
        W[k] = V[k, 0] / J
        Vs = V[: k + 1]                 # (k+1, 4, 3, n)
        Ws = W[k::-1]                   # (k+1, 3, n), reversed: Ws[j] = W[k - j]
        x0, x1, x2 = Vs[:, :, 0], Vs[:, :, 1], Vs[:, :, 2]
        w0, w1, w2 = Ws[:, None, 0], Ws[:, None, 1], Ws[:, None, 2]
        inv = LD(1) / LD(k + 1)
        # x' = x cross w for mu and the rows of R
        V[k + 1, :, 0] = (x1 * w2 - x2 * w1).sum(axis=0) * inv
        V[k + 1, :, 1] = (x2 * w0 - x0 * w2).sum(axis=0) * inv
        V[k + 1, :, 2] = (x0 * w1 - x1 * w0).sum(axis=0) * inv
        # r' = r * (0, w) / 2 = (-v.w, r0 w + v x w) / 2
        r = Rq[: k + 1]
        a0, a1, a2, a3 = r[:, 0], r[:, 1], r[:, 2], r[:, 3]
        u0, u1, u2 = Ws[:, 0], Ws[:, 1], Ws[:, 2]
        half = inv / 2
        Rq[k + 1, 0] = -(a1 * u0 + a2 * u1 + a3 * u2).sum(axis=0) * half
        Rq[k + 1, 1] = (a0 * u0 + a2 * u2 - a3 * u1).sum(axis=0) * half
        Rq[k + 1, 2] = (a0 * u1 + a3 * u0 - a1 * u2).sum(axis=0) * half
        Rq[k + 1, 3] = (a0 * u2 + a1 * u1 - a2 * u0).sum(axis=0) * half
    return V, Rq


def _horner(C, hs):
    """sum_k C[k] hs**k for coefficient array C (N+1, ..., n), hs (n,)."""
    acc = C[-1].copy()
    for k in range(C.shape[0] - 2, -1, -1):
        acc *= hs
        acc += C[k]
    return acc


def integrate_scaled(mu0, J, tau, order=ORDER, tol=TOL, hmax=HMAX):
    """Integrate the scaled system for all cases (columns) at once.

    mu0 (3, n), J (3, n), tau (n,) >= 0, all np.longdouble.
    Returns mu (3, n), R (3, 3, n) (R[a, :, i] is row a), r (4, n), nsteps (n,).
    """
    n = mu0.shape[1]
    V = np.zeros((4, 3, n), dtype=LD)
    V[0] = mu0
    for a in range(3):
        V[1 + a, a] = 1
    r = np.zeros((4, n), dtype=LD)
    r[0] = 1
    remaining = np.array(tau, dtype=LD, copy=True)
    nsteps = np.zeros(n, dtype=np.int64)
    fac = tol ** (1.0 / order)
    active = np.flatnonzero(remaining > 0)
    while active.size:
        for start in range(0, active.size, CHUNK):
            idx = active[start:start + CHUNK]
            C, Cq = _series(V[:, :, idx], r[:, idx], J[:, idx], order)
            # radius estimate from the last two orders (max over all 16 components)
            rho = np.full(idx.size, np.inf)
            for k in (order - 1, order):
                amax = np.maximum(np.abs(C[k]).max(axis=(0, 1)), np.abs(Cq[k]).max(axis=0))
                amax = np.maximum(amax.astype(np.float64), 1e-300)
                rho = np.minimum(rho, amax ** (-1.0 / k))
            hs = np.minimum(rho * fac, hmax).astype(LD)
            rem = remaining[idx]
            last = hs >= rem
            hs = np.where(last, rem, hs)
            V[:, :, idx] = _horner(C, hs)
            r[:, idx] = _horner(Cq, hs)
            remaining[idx] = np.where(last, LD(0), rem - hs)
            nsteps[idx] += 1
        active = np.flatnonzero(remaining > 0)
    return V[0], V[1:], r, nsteps


def quat_mul(p, q):
    """Quaternion product for arrays (4, n) (scalar first)."""
    p0, p1, p2, p3 = p
    q0, q1, q2, q3 = q
    return np.stack([p0 * q0 - p1 * q1 - p2 * q2 - p3 * q3,
                     p0 * q1 + q0 * p1 + p2 * q3 - p3 * q2,
                     p0 * q2 + q0 * p2 + p3 * q1 - p1 * q3,
                     p0 * q3 + q0 * p3 + p1 * q2 - p2 * q1])


def flow(m0, inertia, h, Q0=None, q0=None, order=ORDER, tol=TOL, hmax=HMAX, return_nsteps=False):
    """Reference flow in np.longdouble for a batch of cases.

    m0 (n, 3); inertia (3,) or (n, 3) positive; h scalar or (n,) (any sign);
    Q0 (n, 3, 3) / q0 (n, 4) default to the identity.  Inputs are converted
    exactly from float64.  Returns (m1 (n, 3), Q1 (n, 3, 3), q1 (n, 4)) as
    np.longdouble arrays, and the number of steps per case if asked.
    """
    m0 = np.atleast_2d(np.asarray(m0, dtype=LD))
    n = m0.shape[0]
    inertia = np.broadcast_to(np.asarray(inertia, dtype=LD), (n, 3))
    h = np.broadcast_to(np.asarray(h, dtype=LD), (n,))
    # scale by powers of two only (exact): mu = m / 2**a, J = inertia / 2**b, tau = |h| 2**(a-b),
    # with |mu| and min(J) in [1/sqrt2, sqrt2]; no rounding of the data before the integration
    G = np.sqrt((m0 * m0).sum(axis=1).astype(np.float64))
    a = np.where(G > 0, np.round(np.log2(np.where(G > 0, G, 1.0))), 0.0)
    b = np.round(np.log2(inertia.min(axis=1).astype(np.float64)))
    mu0 = np.ldexp(m0.T, -a.astype(np.int64))
    J = np.ldexp(inertia.T, -b.astype(np.int64)).copy()
    tau = np.where(G > 0, np.ldexp(np.abs(h), (a - b).astype(np.int64)), LD(0))
    sign = np.where(h < 0, LD(-1), LD(1))
    # backward time: p(s) = -mu(-s) solves the same ODE forward in s, with p(0) = -mu0,
    # and R(-s), r(-s) solve theirs driven by p; so reflect mu0, integrate forward
    # and reflect the final momentum back
    mu0 = mu0 * sign
    mu, R, r, nsteps = integrate_scaled(mu0, J, tau, order, tol, hmax)
    mu = mu * sign
    m1 = np.ldexp(mu, a.astype(np.int64)).T
    R = np.moveaxis(R, -1, 0)                       # (n, 3, 3), R[i, a, :] = row a
    r = r.T                                         # (n, 4)
    if Q0 is None:
        Q1 = R.copy()
    else:
        Q0 = np.asarray(Q0, dtype=LD)
        Q1 = np.einsum("nij,njk->nik", np.broadcast_to(Q0, (n, 3, 3)), R)
    if q0 is None:
        q1 = r.copy()
    else:
        q0 = np.broadcast_to(np.asarray(q0, dtype=LD), (n, 4))
        q1 = quat_mul(q0.T, r.T).T
    out = (m1, Q1, q1)
    return (out + (nsteps,)) if return_nsteps else out


def invariant_defects(m0, inertia, m1, Q1, q1, Q0=None):
    """Per-case defects of the reference (all should be ~1e-18 with longdouble).

    Returns a dict of arrays (n,): norm, energy (relative), spatial momentum
    (relative to |m|), orthogonality of Q1, unit norm of q1, |E(q1) - Q1| (only
    meaningful when Q0 = E(q0), e.g. both identity).
    """
    m0 = np.asarray(m0, dtype=LD)
    n = m0.shape[0]
    inertia = np.broadcast_to(np.asarray(inertia, dtype=LD), (n, 3))
    G2 = (m0 * m0).sum(axis=1)
    G = np.sqrt(G2)
    e0 = (m0 * m0 / inertia).sum(axis=1)
    e1 = (m1 * m1 / inertia).sum(axis=1)
    Qm0 = m0 if Q0 is None else np.einsum("nij,nj->ni", np.asarray(Q0, dtype=LD), m0)
    Qm1 = np.einsum("nij,nj->ni", Q1, m1)
    eye = np.eye(3, dtype=LD)
    orth = np.abs(np.einsum("nij,nkj->nik", Q1, Q1) - eye).max(axis=(1, 2))
    q0_, v = q1[:, 0], q1[:, 1:]
    H = np.zeros((n, 3, 3), dtype=LD)
    H[:, 0, 1], H[:, 0, 2], H[:, 1, 2] = -v[:, 2], v[:, 1], -v[:, 0]
    H[:, 1, 0], H[:, 2, 0], H[:, 2, 1] = v[:, 2], -v[:, 1], v[:, 0]
    E = eye + 2 * q0_[:, None, None] * H + 2 * H @ H
    return {
        "norm": np.abs((m1 * m1).sum(axis=1) - G2) / G2,
        "energy": np.abs(e1 - e0) / e0,
        "spatial": np.abs(Qm1 - Qm0).max(axis=1) / G,
        "orth": orth,
        "quatnorm": np.abs((q1 * q1).sum(axis=1) - 1),
        "quat_vs_matrix": np.abs(E - Q1).max(axis=(1, 2)),
    }


def split_float64(x):
    """Exact split of np.longdouble values into float64 pairs: x == hi + lo.

    (x - hi is exact and fits in float64 for the 64-bit x87 mantissa; used to
    convert to mpmath without rounding: mpf(hi) + mpf(lo).)
    """
    x = np.asarray(x, dtype=LD)
    hi = x.astype(np.float64)
    lo = (x - hi.astype(LD)).astype(np.float64)
    return hi, lo
