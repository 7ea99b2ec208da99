"""The input rule of every public function of frb, and its messages (one place).

What counts as a real number
----------------------------
* A **real number** is a Python ``int`` or ``float``, a numpy integer or floating scalar, or any
  other ``numbers.Real`` (e.g. ``fractions.Fraction``) or ``decimal.Decimal``.
* An **array of real numbers** is anything numpy turns into an array of integer or floating dtype
  (lists, tuples, arrays; float16, float32 and longdouble are converted to float64), or an object
  array whose every element is a real number.
* Not real numbers, rejected with ``TypeError`` naming the argument: ``None``, ``bool`` and
  ``numpy.bool_`` (also inside a list), complex numbers (even with a zero imaginary part: pass
  ``z.real``), strings and bytes (``"0.1"``: convert with ``float`` first), dates and times,
  structured dtypes, masked arrays with masked entries, and scipy ``Rotation`` objects (convert
  with :func:`frb.from_rotation`).
* Values are further checked by each function: most need them finite (NaN or infinity is a
  ``ValueError`` naming the argument, and the first offending body of a batch); a finite number
  too large for a float64 (``10**400``, ``Decimal("1e400")``), or nonzero and too small for one
  (``Decimal("1e-400")``: it would become zero), is a ``ValueError``.

Integers (``nsteps``, ``quadrature``, ``order``, ...) are Python or numpy integers, not ``bool``
and not floats (``100.0`` is refused: ``TypeError``).
"""
from __future__ import annotations

import datetime
import decimal
import inspect
import math
import numbers
from itertools import chain
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from . import _numbers_table as _sn
from ._kept import beyond_memory, memory_size

__all__ = ["ORTHOGONALITY_TOLERANCE", "PHASE_LIMIT", "INT32_MAX", "MAX_STEPS", "fmt",
           "real_array", "real_scalar", "integer", "count", "flag", "save_every",
           "first_nonfinite", "times_in_range", "norm3", "phase", "phase_scalar", "options_of",
           "fits_expanded"]

#: Tolerance of the attitude checks: ``Q^T Q = 1`` entrywise and ``| |q| - 1 |`` (the shared
#: ``ATTITUDE_TOLERANCE`` of the compiled checks).
ORTHOGONALITY_TOLERANCE: float = _sn.ATTITUDE_TOLERANCE
#: Longest step of the exact flows: ``|h| |m| / I_min`` (a bound on the angle, in radians, that
#: the body turns) at most this (1e18): ``phase_limit`` of the compiled checks, one number
#: (:mod:`frb._numbers_table`).
PHASE_LIMIT: float = _sn.PHASE_LIMIT
#: Largest count the compiled loops take (a Fortran default integer).
INT32_MAX = 2**31 - 1
#: Most steps of a run (every route): its kept states are numbered up to ``nsteps + 1``.
MAX_STEPS = INT32_MAX - 1

_WANT = "an array of real numbers"
_WANT_SCALAR = "a real number"


def fmt(x: object) -> str:
    """A number (or array) as a user would write it: ``-0.5``, not ``np.float64(-0.5)``."""
    if isinstance(x, (np.generic, np.ndarray)):
        x = x.tolist()
    if isinstance(x, float):
        return repr(x)
    return repr(x) if not isinstance(x, (list, tuple)) else str(x)


def _short(x: object) -> str:
    text = repr(x)
    return text if len(text) <= 40 else f"{text[:12]}... ({len(text)} characters)"


def _is_scipy_rotation(value: object) -> bool:
    cls = type(value)
    return cls.__name__ == "Rotation" and cls.__module__.startswith("scipy.spatial")


def _what(x: object) -> str:
    """Short description of a value that is not a real number, for the messages."""
    if x is None:
        return "None"
    if isinstance(x, (bool, np.bool_)):
        return f"a boolean ({bool(x)!r})"
    if isinstance(x, (str, bytes)):
        text = x if len(x) <= 40 else (x[:37] + b"..." if isinstance(x, bytes) else x[:37] + "...")
        return f"a string ({text!r}; convert it to a number first)"
    if isinstance(x, (complex, np.complexfloating)):
        return f"a complex number ({complex(x)!r}; pass its .real if the imaginary part is meant to be 0)"
    return f"a {type(x).__name__}"


_F64 = np.dtype(np.float64)
_PLAIN = frozenset((float, int))
_BOOL_TYPES = frozenset((bool, np.bool_))
_NESTED = frozenset((list, tuple))


_BYTES_TYPES = (bytes, bytearray, memoryview)
#: Durations and dates: numpy's timedelta64 is an integer subclass, but not a number of frb.
_TIME_TYPES = (np.timedelta64, np.datetime64, datetime.timedelta, datetime.date)


def _unreadable_item(value: Any) -> str | None:
    """What a (nested) list or tuple holds that numpy would silently read as numbers: "a boolean"
    (also an array of bools, or one inside an array of objects: 1.0 or 0.0), "bytes" (a
    bytearray or byte string as a row: its bytes as small integers), else None. One level of
    nesting at a time (a list of rows is scanned as one flat list; in a level that mixes
    sequences with other items, the sequences); a level of scalars alone ends the scan."""
    level = value
    for _ in range(32):
        types = set(map(type, level))
        if not types.isdisjoint(_BOOL_TYPES):
            return "a boolean"
        if any(issubclass(t, _BYTES_TYPES) for t in types):
            return "bytes"
        if any(issubclass(t, _TIME_TYPES) for t in types):
            return "a duration or a date"
        if any(issubclass(t, np.ndarray) for t in types):
            for x in level:
                if isinstance(x, np.ndarray) and (x.dtype.kind == "b" or (
                        x.dtype.kind == "O" and x.size and _unreadable_item(x.reshape(-1).tolist()))):
                    return "a boolean"
        if types.isdisjoint(_NESTED):
            return None
        nested = level if types <= _NESTED else [x for x in level if type(x) in _NESTED]
        level = list(chain.from_iterable(nested))
    return None


def returned(value: Any, name: str) -> NDArray[Any]:
    """A user callable's result as an array (its dtype checked by the caller): a list or tuple
    under the rule above (a boolean or bytes inside: TypeError naming ``name``, which numpy would
    read as numbers), a masked array with masked entries refused, an array of objects read as
    the input rule reads one (each a real number), another array as it is."""
    if isinstance(value, (list, tuple)):
        held = _unreadable_item(value)
        if held is not None:
            raise TypeError(f"{name} must return real numbers, but its result holds {held}")
    if isinstance(value, np.ma.MaskedArray) and np.ma.is_masked(value):
        raise TypeError(f"{name} returned a masked array with masked entries (fill them first)")
    arr = np.asarray(value)
    if arr.dtype.kind == "O":
        arr = real_array(arr, f"the result of {name}", finite=False)
    return arr


def _from_objects(arr: NDArray[Any], name: str, want: str = _WANT) -> NDArray[np.float64]:
    out = np.empty(arr.shape, dtype=np.float64)
    flat = out.reshape(-1)
    for i, x in enumerate(arr.reshape(-1)):
        if isinstance(x, (bool, np.bool_) + _TIME_TYPES) or \
                not isinstance(x, (numbers.Real, decimal.Decimal)):
            raise TypeError(f"{name} must be {want}, but it holds {_what(x)}")
        try:
            flat[i] = float(x)
            if isinstance(x, decimal.Decimal) and x.is_finite() and not math.isfinite(flat[i]):
                raise OverflowError     # (decimal rounds beyond the range to infinity)
            if flat[i] == 0 and x != 0:
                raise ValueError(f"{name} holds a nonzero number too small for a float64 (it "
                                 f"would become zero): {_short(x)}")
        except OverflowError:
            raise ValueError(f"{name} holds a number too large for a float64: {_short(x)}") from None
        except ValueError as exc:   # (a signaling NaN of decimal, or the underflow above)
            if "too small" in str(exc):
                raise
            raise ValueError(f"{name} holds {_short(x)}, not a number") from None
    return out


def real_array(value: ArrayLike, name: str, finite: bool = True, item_ndim: int = 1,
               want: str = _WANT) -> NDArray[np.float64]:
    """``value`` as a float64 array under the rule above (the array itself if it is one already).

    With ``finite`` a NaN or infinity raises ValueError naming ``name`` and, for a batch (more
    than ``item_ndim`` dimensions), the first offending body.
    """
    if type(value) is np.ndarray and value.dtype is _F64:
        arr = value
    elif type(value) is list and set(map(type, value)) <= _PLAIN and value:
        # a flat list of Python floats and ints (the usual list): no bool, nothing to scan
        try:
            arr = np.asarray(value)
        except OverflowError:   # (an int beyond int64 among floats)
            arr = np.asarray(value, dtype=object)
        if arr.dtype is not _F64:
            arr = arr.astype(np.float64) if arr.dtype.kind in "iu" else _convert(value, name, want)
    else:
        arr = _convert(value, name, want)
    fits_expanded(arr, name)
    if finite and not np.isfinite(arr).all():
        raise ValueError(f"{name} contains non-finite values (NaN or infinity)"
                         + first_nonfinite(arr, item_ndim))
    return arr


def fits_expanded(arr: NDArray[Any], name: str) -> None:
    """Refuse a broadcast view (a zero stride) whose values would not fit in memory once
    copied: the routes copy their arrays and make results of the same size."""
    if arr.nbytes <= 2**26 or 0 not in arr.strides:
        return
    need = 3.0 * arr.nbytes
    free = beyond_memory(need)
    if free is not None:
        raise ValueError(f"{name} is a broadcast array of shape {arr.shape}: its values and "
                         f"the results of their size would take {memory_size(need)}, more than "
                         f"the memory available ({memory_size(free)}); give fewer bodies at a "
                         "time")


def _convert(value: Any, name: str, want: str = _WANT) -> NDArray[np.float64]:
    if value is None or isinstance(value, (str, bytes, bool, np.bool_)):
        raise TypeError(f"{name} must be {want}, got {_what(value)}")
    if isinstance(value, bytearray) or (isinstance(value, memoryview)
                                        and value.format in ("B", "b", "c")):
        raise TypeError(f"{name} must be {want}, got bytes ({type(value).__name__}); "
                        "numbers are not read from raw bytes")
    if isinstance(value, (int, float)):
        try:
            return np.asarray(float(value))
        except OverflowError:
            raise ValueError(f"{name} is too large for a float64: {_short(value)}") from None
    if _is_scipy_rotation(value):
        raise TypeError(f"{name} must be {want}, got a scipy Rotation: convert it with "
                        "frb.from_rotation(rot) (a scalar-first quaternion) or "
                        "frb.from_rotation(rot, form='matrix')")
    if isinstance(value, np.ma.MaskedArray) and np.ma.is_masked(value):
        raise TypeError(f"{name} must be {want}, got a masked array with masked entries "
                        "(fill or remove them first)")
    if isinstance(value, (list, tuple)):
        held = _unreadable_item(value)
        if held is not None:
            raise TypeError(f"{name} must be {want}, but it holds {held}")
    try:
        arr = np.asarray(value)
    except (ValueError, TypeError) as exc:
        why = "its rows differ in length" if "inhomogeneous" in str(exc) else str(exc)
        raise TypeError(f"{name} must be {want} (a rectangular array): {why}") from None
    if arr.dtype is _F64:
        return arr
    kind = arr.dtype.kind
    if kind == "f" and arr.dtype.itemsize > 8:
        with np.errstate(over="ignore", under="ignore"):
            out = arr.astype(np.float64)
        if np.isinf(out).any() and not np.isinf(arr[np.isinf(out)]).all():
            raise ValueError(f"{name} holds a number too large for a float64")
        if ((out == 0) & (arr != 0)).any():
            raise ValueError(f"{name} holds a nonzero number too small for a float64 (it would "
                             "become zero)")
        return out
    if kind in "iuf":
        return arr.astype(np.float64)
    if kind == "O":
        return _from_objects(arr, name, want)
    if kind == "b":
        raise TypeError(f"{name} must be {want}, got booleans (dtype bool)")
    if kind == "c":
        raise TypeError(f"{name} must be {want}, got complex numbers (dtype {arr.dtype}); pass "
                        "the real part (.real) if the imaginary part is meant to be 0")
    if kind in "US":
        raise TypeError(f"{name} must be {want}, got strings (dtype {arr.dtype}); convert them "
                        "with float() first")
    raise TypeError(f"{name} must be {want}, got dtype {arr.dtype}")


def first_nonfinite(arr: NDArray[Any], item_ndim: int = 1) -> str:
    """`` (body k)`` for the first body of a batch with a non-finite entry, else ``""``."""
    if arr.ndim <= item_ndim:
        return ""
    per_body = np.isfinite(arr.reshape(arr.shape[:arr.ndim - item_ndim] + (-1,))).all(axis=-1)
    bad = np.argwhere(~per_body.reshape(-1))
    return f" (body {int(bad[0, 0])})" if bad.size else ""


def binary_exponents(size: NDArray[np.float64]) -> NDArray[np.int64]:
    """The binary exponents ``e`` of positive finite sizes (``size = f 2^e``, ``1/2 <= f < 1``),
    0 for zero and non-finite ones: the powers of two that scale values exactly."""
    ok = np.isfinite(size) & (size > 0)
    return np.where(ok, np.frexp(np.where(ok, size, 1.0))[1], 0)


def name_key(text: str) -> str:
    """The key of a case-insensitive name (a method, a coefficient set, a choice): ``text``
    in upper case when it is ASCII, else as it is (``str.upper`` maps some other letters to
    ASCII ones, ``"ı".upper() == "I"``: such a text names nothing)."""
    return text.upper() if text.isascii() else text


def real_scalar(value: float, name: str, finite: bool = True) -> float:
    """``value`` as a Python float; a real number under the rule above (or a 0-d array)."""
    if type(value) is float:
        x = value
    else:
        arr = _convert(value, name, _WANT_SCALAR)
        if arr.ndim != 0:
            raise ValueError(f"{name} must be a single real number, got an array of shape {arr.shape}")
        x = float(arr)
    if finite and not math.isfinite(x):
        raise ValueError(f"{name} must be finite, got {x!r}")
    return x


def integer(value: int, name: str, low: int | None = None, high: int | None = None) -> int:
    """``value`` as a Python int in ``[low, high]``: a Python or numpy integer, not a bool."""
    # (numpy's timedelta64 is an Integral subclass, but a duration, not a count)
    if isinstance(value, (bool, np.bool_, np.timedelta64)) or not isinstance(value, numbers.Integral):
        got = fmt(value) if isinstance(value, (float, np.floating)) else _what(value)
        raise TypeError(f"{name} must be an integer, got {got}")
    x = int(value)
    if (low is not None and x < low) or (high is not None and x > high):
        if high is None:
            rng = f">= {low}"
        elif low is None:
            rng = f"<= {high}"
        else:
            rng = f"in {low}..{high}"
        raise ValueError(f"{name} must be an integer {rng}, got {x}")
    return x


def count(value: Any, name: str, low: int = 0, high: int = INT32_MAX) -> int:
    """:func:`integer` with the usual call (a Python int in range) at once."""
    if type(value) is int and low <= value <= high:
        return value
    return integer(value, name, low, high)


def body_range(start: Any, stop: Any, bodies: int | None = None, owner: str = ""
               ) -> tuple[int, int]:
    """``start, stop`` of the part ``start .. stop - 1`` of a batch: integers, 0 <= start <= stop;
    for an ``owner`` (a torque, a law) with parameters given for ``bodies`` bodies, at least one
    body and ``stop <= bodies``."""
    first = count(start, "start")
    last = count(stop, "stop")
    if last < first:
        raise ValueError(f"stop must be >= start, got start={first}, stop={last}")
    if bodies is not None and last > bodies:
        raise ValueError(f"stop = {last} is beyond the {bodies} bodies the per-body parameters "
                         f"of {owner} are given for")
    if bodies is not None and first == last:
        raise ValueError(f"start = stop = {first} selects no body, and {owner} has per-body "
                         "parameters: select at least one")
    return first, last


def choice(value: Any, name: str, choices: Any, shown: str) -> Any:
    """``value`` when it is one of the strings ``choices``; TypeError naming ``name`` for what is
    not a string, ValueError for another string (``shown``: the choices as the message says
    them; None is one when ``choices`` holds it)."""
    if value is None and None in choices:
        return value
    if not isinstance(value, str):
        raise TypeError(f"{name} must be {shown}, got {_short(value)}")
    if value not in choices:
        raise ValueError(f"{name} must be {shown}, got {value!r}")
    return value


def takes_positional(function: Any, count: int) -> bool:
    """False when the signature of the callable ``function`` cannot take ``count`` positional
    arguments (True when it can, or when its signature cannot be read)."""
    try:
        signature = inspect.signature(function)
    except (TypeError, ValueError):
        return True
    try:
        signature.bind(*range(count))
    except TypeError:
        return False
    return True


def flag(value: Any, name: str) -> bool:
    """``value`` as a bool: True or False (numpy's bool too), else TypeError naming ``name``."""
    if value is True or value is False or isinstance(value, np.bool_):
        return bool(value)
    raise TypeError(f"{name} must be True or False, got {_short(value)}")


def save_every(value: Any) -> int:
    """``save_every`` as the compiled loop takes it: an integer >= 1 (one larger than the largest
    step count keeps the first and the last state, as any count above the steps of the run), or
    0 for ``None`` / ``"final"`` (keep the final state only)."""
    if type(value) is int and 1 <= value <= INT32_MAX:
        return value
    if value is None or (isinstance(value, str) and value == "final"):
        return 0
    if isinstance(value, str):
        raise ValueError(f"save_every must be a positive integer, None or 'final', got {value!r}")
    return min(integer(value, "save_every (a positive integer, None or 'final')", 1), INT32_MAX)


def times_in_range(t0: float, h: NDArray[np.float64], nsteps: int, name_h: str = "h") -> None:
    """ValueError naming ``name_h`` when a time ``t0 + k h`` of a run of ``nsteps`` steps is
    beyond the float64 range (``h`` a float64 array: one step, or one a body)."""
    h = h[np.isfinite(h)]       # (a non-finite step is the checks' of the bodies, by body)
    if not nsteps or not h.size or not math.isfinite(t0):
        return
    with np.errstate(over="ignore", invalid="ignore"):
        span = float(nsteps) * h
        last = t0 + span
    if not (np.isfinite(span).all() and np.isfinite(last).all()):
        raise ValueError(f"{name_h} is too long for {nsteps} steps: the times t0 + k {name_h} of "
                         f"the run (t0 = {fmt(t0)}, {name_h} up to {fmt(float(np.abs(h).max()))}) "
                         "go beyond the float64 range")


def norm3(v: ArrayLike) -> NDArray[np.float64]:
    """|v| over the last axis without overflow or underflow of the squares."""
    v = np.asarray(v, dtype=np.float64)
    big = np.abs(v).max(axis=-1, initial=0.0)
    safe = np.where(big > 0, big, 1.0)
    with np.errstate(over="ignore", under="ignore"):     # (inf only beyond the float64 range)
        return big * np.linalg.norm(v / safe[..., None], axis=-1)


def phase(h: ArrayLike, g: ArrayLike, imin: ArrayLike) -> NDArray[np.float64]:
    """``|h| g / imin`` (the angle bound of a step, radians) without spurious overflow: inf only
    where the angle itself is beyond the float64 range."""
    h, g, imin = np.abs(np.asarray(h, dtype=np.float64)), np.asarray(g, dtype=np.float64), \
        np.asarray(imin, dtype=np.float64)
    with np.errstate(over="ignore", under="ignore", invalid="ignore"):
        r = g / imin
        p = np.where(np.isfinite(r), h * r, (h * g) / imin)
    return np.where((h == 0) | (g == 0), 0.0, p)


def phase_scalar(h: float, g: float, imin: float) -> float:
    """:func:`phase` for Python floats (one body, no numpy call)."""
    if h == 0 or g == 0:
        return 0.0
    r = g / imin
    return abs(h) * r if r != float("inf") else (abs(h) * g) / imin


def options_of(options: dict[str, Any], known: dict[str, Any], where: str) -> dict[str, Any]:
    """``known`` (keyword -> default) updated with the ``options`` a function was called with;
    TypeError naming an unknown keyword."""
    unknown = sorted(set(options) - set(known))
    if unknown:
        raise TypeError(f"{where}() got an unexpected keyword argument {unknown[0]!r} (its "
                        f"keywords: {', '.join(known)})")
    return {**known, **options}
