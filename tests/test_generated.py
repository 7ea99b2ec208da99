"""Generated sources: the committed files are what tools/ writes, and the shared numbers agree with
the compiled extensions.

tools/numbers_table.py writes fortran/numbers_table.f90 and frb/_numbers_table.py from one table;
tools/gen_gauss_legendre.py, tools/gen_jacobi_series.py and tools/gen_lane_math.py write the
fortran/*_table.inc files.
"""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import frb
from frb import _core, _engine, _validate
from frb import _numbers_table as sn

REPO_ROOT = Path(__file__).resolve().parents[1]
TOOLS = REPO_ROOT / "tools"


def _run(script: str, *args: str) -> None:
    subprocess.run([sys.executable, str(TOOLS / script), *args], cwd=REPO_ROOT, check=True,
                   capture_output=True)


def test_numbers_table_files_are_generated(tmp_path):
    _run("numbers_table.py", str(tmp_path))
    for rel in ("fortran/numbers_table.f90", "frb/_numbers_table.py"):
        assert (tmp_path / rel).read_bytes() == (REPO_ROOT / rel).read_bytes(), (
            f"{rel} differs from tools/numbers_table.py's table: run the script")


def test_numbers_table_check_mode():
    _run("numbers_table.py", "--check")


def test_installed_numbers_table_are_the_committed_ones():
    """The installed frb._numbers_table is the source tree's (the suite runs the installed package)."""
    committed = (REPO_ROOT / "frb" / "_numbers_table.py").read_bytes()
    assert Path(sn.__file__).read_bytes() == committed


@pytest.mark.parametrize("script, outputs", [
    ("gen_gauss_legendre.py", ["gauss_legendre_table.inc"]),
    ("gen_jacobi_series.py", ["jacobi_series_table.inc", "jacobi_series_sum_table.inc",
                              "jacobi_series_lanes_table.inc"]),
    ("gen_lane_math.py", ["lane_math_table.inc"]),
])
def test_tables_are_generated(tmp_path, script, outputs):
    pytest.importorskip("mpmath")
    _run(script, str(tmp_path))
    for name in outputs:
        assert (tmp_path / name).read_bytes() == (REPO_ROOT / "fortran" / name).read_bytes(), (
            f"fortran/{name} differs from tools/{script}'s output")


def test_python_uses_the_numbers_table():
    assert _validate.PHASE_LIMIT == sn.PHASE_LIMIT == 1e18
    assert frb.engine.NEWTON_RTOL == sn.NEWTON_RTOL == 4.0 * np.finfo(np.float64).eps
    assert frb.engine.NEWTON_MAX_ITER == sn.NEWTON_MAX_ITER
    assert frb.torques.KIND_FIELD == sn.TORQUE_FIELD
    assert frb.torques.KIND_GRAVITY_GRADIENT == sn.TORQUE_GRAVITY_GRADIENT


def test_workspace_size():
    assert int(_engine.engine_workspace()) == sn.NWS


def test_check_codes_of_the_compiled_checks():
    tol = _validate.ORTHOGONALITY_TOLERANCE
    m, q, inertia, eye = np.array([0.3, 0.5, 0.8]), np.array([1.0, 0, 0, 0]), np.array([1.0, 2, 3]), np.eye(3)
    nan = np.array([np.nan, 0, 0])
    assert _core.check_single_quat(m, q, inertia, tol) == sn.INPUT_OK
    assert _core.check_single_quat(nan, q, inertia, tol) == sn.BAD_M
    assert _core.check_single_quat(m, np.array([np.nan, 0, 0, 0]), inertia, tol) == sn.BAD_ATTITUDE_VALUE
    assert _core.check_single_quat(m, 2 * q, inertia, tol) == sn.BAD_QUATERNION
    assert _core.check_single_quat(m, q, nan, tol) == sn.BAD_INERTIA_VALUE
    assert _core.check_single_quat(m, q, -inertia, tol) == sn.BAD_INERTIA_SIGN
    assert _core.check_single_matrix(m, 2 * eye, inertia, tol) == sn.BAD_ROTATION
    _, _, info = _core.frb_step_single(m, eye, np.nan, inertia, 0, tol)
    assert info == sn.BAD_H


def test_phase_limit_of_the_compiled_checks():
    """|h| |m| / I_min = PHASE_LIMIT is accepted, the next float above is BAD_PHASE."""
    tol = _validate.ORTHOGONALITY_TOLERANCE
    m, inertia = np.array([1.0, 0.0, 0.0]), np.array([1.0, 1.0, 1.0])
    _, _, info = _core.frb_step_single(m, np.eye(3), sn.PHASE_LIMIT, inertia, 0, tol)
    assert info == sn.INPUT_OK
    _, _, info = _core.frb_step_single(m, np.eye(3), np.nextafter(sn.PHASE_LIMIT, np.inf), inertia, 0, tol)
    assert info == sn.BAD_PHASE


def test_check_message_names_the_argument_and_the_body():
    msg = _validate.check_message
    assert msg(sn.INPUT_OK) == ""
    assert msg(sn.BAD_M, {"m": "m0"}, 3) == "m0 contains non-finite values (NaN or infinity) (body 3)"
    assert msg(sn.BAD_ATTITUDE_VALUE, {"attitude": "Q0"}, terse=True) == "Q0 must be finite"
    assert msg(sn.BAD_INERTIA_SIGN, terse=True, inertia=[1.0, -2.0, 3.0]) == \
        "inertia must be positive, got [1.0, -2.0, 3.0]"
    assert msg(sn.BAD_INERTIA_SIGN, body=-1) == "inertia must contain strictly positive moments of inertia"
    assert msg(sn.BAD_QUATERNION, {"attitude": "attitude0"}, plural=True) == (
        "attitude0 must be unit quaternions, scalar first (|q| = 1 within 1e-10)")
    assert msg(sn.BAD_ROTATION, body=0) == (
        "Q must be a rotation matrix (Q^T Q = 1 within 1e-10, det Q = +1) (body 0)")
    assert msg(sn.BAD_PHASE, {"h": "h"}, 2, phase=2e18).startswith("h is too long (body 2): ")
    with pytest.raises(ValueError, match="unknown check code"):
        msg(99)
