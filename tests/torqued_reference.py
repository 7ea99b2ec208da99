"""Independent reference solutions for torqued rigid bodies (test support, not a test file).

Nothing here imports frb: these are the solutions frb is compared against. Only numpy, scipy
and mpmath are used, and every routine is written out from the equations below.

Conventions
-----------
* ``Q`` (3x3) is the attitude: its columns are the body axes in the fixed (spatial) frame, so a
  body vector ``x_b`` is ``Q x_b`` in the fixed frame.
* ``m`` (3,) is the angular momentum of the rigid part in body coordinates, ``J`` (3x3, SPD)
  the inertia tensor in the same body frame, ``w = J^-1 m`` the body angular velocity.
* Equations of motion (Euler with a body torque ``T_b(t, Q, m)``)::

      m' = m x w + T_b(t, Q, m),      Q' = Q hat(w).

* Quaternions are scalar first, ``q = (q0, q1, q2, q3)``, Hamilton product; the unit ``q``
  has the rotation matrix ``E(q)`` below, ``E(p * q) = E(p) E(q)``, and ``q' = q * (0, w) / 2``
  is the same motion as ``Q' = Q hat(w)``.
* Time and all quantities are in arbitrary consistent units (e.g. s, kg m^2, kg m^2/s, N m).

Torques are plain callables ``T_b(t, Q, m) -> (3,)`` for one body (``Q`` 3x3, ``m`` (3,)).
"""
from __future__ import annotations

from typing import Callable, NamedTuple

import mpmath
import numpy as np
from numpy.typing import ArrayLike, NDArray
from scipy.integrate import solve_ivp

Torque = Callable[[float, NDArray[np.float64], NDArray[np.float64]], NDArray[np.float64]]

__all__ = [
    "hat", "quat_mul", "quat_conj", "quat_to_matrix", "matrix_to_quat",
    "damping_torque", "attitude_control_torque", "rotor_torque", "field_torque",
    "heavy_top_torque", "gravity_gradient_torque", "sum_torque", "zero_torque",
    "dop853_reference", "MPState", "damped_reference_mp", "free_reference_mp",
]


# --------------------------------------------------------------------------------------------
# small linear algebra and quaternions (float64)
# --------------------------------------------------------------------------------------------

def hat(v: ArrayLike) -> NDArray[np.float64]:
    """The skew matrix of ``v``: ``hat(v) @ u == v x u``."""
    x, y, z = np.asarray(v, dtype=np.float64)
    return np.array([[0.0, -z, y],
                     [z, 0.0, -x],
                     [-y, x, 0.0]])


def quat_mul(p: ArrayLike, q: ArrayLike) -> NDArray[np.float64]:
    """Hamilton product ``p * q`` of scalar-first quaternions."""
    p0, p1, p2, p3 = np.asarray(p, dtype=np.float64)
    q0, q1, q2, q3 = np.asarray(q, dtype=np.float64)
    return np.array([
        p0 * q0 - p1 * q1 - p2 * q2 - p3 * q3,
        p0 * q1 + p1 * q0 + p2 * q3 - p3 * q2,
        p0 * q2 - p1 * q3 + p2 * q0 + p3 * q1,
        p0 * q3 + p1 * q2 - p2 * q1 + p3 * q0,
    ])


def quat_conj(q: ArrayLike) -> NDArray[np.float64]:
    """Conjugate ``(q0, -q1, -q2, -q3)``."""
    q = np.asarray(q, dtype=np.float64)
    return np.array([q[0], -q[1], -q[2], -q[3]])


def quat_to_matrix(q: ArrayLike) -> NDArray[np.float64]:
    """Rotation matrix ``E(q)`` of the quaternion ``q`` (normalised first).

    ``E(q) = (q0^2 - |v|^2) I + 2 v v^T + 2 q0 hat(v)`` with ``v = (q1, q2, q3)``; its columns
    are the body axes in the fixed frame.
    """
    q = np.asarray(q, dtype=np.float64)
    q = q / np.linalg.norm(q)
    q0, v = q[0], q[1:]
    return (q0 * q0 - v @ v) * np.eye(3) + 2.0 * np.outer(v, v) + 2.0 * q0 * hat(v)


def matrix_to_quat(Q: ArrayLike) -> NDArray[np.float64]:
    """A unit quaternion ``q`` with ``E(q) = Q`` and ``q0 >= 0`` (Shepperd's choice of pivot).

    The largest of ``4 q0^2 = 1 + tr Q`` and ``4 qi^2 = 1 + 2 Q_ii - tr Q`` is taken as the
    pivot; the other components follow from the off-diagonal sums and differences of ``Q``.
    """
    Q = np.asarray(Q, dtype=np.float64)
    tr = Q[0, 0] + Q[1, 1] + Q[2, 2]
    cand = np.array([1.0 + tr, 1.0 + 2 * Q[0, 0] - tr, 1.0 + 2 * Q[1, 1] - tr,
                     1.0 + 2 * Q[2, 2] - tr])
    k = int(np.argmax(cand))
    r = np.sqrt(cand[k])            # = 2 |q_k|
    d32, d13, d21 = Q[2, 1] - Q[1, 2], Q[0, 2] - Q[2, 0], Q[1, 0] - Q[0, 1]   # 4 q0 (q1, q2, q3)
    s32, s13, s21 = Q[2, 1] + Q[1, 2], Q[0, 2] + Q[2, 0], Q[1, 0] + Q[0, 1]   # 4 (q2q3, q1q3, q1q2)
    if k == 0:
        q = np.array([r * r, d32, d13, d21])
    elif k == 1:
        q = np.array([d32, r * r, s21, s13])
    elif k == 2:
        q = np.array([d13, s21, r * r, s32])
    else:
        q = np.array([d21, s13, s32, r * r])
    q /= 2.0 * r                    # each row above is 4 q_k * q
    q /= np.linalg.norm(q)
    return -q if q[0] < 0 else q


def _inertia_matrix(J: ArrayLike) -> NDArray[np.float64]:
    """``J`` as a 3x3 matrix: a (3,) input is the diagonal of principal moments."""
    J = np.asarray(J, dtype=np.float64)
    if J.shape == (3,):
        return np.diag(J)
    if J.shape != (3, 3):
        raise ValueError(f"inertia must have shape (3,) or (3, 3), not {J.shape}")
    return J


# --------------------------------------------------------------------------------------------
# torques, T_b(t, Q, m) for one body
# --------------------------------------------------------------------------------------------

def zero_torque(t: float, Q: NDArray[np.float64], m: NDArray[np.float64]) -> NDArray[np.float64]:
    """No torque."""
    return np.zeros(3)


def damping_torque(c: float) -> Torque:
    """Linear damping ``T_b = -c m`` (``c`` in 1/time)."""
    c = float(c)

    def torque(t, Q, m):
        return -c * np.asarray(m, dtype=np.float64)
    return torque


def attitude_control_torque(q_ref: ArrayLike, kp: float, kd: float, J: ArrayLike) -> Torque:
    """Quaternion PD law ``T_b = -kp s e_v - kd w``.

    ``e = conj(q_ref) * q`` with ``q`` the quaternion of ``Q`` (either sign), ``e_v = e[1:]``,
    ``s = sign(e0)`` (``+1`` when ``e0 == 0``), ``w = J^-1 m``. Because ``s e_v`` is unchanged by
    ``q -> -q`` or ``q_ref -> -q_ref``, the law is a function of the rotations only.
    ``q_ref`` is normalised; ``J`` is (3,) principal moments or a 3x3 tensor.
    """
    q_ref = np.asarray(q_ref, dtype=np.float64)
    q_ref_conj = quat_conj(q_ref / np.linalg.norm(q_ref))
    kp, kd = float(kp), float(kd)
    Jm = _inertia_matrix(J)

    def torque(t, Q, m):
        e = quat_mul(q_ref_conj, matrix_to_quat(Q))
        s = -1.0 if e[0] < 0 else 1.0
        w = np.linalg.solve(Jm, np.asarray(m, dtype=np.float64))
        return -kp * s * e[1:] - kd * w
    return torque


def rotor_torque(h: ArrayLike, J: ArrayLike) -> Torque:
    """Gyroscopic torque of a momentum wheel, ``T_b = h x w`` with ``w = J^-1 m``.

    ``h`` is the wheel's constant internal angular momentum in body coordinates and ``m`` the
    momentum of the rigid part only; ``Q (m + h)`` and ``m . J^-1 m / 2`` are then conserved.
    """
    h = np.asarray(h, dtype=np.float64).copy()
    Jm = _inertia_matrix(J)

    def torque(t, Q, m):
        return np.cross(h, np.linalg.solve(Jm, np.asarray(m, dtype=np.float64)))
    return torque


def field_torque(u0: ArrayLike) -> Torque:
    """Constant spatial field on the third body axis: ``T_b = (Q^T u0) x e3``.

    Potential ``U = u0 . (Q e3)``.
    """
    u0 = np.asarray(u0, dtype=np.float64).copy()
    e3 = np.array([0.0, 0.0, 1.0])

    def torque(t, Q, m):
        return np.cross(np.asarray(Q).T @ u0, e3)
    return torque


def heavy_top_torque(weight: float, center: ArrayLike) -> Torque:
    """Heavy top: ``T_b = weight (Q^T e_z) x center``.

    ``weight`` = mass * g, ``center`` the centre of mass in the body frame (fixed point at the
    origin); potential ``U = weight e_z . (Q center)``.
    """
    weight = float(weight)
    center = np.asarray(center, dtype=np.float64).copy()

    def torque(t, Q, m):
        return weight * np.cross(np.asarray(Q)[2, :], center)     # Q^T e_z = third row of Q
    return torque


def gravity_gradient_torque(rate: float, J: ArrayLike) -> Torque:
    """Gravity gradient on a circular orbit: ``T_b = 3 rate^2 c x (J c)``.

    ``r(t) = (cos(rate t), sin(rate t), 0)`` is the unit direction to the body in the fixed
    frame (``rate`` the orbital angular rate, rad/time), ``c = Q^T r``. Potential
    ``U = 3/2 rate^2 c . J c`` (time dependent; ``E - rate e_z . (Q m)`` is conserved).
    """
    rate = float(rate)
    Jm = _inertia_matrix(J)

    def torque(t, Q, m):
        r = np.array([np.cos(rate * t), np.sin(rate * t), 0.0])
        c = np.asarray(Q).T @ r
        return 3.0 * rate * rate * np.cross(c, Jm @ c)
    return torque


def sum_torque(*torques: Torque) -> Torque:
    """The sum of the given torques (no arguments: zero torque)."""
    def torque(t, Q, m):
        total = np.zeros(3)
        for f in torques:
            total = total + np.asarray(f(t, Q, m), dtype=np.float64)
        return total
    return torque


# --------------------------------------------------------------------------------------------
# float64 reference: DOP853 on (m, Q) with a full inertia tensor
# --------------------------------------------------------------------------------------------

def dop853_reference(m0: ArrayLike, Q0: ArrayLike, J: ArrayLike, torque: Torque | None,
                     t_end: float, t_eval: ArrayLike | None = None,
                     rtol: float = 1e-13, atol: float = 1e-15
                     ) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """Integrate ``m' = m x J^-1 m + T_b(t, Q, m)``, ``Q' = Q hat(J^-1 m)`` from ``t = 0``.

    scipy's DOP853 (Hairer, Norsett and Wanner) on the 12 components (m, Q row by row), in the
    user's body frame: ``J`` is a full 3x3 SPD tensor (or (3,) principal moments), ``torque``
    a callable ``T_b(t, Q, m)`` or None. ``Q`` is not re-orthogonalised (its drift is at the
    tolerance). Returns ``m`` of shape (K, 3) and ``Q`` of shape (K, 3, 3) at ``t_eval``
    (default ``[t_end]``; the times must lie between 0 and ``t_end``).
    """
    Jm = _inertia_matrix(J)
    Jinv = np.linalg.inv(Jm)
    torque = zero_torque if torque is None else torque
    t_end = float(t_end)
    t_eval = np.array([t_end]) if t_eval is None else np.atleast_1d(np.asarray(t_eval, float))
    y0 = np.concatenate([np.asarray(m0, dtype=np.float64),
                         np.asarray(Q0, dtype=np.float64).reshape(9)])
    if t_end == 0.0:
        Y = np.repeat(y0[None, :], t_eval.size, axis=0)
    else:
        def rhs(t, y):
            m, Q = y[:3], y[3:].reshape(3, 3)
            w = Jinv @ m
            dm = np.cross(m, w) + np.asarray(torque(t, Q, m), dtype=np.float64)
            dQ = Q @ hat(w)
            return np.concatenate([dm, dQ.reshape(9)])

        sol = solve_ivp(rhs, (0.0, t_end), y0, method="DOP853", t_eval=t_eval,
                        rtol=rtol, atol=atol)
        if not sol.success:
            raise RuntimeError(f"DOP853 failed: {sol.message}")
        Y = sol.y.T
    return Y[:, :3].copy(), Y[:, 3:].reshape(-1, 3, 3).copy()


# --------------------------------------------------------------------------------------------
# multiprecision reference: the linearly damped (or free) body with principal moments
# --------------------------------------------------------------------------------------------

class MPState(NamedTuple):
    """State at the requested time: float64 arrays ``m`` (3,), ``q`` (4,), and the same values
    as lists of mpmath numbers ``m_mp``, ``q_mp`` (at the working precision)."""
    m: NDArray[np.float64]
    q: NDArray[np.float64]
    m_mp: list
    q_mp: list


_GUARD_DIGITS = 15      # extra working digits
_TOL_GUARD = 8          # local tolerance 10^-(dps + _TOL_GUARD)


def _damped_rhs(inv_moments, c):
    """Right-hand side on y = (m1, m2, m3, q0, q1, q2, q3) in the current mpmath precision."""
    a1, a2, a3 = inv_moments

    def f(t, y):
        m1, m2, m3, q0, q1, q2, q3 = y
        w1, w2, w3 = a1 * m1, a2 * m2, a3 * m3
        h = mpmath.mpf(1) / 2
        return [m2 * w3 - m3 * w2 - c * m1,
                m3 * w1 - m1 * w3 - c * m2,
                m1 * w2 - m2 * w1 - c * m3,
                h * (-q1 * w1 - q2 * w2 - q3 * w3),
                h * (q0 * w1 + q2 * w3 - q3 * w2),
                h * (q0 * w2 + q3 * w1 - q1 * w3),
                h * (q0 * w3 + q1 * w2 - q2 * w1)]
    return f


def _taylor_coefficients(y, inv_moments, c, order):
    """Taylor coefficients ``y_0 .. y_order`` of the damped flow through ``y`` (exact recurrences).

    The vector field is quadratic, so with ``w_k = m_k / I`` (componentwise)::

        (k+1) m_{k+1} = sum_{j<=k} m_j x w_{k-j} - c m_k
        (k+1) q_{k+1} = 1/2 sum_{j<=k} q_j * (0, w_{k-j})

    (Cauchy products; automatic differentiation, no numerical derivatives).
    """
    a1, a2, a3 = inv_moments
    fdot = mpmath.fdot
    M = [[y[0]], [y[1]], [y[2]]]            # M[i][k]: component i of m_k
    W = [[a1 * y[0]], [a2 * y[1]], [a3 * y[2]]]
    P = [[y[3]], [y[4]], [y[5]], [y[6]]]    # P[i][k]: component i of q_k
    half = mpmath.mpf(1) / 2
    for k in range(order):
        # products sum_j x_j y_{k-j}: pair x[0..k] with reversed y[0..k]
        Wr = [W[i][k::-1] for i in range(3)]
        c1 = fdot(M[1], Wr[2]) - fdot(M[2], Wr[1])
        c2 = fdot(M[2], Wr[0]) - fdot(M[0], Wr[2])
        c3 = fdot(M[0], Wr[1]) - fdot(M[1], Wr[0])
        p0 = -fdot(P[1], Wr[0]) - fdot(P[2], Wr[1]) - fdot(P[3], Wr[2])
        p1 = fdot(P[0], Wr[0]) + fdot(P[2], Wr[2]) - fdot(P[3], Wr[1])
        p2 = fdot(P[0], Wr[1]) + fdot(P[3], Wr[0]) - fdot(P[1], Wr[2])
        p3 = fdot(P[0], Wr[2]) + fdot(P[1], Wr[1]) - fdot(P[2], Wr[0])
        inv = mpmath.mpf(1) / (k + 1)
        for i, ci in enumerate((c1, c2, c3)):
            mk1 = (ci - c * M[i][k]) * inv
            M[i].append(mk1)
        W[0].append(a1 * M[0][k + 1])
        W[1].append(a2 * M[1][k + 1])
        W[2].append(a3 * M[2][k + 1])
        for i, pi in enumerate((p0, p1, p2, p3)):
            P[i].append(half * pi * inv)
    return M + P                           # 7 lists of order+1 coefficients


def _taylor_integrate(y0, inv_moments, c, t, tol):
    """Fixed-order Taylor method with the step rule of A. Jorba and M. Zou, "A software package
    for the numerical integration of ODEs by means of high-order Taylor methods" (2005).

    Order ``N = ceil(-ln(tol) / 2) + 1`` (the order that minimises the work for a given
    tolerance when the step is a fixed fraction ``e^-2`` of the radius of convergence); step
    ``h = 0.9 min_{j=N-1,N} (tol / |y_j|)^(1/j)`` (relative to ``max(1, |y_0|)``), so the two
    last kept terms are below ``tol`` and the neglected tail, decaying geometrically at about
    ``e^-2`` per order, is far below it. Returns y(t).
    """
    N = int(mpmath.ceil(-mpmath.log(tol) / 2)) + 1
    y = list(y0)
    x = mpmath.mpf(0)
    t = mpmath.mpf(t)
    direction = 1 if t >= 0 else -1
    while x != t:
        coeffs = _taylor_coefficients(y, inv_moments, c, N)
        scale = max(mpmath.mpf(1), max(abs(v) for v in y))
        rho = None
        for j in (N - 1, N):
            size = max(abs(cf[j]) for cf in coeffs)
            if size == 0:
                continue
            r = (tol * scale / size) ** (mpmath.mpf(1) / j)
            rho = r if rho is None else min(rho, r)
        h = mpmath.mpf(1) if rho is None else mpmath.mpf("0.9") * rho
        remaining = abs(t - x)
        if h >= remaining:
            h, x_new = remaining, t
        else:
            x_new = x + direction * h
        hs = direction * h
        y = [_horner(cf, hs) for cf in coeffs]
        x = x_new
    return y


def _horner(coeffs, h):
    """``sum_k coeffs[k] h^k``."""
    acc = coeffs[-1]
    for a in reversed(coeffs[:-1]):
        acc = acc * h + a
    return acc


def _mp_list(x) -> list:
    """A vector of floats (taken exactly), strings or mpmath numbers as a list of mpf."""
    values = x.tolist() if isinstance(x, np.ndarray) else list(x)
    return [mpmath.mpf(v) for v in values]


def damped_reference_mp(m0: ArrayLike, q0: ArrayLike, inertia: ArrayLike, c, t,
                        dps: int = 40, method: str = "taylor") -> MPState:
    """The linearly damped body at time ``t`` to ``dps`` significant digits.

    Principal moments ``inertia = (I1, I2, I3)``, torque ``T_b = -c m``; state ``(m, q)`` with
    ``m' = m x w - c m``, ``q' = q * (0, w) / 2``, ``w = m / I``. ``m0``, ``q0``, ``inertia``,
    ``c``, ``t`` may be floats (taken exactly), strings or mpmath numbers; ``q0`` is normalised
    in the working precision (``dps`` + 15 digits).

    ``method="taylor"`` (default): a high-order Taylor method whose coefficients come from exact
    recurrences of the quadratic vector field (see ``_taylor_coefficients``), local tolerance
    ``10^-(dps+8)``; ``t`` of either sign. ``method="odefun"``: mpmath.odefun (its own Taylor
    solver) at the working precision, an independent cross-check (slower; ``t >= 0`` only).
    Returns :class:`MPState`.
    """
    if method not in ("taylor", "odefun"):
        raise ValueError(f"unknown method {method!r}")
    with mpmath.workdps(dps + _GUARD_DIGITS):
        mpf = mpmath.mpf
        m, q, moments = _mp_list(m0), _mp_list(q0), _mp_list(inertia)
        if len(m) != 3 or len(q) != 4 or len(moments) != 3:
            raise ValueError("m0 (3,), q0 (4,) and inertia (3,) expected")
        nq = mpmath.sqrt(mpmath.fsum(v * v for v in q))
        q = [v / nq for v in q]
        inv_moments = [1 / v for v in moments]
        c = mpf(c)
        t = mpf(t)
        y0 = m + q
        if method == "odefun" and t < 0:
            raise ValueError("method='odefun' integrates forward only (t >= 0)")
        if method == "taylor":
            tol = mpf(10) ** (-(dps + _TOL_GUARD))
            y = _taylor_integrate(y0, inv_moments, c, t, tol)
        else:
            y = mpmath.odefun(_damped_rhs(inv_moments, c), 0, y0)(t)
        y = list(y)
    m_mp, q_mp = y[:3], y[3:]
    return MPState(np.array([float(v) for v in m_mp]), np.array([float(v) for v in q_mp]),
                   m_mp, q_mp)


def free_reference_mp(m0: ArrayLike, q0: ArrayLike, inertia: ArrayLike, t,
                      dps: int = 40, method: str = "taylor") -> MPState:
    """The torque-free body at time ``t`` (:func:`damped_reference_mp` with ``c = 0``)."""
    return damped_reference_mp(m0, q0, inertia, 0, t, dps=dps, method=method)
