"""pytest plugin of ``bash .ci/run --sanitize``: floating-point traps inside frb's compiled code.

gfortran's ``-ffpe-trap`` takes effect only through a Fortran main program; frb's Fortran runs in
a library loaded by Python, and numpy and the tests compute with infinities and NaNs on purpose.
So every routine of the extensions ``frb._core`` and ``frb._testing`` is wrapped: the traps of
invalid operations, division by zero and overflow (glibc's ``feenableexcept``) are on while the
routine runs in the calling thread and off again when it returns. A trap stops the process with
the sanitizer's report (SIGFPE) naming the instruction.

Routines that rely on non-finite intermediates, or that are given non-finite values on purpose,
run without traps; they are listed in ``UNTRAPPED`` with the reason.
"""
from __future__ import annotations

import ctypes
import ctypes.util
import functools
import platform

# x86-64 glibc <fenv.h>
FE_INVALID, FE_DIVBYZERO, FE_OVERFLOW = 0x01, 0x04, 0x08
TRAPS = FE_INVALID | FE_DIVBYZERO | FE_OVERFLOW
FE_ALL_EXCEPT = 0x3D

# name -> why it runs without traps
UNTRAPPED: dict[str, str] = {}

_libm = ctypes.CDLL(ctypes.util.find_library("m"))
wrapped: list[str] = []


def _trapped(routine, name):
    @functools.wraps(routine) if hasattr(routine, "__name__") else (lambda f: f)
    def call(*args, **kwargs):
        _libm.feclearexcept(FE_ALL_EXCEPT)
        _libm.feenableexcept(TRAPS)
        try:
            return routine(*args, **kwargs)
        finally:
            _libm.fedisableexcept(TRAPS)
            _libm.feclearexcept(FE_ALL_EXCEPT)
    call.__doc__ = getattr(routine, "__doc__", None)
    return call


def pytest_configure(config):
    if platform.machine() not in ("x86_64", "AMD64"):
        return
    import importlib

    for module_name in ("frb._core", "frb._testing"):
        try:
            module = importlib.import_module(module_name)
        except ImportError:
            continue
        for name in dir(module):
            routine = getattr(module, name)
            if type(routine).__name__ != "fortran" or name in UNTRAPPED:
                continue
            setattr(module, name, _trapped(routine, name))
            wrapped.append(f"{module_name}.{name}")


def pytest_report_header(config):
    return (f"floating-point traps (invalid, zero, overflow) in {len(wrapped)} compiled routines; "
            f"without: {', '.join(sorted(UNTRAPPED)) or 'none'}")
