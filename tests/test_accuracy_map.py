"""The longdouble Taylor reference of benchmarks/accuracy_map.py, and frb against it.

1. benchmarks/reference_longdouble.py (vectorised Taylor series in np.longdouble) agrees with
   the 180-bit mpmath integrator tests/reference/taylor.py to 1e-17 on a few cases, forward
   and backward in time, including a top-left corner case (x = I1/I3 small, y = I2/I3 ~ 1).
2. frb_step and quat_step agree with the longdouble reference to 1e-13 on a few grid points
   of the accuracy map.
Fast (a few seconds).
"""
from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))
sys.path.insert(0, str(ROOT / "tests" / "reference"))

ref = pytest.importorskip("reference_longdouble")
if not ref.EXTENDED:
    pytest.skip("np.longdouble is not wider than float64 on this platform", allow_module_level=True)
mpmath = pytest.importorskip("mpmath")
taylor = pytest.importorskip("taylor")
accuracy_map = pytest.importorskip("accuracy_map")

from mpmath import mp, mpf  # noqa: E402

# (the tests that compute with the flows run under each SIMD target of this CPU, frb.simd)
per_target = pytest.mark.usefixtures("each_cpu_target")


def _unit(v):
    v = np.asarray(v, dtype=float)
    return v / np.linalg.norm(v)


CASES = [  # (m0, (I1, I2, I3), h)
    (_unit([0.3, 0.8, 0.5]), (0.3, 0.8, 1.0), 1.0),
    (_unit([0.9, 0.06, 0.44]), (0.02, 0.99, 1.0), 1.0),          # top-left corner, ~30 steps
    (_unit([0.2, 0.7, 0.1]), (0.5, 0.51, 1.0), -1.0),            # near the bottom corner, backwards
    (_unit([0.6, 0.6, 0.5]), (0.97, 0.99, 1.0), 1.0),            # near the sphere corner
    (np.array([1.0, 2.0, -0.5]), (2.0, 0.5, 1.5), 2.5),          # unsorted inertia, |m| != 1
    (_unit([1e-9, 1.0, 1e-9]), (0.4, 0.7, 1.0), 1.0),            # near the middle axis
]


def _to_mp(v):
    hi, lo = ref.split_float64(v)
    return mpf(float(hi)) + mpf(float(lo))


def test_longdouble_reference_vs_mpmath():
    m0 = np.array([c[0] for c in CASES])
    inertia = np.array([c[1] for c in CASES], dtype=float)
    h = np.array([c[2] for c in CASES])
    m1, Q1, q1, nsteps = ref.flow(m0, inertia, h, return_nsteps=True)
    assert np.all(nsteps >= 1)
    for i, (m, I, hh) in enumerate(CASES):
        mm, QQ, qq = taylor.flow(m, np.eye(3), [1.0, 0.0, 0.0, 0.0], I, hh)
        with mp.workprec(200):
            G = mpmath.sqrt(sum(mpf(float(x)) ** 2 for x in m))
            em = max(abs(_to_mp(m1[i, j]) - mm[j]) for j in range(3)) / G
            eQ = max(abs(_to_mp(Q1[i, j, k]) - QQ[j][k]) for j in range(3) for k in range(3))
            eq = max(abs(_to_mp(q1[i, j]) - qq[j]) for j in range(4))
        assert max(em, eQ, eq) < 1e-17, (i, float(em), float(eQ), float(eq))


def test_longdouble_reference_general_attitude_and_invariants():
    rng = np.random.default_rng(3)
    n = 50
    m0 = rng.standard_normal((n, 3))
    inertia = rng.uniform(0.2, 2.0, (n, 3))
    q0 = rng.standard_normal((n, 4))
    q0 /= np.linalg.norm(q0, axis=1)[:, None]
    from frb.rotations import quat_to_matrix
    Q0 = np.array([quat_to_matrix(q) for q in q0])
    h = rng.uniform(-2, 2, n)
    m1, Q1, q1 = ref.flow(m0, inertia, h, Q0=Q0, q0=q0)
    d = ref.invariant_defects(m0, inertia, m1, Q1, q1, Q0=Q0)
    for key in ("norm", "energy", "spatial"):
        assert d[key].max() < 1e-17, (key, d[key].max())
    # |q1| = |q0| (q0 is a float64 unit quaternion, so compare with its own norm)
    n0 = (np.asarray(q0, dtype=ref.LD) ** 2).sum(axis=1)
    assert np.abs((q1 * q1).sum(axis=1) - n0).max() < 1e-17
    # Q1 = Q0 R: orthogonal to the rounding of the float64 Q0 plus that of R
    Q0l = np.asarray(Q0, dtype=ref.LD)
    orth0 = np.abs(np.einsum("nij,nkj->nik", Q0l, Q0l) - np.eye(3)).max(axis=(1, 2))
    assert np.all(d["orth"] < 2 * orth0 + 1e-17)
    # quat_vs_matrix holds to the rounding of Q0 = E(q0) in float64
    assert d["quat_vs_matrix"].max() < 1e-15
    # round trip: back from h to 0
    m2, Q2, q2 = ref.flow(np.asarray(m1, dtype=np.float64), inertia, -h)
    assert np.abs(np.asarray(m2, dtype=float) - m0).max() < 1e-14 * np.abs(m0).max()


@per_target
def test_frb_against_longdouble_reference_on_grid():
    import frb

    xs, ys, ix, iy = accuracy_map.make_grid(20, 10)
    P = np.stack([xs[ix], ys[iy]], axis=1)
    pick = np.unique(np.linspace(0, P.shape[0] - 1, 8).astype(int))
    P = P[pick]
    nmom = 3
    M = accuracy_map.random_momenta(P.shape[0], nmom, 0)
    m0 = M.reshape(-1, 3)
    inertia = np.repeat(np.column_stack([P, np.ones(P.shape[0])]), nmom, axis=0)
    n = m0.shape[0]
    m_ref, Q_ref, q_ref = ref.flow(m0, inertia, 1.0)
    Qi = np.broadcast_to(np.eye(3), (n, 3, 3)).copy()
    qi = np.zeros((n, 4))
    qi[:, 0] = 1
    m_mat, Q_mat = frb.frb_step(m0, Qi, 1.0, inertia)
    m_quat, q_quat = frb.quat_step(m0, qi, 1.0, inertia)
    err = accuracy_map.errors(m_ref, Q_ref, q_ref, m_mat, Q_mat, m_quat, q_quat)
    assert err["matrix"].max() < 1e-13, err["matrix"].max()
    assert err["quat"].max() < 1e-13, err["quat"].max()


@per_target
def test_short_steps_against_longdouble_reference():
    """Short steps (|h||m|/I_min from 1e-4 to 3: the addition-formula path of the exact flows,
    with the series or the AGM for sn, cn, dn of the step) for random bodies, bodies within
    1e-14..1e-3 of the separatrix and within 1e-12..1e-2 of a principal axis, both signs of h,
    general attitudes: error of m/|m| and of every attitude entry against the extended reference."""
    import frb
    from frb.rotations import quat_to_matrix

    rng = np.random.default_rng(11)
    n = 1500
    inertia = rng.uniform(0.2, 2.0, (n, 3))
    m0 = rng.standard_normal((n, 3))
    kind = np.arange(n) % 3
    for i in np.where(kind == 1)[0]:           # near the separatrix (sorted moments here)
        I1, I2, I3 = inertia[i] = np.sort(inertia[i])
        a = rng.uniform(0.1, 1)
        c = a * np.sqrt((I2 - I1) / I1 * I3 / (I3 - I2)) * (1 + rng.choice([-1, 1]) * 10 ** rng.uniform(-14, -3))
        m0[i] = [a * rng.choice([-1, 1]), rng.uniform(-1, 1), c * rng.choice([-1, 1])]
    for i in np.where(kind == 2)[0]:           # near a principal axis
        v = rng.standard_normal(3) * 10 ** rng.uniform(-12, -2)
        v[rng.integers(0, 3)] = rng.choice([-1, 1])
        m0[i] = v
    q0 = rng.standard_normal((n, 4))
    q0 /= np.linalg.norm(q0, axis=1)[:, None]
    Q0 = quat_to_matrix(q0)
    G = np.linalg.norm(m0, axis=1)
    h = rng.choice([-1, 1], n) * 10 ** rng.uniform(-4, 0.5, n) * inertia.min(axis=1) / G
    m_ref, Q_ref, q_ref = (np.asarray(a, dtype=float) for a in ref.flow(m0, inertia, h, Q0=Q0, q0=q0))
    m1, q1 = frb.quat_step(m0, q0, h, inertia)
    m2, Q2 = frb.frb_step(m0, Q0, h, inertia)
    err_m = np.maximum(np.abs(m1 - m_ref).max(axis=1), np.abs(m2 - m_ref).max(axis=1)) / G
    err_att = np.maximum(np.abs(q1 - q_ref).max(axis=1), np.abs(Q2 - Q_ref).reshape(n, 9).max(axis=1))
    for k, name in enumerate(["generic", "separatrix", "axis"]):
        sel = kind == k
        # near the separatrix and the middle axis the problem itself amplifies the rounding of
        # the inputs (accuracy_map.md: 'floor'); elsewhere a few ulp
        tol = 2e-15 if name == "generic" else 5e-14
        assert err_m[sel].max() < tol, (name, err_m[sel].max())
        assert err_att[sel].max() < tol, (name, err_att[sel].max())
        assert np.median(err_m[sel]) < 3e-16 and np.median(err_att[sel]) < 3e-16
