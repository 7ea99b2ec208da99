"""Inertia identification from attitude measurements (frb's own problem): a batch least-squares
fit of the principal moments and the initial state of a tumbling free body, with the exact
sensitivities of the trajectory against the same fit with finite-difference Jacobians.

The data: the attitude of a free body measured at ``N + 1`` times ``t_k = k dt`` as unit
quaternions with noise, ``q_k = q(t_k) exp(n_k / 2)`` (``n_k`` normal, ``sigma`` radians on each
body axis). The unknowns: the moments and the initial state ``(m0, q0)``. The attitude motion
determines the inertia only up to scale (``(c m, c I)`` turns the body as ``(m, I)``: the angular
velocity ``I^-1 m`` is the same), so ``I1`` is fixed (to 1: the fit gives the ratios
``I2 / I1``, ``I3 / I1``, and ``m0`` in units of ``I1``); the parameters are
``p = (I2, I3, m0, q0)``, 8 in all, ``q0`` updated in the body frame, ``q0 exp(dtheta / 2)``.

The residual of a measurement is ``r_k = 2 vec(conj(q_k) q(t_k; p))`` (sign of ``q_k`` chosen so
that the scalar part is positive), the rotation vector from the measured to the modelled
attitude to first order; its derivative with respect to the body-frame perturbation
``dtheta_k`` of the model is ``(s I + hat(v))`` for ``conj(q_k) q(t_k) = (s, v)``. The model is
one :func:`frb.integrate` run with ``method="EXACT"`` and ``h = dt`` (each step is the exact
flow), and ``dtheta_k / dp`` are the rows ``3:6`` of ``Trajectory.sensitivities`` with respect
to the state and the moments. The fit is Levenberg-Marquardt (Marquardt 1963, "An algorithm for
least-squares estimation of nonlinear parameters", J. SIAM 11; the scaling by ``diag(J^T J)``),
started from moments 20 % off and ``m0`` from the first measurements, and continued over
growing arcs (20, 40, 80, ... intervals, then all: over a long arc the residuals of a tumbling
body have local minima away from the truth, which a fit of all of them from the start falls
into). The finite-difference
fit is the same with the Jacobian from central differences (16 runs an iteration). The formal
standard deviations are those of the linearised least-squares problem,
``sigma^2 (J^T J)^-1`` at the solution; a Monte Carlo over noise draws checks them.
"""
from __future__ import annotations

import time
from os import PathLike
from typing import Any, Callable

import numpy as np
from numpy.typing import ArrayLike, NDArray

from ..engine import integrate
from ..reporting import Experiment, Option, Result, Table, pyplot, save_figure
from ..rotations import hat, quat_conj, quat_mul

__all__ = ["INERTIA", "M0", "Q0", "measurements", "fit", "run", "plot", "EXPERIMENT"]

_F64 = NDArray[np.float64]

#: The truth: principal moments (I1 = 1 fixes the scale), initial momentum and attitude.
INERTIA = (1.0, 1.7, 2.6)
M0 = (0.45, -0.9, 0.7)
Q0 = (0.8, 0.2, -0.4, np.sqrt(1.0 - 0.64 - 0.04 - 0.16))
#: The starting guess of the moments: 20 % off.
GUESS = (1.0, 1.7 * 0.8, 2.6 * 1.2)


def _quat_exp(v: _F64) -> _F64:
    """``exp(v / 2)`` as unit quaternions, v (..., 3) a rotation vector."""
    angle = np.linalg.norm(v, axis=-1, keepdims=True)
    half = 0.5 * angle
    sinc = np.where(angle > 0, np.sin(half) / np.where(angle > 0, angle, 1.0), 0.5)
    return np.concatenate([np.cos(half), sinc * v], axis=-1)


def measurements(dt: float, n: int, sigma: float, draw: int,
                 truth: tuple[ArrayLike, ArrayLike, ArrayLike] = (INERTIA, M0, Q0)
                 ) -> tuple[_F64, _F64]:
    """The true attitudes (n + 1, 4) at ``k dt`` (the exact flow) and the measured ones, with
    body-frame noise of ``sigma`` radians on each axis (numpy's default generator started from
    ``draw``)."""
    inertia, m0, q0 = truth
    tr = integrate(np.asarray(m0, float), np.asarray(q0, float), np.asarray(inertia, float), dt,
                   n, method="EXACT")
    noise = sigma * np.random.default_rng(draw).standard_normal((n + 1, 3))
    return tr.q, quat_mul(tr.q, _quat_exp(noise))


def _residual(q_meas: _F64, q_model: _F64) -> tuple[_F64, _F64]:
    """``r_k = 2 vec(conj(q_k) q_model_k)`` (n + 1, 3) and ``dr_k / dtheta_k`` (n + 1, 3, 3)."""
    e = quat_mul(quat_conj(q_meas), q_model)
    e = e * np.where(e[:, :1] < 0, -1.0, 1.0)
    s, v = e[:, 0], e[:, 1:]
    return 2.0 * v, s[:, None, None] * np.eye(3) + hat(v)


class _Model:
    """The residuals of the parameters ``p = (I2, I3, m0, q0)`` (``q0`` a unit quaternion) and
    their Jacobian (8 columns: I2, I3, m0, the body-frame dtheta of q0), exact or by central
    differences; counts the runs of frb.integrate."""

    def __init__(self, dt: float, q_meas: _F64, i1: float) -> None:
        self.dt, self.q_meas, self.i1, self.runs = dt, q_meas, i1, 0
        self.n = len(q_meas) - 1

    def _run(self, p: tuple[_F64, _F64, _F64], sensitivities: Any = None) -> Any:
        self.runs += 1
        inertia = np.array([self.i1, p[0][0], p[0][1]])
        extra = {} if sensitivities is None else {"sensitivities": sensitivities}
        return integrate(p[1], p[2], inertia, self.dt, self.n, method="EXACT", **extra)

    def residual(self, p: tuple[_F64, _F64, _F64]) -> _F64:
        return _residual(self.q_meas, self._run(p).q)[0].ravel()

    def exact(self, p: tuple[_F64, _F64, _F64]) -> tuple[_F64, _F64]:
        tr = self._run(p, ("state", "inertia"))
        r, drdtheta = _residual(self.q_meas, tr.q)
        s = tr.sensitivities
        dtheta = np.concatenate([s.inertia[:, 3:, 1:], s.state[:, 3:, :]], axis=2)
        return r.ravel(), np.einsum("kij,kjp->kip", drdtheta, dtheta).reshape(-1, 8)

    def finite_differences(self, p: tuple[_F64, _F64, _F64]) -> tuple[_F64, _F64]:
        r = self.residual(p)
        cols = []
        for j in range(8):
            eps = 1e-6 * (max(1.0, abs(float(p[0][j]))) if j < 2 else
                          max(1.0, float(np.linalg.norm(p[1]))) if j < 5 else 1.0)
            step = np.zeros(8)
            step[j] = eps
            cols.append((self.residual(update(p, step)) - self.residual(update(p, -step)))
                        / (2 * eps))
        return r, np.stack(cols, axis=1)


def update(p: tuple[_F64, _F64, _F64], step: _F64) -> tuple[_F64, _F64, _F64]:
    """The parameters moved by ``step`` (8,): ``I2, I3, m0`` added, ``q0 exp(dtheta / 2)``."""
    return (p[0] + step[:2], p[1] + step[2:5], quat_mul(p[2], _quat_exp(step[5:])))


def _levenberg_marquardt(model: _Model, p: tuple[_F64, _F64, _F64], exact: bool, tol: float,
                         max_iterations: int, history: list[_F64]
                         ) -> tuple[tuple[_F64, _F64, _F64], int]:
    """Levenberg-Marquardt on ``model`` from ``p`` (Marquardt's scaling ``diag(J^T J)``, the
    damping divided by 10 after a step that lowers the cost, multiplied by 10 otherwise);
    returns the parameters and the accepted steps."""
    jac: Callable[[Any], tuple[_F64, _F64]] = model.exact if exact else model.finite_differences
    r, J = jac(p)
    cost = float(r @ r)
    lam, iterations = 1e-3, 0
    while iterations < max_iterations:
        A, g = J.T @ J, J.T @ r
        try:
            step: _F64 = np.linalg.solve(A + lam * np.diag(np.diag(A)), -g).astype(np.float64)
        except np.linalg.LinAlgError:   # (a parameter the residuals do not see: more damping)
            lam *= 10.0
            if lam > 1e12:
                break
            continue
        trial = update(p, step)
        cost_trial = np.inf            # moments that are not positive: a failed step
        if np.all(trial[0] > 0):
            r_trial = model.residual(trial)
            cost_trial = float(r_trial @ r_trial)
        if cost_trial < cost:
            p, lam, iterations = trial, lam / 10.0, iterations + 1
            history.append(p[0].copy())
            scale = np.concatenate([np.maximum(1.0, np.abs(p[0])),
                                    np.maximum(1.0, np.abs(p[1])), np.ones(3)])
            if np.all(np.abs(step) <= tol * scale):
                break
            r, J = jac(p)
            cost = float(r @ r)
        else:
            lam *= 10.0
            if lam > 1e12:
                break
    return p, iterations


def fit(dt: float, q_meas: ArrayLike, guess_inertia: ArrayLike, jacobian: str = "exact",
        tol: float = 1e-10, max_iterations: int = 100, first_arc: int = 20) -> dict[str, Any]:
    """Levenberg-Marquardt fit of ``(I2, I3, m0, q0)`` to measured attitudes ``q_meas``
    (n + 1, 4) at ``k dt``, ``I1`` fixed to ``guess_inertia[0]``.

    ``jacobian``: ``"exact"`` (the sensitivities of the run) or ``"fd"`` (central differences).
    The start: the guessed moments, ``q0`` the first measurement, ``m0 = I w0`` with ``w0`` the
    least-squares rate of the first five measurements. A tumbling body's residuals over a long
    arc have many local minima away from the truth, so the fit is continued over growing arcs:
    the first ``first_arc`` intervals, then twice as many, ..., then all, each fit started
    from the last. Each stops when a step changes no parameter by more than ``tol`` (relative
    to 1 and the parameter). Returns the parameters (``inertia``, ``m0``, ``q0``), the
    iterations (accepted steps, all arcs), the runs of :func:`frb.integrate`, the processor
    time, the history of the moments, the residuals, and the formal covariance
    ``sigma_hat^2 (J^T J)^-1`` (``sigma_hat`` the residuals' rms).
    """
    q_meas = np.asarray(q_meas, dtype=float)
    guess = np.asarray(guess_inertia, dtype=float)
    n = len(q_meas) - 1
    start = time.process_time()
    # the starting state: w0 from the rotation vectors of the first measurements (in the body
    # frame of the first one), fitted by a line through the origin
    k = np.arange(1, min(5, n + 1))
    rot = np.array([_residual(q_meas[:1], q_meas[j:j + 1])[0][0] for j in k])
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        w0 = (k[:, None] * rot).sum(axis=0) / (dt * (k * k).sum())
    if not np.isfinite(guess * w0).all():
        raise ValueError(f"dt = {dt!r} is too short: the rate estimated from the first "
                         "measurements is beyond the float64 range")
    p = (guess[1:].copy(), guess * w0, q_meas[0].copy())
    arcs = [first_arc]
    while arcs[-1] < n:
        arcs.append(min(n, 2 * arcs[-1]))
    arcs[-1] = min(arcs[-1], n)
    history = [p[0].copy()]
    runs = iterations = 0
    for arc in arcs:
        model = _Model(dt, q_meas[:arc + 1], float(guess[0]))
        p, its = _levenberg_marquardt(model, p, jacobian == "exact", tol, max_iterations,
                                      history)
        iterations += its
        runs += model.runs
    r, J = model.exact(p) if jacobian == "exact" else model.finite_differences(p)
    seconds = time.process_time() - start
    sigma_hat = float(np.sqrt(r @ r / (len(r) - 8)))
    try:
        cov = sigma_hat**2 * np.linalg.inv(J.T @ J)
    except np.linalg.LinAlgError:
        raise ValueError(f"the measurements (dt = {dt!r}, n = {n}) do not determine the "
                         "moments, m0 and q0 (J^T J is singular): lengthen dt or n") from None
    return {"inertia": np.concatenate([[guess[0]], p[0]]), "m0": p[1], "q0": p[2],
            "iterations": iterations, "runs": runs, "seconds": seconds,
            "history": np.array(history), "residual": r.reshape(-1, 3), "sigma_hat": sigma_hat,
            "covariance": cov}


def _attitude_error(q: ArrayLike, q_ref: ArrayLike) -> float:
    """The angle (radians) between two attitudes."""
    e = quat_mul(quat_conj(np.asarray(q_ref, float)[None]), np.asarray(q, float)[None])[0]
    return float(2.0 * np.arctan2(np.linalg.norm(e[1:]), abs(e[0])))


def run(dt: float = 0.1, n: int = 300, sigma: float = 0.01, draw: int = 903,
        trials: int = 100) -> Result:
    """Inertia identification (frb's own problem): a free body with moments (1, 1.7, 2.6),
    m0 = (0.45, -0.9, 0.7), tumbling over n dt = 30; its attitude measured at n + 1 times with
    noise of sigma = 0.01 rad on each body axis. Fits the moment ratios I2/I1, I3/I1 (I1 fixed:
    the attitude motion determines the inertia up to scale) and the initial state (m0, q0) by
    Levenberg-Marquardt from moments 20 % off, with the exact sensitivities of frb.integrate
    (EXACT, sensitivities "state" and "inertia") and with central finite differences; prints
    iterations, runs, processor time and the errors against the truth and the formal standard
    deviations (each fit continued over growing arcs of 20, 40, ... intervals, the residuals of
    a long arc having local minima away from the truth), then a Monte Carlo of ``trials`` noise draws (the spread of the fitted ratios
    against the formal one). The measurements must span ``n dt >= 2`` s (shorter arcs leave
    the moments undetermined), and the body must turn between two of them by at least the noise
    and at most half a radian (``sigma <= |w| dt <= 0.5``, ``|w| = 0.75`` rad/s: the rate
    estimated from the first measurements, and no aliasing)."""
    rate = float(np.linalg.norm(np.array(M0) / np.array(INERTIA)))
    if not n * dt >= 2.0:
        raise ValueError(f"the measurements span n dt = {n} x {dt!r} s, less than 2 s, which "
                         "leaves the moments undetermined: lengthen dt or n")
    if not sigma <= rate * dt <= 0.5:
        raise ValueError(f"dt = {dt!r}: the body turns by |w| dt = {rate * dt:.3g} rad between "
                         f"two measurements, outside sigma = {sigma!r} .. 0.5 rad (below the "
                         "noise the first rate is not measured; above, the attitudes alias): "
                         f"take dt in {sigma / rate:.3g} .. {0.5 / rate:.3g} s")
    q_true, q_meas = measurements(dt, n, sigma, draw)
    truth = np.array(INERTIA)
    fits = {name: fit(dt, q_meas, GUESS, jacobian=name) for name in ("exact", "fd")}
    table = Table(f"the fit of {n + 1} attitudes (noise {sigma:g} rad), from moments 20 % off",
                  ["Jacobian", "iterations", "runs", "processor time (ms)", "I2/I1 error",
                   "I3/I1 error", "|m0 error|", "q0 error (rad)"], [])
    for name, f in fits.items():
        err = f["inertia"] - truth
        table.rows.append([{"exact": "exact sensitivities", "fd": "central differences"}[name],
                           f["iterations"], f["runs"], 1e3 * f["seconds"], float(err[1]),
                           float(err[2]), float(np.linalg.norm(f["m0"] - np.array(M0))),
                           _attitude_error(f["q0"], Q0)])
    ex = fits["exact"]
    std = np.sqrt(np.diag(ex["covariance"]))
    formal = Table("formal standard deviations sigma_hat^2 (J^T J)^-1 (exact fit)",
                   ["quantity", "truth", "fit", "formal sd", "error / sd"],
                   [[name, float(truth[j + 1]), float(ex["inertia"][j + 1]), float(std[j]),
                     float((ex["inertia"][j + 1] - truth[j + 1]) / std[j])]
                    for j, name in enumerate(("I2/I1", "I3/I1"))]
                   + [[f"m0[{j}]", M0[j], float(ex["m0"][j]), float(std[2 + j]),
                       float((ex["m0"][j] - M0[j]) / std[2 + j])] for j in range(3)]
                   + [["residual rms / sigma", 1.0, ex["sigma_hat"] / sigma, "--", "--"]])
    # Monte Carlo over the noise: the exact fit from the same start
    ratios = np.empty((trials, 2))
    for t in range(trials):
        _, qm = measurements(dt, n, sigma, draw + 1 + t)
        ratios[t] = fit(dt, qm, GUESS)["inertia"][1:]
    mc_sd = ratios.std(axis=0, ddof=1) if trials > 1 else np.full(2, np.nan)
    mc = Table(f"Monte Carlo of {trials} noise draws (exact fit)",
               ["quantity", "mean error", "sd of the fits", "formal sd", "ratio"],
               [[name, float(ratios[:, j].mean() - truth[j + 1]) if trials else float("nan"),
                 float(mc_sd[j]),
                 float(std[j]), float(mc_sd[j] / std[j])]
                for j, name in enumerate(("I2/I1", "I3/I1"))])
    fd = fits["fd"]
    numbers = {"exact_iterations": float(ex["iterations"]),
               "fd_iterations": float(fd["iterations"]),
               "exact_seconds": ex["seconds"], "fd_seconds": fd["seconds"],
               "exact_runs": float(ex["runs"]), "fd_runs": float(fd["runs"]),
               "i2_error_sd": float((ex["inertia"][1] - truth[1]) / std[0]),
               "i3_error_sd": float((ex["inertia"][2] - truth[2]) / std[1]),
               "exact_fd_difference": float(np.abs(ex["inertia"] - fd["inertia"]).max()),
               "residual_rms_over_sigma": ex["sigma_hat"] / sigma,
               "mc_sd_over_formal_i2": float(mc_sd[0] / std[0]),
               "mc_sd_over_formal_i3": float(mc_sd[1] / std[1])}
    fitted = integrate(ex["m0"], ex["q0"], ex["inertia"], dt, n, method="EXACT")
    return Result(
        "inertia-identification", "inertia and initial state from noisy attitudes",
        [("moments (truth)", INERTIA, "frb's choice; I1 = 1 fixes the scale"),
         ("m0 (truth)", M0, "frb"), ("q0 (truth)", tuple(round(float(x), 6) for x in Q0), "frb"),
         ("dt, n", (dt, n), "frb"), ("noise sigma (rad)", sigma, "frb"),
         ("starting moments", tuple(round(x, 6) for x in GUESS), "frb: 20 % off"),
         ("noise draw, Monte Carlo trials", (draw, trials), "frb")],
        [table, formal, mc], numbers,
        data={"t": dt * np.arange(n + 1), "q_true": q_true, "q_meas": q_meas,
              "q_fit": fitted.q, "history": {k: f["history"] for k, f in fits.items()},
              "residual": ex["residual"], "sigma": sigma, "ratios": ratios,
              "covariance": ex["covariance"][:2, :2], "fit": ex["inertia"][1:],
              "truth": truth[1:]})


def plot(result: Result, path: str | PathLike[str]) -> None:
    plt = pyplot()
    d = result.data
    fig, axes = plt.subplots(1, 3, figsize=(16, 4.6))
    ax = axes[0]
    for j, c in enumerate(("C0", "C1", "C2", "C3")):
        ax.plot(d["t"], d["q_meas"][:, j], ".", ms=2.5, color=c, label=f"q{j} measured")
        ax.plot(d["t"], d["q_fit"][:, j], "-", lw=0.8, color=c)
    ax.set_xlabel("t")
    ax.set_ylabel("attitude quaternion (points: measured, lines: fitted)")
    ax.legend(fontsize=7, ncol=2)
    ax = axes[1]
    truth = d["truth"]
    for name, style in (("exact", "o-"), ("fd", "x--")):
        h = d["history"][name]
        err = np.abs(h - truth).max(axis=1)
        ax.semilogy(np.arange(len(h)), err, style, label={"exact": "exact sensitivities",
                                                          "fd": "central differences"}[name])
    sd = np.sqrt(np.diag(d["covariance"])).max()
    ax.axhline(sd, color="gray", lw=0.8, ls=":", label="formal sd")
    ax.set_xlabel("Levenberg-Marquardt iteration")
    ax.set_ylabel("largest error of I2/I1, I3/I1")
    ax.legend(fontsize=8)
    ax = axes[2]
    ax.plot(d["ratios"][:, 0], d["ratios"][:, 1], ".", ms=4, label="fits of noise draws")
    ax.plot(*truth, "k+", ms=12, label="truth")
    # the 95 % ellipse of the formal covariance about the truth
    vals, vecs = np.linalg.eigh(d["covariance"])
    angle = np.linspace(0, 2 * np.pi, 200)
    circle = np.stack([np.cos(angle), np.sin(angle)])
    ellipse = vecs @ (np.sqrt(5.991 * vals)[:, None] * circle)
    ax.plot(truth[0] + ellipse[0], truth[1] + ellipse[1], "r-", lw=0.8,
            label="95 % formal ellipse")
    ax.set_xlabel("I2 / I1")
    ax.set_ylabel("I3 / I1")
    ax.legend(fontsize=8)
    for ax in axes:
        ax.grid(True, alpha=0.3)
    save_figure(fig, path)


_OPTIONS = (Option("dt", float, 0.1, "time between measurements, s (the body turning by "
                   "sigma .. 0.5 rad between two, n dt >= 2 s)", low=0, strict=True),
            Option("n", int, 300, "measurements after the first", low=10, high=10**6),
            Option("sigma", float, 0.01, "noise of each body axis, rad", low=0, strict=True,
                   high=0.3),
            Option("draw", int, 903, "start of the noise's random generator", low=0),
            Option("trials", int, 100, "noise draws of the Monte Carlo (a spread needs two)",
                   low=2, high=10**5))

EXPERIMENT: Experiment = Experiment.from_run(
    "inertia-identification", "frb's own problem (attitude measurements, Levenberg-Marquardt)",
    "inertia ratios and initial state from noisy attitudes: exact sensitivities against finite "
    "differences", _OPTIONS, run, plot)
