"""The five example drivers of ACM TOMS Algorithm 903, as library functions.

:func:`run_example` reads an input file in the original layout, computes, writes
the output file in the original layout (one value per line, matrices by
columns, quaternions scalar first) and returns a summary: step and flow
counts, wall time, drift of the invariants and the largest absolute deviation
from a reference output file.

Input layouts (``init_exampleN.dat``, in this order):

* 0: ``h``, ``I`` (3), ``m0`` (3), ``Q0`` (9, by columns) -- one exact step
  :func:`frb.flows.frb_step`.  Output: ``m0, Q0, 0.0, m(h), Q(h)`` (25 values).
* 1: ``a_1..a_8``, ``b_1..b_7``, ``h``, ``Tfin``, ``m0`` (3), ``Q0`` (9),
  ``I`` (3), ``u0`` (3) -- sixth-order splitting with the torque of a constant
  field ``u0``, ``N = int(Tfin/h)`` steps of ``h = Tfin/N``.  Output:
  ``N+1`` records ``m, Q, t``.
* 2: ``h``, ``I`` (3), ``m0`` (3), ``q0`` (4) -- one exact step
  :func:`frb.flows.quat_step`.  Output: ``m0, q0, 0.0, m(h), q(h)`` (15 values).
* 3: ``h``, ``Tfin``, ``m0`` (3), ``Q0`` (9), ``I`` (3), ``np`` -- ``N`` steps of
  the semi-exact ``frb_step`` with ``np`` Gauss-Legendre nodes.  Output:
  ``N+1`` records ``m, Q, t``.
* 4: ``h``, ``Tfin``, ``m0`` (3), ``q0`` (4), ``I`` (3), ``np`` -- the same with
  quaternions (scalar first).  Output: ``N+1`` records ``m, q, t``.

Reference outputs
-----------------
Unless a comparison file is given, the published ``out_exampleN.dat`` is looked up by
:func:`frb.datasets.find_published_output` (the environment variable ``FRB_REFERENCE_DIR``
first); the summary records which file was used (or that none was found). The look-up
functions of :mod:`frb.datasets` are also importable from here.
"""

from __future__ import annotations

import math
import os
import time
from contextlib import ExitStack
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, Union, overload

if TYPE_CHECKING:
    from .reporting import Result

import numpy as np
from numpy.typing import NDArray

from . import _validate
from .datasets import (EXAMPLES, PUBLISHED_SOURCE, REFERENCE_ENV, example_number,
                       find_published_output, packaged_input, reference_dirs, source_root)
from .io import matrix_from_columns, matrix_to_columns, read_dat, write_dat
from ._kept import check_kept_states
from .rotations import kinetic_energy, quat_to_matrix, spatial_momentum

__all__ = [
    "EXAMPLES",
    "INPUT_SIZES",
    "PUBLISHED_TOLERANCE",
    "REFERENCE_ENV",
    "find_published_output",
    "format_summary",
    "packaged_input",
    "reference_dirs",
    "run_example",
    "source_root",
]

#: Number of values in each input file.
INPUT_SIZES = {0: 16, 1: 35, 2: 11, 3: 18, 4: 13}
#: Largest absolute deviation from the published output expected of a faithful
#: implementation (the tolerances stated with the published example files).
PUBLISHED_TOLERANCE = {0: 1e-14, 1: 1e-8, 2: 1e-14, 3: 1e-12, 4: 5e-9}

# ---------------------------------------------------------------- helpers


#: Most steps of one run: the trajectory's nsteps + 1 states are counted in 32 bits.
_MAX_STEPS = 2**31 - 2


def _steps(h: float, tfin: float) -> tuple[int, float]:
    """``N = int(Tfin/h)`` and the reset step ``h = Tfin/N`` of the original drivers."""
    h, tfin = float(h), float(tfin)   # (messages show -0.5, not np.float64(-0.5))
    if not (math.isfinite(h) and math.isfinite(tfin)) or h <= 0.0 or tfin <= 0.0:
        raise ValueError(f"need finite h > 0 and Tfin > 0, got h={h!r}, Tfin={tfin!r}")
    ratio = tfin / h
    if not ratio < _MAX_STEPS + 1:
        raise ValueError(f"Tfin/h = {ratio:.3g} steps is more than a run can take "
                         f"({_MAX_STEPS}); got Tfin={tfin!r}, h={h!r}")
    nsteps = int(ratio)
    if nsteps < 1:
        raise ValueError(f"Tfin/h must be at least 1, got Tfin={tfin!r}, h={h!r}")
    return nsteps, tfin / nsteps


def _nodes(x: float) -> int:
    if not (math.isfinite(x) and x == int(x) and 1 <= x <= 10):
        raise ValueError(f"np (number of quadrature nodes) must be an integer in 1..10, got {float(x)!r}")
    return int(x)


def _free_invariants(m: NDArray[np.float64], Q: NDArray[np.float64], inertia: NDArray[np.float64],
                     m0: NDArray[np.float64], Q0: NDArray[np.float64]) -> dict[str, float]:
    """Max drift over a trajectory of the free rigid body invariants."""
    m = np.atleast_2d(m)
    Q = np.asarray(Q).reshape(-1, 3, 3)
    e0 = kinetic_energy(m0, inertia)
    pi0 = spatial_momentum(m0, Q0)
    eye = np.eye(3)
    return {
        "norm_m": float(np.max(np.abs(np.linalg.norm(m, axis=-1) - np.linalg.norm(m0)))),
        "energy": float(np.max(np.abs(kinetic_energy(m, inertia) - e0))),
        "spatial_momentum": float(
            np.max(np.linalg.norm(spatial_momentum(m, Q) - pi0, axis=-1))
        ),
        "orthogonality": float(
            np.max(np.abs(np.swapaxes(Q, -1, -2) @ Q - eye))
        ),
    }


# ---------------------------------------------------------------- examples


def _example0(v: NDArray[np.float64]) -> tuple[NDArray[np.float64], dict[str, Any]]:
    from . import flows

    h, inertia, m0, Q0 = v[0], v[1:4], v[4:7], matrix_from_columns(v[7:16])
    t0 = time.perf_counter()
    m1, Q1 = flows.frb_step(m0, Q0, h, inertia, quadrature=0)
    wall = time.perf_counter() - t0
    out = np.concatenate([m0, matrix_to_columns(Q0), [0.0], m1, matrix_to_columns(Q1)])
    inv = _free_invariants(m1, Q1, inertia, m0, Q0)
    return out, dict(steps=1, flows=1, h=h, t_final=h, wall_time=wall, invariants=inv)


def _example1(v: NDArray[np.float64]) -> tuple[NDArray[np.float64], dict[str, Any]]:
    from .splitting import constant_field, integrate

    a, b = v[0:8], v[8:15]
    h, tfin = v[15], v[16]
    m0, Q0, inertia, u0 = v[17:20], matrix_from_columns(v[20:29]), v[29:32], v[32:35]
    nsteps, h = _steps(h, tfin)
    torque = constant_field(u0)
    t0 = time.perf_counter()
    traj = integrate(m0, Q0, inertia, h, nsteps, torque=torque, coefficients=(a, b))
    wall = time.perf_counter() - t0
    out = np.concatenate([traj.m, matrix_to_columns(traj.Q), traj.t[:, None]], axis=1).ravel()
    m, Q = traj.m, traj.Q
    # Conserved by the exact torqued flow: H = T(m) + u0.(Q e3) (the splitting
    # keeps it within a bounded error); u0.(Q m) is kept exactly by both A and B.
    H = kinetic_energy(m, inertia) + Q[:, :, 2] @ u0
    H0 = kinetic_energy(m0, inertia) + Q0[:, 2] @ u0
    vert = spatial_momentum(m, Q) @ u0
    vert0 = spatial_momentum(m0, Q0) @ u0
    norms = np.linalg.norm(m, axis=-1)
    inv = {
        "energy_with_potential": float(np.max(np.abs(H - H0))),
        "vertical_momentum": float(np.max(np.abs(vert - vert0))),
        "norm_m_relative_variation": float(
            np.max(np.abs(norms - np.linalg.norm(m0))) / np.linalg.norm(m0)
        ),
        "orthogonality": float(np.max(np.abs(np.swapaxes(Q, -1, -2) @ Q - np.eye(3)))),
    }
    flows_count = nsteps * (2 * len(b) + 1)  # 2s+1 free flows A per step
    return out, dict(
        steps=nsteps, flows=flows_count, h=h, t_final=float(traj.t[-1]), wall_time=wall,
        invariants=inv,
    )


def _example2(v: NDArray[np.float64]) -> tuple[NDArray[np.float64], dict[str, Any]]:
    from . import flows

    h, inertia, m0, q0 = v[0], v[1:4], v[4:7], v[7:11]
    t0 = time.perf_counter()
    m1, q1 = flows.quat_step(m0, q0, h, inertia, quadrature=0)
    wall = time.perf_counter() - t0
    out = np.concatenate([m0, q0, [0.0], m1, q1])
    inv = _free_invariants(m1, quat_to_matrix(q1), inertia, m0, quat_to_matrix(q0))
    del inv["orthogonality"]
    inv["quaternion_norm"] = float(abs(np.linalg.norm(q1) - np.linalg.norm(q0)))
    return out, dict(steps=1, flows=1, h=h, t_final=h, wall_time=wall, invariants=inv)


def _example3(v: NDArray[np.float64]) -> tuple[NDArray[np.float64], dict[str, Any]]:
    from .splitting import integrate

    h, tfin, m0, Q0, inertia, nodes = v[0], v[1], v[2:5], matrix_from_columns(v[5:14]), v[14:17], v[17]
    nodes = _nodes(nodes)
    nsteps, h = _steps(h, tfin)
    t0 = time.perf_counter()
    traj = integrate(m0, Q0, inertia, h, nsteps, torque=None, quadrature=nodes)
    wall = time.perf_counter() - t0
    out = np.concatenate([traj.m, matrix_to_columns(traj.Q), traj.t[:, None]], axis=1).ravel()
    inv = _free_invariants(traj.m, traj.Q, inertia, m0, Q0)
    return out, dict(
        steps=nsteps, flows=nsteps, h=h, t_final=float(traj.t[-1]), wall_time=wall,
        quadrature=nodes, invariants=inv,
    )


def _example4(v: NDArray[np.float64]) -> tuple[NDArray[np.float64], dict[str, Any]]:
    from . import flows

    h, tfin, m0, q0, inertia, nodes = v[0], v[1], v[2:5], v[5:9], v[9:12], v[12]
    nodes = _nodes(nodes)
    nsteps, h = _steps(h, tfin)
    check_kept_states(nsteps + 1, 1, 8 + 4)     # (m, q, t and the invariants' temporaries)
    m_out = np.empty((nsteps + 1, 3))
    q_out = np.empty((nsteps + 1, 4))
    m_out[0], q_out[0] = m0, q0
    m, q = m0, q0
    t0 = time.perf_counter()
    for k in range(1, nsteps + 1):
        m, q = flows.quat_step(m, q, h, inertia, quadrature=nodes)
        m_out[k], q_out[k] = m, q
    wall = time.perf_counter() - t0
    t = h * np.arange(nsteps + 1, dtype=np.float64)
    out = np.concatenate([m_out, q_out, t[:, None]], axis=1).ravel()
    inv = _free_invariants(m_out, quat_to_matrix(q_out), inertia, m0, quat_to_matrix(q0))
    del inv["orthogonality"]
    inv["quaternion_norm"] = float(
        np.max(np.abs(np.linalg.norm(q_out, axis=-1) - np.linalg.norm(q0)))
    )
    return out, dict(
        steps=nsteps, flows=nsteps, h=h, t_final=float(t[-1]), wall_time=wall,
        quadrature=nodes, invariants=inv,
    )


_RUNNERS = {0: _example0, 1: _example1, 2: _example2, 3: _example3, 4: _example4}
_RECORD = {0: None, 1: 13, 2: None, 3: 13, 4: 8}


def _describe_index(n: int, i: int) -> str:
    rec = _RECORD[n]
    if rec is None:
        return f"value {i + 1}"
    return f"value {i + 1} (record {i // rec}, item {i % rec + 1})"


_PathArg = Union[str, "os.PathLike[str]"]


@overload
def run_example(n: int, input_path: _PathArg | None = None, output_path: _PathArg | None = None,
                compare_path: _PathArg | Literal[False] | None = None,
                tolerance: float | None = None) -> dict[str, Any]: ...
@overload
def run_example(n: str, input_path: _PathArg | None = None, output_path: _PathArg | None = None,
                compare_path: _PathArg | Literal[False] | None = None,
                tolerance: float | None = None, **options: Any) -> dict[str, Any] | Result: ...


def run_example(n: int | str, input_path: str | os.PathLike[str] | None = None,
                output_path: str | os.PathLike[str] | None = None,
                compare_path: str | os.PathLike[str] | Literal[False] | None = None,
                tolerance: float | None = None,
                **options: Any) -> dict[str, Any] | Result:
    """Run example ``n`` (0..4) of Algorithm 903, or the experiment named ``n``.

    With a name of :data:`frb.experiments.EXPERIMENTS` (``"vilmart-book"``, ``"krysl-free"``,
    ...) this is :func:`frb.experiments.run_experiment` ``(n, **options)`` and returns its
    :class:`frb.experiments.Result`; the file arguments do not apply.

    Parameters
    ----------
    n : int or str
        Example number, or an experiment's name.
    input_path : path, optional
        Input file in the original layout; default the packaged
        ``frb/data/init_exampleN.dat``.
    output_path : path or False, optional
        Output file; default ``out_exampleN.dat`` in the current directory;
        ``False`` writes nothing.
    compare_path : path or False, optional
        Reference output to compare with; default :func:`find_published_output`
        (no comparison if none is found); ``False`` disables the comparison.
        The reference is read before the output is written.
    tolerance : float, optional
        Threshold for ``summary["within_tolerance"]``; default
        :data:`PUBLISHED_TOLERANCE` ``[n]``.

    **options
        Options of the experiment (experiments only).

    Returns
    -------
    dict
        ``example``, ``input``, ``output``, ``compare`` (path or None),
        ``compare_disabled`` (True when ``compare_path`` is False),
        ``steps``, ``flows`` (free rigid body flows computed), ``h``,
        ``t_final``, ``wall_time`` (seconds, computation only), ``n_values``,
        ``invariants`` (name -> largest absolute drift over the run),
        ``max_abs_deviation`` (None without comparison, ``inf`` if the sizes
        differ), ``worst`` (where it occurs), ``tolerance``,
        ``within_tolerance`` (None without comparison), and ``values`` (the
        computed output values as a 1-D array).
    """
    if isinstance(n, str) and not n.lstrip("+-").isdigit():
        from .experiments import run_experiment

        return run_experiment(n, **options)
    if options:
        raise TypeError(f"run_example({n!r}) takes no options {', '.join(options)} "
                        "(options are for the experiments)")
    n = example_number(n)
    if tolerance is not None:
        tolerance = _validate.real_scalar(tolerance, "tolerance")
        if tolerance < 0:
            raise ValueError(f"tolerance must be a finite number >= 0, got {tolerance!r}")
    with ExitStack() as stack:
        if input_path is None:
            src = stack.enter_context(resources.as_file(packaged_input(n)))
        else:
            src = _path(input_path, "input_path")
        values_in = _read_file(src, "input_path")
        input_name = str(src)
    if values_in.size != INPUT_SIZES[n]:
        raise ValueError(
            f"{input_name}: example {n} expects {INPUT_SIZES[n]} values, "
            f"found {values_in.size}"
        )

    if compare_path is None:
        ref_path = find_published_output(n)
    elif compare_path is False:
        ref_path = None
    else:
        ref_path = _path(compare_path, "compare_path")
        if not ref_path.exists():
            raise FileNotFoundError(f"compare_path: comparison file not found: {ref_path}")
        if not ref_path.is_file():
            raise ValueError(f"compare_path: {str(ref_path)!r} is not a regular file")
    reference = _read_file(ref_path, "compare_path") if ref_path is not None else None

    if output_path is None:
        out_path = Path.cwd() / f"out_example{n}.dat"
    elif output_path is False:
        out_path = None
    else:
        out_path = _path(output_path, "output_path")
        if out_path.is_fifo() or out_path.is_socket() or out_path.is_dir():
            kind = "a directory" if out_path.is_dir() else "not a regular file"
            raise ValueError(f"output_path: {str(out_path)!r} is {kind}")

    values, summary = _RUNNERS[n](values_in)
    summary["h"] = float(summary["h"])
    summary["t_final"] = float(summary["t_final"])

    if out_path is not None:
        try:
            write_dat(out_path, values)
        except OSError as exc:
            raise type(exc)(f"output_path: cannot write {str(out_path)!r}: "
                            f"{exc.strerror or exc}") from None

    tol = PUBLISHED_TOLERANCE[n] if tolerance is None else float(tolerance)
    dev = worst = within = None
    if reference is not None:
        if reference.shape != values.shape:
            dev = math.inf
            worst = f"size mismatch: computed {values.size} values, reference has {reference.size}"
        else:
            diff = np.abs(values - reference)
            bad = ~np.isfinite(diff)
            if bad.any():
                i = int(np.argmax(bad))
                dev = math.inf
            else:
                i = int(np.argmax(diff)) if diff.size else 0
                dev = float(diff[i]) if diff.size else 0.0
            worst = _describe_index(n, i)
        within = bool(dev <= tol)

    summary = {
        "example": n,
        "input": input_name,
        "output": None if out_path is None else str(out_path),
        "compare": None if ref_path is None else str(ref_path),
        "compare_disabled": compare_path is False,
        **summary,
        "n_values": int(values.size),
        "max_abs_deviation": dev,
        "worst": worst,
        "tolerance": tol,
        "within_tolerance": within,
        "values": values,
    }
    return summary


def _read_file(path: Path, name: str) -> NDArray[np.float64]:
    """:func:`frb.io.read_dat` of ``path``; its OSError and ValueError with a message naming
    ``name``."""
    try:
        return read_dat(path)
    except OSError as exc:
        raise type(exc)(f"{name}: cannot read {str(path)!r}: {exc.strerror or exc}") from None
    except ValueError as exc:
        raise ValueError(f"{name}: {exc}") from None


def _path(value: Any, name: str) -> Path:
    """``value`` as a Path: a str or os.PathLike, else TypeError naming ``name``; ValueError
    for an empty path."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (str, os.PathLike)):
        raise TypeError(f"{name} must be a path (str or os.PathLike), got "
                        f"{type(value).__name__}")
    if not os.fspath(value):
        raise ValueError(f"{name} must name a file, got an empty path")
    return Path(value)


def format_summary(summary: dict[str, Any]) -> str:
    """Human-readable multi-line rendering of a :func:`run_example` summary."""
    if not isinstance(summary, dict) or "example" not in summary:
        raise TypeError(f"summary must be the dict run_example returns, got "
                        f"{type(summary).__name__}")
    try:
        return _summary_text(summary)
    except KeyError as exc:
        raise TypeError(f"summary must be the dict run_example returns, but it has no key "
                        f"{exc}") from None


def _summary_text(summary: dict[str, Any]) -> str:
    s = summary
    lines = [
        f"example {s['example']}",
        f"  input:      {s['input']}",
        f"  output:     {s['output'] if s['output'] else '(not written)'}",
        f"  steps:      {s['steps']}   h = {s['h']!r}   t_final = {s['t_final']!r}",
        f"  flows:      {s['flows']} free rigid body flows"
        + (f" (Gauss-Legendre, {s['quadrature']} nodes)" if "quadrature" in s else ""),
        f"  wall time:  {s['wall_time']:.3f} s",
        "  invariant drift (max abs over the run):",
    ]
    for k, val in s["invariants"].items():
        lines.append(f"    {k:<26s} {val:.3e}")
    if s["compare"] is None and s.get("compare_disabled"):
        lines.append("  compared:   no (comparison turned off)")
    elif s["compare"] is None:
        lines.append(f"  compared:   nothing: the published out_example{s['example']}.dat was "
                     f"not found. It comes with {PUBLISHED_SOURCE}; point at its folder with "
                     f"frb-example {s['example']} --reference DIR or {REFERENCE_ENV}=DIR.")
    else:
        lines.append(f"  compared with: {s['compare']}")
        verdict = "OK" if s["within_tolerance"] else "EXCEEDS"
        lines.append(
            f"  max abs deviation: {s['max_abs_deviation']:.3e} at {s['worst']}  "
            f"[{verdict} tolerance {s['tolerance']:.1e}]"
        )
    return "\n".join(lines)
