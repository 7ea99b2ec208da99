"""A spacecraft in the style of the published experiments (frb's own problem): a full inertia
tensor on a circular orbit (gravity gradient), a momentum wheel, detumbled by damping and slewed
by a PD attitude law; every torque compiled.

Three phases, each a call of :func:`frb.integrate` continued from the last (``t0``):

1. coast: the wheel and the gravity gradient only;
2. detumble: plus linear damping ``-c m``;
3. slew: the PD law ``-kp s e_v - kd w`` towards ``q_ref`` instead of the damping.

Prints the attitude error and the body rates at the end of each phase, the invariants of a
torque-free gyrostat run (the energy ``m . J^-1 m / 2``, which the splittings keep to rounding,
and the total momentum ``Q (m + h)``, kept to the method's order), and a work-precision table of
the slew (several methods and steps against ``YOSHIDA4`` at a small step).
"""
from __future__ import annotations

import time
from os import PathLike

import numpy as np

from ..engine import integrate
from ..reporting import (Experiment, Option, Result, Table, method_styles, pyplot, save_figure,
                         steps_of)
from ..torques import attitude_control, gravity_gradient, linear_damping, rotor

#: Inertia tensor (kg m^2) in the body frame of the attitude, wheel momentum (N m s, body
#: frame), orbit rate (rad/s, about 95 minutes), initial rates (rad/s) and attitude.
INERTIA = ((120.0, 5.0, -3.0), (5.0, 100.0, 2.0), (-3.0, 2.0, 80.0))
WHEEL = (0.0, 0.0, 2.0)
ORBIT_RATE = 1.1e-3
W0 = (0.05, -0.03, 0.04)
Q0 = (1.0, 0.0, 0.0, 0.0)
#: The slew target: 60 degrees about (1, 1, 0) / sqrt(2).
Q_REF = (np.cos(np.pi / 6), np.sin(np.pi / 6) / np.sqrt(2), np.sin(np.pi / 6) / np.sqrt(2), 0.0)


def _error_angle(q: np.ndarray) -> np.ndarray:
    """Angle (degrees) of the rotation from q_ref to q: 2 acos |e0|, e = conj(q_ref) q."""
    e0 = q @ np.array(Q_REF)
    return np.degrees(2.0 * np.arccos(np.clip(np.abs(e0), 0.0, 1.0)))


def run(h: float = 0.5, coast: float = 300.0, detumble: float = 900.0, slew: float = 1200.0,
        damping: float = 0.01, kp: float = 1.0, kd: float = 25.0) -> Result:
    """A spacecraft (frb's own problem): inertia tensor J = [[120, 5, -3], [5, 100, 2], [-3, 2,
    80]] kg m^2, a wheel of momentum h = (0, 0, 2) N m s, a circular orbit of rate 1.1e-3 rad/s
    (gravity gradient), initial rates (0.05, -0.03, 0.04) rad/s. Coasts, is detumbled by the
    damping -c m, then slewed by the PD law towards 60 degrees about (1, 1, 0) (method YOSHIDA4,
    step h, all torques compiled). Prints the attitude error and the rates after each phase, the
    invariants of the torque-free gyrostat (energy and Q (m + h) to rounding: EXACT is the
    gyrostat's exact flow, which the splittings take as their free part when the rotor acts
    alone) and a work-precision table of the slew."""
    for name, duration in (("coast", coast), ("detumble", detumble), ("slew", 16 * slew)):
        steps_of(duration, h, f"{name} / h" if name != "slew" else "16 slew / h (the reference)")
    J = np.array(INERTIA)
    m0 = J @ np.array(W0)
    wheel, gg = rotor(WHEEL), gravity_gradient(ORBIT_RATE)
    phases = [("coast", coast, wheel + gg), ("detumble", detumble, wheel + gg + linear_damping(damping)),
              ("slew", slew, wheel + gg + attitude_control(Q_REF, kp, kd))]
    t, m, q = [np.zeros(1)], [m0[None]], [np.array(Q0)[None]]
    table = Table("the phases (YOSHIDA4)", ["phase", "t end (s)", "|w| (rad/s)",
                                           "attitude error (deg)"], [])
    for name, duration, torque in phases:
        tr = integrate(m[-1][-1], q[-1][-1], J, h, int(round(duration / h)), method="YOSHIDA4",
                       torque=torque, t0=float(t[-1][-1]))
        t.append(tr.t[1:])
        m.append(tr.m[1:])
        q.append(tr.q[1:])
        w_end = np.linalg.solve(J, tr.m[-1])
        table.rows.append([name, float(tr.t[-1]), float(np.linalg.norm(w_end)),
                           float(_error_angle(tr.q[-1]))])
    t_all, m_all, q_all = np.concatenate(t), np.concatenate(m), np.concatenate(q)
    rates = np.linalg.solve(J, m_all.T).T
    # the torque-free gyrostat: energy and total momentum over the coast time
    n = int(round(coast / h))
    invariants = Table("torque-free gyrostat over the coast time: largest relative change",
                       ["method", "energy m.J^-1 m/2", "|Q (m + h)|"], [])
    for meth in ("EXACT", "STRANG", "YOSHIDA4", "RKN6_14"):
        tr = integrate(m0, Q0, J, h, n, method=meth, torque=wheel)
        energy = tr.kinetic_energy
        total = tr.spatial_momentum
        invariants.rows.append([meth, float(np.abs(energy / energy[0] - 1).max()),
                                float(np.abs(total - total[0]).max() / np.linalg.norm(total[0]))])
    # work-precision of the slew from the detumbled state
    start_m, start_q, start_t = m[2][-1], q[2][-1], float(t[2][-1])
    law = phases[2][2]
    # the largest error over the slew, at the states 20 s apart (4 h divides 20 s)
    keep = int(round(20.0 / h))
    ref = integrate(start_m, start_q, J, h / 16, 16 * int(round(slew / h)), method="YOSHIDA4",
                    torque=law, t0=start_t, save_every=16 * keep)
    work = Table("slew: largest error over the slew (every 20 s) against YOSHIDA4 at h/16",
                 ["method", "h (s)", "error of q", "error of m", "time (ms)"], [])
    curves: dict[str, list[tuple[float, float]]] = {}
    for meth in ("STRANG", "YOSHIDA4", "RKN6_14", "RK4", "DMV4"):
        for k in (1, 2, 4):
            hk = h * k
            t_start = time.perf_counter()
            tr = integrate(start_m, start_q, J, hk, int(round(slew / hk)), method=meth, torque=law,
                           t0=start_t, save_every=keep // k)
            ms = 1e3 * (time.perf_counter() - t_start)
            dq = np.minimum(np.abs(tr.q - ref.q).max(axis=1), np.abs(tr.q + ref.q).max(axis=1)).max()
            dm = float(np.abs(tr.m - ref.m).max())
            work.rows.append([meth, hk, float(dq), dm, ms])
            curves.setdefault(meth, []).append((ms, max(float(dq), 1e-17)))
    numbers = {"final_error_deg": float(_error_angle(q_all[-1])),
               "final_rate": float(np.linalg.norm(rates[-1])),
               "detumbled_rate": float(table.rows[1][2]),
               "gyrostat_energy_change": float(max(r[1] for r in invariants.rows)),
               "gyrostat_momentum_change": float(max(r[2] for r in invariants.rows))}
    return Result(
        "satellite", "a spacecraft: coast, detumble by damping, slew by a PD law",
        [("inertia tensor (kg m^2)", INERTIA, "frb's choice"), ("wheel h (N m s)", WHEEL, "frb"),
         ("orbit rate (rad/s)", ORBIT_RATE, "frb (low Earth orbit)"), ("w0 (rad/s)", W0, "frb"),
         ("q_ref", tuple(round(float(x), 6) for x in Q_REF), "frb: 60 degrees about (1, 1, 0)"),
         ("damping c (1/s)", damping, "frb"), ("kp (N m), kd (N m s)", (kp, kd), "frb"),
         ("h (s)", h, "frb")],
        [table, invariants, work], numbers,
        data={"t": t_all, "error": _error_angle(q_all), "rates": rates,
              "phase_ends": [float(r[1]) for r in table.rows], "curves": curves})


def plot(result: Result, path: str | PathLike[str]) -> None:
    plt = pyplot()
    d = result.data
    fig, axes = plt.subplots(1, 3, figsize=(14, 4))
    ax = axes[0]
    ax.plot(d["t"], d["error"], lw=0.9)
    ax.set_xlabel("t (s)")
    ax.set_ylabel("attitude error to q_ref (degrees)")
    ax = axes[1]
    for i, style in enumerate(("-", "--", ":")):
        ax.plot(d["t"], d["rates"][:, i], style, lw=0.9, label=f"w{i + 1}")
    ax.set_xlabel("t (s)")
    ax.set_ylabel("body rates (rad/s)")
    ax.legend(fontsize=8)
    for ax in axes[:2]:
        for x in d["phase_ends"][:-1]:
            ax.axvline(x, color="gray", lw=0.6)
        ax.grid(True, alpha=0.3)
    ax = axes[2]
    styles = method_styles(list(d["curves"]))
    for meth, pts in d["curves"].items():
        ms, err = zip(*pts)
        ax.loglog(ms, err, **styles[meth])
    ax.set_xlabel("time (ms)")
    ax.set_ylabel("largest error of q over the slew")
    ax.legend(fontsize=8)
    ax.grid(True, which="both", alpha=0.3)
    save_figure(fig, path)


_OPTIONS = (Option("h", float, 0.5, "step in seconds (frb's choice: 0.5; at most 5: the slew's "
                   "errors are compared every 20 s)", low=0, strict=True, high=5.0),
            Option("coast", float, 300.0, "coast time, s", low=0, strict=True),
            Option("detumble", float, 900.0, "detumbling time, s", low=0, strict=True),
            Option("slew", float, 1200.0, "slew time, s", low=0, strict=True),
            Option("damping", float, 0.01, "damping rate c, 1/s", low=0),
            Option("kp", float, 1.0, "proportional gain, N m", low=0),
            Option("kd", float, 25.0, "derivative gain, N m s", low=0))

EXPERIMENT: Experiment = Experiment.from_run("satellite", "frb's own spacecraft problem",
                                 "a spacecraft: tensor, wheel, gravity gradient, damping, PD slew",
                                 _OPTIONS, run, plot)
