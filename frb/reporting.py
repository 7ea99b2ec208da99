"""Reporting helpers shared by the published experiments (:mod:`frb.experiments`) and the
work-precision tool (:mod:`frb.workprecision`).

What is here:

* :class:`Table`, :class:`Result`: what an experiment or a comparison prints (plain text or
  Markdown), with :func:`format_value`, the one number format of every table;
* :class:`Option`, :class:`Experiment`: the description of a published experiment (its
  command-line options, its run and plot functions, the paper it reproduces);
* :func:`pyplot`, :func:`save_figure`: matplotlib set-up and output (the ``plot`` extra);
* the figures' style: :func:`method_styles` (a colour, line style and marker per method, so
  that curves lying on each other stay visible), :func:`reference_accuracy` (the accuracy of a
  reference drawn and labelled), :func:`tidy_3d` (3-D axes with few, small tick labels);
* error measures: :func:`attitude_error`, :func:`batch_error`, and :func:`fit_order`, the
  observed order of a method from errors at several steps;
* :func:`method_list`: a comma-separated list of method names, as the options take them.

Examples
--------
>>> from frb.reporting import Table, format_value
>>> print(Table("errors", ["method", "error"], [["RK4", 1.5e-7], ["EXACT", 0.0]]).format())
errors
method  error
------  ---------
RK4     1.500e-07
EXACT           0
>>> format_value(float("nan"))
'--'
"""
from __future__ import annotations

import inspect
import math
from dataclasses import dataclass, field
from os import PathLike
from typing import Any, Callable, Sequence, Union

import numpy as np
from numpy.typing import ArrayLike, NDArray

from . import _validate

__all__ = ["Experiment", "Option", "Table", "Result", "pyplot", "save_figure", "fit_order",
           "attitude_error", "format_value", "batch_error", "method_list", "steps_of",
           "figure_path", "method_styles", "reference_accuracy", "tidy_3d"]


def format_value(x: Any) -> str:
    """A number as printed in the tables.

    Parameters
    ----------
    x : object
        A float (``%.3e`` when below 1e-3 or from 1e5 on, else six significant digits), an
        integer, a bool (``yes``/``no``), None or NaN (``--``), or anything else (``str``).

    Returns
    -------
    str

    Examples
    --------
    >>> from frb.reporting import format_value
    >>> [format_value(v) for v in (2.5e-9, 0.125, 7, True, None)]
    ['2.500e-09', '0.125', '7', 'yes', '--']
    """
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
    """A printed table: a title, column names and rows of values.

    Parameters
    ----------
    title : str
        The line above the table.
    columns : list of str
        Column names.
    rows : list of lists
        The values, one list per row, formatted by :func:`format_value`.
    """

    title: str
    columns: list[str]
    rows: list[list[Any]] = field(default_factory=list)

    def _check_rows(self) -> None:
        """ValueError naming the first row whose length is not the number of columns."""
        bad = [i for i, row in enumerate(self.rows) if len(row) != len(self.columns)]
        if bad:
            raise ValueError(f"rows: row {bad[0]} has {len(self.rows[bad[0]])} values for "
                             f"the {len(self.columns)} columns")

    def format(self) -> str:
        """The table as plain text: title, header, rule, rows (numbers right-aligned)."""
        self._check_rows()
        cells = [[format_value(v) for v in row] for row in self.rows]
        widths = [max([len(c)] + [len(r[i]) for r in cells]) for i, c in enumerate(self.columns)]
        line = "  ".join(c.ljust(w) for c, w in zip(self.columns, widths))
        out = [self.title, line, "  ".join("-" * w for w in widths)]
        out += ["  ".join(v.rjust(w) if i else v.ljust(w) for i, (v, w) in
                          enumerate(zip(r, widths))) for r in cells]
        return "\n".join(out)

    def to_markdown(self) -> str:
        """The table in Markdown (without its title)."""
        self._check_rows()
        head = "| " + " | ".join(self.columns) + " |"
        sep = "|" + "|".join("---" for _ in self.columns) + "|"
        body = ["| " + " | ".join(format_value(v) for v in r) + " |" for r in self.rows]
        return "\n".join([head, sep, *body])


@dataclass
class Result:
    """What an experiment computed.

    Parameters
    ----------
    name, title : str
        The experiment's name and a one-line title.
    parameters : list of (name, value, source)
        The parameters of the run; ``source`` says where the value comes from: the paper
        (section, figure) or frb, when the paper gives none.
    tables : list of Table
        The printed tables.
    numbers : dict
        The key numbers (floats, by name; NaN for one the run could not measure, its table
        saying why).
    data : dict
        The arrays the figure is drawn from.
    notes : list of str
        Lines printed after the tables.
    """

    name: str
    title: str
    parameters: list[tuple[str, object, str]]
    tables: list[Table]
    numbers: dict[str, float]
    data: dict[str, Any] = field(default_factory=dict, repr=False)
    notes: list[str] = field(default_factory=list)

    def format(self) -> str:
        """Parameters (with their sources), tables and notes as plain text."""
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


@dataclass(frozen=True)
class Option:
    """A command-line option of an experiment: ``--name VALUE`` (``type`` converts VALUE).

    The value is checked by :meth:`value` (the input rule of :mod:`frb._validate`, then
    ``low`` (exclusive with ``strict``) and ``high``; ``choices`` for a name, ``methods`` for
    comma-separated names of :data:`frb.METHODS`); None is taken where the default is
    None."""

    name: str
    type: Callable[[str], Any]
    default: Any
    help: str
    low: float | None = None
    strict: bool = False
    high: float | None = None
    choices: tuple[str, ...] | None = None
    methods: bool = False

    def value(self, x: Any, label: str | None = None) -> Any:
        """``x`` checked and converted; TypeError or ValueError naming ``label`` (default the
        option's name) otherwise."""
        from .methods import METHODS

        label = label or self.name
        if x is None and self.default is None:
            return None
        if self.type is int:
            return _validate.integer(x, label, None if self.low is None else int(self.low),
                                     None if self.high is None else int(self.high))
        if self.type is float:
            v = _validate.real_scalar(x, label)
            if self.low is not None and (v <= self.low if self.strict else v < self.low):
                raise ValueError(f"{label} must be {'>' if self.strict else '>='} "
                                 f"{self.low:g}, got {v!r}")
            if self.high is not None and v > self.high:
                raise ValueError(f"{label} must be at most {self.high:g}, got {v!r}")
            return v
        if self.methods and not isinstance(x, str):
            if isinstance(x, (list, tuple)) and all(isinstance(s, str) for s in x):
                x = ",".join(x)
        if not isinstance(x, str):
            raise TypeError(f"{label} must be a string, got {type(x).__name__}")
        if self.choices is not None:
            if _validate.name_key(x.strip()) not in self.choices:
                raise ValueError(f"{label} must be one of {', '.join(self.choices)}, got {x!r}")
            return _validate.name_key(x.strip())
        if self.methods:
            names = method_list(x, ())
            bad = [s for s in names if s not in METHODS]
            if bad or not names:
                raise ValueError(f"{label} must be comma-separated methods of frb.integrate "
                                 f"({', '.join(METHODS)}), got {x!r}")
        return x

    def parse(self, text: str) -> Any:
        """The command-line text of the option, converted and checked (ValueError naming
        ``--name``)."""
        label = "--" + self.name.replace("_", "-")
        if self.type in (int, float):
            try:
                x = self.type(text)
            except ValueError:
                what = "an integer" if self.type is int else "a number"
                raise ValueError(f"{label} must be {what}, got {text!r}") from None
            return self.value(x, label)
        return self.value(text, label)


def steps_of(t_final: float, h: float, names: str = "t_final / h") -> int:
    """``round(t_final / h)``, the steps of a run, checked: 1 .. 2**31 - 1 (ValueError naming
    ``names`` otherwise)."""
    t_final = _validate.real_scalar(t_final, names, finite=False)
    h = _validate.real_scalar(h, "h")
    with np.errstate(all="ignore"):
        ratio = t_final / h if h != 0 else math.inf
    steps = round(ratio) if math.isfinite(ratio) else 0
    if not 1 <= steps <= 2**31 - 2:
        raise ValueError(f"{names} must give 1 to 2147483646 steps, got {ratio:.6g}")
    return int(steps)


@dataclass(frozen=True)
class Experiment:
    """A published experiment: ``run(**options) -> Result`` and ``plot(result, path)``.

    Parameters
    ----------
    name : str
        The name ``frb-example NAME`` takes.
    reference : str
        The paper it reproduces: authors, year, section and figure (e.g. ``"Krysl 2008,
        section 5.4, Figs. 4-5"``).
    summary, description : str
        One line for ``frb-example --list``; the text of ``frb-example NAME --help``.
    options : tuple of Option
        The keyword arguments of ``run``, as command-line options.
    run, plot : callables
        Compute the :class:`Result`; draw its figure to a path.
    """

    name: str
    reference: str
    summary: str
    description: str
    options: tuple[Option, ...]
    run: Callable[..., Result]
    plot: Callable[[Result, Union[str, PathLike[str]]], None]

    @classmethod
    def from_run(cls, name: str, reference: str, summary: str, options: tuple[Option, ...],
                 run: Callable[..., Result],
                 plot: Callable[[Result, Union[str, PathLike[str]]], None]) -> Experiment:
        """The experiment whose description is the docstring of its ``run`` function."""
        return cls(name, reference, summary, inspect.getdoc(run) or summary, options, run, plot)

    def defaults(self) -> dict[str, Any]:
        """The options' default values by name."""
        return {o.name: o.default for o in self.options}

    def checked(self, options: dict[str, Any]) -> dict[str, Any]:
        """``options`` (by name) checked and converted by their :class:`Option`."""
        by_name = {o.name: o for o in self.options}
        return {k: by_name[k].value(v) for k, v in options.items()}


def pyplot() -> Any:
    """matplotlib.pyplot with a non-interactive backend, or ImportError saying how to get it."""
    try:
        import matplotlib
    except ImportError:  # pragma: no cover - depends on the environment
        raise ImportError("plots need matplotlib: pip install 'frb[plot]'") from None
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def figure_path(path: str | PathLike[str], name: str) -> str:
    """Where a figure called ``name`` goes for ``path``: ``path/name.png`` when ``path`` is an
    existing folder (or ends with a separator), else ``path`` itself, whose suffix gives the
    format (``.png`` added when it has none and no such file exists, as matplotlib would);
    ValueError for an empty path, a file in a missing folder, an existing path that is neither
    a regular file nor a folder (a device, a FIFO), an existing file without a suffix and a
    suffix alone (``.png``, which would become ``.png.png``)."""
    import os

    if isinstance(path, (bool, np.bool_)) or not isinstance(path, (str, bytes, os.PathLike)):
        raise TypeError(f"path must be a file or folder path (str or os.PathLike), got "
                        f"{type(path).__name__}")
    text = os.fspath(path)
    if isinstance(text, bytes):
        text = os.fsdecode(text)
    if "\x00" in text:
        raise ValueError(f"path must be a file or folder path, but it holds a null character: "
                         f"{text!r}")
    if not text.strip():
        raise ValueError("the figure path must name a file or a folder, got an empty path")
    if os.path.isdir(text) or text.endswith(("/", os.sep)):
        if not os.path.isdir(text):
            raise ValueError(f"the folder {text!r} of the figure does not exist")
        return os.path.join(text, f"{name}.png")
    folder = os.path.dirname(text)
    if folder and not os.path.isdir(folder):
        if os.path.exists(folder):
            raise ValueError(f"the folder {folder!r} of the figure {text!r} is not a folder")
        raise ValueError(f"the folder {folder!r} of the figure {text!r} does not exist")
    if len(os.fsencode(os.path.basename(text) + ".png")) > 255:
        raise ValueError(f"the figure's file name {os.path.basename(text)[:40]!r}... is longer "
                         "than a file name can be (255 bytes)")
    if os.path.exists(text) and not os.path.isfile(text):
        raise ValueError(f"the figure path {text!r} is neither a regular file nor a folder")
    suffix = os.path.splitext(text)[1]
    base = os.path.basename(text)
    if not suffix and base.startswith(".") and \
            base[1:].lower() in (_figure_formats() or _COMMON_FORMATS):
        raise ValueError(f"the figure path {text!r} is a suffix without a file name: give a name "
                         f"(e.g. {os.path.join(folder, 'figure' + base)!r}) or a folder")
    if not suffix and os.path.exists(text):
        raise ValueError(f"the figure path {text!r} is an existing file without a suffix: give "
                         f"the format's suffix (e.g. {text!r} + '.png') or a folder")
    if suffix:
        formats = _figure_formats()
        if formats and suffix[1:].lower() not in formats:
            raise ValueError(f"the figure {text!r} has the suffix {suffix!r}, not a format "
                             f"matplotlib writes (one of: {', '.join(sorted(formats))})")
    return text if suffix else text + ".png"


#: Figure formats known without matplotlib (a suffix alone of one of them names no file).
_COMMON_FORMATS = frozenset(("png", "pdf", "svg", "svgz", "eps", "ps", "jpg", "jpeg", "tif",
                             "tiff", "webp", "pgf", "raw", "rgba", "avif"))


def _figure_formats() -> set[str]:
    """The file formats matplotlib writes (empty without matplotlib: its import fails later,
    saying what to install)."""
    try:
        from matplotlib.backend_bases import FigureCanvasBase
    except ImportError:
        return set()
    return set(FigureCanvasBase.get_supported_filetypes())


def save_figure(fig: Any, path: str | PathLike[str], layout: bool = True) -> None:
    """Lay out ``fig`` (unless ``layout`` is False: laid out already), write it to ``path``
    (110 dpi, format from the suffix) and close it."""
    plt = pyplot()
    if layout:
        fig.tight_layout()
    try:
        fig.savefig(path, dpi=110)
    finally:
        plt.close(fig)


#: Colours of the method styles (matplotlib's tab10, then darker and lighter shades).
_COLOURS = ("tab:blue", "tab:orange", "tab:green", "tab:red", "tab:purple", "tab:brown",
            "tab:pink", "tab:gray", "tab:olive", "tab:cyan", "navy", "darkgoldenrod")
_LINESTYLES = ("-", "--", "-.", ":")
_MARKERS = ("o", "s", "^", "v", "D", "<", ">", "p", "h", "X", "*", "P")


def method_styles(methods: Sequence[str]) -> dict[str, dict[str, Any]]:
    """A distinct style per method: keyword arguments for matplotlib's ``plot``.

    Every method gets its own colour, line style and marker, and one of three marker sizes in
    turn (small and filled, medium and hollow, large and hollow), so that when two or three
    methods give the same numbers (as TRAP and IMID do) their markers nest inside each other
    and every curve and legend entry stays visible.

    Parameters
    ----------
    methods : sequence of str
        The methods in the order of the legend.

    Returns
    -------
    dict
        ``{method: {"color", "linestyle", "marker", "markersize", "markerfacecolor",
        "linewidth", "label"}}``.

    Examples
    --------
    >>> from frb.reporting import method_styles
    >>> s = method_styles(["TRAP", "IMID"])
    >>> trap, imid = s["TRAP"], s["IMID"]
    >>> trap["marker"] != imid["marker"], trap["linestyle"] != imid["linestyle"]
    (True, True)
    >>> s["IMID"]["markerfacecolor"]
    'none'
    """
    out = {}
    for i, meth in enumerate(methods):
        size = (3.5, 6.5, 9.5)[i % 3]
        colour = _COLOURS[i % len(_COLOURS)]
        out[meth] = {"color": colour, "linestyle": _LINESTYLES[i % len(_LINESTYLES)],
                     "marker": _MARKERS[i % len(_MARKERS)], "markersize": size,
                     "markerfacecolor": colour if i % 3 == 0 else "none",
                     "linewidth": 1.0, "label": meth}
    return out


def reference_accuracy(ax: Any, accuracy: float, label: str, factor: float = 10.0) -> None:
    """Draw the accuracy of a reference on the log-scale axes ``ax``: a dotted line at
    ``accuracy`` and a grey band below ``factor * accuracy``, where errors against this
    reference measure the reference rather than the method; ``label`` goes into the legend.

    Examples
    --------
    >>> from frb.reporting import pyplot, reference_accuracy
    >>> fig, ax = pyplot().subplots()
    >>> ax.set_yscale("log")
    >>> reference_accuracy(ax, 1e-10, "reference accuracy")
    >>> [t.get_label() for t in ax.get_lines()]
    ['reference accuracy']
    >>> pyplot().close(fig)
    """
    if not (math.isfinite(accuracy) and accuracy > 0):
        return
    ax.axhline(accuracy, color="black", linestyle=":", linewidth=1.0, label=label)
    low, high = ax.get_ylim()
    low = min(low, accuracy / 3)
    ax.axhspan(low, factor * accuracy, color="0.85", alpha=0.6, linewidth=0, zorder=0)
    ax.set_ylim(low, max(high, 3 * factor * accuracy))     # the band does not widen the axes


def tidy_3d(ax: Any, labels: Sequence[str] = ("x", "y", "z"), nbins: int = 4,
            fontsize: float = 7.0) -> None:
    """3-D axes whose tick labels do not overlap: at most ``nbins`` + 1 ticks an axis, small
    tick labels close to the axis, and the axis labels ``labels``."""
    from matplotlib.ticker import MaxNLocator

    for axis, name in zip((ax.xaxis, ax.yaxis, ax.zaxis), labels):
        axis.set_major_locator(MaxNLocator(nbins))
        axis.set_tick_params(labelsize=fontsize, pad=0)
        axis.set_label_text(name, fontsize=fontsize + 1)
        axis.labelpad = -2


def fit_order(hs: ArrayLike, errors: ArrayLike, floor: float = 0.0) -> float:
    """Observed order: the least-squares slope of ``log error`` against ``log h``.

    Parameters
    ----------
    hs, errors : array_like
        Steps and the errors at them.
    floor : float
        Errors at or below it (and non-finite ones) are left out.

    Returns
    -------
    float
        The slope, NaN when fewer than two points remain.

    Examples
    --------
    >>> from frb.reporting import fit_order
    >>> round(fit_order([0.1, 0.05, 0.025], [1e-4, 2.5e-5, 6.25e-6]), 6)
    2.0
    """
    hs = _validate.real_array(hs, "hs")
    e = _validate.real_array(errors, "errors", finite=False)
    floor = _validate.real_scalar(floor, "floor")
    if hs.ndim != 1 or e.shape != hs.shape:
        raise ValueError(f"hs and errors must be two one-dimensional sequences of the same "
                         f"length, got shapes {hs.shape} and {e.shape}")
    if not (hs > 0).all():
        raise ValueError("hs must be positive steps")
    with np.errstate(invalid="ignore"):
        keep = np.isfinite(e) & (e > floor) & (e > 0)
    if keep.sum() < 2 or np.unique(hs[keep]).size < 2:
        return math.nan
    return float(np.polyfit(np.log(hs[keep]), np.log(e[keep]), 1)[0])


def attitude_error(Q: ArrayLike, Q_ref: ArrayLike) -> NDArray[np.float64]:
    """Spectral norm ``||Q - Q_ref||_2`` per matrix (the norm of Krysl's 2008 figures).

    Examples
    --------
    >>> from frb.reporting import attitude_error
    >>> float(attitude_error(np.eye(3), np.diag([1.0, 1.0, -1.0])))
    2.0
    """
    a = _validate.real_array(Q, "Q", item_ndim=2)
    b = _validate.real_array(Q_ref, "Q_ref", item_ndim=2)
    if a.ndim < 2 or a.shape[-2:] != (3, 3) or a.shape != b.shape:
        raise ValueError(f"Q and Q_ref must be matrices (..., 3, 3) of the same shape, got "
                         f"{a.shape} and {b.shape}")
    # each pair scaled by a power of two (exact): no overflow of the difference or of the norm
    size = np.maximum(np.abs(a), np.abs(b)).max(axis=(-2, -1), initial=0.0)
    e = _validate.binary_exponents(size)
    scaled = np.linalg.norm(np.ldexp(a, -e[..., None, None]) - np.ldexp(b, -e[..., None, None]),
                            ord=2, axis=(-2, -1))
    with np.errstate(over="ignore"):
        out = np.ldexp(scaled, e)
    if not np.isfinite(out).all() and np.isfinite(a).all() and np.isfinite(b).all():
        raise ValueError("Q and Q_ref: the norm of their difference is beyond the float64 range")
    return out


def batch_error(m: NDArray[np.float64], Q: ArrayLike, m_ref: NDArray[np.float64], Q_ref: ArrayLike
                ) -> tuple[float, float]:
    """Largest over the bodies of ``|m - m_ref| / |m_ref|`` and of ``||Q - Q_ref||_2``.

    Examples
    --------
    >>> from frb.reporting import batch_error
    >>> batch_error(np.array([[1.0, 0, 0]]), np.eye(3)[None], np.array([[1.0, 0, 0]]),
    ...             np.eye(3)[None])
    (0.0, 0.0)
    """
    a = _validate.real_array(m, "m")
    b = _validate.real_array(m_ref, "m_ref")
    if a.ndim < 1 or a.shape[-1] != 3 or a.shape != b.shape:
        raise ValueError(f"m and m_ref must be momenta (..., 3) of the same shape, got {a.shape} "
                         f"and {b.shape}")
    if a.size == 0:
        raise ValueError("m and m_ref hold no bodies: there is no largest error")
    if (np.abs(b) == 0).all(axis=-1).any():
        raise ValueError("m_ref: a body at rest has no relative error")
    q_shape = np.shape(Q), np.shape(Q_ref)
    if q_shape[0] != a.shape[:-1] + (3, 3):
        raise ValueError(f"Q must have the shape {a.shape[:-1] + (3, 3)} of m's bodies, got "
                         f"{q_shape[0]}")
    # each body's pair scaled by a power of two (exact): no overflow or underflow of the norms
    e = _validate.binary_exponents(np.maximum(np.abs(a), np.abs(b)).max(axis=-1))[..., None]
    sa, sb = np.ldexp(a, -e), np.ldexp(b, -e)
    em = np.linalg.norm(sa - sb, axis=-1) / np.linalg.norm(sb, axis=-1)
    return float(em.max()), float(attitude_error(Q, Q_ref).max())


def method_list(methods: str | Sequence[str] | None, default: Sequence[str]) -> tuple[str, ...]:
    """Method names from a comma-separated string or a sequence, upper case; ``default`` for None.

    Examples
    --------
    >>> from frb.reporting import method_list
    >>> method_list("rk4, dmv6", ())
    ('RK4', 'DMV6')
    >>> method_list(None, ("EXACT",))
    ('EXACT',)
    """
    if methods is None:
        return tuple(default)
    items = methods.split(",") if isinstance(methods, str) else methods
    if not isinstance(items, (list, tuple)) or not all(isinstance(s, str) for s in items):
        raise TypeError(f"methods must be a comma-separated string or a sequence of method "
                        f"names, got {methods!r}")
    return tuple(_validate.name_key(s.strip()) for s in items)
