"""Krysl, "Dynamically equivalent implicit algorithms for the integration of rigid body rotations"
(2008), sections 5.1-5.3, Figs. 1-3: convergence of the body momentum and of the attitude at the
final time against the step size.

* ``krysl-free`` (5.1): ``I = (0.9144, 1.098, 1.66)``, body angular velocity
  ``Omega = (0.45549, 0.82623, 0.03476)`` (``Pi0 = I Omega``), ``R0 = 1`` (the paper does not
  state it; ``|I Omega| = 0.99991`` supports reading ``Omega`` as the body angular velocity),
  ``t = 100``. Reference: the exact flow in one step of 100.
* ``krysl-slow-top`` (5.2): ``I = (5, 5, 1)``, body torque ``20 (R^T e_z) x e3`` (a heavy top,
  ``frb.torques.heavy_top(20, (0, 0, 1))``), ``R0 = exp(hat(0.05, 0, 0))``, ``Omega0 = (0, 0, 5)``,
  ``t = 20``.
* ``krysl-fast-top`` (5.3): the same with ``R0 = exp(hat(0.3, 0, 0))``, ``Omega0 = (0, 0, 50)``.
  Reference for the tops: RKN6_14 at ``h = 1e-3`` (Krysl: a second-order method at 1e-4, which
  is no more accurate than RKN6_14 at 1e-3, and RKN6_14 at 1e-4 piles up 1e-8 of rounding).

The paper does not give the step sizes of its plots: frb runs ``t / n`` for ``n`` doubling
from ``n0`` over ``levels`` levels, and fits the order on the three smallest steps. Errors:
``||Pi - Pi_ref||_2`` and the spectral norm ``||R - R_ref||_2``. The reference's own accuracy is
stated as its difference from the same reference method at twice the step.
"""
from __future__ import annotations

from os import PathLike
from typing import Any, Sequence

import numpy as np
from numpy.typing import NDArray

from ..engine import integrate
from .._messages import IntegrationError
from ..torques import HeavyTop, heavy_top
from ..reporting import (Experiment, Option, Result, Table, attitude_error, fit_order, method_list,
                         method_styles, pyplot, reference_accuracy, save_figure, steps_of)
from ..rotations import rotation_exp

KRYSL_METHODS = ("TRAP", "IMID", "TRAPM", "IMIDM", "SWC1", "AKW", "BBTRAP")
OTHER_METHODS = ("RKN6_14", "DMV6")

PROBLEMS: dict[str, dict[str, Any]] = {
    "krysl-free": dict(section="5.1, Fig. 1", inertia=(0.9144, 1.098, 1.66),
                       omega0=(0.45549, 0.82623, 0.03476), psi0=(0.0, 0.0, 0.0), torque=None,
                       t_final=100.0, n0=400, levels=6),
    "krysl-slow-top": dict(section="5.2, Fig. 2", inertia=(5.0, 5.0, 1.0), omega0=(0.0, 0.0, 5.0),
                           psi0=(0.05, 0.0, 0.0), torque=20.0, t_final=20.0, n0=500, levels=6),
    "krysl-fast-top": dict(section="5.3, Fig. 3", inertia=(5.0, 5.0, 1.0), omega0=(0.0, 0.0, 50.0),
                           psi0=(0.3, 0.0, 0.0), torque=20.0, t_final=20.0, n0=2000, levels=6),
}
#: Step of the RKN6_14 reference of the tops.
REFERENCE_STEP = 1e-3
#: The most steps of one method's runs (over all levels) and of the reference: 2**26, about a
#: minute of the slowest method's steps for one body.
MAX_STEPS = 2**26


def initial_state(name: str
                  ) -> tuple[NDArray[np.float64], NDArray[np.float64], NDArray[np.float64],
                             HeavyTop | None]:
    """``(Pi0, R0, inertia, torque)`` of the problem ``name``."""
    p = PROBLEMS[name]
    I = np.array(p["inertia"])
    torque = None if p["torque"] is None else heavy_top(p["torque"], (0.0, 0.0, 1.0))
    return I * np.array(p["omega0"]), rotation_exp(p["psi0"]), I, torque


def reference(name: str, t_final: float, h_ref: float = REFERENCE_STEP
              ) -> tuple[NDArray[np.float64], NDArray[np.float64], str, str, tuple[float, float]]:
    """Final ``(Pi, R)`` of the reference and its estimated accuracy ``(dPi, dR)``."""
    m0, R0, I, torque = initial_state(name)
    if torque is None:
        one = integrate(m0, R0, I, t_final, 1, method="EXACT")
        n = max(1, int(round(t_final / 0.1)))
        check = integrate(m0, R0, I, t_final / n, n, method="EXACT", save_every=n)
        label = f"exact flow, one step of {t_final:g}"
        how = f"against {n} exact steps"
    else:
        n = int(round(t_final / h_ref))
        one = integrate(m0, R0, I, t_final / n, n, method="RKN6_14", torque=torque, save_every=n)
        # half as many steps, about twice as long (an odd count too ends at t_final)
        n_check = max(1, n // 2)
        check = integrate(m0, R0, I, t_final / n_check, n_check, method="RKN6_14", torque=torque,
                          save_every=n_check)
        label = f"RKN6_14, h = {t_final / n:g}"
        how = "against RKN6_14 at twice the step"
    acc = (float(np.linalg.norm(one.m[-1] - check.m[-1])),
           float(attitude_error(one.Q[-1], check.Q[-1])))
    return one.m[-1], one.Q[-1], label, how, acc


def _run(name: str, n0: int | None = None, levels: int | None = None,
         methods: str | Sequence[str] | None = None, h_ref: float = REFERENCE_STEP) -> Result:
    p = PROBLEMS[name]
    n0 = p["n0"] if n0 is None else int(n0)
    levels = p["levels"] if levels is None else int(levels)
    methods = method_list(methods, KRYSL_METHODS + OTHER_METHODS)
    T = p["t_final"]
    if n0 * (2**levels - 1) > MAX_STEPS:
        raise ValueError(f"n0 and levels: the runs of a method would take n0 * (2**levels - 1) "
                         f"= {n0 * (2**levels - 1)} steps, more than the {MAX_STEPS} this "
                         "experiment takes (minutes a method); lower n0 or levels")
    if p["torque"] is not None and steps_of(
            T, h_ref, f"h_ref = {h_ref!r} (t_final / h_ref, t_final = {T:g})") > MAX_STEPS:
        raise ValueError(f"h_ref = {h_ref!r}: the reference would take {T:g} / h_ref = "
                         f"{round(T / h_ref)} steps, more than the {MAX_STEPS} this experiment "
                         "takes; raise h_ref")
    m0, R0, I, torque = initial_state(name)
    m_ref, R_ref, label, how, acc = reference(name, T, h_ref)
    ns = [n0 * 2**k for k in range(levels)]
    hs = np.array([T / n for n in ns])
    err_m = {meth: np.full(levels, np.nan) for meth in methods}
    err_R = {meth: np.full(levels, np.nan) for meth in methods}
    for meth in methods:
        for k, n in enumerate(ns):
            try:
                tr = integrate(m0, R0, I, T / n, n, method=meth, torque=torque, save_every=n)
            except IntegrationError:
                continue                    # no solution at this step: left out (shown as --)
            with np.errstate(over="ignore", invalid="ignore"):
                em = np.linalg.norm(tr.m[-1] - m_ref)
            if not (np.isfinite(em) and np.isfinite(tr.Q[-1]).all()):
                continue                    # diverged beyond the float64 range: left out too
            err_m[meth][k] = em
            err_R[meth][k] = attitude_error(tr.Q[-1], R_ref)
    floor = 10.0 * max(acc)
    orders = {meth: (fit_order(hs[-3:], err_m[meth][-3:], floor),
                     fit_order(hs[-3:], err_R[meth][-3:], floor)) for meth in methods}
    cols = ["method"] + [f"h={h:.4g}" for h in hs] + ["order"]
    t_m = Table(f"||Pi - Pi_ref||_2 at t = {T:g}", cols,
                [[meth, *err_m[meth], orders[meth][0]] for meth in methods])
    t_R = Table(f"||R - R_ref||_2 at t = {T:g}", cols,
                [[meth, *err_R[meth], orders[meth][1]] for meth in methods])
    numbers = {f"order_m_{meth}": orders[meth][0] for meth in methods}
    numbers.update({f"order_R_{meth}": orders[meth][1] for meth in methods})
    numbers.update({f"error_m_{meth}": float(err_m[meth][-1]) for meth in methods})
    numbers.update({f"error_R_{meth}": float(err_R[meth][-1]) for meth in methods})
    numbers.update(reference_accuracy_m=acc[0], reference_accuracy_R=acc[1])
    source = f"Krysl 2008, {p['section']}"
    params = [("inertia", p["inertia"], source),
              ("Omega0 (body)", p["omega0"], source),
              ("R0", "identity" if not any(p["psi0"]) else f"exp(hat({p['psi0']}))",
               "frb: identity (the paper does not state it)" if not any(p["psi0"]) else source),
              ("torque", "none" if torque is None else f"{p['torque']:g} (R^T e_z) x e3", source),
              ("t_final", T, source),
              ("steps", f"t/n, n = {ns[0]} .. {ns[-1]} (doubling)", "frb: the paper gives none"),
              ("reference", label, "frb (the paper: 'an extremely small step')")]
    return Result(
        name, f"error at t = {T:g} against the step size (Krysl {p['section']})", params,
        [t_m, t_R], numbers,
        data={"hs": hs, "err_m": err_m, "err_R": err_R, "section": p["section"],
              "reference": label, "reference_accuracy": acc},
        notes=[f"reference: {label}; its accuracy ({how}): |dPi| = {acc[0]:.1e}, "
               f"|dR| = {acc[1]:.1e}", "orders: least-squares slope on the three smallest "
               f"steps, errors below {floor:.1e} (10x the reference accuracy) left out",
               "--: an error where the method found no solution or diverged, an order with fewer "
               "than two errors left to fit (NaN in the key numbers)"])


def run_free(n0: int = 400, levels: int = 6, methods: str | Sequence[str] | None = None) -> Result:
    return _run("krysl-free", n0, levels, methods)


def run_slow_top(n0: int = 500, levels: int = 6, methods: str | Sequence[str] | None = None,
                 h_ref: float = REFERENCE_STEP) -> Result:
    return _run("krysl-slow-top", n0, levels, methods, h_ref)


def run_fast_top(n0: int = 2000, levels: int = 6, methods: str | Sequence[str] | None = None,
                 h_ref: float = REFERENCE_STEP) -> Result:
    return _run("krysl-fast-top", n0, levels, methods, h_ref)


def plot(result: Result, path: str | PathLike[str]) -> None:
    plt = pyplot()
    from matplotlib.ticker import NullFormatter

    d = result.data
    fig, axes = plt.subplots(1, 2, figsize=(12.5, 4.8))
    styles = method_styles(list(d["err_m"]))
    for ax, key, label, acc in ((axes[0], "err_m", "||Pi - Pi_ref||_2", d["reference_accuracy"][0]),
                                (axes[1], "err_R", "||R - R_ref||_2", d["reference_accuracy"][1])):
        for meth, e in d[key].items():
            style = dict(styles[meth])
            if np.isfinite(e).any() and np.nanmax(e) <= 10 * acc:
                style["label"] = f"{meth} (at the reference's accuracy)"
            ax.loglog(d["hs"], e, **style)
        reference_accuracy(ax, acc, "accuracy of the reference; grey: below 10x it, "
                           "not resolved")
        ax.xaxis.set_minor_formatter(NullFormatter())      # (labelled minor ticks overlap)
        ax.set_xlabel("step size")
        ax.set_ylabel(label)
        ax.grid(True, which="both", alpha=0.3)
    handles, labels = axes[0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="lower center", ncol=4, fontsize=8, frameon=False)
    fig.suptitle(f"Krysl {d['section']}: error at the final time against the reference "
                 f"({d['reference']})", fontsize=10)
    fig.tight_layout(rect=(0, 0.16, 1, 1))
    save_figure(fig, path, layout=False)


def _options(n0: int, top: bool = False) -> tuple[Option, ...]:
    opts: tuple[Option, ...] = (Option("n0", int, n0, "coarsest number of steps", low=1,
                                       high=2**31 - 1),
            Option("levels", int, 6, "number of step sizes", low=1, high=31), _METHODS_OPT)
    if top:
        opts += (Option("h_ref", float, REFERENCE_STEP, "step of the RKN6_14 reference", low=0,
                        strict=True),)
    return opts


_METHODS_OPT = Option("methods", str, None,
                      "comma-separated methods (default: the seven Krysl methods, RKN6_14, DMV6)",
                      methods=True)
_HELP = (" Prints the error of the body momentum and of the attitude at the final time for TRAP, "
         "IMID, TRAPM, IMIDM, SWC1, AKW, BBTRAP and, beside them, the exact-flow splitting "
         "RKN6_14 and DMV6 (with a torque: DMV6 as the free part of a Strang splitting), with the "
         "orders fitted on the three smallest steps. The paper gives no step sizes: frb uses "
         "t/n for n doubling from n0 over `levels` levels.")

EXPERIMENTS: tuple[Experiment, ...] = (
    Experiment("krysl-free", "Krysl 2008, section 5.1, Fig. 1",
               "torque-free body: error at t = 100 against step size, Krysl's seven methods",
               "Krysl 2008, section 5.1: the torque-free body I = (0.9144, 1.098, 1.66), "
               "Omega = (0.45549, 0.82623, 0.03476), R0 = 1 (frb's choice; not stated), t = 100, "
               "reference the exact flow (one step of 100)." + _HELP,
               _options(400), run_free, plot),
    Experiment("krysl-slow-top", "Krysl 2008, section 5.2, Fig. 2",
               "slow Lagrangian top: error at t = 20 against step size",
               "Krysl 2008, section 5.2: the slow Lagrangian top I = (5, 5, 1), body torque "
               "20 (R^T e_z) x e3, R0 = exp(hat(0.05, 0, 0)), Omega0 = (0, 0, 5), t = 20, "
               "reference RKN6_14 at h = 1e-3 (its accuracy printed)." + _HELP,
               _options(500, top=True), run_slow_top, plot),
    Experiment("krysl-fast-top", "Krysl 2008, section 5.3, Fig. 3",
               "fast Lagrangian top: error at t = 20 against step size",
               "Krysl 2008, section 5.3: the fast Lagrangian top (Simo and Wong): as "
               "krysl-slow-top with R0 = exp(hat(0.3, 0, 0)), Omega0 = (0, 0, 50)." + _HELP,
               _options(2000, top=True), run_fast_top, plot),
)
