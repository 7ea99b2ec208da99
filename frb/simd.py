"""SIMD target of the batched exact flows: which compiled copy of the lane kernels runs.

The batched exact and semi-exact steps (:func:`frb.frb_step`, :func:`frb.quat_step` on
several bodies, and the exact splittings of :func:`frb.integrate`) advance 32 bodies at a
time in lock-step, and their kernels are compiled once per instruction set:

``baseline``
    the architecture's baseline (x86-64: SSE2, two doubles a vector instruction);
``avx2``
    x86-64-v3 (AVX2, four doubles);
``avx512``
    x86-64-v4 (AVX-512, eight doubles: one instruction per lane group).

At import frb uses the best target the CPU supports, or the one the environment variable
``FRB_CPU_TARGET`` (``baseline``, ``avx2`` or ``avx512``) names; if the CPU lacks the named
target, frb warns and uses the best it has. On other architectures than x86-64 the baseline is
the only target.

Every target performs the same IEEE operations in the same order (vector instructions act lane
by lane, and no multiply-add is fused into one rounding in any of them), so every target gives
the same results bit for bit; a wider target only costs less time.
"""
from __future__ import annotations

import os
import warnings

from . import _core
from ._numbers_table import CPU_TARGET_AVX2, CPU_TARGET_AVX512, CPU_TARGET_BASELINE

__all__ = ["cpu_dispatch", "set_cpu_target", "supported_cpu_targets", "CPU_TARGETS"]

#: The names of the targets, in increasing order of the instruction sets they need.
CPU_TARGETS = ("baseline", "avx2", "avx512")
_CODES = {"baseline": CPU_TARGET_BASELINE, "avx2": CPU_TARGET_AVX2, "avx512": CPU_TARGET_AVX512}
_NAMES = {code: name for name, code in _CODES.items()}
_ENVIRONMENT = "FRB_CPU_TARGET"


def _select(code: int) -> tuple[int, int]:
    """Set the target ``code`` (-1: the best); (in use, best supported). The target is held once,
    in the Fortran library that every extension of frb links."""
    in_use, best = _core.cpu_target_select(code)
    return in_use, best


def cpu_dispatch() -> str:
    """The name of the SIMD target the batched flows use: ``'baseline'``, ``'avx2'`` or
    ``'avx512'`` (see :mod:`frb.simd`).

    Examples
    --------
    >>> import frb
    >>> frb.cpu_dispatch() in frb.simd.supported_cpu_targets()
    True
    """
    return _NAMES[_current]


def supported_cpu_targets() -> tuple[str, ...]:
    """The targets this CPU supports, from the baseline up to the best.

    Examples
    --------
    >>> import frb
    >>> frb.simd.supported_cpu_targets()[0]
    'baseline'
    """
    return CPU_TARGETS[:_best + 1]


def set_cpu_target(target: str | None) -> str:
    """Use the SIMD target ``target`` for the batched flows from now on; returns the target in
    use.

    Parameters
    ----------
    target : {'baseline', 'avx2', 'avx512'} or None
        The target; ``None``: the best this CPU supports. If the CPU lacks ``target``, frb
        warns (RuntimeWarning) and uses the best it supports. The results do not depend on the
        target (see :mod:`frb.simd`); do not call this while another thread runs a flow.

    Raises
    ------
    TypeError, ValueError
        ``target`` is not one of the names above or None.

    Examples
    --------
    >>> import frb
    >>> frb.set_cpu_target("baseline")
    'baseline'
    >>> best = frb.set_cpu_target(None)          # back to the best target of this CPU
    """
    global _current
    if target is None:
        code = -1
    elif not isinstance(target, str):
        raise TypeError(f"target must be one of {', '.join(CPU_TARGETS)} or None, got {target!r}")
    elif target.strip().lower() not in _CODES:
        raise ValueError(f"target must be one of {', '.join(CPU_TARGETS)} or None, got {target!r}")
    else:
        code = _CODES[target.strip().lower()]
    _current, best = _select(code)
    if code > best:
        warnings.warn(f"this CPU does not support the SIMD target {_NAMES[code]!r}; frb uses "
                      f"{_NAMES[best]!r}, the best it supports", RuntimeWarning, stacklevel=2)
    return _NAMES[_current]


def _from_environment() -> tuple[int, int]:
    """The target at import: FRB_CPU_TARGET's, else the best (a warning for a value that is not
    a target's name or a target the CPU lacks)."""
    requested = os.environ.get(_ENVIRONMENT, "").strip().lower()
    code = _CODES.get(requested, -1)
    in_use, best = _select(code)
    if requested and requested not in _CODES:
        warnings.warn(f"{_ENVIRONMENT}={os.environ[_ENVIRONMENT]!r} is not one of "
                      f"{', '.join(CPU_TARGETS)}; frb uses {_NAMES[in_use]!r}, the best target "
                      "this CPU supports", RuntimeWarning, stacklevel=3)
    elif code > best:
        warnings.warn(f"{_ENVIRONMENT}={requested}: this CPU does not support it; frb uses "
                      f"{_NAMES[best]!r}, the best target it supports", RuntimeWarning,
                      stacklevel=3)
    return in_use, best


_current, _best = _from_environment()
