"""Reading and writing the plain numeric ``.dat`` files of the examples.

The example files of the original FORTRAN package are read with Fortran
list-directed input and written one value per line.  :func:`read_dat` accepts
the subset of list-directed input that consists of numbers only:

* values separated by blanks, tabs, newlines and/or a single comma;
* integers (``5``), reals with or without digits before/after the point
  (``1.``, ``.5``, ``-0.7``), with an exponent introduced by ``E``, ``D``
  or ``Q`` in either case (``1.0e+00``, ``1.0000000000D0``, ``2.5d-3``), or
  by a bare sign as Fortran allows (``1.0+05`` means ``1.0e+05``);
* repeat counts ``r*value`` (``3*0.0`` is three zeros);
* ``NaN``, ``Inf`` and ``Infinity`` (any case, optionally signed).

Anything else (null values ``,,``, the ``/`` terminator, character or logical
constants, malformed numbers) raises :class:`ValueError` naming the file and
the line.

:func:`write_dat` writes one value per line as ``% .16e`` (17 significant
digits), which reads back bit for bit identical both here and with a Fortran
``read(unit, *)``.
"""

from __future__ import annotations

import os
import re

import numpy as np

__all__ = ["read_dat", "write_dat"]

_REAL = re.compile(
    r"""
    (?P<mant>[+-]?(?:\d+\.?\d*|\.\d+))       # mantissa: 1  1.  1.5  .5
    (?:
        [eEdDqQ](?P<exp1>[+-]?\d+)           # exponent with a letter
      | (?P<exp2>[+-]\d+)                    # Fortran: exponent as a bare signed integer
    )?
    """,
    re.VERBOSE,
)
_SPECIAL = re.compile(r"[+-]?(?:nan|inf|infinity)", re.IGNORECASE)
_REPEAT = re.compile(r"(?P<count>\d+)\*(?P<value>.*)")


def _parse_number(token: str) -> float | None:
    """Return the value of one Fortran numeric token, or None if it is not one."""
    m = _REAL.fullmatch(token)
    if m is not None:
        exp = m.group("exp1") or m.group("exp2")
        text = m.group("mant") if exp is None else f"{m.group('mant')}e{exp}"
        return float(text)
    if _SPECIAL.fullmatch(token):
        return float(token)
    return None


def _fields(line: str):
    """Split one record into value fields; yield None for a null value."""
    pieces = line.split(",")
    for i, piece in enumerate(pieces):
        words = piece.split()
        if not words:
            # empty between two commas, or a comma starting the record: a null
            # value.  A comma ending the record (last piece empty) is just a
            # separator.
            if i < len(pieces) - 1:
                yield None
            continue
        yield from words


def read_dat(path) -> np.ndarray:
    """Read every number of a Fortran list-directed numeric file.

    Parameters
    ----------
    path : str or os.PathLike
        The file to read.

    Returns
    -------
    numpy.ndarray
        One-dimensional float64 array with the values in file order (integers
        are converted to float).

    Raises
    ------
    ValueError
        If a field is not a number; the message gives ``path:line`` and the
        offending text.
    OSError
        If the file cannot be opened.
    """
    name = os.fspath(path)
    values: list[float] = []
    with open(name, "r", encoding="ascii", errors="replace") as fh:
        for lineno, line in enumerate(fh, start=1):
            for field in _fields(line):
                if field is None:
                    raise ValueError(
                        f"{name}:{lineno}: null value (empty field between commas) "
                        "is not supported"
                    )
                count = 1
                text = field
                rep = _REPEAT.fullmatch(field)
                if rep is not None:
                    count = int(rep.group("count"))
                    text = rep.group("value")
                    if count < 1 or not text:
                        raise ValueError(
                            f"{name}:{lineno}: unsupported repeat field {field!r}"
                        )
                value = _parse_number(text)
                if value is None:
                    raise ValueError(
                        f"{name}:{lineno}: cannot read {field!r} as a number"
                    )
                values.extend([value] * count)
    return np.asarray(values, dtype=np.float64)


def write_dat(path, values) -> None:
    """Write ``values`` to ``path``, one value per line, exactly round-trippable.

    ``values`` is any array-like of real numbers; it is flattened in C order,
    so pass ``Q.T`` (or ``Q.ravel(order="F")``) to write a matrix by columns as
    the original drivers do.  Each value is written as ``% .16e`` (17
    significant digits), e.g. `` -7.0989496528762700e-01``, which reads back as
    the identical float64.
    """
    a = np.asarray(values, dtype=np.float64).ravel()
    with open(os.fspath(path), "w", encoding="ascii", newline="\n") as fh:
        if a.size:
            fh.write("\n".join(["% .16e" % v for v in a.tolist()]))
            fh.write("\n")
