"""Extended-precision Taylor-series integrator for the free rigid body.

No elliptic function is used: the ODEs

    m' = m x w,   Q' = Q hat(w),   q' = q * (0, w) / 2,   w = m / inertia

are integrated directly.  Q and q are linear in themselves, so we write
Q(t) = Q0 R(t), q(t) = q0 * r(t) with R(0) = 1, r(0) = (1, 0, 0, 0):
the rows of R obey  x' = x x w  (row times hat(w) is a cross product) and
r' = r * (0, w) / 2.  m, the three rows of R and r are integrated together.

Scaling: with G = |m0| and s = min(inertia), mu = m / G, J = inertia / s and
tau = t G / s we have mu' = mu x (mu / J), R' = R hat(mu / J) etc. with
|mu / J| <= 1.  All quantities are then O(1) and the series are computed in
binary fixed point (Python integers scaled by 2**PREC), which is an order of
magnitude faster than mpf arithmetic.  Inputs (float64) are converted exactly
with mpmath; scaling and the final assembly Q1 = Q0 R, q1 = q0 * r are done in
mpmath with 300-bit mantissas.

Taylor coefficients of the quadratic system follow from Cauchy products.  The
step is chosen from the decay of the last two coefficients (Jorba & Zou): with
rho = min_{k in {N-1, N}} |x_k|^(-1/k) (state norm ~ 1), step = rho * factor,
factor = exp(-2) by default, so that the truncation error is ~ exp(-2 N).
"""

import math
from operator import mul

import mpmath
from mpmath import mp, mpf

PREC = 180                # fixed-point fraction bits (~54 decimal digits)
ORDER = 46                # Taylor order: local error ~ exp(-2*ORDER) ~ 1e-40
FACTOR = math.exp(-2.0)   # step = FACTOR * estimated radius of convergence
HMAX = 1.0                # cap on the scaled step
MP_PREC = 300             # bits for the mpmath parts


def _conv(a, b, k):
    """sum_{j=0}^k a[j] * b[k-j] (unscaled products, scale 2**(2*PREC))."""
    return sum(map(mul, a[: k + 1], b[k::-1]))


def _rshift_round(x, n):
    return (x + (1 << (n - 1))) >> n


def _series(mu, rows, r, invJ, order, eta=(0, 0, 0)):
    """Taylor coefficients (fixed point) of mu, rows of R and r up to `order`; eta (fixed point)
    a constant rotor momentum, mu' = (mu + eta) x w (the gyrostat), zero for the free body."""
    P = PREC
    M = [[mu[0]], [mu[1]], [mu[2]]]
    X = [[[x] for x in row] for row in rows]      # X[a][i] coefficient lists
    Rq = [[c] for c in r]
    W = [[], [], []]
    for k in range(order):
        for j in range(3):
            W[j].append(_rshift_round(M[j][k] * invJ[j], P))
        d = 2 * (k + 1)
        W0, W1, W2 = W
        # body momentum and rows of R: x' = x cross w (for mu, x = mu + eta: eta adds to the
        # zeroth coefficient)
        E = [[M[j][0] + eta[j]] + M[j][1:] for j in range(3)]
        for src, vec in ((E, M), (X[0], X[0]), (X[1], X[1]), (X[2], X[2])):
            x0, x1, x2 = src
            c0 = _conv(x1, W2, k) - _conv(x2, W1, k)
            c1 = _conv(x2, W0, k) - _conv(x0, W2, k)
            c2 = _conv(x0, W1, k) - _conv(x1, W0, k)
            # coefficient k+1 = round(c / (2**P (k+1)))
            vec[0].append(_div_round(c0, P, k + 1))
            vec[1].append(_div_round(c1, P, k + 1))
            vec[2].append(_div_round(c2, P, k + 1))
        # quaternion r' = r * (0, w) / 2 = (-v.w, r0 w + v x w) / 2
        r0, r1, r2, r3 = Rq
        s0 = -(_conv(r1, W0, k) + _conv(r2, W1, k) + _conv(r3, W2, k))
        s1 = _conv(r0, W0, k) + _conv(r2, W2, k) - _conv(r3, W1, k)
        s2 = _conv(r0, W1, k) + _conv(r3, W0, k) - _conv(r1, W2, k)
        s3 = _conv(r0, W2, k) + _conv(r1, W1, k) - _conv(r2, W0, k)
        r0.append(_div_round(s0, P, d))
        r1.append(_div_round(s1, P, d))
        r2.append(_div_round(s2, P, d))
        r3.append(_div_round(s3, P, d))
    return M, X, Rq


def _div_round(c, P, d):
    """round(c / (2**P * d)) for integers."""
    den = d << P
    q, rem = divmod(c, den)
    if 2 * rem >= den:
        q += 1
    return q


def _horner(coefs, hs):
    P = PREC
    acc = coefs[-1]
    for c in reversed(coefs[:-1]):
        acc = _rshift_round(acc * hs, P) + c
    return acc


def _step_size(allcoefs, order, factor):
    """Estimated radius from the last two orders, times factor (scaled time)."""
    P = PREC
    rho = math.inf
    for k in (order - 1, order):
        # |x_k| = amax * 2**-P ; rho_k = |x_k|**(-1/k); a zero coefficient
        # counts as one unit in the last place (the step is capped anyway)
        amax = max(1, max(abs(c[k]) for c in allcoefs))
        lg = math.log(amax) - P * math.log(2.0)
        rho = min(rho, math.exp(-lg / k))
    return rho * factor


def integrate_scaled(mu0, invJ, tau, order=ORDER, factor=FACTOR, hmax=HMAX):
    """Integrate the scaled system in fixed point.

    mu0: 3 ints, invJ: 3 ints (fixed point, scale 2**PREC), tau: int (fixed).
    Returns (mu, rows, r, nsteps) as fixed-point ints.
    """
    P = PREC
    one = 1 << P
    mu = list(mu0)
    rows = [[one, 0, 0], [0, one, 0], [0, 0, one]]
    r = [one, 0, 0, 0]
    remaining = abs(tau)
    sign = 1 if tau >= 0 else -1
    nsteps = 0
    hmax_fx = int(hmax * one)
    while remaining > 0:
        M, X, Rq = _series(mu, rows, r, invJ, order)
        allc = M + X[0] + X[1] + X[2] + Rq
        hstep = _step_size(allc, order, factor)
        hs = min(int(hstep * one), hmax_fx, remaining)
        if hs <= 0:
            raise RuntimeError("step size underflow")
        remaining -= hs
        hsig = sign * hs
        mu = [_horner(c, hsig) for c in M]
        rows = [[_horner(c, hsig) for c in row] for row in X]
        r = [_horner(c, hsig) for c in Rq]
        nsteps += 1
    return mu, rows, r, nsteps


# ---------------------------------------------------------------- mpmath glue

def quat_mul_mp(p, q):
    p0, p1, p2, p3 = p
    q0, q1, q2, q3 = q
    return [p0 * q0 - p1 * q1 - p2 * q2 - p3 * q3,
            p0 * q1 + q0 * p1 + p2 * q3 - p3 * q2,
            p0 * q2 + q0 * p2 + p3 * q1 - p1 * q3,
            p0 * q3 + q0 * p3 + p1 * q2 - p2 * q1]


def quat_to_matrix_mp(q):
    """E(q) = 1 + 2 q0 hat(v) + 2 hat(v)^2 (mpf lists, q assumed unit)."""
    q0, v1, v2, v3 = q
    H = [[0, -v3, v2], [v3, 0, -v1], [-v2, v1, 0]]
    H2 = [[sum(H[i][k] * H[k][j] for k in range(3)) for j in range(3)] for i in range(3)]
    return [[(1 if i == j else 0) + 2 * q0 * H[i][j] + 2 * H2[i][j] for j in range(3)]
            for i in range(3)]


def _to_fx(x):
    return int(mpmath.nint(x * (mpf(2) ** PREC)))


def _from_fx(i):
    return mpf(i) / mpf(2) ** PREC


def flow(m0, Q0, q0, inertia, h, order=ORDER, factor=FACTOR, hmax=HMAX,
         with_diagnostics=False):
    """Reference flow from float64 inputs (converted exactly).

    Returns mpf results (m1 list, Q1 3x3 list, q1 list) and, if asked, a dict of
    diagnostics (invariant defects, number of steps).
    """
    with mp.workprec(MP_PREC):
        m0 = [mpf(float(x)) for x in m0]
        Q0 = [[mpf(float(Q0[i][j])) for j in range(3)] for i in range(3)]
        q0 = [mpf(float(x)) for x in q0]
        I = [mpf(float(x)) for x in inertia]
        h = mpf(float(h))
        G = mpmath.sqrt(sum(x * x for x in m0))
        s = min(I)
        diag = {"nsteps": 0}
        if G == 0 or h == 0:
            mu1 = [x / G for x in m0] if G != 0 else [mpf(0)] * 3
            R = [[mpf(1 if i == j else 0) for j in range(3)] for i in range(3)]
            r = [mpf(1), mpf(0), mpf(0), mpf(0)]
            mu0 = mu1
        else:
            mu0 = [x / G for x in m0]
            J = [x / s for x in I]
            tau = h * G / s
            res = integrate_scaled([_to_fx(x) for x in mu0], [_to_fx(1 / x) for x in J],
                                   _to_fx(tau), order, factor, hmax)
            mu1 = [_from_fx(x) for x in res[0]]
            R = [[_from_fx(x) for x in row] for row in res[1]]
            r = [_from_fx(x) for x in res[2]]
            diag["nsteps"] = res[3]
        m1 = [G * x for x in mu1]
        Q1 = [[sum(Q0[i][k] * R[k][j] for k in range(3)) for j in range(3)] for i in range(3)]
        q1 = quat_mul_mp(q0, r)
        if with_diagnostics:
            J = [x / s for x in I]
            e0 = sum(x * x / j for x, j in zip(mu0, J))
            e1 = sum(x * x / j for x, j in zip(mu1, J))
            ER = quat_to_matrix_mp(r)
            diag.update(
                norm=abs(sum(x * x for x in mu1) - sum(x * x for x in mu0)),
                energy=abs(e1 - e0),
                spatial=max(abs(sum(R[i][k] * mu1[k] for k in range(3)) - mu0[i])
                            for i in range(3)),
                orth=max(abs(sum(R[i][k] * R[j][k] for k in range(3)) - (1 if i == j else 0))
                         for i in range(3) for j in range(3)),
                quatnorm=abs(sum(x * x for x in r) - 1),
                quat_vs_matrix=max(abs(ER[i][j] - R[i][j]) for i in range(3) for j in range(3)),
            )
            diag = {k: (float(v) if k != "nsteps" else v) for k, v in diag.items()}
        out = (m1, Q1, q1)
        if with_diagnostics:
            return out, diag
        return out


# ------------------------------------------------------ variational equations

def _cross_conv(x, y, k):
    """Coefficient k of x x y (x, y: lists of 3 coefficient lists), scale 2**(2*PREC)."""
    x0, x1, x2 = x
    y0, y1, y2 = y
    return (_conv(x1, y2, k) - _conv(x2, y1, k),
            _conv(x2, y0, k) - _conv(x0, y2, k),
            _conv(x0, y1, k) - _conv(x1, y0, k))


def _matvec_k(W, x, k, P):
    """Coefficient k of W x (W: 3x3 fixed point, x: 3 coefficient lists), fixed point."""
    return [_rshift_round(W[i][0] * x[0][k] + W[i][1] * x[1][k] + W[i][2] * x[2][k], P)
            for i in range(3)]


def _variational_series(mu, dirs, W, order, P):
    """Taylor coefficients of mu' = mu x W mu and, for each direction (a, b, dW) of dirs,
    a' = a x W mu + mu x W a + mu x dW mu,  b' = W a + dW mu - W mu x b  (dW None: no forcing)."""
    M = [[c] for c in mu]
    A = [[[c] for c in a] for a, _, _ in dirs]
    B = [[[c] for c in b] for _, b, _ in dirs]
    Wm = [[], [], []]
    Wa = [[[], [], []] for _ in dirs]
    F = [[[], [], []] for _ in dirs]
    for k in range(order):
        for i, c in enumerate(_matvec_k(W, M, k, P)):
            Wm[i].append(c)
        cm = _cross_conv(M, Wm, k)
        for d, (_, _, dW) in enumerate(dirs):
            for i, c in enumerate(_matvec_k(W, A[d], k, P)):
                Wa[d][i].append(c)
            if dW is not None:
                for i, c in enumerate(_matvec_k(dW, M, k, P)):
                    F[d][i].append(c)
        for i in range(3):
            M[i].append(_div_round(cm[i], P, k + 1))
        for d, (_, _, dW) in enumerate(dirs):
            s1 = _cross_conv(A[d], Wm, k)
            s2 = _cross_conv(M, Wa[d], k)
            s3 = _cross_conv(M, F[d], k) if dW is not None else (0, 0, 0)
            s4 = _cross_conv(Wm, B[d], k)
            for i in range(3):
                A[d][i].append(_div_round(s1[i] + s2[i] + s3[i], P, k + 1))
                lin = Wa[d][i][k] + (F[d][i][k] if dW is not None else 0)
                B[d][i].append(_div_round((lin << P) - s4[i], P, k + 1))
    return M, A, B


def variational_flow(m0, inertia, h, params="moments", order=40, prec=160, factor=FACTOR):
    """Reference jacobian of the exact step from float64 inputs (converted exactly).

    inertia: the three principal moments, or a symmetric 3x3 tensor J (then m0 is in the frame of
    J and the free body is m' = m x J^-1 m). The variational equations of the free body,
        dm' = dm x w + m x J^-1 dm + m x dJ^-1 m,   dth' = J^-1 dm + dJ^-1 m - w x dth,
    (dth the attitude perturbation in the body frame) are integrated with the state by the
    fixed-point Taylor method of integrate_scaled (order, prec bits), in the scaled variables
    mu = m / |m0|, tau = t |m0| / s, W = s J^-1 (s the smallest eigenvalue of J).
    Returns a dict of mpf lists: m1 (3), phi (6 x 6: (dm1, dth1) = phi (dm0, dth0)), dh (6: d/dh),
    dinertia (6 x 3 for moments: d/dI_j; 6 x 6 for a tensor: d/dJ in the order J11, J22, J33,
    J12, J13, J23, an off-diagonal component moving both of its entries).
    """
    global PREC
    saved = PREC
    PREC = prec
    try:
        return _variational_flow(m0, inertia, h, order, factor)
    finally:
        PREC = saved


def _variational_flow(m0, inertia, h, order, factor):
    P = PREC
    one = 1 << P
    with mp.workprec(MP_PREC):
        m = [mpf(float(x)) for x in m0]
        Iarr = [[mpf(float(x)) for x in row] for row in inertia] if hasattr(inertia[0], "__len__") \
            else None
        if Iarr is None:
            moments = [mpf(float(x)) for x in inertia]
            J = mpmath.diag(moments)
            s = min(moments)
        else:
            J = mpmath.matrix(Iarr)
            s = min(mpmath.eigsy(J)[0])
        Jinv = J ** -1
        G = mpmath.sqrt(sum(x * x for x in m))
        hh = mpf(float(h))
        tau = hh * G / s
        W = [[_to_fx(s * Jinv[i, j]) for j in range(3)] for i in range(3)]
        # parameter directions: dJ^-1 = -J^-1 dJ J^-1 for each unit perturbation dJ
        if Iarr is None:
            basis = [[(i, i)] for i in range(3)]
        else:
            basis = [[(0, 0)], [(1, 1)], [(2, 2)], [(0, 1), (1, 0)], [(0, 2), (2, 0)],
                     [(1, 2), (2, 1)]]
        dWs = []
        for entries in basis:
            dJ = mpmath.zeros(3, 3)
            for i, j in entries:
                dJ[i, j] = 1
            dJinv = -Jinv * dJ * Jinv
            dWs.append([[_to_fx(s * dJinv[i, j]) for j in range(3)] for i in range(3)])
        zero = [0, 0, 0]
        dirs = []
        for j in range(3):            # dm0 = e_j: a(0) = e_j (then dm1 = a, dth1 = b / G)
            e = [0, 0, 0]
            e[j] = one
            dirs.append((e, zero, None))
        for j in range(3):            # dth0 = e_j
            e = [0, 0, 0]
            e[j] = one
            dirs.append((zero, e, None))
        for dW in dWs:                # parameters (dm1 = G a, dth1 = b)
            dirs.append((zero, zero, dW))
        mu = [_to_fx(x / G) for x in m]
        state = (mu, [list(d[0]) for d in dirs], [list(d[1]) for d in dirs])
        remaining = abs(_to_fx(tau))
        sign = 1 if tau >= 0 else -1
        while remaining > 0:
            cur = [(state[1][d], state[2][d], dirs[d][2]) for d in range(len(dirs))]
            M, A, B = _variational_series(state[0], cur, W, order, P)
            hs = min(int(_step_size(M, order, factor) * one), one, remaining)
            remaining -= hs
            hsig = sign * hs
            state = ([_horner(c, hsig) for c in M],
                     [[_horner(c, hsig) for c in a] for a in A],
                     [[_horner(c, hsig) for c in b] for b in B])
        mu1 = [_from_fx(x) for x in state[0]]
        m1 = [G * x for x in mu1]
        phi = [[mpf(0)] * 6 for _ in range(6)]
        for j in range(3):
            a, b = state[1][j], state[2][j]
            for i in range(3):
                phi[i][j] = _from_fx(a[i])
                phi[3 + i][j] = _from_fx(b[i]) / G
            a, b = state[1][3 + j], state[2][3 + j]
            for i in range(3):
                phi[i][3 + j] = G * _from_fx(a[i])
                phi[3 + i][3 + j] = _from_fx(b[i])
        dinertia = [[mpf(0)] * len(dWs) for _ in range(6)]
        for p in range(len(dWs)):
            a, b = state[1][6 + p], state[2][6 + p]
            for i in range(3):
                dinertia[i][p] = G * _from_fx(a[i])
                dinertia[3 + i][p] = _from_fx(b[i])
        w1 = Jinv * mpmath.matrix(m1)
        w1 = [w1[i] for i in range(3)]
        f1 = [m1[1] * w1[2] - m1[2] * w1[1], m1[2] * w1[0] - m1[0] * w1[2],
              m1[0] * w1[1] - m1[1] * w1[0]]
        return dict(m1=m1, phi=phi, dh=f1 + w1, dinertia=dinertia)
