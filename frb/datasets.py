"""Where frb finds its data: the packaged example inputs and the published example outputs.

* :func:`packaged_input` ``(n)``: the input ``init_exampleN.dat`` of example ``n`` (0..4) of
  ACM TOMS Algorithm 903 (Celledoni and Zanna 2010), packaged in ``frb/data``;
  :func:`read_packaged_input` reads it.
* :func:`find_published_output` ``(n)``: the published ``out_exampleN.dat``, which frb does not
  ship. It is looked for, in this order, in

  1. the directory named by the environment variable ``FRB_REFERENCE_DIR``
     (:data:`REFERENCE_ENV`);
  2. the folder ``shared/calgo903`` in the parent of the current directory;
  3. the folder ``shared/calgo903`` in the parent of the repository root, where the repository
     root is the parent of the ``frb`` package directory when the package is used from a source
     tree (that directory holds ``pyproject.toml`` or ``.git``).

  The first existing file is used; None when there is none. The outputs come with the
  Algorithm 903 distribution (:data:`PUBLISHED_SOURCE`); ``frb-example N --reference DIR``
  points at them for one run.

The examples (:mod:`frb.examples`), the experiments (:mod:`frb.experiments`) and the command
line (:mod:`frb.cli`) all look their data up here.

Examples
--------
>>> from frb.datasets import packaged_input, read_packaged_input
>>> packaged_input(0).name
'init_example0.dat'
>>> read_packaged_input(0).size
16
"""
from __future__ import annotations

import os
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import NDArray

from .io import matrix_from_columns, read_dat

if TYPE_CHECKING:
    import sys

    if sys.version_info >= (3, 11):
        from importlib.resources.abc import Traversable
    else:
        from importlib.abc import Traversable

__all__ = ["EXAMPLES", "REFERENCE_ENV", "PUBLISHED_SOURCE", "example_number", "packaged_input", "read_packaged_input",
           "example1_data", "source_root", "reference_dirs", "find_published_output"]

#: The example numbers of Algorithm 903.
EXAMPLES = (0, 1, 2, 3, 4)
#: Environment variable naming a directory holding the published outputs.
REFERENCE_ENV = "FRB_REFERENCE_DIR"
#: Where the published outputs ``out_exampleN.dat`` come from (frb does not ship them).
PUBLISHED_SOURCE = ("the Algorithm 903 distribution (ACM Collected Algorithms, CALGO: the "
                    "software of Celledoni and Zanna 2010, https://doi.org/10.1145/1731022.1731033)")


def example_number(n: object) -> int:
    """``n`` as an example number (0..4): TypeError for what is not an integer (a bool, None, a
    float, a string), ValueError for another integer.

    Examples
    --------
    >>> from frb.datasets import example_number
    >>> example_number(3)
    3
    """
    if isinstance(n, (bool, np.bool_)) or not isinstance(n, (int, np.integer)):
        raise TypeError(f"n must be an example number (an integer, one of {EXAMPLES}) or an "
                        f"experiment's name, got {n!r}")
    if int(n) not in EXAMPLES:
        raise ValueError(f"n must be one of {EXAMPLES}, got {n!r}")
    return int(n)


def packaged_input(n: int) -> Traversable:
    """The packaged input ``frb/data/init_exampleN.dat`` (an importlib Traversable).

    Examples
    --------
    >>> from frb.datasets import packaged_input
    >>> packaged_input(4).name
    'init_example4.dat'
    """
    n = example_number(n)
    return resources.files("frb").joinpath("data", f"init_example{n}.dat")


def read_packaged_input(n: int) -> NDArray[np.float64]:
    """The values of the packaged input of example ``n``.

    Examples
    --------
    >>> from frb.datasets import read_packaged_input
    >>> read_packaged_input(2)[0]     # the step h
    np.float64(0.1)
    """
    with resources.as_file(packaged_input(n)) as path:
        return read_dat(path)


def example1_data() -> dict[str, Any]:
    """The packaged input of example 1 as named arrays.

    Returns
    -------
    dict
        ``a`` (8), ``b`` (7): the splitting coefficients; ``h``, ``t_final``; ``m0``; ``Q0``
        (3, 3); ``inertia``; ``u0``, the constant field.

    Examples
    --------
    >>> from frb.datasets import example1_data
    >>> d = example1_data()
    >>> d["h"], d["t_final"]
    (0.5, 5000.0)
    """
    v = read_packaged_input(1)
    return {"a": v[0:8], "b": v[8:15], "h": float(v[15]), "t_final": float(v[16]),
            "m0": v[17:20], "Q0": matrix_from_columns(v[20:29]), "inertia": v[29:32],
            "u0": v[32:35]}


def source_root() -> Path | None:
    """Repository root if :mod:`frb` is imported from a source tree, else None.

    Examples
    --------
    >>> from frb.datasets import source_root
    >>> source_root() is None or source_root().is_dir()
    True
    """
    root = Path(__file__).resolve().parent.parent
    if (root / "pyproject.toml").is_file() or (root / ".git").exists():
        return root
    return None


def reference_dirs() -> list[Path]:
    """Candidate directories for the published outputs, in lookup order (see the module doc).

    Examples
    --------
    >>> from frb.datasets import reference_dirs
    >>> all(d.is_absolute() for d in reference_dirs())
    True
    """
    dirs: list[Path] = []
    env = os.environ.get(REFERENCE_ENV)
    if env:
        dirs.append(Path(env))
    dirs.append(Path.cwd() / ".." / "shared" / "calgo903")
    root = source_root()
    if root is not None:
        dirs.append(root / ".." / "shared" / "calgo903")
    seen, out = set(), []
    for d in dirs:
        key = os.path.normcase(os.path.abspath(d))
        if key not in seen:
            seen.add(key)
            out.append(Path(os.path.abspath(d)))
    return out


def find_published_output(n: int) -> Path | None:
    """Path of the published ``out_exampleN.dat`` (see the module doc), or None.

    Examples
    --------
    >>> from frb.datasets import find_published_output
    >>> p = find_published_output(0)
    >>> p is None or p.name == "out_example0.dat"
    True
    """
    n = example_number(n)
    for d in reference_dirs():
        p = d / f"out_example{n}.dat"
        if p.is_file():
            return p
    return None
