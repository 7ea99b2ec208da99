"""Typical user code of frb: type-checked by mypy and run by tests/test_typing.py.

Each section is something a user writes on a first day with frb; mypy checks it against the
annotations of the installed package (py.typed), so that an annotation that is wrong for real
use fails the test. Kept short and fast (well under a second).
"""
from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

import frb
from frb import splitting

inertia = np.array([1.0, 2.0, 3.0])
m0 = np.array([0.3, -0.5, 0.8])
q0 = np.array([1.0, 0.0, 0.0, 0.0])          # unit quaternion, scalar first

# one body, one exact step (quaternion and matrix forms); lists are array-like too
m1, q1 = frb.quat_step(m0, q0, 0.1, inertia)
m1b, Q1 = frb.frb_step([0.3, -0.5, 0.8], np.eye(3), 0.1, [1.0, 2.0, 3.0], quadrature=4)
norm_change: float = abs(float(np.linalg.norm(m1)) - float(np.linalg.norm(m0)))

# a batch of bodies, one step each, with a step per body
rng = np.random.default_rng(1)
m_batch = rng.normal(size=(8, 3))
q_batch = np.tile(q0, (8, 1))
mb, qb = frb.quat_step(m_batch, q_batch, np.full(8, 0.05), inertia, threads=1)
energies: NDArray[np.float64] = frb.kinetic_energy(mb, inertia)

# frb.integrate with a built-in torque, then reading the Trajectory
top = frb.torques.heavy_top(1.0, [0.0, 0.0, 0.5])
tr: frb.Trajectory = frb.integrate(m0, q0, inertia, 0.01, 100, method="RKN6_14", torque=top,
                                   save_every=10)
energy: NDArray[np.float64] = tr.energy
drift = float(np.max(np.abs(energy - energy[0])))
Q_final: NDArray[np.float64] = tr.Q[-1]
times: NDArray[np.float64] = tr.t
print(f"{tr!r}: energy drift {drift:.2e}, final Q[2, 2] = {Q_final[2, 2]:.6f}, "
      f"t_end = {times[-1]:g}")


# a user torque: a vectorised callable torque(t, Q) -> T_b of shape (N, 3)
def damping(t: float, Q: NDArray[np.float64]) -> NDArray[np.float64]:
    return -0.01 * np.ones((Q.shape[0], 3)) * np.exp(-t)


tr2 = frb.integrate(m_batch, q_batch, inertia, 0.01, 50, method="RK4", torque=damping,
                    save_every="final")
m_end: NDArray[np.float64] = tr2.m[-1]

# a splitting method of frb.splitting with a constant field
field = splitting.constant_field([0.0, 0.0, 1.0])
st = splitting.integrate(m0, np.eye(3), inertia, 0.01, 100, torque=field, method="STRANG")
m_last: NDArray[np.float64] = st.m[-1]

# the discrete Moser-Veselov baseline
m_d, q_d = frb.dmv_integrate(m0, q0, inertia, 0.01, 100, order=4)

# conversion to and from scipy's Rotation (scalar-last quaternions there)
rot = frb.to_rotation(q1)
q_back: NDArray[np.float64] = frb.from_rotation(rot)
Q_back = frb.from_rotation(rot, form="matrix")

# a work-precision comparison
comparison = frb.compare(["EXACT", "DMV2"], bodies=4, t_final=1.0, steps=(5, 10), min_time=0.0)
best = comparison.best(1e-3)
if best is not None:
    method, nsteps, cost_ns = best
    print(f"cheapest to 1e-3: {method} with {nsteps} steps ({cost_ns:.0f} ns a body)")
print(comparison.to_markdown().splitlines()[0])

# one of the published experiments
result = frb.experiments.run_experiment("ganapathi-symmetric", nsteps=30)
error: float = result.numbers["exact_w_error"]
print(result.title, f"{error:.1e}")
