"""Bodies for the gyrostat references: random bodies and the edge families.

Every case is a dict with float64 arrays m0 (3,), hr (3,), inertia (3,), q0 (4,) and a label.
The equilibria of the gyrostat on the sphere |M| = G (M = m + hr) are the critical points of the
energy H(M) = (M - hr) . I^-1 (M - hr) / 2 there: I^-1 (M - hr) = nu M, i.e.
M_j = d_j hr_j / (d_j - nu) with sum_j M_j^2 = G^2 (d = 1 / inertia), at most six of them (two
to six, by the number of roots nu); the kind of each follows from the energy's Hessian on the
tangent plane, the restriction of I^-1 - nu.
"""

import numpy as np
from mpmath import mp, mpf


def unit(rng, n=3):
    while True:
        v = rng.normal(size=n)
        nv = np.linalg.norm(v)
        if nv > 1e-3:
            return v / nv


def case(rng, label, m0, hr, inertia, q0=None):
    return dict(label=label, m0=np.asarray(m0, dtype=float), hr=np.asarray(hr, dtype=float),
                inertia=np.asarray(inertia, dtype=float),
                q0=unit(rng, 4) if q0 is None else np.asarray(q0, dtype=float))


def random_body(rng, ratio=None, label="random"):
    """m0 normal, moments uniform in [0.5, 3] (any order), hr of random direction with
    |hr| / |m0| log-uniform in [1e-3, 1e3] (or `ratio`)."""
    m0 = rng.normal(size=3)
    inertia = rng.uniform(0.5, 3.0, size=3)
    r = 10 ** rng.uniform(-3, 3) if ratio is None else ratio
    hr = unit(rng) * r * np.linalg.norm(m0)
    return case(rng, f"{label} |hr|/|m|={r:.3g}", m0, hr, inertia)


def equilibria(hr, inertia, G):
    """The equilibria M (high precision, then rounded) on |M| = G and their kinds
    ('max', 'min', 'saddle'), from the roots nu of sum_j (d_j hr_j / (d_j - nu))^2 = G^2."""
    with mp.workdps(50):
        d = [1 / mpf(float(x)) for x in inertia]
        h = [mpf(float(x)) for x in hr]
        G = mpf(G)
        # polynomial: sum_j (d_j h_j)^2 prod_{k != j} (d_k - nu)^2 - G^2 prod_k (d_k - nu)^2
        P = np.polynomial.Polynomial
        lin = [P([float(dk), -1.0]) for dk in d]
        total = -float(G) ** 2 * (lin[0] * lin[1] * lin[2]) ** 2
        for j in range(3):
            others = [lin[k] for k in range(3) if k != j]
            total = total + float(d[j] * h[j]) ** 2 * (others[0] * others[1]) ** 2
        guesses = [r.real for r in total.roots() if abs(r.imag) < 1e-6 * (1 + abs(r))]
        found = []
        for g in guesses:
            def f(nu):
                return sum((d[j] * h[j] / (d[j] - nu)) ** 2 for j in range(3)) - G * G
            try:
                nu = mp.findroot(f, mpf(g))
            except Exception:  # noqa: BLE001 - a spurious guess
                continue
            if any(abs(nu - x) < mpf(10) ** -30 for x in found):
                continue
            found.append(nu)
        out = []
        for nu in found:
            M = [d[j] * h[j] / (d[j] - nu) for j in range(3)]
            # the Hessian of H on the tangent plane of the sphere at M: I^-1 - nu restricted
            Mf = np.array([float(x) for x in M])
            u = Mf / np.linalg.norm(Mf)
            basis = np.linalg.svd(np.eye(3) - np.outer(u, u))[0][:, :2]
            hess = basis.T @ np.diag([float(x - nu) for x in d]) @ basis
            ev = np.linalg.eigvalsh(hess)
            kind = "saddle" if ev[0] < 0 < ev[1] else ("min" if ev[0] > 0 else "max")
            out.append((M, kind))
        return out


def near_equilibrium(rng, hr, inertia, G, kind, eps, label):
    """A body whose total momentum is an equilibrium of the given kind moved by eps G along a
    random tangent direction (eps = 0: the equilibrium, rounded), or None when there is none."""
    eqs = [M for M, k in equilibria(hr, inertia, G) if k == kind]
    if not eqs:
        return None
    with mp.workdps(50):
        M = eqs[0]
        Mf = np.array([float(x) for x in M])
        t = np.cross(Mf, unit(rng))
        t /= np.linalg.norm(t)
        Mp = [M[j] + mpf(eps) * mpf(G) * mpf(float(t[j])) for j in range(3)]
        m0 = np.array([float(Mp[j] - mpf(float(hr[j]))) for j in range(3)])
    return case(rng, label, m0, hr, inertia)


def edge_families(rng):
    """The edge families: rotor along each principal axis (both signs), symmetric bodies (rotor
    along the axis of symmetry and off it), the sphere, |hr| = |m|, and near each kind of
    equilibrium (eps = 1e-2 .. 1e-8, and the stable equilibria themselves, rounded): the orbits
    near a saddle follow its separatrices."""
    cases = []
    for j in range(3):
        for s in (1.0, -1.0):
            for r in (1e-2, 1.0, 30.0):
                m0 = rng.normal(size=3)
                hr = np.zeros(3)
                hr[j] = s * r * np.linalg.norm(m0)
                cases.append(case(rng, f"hr along axis {j + 1} ({'+' if s > 0 else '-'}), "
                                  f"|hr|/|m|={r:g}", m0, hr, rng.uniform(0.5, 3.0, 3)))
    for name, inertia in (("oblate I1=I2<I3", [1.0, 1.0, 2.0]), ("prolate I1<I2=I3", [0.7, 1.6, 1.6]),
                          ("unsorted symmetric I1=I3", [1.3, 0.6, 1.3])):
        inertia = np.array(inertia)
        axis = np.argmax([np.sum(inertia == x) == 1 for x in inertia])
        for r in (0.1, 1.0, 10.0):
            m0 = rng.normal(size=3)
            hr = np.zeros(3)
            hr[axis] = r * np.linalg.norm(m0)
            cases.append(case(rng, f"{name}, hr on the axis, |hr|/|m|={r:g}", m0, hr, inertia))
            cases.append(case(rng, f"{name}, hr off the axis, |hr|/|m|={r:g}", m0,
                              unit(rng) * r * np.linalg.norm(m0), inertia))
    for r in (0.1, 1.0, 10.0):
        m0 = rng.normal(size=3)
        cases.append(case(rng, f"sphere, |hr|/|m|={r:g}", m0, unit(rng) * r * np.linalg.norm(m0),
                          np.full(3, 1.7)))
    for _ in range(4):
        cases.append(random_body(rng, ratio=1.0, label="|hr| = |m|"))
    for r in (0.05, 0.3):
        for kind in ("saddle", "min", "max"):
            # (a saddle itself, rounded, starts an orbit within 1e-16 of it: its period and phase
            # after long steps are undetermined at any precision below 1e-32)
            for eps in (1e-2, 1e-4, 1e-6, 1e-8) + ((0.0,) if kind != "saddle" else ()):
                inertia = np.array([0.9, 1.6, 2.4])
                hr = unit(rng) * r
                c = near_equilibrium(rng, hr, inertia, 1.0, kind, eps,
                                     f"near {kind}, eps={eps:g}, |hr|/G={r:g}")
                if c is not None:
                    cases.append(c)
    return cases
