"""Ganapathi, "Simulation of rigid body dynamics in Matlab" (2005), Figs. 1-3: the free
symmetric top against its analytic solution.

``I = (2, 2, 8)``, body angular velocity ``W0 = (1, 0, 1)``, ``Q(0) = 1``, 300 steps. The analytic
solution (Ganapathi's section 3.1, whose printed second component ``W1 cos(Omega t)`` is a slip
for ``W1 sin(Omega t)``: ``dW1/dt = -Omega W2``, ``dW2/dt = Omega W1``) is
``W(t) = (W1 cos(Omega t), W1 sin(Omega t), W3)``, ``Omega = (I3 - I1) W3 / I1``, and the attitude
``Q(t) = exp(t hat(l) / I1) Q(0) exp(t c hat(e3))``, ``l = Q(0) I W0``, ``c = (1/I3 - 1/I1) I3 W3``
(the body rotates about ``l`` at ``|l| / I1`` and spins about its axis at ``c``).
The paper does not give the step: frb takes ``dt = 1/30`` (30 frames a second), which puts the
RK4 error of ``W`` in the range of the paper's Fig. 2 (units of 1e-5 rad/s).
"""
from __future__ import annotations

import math
from os import PathLike

import numpy as np
from numpy.typing import ArrayLike, NDArray

from .._kept import check_kept_states
from ..engine import integrate
from .._messages import IntegrationError
from ..reporting import Experiment, Option, Result, Table, pyplot, save_figure, tidy_3d
from ..rotations import rotation_exp

__all__ = ["INERTIA", "W0", "rotation_exp", "precession", "analytic", "run", "plot", "EXPERIMENT"]

INERTIA = (2.0, 2.0, 8.0)
W0 = (1.0, 0.0, 1.0)


def precession(m: ArrayLike, inertia_transverse: float, inertia_axial: float, axis_angle: float
               ) -> dict[str, float]:
    """Landau's precession of a free symmetric top, as Ganapathi (2005) quotes it in eqs. (10)
    and (11): ``Omega_pr = |l| / I1`` and ``Omega_3 = (|l| / I3) cos(theta)``."""
    norm = float(np.linalg.norm(m))
    return {"Omega_pr": norm / inertia_transverse,
            "Omega_3": norm / inertia_axial * math.cos(axis_angle)}


def analytic(t: ArrayLike, inertia: tuple[float, float, float] = INERTIA,
             w0: tuple[float, float, float] = W0
             ) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """Body angular velocity (K, 3) and attitude (K, 3, 3) of the symmetric top (I1 = I2)."""
    I1, _, I3 = inertia
    t = np.asarray(t, dtype=float)
    omega = (I3 - I1) * w0[2] / I1
    w = np.stack([w0[0] * np.cos(omega * t) - w0[1] * np.sin(omega * t),
                  w0[0] * np.sin(omega * t) + w0[1] * np.cos(omega * t),
                  np.full_like(t, w0[2])], axis=1)
    ell = np.asarray(inertia) * np.asarray(w0)          # Q(0) = 1: spatial = body momentum
    c = (1.0 / I3 - 1.0 / I1) * I3 * w0[2]
    Q = rotation_exp(t[:, None] * ell / I1) @ rotation_exp(t[:, None] * c * np.array([0, 0, 1.0]))
    return w, Q


OPTIONS: tuple[Option, ...] = (Option("dt", float, 1.0 / 30.0, "step (frb's choice: 1/30; at "
                                      "least 1e-6, where the fitted rates keep their digits)",
                                      low=1e-6),
                               Option("nsteps", int, 300, "number of steps (paper: 300)", low=2,
                                      high=10**8))


def run(dt: float = 1.0 / 30.0, nsteps: int = 300) -> Result:
    """Ganapathi 2005, Figs. 1-3: the free symmetric top I = (2, 2, 8), body angular velocity W0
    = (1, 0, 1), Q(0) = 1, 300 steps. Prints the largest error of the body angular velocity and
    of the attitude of RK4 and of the exact flow against the analytic solution (the paper's
    section 3.1, second component corrected to W1 sin(Omega t); Omega = 3 rad/s), and the
    precession of the symmetry axis about l against Landau's formulas (10)-(11). The paper gives
    no step: frb chooses dt = 1/30 s (30 frames a second), which puts the RK4 error in the 1e-5
    rad/s range of the paper's Fig. 2."""
    I = np.array(INERTIA)
    m0 = I * np.array(W0)
    # (three trajectories of 12 values a state are kept: RK4's, the exact flow's, the analytic)
    check_kept_states(nsteps + 1, 1, 36, remedy="every state is kept: run fewer steps (nsteps)")
    try:
        runs = {name: integrate(m0, np.eye(3), I, dt, nsteps, method=name)
                for name in ("RK4", "EXACT")}
    except IntegrationError as exc:
        raise ValueError(f"dt = {dt!r} is too long for RK4 on this top ({exc}): take a shorter "
                         "dt") from None
    t = runs["EXACT"].t
    w_ref, Q_ref = analytic(t)
    table = Table("error against the analytic solution (largest over the run)",
                  ["method", "|W - W_analytic| (rad/s)", "|Q - Q_analytic|", "|W(end)| error",
                   "energy drift"], [])
    numbers, errors = {}, {}
    for name, tr in runs.items():
        w = tr.m / I
        ew = np.abs(w - w_ref).max(axis=1)
        eq = np.abs(tr.Q - Q_ref).max(axis=(1, 2))
        errors[name] = (ew, eq)
        table.rows.append([name, float(ew.max()), float(eq.max()), float(ew[-1]),
                           float(np.abs(tr.kinetic_energy / tr.kinetic_energy[0] - 1).max())])
        numbers[f"{name.lower()}_w_error"] = float(ew.max())
        numbers[f"{name.lower()}_attitude_error"] = float(eq.max())

    # Fig. 3 and Landau's precession (Ganapathi's eqs. (10), (11)), measured on the exact path.
    ex = runs["EXACT"]
    ell = ex.spatial_momentum[0]
    u = ell / np.linalg.norm(ell)
    w_world = np.einsum("kij,kj->ki", ex.Q, ex.m / I)
    cone = np.arccos(np.clip(w_world @ u / np.linalg.norm(w_world, axis=1), -1, 1))
    axis = ex.Q[:, :, 2]
    theta = float(np.arccos(np.clip(axis[0] @ u, -1, 1)))
    e1 = np.cross(u, [1.0, 0, 0]) if abs(u[0]) < 0.9 else np.cross(u, [0, 1.0, 0])
    e1 /= np.linalg.norm(e1)
    e2 = np.cross(u, e1)
    phase = np.unwrap(np.arctan2(axis @ e2, axis @ e1))
    rate = float(np.polyfit(t, phase, 1)[0])
    landau = precession(m0, I[0], I[2], theta)
    prec = Table("precession of the symmetry axis about l (exact flow; Ganapathi 2005, eqs. (10)-(11))",
                 ["quantity", "measured", "Landau's formula"],
                 [["Omega_pr = |l| / I1 (rad/s)", rate, landau["Omega_pr"]],
                  ["theta = angle(x3, l) (rad)", theta, float(np.arccos(m0[2] / np.linalg.norm(m0)))],
                  ["Omega_3 = |l| cos(theta) / I3", float(W0[2]), landau["Omega_3"]],
                  ["spread of angle(W_world, l)", float(cone.max() - cone.min()), 0.0],
                  ["Omega = (I3 - I1) W3 / I1", (I[2] - I[0]) * W0[2] / I[0], 3.0]])
    numbers.update(precession_rate=rate, theta=theta, cone_spread=float(cone.max() - cone.min()))
    return Result(
        "ganapathi-symmetric", "free symmetric top: RK4 and the exact flow against the analytic "
        "solution",
        [("inertia", INERTIA, "Ganapathi 2005, Fig. 1"),
         ("W0 (body)", W0, "Ganapathi 2005, Fig. 1"),
         ("Q(0)", "identity", "frb (the paper starts from the identity quaternion)"),
         ("nsteps", nsteps, "Ganapathi 2005, Fig. 2"),
         ("dt", dt, "frb: the paper gives none; 1/30 s puts the RK4 error in Fig. 2's 1e-5 range")],
        [table, prec], numbers,
        data={"t": t, "w_ref": w_ref, "w": {k: v.m / I for k, v in runs.items()},
              "errors": errors, "w_world": w_world, "ell": ell, "axis": axis})


def plot(result: Result, path: str | PathLike[str]) -> None:
    plt = pyplot()
    d = result.data
    t = d["t"]
    fig = plt.figure(figsize=(13, 4))
    ax = fig.add_subplot(1, 3, 1)
    for j, c in enumerate(("tab:blue", "tab:orange", "tab:green")):
        ax.plot(t, d["w_ref"][:, j], color=c, lw=2, alpha=0.4, label=f"W{j + 1} analytic")
        ax.plot(t, d["w"]["RK4"][:, j], "--", color=c, lw=0.8, label=f"W{j + 1} RK4")
    ax.set_xlabel("t (s)")
    ax.set_ylabel("body angular velocity (rad/s)")
    ax.set_title("Fig. 1: RK4 and analytic W(t)", fontsize=10)
    lo, hi = float(d["w_ref"].min()), float(d["w_ref"].max())
    ax.set_ylim(lo - 0.08 * (hi - lo), hi + 0.45 * (hi - lo))   # room above for the legend
    ax.legend(fontsize=6, ncol=3, loc="upper center")
    ax = fig.add_subplot(1, 3, 2)
    for name in ("RK4", "EXACT"):
        e = d["w"][name] - d["w_ref"]
        if name == "EXACT":      # ~1e-14: a mark at the origin, its size in the legend
            largest = float(np.abs(e[:, :2]).max())
            ax.plot(e[:, 0] * 1e5, e[:, 1] * 1e5, "x", color="tab:red", ms=9, markevery=[0],
                    label=f"EXACT (all within {largest:.0e}: at the origin)")
        else:
            ax.plot(e[:, 0] * 1e5, e[:, 1] * 1e5, "-", color="tab:blue", lw=0.8, label=name)
    ax.set_xlabel("error of W1 (1e-5 rad/s)")
    ax.set_ylabel("error of W2 (1e-5 rad/s)")
    ax.set_title("Fig. 2: error of (W1, W2)", fontsize=10)
    ax.legend(fontsize=7)
    ax.set_aspect("equal", adjustable="datalim")
    ax = fig.add_subplot(1, 3, 3, projection="3d")
    ell = d["ell"] / np.linalg.norm(d["ell"])
    ww = d["w_world"] / np.linalg.norm(d["w_world"], axis=1)[:, None]
    ax.plot(*ww.T, lw=0.8, label="W (world, unit)")
    ax.plot(*d["axis"].T, lw=0.8, label="symmetry axis x3")
    ax.plot([0, ell[0]], [0, ell[1]], [0, ell[2]], "r-", lw=1.5, label="l (fixed)")
    ax.set_title("Fig. 3: W and x3 on cones about l", fontsize=10)
    tidy_3d(ax)
    ax.legend(fontsize=6)
    save_figure(fig, path)


EXPERIMENT: Experiment = Experiment.from_run(
    "ganapathi-symmetric", "Ganapathi 2005, Figs. 1-3",
    "free symmetric top: RK4 and the exact flow against the analytic solution",
    OPTIONS, run, plot)
