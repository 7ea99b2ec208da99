"""Celledoni and Zanna, "FRB-FORTRAN routines for the exact computation of free rigid body motions"
(ACM TOMS Algorithm 903, 2010), section 4.3, Fig. 7: example 1 over the paper's interval.

The perturbed body of example 1 (the packaged ``init_example1.dat``: ``I``, ``m0``, ``Q0 = 1``, the
field ``u0`` with ``|u0| = 1e-3``, the RKN6_14 coefficients, ``h = 0.5``) integrated over
``[0, 5e4]`` (the paper's text; the published data file and output stop at 5000). The momentum
stays on
the unit sphere, on a torus close to the unperturbed orbit; the close-up shows the band the
points fill. The first 5000 time units are compared with the published ``out_example1.dat``
when it is found (see :mod:`frb.datasets`).
"""
from __future__ import annotations

from os import PathLike
from typing import Any

import numpy as np

from ..engine import integrate
from ..datasets import example1_data, find_published_output
from ..io import read_dat
from ..reporting import Experiment, Option, Result, Table, pyplot, save_figure, steps_of, tidy_3d
from ..torques import constant_field

__all__ = ["example1_data", "run", "plot", "EXPERIMENT"]


OPTIONS: tuple[Option, ...] = (Option("t_final", float, 5.0e4, "final time (paper: 5e4)", low=0,
                                      strict=True),
                               Option("h", float, None, "step (default: the input file's 0.5)",
                                      low=0, strict=True))


def run(t_final: float = 5.0e4, h: float | None = None) -> Result:
    """Celledoni and Zanna 2010, Fig. 7: the perturbed body of example 1 (packaged
    init_example1.dat, h = 0.5, RKN6_14 with the exact free flow) over the paper's interval [0,
    5e4] (the published data file stops at 5000). Prints the drift of |m|, of H = T + u0 . Q e3
    and of the vertical momentum, and the largest deviation of the first 5000 time units from
    the published out_example1.dat when it is found."""
    d = example1_data()
    h = d["h"] if h is None else float(h)
    nsteps = steps_of(t_final, h)
    tq = constant_field(d["u0"])
    tr = integrate(d["m0"], d["Q0"], d["inertia"], h, nsteps, coefficients=(d["a"], d["b"]),
                   torque=tq)
    m = tr.m
    H = tr.energy
    vert = tr.spatial_momentum @ d["u0"]
    rows: list[list[Any]] = [["|m| - 1", float(np.abs(np.linalg.norm(m, axis=1) - 1).max())],
            ["H - H0 (H = T + u0 . Q e3)", float(np.abs(H - H[0]).max())],
            ["u0 . Q m (vertical momentum) change", float(np.abs(vert - vert[0]).max())],
            ["range of m3", float(m[:, 2].max() - m[:, 2].min())]]
    numbers = {"norm_drift": rows[0][1], "energy_drift": rows[1][1], "vertical_drift": rows[2][1],
               "H0": float(H[0])}
    notes = []
    published = find_published_output(1)
    k = int(round(d["t_final"] / h))
    if published is not None and d["h"] == h and k <= nsteps:
        out = read_dat(published).reshape(-1, 13)
        dev = float(np.abs(out[:, 0:3] - m[:len(out)]).max())
        devQ = float(np.abs(out[:, 3:12].reshape(-1, 3, 3).transpose(0, 2, 1)
                            - tr.Q[:len(out)]).max())
        rows.append(["largest deviation from out_example1.dat, m (t <= 5000)", dev])
        rows.append(["largest deviation from out_example1.dat, Q (t <= 5000)", devQ])
        numbers.update(published_deviation_m=dev, published_deviation_Q=devQ)
        notes.append(f"published output: {published.name} ({published.parent.name}/)")
    else:
        notes.append("published out_example1.dat not found (or another h): no comparison")
    return Result(
        "torus", "example 1 over [0, 5e4]: the momentum on a torus",
        [("input", "packaged init_example1.dat", "Celledoni and Zanna 2010, example 1"),
         ("h", h, "init_example1.dat"),
         ("t_final", t_final, "Celledoni and Zanna 2010, section 4.3 text (the data file: 5000)"),
         ("method", "RKN6_14 (coefficients of init_example1.dat)",
          "Celledoni and Zanna 2010, eq. (23)")],
        [Table(f"invariants over {nsteps} steps (largest change)", ["quantity", "value"], rows)],
        numbers, data={"m": m, "t": tr.t}, notes=notes)


def plot(result: Result, path: str | PathLike[str]) -> None:
    plt = pyplot()
    m = result.data["m"]
    fig = plt.figure(figsize=(11, 5))
    ax = fig.add_subplot(1, 2, 1, projection="3d")
    u, v = np.mgrid[0:2 * np.pi:40j, 0:np.pi:20j]
    ax.plot_wireframe(np.cos(u) * np.sin(v), np.sin(u) * np.sin(v), np.cos(v), color="0.85",
                      lw=0.3)
    ax.plot(*m.T, ",", color="tab:blue")
    ax.set_box_aspect((1, 1, 1))
    tidy_3d(ax, labels=("m1", "m2", "m3"))
    ax.set_title("m_i, i h in [0, %g], on the unit sphere" % result.data["t"][-1], fontsize=10)
    # close-up: the points near the top of the orbit (largest m3), in the m1-m2 plane
    ax2 = fig.add_subplot(1, 2, 2)
    top = m[:, 2] > np.quantile(m[:, 2], 0.999) if m[0, 2] > 0 else \
        m[:, 2] < np.quantile(m[:, 2], 0.001)
    sel = m[top]
    i = np.argmax(np.abs(sel[:, 2]))
    centre = sel[i]
    near = np.linalg.norm(m - centre, axis=1) < 0.02
    ax2.plot(m[near, 0], m[near, 1], ".", ms=1.0)
    ax2.set_xlabel("m1")
    ax2.xaxis.set_major_locator(plt.MaxNLocator(5))      # tick labels of 7 digits: few of them
    ax2.set_ylabel("m2")
    ax2.set_title("close-up of the torus near m = (%.3f, %.3f, %.3f)" % tuple(centre),
                  fontsize=10)
    save_figure(fig, path)


EXPERIMENT: Experiment = Experiment.from_run(
    "torus", "Celledoni and Zanna 2010, section 4.3, Fig. 7",
    "example 1 over [0, 5e4]: the momentum on the sphere and the close-up of the torus",
    OPTIONS, run, plot)
