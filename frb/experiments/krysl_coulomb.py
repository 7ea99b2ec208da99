"""Krysl, "Dynamically equivalent implicit algorithms for the integration of rigid body rotations"
(2008), section 5.4, Figs. 4 and 5: a body in a Coulombic potential with a soft wall.

A pinned body, ``I = (2, 3, 4.5)``, ``R0 = 1``, ``pi0 = (2, 2, 2)``, 40,000 steps of 0.5. The
printed spatial torque lacks a pair of parentheses: frb reads the scalar factor as multiplying
the vector, and keeps the PRINTED sign (the sign that reproduces the paper's behaviour, although
it makes the Coulomb term repulsive where the text says attractive; the flipped sign blows every
method up within 100 steps). The torque is ``t = s(R33) (-R23, R13, 0)``,
``s(z) = -(1.1 + z)^-2 + 0.01 (1.1 + z)^-11``; it derives from
``V(R) = (1.1 + R33)^-1 - 0.001 (1.1 + R33)^-10`` (``t = -r x grad V``, ``r = R e3``). The body
torque given to :func:`frb.integrate` is ``R^T t``.

Plotted: the normalised Hamiltonian ``H / H0`` (the paper does not define the normalisation),
Fig. 4 for AKW, BBTRAP, SWC1 and Fig. 5 for TRAP, IMID, TRAPM, IMIDM, and beside them the
exact-flow splittings STRANG and RKN6_14.
"""
from __future__ import annotations

from os import PathLike
from typing import Any, Sequence

import numpy as np
from numpy.typing import ArrayLike, NDArray

from .._kept import check_kept_states
from ..engine import integrate
from .._messages import IntegrationError
from ..reporting import (Experiment, Option, Result, Table, method_list, method_styles, pyplot,
                         save_figure)

INERTIA = (2.0, 3.0, 4.5)
PI0 = (2.0, 2.0, 2.0)
FIG4 = ("AKW", "BBTRAP", "SWC1")
FIG5 = ("TRAP", "IMID", "TRAPM", "IMIDM")
SPLITTINGS = ("STRANG", "RKN6_14")


class CoulombWall:
    """Body torque ``R^T s(R33) (-R23, R13, 0)`` of Krysl's section 5.4 (printed sign),
    vectorised over ``Q`` of shape ``(N, 3, 3)``; :meth:`potential` is ``V(R)``."""

    def __call__(self, t: float, Q: NDArray[np.float64]) -> NDArray[np.float64]:
        if Q.shape[0] == 1:                 # one body: Python floats are 10x cheaper
            (r11, r12, r13), (r21, r22, r23), (_, _, r33) = Q[0].tolist()
            z = 1.1 + r33
            s = (0.01 * z**-9 - 1.0) / (z * z)
            a, b = s * r13, s * r23
            return np.array([[a * r21 - b * r11, a * r22 - b * r12, a * r23 - b * r13]])
        z = 1.1 + Q[:, 2, 2]
        s = (0.01 * z**-9 - 1.0) / (z * z)
        # R^T (-R23, R13, 0) = R13 (row 2 of R) - R23 (row 1 of R)
        return (s * Q[:, 0, 2])[:, None] * Q[:, 1, :] - (s * Q[:, 1, 2])[:, None] * Q[:, 0, :]

    def potential(self, Q: ArrayLike) -> NDArray[np.float64]:
        z = 1.1 + np.asarray(Q)[..., 2, 2]
        return 1.0 / z - 0.001 * z**-10

    def __repr__(self) -> str:
        return "krysl_coulomb_wall"


def _step_angles(q: NDArray[np.float64]) -> NDArray[np.float64]:
    """Rotation angle (degrees) between consecutive unit quaternions of q (K, 4)."""
    c = np.abs(np.sum(q[1:] * q[:-1], axis=1))
    return np.degrees(2.0 * np.arccos(np.clip(c, -1.0, 1.0)))


OPTIONS: tuple[Option, ...] = (Option("h", float, 0.5, "step (paper: 0.5; at least 1e-6, where "
                                      "the methods' errors are above the rounding)", low=1e-6),
                               Option("nsteps", int, 40000, "number of steps (paper: 40,000)",
                                      low=1, high=2**31 - 2),
                               Option("methods", str, None, "comma-separated methods (default: "
                                      "the seven Krysl methods, STRANG, RKN6_14)", methods=True))


def run(h: float = 0.5, nsteps: int = 40000, methods: str | Sequence[str] | None = None) -> Result:
    """Krysl 2008, section 5.4: a pinned body I = (2, 3, 4.5), R0 = 1, pi0 = (2, 2, 2) in a
    Coulombic potential with a soft wall, 40,000 steps of 0.5. Prints the largest deviation of
    the normalised Hamiltonian H/H0 (the paper does not define the normalisation) of AKW,
    BBTRAP, SWC1 (Fig. 4), TRAP, IMID, TRAPM, IMIDM (Fig. 5) and of the exact-flow splittings
    STRANG and RKN6_14, and the largest rotation within a step. The torque is the printed one,
    its scalar factor multiplying the vector, with the printed sign. The torque is a Python
    callable: the full run takes about a minute or two."""
    methods = method_list(methods, FIG4 + FIG5 + SPLITTINGS)
    check_kept_states(nsteps + 1, 1, 12, remedy="every state is kept: run fewer steps (nsteps)")
    torque = CoulombWall()
    every = max(1, nsteps // 4000)
    rows: list[list[Any]]
    H, rows, numbers, t = {}, [], {}, None
    for meth in methods:
        try:
            tr = integrate(PI0, np.eye(3), INERTIA, h, nsteps, method=meth, torque=torque)
        except IntegrationError as exc:
            rows.append([meth, None, None, None, f"failed: {exc}"])
            continue
        e = tr.energy / tr.energy[0]
        H[meth] = e[::every]
        t = tr.t[::every]
        dev = float(np.abs(e - 1.0).max())
        angles = _step_angles(tr.q)
        rows.append([meth, dev, float(np.abs(e[-1] - 1.0)), float(angles.max()),
                     "Fig. 4" if meth in FIG4 else "Fig. 5" if meth in FIG5 else "exact-flow splitting"])
        numbers[f"max_deviation_{meth}"] = dev
        numbers[f"max_step_angle_{meth}"] = float(angles.max())
    table = Table(f"normalised Hamiltonian H/H0 over {nsteps} steps of {h:g}",
                  ["method", "max |H/H0 - 1|", "|H/H0 - 1| at the end", "largest rotation "
                   "in a step (deg)", "figure"], rows)
    group = {g: [numbers[f"max_deviation_{m}"] for m in ms if f"max_deviation_{m}" in numbers]
             for g, ms in (("fig4", FIG4), ("fig5", FIG5))}
    notes = []
    if group["fig4"] and group["fig5"]:
        ratio = max(group["fig5"]) / max(group["fig4"])
        numbers["fig5_over_fig4"] = ratio
        notes.append(f"largest deviation of the Fig. 5 methods / that of the Fig. 4 methods: "
                     f"{ratio:.2f} (the paper: Fig. 5's vertical scale is 1/5 of Fig. 4's)")
    return Result(
        "krysl-coulomb", "body in a Coulombic potential with a soft wall: normalised Hamiltonian",
        [("inertia", INERTIA, "Krysl 2008, section 5.4"), ("R0", "identity", "Krysl 2008, 5.4"),
         ("pi0", PI0, "Krysl 2008, 5.4"), ("h", h, "Krysl 2008, Figs. 4-5"),
         ("nsteps", nsteps, "Krysl 2008, Figs. 4-5 (40,000)"),
         ("torque", "s(R33) (-R23, R13, 0), printed sign",
          "Krysl 2008, 5.4 (scalar factor times the vector)"),
         ("normalisation", "H / H0", "frb: the paper does not define it")],
        [table], numbers, data={"t": t, "H": H}, notes=notes)


def plot(result: Result, path: str | PathLike[str]) -> None:
    plt = pyplot()
    d = result.data
    fig, axes = plt.subplots(1, 3, figsize=(15, 4.6), sharex=True)
    for ax, group, title in ((axes[0], FIG4, "Fig. 4"), (axes[1], FIG5, "Fig. 5"),
                             (axes[2], SPLITTINGS, "exact-flow splittings")):
        shown = [meth for meth in group if meth in d["H"]]
        styles = method_styles(shown)
        every = max(1, len(d["t"]) // 12)
        for meth in shown:
            ax.plot(d["t"], d["H"][meth], **{**styles[meth], "linewidth": 0.5}, alpha=0.8,
                    markevery=(every * shown.index(meth) // max(1, len(shown)), every))
        ax.set_title(title, fontsize=10)
        ax.set_xlabel("t")
        if shown:
            # below the axes: the curves fill them
            ax.legend(fontsize=7, ncol=len(shown), loc="upper center",
                      bbox_to_anchor=(0.5, -0.16), frameon=False)
        else:
            ax.text(0.5, 0.5, "none of these methods run", transform=ax.transAxes,
                    ha="center", va="center", fontsize=9)
        ax.grid(True, alpha=0.3)
    axes[0].set_ylabel("H / H0")
    save_figure(fig, path)


EXPERIMENT: Experiment = Experiment.from_run(
    "krysl-coulomb", "Krysl 2008, section 5.4, Figs. 4-5",
    "Coulombic potential with a soft wall: normalised Hamiltonian over 40,000 steps",
    OPTIONS, run, plot)
