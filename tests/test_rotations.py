import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from frb.rotations import (
    hat,
    kinetic_energy,
    matrix_to_quat,
    quat_conj,
    quat_mul,
    quat_to_matrix,
    spatial_momentum,
)

finite = st.floats(-10.0, 10.0, allow_nan=False, allow_infinity=False)
vec3 = arrays(np.float64, (3,), elements=finite)
raw4 = arrays(np.float64, (4,), elements=st.floats(-1.0, 1.0, allow_nan=False))


def _unit(q):
    return q / np.linalg.norm(q)


unit_quat = raw4.filter(lambda q: np.linalg.norm(q) > 0.1).map(_unit)


def _ref_quat_mul(p, q):
    p0, pv, q0, qv = p[0], p[1:], q[0], q[1:]
    return np.concatenate([[p0 * q0 - pv @ qv], p0 * qv + q0 * pv + np.cross(pv, qv)])


# ------------------------------------------------------------------ hat


@given(vec3, vec3)
def test_hat_is_cross_product(v, w):
    np.testing.assert_allclose(hat(v) @ w, np.cross(v, w), rtol=0, atol=1e-12)


def test_hat_layout_and_skew():
    H = hat([1.0, 2.0, 3.0])
    np.testing.assert_array_equal(H, [[0, -3, 2], [3, 0, -1], [-2, 1, 0]])
    np.testing.assert_array_equal(H, -H.T)


def test_hat_batched():
    rng = np.random.default_rng(0)
    v = rng.normal(size=(4, 5, 3))
    H = hat(v)
    assert H.shape == (4, 5, 3, 3)
    for i in range(4):
        for j in range(5):
            np.testing.assert_array_equal(H[i, j], hat(v[i, j]))


# ------------------------------------------------------------ quaternions


@given(raw4, raw4, raw4)
def test_quat_mul_associative(p, q, r):
    np.testing.assert_allclose(
        quat_mul(quat_mul(p, q), r), quat_mul(p, quat_mul(q, r)), rtol=0, atol=1e-14
    )


@given(raw4, raw4)
def test_quat_mul_formula(p, q):
    np.testing.assert_allclose(quat_mul(p, q), _ref_quat_mul(p, q), rtol=0, atol=1e-15)


def test_quat_mul_units():
    one, i, j, k = np.eye(4)
    np.testing.assert_array_equal(quat_mul(i, j), k)
    np.testing.assert_array_equal(quat_mul(j, k), i)
    np.testing.assert_array_equal(quat_mul(k, i), j)
    np.testing.assert_array_equal(quat_mul(i, i), -one)


@given(unit_quat)
def test_quat_conj_is_inverse(q):
    np.testing.assert_allclose(quat_mul(q, quat_conj(q)), [1, 0, 0, 0], atol=1e-15)
    np.testing.assert_allclose(quat_mul(quat_conj(q), q), [1, 0, 0, 0], atol=1e-15)


def test_quat_conj_does_not_modify_input():
    q = np.array([1.0, 2.0, 3.0, 4.0])
    c = quat_conj(q)
    np.testing.assert_array_equal(q, [1, 2, 3, 4])
    np.testing.assert_array_equal(c, [1, -2, -3, -4])


@given(unit_quat)
def test_quat_to_matrix_is_rotation(q):
    E = quat_to_matrix(q)
    np.testing.assert_allclose(E.T @ E, np.eye(3), rtol=0, atol=1e-14)
    assert abs(np.linalg.det(E) - 1.0) < 1e-14


def test_quat_to_matrix_formula_and_axis_angle():
    # rotation by angle a about axis e: q = (cos a/2, sin a/2 e)
    a, e = 0.7, np.array([1.0, -2.0, 0.5]) / np.linalg.norm([1.0, -2.0, 0.5])
    q = np.concatenate([[np.cos(a / 2)], np.sin(a / 2) * e])
    K = hat(e)
    rodrigues = np.eye(3) + np.sin(a) * K + (1 - np.cos(a)) * K @ K
    np.testing.assert_allclose(quat_to_matrix(q), rodrigues, atol=1e-15)
    # the defining formula 1 + 2 q0 hat(v) + 2 hat(v)^2
    V = hat(q[1:])
    np.testing.assert_allclose(quat_to_matrix(q), np.eye(3) + 2 * q[0] * V + 2 * V @ V, atol=0)


@given(unit_quat, unit_quat)
def test_quat_to_matrix_is_homomorphism(p, q):
    np.testing.assert_allclose(
        quat_to_matrix(quat_mul(p, q)), quat_to_matrix(p) @ quat_to_matrix(q), rtol=0, atol=1e-14
    )


def test_quaternion_kinematics_match_matrix():
    # q' = q (0, w)/2  <=>  Q' = Q hat(w): check with a finite difference
    rng = np.random.default_rng(1)
    q = _unit(rng.normal(size=4))
    w = rng.normal(size=3)
    dq = 0.5 * quat_mul(q, np.concatenate([[0.0], w]))
    eps = 1e-6
    dE = (quat_to_matrix(q + eps * dq) - quat_to_matrix(q - eps * dq)) / (2 * eps)
    np.testing.assert_allclose(dE, quat_to_matrix(q) @ hat(w), atol=1e-9)


@given(unit_quat)
def test_matrix_to_quat_inverts_up_to_sign(q):
    r = matrix_to_quat(quat_to_matrix(q))
    assert r[0] >= 0.0
    s = 1.0 if q[0] >= 0 else -1.0
    if abs(q[0]) < 1e-12:  # sign ambiguous: compare up to sign
        s = 1.0 if r @ q >= 0 else -1.0
    np.testing.assert_allclose(r, s * q, rtol=0, atol=2e-15)


@pytest.mark.parametrize("q0", [0.0, 1e-12, 1e-8, 1e-4])
@pytest.mark.parametrize("axis", [0, 1, 2, None])
def test_matrix_to_quat_near_half_turn(q0, axis):
    # near rotations by pi the naive sqrt(1 + trace) loses all accuracy
    v = np.array([0.3, -0.5, 0.8]) if axis is None else np.eye(3)[axis]
    v = v / np.linalg.norm(v) * np.sqrt(1 - q0**2)
    q = np.concatenate([[q0], v])
    r = matrix_to_quat(quat_to_matrix(q))
    np.testing.assert_allclose(r, q, rtol=0, atol=2e-15)


def test_matrix_to_quat_identity_and_batched():
    np.testing.assert_array_equal(matrix_to_quat(np.eye(3)), [1, 0, 0, 0])
    rng = np.random.default_rng(2)
    q = rng.normal(size=(6, 2, 4))
    q /= np.linalg.norm(q, axis=-1, keepdims=True)
    q[..., 0] = np.abs(q[..., 0])
    E = quat_to_matrix(q)
    assert E.shape == (6, 2, 3, 3)
    r = matrix_to_quat(E)
    assert r.shape == (6, 2, 4)
    np.testing.assert_allclose(r, q, atol=2e-15)
    for i in range(6):
        np.testing.assert_array_equal(r[i, 1], matrix_to_quat(E[i, 1]))


def test_batched_quat_mul_broadcasts():
    rng = np.random.default_rng(3)
    p = rng.normal(size=(5, 4))
    q = rng.normal(size=4)
    r = quat_mul(p, q)
    assert r.shape == (5, 4)
    for i in range(5):
        np.testing.assert_allclose(r[i], _ref_quat_mul(p[i], q), atol=1e-15)


# ---------------------------------------------------------------- invariants


def test_kinetic_energy():
    assert kinetic_energy([1.0, 2.0, 3.0], [1.0, 2.0, 4.0]) == pytest.approx(0.5 + 1.0 + 9 / 8)
    m = np.arange(12.0).reshape(4, 3)
    I = np.array([1.0, 2.0, 3.0])
    e = kinetic_energy(m, I)
    assert e.shape == (4,)
    np.testing.assert_allclose(e, [0.5 * np.sum(mi**2 / I) for mi in m])


def test_spatial_momentum():
    rng = np.random.default_rng(4)
    m = rng.normal(size=(7, 3))
    Q = quat_to_matrix(_unit(rng.normal(size=4)))
    pi = spatial_momentum(m, Q)
    assert pi.shape == (7, 3)
    np.testing.assert_allclose(pi, m @ Q.T, atol=1e-15)
    np.testing.assert_allclose(spatial_momentum(m[0], Q), Q @ m[0], atol=1e-15)


@pytest.mark.filterwarnings("error")
def test_products_near_the_float64_range():
    # sums of terms that overflow where the result does not are computed (against the product of
    # the inputs scaled by 2^-1000, exactly, and the closed form); a result beyond the range is refused
    R = quat_to_matrix([np.cos(np.pi / 16), 0.0, 0.0, np.sin(np.pi / 16)])
    m = np.array([1.2e308, 1.2e308, 0.0])
    np.testing.assert_allclose(spatial_momentum(m, R), (R @ (m * 2.0**-1000)) * 2.0**1000, rtol=3e-16)
    p = np.array([1e308, 1e308, 0.0, 0.0])
    q = np.array([0.5, 0.5, 0.25, 0.0])
    np.testing.assert_allclose(quat_mul(p, q), [0.0, 1e308, 2.5e307, 2.5e307], rtol=3e-16)
    with pytest.raises(ValueError, match="p and q: the product p q is beyond the float64 range"):
        quat_mul(p, p)
    with pytest.raises(ValueError, match="Q m is beyond the float64 range"):
        spatial_momentum([1.7e308, 1.7e308, 0.0], quat_to_matrix([np.cos(np.pi / 8), 0, 0, np.sin(np.pi / 8)]))


@pytest.mark.parametrize(
    "call",
    [
        lambda: hat([1.0, 2.0]),
        lambda: quat_mul([1.0, 0, 0], [1.0, 0, 0, 0]),
        lambda: quat_conj(np.zeros((2, 3))),
        lambda: quat_to_matrix([1.0, 0, 0]),
        lambda: matrix_to_quat(np.eye(4)),
        lambda: kinetic_energy([1.0, 2.0], [1.0, 1.0, 1.0]),
        lambda: spatial_momentum([1.0, 0, 0], np.eye(2)),
    ],
)
def test_shape_errors(call):
    with pytest.raises(ValueError):
        call()


def test_strings_are_not_numbers():
    with pytest.raises(TypeError, match="v must be an array of real numbers"):
        hat("abc")


@settings(max_examples=50)
@given(unit_quat, vec3, vec3)
def test_spatial_momentum_of_rotated_frames(q, m, x):
    # rotating the body by R about the fixed frame rotates the spatial momentum
    R = quat_to_matrix(q)
    Q = quat_to_matrix(_unit(np.array([0.3, 0.1, -0.4, 0.8])))
    np.testing.assert_allclose(
        spatial_momentum(m, R @ Q), R @ spatial_momentum(m, Q), rtol=0, atol=1e-12
    )
