"""Generated sources: the committed files are what tools/ writes, and the shared numbers agree with
the compiled extensions.

tools/numbers_table.py writes fortran/numbers_table.f90 and frb/_numbers_table.py from one table;
tools/gen_gauss_legendre.py, tools/gen_gyrostat_gauss.py, tools/gen_jacobi_series.py and
tools/gen_lane_math.py write the
fortran/*_table.inc files.
"""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import frb
from frb import _core, _messages, _validate
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
    ("gen_gyrostat_gauss.py", ["gyrostat_gauss_table.inc"]),
    ("gen_jacobi_series.py", ["jacobi_series_table.inc", "jacobi_series_sum_table.inc",
                              "jacobi_series_lanes_table.inc", "jacobi_series_dm_lanes_table.inc"]),
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
    assert _validate.ORTHOGONALITY_TOLERANCE == sn.ATTITUDE_TOLERANCE == 1e-10
    assert frb.methods.NEWTON_RTOL == sn.NEWTON_RTOL == 4.0 * np.finfo(np.float64).eps
    assert frb.methods.NEWTON_MAX_ITER == sn.NEWTON_MAX_ITER == 50


def _whole_run(**changes):
    """engine_whole of one free body over one step, with arrays of other sizes in changes."""
    config = np.zeros(sn.RUN_SLOTS, dtype=np.intc)
    config[sn.RUN_FAMILY - 1] = sn.FAMILY_RUNGE_KUTTA
    config[sn.RUN_VARIANT - 1] = sn.VARIANT_RK4
    config[sn.RUN_NSTEPS - 1] = 1
    config[sn.RUN_CHUNK - 1] = sn.ENGINE_CHUNK
    terms = np.zeros((sn.TORQUE_TERM_HEADER + sn.TORQUE_TERM_REALS, 1))
    terms[0, 0] = sn.TORQUE_NONE
    args = dict(config=config, plan=np.array([[0.0], [1.0]]), terms=terms,
                body=np.zeros((sn.TORQUE_TERM_REALS, 1)), times=np.array([0.0, 0.1]),
                m0=np.array([[0.3], [0.5], [0.8]]), att0=np.array([[1.0], [0], [0], [0]]),
                inertia=np.array([[1.0], [2.0], [3.0]]), m_out=np.zeros((3, 1, 2), order="F"),
                att_out=np.zeros((4, 1, 2), order="F"), vs_out=np.zeros(0),
                wheels=np.zeros((sn.WHEEL_REALS, 1, 1), order="F"),
                law=np.zeros((sn.LAW_REALS, 1)), h0=np.zeros((1, 1)),
                h_out=np.zeros((1, 1, 1), order="F"))
    args.update(changes)
    return _core.engine_whole(**args)


def _wheel_config():
    config = np.zeros(sn.RUN_SLOTS, dtype=np.intc)
    config[sn.RUN_FAMILY - 1] = sn.FAMILY_RUNGE_KUTTA
    config[sn.RUN_VARIANT - 1] = sn.VARIANT_RK4
    config[sn.RUN_NSTEPS - 1] = 1
    config[sn.RUN_CHUNK - 1] = sn.ENGINE_CHUNK
    config[sn.RUN_WHEEL_LAW - 1] = sn.WHEEL_LAW_FEEDBACK
    return config


def test_engine_checks_the_sizes_of_the_shared_numbers():
    """The binding reads every size from the arrays and refuses those that are not the table's."""
    assert _whole_run()[0] == sn.INFO_OK
    assert _whole_run(config=np.zeros(sn.RUN_SLOTS + 1, dtype=np.intc))[0] == sn.INFO_BAD_CALL
    assert _whole_run(plan=np.array([[0.0], [1.0], [0.0]]))[0] == sn.INFO_BAD_CALL
    assert _whole_run(terms=np.zeros((sn.TORQUE_TERM_REALS, 1)))[0] == sn.INFO_BAD_CALL
    assert _whole_run(body=np.zeros((sn.TORQUE_TERM_REALS + 1, 1)))[0] == sn.INFO_BAD_CALL
    assert _whole_run(times=np.array([0.0, 0.1, 0.2]))[0] == sn.INFO_BAD_CALL
    assert _whole_run(wheels=np.zeros((sn.WHEEL_REALS + 1, 1, 1)))[0] == sn.INFO_BAD_CALL
    assert _whole_run(wheels=np.zeros((sn.WHEEL_REALS, sn.MAX_WHEELS + 1, 1)),
                      h0=np.zeros((sn.MAX_WHEELS + 1, 1)),
                      h_out=np.zeros((sn.MAX_WHEELS + 1, 1, 1)))[0] == sn.INFO_BAD_CALL
    assert _whole_run(law=np.zeros((sn.LAW_REALS - 1, 1)))[0] == sn.INFO_BAD_CALL
    # with a wheel law, the wheel momenta must have the sizes of the bodies and kept states
    wheel = dict(config=_wheel_config(), h_out=np.zeros((1, 1, 2), order="F"))
    assert _whole_run(**wheel)[0] == sn.INFO_OK
    assert _whole_run(**{**wheel, "h_out": np.zeros((1, 1, 1))})[0] == sn.INFO_BAD_CALL
    assert _whole_run(**{**wheel, "h0": np.zeros((1, 2))})[0] == sn.INFO_BAD_CALL
    # a variational state of the wrong size (the state's six columns take 36 reals)
    config = np.zeros(sn.RUN_SLOTS, dtype=np.intc)
    config[sn.RUN_FAMILY - 1] = sn.FAMILY_RUNGE_KUTTA
    config[sn.RUN_VARIANT - 1] = sn.VARIANT_RK4
    config[sn.RUN_NSTEPS - 1] = 1
    config[sn.RUN_CHUNK - 1] = sn.ENGINE_CHUNK
    config[sn.RUN_VARIATIONAL - 1] = sn.VARIATIONAL_STATE
    assert _whole_run(config=config, vs_out=np.zeros(36 * 2))[0] == sn.INFO_OK
    assert _whole_run(config=config, vs_out=np.zeros(35 * 2))[0] == sn.INFO_BAD_CALL


def _check(m, att, h, inertia):
    """The code of the compiled checks of one body."""
    code, body, _ = _core.check_bodies(np.reshape(m, (3, 1)), np.reshape(att, (-1, 1)),
                                       np.array([h], dtype=float), np.reshape(inertia, (3, 1)), 1,
                                       np.empty(sn.CHECK_EXTREMES))
    assert body == (-1 if code == sn.INPUT_OK else 0)
    return code


def test_check_codes_of_the_compiled_checks():
    m, q, inertia, eye = np.array([0.3, 0.5, 0.8]), np.array([1.0, 0, 0, 0]), np.array([1.0, 2, 3]), np.eye(3)
    nan = np.array([np.nan, 0, 0])
    assert _check(m, q, 0.1, inertia) == sn.INPUT_OK
    assert _check(nan, q, 0.1, inertia) == sn.BAD_M
    assert _check(m, np.array([np.nan, 0, 0, 0]), 0.1, inertia) == sn.BAD_ATTITUDE_VALUE
    assert _check(m, 2 * q, 0.1, inertia) == sn.BAD_QUATERNION
    assert _check(m, q, 0.1, nan) == sn.BAD_INERTIA_VALUE
    assert _check(m, q, 0.1, -inertia) == sn.BAD_INERTIA_SIGN
    assert _check(m, 2 * eye, 0.1, inertia) == sn.BAD_ROTATION
    assert _check(m, eye, np.nan, inertia) == sn.BAD_H
    # the first problem in the order of the arguments: m, the attitude, h, the inertia
    assert _check(nan, 2 * q, np.nan, -inertia) == sn.BAD_M
    assert _check(m, 2 * q, np.nan, -inertia) == sn.BAD_QUATERNION
    assert _check(m, q, np.nan, -inertia) == sn.BAD_H


def test_phase_limit_of_the_compiled_checks():
    """|h| |m| / I_min = PHASE_LIMIT is accepted, the next float above is BAD_PHASE."""
    m, inertia = np.array([1.0, 0.0, 0.0]), np.array([1.0, 1.0, 1.0])
    assert _check(m, np.eye(3), sn.PHASE_LIMIT, inertia) == sn.INPUT_OK
    assert _check(m, np.eye(3), np.nextafter(sn.PHASE_LIMIT, np.inf), inertia) == sn.BAD_PHASE


def test_check_message_names_the_argument_and_the_body():
    msg = _messages.check_message
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
