"""frb.derivatives: the jacobian of the exact step against an independent reference.

The reference (tests/data/reference_jacobian.npz, tests/reference/make_jacobian_reference.py)
integrates the variational equations of the free body,
    dm' = dm x w + m x J^-1 dm + m x dJ^-1 m,   dth' = J^-1 dm + dJ^-1 m - w x dth,
with the state by a fixed-point Taylor method at 140 bits (tests/reference/taylor.py, no elliptic
function): the state transition matrix, d/dh and d/dinertia of each case. The cases are the edge
families of the special set (principal axes exactly and within 1e-12..1e-6, the separatrix and
within 1e-14..1e-6 of it, symmetric, nearly symmetric and nearly spherical bodies, the sphere,
negative and zero steps, |m| and moments from 1e-8 to 1e8, long steps up to h |m| / I_min = 1000),
random bodies with h from 1e-3 to 1e3, and inertia tensors.
Other checks: the states are those of frb_step / quat_step bit for bit; the jacobian preserves the
Poisson tensor of the free body and its invariants; det Phi = 1; thread counts; input errors.
"""
import os

import numpy as np
import pytest

import frb
from frb.derivatives import flow_jacobian
from refdata import variational_flow

DATA = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data", "reference_jacobian.npz")
TOL = 1e-11


def _load():
    with np.load(DATA, allow_pickle=False) as f:
        return {k: f[k] for k in f.files}


REF = _load()


def relative(x, ref):
    """max |x - ref| / max |ref| (0 when both vanish)."""
    big = np.abs(ref).max()
    return np.abs(x - ref).max() / big if big > 0 else np.abs(x).max()


def family(label):
    for key in ("near axis", "axis", "near separatrix", "separatrix", "nearly symmetric",
                "nearly spherical", "symmetric", "sphere", "negative step", "h = ", "scale",
                "long step", "random"):
        if label.startswith(key):
            return key
    return "other"


FAMILIES = sorted({family(str(x)) for x in REF["label"]})


def hat(v):
    return np.array([[0.0, -v[2], v[1]], [v[2], 0.0, -v[0]], [-v[1], v[0], 0.0]])


def unit_quaternions(rng, n):
    q = rng.normal(size=(n, 4))
    return q / np.linalg.norm(q, axis=1)[:, None]


@pytest.mark.parametrize("name", FAMILIES)
def test_reference_moments(name):
    """Phi, d/dh and d/dinertia agree with the variational reference to 1e-11 relative to each
    matrix's largest entry, one batched call per family (unit quaternions of any attitude: the
    derivatives do not depend on it)."""
    sel = np.array([family(str(x)) == name for x in REF["label"]])
    n = int(sel.sum())
    q = unit_quaternions(np.random.default_rng(1), n)
    _, _, jac = flow_jacobian(REF["m0"][sel], q, REF["h"][sel], REF["inertia"][sel])
    worst = []
    for i, label in enumerate(REF["label"][sel]):
        e = max(relative(jac.state[i], REF["phi"][sel][i]), relative(jac.h[i], REF["dh"][sel][i]),
                relative(jac.inertia[i], REF["dinertia"][sel][i]))
        worst.append((e, str(label)))
    e, label = max(worst)
    assert e < TOL, f"{label}: relative error {e:.2e}"


def test_reference_tensors():
    """Inertia tensors (random, symmetric bodies, nearly symmetric, diagonal): the jacobian and
    the derivatives with respect to (J11, J22, J33, J12, J13, J23) in the user's frame."""
    for i, label in enumerate(REF["tensor_label"]):
        _, Q1, jac = frb.frb_step(REF["tensor_m0"][i], np.eye(3), REF["tensor_h"][i],
                                  REF["tensor_inertia"][i], jacobian=True)
        assert jac.inertia.shape == (6, 6)
        tol = 1e-9 if "nearly symmetric gap 1e-06" in str(label) else TOL
        for x, ref in ((jac.state, REF["tensor_phi"][i]), (jac.h, REF["tensor_dh"][i]),
                       (jac.inertia, REF["tensor_dinertia"][i])):
            assert relative(x, ref) < tol, f"{label}: {relative(x, ref):.2e}"


def _bodies(rng, n):
    m = rng.normal(size=(n, 3)) * 10.0 ** rng.uniform(-2, 2, size=(n, 1))
    inertia = rng.uniform(0.3, 4.0, size=(n, 3))
    h = 10.0 ** rng.uniform(-3, 2.5, size=n) * rng.choice([-1.0, 1.0], size=n)
    # edge cases among them: an axis, a symmetric body, a sphere, h = 0, m = 0, a long step
    m[0] = [0.0, 0.0, 1.5]
    inertia[1] = [2.0, 2.0, 3.0]
    inertia[2] = [1.7, 1.7, 1.7]
    h[3] = 0.0
    m[4] = 0.0
    h[5] = 500.0 * inertia[5].min() / np.linalg.norm(m[5])
    return m, inertia, h


def test_states_bit_for_bit():
    """m1 and the attitudes are those of quat_step / frb_step (batched and one body) bit for bit;
    the jacobians do not depend on the attitude form."""
    rng = np.random.default_rng(7)
    m, inertia, h = _bodies(rng, 40)
    q = unit_quaternions(rng, 40)
    Q = np.array([frb.quat_to_matrix(x) for x in q])
    m1, q1, jq = frb.quat_step(m, q, h, inertia, jacobian=True)
    m_ref, q_ref = frb.quat_step(m, q, h, inertia)
    assert np.array_equal(m1, m_ref) and np.array_equal(q1, q_ref)
    m1, Q1, jm = frb.frb_step(m, Q, h, inertia, jacobian=True)
    m_ref, Q_ref = frb.frb_step(m, Q, h, inertia)
    assert np.array_equal(m1, m_ref) and np.array_equal(Q1, Q_ref)
    assert np.array_equal(jq.state, jm.state) and np.array_equal(jq.inertia, jm.inertia)
    for b in (0, 1, 5, 17):
        m1b, q1b, jb = flow_jacobian(m[b], q[b], h[b], inertia[b])
        assert np.array_equal(m1b, m_ref[b]) and np.array_equal(q1b, q_ref[b])
        assert np.array_equal(jb.state, jq.state[b]) and np.array_equal(jb.h, jq.h[b])


def test_poisson_structure_and_invariants():
    """The step is a Poisson map of the free body on T*SO(3) (body coordinates): with
    J(m) = [[hat(m), -1], [1, 0]] in the coordinates (dm, dth), Phi J(m0) Phi^T = J(m1) to 1e-12
    relative to |Phi|^2, and det Phi = 1 to 1e-12 (J is invertible: the map is symplectic).
    The linearised invariants are conserved: |m|^2 and the energy (m1 . dm1 = m0 . dm0,
    w1 . dm1 = w0 . dm0) and the spatial momentum (E(w) (dm1 - m1 x dth1) = dm0 - m0 x dth0)."""
    rng = np.random.default_rng(11)
    n = 60
    m = rng.normal(size=(n, 3))
    inertia = rng.uniform(0.5, 3.0, size=(n, 3))
    h = 10.0 ** rng.uniform(-3, 1.3, size=n) * rng.choice([-1.0, 1.0], size=n)
    q = unit_quaternions(rng, n)
    m1, q1, jac = flow_jacobian(m, q, h, inertia)

    def poisson(mm):
        J = np.zeros((6, 6))
        J[:3, :3] = hat(mm)
        J[:3, 3:] = -np.eye(3)
        J[3:, :3] = np.eye(3)
        return J

    for b in range(n):
        P = jac.state[b]
        scale = np.abs(P).max() ** 2
        assert np.abs(P @ poisson(m[b]) @ P.T - poisson(m1[b])).max() < 1e-12 * scale
        assert abs(np.linalg.det(P) - 1.0) < 1e-12
        w0, w1 = m[b] / inertia[b], m1[b] / inertia[b]
        assert np.abs(m1[b] @ P[:3] - np.concatenate([m[b], np.zeros(3)])).max() < 1e-12 * scale
        assert np.abs(w1 @ P[:3] - np.concatenate([w0, np.zeros(3)])).max() < 1e-12 * scale
        E = frb.quat_to_matrix(frb.quat_mul(frb.quat_conj(q[b]), q1[b]))
        left = E @ (P[:3] - hat(m1[b]) @ P[3:])
        right = np.hstack([np.eye(3), -hat(m[b])])
        assert np.abs(left - right).max() < 1e-12 * scale


def test_trivial_steps():
    """h = 0: Phi = 1, d/dh the vector field, d/dI = 0; m = 0: dth1 = dth0 + h I^-1 dm0."""
    inertia = np.array([1.0, 2.0, 3.0])
    m = np.array([0.3, -0.4, 0.5])
    _, _, jac = flow_jacobian(m, [1.0, 0.0, 0.0, 0.0], 0.0, inertia)
    assert np.array_equal(jac.state, np.eye(6))
    w = m / inertia
    assert np.allclose(jac.h, np.concatenate([np.cross(m, w), w]), rtol=0, atol=1e-16)
    assert not jac.inertia.any()
    _, _, jac = flow_jacobian(np.zeros(3), [1.0, 0.0, 0.0, 0.0], 2.5, inertia)
    expected = np.eye(6)
    expected[3:, :3] = np.diag(2.5 / inertia)
    assert np.array_equal(jac.state, expected)


def test_semi_exact_converges():
    """With quadrature = np the derivatives are those of the semi-exact flow (order 2 np): with
    10 nodes they agree with the exact flow's to 1e-12 for a short step, with 1 node they do not."""
    rng = np.random.default_rng(3)
    m = rng.normal(size=(10, 3))
    inertia = rng.uniform(0.5, 3.0, size=(10, 3))
    q = unit_quaternions(rng, 10)
    _, _, exact = flow_jacobian(m, q, 0.3, inertia)
    _, _, ten = flow_jacobian(m, q, 0.3, inertia, quadrature=10)
    _, _, one = flow_jacobian(m, q, 0.3, inertia, quadrature=1)
    assert relative(ten.state, exact.state) < 1e-12
    assert relative(ten.inertia, exact.inertia) < 1e-12
    assert relative(one.state, exact.state) > 1e-8


@pytest.mark.parametrize("quadrature", [1, 2])
def test_semi_exact_derivatives_are_those_of_the_semi_exact_step(quadrature):
    """The derivatives in m and h of frb_step(..., quadrature=n) against central differences of
    the same semi-exact step (not of the exact flow): random bodies, and momenta near the middle
    axis of the moments."""
    rng = np.random.default_rng(11)
    eps = 1e-7
    for k in range(24):
        inertia = rng.uniform(0.5, 3.0, 3)
        h = rng.uniform(0.2, 3.0)
        m = rng.normal(size=3)
        if k % 3 == 0:
            axis = int(np.argsort(inertia)[1])
            m = 1e-3 * rng.normal(size=3)
            m[axis] = rng.uniform(0.5, 1.5)
        m1, Q1, jac = frb.frb_step(m, np.eye(3), h, inertia, quadrature=quadrature, jacobian=True)

        def column(dm, dh):
            a = frb.frb_step(m + dm, np.eye(3), h + dh, inertia, quadrature=quadrature)
            b = frb.frb_step(m - dm, np.eye(3), h - dh, inertia, quadrature=quadrature)
            w = Q1.T @ (a[1] - b[1]) / (2 * eps)
            return np.r_[(a[0] - b[0]) / (2 * eps), w[2, 1], w[0, 2], w[1, 0]]

        fd = np.column_stack([column(eps * e, 0.0) for e in np.eye(3)])
        scale = max(1.0, np.abs(jac.state[:, :3]).max())
        assert np.abs(jac.state[:, :3] - fd).max() < 1e-6 * scale, (k, m, inertia, h)
        assert np.abs(jac.h - column(np.zeros(3), eps)).max() < 1e-6 * scale, (k, m, inertia, h)


def test_threads():
    """The results do not depend on the thread count, bit for bit."""
    rng = np.random.default_rng(5)
    m, inertia, h = _bodies(rng, 200)
    q = unit_quaternions(rng, 200)
    a = flow_jacobian(m, q, h, inertia, threads=1)
    b = flow_jacobian(m, q, h, inertia, threads=2)
    for x, y in zip(a[:2] + (a[2].state, a[2].h, a[2].inertia),
                    b[:2] + (b[2].state, b[2].h, b[2].inertia)):
        assert np.array_equal(x, y)


def test_errors():
    """Bad input: ValueError / TypeError naming the argument (and the body of a batch)."""
    q = [1.0, 0.0, 0.0, 0.0]
    with pytest.raises(ValueError, match="attitude"):
        flow_jacobian([1.0, 2.0, 3.0], [1.0, 0.0, 0.0], 0.1, [1.0, 2.0, 3.0])
    with pytest.raises(ValueError, match="Q"):
        frb.frb_step([1.0, 2.0, 3.0], q, 0.1, [1.0, 2.0, 3.0], jacobian=True)
    with pytest.raises(TypeError, match="h"):
        flow_jacobian([1.0, 2.0, 3.0], q, "0.1", [1.0, 2.0, 3.0])
    with pytest.raises(ValueError, match="inertia"):
        flow_jacobian([1.0, 2.0, 3.0], q, 0.1, [1.0, -2.0, 3.0])
    with pytest.raises(ValueError, match="quadrature"):
        flow_jacobian([1.0, 2.0, 3.0], q, 0.1, [1.0, 2.0, 3.0], quadrature=11)
    with pytest.raises(ValueError, match="body 1"):
        flow_jacobian([[1.0, 2.0, 3.0], [1.0, np.nan, 3.0]], [q, q], 0.1, [1.0, 2.0, 3.0])
    with pytest.raises(ValueError, match="form"):
        flow_jacobian([1.0, 2.0, 3.0], q, 0.1, [1.0, 2.0, 3.0], form="matrix")
    with pytest.raises(ValueError, match="inertia"):
        flow_jacobian([1.0, 2.0, 3.0], q, 0.1, [[1.0, 0.5, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, 1.0]])


def _momentum_period(m, inertia):
    """The period of m(t) and its gradient in m (mpmath at 40 digits, no frb): Landau and
    Lifshitz, Mechanics, 3rd ed. 1976, section 37, eqs. (37.10)-(37.13): for I1 < I2 < I3 and
    G^2 = |m|^2 > 2 E I2 (around axis 3) P = 4 K(k) / lambda with
    lambda^2 = (I3 - I2) (G^2 - 2 E I1) / (I1 I2 I3),
    k^2 = (I2 - I1) (2 E I3 - G^2) / ((I3 - I2) (G^2 - 2 E I1)), and I1, I3 exchanged for
    G^2 < 2 E I2 (around axis 1); the gradient by central differences at 40 digits."""
    import mpmath as mp

    with mp.workdps(40):
        moments = [mp.mpf(float(c)) for c in inertia]

        def period(v):
            g2 = sum(x * x for x in v)
            e2 = sum(x * x / c for x, c in zip(v, moments))
            i1, i2, i3 = moments
            if g2 < e2 * i2:
                i1, i3 = i3, i1
            lam2 = (i3 - i2) * (g2 - e2 * i1) / (i1 * i2 * i3)
            k2 = (i2 - i1) * (e2 * i3 - g2) / ((i3 - i2) * (g2 - e2 * i1))
            return 4 * mp.ellipk(k2) / mp.sqrt(lam2)

        m0 = [mp.mpf(float(x)) for x in m]
        step = mp.mpf(10) ** -25
        grad = []
        for i in range(3):
            up = list(m0)
            down = list(m0)
            up[i] += step
            down[i] -= step
            grad.append(float((period(up) - period(down)) / (2 * step)))
        return float(period(m0)), np.array(grad)


@pytest.mark.parametrize("delta", [1e-2, 1e-5, 1e-8])
@pytest.mark.parametrize("side", [1.0, -1.0])
def test_growth_near_separatrix(delta, side):
    """The growth law of the manual (docs/guide/sensitivities.rst): over n periods P of m(t),
    m(t + n P; m0) = m(t; m0) gives Phi_mm(n P) - 1 = -n f(m0) grad P(m0)^T, f(m) = m x I^-1 m,
    a rank-one term growing linearly in time with |grad P| ~ 2 / (lambda |delta|) at the relative
    distance delta = (G^2 - 2 E I2) / G^2 from the separatrix; grad P from Landau and Lifshitz's
    period in mpmath."""
    inertia = np.array([1.0, 2.0, 3.0])
    # a momentum at relative distance delta from the separatrix (side: around axis 3 or axis 1):
    # G^2 - 2 E I2 = m1^2 (1 - I2 / I1) + m3^2 (1 - I2 / I3) = side delta for |m| = 1
    m3 = 0.6
    m1 = np.sqrt((m3 * m3 * (1 - 2.0 / 3.0) - side * delta) / (2.0 / 1.0 - 1))
    m = np.array([m1, np.sqrt(1 - m1 * m1 - m3 * m3), m3])
    period, grad = _momentum_period(m, inertia)
    f0 = np.cross(m, m / inertia)
    q0 = np.array([1.0, 0.0, 0.0, 0.0])
    for n in (1, 3):
        m1_, _, jac = frb.quat_step(m, q0, n * period, inertia, jacobian=True)
        assert np.abs(m1_ - m).max() < 1e-9 * n / delta ** 0.5 + 1e-12
        law = np.eye(3) - n * np.outer(f0, grad)
        assert relative(jac.state[:3, :3], law) < 1e-8
        # the size the manual states: |Phi_mm| grows like n |f0| |grad P|, |grad P| ~ 2 / (lambda delta)
        assert np.abs(grad).max() > 0.1 / delta


SHORT_TURN_BODIES = {
    "random": ([0.3, -1.1, 0.7], [1.0, 2.0, 3.5]),
    "unsorted moments": ([0.3, -1.1, 0.7], [3.5, 1.0, 2.0]),
    "symmetric": ([0.9, 0.2, -0.6], [2.0, 2.0, 3.0]),
    "nearly symmetric": ([0.9, 0.2, -0.6], [1.0, 1.0 + 1e-6, 1.5]),
    "nearly spherical": ([0.4, 0.5, -0.6], [1.0, 1.0 + 1e-5, 1.0 + 2e-5]),
    "near an axis": ([1e-9, -2e-9, 1.0], [1.0, 2.0, 3.0]),
    "near the middle axis": ([1e-3, 1.0, -2e-3], [1.0, 2.0, 3.0]),
    # |m1|^2 (I2 - I1) / I1 = |m3|^2 (I3 - I2) / I3 for I = (1, 2, 3): m3 = sqrt(3/2) m1
    "near the separatrix": ([1.0, 0.5, np.sqrt(1.5) * (1 + 1e-9)], [1.0, 2.0, 3.0]),
}


@pytest.mark.parametrize("name", sorted(SHORT_TURN_BODIES))
def test_attitude_block_of_short_turns(name):
    """The attitude's derivative in the momentum, d(th1)/d(m0), of steps turning the body by
    phi = |h| |m| / I_min from 1e-15 to 0.06 radians agrees with the variational reference to
    2e-15 relative to the block's largest entry (the block is of size phi / |m|, so an error of
    the unit roundoff in the other blocks' units would be 1e-16 / phi here), in a batch (the
    lanes) and body by body (the closed form on dual numbers)."""
    m_dir, inertia = (np.asarray(x, dtype=float) for x in SHORT_TURN_BODIES[name])
    rng = np.random.default_rng(7)
    cases = []
    for phi in (1e-15, 1e-9, 1e-5, 1e-3, 1e-2, 0.06):
        scale = 10.0 ** rng.uniform(-3, 3)
        m = m_dir * scale
        h = float(rng.choice([-1.0, 1.0]) * phi * inertia.min() / np.linalg.norm(m))
        ref = variational_flow(m, inertia, h)
        block = np.array([[float(x) for x in row[:3]] for row in ref["phi"][3:]])
        cases.append((phi, m, h, block))
    ms = np.array([c[1] for c in cases])
    hs = np.array([c[2] for c in cases])
    inertias = np.tile(inertia, (len(cases), 1))
    _, _, jac = flow_jacobian(ms, unit_quaternions(rng, len(cases)), hs, inertias)
    routes = [("batch", jac.state)]
    try:
        from frb import _testing
    except ImportError:
        pass
    else:
        routes.append(("one body", np.moveaxis(
            _testing.dual_flow_jacobian(ms.T.copy(), hs, inertias.T.copy(), 0)[2], -1, 0)))
    for route, states in routes:
        for (phi, _, _, block), state in zip(cases, states):
            e = relative(state[3:, :3], block)
            assert e < 2e-15, f"{name}, {route}, phi = {phi:.0e}: relative error {e:.2e}"


@pytest.mark.parametrize("inertia", [[1.0, 2.0, 3.0], [[2.0, 0.1, 0.0], [0.1, 3.0, 0.0], [0.0, 0.0, 4.0]]])
def test_inertia_derivatives_read_later_are_those_of_the_call(inertia):
    # computed when first read, from the arguments as they were at the call (the caller changing
    # its arrays in place afterwards does not change them): against a call on untouched copies
    m = np.array([[0.3, 0.5, 0.8], [1.0, 0.2, -0.3]])
    q = np.tile([1.0, 0.0, 0.0, 0.0], (2, 1))
    moments = np.array(inertia)
    want = frb.derivatives.flow_jacobian(m.copy(), q.copy(), 0.5, moments.copy())[2].inertia
    jac = frb.derivatives.flow_jacobian(m, q, 0.5, moments)[2]
    jac_q = frb.quat_step(m, q, 0.5, moments, jacobian=True)[2]
    m *= 3.0
    q[:] = [0.0, 1.0, 0.0, 0.0]
    moments *= 2.0
    assert np.array_equal(jac.inertia, want) and np.array_equal(jac_q.inertia, want)


def test_derivatives_beyond_the_float64_range_are_refused():
    # d(m1)/dh ~ |m|^2 / I: about 1e600 here, while the step itself is finite (and returned
    # without jacobian=True)
    m = np.array([0.3, 0.5, 0.8]) * 1e300
    assert np.isfinite(frb.quat_step(m, [1.0, 0.0, 0.0, 0.0], 1e-301, [1.0, 2.0, 3.0])[0]).all()
    for call in (lambda: frb.quat_step(m, [1.0, 0.0, 0.0, 0.0], 1e-301, [1.0, 2.0, 3.0],
                                       jacobian=True),
                 lambda: flow_jacobian(m, np.eye(3), 1e-301, [1.0, 2.0, 3.0])):
        with pytest.raises(ValueError, match="the derivative of the step with respect to h is "
                                             "beyond the float64 range"):
            call()
