"""matrix_to_quat of a few matrices (the Python-float path, rotations._matrix_to_quat_few) and the
compiled conversion of frb.integrate's one-body set-up (check_single_matrix_quat) give the numpy
path's results bit for bit, and frb.integrate with a matrix attitude starts from them (the unchecked
conversions of frb's own results: the public ones refuse what is not a rotation)."""
import numpy as np
import pytest

import frb
from frb import rotations


def awkward_rotations(n, seed):
    """Random rotations, many near half turns (q0 ~ 0) or near the identity, some about an axis,
    and some perturbed off orthogonality by 1e-12."""
    rng = np.random.default_rng(seed)
    q = rng.normal(size=(n, 4))
    q /= np.linalg.norm(q, axis=1, keepdims=True)
    q[rng.random(n) < 0.3, 0] *= 1e-9
    q[rng.random(n) < 0.2, 1:] *= 1e-9
    q[rng.random(n) < 0.1, 2:] = 0
    Q = rotations.quat_to_matrix_unchecked(q)
    Q[rng.random(n) < 0.3] += 1e-12 * rng.normal(size=(3, 3))
    return Q


def test_few_matrices_equal_the_numpy_path_bit_for_bit():
    Q = awkward_rotations(4000, 1)
    assert Q.shape[0] > rotations._FEW_MATRICES
    big = rotations.matrix_to_quat_unchecked(Q)       # the numpy path
    for k in range(0, 4000, 16):
        few = rotations.matrix_to_quat_unchecked(Q[k:k + 16])
        assert np.array_equal(few, big[k:k + 16]), k
    for k in range(50):
        one = rotations.matrix_to_quat_unchecked(Q[k])
        assert one.shape == (4,) and np.array_equal(one, big[k]), k


def _compiled(Q):
    """The compiled conversion of integrate's set-up (rotations.matrix_quat_tr) of matrices
    (k, 3, 3), and which of them are rotations (the compiled attitude checks)."""
    Q = np.ascontiguousarray(Q)
    k = Q.shape[0]
    q = frb._core.matrix_quaternions(Q.T).T
    extremes = np.empty(frb._numbers_table.CHECK_EXTREMES)
    ok = np.array([frb._core.check_bodies(np.zeros((3, 1)), Q[j].reshape(9, 1), np.zeros(1),
                                          np.ones((3, 1)), 1, extremes)[0] == 0
                   for j in range(k)])
    return q, ok


def test_compiled_conversion_equals_the_numpy_path_bit_for_bit():
    Q = awkward_rotations(4000, 4)
    big = rotations.matrix_to_quat_unchecked(Q)       # the numpy path
    # (awkward_rotations scales components after normalising: not all are rotations)
    q, ok = _compiled(Q)
    assert ok.sum() > 1000
    assert np.array_equal(q[ok], big[ok])
    # near half turns and about an axis, as rotations within the tolerance
    q = np.random.default_rng(5).normal(size=(2000, 4))
    q[:1000, 0] *= 1e-9
    q[500:1500, 2:] *= np.array([0.0, 1e-9])
    q /= np.linalg.norm(q, axis=1, keepdims=True)
    Q = rotations.quat_to_matrix_unchecked(q)
    big = rotations.matrix_to_quat_unchecked(Q)
    qk, ok = _compiled(Q)
    assert ok.all() and np.array_equal(qk, big)


@pytest.mark.parametrize("Q", [np.zeros((3, 3)), -5 * np.eye(3), np.full((3, 3), 1e300)])
def test_few_matrices_not_rotations_as_the_numpy_path(Q):
    """Any finite (3, 3) matrix, rotation or not: the same numbers (or NaN) as the numpy path."""
    many = rotations.matrix_to_quat_unchecked(np.repeat(Q[None], rotations._FEW_MATRICES + 1, axis=0))
    with np.errstate(all="ignore"):
        one = rotations.matrix_to_quat_unchecked(Q)
    assert np.array_equal(one, many[0], equal_nan=True)


def test_integrate_from_a_matrix_starts_from_the_numpy_quaternion():
    # (RK4 holds the attitude as a quaternion, made from a matrix on entry; the exact-flow
    # splittings hold a matrix as it is)
    Q = awkward_rotations(40, 2)
    q = rotations.matrix_to_quat_unchecked(np.concatenate([Q, Q]))[:40]   # numpy path (80 matrices)
    rng = np.random.default_rng(3)
    m = rng.normal(size=(40, 3))
    inertia = np.array([0.8, 1.7, 2.6])
    for j in range(3):
        a = frb.integrate(m[j], Q[j], inertia, 0.1, 3, method="RK4")
        b = frb.integrate(m[j], q[j], inertia, 0.1, 3, method="RK4")
        assert np.array_equal(a.q, b.q) and np.array_equal(a.m, b.m)
    a = frb.integrate(m[:5], Q[:5], inertia, 0.1, 3, method="RK4")
    b = frb.integrate(m[:5], q[:5], inertia, 0.1, 3, method="RK4")
    assert np.array_equal(a.q, b.q) and np.array_equal(a.m, b.m)
