"""matrix_to_quat of a few matrices (the Python-float path, rotations._matrix_to_quat_few) gives
the numpy path's results bit for bit, and frb.integrate with a matrix attitude starts from them."""
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
    Q = frb.quat_to_matrix(q)
    Q[rng.random(n) < 0.3] += 1e-12 * rng.normal(size=(3, 3))
    return Q


def test_few_matrices_equal_the_numpy_path_bit_for_bit():
    Q = awkward_rotations(4000, 1)
    assert Q.shape[0] > rotations._FEW_MATRICES
    big = rotations.matrix_to_quat(Q)       # the numpy path
    for k in range(0, 4000, 16):
        few = rotations.matrix_to_quat(Q[k:k + 16])
        assert np.array_equal(few, big[k:k + 16]), k
    for k in range(50):
        one = rotations.matrix_to_quat(Q[k])
        assert one.shape == (4,) and np.array_equal(one, big[k]), k


@pytest.mark.parametrize("Q", [np.zeros((3, 3)), -5 * np.eye(3), np.full((3, 3), 1e300)])
def test_few_matrices_not_rotations_as_the_numpy_path(Q):
    """Any finite (3, 3) matrix, rotation or not: the same numbers (or NaN) as the numpy path."""
    many = rotations.matrix_to_quat(np.repeat(Q[None], rotations._FEW_MATRICES + 1, axis=0))
    with np.errstate(all="ignore"):
        one = rotations.matrix_to_quat(Q)
    assert np.array_equal(one, many[0], equal_nan=True)


def test_integrate_from_a_matrix_starts_from_the_numpy_quaternion():
    Q = awkward_rotations(40, 2)
    q = rotations.matrix_to_quat(np.concatenate([Q, Q]))[:40]   # numpy path (80 matrices)
    rng = np.random.default_rng(3)
    m = rng.normal(size=(40, 3))
    inertia = np.array([0.8, 1.7, 2.6])
    for j in range(3):
        a = frb.integrate(m[j], Q[j], inertia, 0.1, 3, method="EXACT")
        b = frb.integrate(m[j], q[j], inertia, 0.1, 3, method="EXACT")
        assert np.array_equal(a.q, b.q) and np.array_equal(a.m, b.m)
    a = frb.integrate(m[:5], Q[:5], inertia, 0.1, 3, method="EXACT")
    b = frb.integrate(m[:5], q[:5], inertia, 0.1, 3, method="EXACT")
    assert np.array_equal(a.q, b.q) and np.array_equal(a.m, b.m)
