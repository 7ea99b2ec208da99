"""pytest plugin of ``bash .ci/run --sanitize``: floating-point traps inside frb's compiled code.

gfortran's ``-ffpe-trap`` takes effect only through a Fortran main program; frb's Fortran runs in
a library loaded by Python, and numpy and the tests compute with infinities and NaNs on purpose.
So every routine of the extensions ``frb._core`` and ``frb._testing`` is wrapped: the traps of
invalid operations, division by zero and overflow (glibc's ``feenableexcept``) are on while the
routine runs in the calling thread and off again when it returns. A trap stops the process with
the sanitizer's report (SIGFPE) naming the instruction.

Routines that rely on non-finite intermediates run without traps; they are listed in
``UNTRAPPED`` with the reason. So does any call given a non-finite input (the tests of hostile
input), but for the routines that check their input first (``CHECKED_FIRST``: the compiled checks
of fortran/checks.f90 read NaN and infinities from their bits and compare finite values only, and
refuse the body before any step).

With ``FRB_FPE_FLAGS=1`` the traps are not enabled: the flags of the same exceptions are cleared
before each call and read after it, and the calls that raised one are listed at the end of the run
(the routine, the test, the exceptions) and fail the run, so that one run finds every such call
(a trap stops the process at the first).
"""
from __future__ import annotations

import ctypes
import ctypes.util
import math
import os
import platform

# x86-64 glibc <fenv.h>
FE_INVALID, FE_DIVBYZERO, FE_OVERFLOW = 0x01, 0x04, 0x08
TRAPS = FE_INVALID | FE_DIVBYZERO | FE_OVERFLOW
FE_ALL_EXCEPT = 0x3D

_LANES = ("the lock-step lanes (fortran/exact_flow_lanes.f90, moser_veselov.f90, flow_batches.f90, "
          "compiled with -fno-trapping-math) evaluate both sides of a merge in every lane: an "
          "inactive lane computes with values outside its branch's range (sqrt of a negative "
          "number, 0/0), whose NaN the merge then discards")
# name -> why it runs without traps
UNTRAPPED: dict[str, str] = {name: _LANES for name in (
    "frb_integrate_batch", "quat_integrate_batch", "dmv_step_batch", "dmv_integrate_batch")}
UNTRAPPED["ell_carlson"] = ("tests/test_elliptic.py evaluates R_C(x, y) at x = 0 and y < 0 (its "
                            "pole: a division by zero) along with valid arguments, and drops it")
_BRANCH_FREE = ("the exact flows' elementary functions (fortran/lane_math_generic.inc) are "
                "branch-free: both pieces are evaluated and one is chosen by a merge, e.g. "
                "lane_atanc (atan(x)/x) computes atan(|x|)/|x| also at x = 0 (0/0), where the "
                "merge takes the series")
# the engine's entry points (and the one-body steps, free_steps_one) run without traps when the
# method's family runs the exact flows or the lanes (the exact splittings and the approximate
# free flows: DMV): _LANES and _BRANCH_FREE; with traps for every other family
UNTRAPPED["lane_math_values"] = _BRANCH_FREE
# the exact flow's derivatives (fortran/flow_derivatives.f90, exact_splittings.f90) run the exact
# flow: its branch-free functions, and the dual numbers of its derivatives
for _name in ("flow_jacobian", "flow_inertia_jacobian", "dual_flow_jacobian"):
    UNTRAPPED[_name] = _BRANCH_FREE
UNTRAPPED["engine_segment_gil"] = (
    "the loop with a Python call-back (a user's torque or wheel law): a call-back that fails "
    "returns NaN on purpose, so that the step ends non-finite and the loop stops "
    "(frb/_run.py, _TorqueCallback), and the Python of the call-back is not frb's compiled code; "
    "the traps cannot be lifted from inside the call, since gfortran restores the halting modes "
    "of the entry when a procedure that uses ieee_arithmetic returns (and raises the flags "
    "signalled meanwhile); the same loop runs trapped with the built-in torques")
ENGINE = ("engine_whole", "engine_segment", "engine_segment_gil")
# the loops whose steps may overflow on purpose: an explicit method given a step far beyond its
# stability (h = 1e18) ends the step non-finite, and the loop stops there (status
# INFO_NON_FINITE, frb.IntegrationError), and an implicit method's Newton iteration given such a
# step diverges on its way to failing (INFO_NO_CONVERGENCE, INFO_NO_SOLUTION). Their flags are
# read after the call instead of trapped: raised by a call that ends with one of these failures
# they are the stop; raised by a call that succeeds they fail the test (FloatingPointError)
FLAGGED = ("engine_whole", "engine_segment", "free_steps_one")
# the routines that check every body first (fortran/checks.f90, without a floating-point
# exception for any value) and refuse an invalid one before any step: trapped also when given
# NaN or an infinity
CHECKED_FIRST = ("check_bodies", "free_steps_one", "engine_whole")
FLAGS_ONLY = os.environ.get("FRB_FPE_FLAGS", "0") == "1"
_NAMES = {FE_INVALID: "invalid", FE_DIVBYZERO: "division by zero", FE_OVERFLOW: "overflow"}
raised: list[str] = []
_current_test = ["(collection)"]

_libm = ctypes.CDLL(ctypes.util.find_library("m"))
wrapped: list[str] = []


def _untrapped_family(name, args, kwargs) -> bool:
    """True when an engine or one-body call's method family runs the exact flows or the lanes
    (the config slot RUN_FAMILY of the engine, the first argument of free_steps_one)."""
    from frb import _numbers_table as nt

    if name == "free_steps_one":
        family = int(args[0] if args else kwargs["family"])
    elif name in ENGINE:
        config = args[0] if args else kwargs.get("config")
        family = int(config[nt.RUN_FAMILY - 1])
    else:
        return False
    return family in (nt.FAMILY_EXACT_SPLITTINGS, nt.FAMILY_APPROXIMATE_FREE_FLOWS)


def _given_non_finite(args) -> bool:
    """True when an input (a positional argument: the outputs and work arrays are given by
    keyword) holds NaN or an infinity: the compiled checks of the input (fortran/checks.f90)
    compare such values on purpose to find and name them, which raises the invalid flag."""
    import numpy as np

    for a in args:
        if isinstance(a, np.ndarray) and a.dtype.kind == "f" and not np.isfinite(a).all():
            return True
        if isinstance(a, float) and not math.isfinite(a):
            return True
    return False


def _status(name, result) -> int:
    """The info status a FLAGGED routine returned: the first of (status, fail_step, fail_body)
    of the engine, the last of free_steps_one's (m, attitude, check code, status)."""
    return int(result[-1] if name == "free_steps_one" else result[0])


def _failures() -> tuple[int, ...]:
    """The statuses of a run stopped by a step that left the float64 range or diverged."""
    from frb import _numbers_table as nt

    return (nt.INFO_NON_FINITE, nt.INFO_NO_CONVERGENCE, nt.INFO_NO_SOLUTION)


def _trapped(routine, name):
    def call(*args, **kwargs):
        if _untrapped_family(name, args, kwargs) or (name not in CHECKED_FIRST
                                                     and _given_non_finite(args)):
            return routine(*args, **kwargs)
        _libm.feclearexcept(FE_ALL_EXCEPT)
        if name in FLAGGED and not FLAGS_ONLY:
            result = routine(*args, **kwargs)
            flags = _libm.fetestexcept(TRAPS)
            _libm.feclearexcept(FE_ALL_EXCEPT)
            if flags and _status(name, result) not in _failures():
                what = ", ".join(v for k, v in _NAMES.items() if flags & k)
                raise FloatingPointError(f"{name} raised {what} and ended with status "
                                         f"{_status(name, result)}")
            return result
        if FLAGS_ONLY:
            result = routine(*args, **kwargs)
            flags = _libm.fetestexcept(TRAPS)
            _libm.feclearexcept(FE_ALL_EXCEPT)
            if flags and not (name in FLAGGED and _status(name, result) in _failures()):
                what = ", ".join(v for k, v in _NAMES.items() if flags & k)
                raised.append(f"{name} in {_current_test[0]}: {what}")
            return result
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
    kind = "flags" if FLAGS_ONLY else "traps"
    return (f"floating-point {kind} (invalid, zero, overflow) in {len(wrapped)} compiled routines "
            f"(the engine's and free_steps_one's for the methods that use neither the exact flows "
            f"nor the lanes); without: "
            f"{', '.join(sorted(UNTRAPPED)) or 'none'}")


def pytest_runtest_setup(item):
    _current_test[0] = item.nodeid


def pytest_terminal_summary(terminalreporter, exitstatus, config):
    if not FLAGS_ONLY:
        return
    terminalreporter.section("floating-point exceptions in frb's compiled routines")
    terminalreporter.write_line(f"{len(raised)} calls raised invalid, division by zero or overflow")
    for line in dict.fromkeys(raised):
        terminalreporter.write_line(line)


def pytest_sessionfinish(session, exitstatus):
    if FLAGS_ONLY and raised and session.exitstatus == 0:
        session.exitstatus = 1
