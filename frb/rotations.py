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
* Quaternions are **scalar first**, ``q = (q0, q1, q2, q3)`` with vector part
  ``v = (q1, q2, q3)``; the product is
  ``(p0, p)(q0, q) = (p0 q0 - p.q, p0 q + q0 p + p x q)``, and a unit
  quaternion represents the rotation matrix
  ``E(q) = 1 + 2 q0 hat(v) + 2 hat(v)^2`` so that ``E(p q) = E(p) E(q)``.
  ``q`` and ``-q`` represent the same rotation.
"""

from __future__ import annotations

import math

import numpy as np
from numpy.typing import ArrayLike, NDArray
from typing import TYPE_CHECKING, Any, Literal

if TYPE_CHECKING:   # (scipy is optional)
    from scipy.spatial.transform import Rotation

from . import _validate
from ._kept import beyond_memory, memory_size
from ._messages import low_precision_hint

__all__ = [
    "hat",
    "quat_mul",
    "quat_conj",
    "quat_to_matrix",
    "matrix_to_quat",
    "kinetic_energy",
    "spatial_momentum",
    "rotation_exp",
    "is_rotation",
    "momentum_period",
    "to_rotation",
    "from_rotation",
    "rotation_argument",
]


def _as_float_array(x: ArrayLike, name: str, last: tuple[int, ...]) -> NDArray[np.float64]:
    """Convert ``x`` (the input rule of :mod:`frb._validate`, finite values) to a float64 array
    whose trailing shape is ``last``."""
    a = _validate.real_array(x, name, item_ndim=len(last))
    if a.ndim < len(last) or a.shape[a.ndim - len(last):] != last:
        want = "(..., " + ", ".join(str(d) for d in last) + ")"
        raise ValueError(f"{name} must have shape {want}, got {a.shape}")
    return a


def hat(v: ArrayLike) -> NDArray[np.float64]:
    """Skew-symmetric matrix of ``v``: ``hat(v) @ w == np.cross(v, w)``.

    ``v`` has shape ``(..., 3)``; the result has shape ``(..., 3, 3)``::

        hat(v) = [[  0, -v3,  v2],
                  [ v3,   0, -v1],
                  [-v2,  v1,   0]]

    Examples
    --------
    >>> import numpy as np
    >>> import frb
    >>> frb.hat([1.0, 2.0, 3.0]) @ [4.0, 5.0, 6.0]
    array([-3.,  6., -3.])
    >>> np.cross([1.0, 2.0, 3.0], [4.0, 5.0, 6.0])
    array([-3.,  6., -3.])
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


def quat_mul(p: ArrayLike, q: ArrayLike) -> NDArray[np.float64]:
    """Quaternion product ``p q`` (scalar first), broadcast over leading axes.

    ``(p0, p)(q0, q) = (p0 q0 - p.q, p0 q + q0 p + p x q)``.

    Examples
    --------
    >>> import frb
    >>> frb.quat_mul([0.0, 1.0, 0.0, 0.0], [0.0, 0.0, 1.0, 0.0])     # i j = k
    array([0., 0., 0., 1.])
    """
    p = _as_float_array(p, "p", (4,))
    q = _as_float_array(q, "q", (4,))
    try:
        lead = np.broadcast_shapes(p.shape[:-1], q.shape[:-1])
    except ValueError:
        raise ValueError(f"p and q must broadcast to one shape of quaternions, got shapes "
                         f"{p.shape} and {q.shape}") from None
    _fits_result("p and q", lead, 4)
    return _scaled_product(quaternion_product, p, q, "p and q: the product p q")


def quat_conj(q: ArrayLike) -> NDArray[np.float64]:
    """Conjugate quaternion ``(q0, -q1, -q2, -q3)``, scalar first (the inverse of a unit
    quaternion).

    Examples
    --------
    >>> import frb
    >>> q = [0.5, 0.5, 0.5, 0.5]
    >>> frb.quat_conj(q)
    array([ 0.5, -0.5, -0.5, -0.5])
    >>> frb.quat_mul(q, frb.quat_conj(q))
    array([1., 0., 0., 0.])
    """
    q = _as_float_array(q, "q", (4,))
    out = -q
    out[..., 0] = q[..., 0]
    return out


def quat_to_matrix(q: ArrayLike) -> NDArray[np.float64]:
    """Rotation matrix ``E(q) = 1 + 2 q0 hat(v) + 2 hat(v)^2`` of a unit quaternion.

    ``q`` has shape ``(..., 4)`` (scalar first), the result ``(..., 3, 3)``.
    ``q`` must be a unit quaternion (``|q| = 1`` within 1e-10, as the flows take it): a
    quaternion of another length would give a matrix that is not a rotation, and is refused
    (normalise it first, ``q / np.linalg.norm(q)``).

    Raises
    ------
    TypeError
        ``q`` is not an array of real numbers.
    ValueError
        Another shape, non-finite values, or ``|q| != 1`` beyond 1e-10 (the zero quaternion
        included); in a stack the message names the first such quaternion (``body k``).

    Examples
    --------
    A third of a turn about (1, 1, 1) permutes the axes:

    >>> import frb
    >>> frb.quat_to_matrix([0.5, 0.5, 0.5, 0.5])
    array([[0., 0., 1.],
           [1., 0., 0.],
           [0., 1., 0.]])
    """
    given = q
    q = _as_float_array(q, "q", (4,))
    _check_unit(q, "q", given)
    return quat_to_matrix_unchecked(q)


def _check_unit(q: NDArray[np.float64], name: str, given: ArrayLike) -> None:
    """ValueError naming ``name`` (and the first bad quaternion of a stack) unless every
    quaternion of ``q`` (..., 4) has ``| |q| - 1 | <= 1e-10``."""
    tol = _validate.ORTHOGONALITY_TOLERANCE
    bad = np.abs(_validate.norm3(q) - 1.0) > tol
    _refuse_first(bad, q.ndim > 1, f"{name} must be", ("a unit quaternion", "unit quaternions"),
                  f", scalar first (|q| = 1 within {tol})", given)


def _refuse_first(bad: NDArray[np.bool_], stacked: bool, start: str, what: tuple[str, str],
                  condition: str, given: ArrayLike) -> None:
    """ValueError ``start what condition`` (what: singular, plural for a stack), naming the
    first body of a stack where ``bad`` is set, if any is."""
    if bad.any():
        body = f" (body {int(np.argmax(bad.reshape(-1)))})" if stacked else ""
        raise ValueError(f"{start} {what[stacked]}{condition}{body}"
                         + low_precision_hint(given))


def quat_to_matrix_unchecked(q: NDArray[np.float64]) -> NDArray[np.float64]:
    """E(q) of float64 quaternions (..., 4) as given, not checked (frb's own results)."""
    q0 = q[..., 0]
    v = q[..., 1:]
    H = np.zeros(v.shape[:-1] + (3, 3))
    H[..., 0, 1], H[..., 0, 2], H[..., 1, 2] = -v[..., 2], v[..., 1], -v[..., 0]
    H[..., 1, 0], H[..., 2, 0], H[..., 2, 1] = v[..., 2], -v[..., 1], v[..., 0]
    out = 2.0 * (q0[..., None, None] * H + H @ H)
    out[..., 0, 0] += 1.0
    out[..., 1, 1] += 1.0
    out[..., 2, 2] += 1.0
    return out


def matrix_to_quat(Q: ArrayLike) -> NDArray[np.float64]:
    """Unit quaternion ``q`` (scalar first, ``q0 >= 0``) with ``E(q) == Q``.

    ``Q`` has shape ``(..., 3, 3)`` and must be a rotation matrix.  The
    component of largest modulus among ``q0, q1, q2, q3`` is computed from the
    diagonal (Shepperd's choice: the largest of ``trace Q, Q11, Q22, Q33``) and
    the others from the off-diagonal entries, which avoids the cancellation of
    the naive ``q0 = sqrt(1 + trace Q) / 2`` near half turns.  The result is
    normalised to unit length and its sign chosen with ``q0 >= 0``.

    Examples
    --------
    A half turn about the x axis (where ``1 + trace Q = 0``):

    >>> import numpy as np
    >>> import frb
    >>> frb.matrix_to_quat(np.diag([1.0, -1.0, -1.0]))
    array([0., 1., 0., 0.])

    Raises
    ------
    TypeError
        ``Q`` is not an array of real numbers.
    ValueError
        Another shape, non-finite values, or not a rotation (``Q^T Q = 1`` within 1e-10 and
        ``det Q = +1``: a reflection or a scaled matrix has no unit quaternion); in a stack the
        message names the first such matrix (``body k``).
    """
    given = Q
    Q = _as_float_array(Q, "Q", (3, 3))
    _check_rotation(Q, "Q", given)
    return matrix_to_quat_unchecked(Q)


def _check_rotation(Q: NDArray[np.float64], name: str, given: ArrayLike) -> None:
    """ValueError naming ``name`` (and the first bad matrix of a stack) unless every matrix of
    ``Q`` (..., 3, 3) is a rotation (``Q^T Q = 1`` within 1e-10, ``det Q > 0``)."""
    tol = _validate.ORTHOGONALITY_TOLERANCE
    flat = Q.reshape(-1, 3, 3)
    with np.errstate(over="ignore", invalid="ignore"):    # (entries far beyond 1: refused)
        dev = np.abs(np.swapaxes(flat, 1, 2) @ flat - np.eye(3)).max(axis=(1, 2), initial=0.0)
        det = np.einsum("ni,ni->n", np.cross(flat[:, :, 0], flat[:, :, 1]), flat[:, :, 2])
    bad = ~(dev <= tol) | ~(det > 0)
    _refuse_first(bad, Q.ndim > 2, f"{name} must be", ("a rotation matrix", "rotation matrices"),
                  f" (Q^T Q = 1 within {tol}, det Q = +1)", given)


def matrix_to_quat_unchecked(Q: NDArray[np.float64]) -> NDArray[np.float64]:
    """matrix_to_quat of float64 matrices (..., 3, 3) as given, not checked (frb's own
    results and checked inputs)."""
    if Q.ndim == 2 or (Q.ndim == 3 and Q.shape[0] <= _FEW_MATRICES):
        try:
            q = _matrix_to_quat_few(Q.reshape(-1, 3, 3))
            return q.reshape(Q.shape[:-2] + (4,))
        except ZeroDivisionError:   # not a rotation: the numpy path gives its inf / NaN
            pass
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


# Up to this many matrices, matrix_to_quat takes _matrix_to_quat_few (its numpy path costs about
# 0.2 ms whatever the batch, a few matrices about 7 us each this way).
_FEW_MATRICES = 16


def _matrix_to_quat_few(Q: np.ndarray) -> np.ndarray:
    """matrix_to_quat of the matrices ``Q`` (k, 3, 3), float64, in Python floats: the same IEEE
    operations in the same order as the numpy path (its norm summed left to right, as
    ``np.linalg.norm`` does along the last axis), so the same results bit for bit.
    Raises ZeroDivisionError where the numpy path would divide by zero."""
    out = np.empty((Q.shape[0], 4))
    sqrt = math.sqrt
    for j, ((Q11, Q12, Q13), (Q21, Q22, Q23), (Q31, Q32, Q33)) in enumerate(Q.tolist()):
        tr = Q11 + Q22 + Q33
        k, d = 0, tr                  # the first largest of (tr, Q11, Q22, Q33), as np.argmax
        if Q11 > d:
            k, d = 1, Q11
        if Q22 > d:
            k, d = 2, Q22
        if Q33 > d:
            k, d = 3, Q33
        big = max(1.0 + d if k == 0 else 1.0 + 2.0 * d - tr, 0.0)
        r = 2.0 * sqrt(big)
        a1, a2, a3 = Q32 - Q23, Q13 - Q31, Q21 - Q12
        s12, s13, s23 = Q12 + Q21, Q13 + Q31, Q23 + Q32
        num = ((big, a1, a2, a3), (a1, big, s12, s13), (a2, s12, big, s23), (a3, s13, s23, big))[k]
        q0, q1, q2, q3 = num[0] / r, num[1] / r, num[2] / r, num[3] / r
        norm = sqrt(q0 * q0 + q1 * q1 + q2 * q2 + q3 * q3)
        q0, q1, q2, q3 = q0 / norm, q1 / norm, q2 / norm, q3 / norm
        out[j] = (-q0, -q1, -q2, -q3) if q0 < 0.0 else (q0, q1, q2, q3)
    return out


def kinetic_energy(m: ArrayLike, inertia: ArrayLike) -> NDArray[np.float64]:
    """Kinetic energy ``T = sum_i m_i^2 / (2 I_i)`` of the body momentum ``m`` in the principal
    frame (:func:`frb.kinetic_energy` also takes inertia tensors).

    ``m`` and ``inertia`` (principal moments) have shape ``(..., 3)`` and broadcast; the result
    has the broadcast leading shape (a numpy scalar for single vectors). The moments must be
    strictly positive (ValueError otherwise, as everywhere in frb).

    Examples
    --------
    >>> import numpy as np
    >>> from frb.rotations import kinetic_energy
    >>> print(kinetic_energy([0.3, 0.5, 0.8], [1.0, 2.0, 3.0]))
    0.21416666666666667
    >>> kinetic_energy(np.ones((2, 3)), [1.0, 2.0, 3.0])
    array([0.916667, 0.916667])
    """
    m = _as_float_array(m, "m", (3,))
    inertia = _as_float_array(inertia, "inertia", (3,))
    if not (inertia > 0).all():
        body = "" if inertia.ndim == 1 else \
            f" (body {int(np.argmax(~(inertia > 0).all(axis=-1).reshape(-1)))})"
        raise ValueError("inertia must contain strictly positive moments of inertia" + body)
    _broadcast("m", m, 1, "inertia", inertia, 1)
    return kinetic_energy_unchecked(m, inertia)


def kinetic_energy_unchecked(m: NDArray[np.float64], inertia: NDArray[np.float64]
                             ) -> NDArray[np.float64]:
    """``sum m_i^2 / (2 I_i)`` over the last axis of float64 arrays that broadcast, the moments
    positive and finite, without spurious overflow or underflow: each component and each moment
    is scaled by a power of two (``m_i = 2^a_i m'_i``, ``I_i = 2^c_i I'_i`` with ``m'_i`` and
    ``I'_i`` in [1/2, 1): components and moments of any ratio), each term formed from the scaled
    values and multiplied by ``2^(2 a_i - c_i)`` (:func:`numpy.ldexp`). A power of two is exact, so the result
    equals the plain formula bit for bit wherever that neither overflows nor underflows; it is
    infinite only when the energy is beyond the float64 range."""
    with np.errstate(over="ignore", under="ignore", divide="ignore", invalid="ignore"):
        ms, a = np.frexp(np.where(np.isfinite(m), m, 1.0))
        ms = np.where(np.isfinite(m), ms, m)
        Is, c = np.frexp(np.where(np.isfinite(inertia), inertia, 1.0))
        Is = np.where(np.isfinite(inertia), Is, inertia)
        terms = np.ldexp(ms * ms / (2.0 * Is), 2 * a - c)
        return np.sum(terms, axis=-1)


def spatial_momentum(m: ArrayLike, Q: ArrayLike) -> NDArray[np.float64]:
    """Spatial angular momentum ``Q @ m`` (constant along free rigid body motion).

    ``m`` has shape ``(..., 3)`` and ``Q`` shape ``(..., 3, 3)``, rotation matrices (within
    1e-10, ValueError otherwise); leading axes broadcast.

    Examples
    --------
    >>> import frb
    >>> Q = frb.quat_to_matrix([0.5, 0.5, 0.5, 0.5])
    >>> frb.spatial_momentum([1.0, 0.0, 0.0], Q)      # the body x axis is the fixed y axis
    array([0., 1., 0.])
    """
    m = _as_float_array(m, "m", (3,))
    given = Q
    Q = _as_float_array(Q, "Q", (3, 3))
    _check_rotation(Q, "Q", given)
    _broadcast("m", m, 1, "Q", Q, 2)
    return _scaled_product(lambda m, Q: np.einsum("...ij,...j->...i", Q, m), m, Q, "Q m")


def _scaled_product(product: Any, a: NDArray[np.float64], b: NDArray[np.float64],
                    what: str) -> NDArray[np.float64]:
    """product(a, b), bilinear; where a sum of its terms overflows, again with a scaled by a power
    of two (exactly) and the result scaled back. ValueError when the result itself is beyond the
    float64 range; operands with NaN or infinite entries give their product as it is (the
    caller's checks name them)."""
    with np.errstate(over="ignore", invalid="ignore"):
        out = product(a, b)
        if np.all(np.isfinite(out)) or not (np.isfinite(a).all() and np.isfinite(b).all()):
            return out
        e = np.frexp(np.max(np.abs(a), axis=-1, keepdims=True))[1]
        out = np.ldexp(product(np.ldexp(a, -e), b), e)
    if not np.all(np.isfinite(out)):
        raise ValueError(f"{what} is beyond the float64 range")
    return out


def _broadcast(name_a: str, a: NDArray[np.float64], item_a: int, name_b: str,
               b: NDArray[np.float64], item_b: int) -> None:
    """ValueError naming both arguments when their leading (batch) shapes do not broadcast,
    or when a result of 3 values for each of their broadcast bodies would not fit in memory."""
    lead_a, lead_b = a.shape[:a.ndim - item_a], b.shape[:b.ndim - item_b]
    try:
        lead = np.broadcast_shapes(lead_a, lead_b)
    except ValueError:
        raise ValueError(f"{name_a} of shape {a.shape} and {name_b} of shape {b.shape} do not "
                         f"match: their batch shapes {lead_a} and {lead_b} must be equal or "
                         "broadcast (numpy's rules)") from None
    _fits_result(f"{name_a} and {name_b}", lead, 3)


#: Arrays of the result's size that a broadcast product holds at once (terms, sums, scaling).
_RESULT_COPIES = 4


def _fits_result(names: str, lead: tuple[int, ...], values: int) -> None:
    """ValueError naming ``names`` when a result of ``values`` float64 for each body of the
    broadcast batch shape ``lead`` (and its temporaries) would not fit in the memory
    available."""
    need = 8.0 * math.prod(lead) * values * _RESULT_COPIES
    free = beyond_memory(need)
    if free is not None:
        raise ValueError(f"{names}: their broadcast batch {lead} would take {memory_size(need)} "
                         f"with its temporaries, more than the memory available "
                         f"({memory_size(free)}); give fewer bodies at a time")


def rotation_exp(v: ArrayLike) -> NDArray[np.float64]:
    """The rotation matrix ``exp(hat(v))`` for ``v`` of shape ``(..., 3)`` (Rodrigues' formula).

    Examples
    --------
    >>> import numpy as np
    >>> from frb.rotations import rotation_exp
    >>> rotation_exp([0.0, 0.0, np.pi / 2]).round(12)    # a quarter turn about e3
    array([[ 0., -1.,  0.],
           [ 1.,  0.,  0.],
           [ 0.,  0.,  1.]])
    """
    v = _as_float_array(v, "v", (3,))
    # the unit axis u = v / |v| and the angle |v| (the norm of v / max_i |v_i|: no overflow);
    # exp(hat(v)) = 1 + sin|v| hat(u) + 2 sin^2(|v|/2) hat(u)^2
    big = np.max(np.abs(v), axis=-1, keepdims=True)
    w = v / np.where(big > 0, big, 1.0)
    nw = np.linalg.norm(w, axis=-1, keepdims=True)
    with np.errstate(over="ignore"):
        a = (big * nw)[..., None]
    if not np.isfinite(a).all():
        raise ValueError("v: the angle |v| is beyond the float64 range")
    u = w / np.where(nw > 0, nw, 1.0)
    K = np.zeros(v.shape[:-1] + (3, 3))
    K[..., 0, 1], K[..., 0, 2], K[..., 1, 2] = -u[..., 2], u[..., 1], -u[..., 0]
    K[..., 1, 0], K[..., 2, 0], K[..., 2, 1] = u[..., 2], -u[..., 1], u[..., 0]
    return np.eye(3) + np.sin(a) * K + 2 * np.sin(0.5 * a) ** 2 * (K @ K)


def is_rotation(Q: NDArray[np.float64]) -> bool:
    """True when every matrix of the stack ``Q`` ``(n, 3, 3)`` is a rotation: ``Q^T Q = 1``
    within :data:`frb.flows.ORTHOGONALITY_TOLERANCE` and ``det Q > 0``.

    Examples
    --------
    >>> import numpy as np
    >>> from frb.rotations import is_rotation
    >>> is_rotation(np.eye(3)[None]), is_rotation(-np.eye(3)[None])
    (True, False)
    """
    Q = _validate.real_array(Q, "Q", finite=False, item_ndim=2)
    if Q.shape == (3, 3):
        Q = Q[None]
    if Q.ndim != 3 or Q.shape[1:] != (3, 3):
        raise ValueError(f"Q must have shape (n, 3, 3) or (3, 3), got {Q.shape}")
    if not np.isfinite(Q).all():
        return False
    with np.errstate(over="ignore", invalid="ignore"):    # (entries far beyond 1: not one)
        deviation = np.abs(np.swapaxes(Q, 1, 2) @ Q - np.eye(3))
    if deviation.size and not deviation.max() <= _validate.ORTHOGONALITY_TOLERANCE:
        return False
    # orthogonal, so det Q = +-1, the sign of the triple product of the columns
    return bool((np.einsum("ni,ni->n", np.cross(Q[:, :, 0], Q[:, :, 1]), Q[:, :, 2]) > 0).all())


def momentum_period(m: ArrayLike, inertia: ArrayLike) -> float:
    """Period of the body momentum ``m(t)`` of the free body, in closed form.

    With the moments sorted ``I1 < I2 < I3``, ``G = |m|^2`` and ``2T = sum m_i^2 / I_i``, the
    momentum is a Jacobi cn/sn/dn motion of period ``4 K(k) / lambda`` with
    ``lambda^2 = (G - 2T I1)(I3 - I2) / (I1 I2 I3)``,
    ``k^2 = (I2 - I1)(2T I3 - G) / ((I3 - I2)(G - 2T I1))`` when ``G > 2T I2`` (circulation
    about the axis of I3) and the same with 1 and 3 exchanged otherwise. ``K`` is computed by
    the arithmetic-geometric mean.

    Returns
    -------
    float
        The period; inf on a separatrix and for a steady rotation (m constant). For a
        symmetric body (``k = 0``) it is the period ``2 pi / |Omega|`` of the momentum's
        rotation about the symmetry axis.

    Examples
    --------
    >>> from frb.rotations import momentum_period
    >>> round(momentum_period([0.0, 0.6, -0.8], [0.376, 0.627, 1.0]), 10)   # Vilmart's book
    7.3075754393
    """
    m = _as_float_array(m, "m", (3,))
    I = _as_float_array(inertia, "inertia", (3,))
    if m.shape != (3,) or I.shape != (3,):
        raise ValueError(f"m and inertia must have shape (3,) (one body), got {m.shape} and "
                         f"{I.shape}")
    if not (I > 0).all():
        raise ValueError("inertia must contain strictly positive moments of inertia")
    order = np.argsort(I)
    m, I = m[order], I[order]
    if not np.any(m):
        return math.inf
    # in units where the largest |m_i| and moment are in [1/2, 1) (exact powers of two): the
    # period scales as (moment) / (momentum)
    ka, kb = -math.frexp(float(np.abs(m).max()))[1], -math.frexp(float(I[2]))[1]
    m, I = np.ldexp(m, ka), np.ldexp(I, kb)
    G = float(m @ m)
    T2 = float(np.sum(m * m / I))
    I1, I2, I3 = (float(v) for v in I)
    if G > T2 * I2:
        lam2 = (G - T2 * I1) * (I3 - I2) / (I1 * I2 * I3)
        num, den = (I2 - I1) * (T2 * I3 - G), (I3 - I2) * (G - T2 * I1)
    else:
        lam2 = (T2 * I3 - G) * (I2 - I1) / (I1 * I2 * I3)
        num, den = (I3 - I2) * (G - T2 * I1), (I2 - I1) * (T2 * I3 - G)
    if not (lam2 > 0 and den > 0 and num < den):
        return math.inf         # a separatrix, a symmetric body, a steady rotation
    k2 = num / den
    a, b = 1.0, math.sqrt(1.0 - k2)
    for _ in range(64):                     # quadratic convergence: a few iterations suffice
        if a - b <= 4e-16 * a:
            break
        a, b = 0.5 * (a + b), math.sqrt(a * b)
    K = math.pi / (2.0 * 0.5 * (a + b))
    period = 4.0 * K / math.sqrt(lam2)
    try:
        return math.ldexp(period, ka - kb)
    except OverflowError:
        return math.inf


def _scipy_rotation() -> Any:
    try:
        from scipy.spatial.transform import Rotation
    except ImportError:
        raise ImportError("frb.to_rotation and frb.from_rotation need scipy, which is not "
                          "installed: pip install scipy (or pip install 'frb[rotation]')") from None
    return Rotation


def to_rotation(attitude: ArrayLike) -> Rotation:
    """The attitude as a scipy ``Rotation`` (needs scipy).

    Parameters
    ----------
    attitude : array_like, shape (4,), (n, 4), (3, 3) or (n, 3, 3)
        frb's unit quaternions, **scalar first** ``(q0, q1, q2, q3)`` (``|q| = 1`` within 1e-10),
        or rotation matrices (columns = body axes in the fixed frame, ``Q^T Q = 1`` within
        1e-10, ``det Q = +1``). Checked as the flows check them: scipy itself would silently
        normalise a wrong quaternion and orthogonalise a wrong matrix.

    Returns
    -------
    scipy.spatial.transform.Rotation
        One rotation, or a stack of ``n``. ``rot.apply(x_body)`` is ``Q @ x_body``;
        ``rot.as_quat()`` is **scalar last** ``(q1, q2, q3, q0)``.

    Raises
    ------
    ImportError
        scipy is not installed.
    TypeError, ValueError
        Not real numbers, another shape, or not a unit quaternion / rotation matrix.

    Examples
    --------
    >>> import numpy as np
    >>> import frb
    >>> q = [np.cos(0.25), 0.0, 0.0, np.sin(0.25)]            # 0.5 rad about z, scalar first
    >>> rot = frb.to_rotation(q)
    >>> rot.as_quat()                                          # scipy: scalar last
    array([0.      , 0.      , 0.247404, 0.968912])
    >>> bool(np.allclose(rot.as_matrix(), frb.quat_to_matrix(q)))
    True
    """
    Rotation = _scipy_rotation()
    a = _validate.real_array(attitude, "attitude", item_ndim=1)
    tol = _validate.ORTHOGONALITY_TOLERANCE
    if a.shape[-1:] == (4,) and a.ndim in (1, 2):
        q = a.reshape(-1, 4)
        dev = np.abs(_validate.norm3(q) - 1.0)
        if (dev > tol).any():
            b = int(np.argmax(dev > tol))
            raise ValueError(f"attitude must be unit quaternions, scalar first (|q| = 1 within "
                             f"{tol})" + (f" (body {b})" if a.ndim == 2 else "")
                             + low_precision_hint(attitude))
        rot = Rotation.from_quat(q[:, [1, 2, 3, 0]])
        return rot[0] if a.ndim == 1 else rot
    if a.shape[-2:] == (3, 3) and a.ndim in (2, 3):
        Q = a.reshape(-1, 3, 3)
        if not is_rotation(Q):
            b = next(j for j in range(Q.shape[0]) if not is_rotation(Q[j:j + 1]))
            raise ValueError(f"attitude must be rotation matrices (Q^T Q = 1 within {tol}, "
                             "det Q = +1)" + (f" (body {b})" if a.ndim == 3 else "")
                             + low_precision_hint(attitude))
        rot = Rotation.from_matrix(Q)
        return rot[0] if a.ndim == 2 else rot
    raise ValueError("attitude must have shape (4,) or (n, 4) (quaternions, scalar first) or "
                     f"(3, 3) or (n, 3, 3) (matrices), got {a.shape}")


def from_rotation(rot: Rotation, form: Literal["quaternion", "matrix"] = "quaternion"
                  ) -> NDArray[np.float64]:
    """frb's attitude from a scipy ``Rotation`` (needs scipy).

    Parameters
    ----------
    rot : scipy.spatial.transform.Rotation
        One rotation or a stack.
    form : {"quaternion", "matrix"}
        ``"quaternion"``: unit quaternions **scalar first** ``(q0, q1, q2, q3)``, shape (4,) or
        (n, 4) (scipy's ``as_quat`` is scalar last); ``"matrix"``: ``Q`` of shape (3, 3) or
        (n, 3, 3).

    Returns
    -------
    numpy.ndarray
        New array, ready for :func:`frb.quat_step`, :func:`frb.frb_step`, :func:`frb.integrate`.

    Raises
    ------
    ImportError
        scipy is not installed.
    TypeError
        ``rot`` is not a scipy Rotation.
    ValueError
        ``form`` is neither "quaternion" nor "matrix".

    Examples
    --------
    >>> from scipy.spatial.transform import Rotation
    >>> import frb
    >>> frb.from_rotation(Rotation.from_euler("z", 0.5))
    array([0.968912, 0.      , 0.      , 0.247404])
    """
    Rotation = _scipy_rotation()
    if not isinstance(rot, Rotation):
        raise TypeError(f"rot must be a scipy.spatial.transform.Rotation, got {type(rot).__name__}"
                        " (for frb's own arrays use frb.quat_to_matrix / frb.matrix_to_quat)")
    form = _validate.choice(form, "form", ("quaternion", "matrix"), "'quaternion' or 'matrix'")
    if form == "matrix":
        return np.array(rot.as_matrix(), dtype=np.float64)
    xyzw = np.asarray(rot.as_quat(), dtype=np.float64)
    return np.ascontiguousarray(xyzw[..., [3, 0, 1, 2]])


# Frame changes (the principal frame of an inertia tensor, torques seen in it)

def quaternion_product(p: NDArray[np.float64], q: NDArray[np.float64]) -> NDArray[np.float64]:
    """Hamilton product ``p q`` of quaternions (..., 4), scalar first, broadcast, without checks
    (non-finite values propagate): ``(p0, p)(q0, q) = (p0 q0 - p.q, p0 q + q0 p + p x q)``."""
    p0, p1, p2, p3 = p[..., 0], p[..., 1], p[..., 2], p[..., 3]
    q0, q1, q2, q3 = q[..., 0], q[..., 1], q[..., 2], q[..., 3]
    return np.stack([p0 * q0 - p1 * q1 - p2 * q2 - p3 * q3,
                     p0 * q1 + q0 * p1 + p2 * q3 - p3 * q2,
                     p0 * q2 + q0 * p2 + p3 * q1 - p1 * q3,
                     p0 * q3 + q0 * p3 + p1 * q2 - p2 * q1], axis=-1)


def rotation_argument(R: ArrayLike, name: str = "R") -> NDArray[np.float64]:
    """``R`` as a float64 rotation (3, 3), or rotations (N, 3, 3) one per body ((1, 3, 3) is
    taken as (3, 3)): the input rule, the shape, and the rotation check of the attitudes
    (``R^T R = 1`` within 1e-10, ``det R = +1``), read-only."""
    a = _validate.real_array(R, name, item_ndim=2)
    if a.ndim not in (2, 3) or a.shape[-2:] != (3, 3):
        raise ValueError(f"{name} must have shape (3, 3) or (N, 3, 3), got {a.shape}")
    if a.ndim == 3 and a.shape[0] == 1:
        a = a[0]
    if not is_rotation(a.reshape(-1, 3, 3)):
        raise ValueError(f"{name} must be a rotation matrix (R^T R = 1 within "
                         f"{_validate.ORTHOGONALITY_TOLERANCE}, det R = +1)")
    a = np.array(a, dtype=np.float64)
    a.setflags(write=False)
    return a


def rotate_back(R: NDArray[np.float64], v: NDArray[np.float64],
                what: str = "R^T v") -> NDArray[np.float64]:
    """``R^T v`` for vectors v (..., 3) and R (3, 3) or (n, 3, 3) (broadcast over the bodies),
    without spurious overflow; ValueError ``what`` "is beyond the float64 range" when a
    component of the finite vectors' image is."""
    return _scaled_product(lambda v, R: (v[..., None, :] @ R)[..., 0, :], v, R, what)


def rotate(R: NDArray[np.float64], v: NDArray[np.float64],
           what: str = "R v") -> NDArray[np.float64]:
    """``R v`` for vectors v (..., 3) and R (3, 3) or (n, 3, 3) (broadcast over the bodies), as
    :func:`rotate_back`."""
    return _scaled_product(lambda v, R: (v[..., None, :] @ np.swapaxes(R, -1, -2))[..., 0, :],
                           v, R, what)
