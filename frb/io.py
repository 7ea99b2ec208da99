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
constants, malformed numbers, non-ASCII bytes), a number outside the range of
float64 (``1e400`` would become infinity, ``1e-400`` zero), and a file that would
expand to more than ``max_values`` values (``1000000000*0.0``; with ``max_values=None``,
:data:`MAX_VALUES_CAP` or what fits in half the memory available), a FIFO or a socket raise
:class:`ValueError` naming the file and the line.  A UTF-8 byte-order mark at
the start is skipped.

:func:`write_dat` writes one value per line as ``% .16e`` (17 significant
digits), which reads back bit for bit identical both here and with a Fortran
``read(unit, *)``.
"""

from __future__ import annotations

import errno
import math
import os
import re
import stat
from typing import Any, BinaryIO, Iterator

import numpy as np
from numpy.typing import ArrayLike, NDArray

from . import _validate
from ._kept import available_memory

__all__ = ["read_dat", "write_dat", "matrix_from_columns", "matrix_to_columns"]

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
_MANTISSA = re.compile(r"[+-]?(\d*\.?\d*)")
_BOM = b"\xef\xbb\xbf"

#: Default cap on the number of values :func:`read_dat` returns (80 MB of float64).
MAX_VALUES = 10_000_000


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


def _fields(line: str, after_value: bool = False) -> Iterator[str | None]:
    """Split one record into value fields; yield None for a null value. ``after_value``: the
    records before ended with a value (not with a comma after it)."""
    pieces = line.split(",")
    for i, piece in enumerate(pieces):
        words = piece.split()
        if not words:
            # empty between two commas, or a comma starting the input or following a comma: a
            # null value. A comma starting a record after a value is its separator (the end of
            # a record reads as a blank, as in Fortran), and a comma ending the record (last
            # piece empty) is just a separator.
            if i < len(pieces) - 1 and not (i == 0 and after_value):
                yield None
            continue
        yield from words


def _range_error(token: str, value: float) -> str | None:
    """Why a parsed token is out of the float64 range (None if it is not)."""
    if math.isinf(value) and not _SPECIAL.fullmatch(token):
        return f"{_shown(token)} is too large for a float64 (it would become infinity)"
    if value == 0.0:
        # (a number token starts with its mantissa: the match is never None)
        digits = _MANTISSA.match(token).group(1)  # type: ignore[union-attr]
        if any(c in "123456789" for c in digits):
            return (f"{_shown(token)} is too small for a float64 (it would become zero; the "
                    "smallest positive float64 is about 4.9e-324)")
    return None


#: Control bytes (all but the blanks tab, newline, vertical tab, form feed, carriage return):
#: never part of a number file.
_CONTROL = re.compile(rb"[\x00-\x08\x0e-\x1f\x7f]")
#: Bytes read at a time; a record longer than this is read in pieces cut between two fields.
READ_BYTES = 1 << 20
_SEPARATORS = b" \t\r\x0b\x0c,"
#: Longest field (characters): a longer one is not a number frb reads.
MAX_FIELD = 1000
#: Bytes of a file per value allowed (with max_values): blanks beyond are not a number file.
BYTES_PER_VALUE = 256


def _shown(text: str) -> str:
    """A field as quoted in a message: at most 40 characters of it."""
    return repr(text) if len(text) <= 40 else f"{text[:30]!r}... ({len(text)} characters)"


def _long_field(name: str, lineno: int, field: str) -> ValueError:
    """The refusal of a field longer than MAX_FIELD characters, wherever it is in the file."""
    return ValueError(f"{name}:{lineno}: a field of more than {MAX_FIELD} characters "
                      f"({field[:20]!r}...) is not a number")


def _decode(raw: bytes, name: str, lineno: int, column: int = 0) -> str:
    if lineno == 1 and column == 0 and raw.startswith(_BOM):
        raw = raw[len(_BOM):]
    try:
        text = raw.decode("ascii")
    except UnicodeDecodeError as exc:
        hint = ""
        if lineno == 1 and column == 0 and raw[:2] in (b"\xff\xfe", b"\xfe\xff"):
            hint = " (a UTF-16 file? save it as ASCII or UTF-8)"
        raise ValueError(f"{name}:{lineno}: byte 0x{raw[exc.start]:02x} at column "
                         f"{column + exc.start + 1} is not ASCII: the file must hold plain "
                         f"numbers{hint}") from None
    bad = _CONTROL.search(raw)
    if bad is not None:
        raise ValueError(f"{name}:{lineno}: byte 0x{bad.group()[0]:02x} at column "
                         f"{column + bad.start() + 1} is a control character: the file must "
                         "hold plain numbers")
    return text


def _records(fh: Any, name: str, max_bytes: float) -> Iterator[tuple[int, str]]:
    """(line number, text) of the records of a binary file, read READ_BYTES at a time: a record
    longer than that comes in pieces cut before a field, so that every piece holds whole
    fields and the whole run of blanks and commas after its last one. Refuses,
    naming the line, control bytes, a field longer than MAX_FIELD characters and a file longer
    than ``max_bytes``."""
    lineno, column, total = 1, 0, 0
    pending = b""
    while True:
        chunk = fh.read(READ_BYTES)
        total += len(chunk)
        if total > max_bytes:
            raise ValueError(f"{name}: longer than {max_bytes:.0f} bytes, more than "
                             f"{BYTES_PER_VALUE} bytes per value of max_values: not a number "
                             "file of that size (pass a larger max_values to read it)")
        buf = pending + chunk
        start = 0
        while True:
            end = buf.find(b"\n", start)
            if end < 0:
                break
            yield lineno, _decode(buf[start:end + 1], name, lineno, column)
            lineno, column, start = lineno + 1, 0, end + 1
        rest = buf[start:]
        if not chunk:
            if rest:
                yield lineno, _decode(rest, name, lineno, column)
            return
        # rest: whole fields and their separators, the last field (unfinished, perhaps), and
        # the separators after it: cut before that last field, so that a piece ends with the
        # whole separator run that follows its last field (a comma in it is seen as such)
        body = rest.rstrip(_SEPARATORS)
        tail = rest[len(body):]
        cut = _cut(body)
        if cut > 0:
            yield lineno, _decode(body[:cut], name, lineno, column)
            column += cut
        field = body[cut:]
        if len(field) > MAX_FIELD:
            _decode(field[:READ_BYTES], name, lineno, column)    # (the byte errors first)
            raise ValueError(f"{name}:{lineno}: a field of more than {MAX_FIELD} characters at "
                             f"column {column + 1} ({field[:20].decode('ascii')!r}...) is not a "
                             "number")
        if len(tail) > MAX_FIELD:
            # a long run of blanks: one blank, one comma, or a null (two commas) says the same
            # (the columns reported beyond it are then off by the characters left out)
            commas = tail.count(b",")
            tail = b" " if commas == 0 else b"," if commas == 1 else b",,"
        pending = field + tail


def _cut(buf: bytes) -> int:
    """Where the last field of ``buf`` starts: after its last blank or comma (0: none)."""
    return max(buf.rfind(c) for c in (b" ", b"\t", b"\r", b"\x0b", b"\x0c", b",")) + 1


def _fast_line(line: str) -> tuple[list[str], list[float]] | None:
    """The values of a record of plain blank-separated numbers that Python's float reads as
    Fortran does (no commas, repeats, underscores, D/Q or bare-sign exponents); None otherwise."""
    if "," in line or "*" in line or "_" in line:
        return None
    tokens = line.split()
    try:
        values = list(map(float, tokens))
    except ValueError:
        return None
    return tokens, values


#: Bytes a value read takes while the array is made (the list of floats, then the array).
_BYTES_HELD_PER_VALUE = 16
#: Most values read with ``max_values=None`` (2**27, 1 GiB of float64), fewer when half the
#: memory available holds fewer.
MAX_VALUES_CAP = 2**27


#: Bytes of a regular file converted at a time by _plain_file.
PLAIN_CHUNK_BYTES = 1 << 24
#: The bytes of a file of plain numbers: digits, signs, points, exponent letters E and D, blanks.
_PLAIN = re.compile(rb"[0-9+\-.eEdD \t\r\n\x0b\x0c]*")
_D_TO_E = bytes.maketrans(b"dD", b"eE")


def _plain_values(data: bytes, limit: int) -> NDArray[np.float64] | None:
    """The values of a whole file of plain numbers (the bytes of _PLAIN, fields that Python's
    float reads as Fortran does once a D exponent is written E, at most MAX_FIELD characters,
    each within the float64 range, at most ``limit`` of them); None for anything else (the
    record-by-record reader then reads it, or says where and why it cannot)."""
    if _PLAIN.fullmatch(data) is None:
        return None
    tokens = data.translate(_D_TO_E).split()
    if len(tokens) > limit or (tokens and max(map(len, tokens)) > MAX_FIELD):
        return None
    try:
        values = np.array(list(map(float, tokens)), dtype=np.float64)
    except ValueError:          # (a bare-sign exponent, a malformed field)
        return None
    for i in np.flatnonzero(~np.isfinite(values) | (values == 0.0)).tolist():
        if _range_error(tokens[i].decode("ascii"), float(values[i])):
            return None
    return values


def _plain_file(fh: BinaryIO, limit: int) -> NDArray[np.float64] | None:
    """The values of a regular file of plain numbers only (_plain_values), read in chunks of
    PLAIN_CHUNK_BYTES cut after a blank (newlines included: _cut's records have none); None as
    soon as a chunk is not plain."""
    parts, count, rest, first = [], 0, b"", True
    while True:
        chunk = fh.read(PLAIN_CHUNK_BYTES)
        data = rest + chunk
        if first and data.startswith(_BOM):
            data = data[len(_BOM):]
        first = False
        if chunk:
            cut = max(data.rfind(c) for c in (b" ", b"\t", b"\r", b"\n", b"\x0b", b"\x0c")) + 1
            if cut == 0 and len(data) > MAX_FIELD:
                return None
            data, rest = data[:cut], data[cut:]
        values = _plain_values(data, limit - count)
        if values is None:
            return None
        parts.append(values)
        count += values.size
        if not chunk:
            return np.concatenate(parts) if len(parts) > 1 else parts[0]


def _path_of(path: Any, name: str) -> str:
    """``path`` as a file name (str or bytes path, os.PathLike): TypeError naming ``name``."""
    try:
        text = os.fspath(path)
    except TypeError:
        raise TypeError(f"{name} must be a file path (str or os.PathLike), got "
                        f"{type(path).__name__}") from None
    text = text if isinstance(text, str) else os.fsdecode(text)
    if "\x00" in text:
        raise ValueError(f"{name} must be a file path, but it holds a null character: {text!r}")
    return text


_FILES_ONLY = "read_dat reads files (write the data to a file first)"


def _open_for_reading(name: str) -> BinaryIO:
    """``name`` opened for binary reading, refused (ValueError) when it is a FIFO, a socket or a
    terminal: opened without blocking (a FIFO without a writer would wait forever), its type
    checked, then read as usual (a socket, which cannot be opened, is refused by its path)."""
    try:
        given = os.stat(name).st_mode
    except OSError:
        given = 0
    if stat.S_ISSOCK(given):
        raise ValueError(f"{name} is a socket: {_FILES_ONLY}")
    fd = os.open(name, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_BINARY", 0))
    try:
        mode = os.fstat(fd).st_mode
        if stat.S_ISDIR(mode):
            raise IsADirectoryError(errno.EISDIR, os.strerror(errno.EISDIR), name)
        if stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode):
            kind = "FIFO (named pipe)" if stat.S_ISFIFO(mode) else "socket"
            raise ValueError(f"{name} is a {kind}: {_FILES_ONLY}")
        if os.isatty(fd):
            raise ValueError(f"{name} is a terminal: {_FILES_ONLY}")
        if hasattr(os, "set_blocking"):
            os.set_blocking(fd, True)
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


def read_dat(path: str | os.PathLike[str], max_values: int | None = MAX_VALUES
             ) -> NDArray[np.float64]:
    """Read every number of a Fortran list-directed numeric file.

    Parameters
    ----------
    path : str or os.PathLike
        The file to read.
    max_values : int or None
        Largest number of values accepted (repeat counts included), 10**7 by default (80 MB);
        None for up to :data:`MAX_VALUES_CAP` (2**27), fewer when half the memory available
        holds fewer (16 bytes a value).

    Returns
    -------
    numpy.ndarray
        One-dimensional float64 array with the values in file order (integers
        are converted to float).

    Raises
    ------
    TypeError
        ``path`` is not a file path, ``max_values`` not an integer or None.
    ValueError
        If a field is not a number (or longer than :data:`MAX_FIELD` characters), a number is
        outside the range of float64, a byte is not ASCII, or the file holds more than
        ``max_values`` values (or more than fit in memory); the message gives ``path:line`` and
        the offending text. ``path`` is a FIFO (named pipe) or a socket (refused without
        waiting for a writer).
    OSError
        If the file cannot be opened.

    Examples
    --------
    >>> import os, tempfile
    >>> import frb
    >>> path = os.path.join(tempfile.mkdtemp(), "init.dat")
    >>> with open(path, "w") as f:
    ...     print("1.0000000000D0  2*0.5", file=f)
    ...     print(" -7.5e-1, 3", file=f)
    >>> frb.read_dat(path)
    array([ 1.  ,  0.5 ,  0.5 , -0.75,  3.  ])
    """
    name = _path_of(path, "path")
    if max_values is not None:
        max_values = _validate.integer(max_values, "max_values", 0)
    # without max_values: at most MAX_VALUES_CAP, and what fits in half the memory available
    limit = max_values if max_values is not None else \
        min(MAX_VALUES_CAP, max(READ_BYTES, int(0.5 * available_memory() / _BYTES_HELD_PER_VALUE)))
    values: list[float] = []

    def too_many(lineno: int, count: int) -> ValueError:
        if max_values is None:
            return ValueError(f"{name}:{lineno}: the file would hold {len(values) + count} values "
                              f"or more, beyond the {limit} values that read_dat takes with "
                              f"max_values=None (at most {MAX_VALUES_CAP}, and what fits in half "
                              "the memory available)")
        return ValueError(f"{name}:{lineno}: the file would hold {len(values) + count} values or "
                          f"more, beyond max_values = {max_values} (pass a larger max_values to "
                          "read it)")

    max_bytes = math.inf if max_values is None else \
        max(float(READ_BYTES), float(BYTES_PER_VALUE) * min(max_values, 2**60))
    with _open_for_reading(name) as fh:
        if os.fstat(fh.fileno()).st_size <= max_bytes:
            plain = _plain_file(fh, limit)
            if plain is not None:
                return plain
            fh.seek(0)                  # (the general reader: its messages say where and why)
        after_value = False             # (the input so far ends with a value, no comma after)
        for lineno, line in _records(fh, name, max_bytes):
            if line.strip():
                ends_after_value = not line.rstrip().endswith(",")
            else:
                ends_after_value = after_value
            fast = _fast_line(line)
            if fast is not None:
                tokens, vals = fast
                if tokens and max(map(len, tokens)) > MAX_FIELD:
                    raise _long_field(name, lineno, max(tokens, key=len))
                if len(values) + len(vals) > limit:
                    raise too_many(lineno, len(vals))
                arr = np.asarray(vals)
                suspects = np.flatnonzero(~np.isfinite(arr) | (arr == 0.0))
                for i in suspects.tolist():
                    why = _range_error(tokens[i], vals[i])
                    if why:
                        raise ValueError(f"{name}:{lineno}: {why}")
                values.extend(vals)
                after_value = ends_after_value
                continue
            for field in _fields(line, after_value):
                if field is None:
                    raise ValueError(
                        f"{name}:{lineno}: null value (empty field between commas) "
                        "is not supported"
                    )
                if len(field) > MAX_FIELD:
                    raise _long_field(name, lineno, field)
                count = 1
                text = field
                rep = _REPEAT.fullmatch(field)
                if rep is not None:
                    count = int(rep.group("count"))
                    text = rep.group("value")
                    if count < 1 or not text:
                        raise ValueError(
                            f"{name}:{lineno}: unsupported repeat field {_shown(field)}"
                        )
                value = _parse_number(text)
                if value is None:
                    raise ValueError(
                        f"{name}:{lineno}: cannot read {_shown(field)} as a number"
                    )
                why = _range_error(text, value)
                if why:
                    raise ValueError(f"{name}:{lineno}: {why}")
                if len(values) + count > limit:
                    raise too_many(lineno, count)
                values.extend([value] * count)
            after_value = ends_after_value
    return np.asarray(values, dtype=np.float64)


#: Values formatted at a time by write_dat.
_WRITE_BLOCK = 1 << 16


def write_dat(path: str | os.PathLike[str], values: ArrayLike) -> None:
    """Write ``values`` to ``path``, one value per line, exactly round-trippable.

    ``values`` is any array of real numbers (the rule of :mod:`frb._validate`: None, bools,
    complex numbers and strings raise TypeError); NaN and infinities are written as ``nan``,
    ``inf`` and read back by :func:`read_dat`.  It is flattened in C order,
    so pass ``Q.T`` (or ``Q.ravel(order="F")``) to write a matrix by columns as
    the original drivers do.  Each value is written as ``% .16e`` (17
    significant digits), e.g. `` -7.0989496528762700e-01``, which reads back as
    the identical float64. A FIFO (named pipe) or a socket at ``path`` is refused (ValueError)
    without waiting for a reader; what prevents writing the file raises OSError.

    Examples
    --------
    >>> import os, tempfile
    >>> import frb
    >>> path = os.path.join(tempfile.mkdtemp(), "out.dat")
    >>> frb.write_dat(path, [0.1, 1.0 / 3.0])
    >>> print(open(path).read(), end="")
     1.0000000000000001e-01
     3.3333333333333331e-01
    >>> bool((frb.read_dat(path) == [0.1, 1.0 / 3.0]).all())
    True
    """
    name = _path_of(path, "path")
    a = _validate.real_array(values, "values", finite=False).ravel()
    try:
        mode = os.stat(name).st_mode
    except OSError:
        mode = 0                # (a new file; open reports what prevents it)
    if stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode):
        # (opening a FIFO for writing waits for a reader)
        raise ValueError(f"path {name!r} is a {'FIFO (named pipe)' if stat.S_ISFIFO(mode) else 'socket'}: "
                         "write_dat writes files")
    with open(name, "w", encoding="ascii", newline="\n") as fh:
        # (formatted in blocks: the memory of one block's text at a time)
        for start in range(0, a.size, _WRITE_BLOCK):
            fh.write("".join(["% .16e\n" % v for v in a[start:start + _WRITE_BLOCK].tolist()]))


def matrix_to_columns(Q: ArrayLike) -> NDArray[np.float64]:
    """A matrix (or a stack of them) flattened column by column, as the data files hold it.

    Examples
    --------
    >>> from frb.io import matrix_to_columns
    >>> matrix_to_columns([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0], [7.0, 8.0, 9.0]])
    array([1., 4., 7., 2., 5., 8., 3., 6., 9.])
    """
    Q = _validate.real_array(Q, "Q", item_ndim=2)
    if Q.ndim < 2 or Q.shape[-2:] != (3, 3):
        raise ValueError(f"Q must have shape (..., 3, 3), got {Q.shape}")
    return np.swapaxes(Q, -1, -2).reshape(Q.shape[:-2] + (9,))


def matrix_from_columns(v: ArrayLike) -> NDArray[np.float64]:
    """The (3, 3) matrix of nine values stored column by column (inverse of
    :func:`matrix_to_columns`).

    Examples
    --------
    >>> from frb.io import matrix_from_columns
    >>> matrix_from_columns([1.0, 4.0, 7.0, 2.0, 5.0, 8.0, 3.0, 6.0, 9.0])[0]
    array([1., 2., 3.])
    """
    a = _validate.real_array(v, "v")
    if a.shape != (9,):
        raise ValueError(f"v must hold nine values, shape (9,), got {a.shape}")
    return a.reshape(3, 3).T.copy()
