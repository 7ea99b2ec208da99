"""Rotation utilities: hat map, quaternions, rotation matrices, invariants.

Conventions (shared with the rest of :mod:`frb`, see CONTRACT.md):

* Vectors are the last axis of an array: shape ``(..., 3)``.  Every function
  broadcasts over the leading axes with the usual numpy rules, so a batch of
  ``n`` vectors is an ``(n, 3)`` array and a batch of matrices ``(n, 3, 3)``.
* ``hat(v)`` is the skew-symmetric matrix with ``hat(v) @ w == cross(v, w)``.
* An attitude matrix ``Q`` has the body axes as its columns (expressed in the
  fixed/spatial frame): a body vector ``x`` is ``Q @ x`` in the fixed frame.
  The body angular momentum ``m`` therefore has the spatial momentum
  ``Q @ m``, which is constant along a free rigid body motion.
* Quaternions are scalar first, ``q = (q0, q1, q2, q3)`` with vector part
  ``v = (q1, q2, q3)``; the product is
  ``(p0, p)(q0, q) = (p0 q0 - p.q, p0 q + q0 p + p x q)``, and a unit
  quaternion represents the rotation matrix
  ``E(q) = 1 + 2 q0 hat(v) + 2 hat(v)^2`` so that ``E(p q) = E(p) E(q)``.
  ``q`` and ``-q`` represent the same rotation.
"""

from __future__ import annotations

import numpy as np

__all__ = [
    "hat",
    "quat_mul",
    "quat_conj",
    "quat_to_matrix",
    "matrix_to_quat",
    "kinetic_energy",
    "spatial_momentum",
]


def _as_float_array(x, name: str, last: tuple[int, ...]) -> np.ndarray:
    """Convert ``x`` to a float64 array whose trailing shape is ``last``."""
    try:
        a = np.asarray(x, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"{name} must be a real array, got {type(x).__name__}") from exc
    if a.ndim < len(last) or a.shape[a.ndim - len(last):] != last:
        want = "(..., " + ", ".join(str(d) for d in last) + ")"
        raise ValueError(f"{name} must have shape {want}, got {a.shape}")
    return a


def hat(v) -> np.ndarray:
    """Skew-symmetric matrix of ``v``: ``hat(v) @ w == np.cross(v, w)``.

    ``v`` has shape ``(..., 3)``; the result has shape ``(..., 3, 3)``::

        hat(v) = [[  0, -v3,  v2],
                  [ v3,   0, -v1],
                  [-v2,  v1,   0]]
    """
    v = _as_float_array(v, "v", (3,))
    out = np.zeros(v.shape[:-1] + (3, 3))
    v1, v2, v3 = v[..., 0], v[..., 1], v[..., 2]
    out[..., 0, 1] = -v3
    out[..., 0, 2] = v2
    out[..., 1, 0] = v3
    out[..., 1, 2] = -v1
    out[..., 2, 0] = -v2
    out[..., 2, 1] = v1
    return out


def quat_mul(p, q) -> np.ndarray:
    """Quaternion product ``p q`` (scalar first), broadcast over leading axes.

    ``(p0, p)(q0, q) = (p0 q0 - p.q, p0 q + q0 p + p x q)``.
    """
    p = _as_float_array(p, "p", (4,))
    q = _as_float_array(q, "q", (4,))
    p0, pv = p[..., 0], p[..., 1:]
    q0, qv = q[..., 0], q[..., 1:]
    s = p0 * q0 - np.sum(pv * qv, axis=-1)
    v = p0[..., None] * qv + q0[..., None] * pv + np.cross(pv, qv)
    return np.concatenate([s[..., None], v], axis=-1)


def quat_conj(q) -> np.ndarray:
    """Conjugate quaternion ``(q0, -q1, -q2, -q3)`` (the inverse of a unit quaternion)."""
    q = _as_float_array(q, "q", (4,))
    out = -q
    out[..., 0] = q[..., 0]
    return out


def quat_to_matrix(q) -> np.ndarray:
    """Rotation matrix ``E(q) = 1 + 2 q0 hat(v) + 2 hat(v)^2`` of a unit quaternion.

    ``q`` has shape ``(..., 4)`` (scalar first), the result ``(..., 3, 3)``.
    The formula is applied as is: ``q`` is not normalised, so a non-unit
    quaternion gives a non-orthogonal matrix.
    """
    q = _as_float_array(q, "q", (4,))
    q0 = q[..., 0]
    H = hat(q[..., 1:])
    out = 2.0 * (q0[..., None, None] * H + H @ H)
    out[..., 0, 0] += 1.0
    out[..., 1, 1] += 1.0
    out[..., 2, 2] += 1.0
    return out


def matrix_to_quat(Q) -> np.ndarray:
    """Unit quaternion ``q`` (scalar first, ``q0 >= 0``) with ``E(q) == Q``.

    ``Q`` has shape ``(..., 3, 3)`` and should be a rotation matrix.  The
    component of largest modulus among ``q0, q1, q2, q3`` is computed from the
    diagonal (Shepperd's choice: the largest of ``trace Q, Q11, Q22, Q33``) and
    the others from the off-diagonal entries, which avoids the cancellation of
    the naive ``q0 = sqrt(1 + trace Q) / 2`` near half turns.  The result is
    normalised to unit length and its sign chosen with ``q0 >= 0``.
    """
    Q = _as_float_array(Q, "Q", (3, 3))
    Q11, Q12, Q13 = Q[..., 0, 0], Q[..., 0, 1], Q[..., 0, 2]
    Q21, Q22, Q23 = Q[..., 1, 0], Q[..., 1, 1], Q[..., 1, 2]
    Q31, Q32, Q33 = Q[..., 2, 0], Q[..., 2, 1], Q[..., 2, 2]
    tr = Q11 + Q22 + Q33
    # Each branch k gives 4 q_k^2 = 1 + diag_k, and 4 q_k q_j from off-diagonals.
    diag = np.stack([tr, Q11, Q22, Q33], axis=-1)
    k = np.argmax(diag, axis=-1)
    d = np.take_along_axis(diag, k[..., None], axis=-1)[..., 0]
    # Sign pattern: 1 + tr, 1 + Q11 - Q22 - Q33 = 1 + 2 Q11 - tr, etc.
    big = np.maximum(np.where(k == 0, 1.0 + d, 1.0 + 2.0 * d - tr), 0.0)  # 4 q_k^2
    r = 2.0 * np.sqrt(big)  # 4 |q_k| >= 2 for a rotation matrix
    a1 = Q32 - Q23  # 4 q0 q1
    a2 = Q13 - Q31  # 4 q0 q2
    a3 = Q21 - Q12  # 4 q0 q3
    s12 = Q12 + Q21  # 4 q1 q2
    s13 = Q13 + Q31  # 4 q1 q3
    s23 = Q23 + Q32  # 4 q2 q3
    # Row k holds 4 q_k (q0, q1, q2, q3); divide the chosen row by 4 q_k.
    cand = np.stack(
        [
            np.stack([big, a1, a2, a3], axis=-1),
            np.stack([a1, big, s12, s13], axis=-1),
            np.stack([a2, s12, big, s23], axis=-1),
            np.stack([a3, s13, s23, big], axis=-1),
        ],
        axis=-2,
    )
    num = np.take_along_axis(cand, k[..., None, None], axis=-2)[..., 0, :]
    with np.errstate(divide="ignore", invalid="ignore"):
        q = num / r[..., None]
        q = q / np.linalg.norm(q, axis=-1, keepdims=True)
    q = np.where(q[..., :1] < 0.0, -q, q)
    return q


def kinetic_energy(m, inertia) -> np.ndarray:
    """Kinetic energy ``T = sum_i m_i^2 / (2 I_i)`` of the body momentum ``m``.

    ``m`` and ``inertia`` have shape ``(..., 3)`` and broadcast; the result has
    the broadcast leading shape (a numpy scalar for single vectors).
    """
    m = _as_float_array(m, "m", (3,))
    inertia = _as_float_array(inertia, "inertia", (3,))
    return np.sum(m * m / (2.0 * inertia), axis=-1)


def spatial_momentum(m, Q) -> np.ndarray:
    """Spatial angular momentum ``Q @ m`` (constant along free rigid body motion).

    ``m`` has shape ``(..., 3)`` and ``Q`` shape ``(..., 3, 3)``; leading axes
    broadcast.
    """
    m = _as_float_array(m, "m", (3,))
    Q = _as_float_array(Q, "Q", (3, 3))
    return np.einsum("...ij,...j->...i", Q, m)
