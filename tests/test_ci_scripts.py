"""The examples loop of ``bash .ci/run --examples`` (``.ci/examples``), run with stand-ins for
``frb-example`` and ``frb-compare`` (small bash scripts on PATH that log their arguments, write
the figure they are asked for and fail on demand): it runs every example and every experiment
the installed frb lists, writes one figure each, and exits non-zero when any command fails or
writes no figure. No build and no experiment runs here (a second or two).
"""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from frb.cli import main
from frb.experiments import EXPERIMENTS

REPO = Path(__file__).resolve().parents[1]
LOOP = REPO / ".ci" / "examples"
RUN = REPO / ".ci" / "run"

pytestmark = pytest.mark.skipif(shutil.which("bash") is None, reason="needs bash")

# A stand-in for frb-example / frb-compare: logs "prog args", answers --names with the real
# installed frb's list (python -m frb.cli --names), writes the --plot file, and fails with
# status 3 when its arguments contain $STUB_FAIL (or writes no figure for $STUB_NOFIG).
STUB = """#!/usr/bin/env bash
echo "$(basename "$0") $*" >> "$STUB_LOG"
if [[ "${1:-}" == "--names" ]]; then
    if [[ -n "${STUB_NAMES_FAIL:-}" ]]; then exit 4; fi
    exec "$STUB_PYTHON" -m frb.cli --names
fi
if [[ -n "${STUB_FAIL:-}" && " $* " == *" $STUB_FAIL "* ]]; then exit 3; fi
prev=""
for a in "$@"; do
    if [[ "$prev" == "--plot" && ( -z "${STUB_NOFIG:-}" || " $* " != *" $STUB_NOFIG "* ) ]]; then
        echo png > "$a"
    fi
    prev="$a"
done
"""


def _loop(tmp_path: Path, **env: str) -> tuple[subprocess.CompletedProcess[str], list[str]]:
    """Run .ci/examples in tmp_path with the stand-ins first on PATH; (result, log lines)."""
    bindir = tmp_path / "bin"
    bindir.mkdir(exist_ok=True)
    for prog in ("frb-example", "frb-compare"):
        (bindir / prog).write_text(STUB)
        (bindir / prog).chmod(0o755)
    log = tmp_path / "log"
    log.write_text("")
    full_env = {**os.environ, "PATH": f"{bindir}{os.pathsep}{os.environ['PATH']}",
                "STUB_LOG": str(log), "STUB_PYTHON": sys.executable, **env}
    res = subprocess.run(["bash", str(LOOP), str(tmp_path / "figs")], cwd=tmp_path, env=full_env,
                         capture_output=True, text=True, timeout=120)
    return res, log.read_text().splitlines()


def test_names_are_the_experiments(capsys):
    """frb-example --names prints exactly frb.experiments' list, one name per line."""
    assert main(["--names"]) == 0
    assert capsys.readouterr().out.split("\n")[:-1] == list(EXPERIMENTS)


def test_loop_runs_every_example_and_experiment(tmp_path):
    """All commands succeed: exit 0, the examples 0-4, every experiment of the installed frb
    with its figure, and the two work-precision diagrams, each run once."""
    res, log = _loop(tmp_path)
    assert res.returncode == 0, res.stderr
    expected = [f"frb-example {i}" for i in range(5)] + ["frb-example --names"]
    expected += [f"frb-example {n} --plot {tmp_path / 'figs' / n}.png" for n in EXPERIMENTS]
    expected += [f"frb-compare --problem {p} --plot {tmp_path / 'figs'}/compare-{p}.png"
                 for p in ("free", "heavy-top")]
    assert log == expected
    figures = sorted(p.stem for p in (tmp_path / "figs").iterdir())
    assert figures == sorted([*EXPERIMENTS, "compare-free", "compare-heavy-top"])


@pytest.mark.parametrize("fail", ["krysl-free", "3", "heavy-top"])
def test_a_failure_fails_the_loop(tmp_path, fail):
    """An experiment, an example or frb-compare failing: the rest still run, the failure is
    listed, and the exit status is non-zero."""
    res, log = _loop(tmp_path, STUB_FAIL=fail)
    assert res.returncode != 0
    assert "FAILED (1)" in res.stderr and "exit status 3" in res.stderr
    assert fail in res.stderr.split("FAILED")[1]
    assert len(log) == 5 + 1 + len(EXPERIMENTS) + 2        # nothing skipped after the failure


def test_a_missing_figure_fails_the_loop(tmp_path):
    res, _ = _loop(tmp_path, STUB_NOFIG="torus")
    assert res.returncode != 0
    assert "no figure" in res.stderr and "torus.png" in res.stderr


def test_no_list_of_experiments_fails_the_loop(tmp_path):
    res, log = _loop(tmp_path, STUB_NAMES_FAIL="1")
    assert res.returncode != 0 and "frb-example --names" in res.stderr
    assert not any("--plot" in line and line.startswith("frb-example") for line in log)


def test_ci_run_examples_is_the_loop():
    """.ci/run --examples hands over to .ci/examples (the loop tested above), and runs no
    Python in the repository root (where 'import frb' would find the source folder)."""
    text = RUN.read_text()
    branch = text[text.index('if [[ "$mode" == examples ]]'):]
    branch = branch[:branch.index("\nfi\n")]
    assert "exec bash .ci/examples figures" in branch
    assert "python" not in branch.replace("# ", "").split("exec")[1]
