"""Pieces shared by the experiments: the result record, its table format, plotting set-up,
exact closed-form quantities of the free body, and error norms."""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from os import PathLike
from typing import Any, Callable, Union

import numpy as np
from numpy.typing import ArrayLike, NDArray

__all__ = ["Experiment", "Option", "Table", "Result", "pyplot", "momentum_period", "precession", "fit_order",
           "attitude_error", "format_value", "batch_error"]


def format_value(x: Any) -> str:
    """A number as printed in the tables (``%.3e`` for floats, ``--`` for None/NaN)."""
    if x is None:
        return "--"
    if isinstance(x, (bool, np.bool_)):
        return "yes" if x else "no"
    if isinstance(x, (int, np.integer)):
        return str(int(x))
    if isinstance(x, (float, np.floating)):
        if not math.isfinite(x):
            return "--"
        # (numpy's stubs make abs() of float | np.floating an object)
        if x != 0 and (abs(x) < 1e-3 or abs(x) >= 1e5):  # type: ignore[operator]
            return f"{x:.3e}"
        return f"{x:.6g}"
    return str(x)


@dataclass
class Table:
    """A table of an experiment: a title, column names and rows of values."""

    title: str
    columns: list[str]
    rows: list[list[Any]] = field(default_factory=list)

    def format(self) -> str:
        cells = [[format_value(v) for v in row] for row in self.rows]
        widths = [max([len(c)] + [len(r[i]) for r in cells]) for i, c in enumerate(self.columns)]
        line = "  ".join(c.ljust(w) for c, w in zip(self.columns, widths))
        out = [self.title, line, "  ".join("-" * w for w in widths)]
        out += ["  ".join(v.rjust(w) if i else v.ljust(w) for i, (v, w) in
                          enumerate(zip(r, widths))) for r in cells]
        return "\n".join(out)

    def to_markdown(self) -> str:
        head = "| " + " | ".join(self.columns) + " |"
        sep = "|" + "|".join("---" for _ in self.columns) + "|"
        body = ["| " + " | ".join(format_value(v) for v in r) + " |" for r in self.rows]
        return "\n".join([head, sep, *body])


@dataclass
class Result:
    """What an experiment computed.

    ``parameters`` lists ``(name, value, source)``, where ``source`` says whether the seed
    gives the value or frb chose it; ``numbers`` holds the key numbers (floats, by name);
    ``tables`` the printed tables; ``data`` the arrays the figure is drawn from.
    """

    name: str
    title: str
    parameters: list[tuple[str, object, str]]
    tables: list[Table]
    numbers: dict[str, float]
    data: dict[str, Any] = field(default_factory=dict, repr=False)
    notes: list[str] = field(default_factory=list)

    def format(self) -> str:
        out = [f"{self.name}: {self.title}", "", "parameters:"]
        width = max(len(p[0]) for p in self.parameters)
        for name, value, source in self.parameters:
            out.append(f"  {name.ljust(width)}  {format_value(value) if np.isscalar(value) else value}"
                       f"   [{source}]")
        for t in self.tables:
            out += ["", t.format()]
        if self.notes:
            out.append("")
            out += self.notes
        return "\n".join(out)

    def __str__(self) -> str:
        return self.format()


def pyplot() -> Any:
    """matplotlib.pyplot with a non-interactive backend, or ImportError saying how to get it."""
    try:
        import matplotlib
    except ImportError:  # pragma: no cover - depends on the environment
        raise ImportError("plots need matplotlib: pip install 'frb[plot]'") from None
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def _agm(a: float, b: float) -> float:
    for _ in range(64):                     # quadratic convergence: a few iterations suffice
        if a - b <= 4e-16 * a:
            break
        a, b = 0.5 * (a + b), math.sqrt(a * b)
    return 0.5 * (a + b)


def momentum_period(m: ArrayLike, inertia: ArrayLike) -> float:
    """Period of the body momentum ``m(t)`` of the free body (inf on a separatrix or for a
    symmetric body, whose momentum rotates with period ``2 pi / |Omega|`` instead).

    With the moments sorted ``I1 < I2 < I3``, ``G = |m|^2`` and ``2T = sum m_i^2 / I_i``, the
    momentum is a Jacobi cn/sn/dn motion of period ``4 K(k) / lambda`` with
    ``lambda^2 = (G - 2T I1)(I3 - I2) / (I1 I2 I3)``,
    ``k^2 = (I2 - I1)(2T I3 - G) / ((I3 - I2)(G - 2T I1))`` when ``G > 2T I2`` (circulation
    about the axis of I3) and the same with 1 and 3 exchanged otherwise.
    """
    m = np.asarray(m, dtype=float)
    I = np.asarray(inertia, dtype=float)
    order = np.argsort(I)
    m, I = m[order], I[order]
    G = float(m @ m)
    T2 = float(np.sum(m * m / I))
    I1, I2, I3 = I
    if G > T2 * I2:
        lam2 = (G - T2 * I1) * (I3 - I2) / (I1 * I2 * I3)
        k2 = (I2 - I1) * (T2 * I3 - G) / ((I3 - I2) * (G - T2 * I1))
    else:
        lam2 = (T2 * I3 - G) * (I2 - I1) / (I1 * I2 * I3)
        k2 = (I3 - I2) * (G - T2 * I1) / ((I2 - I1) * (T2 * I3 - G))
    if lam2 <= 0 or k2 >= 1:
        return math.inf
    K = math.pi / (2.0 * _agm(1.0, math.sqrt(1.0 - k2)))
    return 4.0 * K / math.sqrt(lam2)


def precession(m: ArrayLike, inertia_transverse: float, inertia_axial: float, axis_angle: float
               ) -> dict[str, float]:
    """Landau's precession of a free symmetric top (eqs. (10), (11) of seed 001):
    ``Omega_pr = |l| / I1`` and ``Omega_3 = (|l| / I3) cos(theta)``."""
    norm = float(np.linalg.norm(m))
    return {"Omega_pr": norm / inertia_transverse,
            "Omega_3": norm / inertia_axial * math.cos(axis_angle)}


def fit_order(hs: ArrayLike, errors: ArrayLike, floor: float = 0.0) -> float:
    """Least-squares slope of ``log error`` against ``log h`` over the points whose error is
    finite and above ``floor`` (NaN when fewer than two remain)."""
    hs = np.asarray(hs, dtype=float)
    e = np.asarray(errors, dtype=float)
    keep = np.isfinite(e) & (e > floor)
    if keep.sum() < 2:
        return math.nan
    return float(np.polyfit(np.log(hs[keep]), np.log(e[keep]), 1)[0])


def attitude_error(Q: ArrayLike, Q_ref: ArrayLike) -> NDArray[np.float64]:
    """Spectral norm ``||Q - Q_ref||_2`` (the norm of Krysl's figures), per matrix."""
    return np.linalg.norm(np.asarray(Q) - np.asarray(Q_ref), ord=2, axis=(-2, -1))


def batch_error(m: NDArray[np.float64], Q: ArrayLike, m_ref: NDArray[np.float64], Q_ref: ArrayLike
                ) -> tuple[float, float]:
    """Largest over the bodies of ``|m - m_ref| / |m_ref|`` and of ``||Q - Q_ref||_2``."""
    em = np.linalg.norm(m - m_ref, axis=-1) / np.linalg.norm(m_ref, axis=-1)
    return float(em.max()), float(attitude_error(Q, Q_ref).max())


@dataclass(frozen=True)
class Option:
    """A command-line option of an experiment: ``--name VALUE`` (``type`` converts VALUE)."""

    name: str
    type: Callable[[str], Any]
    default: Any
    help: str


@dataclass(frozen=True)
class Experiment:
    """A published experiment: ``run(**options) -> Result`` and ``plot(result, path)``."""

    name: str
    seed: str
    summary: str
    description: str
    options: tuple[Option, ...]
    run: Callable[..., Result]
    plot: Callable[[Result, Union[str, PathLike[str]]], None]

    def defaults(self) -> dict[str, Any]:
        return {o.name: o.default for o in self.options}
