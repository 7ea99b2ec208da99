"""Torques of the angular momentum: a vectorised numpy user torque ``torque(t, Q, m)`` against
its built-in (compiled) equivalent, per step for 1e4 bodies, measured side by side in one run
(ratios; machines are noisy).

    python benchmarks/momentum_torques.py [--bodies 10000] [--steps 20] [--repeat 5]

The pairs: linear damping ``-c m``; a PD attitude law plus a rotor. Methods: RK4 (4 torque
calls a step) and YOSHIDA4 (three kicks a step; a user torque of m takes one RK4 step a kick,
the built-in terms their exact affine flow).
"""
from __future__ import annotations

import argparse
import time

import numpy as np

import frb
from frb.torques import attitude_control, linear_damping, rotor


def best(f, repeat: int) -> float:
    f()
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        f()
        times.append(time.perf_counter() - t0)
    return min(times)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--bodies", type=int, default=10000)
    ap.add_argument("--steps", type=int, default=20)
    ap.add_argument("--repeat", type=int, default=5)
    a = ap.parse_args()
    rng = np.random.default_rng(0)
    n = a.bodies
    m0 = rng.normal(size=(n, 3))
    q0 = rng.normal(size=(n, 4))
    q0 /= np.linalg.norm(q0, axis=1, keepdims=True)
    inertia = np.array([1.0, 2.0, 3.0])
    q_ref = np.array([np.cos(0.3), np.sin(0.3), 0.0, 0.0])
    h = np.array([0.0, 0.0, 0.5])

    def user_damping(t, Q, m):
        return -0.3 * m

    def user_pd_rotor(t, Q, m):
        # e = conj(q_ref) q from the matrices: the vector part of q_ref* q via Q_ref^T Q
        R = frb.quat_to_matrix(q_ref).T @ Q
        ev = 0.5 * np.stack([R[:, 2, 1] - R[:, 1, 2], R[:, 0, 2] - R[:, 2, 0],
                             R[:, 1, 0] - R[:, 0, 1]], axis=1)
        tr = R[:, 0, 0] + R[:, 1, 1] + R[:, 2, 2]
        s = np.sqrt(np.maximum(1.0 + tr, 0.0)) / 2      # e0 >= 0: s = +1 in the law
        ev = ev / np.maximum(2 * s, 1e-300)[:, None] * 1.0
        w = m / inertia
        return -0.5 * ev - 0.2 * w + np.cross(h, w)

    pairs = [("damping", linear_damping(0.3), user_damping),
             ("PD law + rotor", attitude_control(q_ref, 0.5, 0.2) + rotor(h), user_pd_rotor)]
    print(f"{n} bodies, {a.steps} steps; time per step (ms), best of {a.repeat}")
    print(f"{'torque':16s} {'method':9s} {'built-in':>9s} {'user':>9s} {'ratio':>6s}")
    for name, builtin, user in pairs:
        for method in ("RK4", "YOSHIDA4"):
            tb = best(lambda: frb.integrate(m0, q0, inertia, 0.01, a.steps, method=method,
                                            torque=builtin, save_every=None, threads=1), a.repeat)
            tu = best(lambda: frb.integrate(m0, q0, inertia, 0.01, a.steps, method=method,
                                            torque=user, save_every=None, threads=1), a.repeat)
            print(f"{name:16s} {method:9s} {1e3 * tb / a.steps:9.3f} {1e3 * tu / a.steps:9.3f} "
                  f"{tu / tb:6.2f}")


if __name__ == "__main__":
    main()
