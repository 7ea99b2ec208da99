"""Work-precision comparison of the methods of :func:`frb.integrate` (``frb.compare``).

:func:`compare` runs chosen methods on one problem (a batch of bodies, a torque or none, a final
time, a ladder of step counts) and reports for each method and step: the error at the final time
against a stated reference, the cost per body-step measured in the same run, and the change of
the problem's invariants. ``frb-compare`` is the command-line front end; ``Comparison.plot``
draws error against cost on log axes, one line per method.

Reference: the exact flow (one step of ``t_final``) for a free body; otherwise RKN6_14 at a step
``ref_factor`` times smaller than the smallest step compared, whose own accuracy is estimated by
the same method at twice its step and reported.
"""
from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from os import PathLike
from typing import Any, Sequence

import numpy as np
from numpy.typing import ArrayLike, NDArray

from . import _validate
from ._kept import available_memory, beyond_memory
from ._messages import IntegrationError, step_renamed
from .engine import integrate
from .methods import METHODS
from .trajectory import TorqueLike, Trajectory, states_kinetic_energy
from .reporting import (Table, attitude_error, figure_path, format_value, method_list, pyplot,
                        save_figure)
from .torques import (ConstantField, LinearDamping, Rotor, gravity_gradient, heavy_top,
                      linear_damping, rotor)

__all__ = ["compare", "Comparison", "PROBLEMS", "DEFAULT_METHODS", "DIVERGED", "random_bodies"]

#: Problems by name: the torque each applies (``None``: free body).
PROBLEMS: dict[str, TorqueLike | None] = {
    "free": None,
    "heavy-top": heavy_top(1.0, (0.0, 0.0, 0.5)),
    "gravity-gradient": gravity_gradient(1.0),
    # a torque of m whose exact solution is known: the reference is EXACT, exact at any step
    "damped": linear_damping(0.5),
    # a dual-spin body (a rotor of momentum 0.8 along body axis 3): the gyrostat, whose reference
    # is EXACT too
    "gyrostat": rotor((0.0, 0.0, 0.8)),
}

#: Torques whose reference is the exact flow of EXACT in one step (exact at any step).
_EXACT_REFERENCE: tuple[type, ...] = (LinearDamping, Rotor)

#: Methods compared by default (one or two of each family; every method with ``methods="all"``).
DEFAULT_METHODS = ("EXACT", "RKN6_14", "STRANG", "DMV2", "DMV6", "DMV8", "NYSTROM4", "SPLIT3",
                   "RK4", "TERZE", "IMID", "TRAPM", "AKW")

#: Step counts of the default ladder (``h = t_final / n``).
DEFAULT_STEPS = (5, 10, 20, 40, 80, 160, 320, 640)


def random_bodies(n: int, rng: int | None = 0
                  ) -> tuple[NDArray[np.float64], NDArray[np.float64], NDArray[np.float64]]:
    """``n`` random bodies: unit momenta, inertia moments in [0.5, 2], uniform attitudes
    (unit quaternions, scalar first). Returns ``(m0, q0, inertia)``, each ``(n, k)``.

    ``rng`` starts numpy's random generator (``numpy.random.default_rng(rng)``): the same value,
    the same bodies.

    Examples
    --------
    >>> from frb.workprecision import random_bodies
    >>> m0, q0, inertia = random_bodies(3, rng=1)
    >>> m0.shape, q0.shape, inertia.shape
    ((3, 3), (3, 4), (3, 3))
    """
    n = _validate.count(n, "n")
    if beyond_memory(8.0 * n * 14) is not None:     # (the three arrays and a temporary)
        raise ValueError(f"n: {n} random bodies would not fit in the memory available")
    if not (rng is None or isinstance(rng, np.random.Generator)
            or (isinstance(rng, (int, np.integer)) and not isinstance(rng, (bool, np.bool_)))):
        raise TypeError(f"rng must be None, an integer or a numpy.random.Generator, got "
                        f"{type(rng).__name__}")
    if isinstance(rng, (int, np.integer)) and rng < 0:
        raise ValueError(f"rng must be a non-negative integer, got {rng}")
    generator = np.random.default_rng(rng)
    m = generator.normal(size=(n, 3))
    m /= np.linalg.norm(m, axis=1)[:, None]
    q = generator.normal(size=(n, 4))
    q /= np.linalg.norm(q, axis=1)[:, None]
    inertia = generator.uniform(0.5, 2.0, size=(n, 3))
    return m, q, inertia


def _applies(name: str, torque: TorqueLike | None) -> bool:
    return METHODS[name].accepts(torque)


@dataclass
class Row:
    method: str
    nsteps: int
    h: float
    error_m: float | None = None
    error_attitude: float | None = None
    cost_ns: float | None = None
    energy: float | None = None
    norm_m: float | None = None
    momentum: float | None = None
    #: why the run gives no error: ``"failed at step k"`` or ``"diverged"`` (in the table), and
    #: the whole reason (:meth:`Comparison.format` lists them under the table)
    failure: str = ""
    reason: str = ""

    @property
    def error(self) -> float | None:
        if self.error_m is None:
            return None
        # (error_m and error_attitude are set together)
        return max(self.error_m, self.error_attitude)  # type: ignore[type-var]


@dataclass
class Comparison:
    """The result of :func:`compare`: one :class:`Row` per method and step count."""

    problem: str
    bodies: int
    t_final: float
    reference: str
    #: the accuracy of the reference, estimated at half its step count (None for a reference
    #: given by the user)
    reference_accuracy: float | None
    invariants: tuple[str, ...]
    rows: list[Row] = field(default_factory=list)

    def table(self) -> Table:
        """The rows as a :class:`frb.reporting.Table` (what :meth:`format` prints)."""
        cols = ["method", "n", "h", "error m", "error Q", "ns/body-step"]
        cols += [f"drift {k}" for k in self.invariants]
        t = Table(f"{self.problem}: {self.bodies} bodies to t = {self.t_final:g}; error at the "
                  f"final time (m relative, Q spectral norm), largest over the bodies", cols)
        for r in self.rows:
            inv = {"energy": r.energy, "|m|": r.norm_m, "Qm": r.momentum}
            t.rows.append([r.method, r.nsteps, r.h, r.error_m if not r.failure else r.failure,
                           r.error_attitude, r.cost_ns] + [inv[k] for k in self.invariants])
        return t

    def _accuracy(self) -> str:
        if self.reference_accuracy is None:
            return "accuracy not estimated"
        return f"accuracy {format_value(self.reference_accuracy)}"

    def failures(self) -> list[str]:
        """One line per run that gave no error: the method, the step count and the reason."""
        return [f"{r.method} n={r.nsteps}: {r.reason or r.failure}" for r in self.rows
                if r.failure]

    def format(self) -> str:
        """The table as plain text, with the reference, its accuracy and the reasons of the
        failed runs."""
        failed = self.failures()
        return (self.table().format() + f"\nreference: {self.reference} ({self._accuracy()}); "
                "costs measured in this run"
                + ("\nfailed runs:\n  " + "\n  ".join(failed) if failed else ""))

    __str__ = format

    def to_markdown(self) -> str:
        """The table in Markdown, for a report (the reasons of failed runs below it)."""
        failed = self.failures()
        return self.table().to_markdown() + (
            "\n\nFailed runs:\n\n" + "\n".join(f"- {line}" for line in failed) if failed else "")

    def methods(self) -> list[str]:
        """The methods compared, in the order of the rows."""
        return list(dict.fromkeys(r.method for r in self.rows))

    def best(self, tolerance: float) -> tuple[str, int, float] | None:
        """The run that reaches ``tolerance`` at the least cost to ``t_final``:
        ``(method, nsteps, cost per body in ns)``, or None."""
        tolerance = _validate.real_scalar(tolerance, "tolerance")
        if tolerance < 0:
            raise ValueError(f"tolerance must be >= 0, got {tolerance!r}")
        ok = [r for r in self.rows if not r.failure and r.error is not None
              and r.error <= tolerance]
        if not ok:
            return None
        # (a row with an error has a cost: cost_ns is None only for a failed run)
        r = min(ok, key=lambda r: r.cost_ns * r.nsteps)  # type: ignore[operator]
        return r.method, r.nsteps, r.cost_ns * r.nsteps  # type: ignore[operator]

    def plot(self, path: str | PathLike[str]) -> str:
        """Draw the error at ``t_final`` against the cost to reach it, one curve per method, to
        ``path`` (matplotlib, the ``plot`` extra): a file (format from its suffix, ``.png``
        when it has none) or an existing folder (``path/compare-PROBLEM.png``). Returns the
        path written."""
        path = figure_path(path, "compare-" + "".join(c if c.isalnum() or c in "-_" else "-"
                                                      for c in self.problem)[:40])
        plt = pyplot()
        fig, ax = plt.subplots(figsize=(7.5, 5.5))
        markers = "os^vD<>phX*"
        for i, meth in enumerate(self.methods()):
            pts = [(r.cost_ns * r.nsteps, r.error) for r in self.rows  # type: ignore[operator]
                   if r.method == meth and not r.failure and r.error is not None and r.error > 0]
            if pts:
                c, e = zip(*sorted(pts))
                ax.loglog(c, e, marker=markers[i % len(markers)], ms=4, lw=1, label=meth,
                          ls="-" if i < 10 else "--")
        ax.set_xlabel("cost to t_final per body (ns), measured")
        ax.set_ylabel("error at t_final (max of m and Q)")
        ax.set_title(f"work-precision: {self.problem}, {self.bodies} bodies, "
                     f"t = {self.t_final:g}", fontsize=10)
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=7, ncol=2)
        save_figure(fig, path)
        return path


def _invariants(torque: TorqueLike | None) -> tuple[str, ...]:
    if torque is None:
        return ("energy", "|m|", "Qm")
    if isinstance(torque, ConstantField):      # (and HeavyTop, a field on a body point)
        return ("energy", "Qm")          # Qm: its component along the field
    return ()


def _drifts(tr: Trajectory, torque: TorqueLike | None) -> dict[str, float | None]:
    """Largest change of energy (relative), |m| (relative) and Qm over the saved states."""
    out: dict[str, float | None] = {"energy": None, "|m|": None, "Qm": None}
    if torque is not None and not isinstance(torque, ConstantField):
        return out
    if torque is None:
        # the drifts of a free body do not change under m -> 2^-a m, I -> 2^-c I: taken at
        # |m0| and the largest moment near 1, so that no norm or energy overflows or underflows
        a = int(np.frexp(np.max(np.abs(tr.m[0])))[1])
        c = int(np.frexp(np.max(tr.inertia))[1])
        ms = np.ldexp(tr.m, -a)
        T = states_kinetic_energy(ms, np.ldexp(tr.inertia, -c))
        out["energy"] = float(np.max(np.abs(T - T[0]) / T[0]))
        nm = np.linalg.norm(ms, axis=-1)
        out["|m|"] = float(np.max(np.abs(nm / nm[0] - 1)))
        pi = np.einsum("...ij,...j->...i", tr.Q, ms)
        out["Qm"] = float(np.max(np.linalg.norm(pi - pi[0], axis=-1) / nm[0]))
        return out
    T, U = tr.kinetic_energy, tr.potential_energy
    E = T + U
    scale = T[0] + np.abs(U[0])             # not |E0|, which may be near zero with a potential
    out["energy"] = float(np.max(np.abs(E - E[0]) / scale))
    u = torque.u0 / np.linalg.norm(torque.u0)
    v = tr.spatial_momentum @ u
    out["Qm"] = float(np.max(np.abs(v - v[0]) / np.linalg.norm(tr.m[0], axis=-1)))
    return out


def _timed(*args: Any, repeat: int, min_time: float, **kw: Any) -> tuple[Trajectory, float]:
    """Run ``integrate`` at least ``repeat`` times and until ``min_time`` seconds are spent (at
    most 5 runs); return the trajectory and the fastest wall time."""
    best, tr, spent, runs = math.inf, None, 0.0, 0
    while runs < repeat or (spent < min_time and runs < 5):
        t0 = time.perf_counter()
        tr = integrate(*args, **kw)
        dt = time.perf_counter() - t0
        best, spent, runs = min(best, dt), spent + dt, runs + 1
    return tr, best  # type: ignore[return-value]  # (the loop runs at least once)


#: The keywords of :func:`compare` besides its named parameters, with their defaults.
OPTIONS: dict[str, Any] = {"rng": 0, "ref_factor": 8, "repeat": 1, "min_time": 0.05, "saves": 10,
                           "coefficients": None, "reference": None}

#: A run whose error at the final time is above this (relative error of m, or the spectral norm of
#: the attitude error, which is at most 2) has no correct digit left: it is marked as diverged.
DIVERGED = 1.0

#: Bytes a random body takes in :func:`compare` for each state it keeps (m, Q, the quaternion,
#: and the temporaries of the errors and drifts), a bound used to refuse batches that do not fit.
_BYTES_PER_BODY_STATE = 8 * 40


def _check_memory(bodies: int, saves: int) -> None:
    """ValueError naming ``bodies`` when the runs of that many bodies would not fit in memory
    (and ``saves`` when more than its default, the only ``saves`` the command line has)."""
    need = float(bodies) * (saves + 2) * _BYTES_PER_BODY_STATE
    if need < 2.0**26:
        return
    free = available_memory()
    if need > 0.5 * free:
        fewer_saves = f" or keep fewer states (saves = {saves})" if saves > OPTIONS["saves"] else ""
        raise ValueError(f"bodies = {bodies}: the runs would need about {need / 2**30:.3g} GiB, "
                         f"more than the memory available ({free / 2**30:.3g} GiB); compare fewer "
                         f"bodies{fewer_saves}")


def _reference_states(reference: Any, m0: NDArray[np.float64], nb: int, single: bool
                      ) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """The user's reference ``(m, attitude)`` at ``t_final`` as (m, Q), checked against the
    bodies (shapes of ``m0``; the attitude unit quaternions or rotation matrices)."""
    from .rotations import quat_to_matrix

    try:
        m_ref, att_ref = reference
    except (TypeError, ValueError):
        raise TypeError("reference must be a pair (m, attitude) of the states at t_final, got "
                        f"{type(reference).__name__}") from None
    m_ref = _validate.real_array(m_ref, "reference m")
    if m_ref.shape != m0.shape:
        raise ValueError(f"reference m must have the shape of m0, {m0.shape}, got {m_ref.shape}")
    att = _validate.real_array(att_ref, "reference attitude")
    shapes = ((4,), (3, 3)) if single else ((nb, 4), (nb, 3, 3))
    if att.shape not in shapes:
        raise ValueError(f"reference attitude must have shape {shapes[0]} (quaternions) or "
                         f"{shapes[1]} (matrices), got {att.shape}")
    if att.shape[-1] == 4:
        norms = np.linalg.norm(att.reshape(-1, 4), axis=1)
        if not (np.abs(norms - 1.0) <= _validate.ORTHOGONALITY_TOLERANCE).all():
            raise ValueError("reference attitude must be unit quaternions (scalar first)")
        return m_ref, quat_to_matrix(att)
    Q = att.reshape(-1, 3, 3)
    eye = np.einsum("kji,kjl->kil", Q, Q) - np.eye(3)
    if not (np.abs(eye) <= 1e-8).all() or not (np.linalg.det(Q) > 0).all():
        raise ValueError("reference attitude must be rotation matrices")
    return m_ref, att


def compare(methods: Sequence[str] | str | None = None, *, problem: str | None = "free",
            torque: TorqueLike | None = None, m0: ArrayLike | None = None,
            attitude0: ArrayLike | None = None, inertia: ArrayLike | None = None,
            bodies: int = 500, t_final: float = 10.0, steps: Sequence[int] = DEFAULT_STEPS,
            **options: Any) -> Comparison:
    """Work-precision table of ``methods`` on one problem.

    Parameters
    ----------
    methods : sequence of str or "all", optional
        Names of :data:`frb.METHODS`: by default :data:`DEFAULT_METHODS`, with ``"all"``
        every method; methods that do not apply to the torque are left out of these two.
    problem : {"free", "heavy-top", "gravity-gradient", "damped", "gyrostat"}
        A named problem (:data:`PROBLEMS`: heavy top of weight 1 with centre (0, 0, 0.5);
        gravity gradient of orbital rate 1; linear damping of rate 0.5; a rotor of momentum 0.8
        along body axis 3; the last two have the exact flow of EXACT as their reference);
        ignored when ``torque`` is given.
    torque : a torque of :mod:`frb.torques` or a callable, optional
        Any torque :func:`frb.integrate` accepts.
    m0, attitude0, inertia : array_like, optional
        Initial body momentum, attitude (quaternion scalar first, or matrix) and moments, for
        one body or ``(N, ...)`` bodies; by default ``bodies`` random bodies
        (:func:`random_bodies`).
    bodies : int
        Number of random bodies when ``m0`` is not given.
    t_final : float
        Final time; the steps are ``h = t_final / n`` for ``n`` in ``steps``.
    steps : sequence of int
        Step counts.
    **options
        The keywords of :data:`OPTIONS`:
    rng : int
        Start of the random generator of the random bodies (:func:`random_bodies`).
    ref_factor : int
        The RKN6_14 reference (torqued problems) runs ``ref_factor * max(steps)`` steps.
    repeat, min_time : int, float
        Each method and step runs at least ``repeat`` times and more (up to 5) until
        ``min_time`` seconds are spent; the fastest run is the cost reported.
    saves : int
        States kept per run for the invariants (evenly spaced).
    coefficients : pair of sequences, optional
        The user's splitting coefficients ``(a, b)`` (as :func:`frb.integrate`): compared as
        the method ``SPLITTING`` (added to the default methods, or named in ``methods``).
    reference : pair (m, attitude), optional
        The states at ``t_final`` the errors are measured against (shapes of ``m0``; unit
        quaternions or rotation matrices), e.g. from a computation of higher precision; with
        ``m0``, ``attitude0`` and ``inertia``. Its accuracy is not estimated.

    Returns
    -------
    Comparison
        ``rows`` (method, n, h, errors, cost per body-step in ns, drifts of the invariants),
        ``reference`` and its accuracy; ``format()``, ``to_markdown()``, ``plot(path)``. A run
        that fails (:class:`frb.IntegrationError`) or ends with an error above
        :data:`DIVERGED` (no correct digit) is marked as failed, with its reason
        (``failures()``), and is neither plotted nor chosen by ``best``.

    Raises
    ------
    TypeError, ValueError
        Arguments as :func:`frb.integrate` checks them (naming ``t_final`` and ``steps``, not
        the step ``h`` they make), a body at rest (a relative error of ``m`` needs ``m != 0``),
        a batch of ``bodies`` that would not fit in memory.

    Examples
    --------
    >>> import frb
    >>> table = frb.compare(["EXACT", "DMV6"], bodies=10, steps=(10, 20), t_final=2.0)
    >>> [(r.method, r.nsteps) for r in table.rows]
    [('EXACT', 10), ('EXACT', 20), ('DMV6', 10), ('DMV6', 20)]
    >>> bool(max(r.error_m for r in table.rows if r.method == "EXACT") < 1e-13)
    True
    """
    if torque is None:
        label = _validate.choice(problem, "problem", PROBLEMS, f"one of {', '.join(PROBLEMS)}")
        torque = PROBLEMS[label]
    else:
        label = repr(torque)
    given = [k for k, v in (("m0", m0), ("attitude0", attitude0), ("inertia", inertia))
             if v is not None]
    if given and len(given) < 3:
        raise ValueError(f"give m0, attitude0 and inertia together (got only {', '.join(given)}); "
                         "without them the bodies are random")
    bodies = _validate.integer(bodies, "bodies", 1, _validate.INT32_MAX)
    opts = _validate.options_of(options, OPTIONS, "compare")
    rng, ref_factor, repeat, min_time, saves, coefficients, reference = (opts[k] for k in OPTIONS)
    if reference is not None and m0 is None:
        raise ValueError("reference needs the bodies it belongs to: give m0, attitude0 and "
                         "inertia with it")
    if coefficients is not None:
        from .schedules import coefficients as check_coefficients
        coefficients = check_coefficients(None, coefficients)
    repeat = _validate.integer(repeat, "repeat", 1, 1000)
    saves = _validate.integer(saves, "saves", 1, _validate.INT32_MAX)
    ref_factor = _validate.integer(ref_factor, "ref_factor", 1, _validate.INT32_MAX)
    min_time = _validate.real_scalar(min_time, "min_time")
    if min_time < 0:
        raise ValueError(f"min_time must be >= 0 seconds, got {min_time!r}")
    t_final = _validate.real_scalar(t_final, "t_final")
    if not t_final > 0:
        raise ValueError(f"t_final must be positive and finite, got {t_final!r}")
    if rng is not None:
        rng = _validate.integer(rng, "rng", 0)
    if isinstance(steps, (str, bytes, bytearray, memoryview)) or not hasattr(steps, "__iter__") or \
            (isinstance(steps, np.ndarray) and steps.ndim == 0):
        raise TypeError(f"steps must be a sequence of step counts, got {steps!r}")
    steps = sorted({_validate.integer(n, "steps", 1, _validate.INT32_MAX - 1) for n in steps})
    if not steps:
        raise ValueError("steps must hold at least one step count, got none")
    if torque is not None and type(torque) not in _EXACT_REFERENCE \
            and ref_factor * steps[-1] > _validate.INT32_MAX - 1:
        raise ValueError(f"ref_factor * max(steps) = {ref_factor * steps[-1]} steps of the "
                         "reference: more than a run can take (2147483646)")
    if m0 is None:
        _check_memory(bodies, saves)
        m0, attitude0, inertia = random_bodies(bodies, rng)
    assert attitude0 is not None and inertia is not None    # (all three, or none, above)
    m0 = _validate.real_array(m0, "m0")
    if m0.ndim not in (1, 2) or m0.shape[-1] != 3:
        raise ValueError(f"m0 must have shape (3,) or (N, 3), got {m0.shape}")
    nb = 1 if m0.ndim == 1 else m0.shape[0]
    if nb == 0:
        raise ValueError("m0 holds no bodies (shape (0, 3)): a comparison needs at least one")
    if m0.shape[-1:] == (3,) and m0.size:
        rest = ~(np.abs(m0.reshape(-1, 3)) > 0).any(axis=1)
        if rest.any():
            where = "" if m0.ndim == 1 else f" (body {int(np.argmax(rest))})"
            raise ValueError(f"m0 is zero{where}: a body at rest has no relative error of m to "
                             "compare (give it a non-zero momentum, or leave it out)")
    if methods is not None and not isinstance(methods, str) and not (
            isinstance(methods, (list, tuple)) and all(isinstance(s, str) for s in methods)):
        raise TypeError(f"methods must be a method name, comma-separated names, 'all' or a "
                        f"sequence of names, got {methods!r}")
    given_methods = methods
    if methods is None or methods == "all":
        pool = DEFAULT_METHODS if methods is None else tuple(METHODS)
        methods = [m for m in pool if _applies(m, torque)]
        if coefficients is not None:
            methods.append("SPLITTING")
    else:
        methods = list(method_list(methods, ()))
        if not methods or not all(methods):
            raise ValueError(f"methods must name at least one method (no empty name), got "
                             f"{given_methods!r}")
        for m in methods:
            if m == "SPLITTING":
                if coefficients is None:
                    raise ValueError("method SPLITTING needs the coefficients: "
                                     "compare(..., coefficients=(a, b))")
                continue
            if m not in METHODS:
                raise ValueError(f"unknown method {m!r}; one of {', '.join(METHODS)}")
            if not _applies(m, torque):
                raise ValueError(f"{m} does not apply to the torque {torque!r}")

    try:
        common: dict[str, Any] = dict(torque=torque)
        if reference is not None:
            m_ref, Q_ref = _reference_states(reference, m0, nb, m0.ndim == 1)
            ref_label, acc = "given by the user", None
        elif torque is None or type(torque) in _EXACT_REFERENCE:
            # the free body, the damped body (the free flow in the time (1 - e^{-ct}) / c), or
            # the gyrostat: the exact flow in one step
            ref = integrate(m0, attitude0, inertia, t_final, 1, method="EXACT", **common)
            chk = integrate(m0, attitude0, inertia, t_final / 100, 100, method="EXACT",
                            save_every=100, **common)
            ref_label = f"exact flow, one step of {t_final:g}"
        else:
            n_ref = ref_factor * steps[-1]
            ref = integrate(m0, attitude0, inertia, t_final / n_ref, n_ref, method="RKN6_14",
                            save_every=n_ref, **common)
            # the check: half as many steps (an odd count too ends at t_final)
            n_check = max(1, n_ref // 2)
            chk = integrate(m0, attitude0, inertia, t_final / n_check, n_check,
                            method="RKN6_14", save_every=n_check, **common)
            ref_label = f"RKN6_14 with h = {t_final / n_ref:g}"
        if reference is None:
            m_ref, Q_ref = ref.m[-1], ref.Q[-1]
        scale = _validate.norm3(np.atleast_2d(m_ref))
        if not (scale > 0).all():
            raise ValueError("the reference momentum is zero at t_final: the relative error of m "
                             "is not defined")
        if reference is None:
            acc = float(max(np.max(_validate.norm3(np.atleast_2d(chk.m[-1] - m_ref)) / scale),
                            np.max(attitude_error(chk.Q[-1], Q_ref))))

        out = Comparison(label, nb, float(t_final), ref_label, acc, _invariants(torque))
        for meth in methods:
            method_kw: dict[str, Any] = dict(method=meth) if meth != "SPLITTING" else \
                dict(coefficients=coefficients)
            for n in steps:
                every = max(1, n // max(1, saves))
                try:
                    with np.errstate(over="ignore", invalid="ignore"):
                        tr, wall = _timed(m0, attitude0, inertia, t_final / n, n, save_every=every,
                                          repeat=repeat, min_time=min_time, **method_kw, **common)
                except IntegrationError as exc:
                    reason = str(exc).replace("a smaller step h", f"more steps (h = t_final / {n})")
                    out.rows.append(Row(meth, n, t_final / n, failure=f"failed at step {exc.step}",
                                        reason=reason.replace(
                                            "the step h ", f"the step h = t_final / {n} ")))
                    continue
                with np.errstate(over="ignore", invalid="ignore"):
                    em = float(np.max(_validate.norm3(np.atleast_2d(tr.m[-1] - m_ref)) / scale))
                    eq = float(np.max(attitude_error(tr.Q[-1], Q_ref)))
                error = max(em, eq)
                if not error <= DIVERGED:
                    out.rows.append(Row(meth, n, t_final / n, failure="diverged", reason=(
                        f"diverged: error {error:.3g} at t_final (above {DIVERGED:g}: no correct "
                        "digit left); try more steps")))
                    continue
                with np.errstate(over="ignore", invalid="ignore"):
                    d = _drifts(tr, torque)
                out.rows.append(Row(meth, n, t_final / n, error_m=em, error_attitude=eq,
                                    cost_ns=wall / (nb * n) * 1e9, energy=d["energy"],
                                    norm_m=d["|m|"], momentum=d["Qm"]))
        return out
    except ValueError as exc:
        # the routes name the step h; here it is t_final / n
        raise step_renamed(exc, "t_final / n") from None
