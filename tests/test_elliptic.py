"""Elliptic routines of the Fortran core against scipy.special and mpmath.

Largest relative errors measured when this file was written are in the README (section Accuracy).
"""
import mpmath as mp
import numpy as np
import pytest
import scipy.special as sp

_testing = pytest.importorskip("frb._testing", reason="frb._testing not built (meson option testing)")

RNG = np.random.default_rng(20261122)


def _moduli(n, rng, tiny_exponent=-12):
    """Moduli k with 1 - k^2 spread log-uniformly down to 10**tiny_exponent, plus plain ones.

    Returns (k, kp, parameter m as an exact mpmath value 1 - kp^2) so that references use the
    modulus the Fortran code receives."""
    kp = np.concatenate([10.0 ** rng.uniform(tiny_exponent / 2, 0, n // 2), rng.uniform(0, 1, n - n // 2)])
    kp[0] = 1.0
    k = np.sqrt((1 - kp) * (1 + kp))
    return k, kp


def _relerr(a, b):
    return np.abs(a - b) / np.maximum(np.abs(b), np.finfo(float).tiny)


def test_carlson_rf_rc_rj_against_scipy():
    n = 4000
    x, y, z = 10.0 ** RNG.uniform(-8, 4, (3, n))
    x[: n // 10] = 0.0                      # one argument zero
    p = 10.0 ** RNG.uniform(-8, 4, n)
    rf, rj, rc = _testing.ell_carlson(x, y, z, p)
    assert np.max(_relerr(rf, sp.elliprf(x, y, z))) < 1e-14
    # scipy's elliprj loses digits when p is far below x, y, z: arbitrate with mpmath
    disagree = np.where(_relerr(rj, sp.elliprj(x, y, z, p)) > 1e-14)[0]
    mp.mp.dps = 30
    for i in disagree:
        assert abs(rj[i] / mp.elliprj(x[i], y[i], z[i], p[i]) - 1) < 1e-14
    rc_neg = _testing.ell_carlson(x, -y, z, p)[2]       # principal value for y < 0
    assert np.max(_relerr(rc, sp.elliprc(x, y))) < 1e-14
    ok = x > 0
    assert np.max(_relerr(rc_neg[ok], sp.elliprc(x[ok], -y[ok]))) < 1e-14


def test_carlson_rj_against_mpmath_extreme_arguments():
    # RJ(c^2, d^2, 1, p) with c, d -> 0 (near-separatrix turning point) and p up to 1e12
    mp.mp.dps = 30
    xs = np.array([1e-30, 1e-20, 1e-12, 1e-4, 0.0, 0.3])
    ys = np.array([1e-28, 1e-24, 1e-12, 1e-6, 1e-20, 0.7])
    ps = np.array([1.0, 2.0, 1e6, 1e12, 1.5, 1e-8])
    rj = _testing.ell_carlson(xs, ys, np.ones(6), ps)[1]
    ref = np.array([float(mp.elliprj(mp.mpf(a), mp.mpf(b), 1, mp.mpf(c))) for a, b, c in zip(xs, ys, ps)])
    assert np.max(_relerr(rj, ref)) < 1e-14


def test_carlson_rj_series_region_against_mpmath():
    """RJ where its degree-7 series is used without duplication (relative spread of the arguments
    up to (u/4)^(1/8) = 8.8e-3) and just beyond (one duplication): each term of the series
    matters there, so a wrong coefficient shows as an error far above rounding."""
    mp.mp.dps = 40
    rng = np.random.default_rng(7)
    n = 400
    delta = np.concatenate([rng.uniform(1e-4, 8.5e-3, n // 2), rng.uniform(9e-3, 3e-2, n // 2)])
    base = 10.0 ** rng.uniform(-3, 3, n)
    x, y, z, p = base * (1 + delta * rng.uniform(-1, 1, (4, n)))
    rj = _testing.ell_carlson(x, y, z, p)[1]
    ref = np.array([float(mp.elliprj(mp.mpf(a), mp.mpf(b), mp.mpf(c), mp.mpf(d)))
                    for a, b, c, d in zip(x, y, z, p)])
    # (a series truncated at degree 5 would leave about 0.15 Delta^6 ~ 6e-14 at the largest spreads)
    assert np.max(_relerr(rj, ref)) < 1e-15


def test_jacobi_functions_against_mpmath():
    """sn, cn, dn and am over many periods, 1 - k^2 down to 1e-12, relative to mpmath."""
    mp.mp.dps = 40
    n = 300
    k, kp = _moduli(n, RNG)
    K = _testing.ell_first_kind(np.zeros(n), k, kp)[1]
    # reduced arguments |u| <= 0.9 K: relative accuracy of each function
    u = RNG.uniform(-0.9, 0.9, n) * K
    sn, cn, dn, am = _testing.ell_jacobi(u, k, kp)
    worst = np.zeros(4)
    for i in range(n):
        m = 1 - mp.mpf(kp[i]) ** 2
        ref = [mp.ellipfun(f, u[i], m=m) for f in ("sn", "cn", "dn")]
        phi = mp.asin(ref[0]) if ref[1] >= 0 else mp.pi * mp.sign(ref[0]) - mp.asin(ref[0])
        got = (sn[i], cn[i], dn[i], am[i])
        for j, r in enumerate(ref + [phi]):
            worst[j] = max(worst[j], abs(float((got[j] - r) / r)) if r != 0 else abs(got[j]))
    assert np.all(worst < 1e-14), worst
    # many periods: absolute error limited by the representation of u (|u| eps)
    u = RNG.uniform(-40, 40, n) * K
    sn, cn, dn, am = _testing.ell_jacobi(u, k, kp)
    for i in range(0, n, 3):
        m = 1 - mp.mpf(kp[i]) ** 2
        tol = 4e-16 * max(1.0, abs(u[i])) + 1e-15
        assert abs(sn[i] - mp.ellipfun("sn", u[i], m=m)) < tol
        assert abs(cn[i] - mp.ellipfun("cn", u[i], m=m)) < tol
        assert abs(dn[i] - mp.ellipfun("dn", u[i], m=m)) < tol


def test_jacobi_against_scipy_moderate_moduli():
    n = 5000
    m = RNG.uniform(0, 0.99, n)
    u = RNG.uniform(-30, 30, n)
    sn, cn, dn, am = _testing.ell_jacobi(u, np.sqrt(m), np.sqrt(1 - m))
    ref = sp.ellipj(u, m)
    for got, r in zip((sn, cn, dn, am), ref):
        assert np.max(np.abs(got - r)) < 1e-14 * 30


def test_jacobi_series_for_short_steps_against_mpmath():
    """The Maclaurin series of sn (short steps of the flows) over its whole range |v| <= vmax,
    m in [0, 1] including both ends and m -> 1 (radius of convergence pi/2, the worst case)."""
    mp.mp.dps = 40
    n = 600
    _, _, _, vmax = _testing.ell_jacobi_series(np.zeros(1), np.zeros(1))
    assert 0.2 < vmax < np.pi / 2
    v = np.concatenate([RNG.uniform(-vmax, vmax, n - 8), [vmax, -vmax, vmax, vmax, 1e-300, 0.0, 1e-9, -1e-5]])
    m = np.concatenate([RNG.uniform(0, 1, n // 2), 1 - 10.0 ** RNG.uniform(-16, 0, n // 2 - 8),
                        [0.0, 1.0, 1.0, 0.5, 1.0, 0.3, 1.0, 0.0]])
    sn, cn, dn, _ = _testing.ell_jacobi_series(v, m)
    worst = np.zeros(3)
    zero = v == 0   # mpmath's ellipfun returns ~1e-22 there; the exact values are 0, 1, 1
    assert np.all(sn[zero] == 0) and np.all(cn[zero] == 1) and np.all(dn[zero] == 1)
    for i in np.where(~zero)[0]:
        ref = [mp.ellipfun(f, v[i], m=mp.mpf(m[i])) for f in ("sn", "cn", "dn")]
        for j, (got, r) in enumerate(zip((sn[i], cn[i], dn[i]), ref)):
            worst[j] = max(worst[j], abs(float((got - r) / r)) if r != 0 else abs(got))
    assert np.all(worst < 4e-16), worst
    # outside its range the routine refuses (NaN) rather than return a truncated series
    assert np.isnan(_testing.ell_jacobi_series(np.array([1.01 * vmax]), np.array([0.5]))[0]).all()


def test_jacobi_separatrix_limit_is_hyperbolic():
    u = np.linspace(-30, 30, 61)
    sn, cn, dn, am = _testing.ell_jacobi(u, np.ones_like(u), np.zeros_like(u))
    assert np.allclose(sn, np.tanh(u), rtol=1e-15, atol=0)
    assert np.allclose(cn, 1 / np.cosh(u), rtol=1e-14, atol=0)
    assert np.allclose(am, 2 * np.arctan(np.tanh(u / 2)), rtol=1e-15, atol=1e-16)


def test_first_kind_landen_against_scipy():
    n = 5000
    k, kp = _moduli(n, RNG)
    phi = RNG.uniform(-30, 30, n)
    f, kc = _testing.ell_first_kind(phi, k, kp)
    m = k * k
    # scipy's ellipkinc loses digits as m -> 1: where it disagrees, mpmath arbitrates
    bad = (_relerr(f, sp.ellipkinc(phi, m)) > 1e-14) | (_relerr(kc, sp.ellipk(m)) > 1e-14)
    mp.mp.dps = 40
    for i in np.where(bad)[0]:
        mm = 1 - mp.mpf(kp[i]) ** 2
        assert abs(f[i] / mp.ellipf(phi[i], mm) - 1) < 1e-14
        assert abs(kc[i] / mp.ellipk(mm) - 1) < 1e-14


def test_third_kind_against_mpmath_both_signs_of_n():
    """Pi(phi, n, k) over several periods, n of both signs, 1 - k^2 down to 1e-12."""
    mp.mp.dps = 40
    n = 400
    k, kp = _moduli(n, RNG)
    nn = np.concatenate([-(10.0 ** RNG.uniform(-3, 3, n // 2)), RNG.uniform(0, 0.95, n - n // 2)])
    phi1 = RNG.uniform(-8, 8, n)
    phi2 = RNG.uniform(-8, 8, n)
    pi1, pi2, pi12, _ = _testing.ell_third_kind(phi1, phi2, nn, k, kp, 0)
    worst = 0.0
    for i in range(n):
        mm = 1 - mp.mpf(kp[i]) ** 2
        r1 = mp.ellippi(nn[i], phi1[i], mm)
        r2 = mp.ellippi(nn[i], phi2[i], mm)
        worst = max(worst, abs(float(pi1[i] / r1 - 1)), abs(float(pi2[i] / r2 - 1)))
        # the difference: absolute error relative to the size of the terms
        scale = abs(float(r1)) + abs(float(r2)) + abs(phi1[i]) + abs(phi2[i])
        assert abs(pi12[i] - float(r2 - r1)) < 4e-15 * scale
    assert worst < 1e-14, worst


@pytest.mark.parametrize("np_nodes", [1, 2, 3, 5, 8, 10])
def test_gauss_legendre_third_kind_converges_at_order_2np(np_nodes):
    k = np.full(4, 0.8)
    kp = np.sqrt(1 - k * k)
    nn = np.full(4, -0.7)
    phi1 = np.full(4, 0.3)
    widths = np.array([0.4, 0.2, 0.1, 0.05])
    _, _, exact, gauss = _testing.ell_third_kind(phi1, phi1 + widths, nn, k, kp, np_nodes)
    err = np.abs(gauss - exact)
    usable = err > 1e-14
    if usable.sum() >= 2:
        slope = np.polyfit(np.log(widths[usable]), np.log(err[usable]), 1)[0]
        # local error of a 2np-order rule on an interval of width w is O(w^(2np+1))
        assert slope > 2 * np_nodes + 1 - 0.6
    assert err[-1] < max(1e-14, 10 * 0.05 ** (2 * np_nodes + 1))
