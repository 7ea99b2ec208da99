"""The semi-exact short step (jint_gauss, fortran/exact_flow_generic.inc, and its lanes in
fortran/exact_flow_lanes.f90) against an mpmath reference of the same Gauss-Legendre sum.

The semi-exact and the exact steps share the momentum m1 and the frames of m0 and m1, so their
quaternions differ by a rotation about m1 by delta = psi_np - psi_exact, where
psi = tau / I_a + D_a / (sigma lambda) J and J is the integral of 1 / (D (1 + B D)) over the
amplitude. The reference computes delta = D_a / (sigma lambda) (J_np - J) in 40 digits (the sum
over the np nodes, and the integral by mpmath.quad) from the invariants of m0. An error in the
sum (its midpoint, its node pairs, its series) would show as a difference well above the
rounding of psi, which is what the test allows (with the rounding of the quaternions, of size 1,
through which delta is read: 6 ulps of 1 + |psi| in all; measured 2.8 ulps of it).
"""
import mpmath
import numpy as np
import pytest

import frb

# the accuracy tests of the batched flows run under each SIMD target of this CPU (frb.simd)
pytestmark = pytest.mark.usefixtures("each_cpu_target")

mp = mpmath.mp


def _gauss_legendre(n):
    """Nodes on [0, 1] and weights (sum 1) of the n-point Gauss-Legendre rule, at mp precision."""
    nodes, weights = [], []
    for x0 in np.polynomial.legendre.leggauss(n)[0]:
        x = mpmath.findroot(lambda t: mpmath.legendre(n, t), mpmath.mpf(x0))
        dp = mpmath.diff(lambda t: mpmath.legendre(n, t), x)
        nodes.append((1 + x) / 2)
        weights.append(1 / ((1 - x * x) * dp * dp))
    return nodes, weights


def _reference_delta(m, inertia, h, n):
    """psi_np - psi_exact of the step of unit momentum m (sorted moments), and the size of psi."""
    c = [mpmath.mpf(i) / mpmath.mpf(inertia[2]) for i in inertia]
    x = [mpmath.mpf(v) ** 2 for v in m]
    i21, i31, i32 = c[1] - c[0], c[2] - c[0], c[2] - c[1]
    d1 = x[1] * i21 / c[1] + x[2] * i31 / c[2]
    d3 = x[0] * i31 / c[0] + x[1] * i32 / c[1]
    d2 = x[2] * i32 / c[2] - x[0] * i21 / c[0]
    if d2 > 0:
        ia, ib, da, db, ia2, ib2, dcoef = 2, 0, d3, d1, i32, i21, d3 / c[2]
    else:
        ia, ib, da, db, ia2, ib2, dcoef = 0, 2, d1, d3, i21, i32, -d1 / c[0]
    bab = mpmath.sqrt(c[ia] * db / i31)
    bba = mpmath.sqrt(c[ib] * da / i31)
    b2a = mpmath.sqrt(c[1] * da / ia2)
    lam = mpmath.sqrt(db * ia2 / (c[0] * c[1] * c[2]))
    sigma = 1 if m[ia] > 0 else -1
    k2 = da * ib2 / (db * ia2)
    tau = mpmath.mpf(h) / mpmath.mpf(inertia[2])
    phi0 = mpmath.atan2(mpmath.mpf(m[1]) / b2a, mpmath.mpf(m[ib]) / bba)
    u1 = mpmath.ellipf(phi0, k2) + sigma * lam * tau
    phi1 = mpmath.atan2(mpmath.ellipfun("sn", u1, m=k2), mpmath.ellipfun("cn", u1, m=k2))
    dphi = mpmath.atan2(mpmath.sin(phi1 - phi0), mpmath.cos(phi1 - phi0))

    def f(t):
        d = mpmath.sqrt(1 - k2 * mpmath.sin(t) ** 2)
        return 1 / (d * (1 + bab * d))

    nodes, weights = _gauss_legendre(n)
    j_np = dphi * mpmath.fsum(w * f(phi0 + t * dphi) for t, w in zip(nodes, weights))
    j = mpmath.quad(f, [phi0, phi0 + dphi])
    coef = dcoef / (sigma * lam)
    return float(coef * (j_np - j)), float(abs(tau / c[ia]) + abs(coef * j)), float(dphi)


def _delta(m, inertia, h, n):
    """psi_np - psi_exact of frb's batched steps: the rotation about m1 taking the exact
    attitude to the semi-exact one."""
    q0 = np.tile([1.0, 0.0, 0.0, 0.0], (len(m), 1))
    m1, qe = frb.quat_step(m, q0, h, inertia, 0)
    _, qn = frb.quat_step(m, q0, h, inertia, n)
    # conj(qe) qn = (cos(delta/2), sin(delta/2) m1 / |m1|)
    r0 = np.sum(qe * qn, axis=1)
    rv = (qe[:, :1] * qn[:, 1:] - qn[:, :1] * qe[:, 1:] - np.cross(qe[:, 1:], qn[:, 1:]))
    along = np.sum(rv * m1, axis=1) / np.linalg.norm(m1, axis=1)
    return 2 * np.arctan2(along, r0)


@pytest.mark.parametrize("n", [1, 2, 3, 4, 5, 10])
def test_semi_exact_short_sum_matches_mpmath(n):
    rng = np.random.default_rng(900 + n)
    count = 48
    m = rng.normal(size=(count, 3))
    m /= np.linalg.norm(m, axis=1, keepdims=True)
    inertia = np.sort(rng.uniform(0.4, 3.0, size=(count, 3)), axis=1)
    # steps with |dphi| from 1e-3 to about 0.3: the series forms (|dphi| <= 0.1) and beyond
    h = 10 ** rng.uniform(-2.3, 0.0, count) * rng.choice([-1.0, 1.0], count)
    got = _delta(m, inertia, h, n)
    mp.dps = 40
    short = 0
    for i in range(count):
        want, size, dphi = _reference_delta(m[i], inertia[i], h[i], n)
        short += abs(dphi) <= 0.1
        # both psi are rounded (a few ulps of their terms): the sum itself must be as accurate
        assert abs(got[i] - want) <= 6 * 2.2205e-16 * (1 + size), (n, i, got[i], want, size, dphi)
    assert 10 < short < count   # both forms were exercised
