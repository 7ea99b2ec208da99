"""Ganapathi, "Simulation of rigid body dynamics in Matlab" (2005), Figs. 4 and 5: rotation near
the major and near the intermediate axis.

``I = (2, 8, 4)``, ``Q(0) = 1``; body angular velocity ``W0 = (0, 1, 0.1)`` (Fig. 4, near the
major axis e2: stable) or ``W0 = (0, 0.1, 1)`` (Fig. 5, near the intermediate axis e3: the
axis flips over and back periodically). The figure is the path, in the fixed frame, of the body
axis the body spins about at the start (e2, resp. e3), with the fixed momentum direction ``l``.
RK4 (the paper's method) and the exact flow run side by side; the paper gives neither the step
nor the duration: frb takes ``dt = 0.01`` and ``t_final = 60`` (several flips).
"""
from __future__ import annotations

from os import PathLike
from typing import Any

import numpy as np

from .._kept import check_kept_states
from ..engine import integrate
from ..reporting import (Experiment, Option, Result, Table, method_styles, pyplot, save_figure,
                         steps_of, tidy_3d)
from ..rotations import momentum_period

INERTIA = (2.0, 8.0, 4.0)
CASES: dict[str, dict[str, Any]] = {
    "ganapathi-stable": dict(w0=(0.0, 1.0, 0.1), axis=1, figure="Fig. 4",
                             what="rotation near the major axis (stable)"),
    "ganapathi-unstable": dict(w0=(0.0, 0.1, 1.0), axis=2, figure="Fig. 5",
                               what="rotation near the intermediate axis (the axis flips)"),
}


def _run(name: str, dt: float, t_final: float) -> Result:
    case = CASES[name]
    I = np.array(INERTIA)
    m0 = I * np.array(case["w0"])
    nsteps = steps_of(t_final, dt, "t_final / dt")
    # (two trajectories of 12 values a state are kept, the exact flow's and RK4's)
    check_kept_states(nsteps + 1, 1, 24, remedy="every state is kept: lengthen dt or shorten "
                      "t_final")
    runs = {meth: integrate(m0, np.eye(3), I, dt, nsteps, method=meth) for meth in ("EXACT", "RK4")}
    t = runs["EXACT"].t
    j = case["axis"]
    ell = runs["EXACT"].spatial_momentum[0]
    u = ell / np.linalg.norm(ell)
    paths = {meth: tr.Q[:, :, j] for meth, tr in runs.items()}
    angle = {meth: np.degrees(np.arccos(np.clip(p @ u, -1, 1))) for meth, p in paths.items()}
    # flips: sign changes of the body momentum along the spin axis (exact flow)
    mj = runs["EXACT"].m[:, j]
    flips = t[1:][np.signbit(mj[1:]) != np.signbit(mj[:-1])]
    period = momentum_period(m0, I)
    # the measured period: a component of m that changes sign is an sn or cn of the momentum's
    # phase, with two sign changes a period (the one with the most changes: m_j for a body near
    # its unstable axis, another about a stable one); two changes at least are needed (NaN,
    # with the reason in the table)
    m_all = runs["EXACT"].m
    changes = [t[1:][np.signbit(m_all[1:, c]) != np.signbit(m_all[:-1, c])] for c in range(3)]
    crossing = max(changes, key=len)
    measured = float(2 * np.mean(np.diff(crossing))) if len(crossing) >= 2 else float("nan")
    measured_text: object = measured if len(crossing) >= 2 else (
        f"not measured: {len(crossing)} sign change(s) of a component of m in the run, two "
        "needed (a longer t_final)")
    G = float(m0 @ m0)
    T2 = float(np.sum(m0 * m0 / I))
    table = Table(f"body axis e{j + 1} in the fixed frame", ["method", "largest angle to l (deg)",
                  "smallest (deg)", "flips of m" + str(j + 1), "|Q - Q_exact| at the end",
                  "energy drift"], [])
    for meth, tr in runs.items():
        table.rows.append([
            meth, float(angle[meth].max()), float(angle[meth].min()),
            int(np.count_nonzero(np.signbit(tr.m[1:, j]) != np.signbit(tr.m[:-1, j]))),
            float(np.abs(tr.Q[-1] - runs["EXACT"].Q[-1]).max()),
            float(np.abs(tr.kinetic_energy / tr.kinetic_energy[0] - 1).max())])
    timing = Table("period of the body momentum", ["quantity", "value"],
                   [["2E I_mid / |l|^2", T2 * I[2] / G],
                    ["period 4K(k)/lambda (closed form)", period],
                    ["2 x mean time between sign changes of m (exact flow)", measured_text]])
    numbers = {"max_angle_exact": float(angle["EXACT"].max()),
               "max_angle_rk4": float(angle["RK4"].max()),
               "flips": int(len(flips)), "period": period, "measured_period": measured,
               "rk4_final_attitude_error": float(np.abs(runs["RK4"].Q[-1] - runs["EXACT"].Q[-1]).max())}
    return Result(
        name, f"{case['what']}: path of the body axis e{j + 1} in the fixed frame",
        [("inertia", INERTIA, f"Ganapathi 2005, {case['figure']}"),
         ("W0 (body)", case["w0"], f"Ganapathi 2005, {case['figure']}"),
         ("Q(0)", "identity", "frb (the paper starts from the identity quaternion)"),
         ("dt", dt, "frb: the paper gives none"), ("t_final", t_final, "frb: the paper gives none")],
        [table, timing], numbers,
        data={"t": t, "paths": paths, "angle": angle, "ell": u, "axis": j,
              "figure": case["figure"]})


def run_stable(dt: float = 0.01, t_final: float = 60.0) -> Result:
    return _run("ganapathi-stable", dt, t_final)


def run_unstable(dt: float = 0.01, t_final: float = 60.0) -> Result:
    return _run("ganapathi-unstable", dt, t_final)


def plot(result: Result, path: str | PathLike[str]) -> None:
    plt = pyplot()
    d = result.data
    fig = plt.figure(figsize=(10, 4.5))
    ax = fig.add_subplot(1, 2, 1, projection="3d")
    ax.plot(*d["paths"]["EXACT"].T, lw=0.8, color="tab:blue", label="exact flow")
    ax.plot(*d["paths"]["RK4"][::5].T, ".", ms=1.0, color="tab:orange", label="RK4 (dots)")
    ax.plot(*d["ell"], "ro", ms=6, label="l (fixed)")
    ax.set_box_aspect((1, 1, 1))
    tidy_3d(ax)
    ax.set_title(f"{d['figure']}: body axis e{d['axis'] + 1} in the fixed frame", fontsize=10)
    ax.legend(fontsize=7, loc="upper left")
    ax = fig.add_subplot(1, 2, 2)
    styles = method_styles(["EXACT", "RK4"])
    every = max(1, len(d["t"]) // 40)
    for meth in ("EXACT", "RK4"):
        ax.plot(d["t"], d["angle"][meth], markevery=every, **styles[meth])
    ax.set_xlabel("t (s)")
    ax.set_ylabel(f"angle between e{d['axis'] + 1} and l (degrees)")
    ax.legend(fontsize=7, ncol=2, loc="upper center", bbox_to_anchor=(0.5, -0.13),
              frameon=False)                      # below the axes: the curves fill them
    ax.grid(True, alpha=0.3)
    save_figure(fig, path)


_OPTIONS = (Option("dt", float, 0.01, "step (frb's choice: 0.01)", low=0, strict=True),
            Option("t_final", float, 60.0, "final time (frb's choice: 60)", low=0, strict=True))
_COMMON = ("I = (2, 8, 4), Q(0) = 1, RK4 and the exact flow at the same step. Prints the largest "
           "and smallest angle between the axis and the fixed momentum l, the number of sign "
           "changes of the body momentum along the axis, and the period of m(t) in closed form "
           "beside the one measured from the flips. The paper gives neither step nor duration: "
           "frb chooses dt = 0.01 and t_final = 60.")

EXPERIMENTS: tuple[Experiment, ...] = (
    Experiment("ganapathi-stable", "Ganapathi 2005, Fig. 4",
               "rotation near the major axis: path of the body axis e2 in the fixed frame",
               "Ganapathi 2005, Fig. 4: W0 = (0, 1, 0.1), rotation near the major axis "
               "e2 (stable): the path of e2 in the fixed frame. " + _COMMON,
               _OPTIONS, run_stable, plot),
    Experiment("ganapathi-unstable", "Ganapathi 2005, Fig. 5",
               "rotation near the intermediate axis: path of the body axis e3 (it flips)",
               "Ganapathi 2005, Fig. 5: W0 = (0, 0.1, 1), rotation near the intermediate "
               "axis e3 (unstable, 2E I_mid/|l|^2 = 0.981): the path of e3 in the fixed frame, "
               "which flips over and back. " + _COMMON,
               _OPTIONS, run_unstable, plot),
)
