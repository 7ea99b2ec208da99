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

Then the same spacecraft with four reaction wheels in a pyramid (:class:`frb.Wheels`, the wheel
momenta states of the compiled loop; Markley and Crassidis 2014, section 7.2): a detumble by
the wheels (the rate feedback ``-Kd w``), a slew by the quaternion feedback realised through
the wheels (``frb.wheel_laws.quaternion_feedback`` with gain matrices ``kp = k J``, the
gyroscopic term, limits on the motor torques and the wheel momenta, both reached), the gravity
gradient acting throughout; a Monte Carlo of slews over dispersed inertia tensors and initial
rates (the spread of the settling time); the drift of ``Q (m + A h)`` without external torque;
and a work-precision table of the wheel slew.
"""
from __future__ import annotations

import math
import time
from os import PathLike
from typing import Any

import numpy as np

from .. import _validate
from ..engine import integrate
from ..reporting import (Experiment, Option, Result, Table, method_styles, pyplot, save_figure,
                         steps_of)
from ..torques import attitude_control, gravity_gradient, linear_damping, rotor
from ..wheel_laws import QuaternionFeedback, quaternion_feedback
from ..wheels import Wheels

#: Inertia tensor (kg m^2) in the body frame of the attitude, wheel momentum (N m s, body
#: frame), orbit rate (rad/s, about 95 minutes), initial rates (rad/s) and attitude.
INERTIA = ((120.0, 5.0, -3.0), (5.0, 100.0, 2.0), (-3.0, 2.0, 80.0))
WHEEL = (0.0, 0.0, 2.0)
ORBIT_RATE = 1.1e-3
W0 = (0.05, -0.03, 0.04)
Q0 = (1.0, 0.0, 0.0, 0.0)
#: The slew target: 60 degrees about (1, 1, 0) / sqrt(2).
Q_REF = (np.cos(np.pi / 6), np.sin(np.pi / 6) / np.sqrt(2), np.sin(np.pi / 6) / np.sqrt(2), 0.0)
#: Four reaction wheels in a pyramid about the body z axis (each axis 54.74 degrees from z,
#: cos = 1/sqrt(3), at azimuths 45, 135, 225, 315 degrees), their axial inertia (kg m^2), the
#: initial rates of the wheel runs (rad/s), the gains kp = K_WHEELS J (N m), kd = C_WHEELS J
#: (N m s): a natural frequency of about 0.05 rad/s, damping ratio 0.9.
_BETA = np.arctan(np.sqrt(2.0))
PYRAMID = tuple(tuple(float(x) for x in (np.sin(_BETA) * np.cos(a), np.sin(_BETA) * np.sin(a),
                                         np.cos(_BETA)))
                for a in np.radians([45.0, 135.0, 225.0, 315.0]))
WHEEL_INERTIA = 0.004
W0_WHEELS = (0.006, -0.004, 0.005)
K_WHEELS, C_WHEELS = 0.005, 0.09


def _error_angle(q: np.ndarray) -> np.ndarray:
    """Angle (degrees) of the rotation from q_ref to q: 2 acos |e0|, e = conj(q_ref) q."""
    e0 = q @ np.array(Q_REF)
    return np.degrees(2.0 * np.arccos(np.clip(np.abs(e0), 0.0, 1.0)))


def run(h: float = 0.5, coast: float = 300.0, detumble: float = 900.0, slew: float = 1200.0,
        damping: float = 0.01, kp: float = 1.0, kd: float = 25.0, bodies: int = 1000,
        u_max: float = 0.05, h_max: float = 1.0) -> Result:
    """A spacecraft (frb's own problem): inertia tensor J = [[120, 5, -3], [5, 100, 2], [-3, 2,
    80]] kg m^2, a wheel of momentum h = (0, 0, 2) N m s, a circular orbit of rate 1.1e-3 rad/s
    (gravity gradient), initial rates (0.05, -0.03, 0.04) rad/s. Coasts, is detumbled by the
    damping -c m, then slewed by the PD law towards 60 degrees about (1, 1, 0) (method YOSHIDA4,
    step h, all torques compiled). Prints the attitude error and the rates after each phase, the
    invariants of the torque-free gyrostat (energy and Q (m + h) to rounding: EXACT is the
    gyrostat's exact flow, which the splittings take as their free part when the rotor acts
    alone) and a work-precision table of the slew. Then with four reaction wheels in a pyramid
    (axial inertia 0.004 kg m^2, limits u_max and h_max): a 300 s detumble by the wheels from
    (0.006, -0.004, 0.005) rad/s, the slew (quaternion feedback kp = 0.005 J, kd = 0.09 J,
    gyroscopic term), a Monte Carlo of ``bodies`` slews over dispersed tensors and rates (RK4),
    Q (m + A h) without external torque (STRANG) and a work-precision table of the wheel slew."""
    for name, duration in (("coast", coast), ("detumble", detumble), ("slew", slew),
                           ("slew", 16 * slew)):
        steps_of(duration, h, f"{name} / h" if duration != 16 * slew else
                 f"slew = {_validate.fmt(slew)}: 16 slew / h (the steps of the reference)")
    # the slew's errors are compared every 20 s with the steps h, 2 h and 4 h: 4 h divides 20 s
    fifths = 5.0 / h
    if abs(fifths - round(fifths)) > 1e-9 * fifths:
        raise ValueError(f"h = {_validate.fmt(h)} must divide 5 s (h = 5 / j: 5, 2.5, 1.25, 1, "
                         "0.5, ...): the slew's errors are compared every 20 s with the steps "
                         "h, 2 h and 4 h")
    J = np.array(INERTIA)
    # the PD law resolved by the step: its rates sqrt(kp / I) and kd / I at most 1 / h
    i_min = float(np.linalg.eigvalsh(J)[0])
    # and the damping's rate c at most 1 / h
    for name, value, rate, formula in (
            ("kp", kp, math.sqrt(kp / i_min), "the law's rate sqrt(kp / I_min)"),
            ("kd", kd, kd / i_min, "the law's rate kd / I_min"),
            ("damping", damping, damping, "the damping rate c")):
        if h * rate > 1.0:
            raise ValueError(f"{name} = {_validate.fmt(value)} is too stiff for h = "
                             f"{_validate.fmt(h)}: {formula} = {_validate.fmt(rate)} 1/s exceeds "
                             f"1 / h (I_min = {_validate.fmt(i_min)} kg m^2); lower {name} or h")
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
    wheel_tables, wheel_numbers, wheel_data = _with_wheels(h, slew, bodies, u_max, h_max)
    numbers.update(wheel_numbers)
    return Result(
        "satellite", "a spacecraft: coast, detumble by damping, slew by a PD law; with wheels",
        [("inertia tensor (kg m^2)", INERTIA, "frb's choice"), ("wheel h (N m s)", WHEEL, "frb"),
         ("orbit rate (rad/s)", ORBIT_RATE, "frb (low Earth orbit)"), ("w0 (rad/s)", W0, "frb"),
         ("q_ref", tuple(round(float(x), 6) for x in Q_REF), "frb: 60 degrees about (1, 1, 0)"),
         ("damping c (1/s)", damping, "frb"), ("kp (N m), kd (N m s)", (kp, kd), "frb"),
         ("h (s)", h, "frb"),
         ("reaction wheels", "4 in a pyramid, axes 54.74 deg from z", "frb"),
         ("wheel axial inertia (kg m^2)", WHEEL_INERTIA, "frb"),
         ("w0 of the wheel runs (rad/s)", W0_WHEELS, "frb"),
         ("wheel law kp = k J, kd = c J", (K_WHEELS, C_WHEELS), "frb"),
         ("u_max (N m), h_max (N m s)", (u_max, h_max), "frb"),
         ("Monte Carlo bodies", bodies, "frb")],
        [table, invariants, work] + wheel_tables, numbers,
        data={"t": t_all, "error": _error_angle(q_all), "rates": rates,
              "phase_ends": [float(r[1]) for r in table.rows], "curves": curves, **wheel_data})


def _wheel_law(q_ref: tuple[float, ...], J: np.ndarray, u_max: float, h_max: float,
               slew: bool = True) -> QuaternionFeedback:
    """The quaternion feedback through the wheels: the slew (kp = K_WHEELS J), or the detumble
    (kp = 0: the rate feedback alone)."""
    return quaternion_feedback(q_ref, K_WHEELS * J if slew else 0.0, C_WHEELS * J, u_max=u_max,
                               h_max=h_max, gyroscopic=True)


def _with_wheels(h: float, slew: float, bodies: int, u_max: float, h_max: float
                 ) -> tuple[list[Table], dict[str, float], dict[str, Any]]:
    """The spacecraft with four wheels: detumble and slew (YOSHIDA4), the Monte Carlo of slews,
    the drift of Q (m + A h), the work-precision of the slew."""
    J = np.array(INERTIA)
    gg = gravity_gradient(ORBIT_RATE)
    detumble = 300.0
    wheel_inertia = np.full(4, WHEEL_INERTIA)
    # 1. detumble by the wheels, then the slew, one run continued from the other
    m0, h0 = J @ np.array(W0_WHEELS), np.zeros(4)
    first = integrate(m0, Q0, J, h, int(round(detumble / h)), method="YOSHIDA4", torque=gg,
                      wheels=Wheels(PYRAMID, h0, inertia=wheel_inertia),
                      wheel_law=_wheel_law(Q0, J, u_max, h_max, slew=False))
    second = integrate(first.m[-1], first.q[-1], J, h, int(round(slew / h)), method="YOSHIDA4",
                       torque=gg, wheels=Wheels(PYRAMID, first.wheel_momentum[-1],
                                                inertia=wheel_inertia),
                       wheel_law=_wheel_law(Q_REF, J, u_max, h_max), t0=float(first.t[-1]))
    t = np.concatenate([first.t, second.t[1:]])
    hw = np.concatenate([first.wheel_momentum, second.wheel_momentum[1:]])
    rpm = hw / WHEEL_INERTIA * 60.0 / (2.0 * np.pi)
    torque = np.diff(hw, axis=0) / h             # the motor torques (mean over each step)
    error = np.concatenate([np.full(len(first.t), np.nan), _error_angle(second.q[1:])])
    phases = Table("with 4 wheels (YOSHIDA4, gravity gradient): detumble by the wheels, slew",
                   ["phase", "t end (s)", "|w| (rad/s)", "attitude error (deg)",
                    "largest |h_i| (N m s)", "largest |u_i| (N m)"], [])
    n1 = len(first.t) - 1
    for name, tr, part in (("detumble", first, torque[:n1]), ("slew", second, torque[n1:])):
        w = np.linalg.solve(J, tr.m[-1])
        phases.rows.append([name, float(tr.t[-1]), float(np.linalg.norm(w)),
                            float(_error_angle(tr.q[-1])), float(np.abs(tr.wheel_momentum).max()),
                            float(np.abs(part).max())])
    # 2. Monte Carlo: dispersed tensors (5 % a component, symmetric) and initial rates
    rng = np.random.default_rng(2014)
    Jn = J * (1.0 + 0.05 * rng.standard_normal((bodies, 3, 3)))
    Jn = 0.5 * (Jn + np.swapaxes(Jn, 1, 2))
    w0 = 0.003 * rng.standard_normal((bodies, 3))
    keep = max(1, int(round(1.0 / h)))
    start = time.perf_counter()
    mc = integrate(np.einsum("nij,nj->ni", Jn, w0), np.tile(Q0, (bodies, 1)), Jn, h,
                   int(round(slew / h)), method="RK4", torque=gg,
                   wheels=Wheels(PYRAMID, np.zeros(4)), wheel_law=_wheel_law(Q_REF, J, u_max, h_max),
                   save_every=keep)
    mc_seconds = time.perf_counter() - start
    mc_error = _error_angle(mc.q)
    settle = np.array([_settling_time(mc.t, mc_error[:, j]) for j in range(bodies)])
    done = settle[np.isfinite(settle)]
    spread = Table(f"Monte Carlo of {bodies} slews (RK4, h = {h:g} s, {mc_seconds:.2f} s): time "
                   "to stay within 1 degree of q_ref", ["quantity", "value"],
                   [["settled within the slew", f"{len(done)} of {bodies}"],
                    ["median (s)", float(np.median(done)) if len(done) else float("nan")],
                    ["5 % (s)", float(np.percentile(done, 5)) if len(done) else float("nan")],
                    ["95 % (s)", float(np.percentile(done, 95)) if len(done) else float("nan")],
                    ["largest |h_i| (N m s)", float(np.abs(mc.wheel_momentum).max())]])
    # 3. Q (m + A h) without external torque, the exact-flow splitting STRANG
    free = integrate(m0, Q0, J, h, int(round((detumble + slew) / h)), method="STRANG",
                     wheels=Wheels(PYRAMID, h0), wheel_law=_wheel_law(Q_REF, J, u_max, h_max))
    L = free.total_momentum
    drift = float(np.abs(L - L[0]).max() / np.linalg.norm(L[0]))
    invariants = Table(f"wheels without external torque (STRANG, {len(free.t) - 1} steps): "
                       "largest relative change", ["quantity", "value"], [["Q (m + A h)", drift]])
    # 4. work-precision of the slew against YOSHIDA4 at h / 16 (errors every 20 s)
    every = int(round(20.0 / h))
    given: dict[str, Any] = dict(wheels=Wheels(PYRAMID, first.wheel_momentum[-1]),
                                 wheel_law=_wheel_law(Q_REF, J, u_max, h_max), torque=gg,
                                 t0=float(first.t[-1]))
    ref = integrate(first.m[-1], first.q[-1], J, h / 16, 16 * int(round(slew / h)),
                    method="YOSHIDA4", save_every=16 * every, **given)
    work = Table("wheel slew: largest error over the slew (every 20 s) against YOSHIDA4 at h/16",
                 ["method", "h (s)", "error of q", "error of h (N m s)", "time (ms)"], [])
    curves: dict[str, list[tuple[float, float]]] = {}
    for meth in ("STRANG", "YOSHIDA4", "RKN6_14", "RK4"):
        for k in (1, 2, 4):
            hk = h * k
            t_start = time.perf_counter()
            tr = integrate(first.m[-1], first.q[-1], J, hk, int(round(slew / hk)), method=meth,
                           save_every=every // k, **given)
            ms = 1e3 * (time.perf_counter() - t_start)
            dq = np.minimum(np.abs(tr.q - ref.q).max(axis=1), np.abs(tr.q + ref.q).max(axis=1)).max()
            dh = float(np.abs(tr.wheel_momentum - ref.wheel_momentum).max())
            work.rows.append([meth, hk, float(dq), dh, ms])
            curves.setdefault(meth, []).append((ms, max(float(dq), 1e-17)))
    numbers = {"wheels_detumbled_rate": float(phases.rows[0][2]),
               "wheels_final_error_deg": float(phases.rows[1][3]),
               "wheels_settling_time": _settling_time(second.t, _error_angle(second.q)),
               "wheels_largest_momentum": float(np.abs(hw).max()),
               "wheels_largest_torque": float(np.abs(torque).max()),
               "wheels_total_momentum_drift": drift,
               "wheels_settled_fraction": len(done) / max(bodies, 1),
               "wheels_median_settling": float(np.median(done)) if len(done) else float("nan")}
    return [phases, spread, invariants, work], numbers, {
        "wheel_t": t, "wheel_rpm": rpm, "wheel_torque": torque, "wheel_error": error,
        "detumble_end": detumble, "settling": settle, "wheel_curves": curves,
        "limits": (u_max, h_max / WHEEL_INERTIA * 60.0 / (2.0 * np.pi))}


def _settling_time(t: np.ndarray, error: np.ndarray, within: float = 1.0) -> float:
    """The first time after which the error (degrees) stays below ``within`` (nan: never)."""
    outside = np.nonzero(error >= within)[0]
    if len(outside) == 0:
        return float(t[0])
    if outside[-1] == len(t) - 1:
        return float("nan")
    return float(t[outside[-1] + 1])


def plot(result: Result, path: str | PathLike[str]) -> None:
    plt = pyplot()
    d = result.data
    fig, axes = plt.subplots(2, 4, figsize=(19, 8))
    ax = axes[0, 0]
    ax.plot(d["t"], d["error"], lw=0.9)
    ax.set_xlabel("t (s)")
    ax.set_ylabel("attitude error to q_ref (degrees)")
    ax = axes[0, 1]
    for i, style in enumerate(("-", "--", ":")):
        ax.plot(d["t"], d["rates"][:, i], style, lw=0.9, label=f"w{i + 1}")
    ax.set_xlabel("t (s)")
    ax.set_ylabel("body rates (rad/s)")
    ax.legend(fontsize=8)
    for ax in axes[0, :2]:
        for x in d["phase_ends"][:-1]:
            ax.axvline(x, color="gray", lw=0.6)
    for ax, key, title in ((axes[0, 2], "curves", "PD slew"),
                           (axes[1, 3], "wheel_curves", "wheel slew")):
        styles = method_styles(list(d[key]))
        for meth, pts in d[key].items():
            ms, err = zip(*pts)
            ax.loglog(ms, err, **styles[meth])
        ax.set_xlabel("time (ms)")
        ax.set_ylabel(f"largest error of q over the {title}")
        ax.legend(fontsize=8)
        ax.grid(True, which="both", alpha=0.3)
    ax = axes[0, 3]
    settle = d["settling"][np.isfinite(d["settling"])]
    ax.hist(settle, bins=40)
    ax.set_xlabel("settling time within 1 degree (s)")
    ax.set_ylabel(f"bodies (of {len(d['settling'])})")
    u_max, rpm_max = d["limits"]
    t = d["wheel_t"]
    ax = axes[1, 0]
    ax.plot(t, d["wheel_rpm"], lw=0.9)
    ax.set_ylabel("wheel speeds (rpm)")
    ax = axes[1, 1]
    ax.plot(t[1:], d["wheel_torque"], lw=0.9)
    ax.set_ylabel("motor torques (N m)")
    ax = axes[1, 2]
    ax.semilogy(t, d["wheel_error"], lw=0.9)
    ax.set_ylabel("attitude error to q_ref (degrees)")
    for ax, limit in ((axes[1, 0], rpm_max), (axes[1, 1], u_max), (axes[1, 2], None)):
        ax.set_xlabel("t (s), with wheels")
        ax.axvline(d["detumble_end"], color="gray", lw=0.6)
        if limit is not None:
            for y in (-limit, limit):
                ax.axhline(y, color="red", lw=0.6, ls="--")
    for ax in list(axes[0, :2]) + list(axes[1, :3]) + [axes[0, 3]]:
        ax.grid(True, alpha=0.3)
    save_figure(fig, path)


_OPTIONS = (Option("h", float, 0.5, "step in seconds (frb's choice: 0.5), a divisor of 5 s (5, "
                   "2.5, 1.25, 1, 0.5, ...: the slew's errors are compared every 20 s with the "
                   "steps h, 2 h and 4 h), at most I_min / kd, sqrt(I_min / kp) and 1 / damping "
                   "(3.18 s with the default gains)", low=0, strict=True, high=5.0),
            Option("coast", float, 300.0, "coast time, s", low=0, strict=True),
            Option("detumble", float, 900.0, "detumbling time, s", low=0, strict=True),
            Option("slew", float, 1200.0, "slew time, s", low=0, strict=True),
            Option("damping", float, 0.01, "damping rate c, 1/s", low=0),
            Option("kp", float, 1.0, "proportional gain, N m", low=0),
            Option("kd", float, 25.0, "derivative gain, N m s", low=0),
            Option("bodies", int, 1000, "bodies of the Monte Carlo of wheel slews", low=1,
                   high=10**6),
            Option("u_max", float, 0.05, "motor torque limit of a wheel, N m", low=0, strict=True),
            Option("h_max", float, 1.0, "momentum limit of a wheel, N m s", low=0, strict=True))

EXPERIMENT: Experiment = Experiment.from_run("satellite", "frb's own spacecraft problem",
                                 "a spacecraft: tensor, wheel, gravity gradient, damping, PD slew; "
                                 "reaction wheels: detumble, slew, Monte Carlo",
                                 _OPTIONS, run, plot)
