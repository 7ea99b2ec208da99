"""frb-example as a new user meets it outside the repository: --help lists the examples and
experiments, --version, and the published outputs (which frb does not ship) given with
--reference DIR or FRB_REFERENCE_DIR, or a message saying where they come from.
"""
from __future__ import annotations

import os

import pytest

import frb
from frb import datasets
from frb.cli import _reference_dir, compare_main, main
from frb.experiments import EXPERIMENTS


def test_help_lists_examples_and_experiments(capsys):
    with pytest.raises(SystemExit) as exc:
        main(["--help"])
    assert exc.value.code == 0
    out = capsys.readouterr().out
    assert "{0,1,2,3,4}" not in out
    for n in range(5):
        assert f"\n  {n}  " in out
    for name in EXPERIMENTS:
        assert f"\n  {name} " in out
    assert "--reference DIR" in out and "FRB_REFERENCE_DIR" in out
    assert "Algorithm 903 distribution" in out and "--version" in out


@pytest.mark.parametrize("command, prog", [(main, "frb-example"), (compare_main, "frb-compare")])
def test_version(command, prog, capsys):
    with pytest.raises(SystemExit) as exc:
        command(["--version"])
    assert exc.value.code == 0
    assert capsys.readouterr().out.strip() == f"{prog} (frb) {frb.__version__}"


def test_no_published_output_says_where_it_comes_from(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(datasets, "reference_dirs", lambda: [])
    assert main(["0"]) == 0
    out = capsys.readouterr().out
    line = [s for s in out.splitlines() if "compared:" in s][0]
    assert "out_example0.dat was not found" in line
    assert "Algorithm 903 distribution" in line and "10.1145/1731022.1731033" in line
    assert "--reference DIR" in line and "FRB_REFERENCE_DIR=DIR" in line


def _own_reference(tmp_path, n=2):
    """A folder holding out_exampleN.dat as frb writes it (a stand-in for the published one)."""
    ref = tmp_path / "ref"
    ref.mkdir()
    assert main([str(n), "--no-compare", "--output", str(ref / f"out_example{n}.dat")]) == 0
    return ref


def test_reference_dir(tmp_path, monkeypatch, capsys):
    """--reference DIR compares with DIR/out_exampleN.dat, ahead of FRB_REFERENCE_DIR."""
    ref = _own_reference(tmp_path)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("FRB_REFERENCE_DIR", str(tmp_path / "elsewhere"))
    capsys.readouterr()
    assert main(["2", "--reference", str(ref)]) == 0
    out = capsys.readouterr().out
    assert f"compared with: {ref / 'out_example2.dat'}" in out
    assert "max abs deviation: 0.000e+00" in out and "OK" in out


def test_reference_env(tmp_path, monkeypatch, capsys):
    ref = _own_reference(tmp_path)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("FRB_REFERENCE_DIR", str(ref))
    capsys.readouterr()
    assert main(["2"]) == 0
    assert f"compared with: {ref / 'out_example2.dat'}" in capsys.readouterr().out


@pytest.mark.parametrize("case", ["missing", "file", "empty"])
def test_reference_refused(tmp_path, capsys, case):
    """A --reference that is no directory, or a directory without the file: exit 2, one line
    naming --reference."""
    target = {"missing": tmp_path / "nope", "file": tmp_path / "f.dat", "empty": tmp_path}[case]
    if case == "file":
        target.write_text("1.0\n")
    assert main(["0", "--output", str(tmp_path / "o.dat"), "--reference", str(target)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("frb-example: error: --reference")


def test_reference_of_an_experiment(tmp_path, capsys):
    assert main(["torus", "--reference", str(tmp_path / "nope")]) == 2
    assert "--reference must name a directory" in capsys.readouterr().err


def test_reference_dir_is_restored(tmp_path, monkeypatch):
    monkeypatch.setenv("FRB_REFERENCE_DIR", "before")
    with _reference_dir(str(tmp_path)):
        assert os.environ["FRB_REFERENCE_DIR"] == str(tmp_path)
        assert datasets.reference_dirs()[0] == tmp_path
    assert os.environ["FRB_REFERENCE_DIR"] == "before"
    monkeypatch.delenv("FRB_REFERENCE_DIR")
    with _reference_dir(None):
        assert "FRB_REFERENCE_DIR" not in os.environ
    with _reference_dir(str(tmp_path)):
        pass
    assert "FRB_REFERENCE_DIR" not in os.environ


def test_installed_commands_outside_the_repository(tmp_path):
    """The console scripts themselves, from a folder outside the repository."""
    import subprocess
    import sys
    from pathlib import Path

    exe = Path(sys.executable).parent / "frb-example"
    if not exe.is_file():
        pytest.skip(f"no frb-example beside {sys.executable}")
    res = subprocess.run([exe, "--help"], cwd=tmp_path, capture_output=True, text=True,
                         timeout=60)
    assert res.returncode == 0 and "krysl-coulomb" in res.stdout
    res = subprocess.run([exe, "--names"], cwd=tmp_path, capture_output=True, text=True,
                         timeout=60)
    assert res.stdout.split() == list(EXPERIMENTS)


def test_negative_values_after_an_option(capsys):
    """``--m0 -1,2,3`` is the value -1,2,3 (argparse alone reads it as an option): the run is
    the body's, whose energy drift the exact reference leaves at rounding."""
    code = compare_main(["--m0", "-1,2,3", "--inertia", "1,2,3", "--steps", "10",
                         "--methods", "EXACT", "--t-final", "1"])
    out = capsys.readouterr().out
    assert code == 0
    row = next(line for line in out.splitlines() if line.startswith("EXACT"))
    assert float(row.split()[3]) < 1e-13          # error of m against the exact reference
    assert compare_main(["--m0", "-1,2,3", "--inertia", "-1,2,3"]) == 2
    assert "inertia must contain strictly positive" in capsys.readouterr().err


def test_unknown_figure_format_refused_before_the_run(capsys):
    pytest.importorskip("matplotlib")
    assert compare_main(["--bodies", "2", "--plot", "figure.xyz"]) == 2
    err = capsys.readouterr()
    assert "'.xyz', not a format matplotlib writes" in err.err and "EXACT" not in err.out
    assert main(["torus", "--plot", "figure.xyz"]) == 2
    assert "not a format matplotlib writes" in capsys.readouterr().err


def test_experiment_option_help_states_its_default_once(capsys):
    with pytest.raises(SystemExit):
        main(["torus", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert "(default: the input file's 0.5)" in text and "(default: None)" not in text
