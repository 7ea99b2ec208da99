"""The exact flow of the gyrostat: frb.integrate(..., method="EXACT", torque=frb.torques.rotor(h)),
a rigid body with a constant internal momentum h (body frame),

    M' = M x w,   Q' = Q hat(w),   M = m + h,   w = I^-1 m.

References, all independent of frb's elliptic functions:
* a Taylor-series solution in 300-bit fixed point (tests/reference/gyrostat_taylor.py), stored
  rounded to float64 in tests/data/reference_gyrostat.npz by
  tests/reference/make_gyrostat_reference.py: 200 random bodies with |h| / |m| log-uniform in
  [1e-3, 1e3] and the edge families of tests/reference/gyrostat_cases.py (h along each principal
  axis, symmetric bodies and the sphere, |h| = |m|, near each kind of equilibrium of the
  gyrostat and on the separatrices through its saddles), at steps 0.01, 1, 30, 100, 1e4 and -1;
  and, in tests/data/reference_gyrostat_sample.npz (make_gyrostat_reference.py --sample 2000),
  2000 random gyrostats (rotors of random direction, along principal axes, orbits near saddles,
  minima and maxima; |h| / |m| in [1e-3, 1e3]) at three steps each of random sign, |h| from 1e-2
  to 1e4;
* the closed form of a symmetric body with the rotor on its axis: w = M / A + lam e3 with
  lam = m3 / C - (m3 + h) / A (A the equal moments, C the axis'), so m_perp turns at the rate -lam and
  Q(t) = exp(t hat(M_s) / A) Q0 exp(t lam hat(e3)) (M_s = Q0 M0 the spatial momentum);
* the free body, for a rotor far below the rounding of m (frb's free flow, another code);
* in tests/data/reference_gyrostat_paths.npz (make_gyrostat_paths_reference.py, the same Taylor
  solution): steps that span tens of periods of a fast rotor's small loop, steps near a
  separatrix, and long steps with |h| = |m| whose orbit leaves the hemisphere of its start;
* the invariants |M|, the energy m . I^-1 m / 2 and the spatial momentum Q M.
"""
from __future__ import annotations

import os

import numpy as np
import pytest

import frb
from frb.torques import constant_field, linear_damping, rotor

DATA = os.path.join(os.path.dirname(__file__), "data", "reference_gyrostat.npz")
SAMPLE = os.path.join(os.path.dirname(__file__), "data", "reference_gyrostat_sample.npz")
PATHS = os.path.join(os.path.dirname(__file__), "data", "reference_gyrostat_paths.npz")


def quat_matrix(q):
    """Rotation matrices (n, 3, 3) of unit quaternions (n, 4), scalar first."""
    q = np.asarray(q, dtype=float)
    w, x, y, z = q[:, 0], q[:, 1], q[:, 2], q[:, 3]
    return np.stack([
        np.stack([1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y)], -1),
        np.stack([2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x)], -1),
        np.stack([2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)], -1),
    ], -2)


def rodrigues(axis_angle):
    """exp(hat(v)) for the rows v of axis_angle (n, 3)."""
    v = np.atleast_2d(axis_angle)
    th = np.linalg.norm(v, axis=1)
    k = np.zeros_like(v)
    nz = th > 0
    k[nz] = v[nz] / th[nz, None]
    K = np.zeros((len(v), 3, 3))
    K[:, 0, 1], K[:, 0, 2], K[:, 1, 2] = -k[:, 2], k[:, 1], -k[:, 0]
    K[:, 1, 0], K[:, 2, 0], K[:, 2, 1] = k[:, 2], -k[:, 1], k[:, 0]
    s, c = np.sin(th)[:, None, None], np.cos(th)[:, None, None]
    return np.eye(3) + s * K + (1 - c) * (K @ K)


@pytest.fixture(scope="module")
def reference():
    if not os.path.exists(DATA):
        pytest.skip("tests/data/reference_gyrostat.npz missing (tests/reference/"
                    "make_gyrostat_reference.py)")
    with np.load(DATA) as z:
        return {k: z[k] for k in z.files}


def _errors(m, q, ref):
    """Largest errors of m / |m| and of the attitude (quaternions up to sign) per case."""
    mr, qr = ref["m1"], ref["q1"]
    em = np.linalg.norm(m / np.linalg.norm(m, axis=1)[:, None]
                        - mr / np.linalg.norm(mr, axis=1)[:, None], axis=1)
    eq = np.minimum(np.linalg.norm(q - qr, axis=1), np.linalg.norm(q + qr, axis=1))
    return em, eq


def _exact(ref, rows, form="quaternion"):
    """EXACT with rotor(h per body) for the rows of the reference, one batch per step h."""
    m = np.empty((len(rows), 3))
    q = np.empty((len(rows), 4))
    hs = ref["h"][rows]
    for h in np.unique(hs):
        sel = np.flatnonzero(hs == h)
        r = rows[sel]
        att0 = ref["q0"][r] if form == "quaternion" else quat_matrix(ref["q0"][r])
        tr = frb.integrate(ref["m0"][r], att0, ref["inertia"][r], float(h), 1,
                           method="EXACT", torque=rotor(ref["hr"][r]), save_every="final")
        m[sel] = tr.m[-1]
        q[sel] = tr.q[-1] if form == "quaternion" else frb.matrix_to_quat(tr.Q[-1])
    return m, q


def test_exact_gyrostat_against_the_taylor_reference(reference):
    """Every case of the reference (random bodies and edge families, each step h): m / |m| and
    the attitude within 1e-13 (quaternions), and the matrix form within 1e-13 too."""
    rows = np.arange(len(reference["h"]))
    m, q = _exact(reference, rows)
    em, eq = _errors(m, q, reference)
    worst = np.argsort(-np.maximum(em, eq))[:3]
    detail = [(str(reference["label"][i]), float(reference["h"][i]), em[i], eq[i]) for i in worst]
    assert em.max() <= 1e-13 and eq.max() <= 1e-13, detail
    m9, q9 = _exact(reference, rows, form="matrix")
    em9, eq9 = _errors(m9, q9, reference)
    assert em9.max() <= 1e-13 and eq9.max() <= 1e-13


def test_one_body_runs_are_the_batch_bits(reference):
    """A body run alone gives the bits of the same body in a batch (shared or per-body rotor)."""
    rows = np.flatnonzero(reference["h"] == 1.0)[:12]
    m, q = _exact(reference, rows)
    for k, i in enumerate(rows):
        tr = frb.integrate(reference["m0"][i], reference["q0"][i], reference["inertia"][i], 1.0,
                           1, method="EXACT", torque=rotor(reference["hr"][i]))
        assert np.array_equal(tr.m[-1], m[k]) and np.array_equal(tr.q[-1], q[k])
    # a shared rotor for a batch
    i = rows[0]
    tr = frb.integrate(reference["m0"][rows], reference["q0"][rows], reference["inertia"][i],
                       1.0, 1, method="EXACT", torque=rotor(reference["hr"][i]))
    one = frb.integrate(reference["m0"][rows[3]], reference["q0"][rows[3]],
                        reference["inertia"][i], 1.0, 1, method="EXACT",
                        torque=rotor(reference["hr"][i]))
    assert np.array_equal(tr.m[-1, 3], one.m[-1]) and np.array_equal(tr.q[-1, 3], one.q[-1])


@pytest.mark.parametrize("inertia, axis", [([1.0, 1.0, 2.0], 2), ([0.7, 1.6, 1.6], 0),
                                           ([1.3, 0.6, 1.3], 1), ([1.7, 1.7, 1.7], 2)])
@pytest.mark.parametrize("ratio", [1e-3, 0.4, 1.0, 7.0, 1e3])
def test_symmetric_closed_form(inertia, axis, ratio):
    """A symmetric body (and the sphere) with the rotor on its axis, against the closed form, at
    steps from 1e-3 to 1e3 periods of the fast rotation, both attitude forms."""
    rng = np.random.default_rng(17)
    inertia = np.array(inertia)
    perm = [(axis + 1) % 3, (axis + 2) % 3, axis]         # (a, b, the axis)
    A, C = inertia[perm[0]], inertia[perm[2]]
    for h in (1e-3, 0.37, 5.0, -40.0, 900.0):
        m0 = rng.normal(size=3)
        q0 = rng.normal(size=4)
        q0 /= np.linalg.norm(q0)
        hv = np.zeros(3)
        hv[axis] = ratio * np.linalg.norm(m0) * (1 if h > 0 else -1)
        # (without the cancellation of m3 / C - m3 / A)
        lam = m0[axis] * ((A - C) / (A * C)) - hv[axis] / A
        # m_perp (in the right-handed order a, b) turns by -lam h
        c, s = np.cos(lam * h), np.sin(lam * h)
        m1 = m0.copy()
        a, b = perm[0], perm[1]
        m1[a] = c * m0[a] + s * m0[b]
        m1[b] = -s * m0[a] + c * m0[b]
        Q0 = quat_matrix(q0[None])[0]
        Ms = Q0 @ (m0 + hv)
        e = np.zeros(3)
        e[axis] = 1.0
        Q1 = rodrigues(h * Ms / A)[0] @ Q0 @ rodrigues(h * lam * e)[0]
        tol = 2e-13 * max(1.0, abs(h) * (np.linalg.norm(m0 + hv) / A + abs(lam)))
        for att0 in (q0, Q0):
            tr = frb.integrate(m0, att0, inertia, h, 1, method="EXACT", torque=rotor(hv))
            Q = quat_matrix(tr.q[-1][None])[0] if att0.shape == (4,) else tr.Q[-1]
            assert np.linalg.norm(tr.m[-1] - m1) <= 1e-14 * np.linalg.norm(m0 + hv) * \
                max(1.0, abs(lam * h)), (h, ratio)
            assert np.abs(Q - Q1).max() <= tol, (h, ratio, np.abs(Q - Q1).max(), tol)


def test_tiny_rotor_is_the_free_body():
    """A rotor far below the rounding of m gives the free flow (frb's free-body code)."""
    rng = np.random.default_rng(5)
    n = 200
    m0 = rng.normal(size=(n, 3))
    q0 = rng.normal(size=(n, 4))
    q0 /= np.linalg.norm(q0, axis=1)[:, None]
    inertia = rng.uniform(0.5, 3.0, size=(n, 3))
    hv = rng.normal(size=(n, 3)) * 1e-22
    for h in (0.05, 3.0, -30.0):
        g = frb.integrate(m0, q0, inertia, h, 1, method="EXACT", torque=rotor(hv))
        f = frb.integrate(m0, q0, inertia, h, 1, method="EXACT")
        assert np.abs(g.m[-1] - f.m[-1]).max() <= 1e-13 * np.abs(m0).max()
        d = np.minimum(np.abs(g.q[-1] - f.q[-1]).max(axis=1), np.abs(g.q[-1] + f.q[-1]).max(axis=1))
        assert d.max() <= 1e-13


def _invariants(tr, hv, inertia):
    m = tr.m
    M = m + hv
    G = np.linalg.norm(M, axis=-1)
    E = 0.5 * np.sum(m * m / inertia, axis=-1)
    Ms = np.einsum("knij,knj->kni", quat_matrix(tr.q.reshape(-1, 4)).reshape(tr.q.shape[:-1] + (3, 3)), M)
    return G, E, Ms


@pytest.mark.parametrize("method, flows", [("EXACT", 1), ("STRANG", 2), ("RKN6_14", 8)])
def test_invariants_to_rounding(method, flows):
    """|M|, the energy and Q M stay to rounding over 200 steps, by the exact flow and by the
    splittings with a rotor alone (their free part is the gyrostat, ``flows`` times a step): |M|
    and the energy within 2e-13, Q M within 1e-15 a flow (the rounding of the quaternion
    products, which carry |q| - 1 along)."""
    rng = np.random.default_rng(11)
    n = 32
    m0 = rng.normal(size=(n, 3))
    q0 = rng.normal(size=(n, 4))
    q0 /= np.linalg.norm(q0, axis=1)[:, None]
    inertia = rng.uniform(0.5, 3.0, size=(n, 3))
    hv = rng.normal(size=(n, 3)) * 10 ** rng.uniform(-2, 1, size=(n, 1))
    for h in (0.1, 3.0):
        tr = frb.integrate(m0, q0, inertia, h, 200, method=method, torque=rotor(hv),
                           save_every=20)
        G, E, Ms = _invariants(tr, hv, inertia)
        scale = np.linalg.norm(m0 + hv, axis=1)
        assert (np.abs(G - G[0]) / G[0]).max() <= 2e-13
        assert (np.abs(E - E[0]) / (E[0] + scale ** 2 / inertia.min(axis=1))).max() <= 2e-13
        assert (np.linalg.norm(Ms - Ms[0], axis=-1) / scale).max() <= 1e-15 * 200 * flows


def test_fast_rotor_long_steps_keep_the_invariants_and_reverse():
    """Fast rotors (|h| / |m| from 30 to 1e3, random directions, triaxial bodies) over steps of
    phase 1e2 to 1e7, where the whole periods come from the exact inputs and the angle of a
    period from one integral: |M| and the energy kept to rounding, Q M within 1e-13 of |M|,
    and the step by -h from the end returns to the start within 1e-13 (m / |M|; q, times the
    angle turned over 64 rad when more)."""
    rng = np.random.default_rng(23)
    n = 64
    m0 = rng.normal(size=(n, 3))
    q0 = rng.normal(size=(n, 4))
    q0 /= np.linalg.norm(q0, axis=1)[:, None]
    inertia = rng.uniform(0.5, 3.0, size=(n, 3))
    hv = rng.normal(size=(n, 3))
    hv *= (10 ** rng.uniform(1.5, 3, size=(n, 1))) * np.linalg.norm(m0, axis=1)[:, None] / \
        np.linalg.norm(hv, axis=1)[:, None]
    scale = np.linalg.norm(m0 + hv, axis=1)
    for h in (5.0, 40.0, -300.0, 1e4):
        phase = abs(h) * (np.linalg.norm(m0, axis=1) + np.linalg.norm(hv, axis=1)) / inertia.min(1)
        assert phase.min() > 64
        tr = frb.integrate(m0, q0, inertia, h, 1, method="EXACT", torque=rotor(hv))
        G, E, Ms = _invariants(tr, hv, inertia)
        assert (np.abs(G - G[0]) / G[0]).max() <= 2e-13
        assert (np.abs(E - E[0]) / (E[0] + scale ** 2 / inertia.min(axis=1))).max() <= 2e-13
        assert (np.linalg.norm(Ms - Ms[0], axis=-1) / scale).max() <= 1e-13
        back = frb.integrate(tr.m[-1], tr.q[-1], inertia, -h, 1, method="EXACT",
                             torque=rotor(hv))
        em = np.linalg.norm(back.m[-1] - m0, axis=1) / scale
        eq = np.minimum(np.linalg.norm(back.q[-1] - q0, axis=1),
                        np.linalg.norm(back.q[-1] + q0, axis=1))
        # (the step back starts from the rounded end: its attitude moves by the rounding of the
        # orbit times the angle turned, |h| |m| / I_min)
        turn = np.maximum(1.0, abs(h) * np.linalg.norm(m0, axis=1) / inertia.min(1) / 64)
        assert em.max() <= 1e-13 and (eq / turn).max() <= 1e-13, (h, em.max(), eq.max())


def test_splitting_with_a_rotor_and_a_field():
    """STRANG with a rotor and a constant field along e3: the field's kicks change the momentum,
    but its vertical spatial component e3 . Q (m + h) is conserved by both parts to rounding."""
    rng = np.random.default_rng(3)
    n = 32
    m0 = rng.normal(size=(n, 3))
    q0 = rng.normal(size=(n, 4))
    q0 /= np.linalg.norm(q0, axis=1)[:, None]
    inertia = rng.uniform(0.5, 3.0, size=(n, 3))
    hv = np.array([0.3, -1.2, 0.8])
    tq = rotor(hv) + constant_field([0.0, 0.0, 1.0])
    tr = frb.integrate(m0, q0, inertia, 0.05, 400, method="STRANG", torque=tq, save_every=50)
    _, _, Ms = _invariants(tr, hv, inertia)
    assert np.abs(Ms[..., 2] - Ms[0, :, 2]).max() <= 1e-13 * np.abs(Ms).max()
    # the momentum itself changes (the field acts)
    assert np.abs(tr.m[-1] - tr.m[0]).max() > 1e-3


def test_exact_refuses_rotor_with_other_torques():
    with pytest.raises(ValueError, match="EXACT"):
        frb.integrate([1.0, 0.2, 0.3], [1.0, 0, 0, 0], [1.0, 2.0, 3.0], 0.1, 2, method="EXACT",
                      torque=rotor([0.0, 0.0, 1.0]) + linear_damping(0.1))


@pytest.fixture(scope="module")
def sample():
    if not os.path.exists(SAMPLE):
        pytest.skip("tests/data/reference_gyrostat_sample.npz missing (tests/reference/"
                    "make_gyrostat_reference.py --sample 2000)")
    with np.load(SAMPLE) as z:
        return {k: z[k] for k in z.files}


def test_exact_gyrostat_against_the_random_sample(sample):
    """The 2000 random gyrostats of the sample, each at its three steps (short to 1e4, both
    signs): m / |m| and the attitude within 1e-13, body by body through frb.integrate."""
    n = len(sample["h"])
    em = np.empty((n, 3))
    eq = np.empty((n, 3))
    for i in range(n):
        for j in range(3):
            tr = frb.integrate(sample["m0"][i], sample["q0"][i], sample["inertia"][i],
                               float(sample["h"][i, j]), 1, method="EXACT",
                               torque=rotor(sample["hr"][i]), save_every="final")
            ref = {"m1": sample["m1"][i, j][None], "q1": sample["q1"][i, j][None]}
            e = _errors(tr.m[-1][None], tr.q[-1][None], ref)
            em[i, j], eq[i, j] = e[0][0], e[1][0]
    worst = np.unravel_index(np.argmax(np.maximum(em, eq)), em.shape)
    detail = (int(sample["kind"][worst[0]]), float(sample["h"][worst]), em[worst], eq[worst])
    assert em.max() <= 1e-13 and eq.max() <= 1e-13, detail


def test_wheels_without_a_law_are_the_gyrostat(reference):
    """EXACT with reaction wheels that keep their momenta (no wheel_law) is the gyrostat of the
    rotor A h0: the Taylor reference within 1e-13, alone and with a rotor torque added (the
    rotors summed); with a law, or with another torque, a ValueError naming the arguments."""
    rows = np.flatnonzero(reference["h"] == 1.0)[:8]
    axes = np.array([[1.0, 0.0, 0.0], [0.0, 0.6, 0.8], [0.0, -0.8, 0.6]])
    for i in rows:
        hr = reference["hr"][i]
        ref = {"m1": reference["m1"][i][None], "q1": reference["q1"][i][None]}
        # (wheels along the body axes: their momentum A h0 is hr exactly, and so is the sum)
        for kw in ({"wheels": frb.Wheels(np.eye(3), hr)},
                   {"wheels": frb.Wheels(np.eye(3), 0.5 * hr), "torque": rotor(0.5 * hr)}):
            tr = frb.integrate(reference["m0"][i], reference["q0"][i], reference["inertia"][i],
                               1.0, 1, method="EXACT", **kw)
            em, eq = _errors(tr.m[-1][None], tr.q[-1][None], ref)
            assert em[0] <= 1e-13 and eq[0] <= 1e-13, (i, list(kw))
    i = rows[0]
    args = (reference["m0"][i], reference["q0"][i], reference["inertia"][i], 1.0, 1)
    with pytest.raises(ValueError, match=r"EXACT.*wheel_law"):
        frb.integrate(*args, method="EXACT", wheels=frb.Wheels(axes, np.ones(3)),
                      wheel_law=lambda t, Q, m, h: np.zeros((1, 3)))
    with pytest.raises(ValueError, match=r"EXACT.*wheels=.*torque=linear_damping"):
        frb.integrate(*args, method="EXACT", wheels=frb.Wheels(axes, np.ones(3)),
                      torque=linear_damping(0.1))


def test_a_gyrostat_step_beyond_the_phase_limit_is_refused():
    """The phase of a gyrostat step counts the rotor: |h| (|m| + |h_r|) / I_min beyond 1e18
    is a ValueError naming h, though |h| |m| / I_min is small."""
    with pytest.raises(ValueError, match=r"h is too long for the gyrostat: \|h\| \(\|m\| "):
        frb.integrate([1e-3, 0.0, 0.0], [1.0, 0, 0, 0], [1.0, 2.0, 3.0], 1e6, 1,
                      method="EXACT", torque=rotor([0.0, 0.0, 1e13]))
    tr = frb.integrate([1e-3, 0.0, 0.0], [1.0, 0, 0, 0], [1.0, 2.0, 3.0], 1e3, 1,
                       method="EXACT", torque=rotor([0.0, 0.0, 1e13]))
    assert np.isfinite(tr.m[-1]).all()
    # every method counts the rotor (an approximate method would return a meaningless state)
    for method in ("DMV2", "MIDPOINT", "SPLIT3", "RK4"):
        with pytest.raises(ValueError, match=r"h is too long for the gyrostat"):
            frb.integrate([0.3, 0.5, 0.8], [1.0, 0, 0, 0], [1.0, 2.0, 3.0], 0.05, 10,
                          method=method, torque=rotor([1e20, 0.0, 0.0]))
    # wheels without a law are a rotor: the message names their momenta
    with pytest.raises(ValueError, match=r"h_r the wheels' momenta A h0 of wheels="):
        frb.integrate([0.3, 0.5, 0.8], [1.0, 0, 0, 0], [1.0, 2.0, 3.0], 0.05, 10,
                      method="STRANG", wheels=frb.Wheels(np.eye(3), [1e300, 0.0, 0.0]))
    # a batch names the body whose phase is too large
    hr = np.zeros((3, 3))
    hr[2] = [0.0, 0.0, 1e13]
    for method in ("EXACT", "STRANG"):
        with pytest.raises(ValueError, match=r"too long for the gyrostat \(body 2\)"):
            frb.integrate(np.full((3, 3), 1e-3), np.tile([1.0, 0, 0, 0], (3, 1)), [1.0, 2.0, 3.0],
                          1e6, 1, method=method, torque=rotor(hr))


def test_exact_gyrostat_against_the_paths_reference():
    """The steps of the paths reference (many periods of a fast rotor's small loop within the
    long-step threshold, steps near a separatrix, long steps with |h| = |m| whose period's angle
    needs a gauge other than the start): m / |m| and the attitude within 1e-13 of the Taylor
    solution, both attitude forms; the step back by -h returns to the start within 1e-13."""
    if not os.path.exists(PATHS):
        pytest.skip("tests/data/reference_gyrostat_paths.npz missing (tests/reference/"
                    "make_gyrostat_paths_reference.py)")
    with np.load(PATHS) as z:
        ref = {k: z[k] for k in z.files}
    rows = np.arange(len(ref["h"]))
    m, q = _exact(ref, rows)
    em, eq = _errors(m, q, ref)
    worst = int(np.argmax(np.maximum(em, eq)))
    assert em.max() <= 1e-13 and eq.max() <= 1e-13, (str(ref["kind"][worst]), em[worst], eq[worst])
    m9, q9 = _exact(ref, rows, form="matrix")
    em9, eq9 = _errors(m9, q9, ref)
    assert em9.max() <= 1e-13 and eq9.max() <= 1e-13
    for i in rows:
        back = frb.integrate(m[i], q[i], ref["inertia"][i], -float(ref["h"][i]), 1,
                             method="EXACT", torque=rotor(ref["hr"][i]), save_every="final")
        scale = np.linalg.norm(ref["m0"][i] + ref["hr"][i])
        assert np.linalg.norm(back.m[-1] - ref["m0"][i]) <= 1e-13 * scale, i
        assert min(np.linalg.norm(back.q[-1] - ref["q0"][i]),
                   np.linalg.norm(back.q[-1] + ref["q0"][i])) <= 1e-13, i


def test_total_momentum_near_zero_against_the_taylor_solution():
    """m + h_r nearly cancelling (a zero-momentum spacecraft: the wheels hold the body's
    momentum): |M| / (|m| + |h_r|) from 1e-16 to 1e-1, steps 0.3, 2 and 7: m and the attitude
    within 1e-13 of the 300-bit Taylor solution; M = (0, 1e-30, 0): the rotation about the
    constant w = I^-1 m; STRANG, YOSHIDA4 and RKN6_14 with such a rotor and a field run without
    a non-finite state."""
    rng = np.random.default_rng(12)
    cases = []
    for k in range(-16, 0, 3):
        hr = rng.normal(size=3)
        d = rng.normal(size=3)
        m0 = -hr + 10.0**k * np.linalg.norm(hr) * d / np.linalg.norm(d)
        cases.append((m0, hr, rng.uniform(0.5, 3.0, 3)))
    cases.append((np.array([-0.5, 1.1, 0.30000000000000004]), np.array([0.5, -1.1, -0.3]),
                  np.array([1.0, 2.0, 3.0])))
    q0 = np.array([0.5411264629187837, 0.25586860983811494, -0.7940465839212721, 0.10584624788567001])
    steps = [(m0, hr, inertia, (0.3, 2.0, 7.0)) for m0, hr, inertia in cases]
    for m0, h, em, eq in _taylor_errors(steps, q0):
        assert em <= 1e-13 and eq <= 1e-13, (m0, h, em, eq)
    q0 = q0 / np.linalg.norm(q0)
    # M = (0, 1e-30, 0): m and w = I^-1 m constant to 1e-30, the rotation about w
    m0, hr, inertia = np.array([1.0, 1e-30, 0.0]), np.array([-1.0, 0.0, 0.0]), np.array([1.0, 2.0, 3.0])
    for h in (0.3, 2.0, 7.0):
        tr = frb.integrate(m0, q0, inertia, h, 1, method="EXACT", torque=rotor(hr),
                           save_every="final")
        w = m0 / inertia
        turn = np.r_[np.cos(np.linalg.norm(w) * h / 2), np.sin(np.linalg.norm(w) * h / 2) * w / np.linalg.norm(w)]
        qr = frb.quat_mul(q0, turn)
        assert np.array_equal(tr.m[-1], m0)
        assert min(np.linalg.norm(tr.q[-1] - qr), np.linalg.norm(tr.q[-1] + qr)) <= 1e-15
    m0, hr, inertia = cases[-1]
    for method in ("STRANG", "YOSHIDA4", "RKN6_14"):
        for h in (0.3, 0.5, 1.0, 2.0):
            tr = frb.integrate(m0, q0, inertia, h, 4, method=method,
                               torque=rotor(hr) + constant_field([0.0, 0.0, 1e-3]))
            assert np.isfinite(tr.m).all() and np.isfinite(tr.q).all()


def _taylor_errors(bodies, q0):
    """For each body (m, h_r, inertia, steps h) and step: (m, h, the error of m over |m|, that of
    the quaternion up to sign; Euclidean norms) of one EXACT step with rotor(h_r) from the unit q0 against
    the 300-bit Taylor solution."""
    import sys
    sys.path.insert(0, os.path.join(os.path.dirname(__file__), "reference"))
    import gyrostat_taylor

    q0 = np.asarray(q0) / np.linalg.norm(q0)
    for m0, hr, inertia, steps in bodies:
        m0, hr, inertia = np.array(m0), np.array(hr), np.array(inertia)
        for h in steps:
            mr, qr = gyrostat_taylor.flow(m0, hr, inertia, q0, h)
            mr = np.array([float(x) for x in mr])
            qr = np.array([float(x) for x in qr])
            tr = frb.integrate(m0, q0, inertia, h, 1, method="EXACT", torque=rotor(hr),
                               save_every="final")
            em = np.linalg.norm(tr.m[-1] - mr) / np.linalg.norm(m0)
            eq = min(np.linalg.norm(tr.q[-1] - qr), np.linalg.norm(tr.q[-1] + qr))
            yield m0, h, em, eq


def test_fast_passages_of_the_orbit_against_the_taylor_solution():
    """Orbits of M that pass quickly through part of their period (complex-time poles of the
    angle's rate near the real axis, closer than the lattice's periods say): single steps of
    phase 10 to 60 within 1e-13 of the 300-bit Taylor solution, each body at several steps
    (the panels' quadrature is checked on the stereographic coordinate and refined)."""
    bodies = [  # m, h_r, inertia, steps h
        ([-0.8443057566706456, -1.27956467470385, -0.6286759141200913],
         [-0.04084450111808727, -1.3909636498369815, 1.0152692945290263],
         [0.5898091360929074, 0.6122257335545809, 2.671112083144628], (2.0, 3.0, 4.0, 8.0)),
        ([0.8116416495236884, -1.2698556524040512, -1.0009990439989278],
         [-0.9827622314234667, -2.4892607358209102, 0.04623432729889456],
         [2.39306562207866, 0.3629891735070883, 1.0200730527765876], (2.0, 4.0)),
        ([2.362435470617594, 0.156328926970741, -0.3272404946302258],
         [1.5089813312252822, -0.9488482993586759, -0.20858290294767676],
         [0.4525518322125091, 1.7576611945329066, 0.698359260525351], (4.0, 8.0)),
        ([0.01651303315614224, -1.2860181439191043, 0.08196001908625333],
         [0.523024381992095, 0.7782302122069262, 0.10986834429237889],
         [0.20272642145098407, 2.101689311310813, 1.07677012336041], (8.0,)),
        ([1.176976541298925, 0.9406517745334476, 0.6796975350370634],
         [-1.646140242535066, 1.0290222921136551, -0.23556061852695281],
         [0.8981030196714206, 0.22748453978511055, 0.33067067158688646], (8.0,)),
    ]
    q0 = np.array([0.5411264629187837, 0.25586860983811494, -0.7940465839212721, 0.10584624788567001])
    for m0, h, em, eq in _taylor_errors(bodies, q0):
        assert em <= 1e-13 and eq <= 1e-13, (m0, h, em, eq)


def test_steps_of_whole_periods_against_the_taylor_solution():
    """Steps of several periods, whose angle of a period comes from the trapezoidal rule in one
    gauge (period_holonomy) and whose rest lies within half a period: a double-precision step of
    phase 43 (|h_r| = 0.69 |m|; composed panels of a period err by 2.1e-13 there), a long step
    of phase 66 with the rotor on an axis (a doubling criterion relying on the rule's geometric
    rate, 2^-39 of the spread, errs by 4.7e-14), and fast rotors of tens to hundreds of periods:
    m and the attitude within 1e-13 of the 300-bit Taylor solution."""
    bodies = [  # m, h_r, inertia, steps h
        ([1.790214262986198, 1.016211570665649, -0.9237440986624822],
         [0.3610063324920149, -0.6352957184857427, -1.3674728414660662],
         [2.9883248085645255, 0.9053541645164804, 0.8919286489603696], (10.0,)),
        ([-0.3376921189883073, -1.6056319693186623, -1.084118010000813],
         [0.8753900798096643, 0.0, 0.0],
         [1.2995558145434545, 2.0789957930700966, 1.978359333299325], (30.0,)),
        ([-0.3376921189883073, -1.6056319693186623, -1.084118010000813],
         [283.3441938017034, 234.372096216863, 85.79428855549843],
         [1.2995558145434545, 2.0789957930700966, 1.978359333299325], (0.3, 3.0)),
        ([0.41, -0.93, 0.27], [-6.0, 2.5, 9.0], [0.7, 1.9, 2.6], (1.0, 7.0)),
    ]
    q0 = np.array([0.2702204413925893, -0.5517711939577034, 0.6833403254474127, 0.3877098318271349])
    for m0, h, em, eq in _taylor_errors(bodies, q0):
        assert em <= 1e-13 and eq <= 1e-13, (m0, h, em, eq)


def test_long_steps_within_1e_14_of_a_separatrix_against_the_taylor_solution():
    """Long steps of orbits within about 1e-14 of a separatrix, where the lattice's discriminant
    cancels to a few digits in quadruple precision and no panel length passes the check of the
    rule at its usual tolerance: 42 periods at h = 1e4 (the result moves by 2e-10 when the data
    move by one rounding), and h = 100 from 1e-12 of a saddle. m and the attitude within 1e-13
    of the 300-bit Taylor solution."""
    q0 = np.array([0.2702204413925893, -0.5517711939577034, 0.6833403254474127, 0.3877098318271349])
    bodies = [  # m, h_r, inertia, steps h
        ([-0.9626504619908952, -0.07212942511972213, 0.26096251466563575],
         [-0.12367060657620924, 0.05044639089009404, 0.05485970531806839],
         [0.6308302161677333, 2.3680697046326533, 0.5882169203322976], (1e4,)),
        ([-0.49141965016180217, 0.649372935092119, 0.5803632643480168],
         [0.35279268132183295, 0.7487316394300164, 0.6295292682057082],
         [2.9556088056560714, 0.38725469147770714, 0.3999404023033288], (100.0,)),
    ]
    for m0, h, em, eq in _taylor_errors(bodies, q0):
        assert em <= 1e-13 and eq <= 1e-13, (m0, h, em, eq)


@pytest.mark.parametrize("method", ["EXACT", "STRANG"])
@pytest.mark.parametrize("bad", [np.inf, -np.inf, np.nan])
def test_a_non_finite_momentum_with_a_rotor_is_named(method, bad):
    """m0 with an infinity or a NaN and a rotor: the refusal names m0, not the step h."""
    with pytest.raises(ValueError, match=r"^m0 contains non-finite values"):
        frb.integrate([bad, 0.0, 0.0], [1.0, 0, 0, 0], [1.0, 2.0, 3.0], 0.1, 3, method=method,
                      torque=rotor([0.0, 0.0, 0.5]))


def test_many_rotors_are_one_gyrostat():
    """Ten rotors (more than a compiled sum holds) and a field: the same run as one rotor of the
    summed momentum, with EXACT (rotors alone) and STRANG (the gyrostat's flow as the free part,
    compiled: no warning), to a few rounding errors; the gyrostat's invariant |m + h_r| kept by
    the exact flow; per-body rotors of different numbers of bodies are refused by name."""
    import warnings

    rng = np.random.default_rng(5)
    hs = rng.normal(size=(10, 3)) * 0.3
    m0, q0, inertia = np.array([1.0, 0.5, -0.3]), np.array([1.0, 0.0, 0.0, 0.0]), np.array([1.0, 2.0, 3.0])
    many = sum((rotor(h) for h in hs), start=None)
    one = rotor(hs.sum(axis=0))
    for method, extra in (("EXACT", None), ("STRANG", constant_field([0.0, 0.0, 0.01]))):
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            a = frb.integrate(m0, q0, inertia, 0.5, 20, method=method, torque=many + extra)
        b = frb.integrate(m0, q0, inertia, 0.5, 20, method=method, torque=one + extra)
        assert np.abs(a.m - b.m).max() <= 1e-14 and np.abs(a.q - b.q).max() <= 1e-14, method
    with pytest.raises(ValueError, match="rotor h"):
        rotor(np.ones((2, 3))) + rotor(np.ones((3, 3)))
    # the same rotor object added to itself counts once a term
    r = rotor(hs[0])
    for tq, k in ((r + r, 2), (sum([r] * 3, start=None), 3), (r + (r + r), 3)):
        assert np.array_equal(tq.internal_momentum, sum([hs[0]] * k)), k
    b = frb.integrate(m0, q0, inertia, 0.5, 20, method="EXACT", torque=many)
    total = np.linalg.norm(b.m + hs.sum(axis=0), axis=-1)
    assert np.abs(total - total[0]).max() <= 1e-14 * total[0]


def test_a_rotor_with_a_python_torque_keeps_the_gyrostat_flow():
    """A rotor in a sum evaluated from Python (with a Python torque, or with more terms than a
    compiled sum holds): the exact splittings take the gyrostat's exact flow as their free
    part, so a zero Python torque or a field split into nine terms changes nothing beyond
    rounding, and |m + h_r| stays to rounding."""
    import warnings

    m0, q0, inertia = np.array([0.3, 0.5, 0.8]), np.array([1.0, 0.0, 0.0, 0.0]), np.array([1.0, 2.0, 3.0])
    hr = np.array([0.3, -0.4, 0.5])
    r = rotor(hr)

    def zero(t, Q):
        return np.zeros(Q.shape[:-2] + (3,))

    exact = frb.integrate(m0, q0, inertia, 0.05, 40, method="EXACT", torque=r)
    for method in ("STRANG", "YOSHIDA4", "RKN6_14"):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", frb.torques.NotCompiledWarning)
            tr = frb.integrate(m0, q0, inertia, 0.05, 40, method=method, torque=r + zero)
            nine = frb.integrate(m0, q0, inertia, 0.05, 40, method=method,
                                 torque=r + sum([constant_field([0.0, 0.0, 0.01])] * 9, start=None))
        one = frb.integrate(m0, q0, inertia, 0.05, 40, method=method,
                            torque=r + constant_field([0.0, 0.0, 0.09]))
        assert np.abs(tr.m - exact.m).max() <= 1e-14, method
        total = np.linalg.norm(tr.m + hr, axis=-1)
        assert np.abs(total - total[0]).max() <= 1e-15 * 8, method
        assert np.abs(nine.m - one.m).max() <= 1e-13, method


def test_an_overflow_in_a_torque_evaluated_from_python_is_an_integration_error():
    """A state that the steps carry to overflow, with built-in terms evaluated from Python (a
    sum of more terms than a compiled one holds, or with a Python torque): IntegrationError
    naming the method and the step, not a ValueError about Q or m, which the user gave finite."""
    import warnings

    m0, q0, inertia = np.array([0.3, 0.5, 0.8]), np.array([1.0, 0.0, 0.0, 0.0]), np.array([1.0, 2.0, 3.0])
    big = sum([constant_field([0.0, 0.0, 1e306])] * 9, start=None)
    for method in ("STRANG", "YOSHIDA4", "RK4"):
        for tq in (big, big + (lambda t, Q: np.zeros(Q.shape[:-2] + (3,)))):
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", frb.torques.NotCompiledWarning)
                with pytest.raises(frb.IntegrationError, match=f"method {method}: .*step"):
                    frb.integrate(m0, q0, inertia, 0.05, 20, method=method, torque=tq)


@pytest.mark.parametrize("h", [0.01, 100.0, 1e4])
def test_rotor_cancelling_the_momentum_turns_the_body_at_its_constant_rate(h):
    # hr = -m: M = 0, so m stays and the body turns about w = I^-1 m at the constant rate |w|;
    # the half angle h |w| / 2 from the exact inputs in 40 digits (mpmath)
    mpmath = pytest.importorskip("mpmath")
    m = np.array([-0.8351363914995995, -0.191527903600165, 0.5156202766916304])
    inertia = np.array([0.9428813000228065, 2.544284017697897, 0.5808147140165536])
    q0 = np.array([0.5466826670238473, 0.7037091559201978, -0.23846869170812454,
                   -0.38608829110035364])
    tr = frb.integrate(m, q0, inertia, h, 1, method="EXACT", torque=rotor(-m), save_every=None)
    assert np.array_equal(tr.m[-1], m)
    with mpmath.workdps(40):
        w = [mpmath.mpf(a) / mpmath.mpf(b) for a, b in zip(m, inertia)]
        om = mpmath.sqrt(sum(x * x for x in w))
        half = mpmath.mpf(h) * om / 2
        c, s = mpmath.cos(half), mpmath.sin(half)
        turn = [c] + [s * x / om for x in w]
        p = [mpmath.mpf(x) for x in q0]
        q1 = [p[0] * turn[0] - p[1] * turn[1] - p[2] * turn[2] - p[3] * turn[3],
              p[0] * turn[1] + p[1] * turn[0] + p[2] * turn[3] - p[3] * turn[2],
              p[0] * turn[2] - p[1] * turn[3] + p[2] * turn[0] + p[3] * turn[1],
              p[0] * turn[3] + p[1] * turn[2] - p[2] * turn[1] + p[3] * turn[0]]
        expected = np.array([float(x) for x in q1])
    assert np.abs(tr.q[-1] - expected).max() < 1e-15


def test_a_small_total_momentum_takes_long_steps_in_whole_periods():
    # |m + hr| = 1e-10 |m|: the panels near M = 0 cannot keep their gauges, so the periods of the
    # step are one rotation (the step's cost that of one period, not of its length); the long
    # step agrees with chained short ones and keeps |M|, the energy and Q M
    m = np.array([2.0409191213851825, -2.5556650313141818, 0.41809884672577885])
    inertia = np.array([1.2082645567318402, 0.3927612578671842, 0.8572883860324156])
    q0 = np.array([0.5466826670238473, 0.7037091559201978, -0.23846869170812454,
                   -0.38608829110035364])
    hr = -m + 1e-10 * np.linalg.norm(m) * np.array([-2.019986129147251, -0.23193237764418947,
                                                      -0.8652130762749417])
    one = frb.integrate(m, q0, inertia, 100.0, 1, method="EXACT", torque=rotor(hr),
                        save_every=None)
    chained = frb.integrate(m, q0, inertia, 0.25, 400, method="EXACT", torque=rotor(hr),
                            save_every=None)
    assert np.abs(one.m[-1] - chained.m[-1]).max() < 1e-14 * np.linalg.norm(m)
    assert np.abs(one.q[-1] - chained.q[-1]).max() < 1e-12
    long = frb.integrate(m, q0, inertia, 2e4, 1, method="EXACT", torque=rotor(hr))
    total = long.m + hr
    assert abs(np.linalg.norm(total[-1]) / np.linalg.norm(total[0]) - 1) < 1e-6  # |M| 7e-10
    assert abs(long.kinetic_energy[-1] / long.kinetic_energy[0] - 1) < 1e-15
    spatial = np.einsum("kij,kj->ki", long.Q, total)
    assert np.abs(spatial[-1] - spatial[0]).max() < 1e-15 * np.linalg.norm(m)
