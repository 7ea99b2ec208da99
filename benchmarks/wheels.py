"""Reaction wheels: a Monte Carlo of spacecraft slews through frb.integrate against the same model
with scipy's solve_ivp (RK45, rtol 1e-9) body by body and with a vectorised numpy RK4, measured
side by side in one run (ratios; machines are noisy).

    python benchmarks/wheels.py [--bodies 1000] [--duration 600] [--h 0.1] [--ivp-bodies 10]
                                [--threads 0]

The model (Markley and Crassidis 2014; frb.wheels): N spacecraft, inertia tensors dispersed about
diag(120, 100, 80) kg m^2 (one per body), initial rates dispersed (0.02 rad/s per axis), four
wheels in a pyramid, the quaternion feedback kp = 2 N m, kd = 40 N m s with the gyroscopic
compensation, |u_i| <= 0.1 N m, |h_i| <= 4 N m s, slewing 60 degrees about (1, 1, 0). frb runs
it compiled (RK4 and YOSHIDA4: the law, the wheels and the per-body frames in the time loop; RK4
in its lane step, and, with frb._testing, also without it: each body's step on its own);
numpy RK4 is the same RK4 vectorised over the bodies (the same h); solve_ivp integrates one body
at a time (timed on --ivp-bodies bodies, scaled to the batch). The final attitudes of the three
are compared (they solve the same equations).
"""
from __future__ import annotations

import argparse
import time

import numpy as np
from scipy.integrate import solve_ivp

import frb
from frb.wheel_laws import quaternion_feedback

try:                                        # built with the meson option testing
    from frb import _testing
except ImportError:
    _testing = None

KP, KD, U_MAX, H_MAX = 2.0, 40.0, 0.1, 4.0
_B = np.arctan(np.sqrt(2.0))
PYRAMID = np.array([[np.sin(_B) * np.cos(a), np.sin(_B) * np.sin(a), np.cos(_B)]
                    for a in np.radians([45.0, 135.0, 225.0, 315.0])])
A = PYRAMID.T
A_PINV = np.linalg.pinv(A)
Q_REF = np.array([np.cos(np.pi / 6), np.sin(np.pi / 6) / np.sqrt(2), np.sin(np.pi / 6) / np.sqrt(2),
                  0.0])
CONJ = Q_REF * np.array([1.0, -1.0, -1.0, -1.0])


def bodies(n: int, seed: int = 7) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(J (n, 3, 3), m0 (n, 3), q0 (n, 4)) of the Monte Carlo."""
    rng = np.random.default_rng(seed)
    J = np.diag([120.0, 100.0, 80.0]) + rng.normal(scale=3.0, size=(n, 3, 3))
    J = 0.5 * (J + np.swapaxes(J, 1, 2))
    w0 = rng.normal(scale=0.02, size=(n, 3))
    return J, np.einsum("nij,nj->ni", J, w0), np.tile([1.0, 0.0, 0.0, 0.0], (n, 1))


def qmul(p: np.ndarray, q: np.ndarray) -> np.ndarray:
    p0, pv, q0, qv = p[..., :1], p[..., 1:], q[..., :1], q[..., 1:]
    return np.concatenate([p0 * q0 - np.sum(pv * qv, -1, keepdims=True),
                           p0 * qv + q0 * pv + np.cross(pv, qv)], -1)


def rates(q: np.ndarray, m: np.ndarray, h: np.ndarray, Jinv: np.ndarray
          ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(q', m', h') of the model for bodies (..., 4), (..., 3), (..., 4)."""
    w = np.einsum("...ij,...j->...i", Jinv, m)
    qn = q / np.linalg.norm(q, axis=-1, keepdims=True)
    e = qmul(CONJ, qn)
    s = np.where(e[..., :1] < 0, -1.0, 1.0)
    Ah = h @ A.T
    L = -KP * s * e[..., 1:] - KD * w + np.cross(w, m + Ah)
    u = np.clip(-L @ A_PINV.T, -U_MAX, U_MAX)
    u = np.where(((h >= H_MAX) & (u > 0)) | ((h <= -H_MAX) & (u < 0)), 0.0, u)
    dm = np.cross(m + Ah, w) - u @ A.T
    dq = 0.5 * qmul(q, np.concatenate([np.zeros(w.shape[:-1] + (1,)), w], -1))
    return dq, dm, u


def numpy_rk4(J: np.ndarray, m: np.ndarray, q: np.ndarray, h: float, nsteps: int
              ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The vectorised numpy RK4 of the model (the state q, m, h; q normalised after each step,
    as frb's RK4; the limits applied after the step)."""
    Jinv = np.linalg.inv(J)
    hw = np.zeros((len(m), 4))
    for _ in range(nsteps):
        k1 = rates(q, m, hw, Jinv)
        k2 = rates(q + 0.5 * h * k1[0], m + 0.5 * h * k1[1], hw + 0.5 * h * k1[2], Jinv)
        k3 = rates(q + 0.5 * h * k2[0], m + 0.5 * h * k2[1], hw + 0.5 * h * k2[2], Jinv)
        k4 = rates(q + h * k3[0], m + h * k3[1], hw + h * k3[2], Jinv)
        q = q + h / 6 * (k1[0] + 2 * k2[0] + 2 * k3[0] + k4[0])
        q /= np.linalg.norm(q, axis=1, keepdims=True)
        m = m + h / 6 * (k1[1] + 2 * k2[1] + 2 * k3[1] + k4[1])
        h_new = hw + h / 6 * (k1[2] + 2 * k2[2] + 2 * k3[2] + k4[2])
        clipped = np.clip(h_new, -H_MAX, H_MAX)
        m = m + (h_new - clipped) @ A.T
        hw = clipped
    return q, m, hw


def ivp(J: np.ndarray, m: np.ndarray, q: np.ndarray, duration: float) -> np.ndarray:
    """Final quaternions by solve_ivp (RK45, rtol 1e-9), body by body."""
    out = []
    for Jb, mb, qb in zip(J, m, q):
        Jinv = np.linalg.inv(Jb)

        def f(t: float, y: np.ndarray) -> np.ndarray:
            dq, dm, u = rates(y[:4], y[4:7], y[7:], Jinv)
            return np.concatenate([dq, dm, u])

        sol = solve_ivp(f, (0.0, duration), np.concatenate([qb, mb, np.zeros(4)]), method="RK45",
                        rtol=1e-9, atol=1e-12)
        y = sol.y[:4, -1]
        out.append(y / np.linalg.norm(y))
    return np.array(out)


def frb_run(J: np.ndarray, m: np.ndarray, q: np.ndarray, h: float, nsteps: int, method: str,
            threads: int | None) -> frb.Trajectory:
    law = quaternion_feedback(Q_REF, KP, KD, u_max=U_MAX, h_max=H_MAX, gyroscopic=True)
    return frb.integrate(m, q, J, h, nsteps, method=method, wheels=frb.Wheels(PYRAMID, np.zeros(4)),
                         wheel_law=law, save_every=None, threads=threads)


def angle(q1: np.ndarray, q2: np.ndarray) -> np.ndarray:
    """Angles (rad) between the rotations of quaternions."""
    return 2 * np.arccos(np.clip(np.abs(np.sum(q1 * q2, axis=-1)), 0.0, 1.0))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--bodies", type=int, default=1000)
    ap.add_argument("--duration", type=float, default=600.0)
    ap.add_argument("--h", type=float, default=0.1)
    ap.add_argument("--ivp-bodies", type=int, default=10)
    ap.add_argument("--threads", type=int, default=0, help="frb's threads (0: its default)")
    a = ap.parse_args()
    n, nsteps = a.bodies, int(round(a.duration / a.h))
    J, m0, q0 = bodies(n)
    threads = a.threads or None
    print(f"{n} bodies, {a.duration:g} s slews at h = {a.h:g} s ({nsteps} steps), "
          f"frb threads {frb.get_num_threads() if threads is None else threads}")
    timings = {}
    for method in ("RK4", "YOSHIDA4"):
        frb_run(J[:2], m0[:2], q0[:2], a.h, 10, method, threads)     # warm
        t0 = time.perf_counter()
        tr = frb_run(J, m0, q0, a.h, nsteps, method, threads)
        timings[f"frb {method}"] = (time.perf_counter() - t0, tr.q[-1])
    if _testing is not None:
        # RK4 without its lane step (each body's step on its own; the same results bit for bit)
        _testing.lane_steps_use(0)
        t0 = time.perf_counter()
        tr = frb_run(J, m0, q0, a.h, nsteps, "RK4", threads)
        timings["frb RK4 one-body"] = (time.perf_counter() - t0, tr.q[-1])
        _testing.lane_steps_use(1)
        assert np.array_equal(tr.q[-1], timings["frb RK4"][1])
    t0 = time.perf_counter()
    qn, _, _ = numpy_rk4(J, m0, q0, a.h, nsteps)
    timings["numpy RK4"] = (time.perf_counter() - t0, qn)
    k = min(a.ivp_bodies, n)
    t0 = time.perf_counter()
    qi = ivp(J[:k], m0[:k], q0[:k], a.duration)
    ivp_time = (time.perf_counter() - t0) * n / k
    print(f"\n{'route':<22}{'seconds':>10}{'largest angle to solve_ivp (rad)':>36}")
    for name, (sec, q) in timings.items():
        print(f"{name:<22}{sec:>10.3f}{angle(q[:k], qi).max():>36.2e}")
    print(f"{'solve_ivp RK45 1e-9':<22}{ivp_time:>10.1f}   (timed on {k} bodies, x {n / k:g})")
    final = np.degrees(angle(timings['frb RK4'][1], Q_REF))
    print(f"largest angle frb RK4 - numpy RK4: {angle(timings['frb RK4'][1], qn).max():.2e} rad; "
          f"final error to q_ref: median {np.median(final):.2e} deg, "
          f"{int(np.sum(final < 1.0))} of {n} bodies within 1 degree")
    print("\nratios (time of the other route / frb's):")
    for name in ("frb RK4", "frb YOSHIDA4", "frb RK4 one-body"):
        if name not in timings:
            continue
        sec = timings[name][0]
        print(f"  {name:<14} vs solve_ivp {ivp_time / sec:8.1f} x   vs numpy RK4 "
              f"{timings['numpy RK4'][0] / sec:6.1f} x")


if __name__ == "__main__":
    main()
