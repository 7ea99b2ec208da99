"""The Algorithm 903 examples against the published outputs, the CLI and the drivers.

The published outputs are read from ``<repo>/../shared/calgo903`` and never
copied into the project (tests skip with the reason when they are absent).
"""

import math
import runpy
import shutil
import sys
from importlib import resources

import numpy as np
import pytest

from frb import datasets, examples
from frb.cli import main
from frb.examples import (
    INPUT_SIZES,
    PUBLISHED_TOLERANCE,
    REFERENCE_ENV,
    find_published_output,
    packaged_input,
    reference_dirs,
    run_example,
)
from frb.io import read_dat, write_dat

# (the tests that compute with the flows run under each SIMD target of this CPU, frb.simd)
per_target = pytest.mark.usefixtures("each_cpu_target")

RECORD = {1: 13, 3: 13, 4: 8}


def _published(published_dir, name):
    p = published_dir / name
    if not p.is_file():
        pytest.skip(f"published file {p} not found")
    return p


def _packaged_values(n):
    with resources.as_file(packaged_input(n)) as p:
        return read_dat(p)


# ------------------------------------------------------------------ data


@pytest.mark.parametrize("n", examples.EXAMPLES)
def test_packaged_and_repository_inputs_agree(repo_root, n):
    v = _packaged_values(n)
    assert v.shape == (INPUT_SIZES[n],)
    p = repo_root / "data" / f"init_example{n}.dat"
    if not p.is_file():
        pytest.skip(f"{p} not found")
    np.testing.assert_array_equal(read_dat(p), v)


@pytest.mark.parametrize("n", examples.EXAMPLES)
def test_inputs_are_the_published_inputs(published_dir, n):
    ref = read_dat(_published(published_dir, f"init_example{n}.dat"))
    np.testing.assert_array_equal(_packaged_values(n), ref)


# ------------------------------------------------------ published outputs


@per_target
@pytest.mark.parametrize("n", [0, 2, 3, 4])
def test_example_against_published(flows_module, published_dir, tmp_path, n):
    ref = _published(published_dir, f"out_example{n}.dat")
    out = tmp_path / f"out_example{n}.dat"
    s = run_example(n, output_path=out, compare_path=ref)
    tol = PUBLISHED_TOLERANCE[n]
    assert s["compare"] == str(ref)
    assert s["n_values"] == read_dat(ref).size
    assert s["max_abs_deviation"] <= tol, s["worst"]
    # the file written is exactly the values computed
    np.testing.assert_array_equal(read_dat(out), s["values"])
    assert s["invariants"]["norm_m"] < 1e-13
    assert s["invariants"]["energy"] < 1e-13


@per_target
@pytest.mark.parametrize("n", [0, 2, 3, 4])
def test_example_exact_tolerance(flows_module, published_dir, n):
    ref = _published(published_dir, f"out_example{n}.dat")
    s = run_example(n, output_path=False, compare_path=ref)
    assert s["max_abs_deviation"] <= PUBLISHED_TOLERANCE[n], s["worst"]
    assert s["within_tolerance"] is True


@per_target
def test_example1_short_run_layout(published_dir, tmp_path):
    """First records of example 1 (Tfin shortened to 2, i.e. 4 steps)."""
    ref = read_dat(_published(published_dir, "out_example1.dat"))
    v = _packaged_values(1)
    v[16] = 2.0  # Tfin
    inp = tmp_path / "init_short.dat"
    write_dat(inp, v)
    s = run_example(1, input_path=inp, output_path=False, compare_path=False)
    assert s["steps"] == 4 and s["flows"] == 60 and s["h"] == 0.5
    assert s["values"].size == 5 * 13
    np.testing.assert_allclose(s["values"], ref[: 5 * 13], rtol=0, atol=1e-12)


@pytest.fixture(scope="module")
def example1(each_cpu_target, flows_module, published_dir, tmp_path_factory):
    """The full example 1 (150,000 free flows), run once for this module under each SIMD
    target."""
    ref = _published(published_dir, "out_example1.dat")
    out = tmp_path_factory.mktemp("ex1") / "out_example1.dat"
    s = run_example(1, output_path=out, compare_path=ref)
    return s, out, ref


def test_example1_against_published(example1):
    s, out, ref = example1
    assert s["steps"] == 10000 and s["flows"] == 150000
    assert s["n_values"] == 130013
    assert s["max_abs_deviation"] <= PUBLISHED_TOLERANCE[1], s["worst"]
    assert s["within_tolerance"] is True


def test_example1_output_file(example1):
    s, out, ref = example1
    v = read_dat(out)
    np.testing.assert_array_equal(v, s["values"])
    rec = v.reshape(-1, 13)
    np.testing.assert_array_equal(rec[:, 12], 0.5 * np.arange(10001))
    np.testing.assert_array_equal(rec[0, :3], _packaged_values(1)[17:20])


def test_example1_invariants(example1):
    s, _, _ = example1
    inv = s["invariants"]
    assert inv["vertical_momentum"] < 1e-12
    assert inv["energy_with_potential"] < 1e-8
    assert inv["orthogonality"] < 1e-10


# ------------------------------------------------------- driver semantics


def test_step_count_and_reset_step(tmp_path):
    v = _packaged_values(3)
    v[0], v[1] = 0.3, 1.0  # h, Tfin -> N = int(1/0.3) = 3, h = 1/3
    inp = tmp_path / "in.dat"
    write_dat(inp, v)
    s = run_example(3, input_path=inp, output_path=False, compare_path=False)
    assert s["steps"] == 3 and s["h"] == 1.0 / 3.0 and s["quadrature"] == 5
    t = s["values"].reshape(-1, 13)[:, 12]
    np.testing.assert_array_equal(t, np.arange(4) / 3.0)
    assert s["t_final"] == 1.0


@pytest.mark.parametrize(
    "n, index, value, match",
    [
        (3, 17, 2.5, "np"),
        (4, 12, 0.0, "np"),
        (4, 12, 11.0, "np"),
        (3, 1, 0.5, "Tfin/h"),
        (1, 15, -0.5, "h > 0"),
    ],
)
def test_bad_input_values(tmp_path, n, index, value, match):
    v = _packaged_values(n)
    v[index] = value
    inp = tmp_path / "in.dat"
    write_dat(inp, v)
    with pytest.raises(ValueError, match=match):
        run_example(n, input_path=inp, output_path=False, compare_path=False)


def test_wrong_number_of_values(tmp_path):
    inp = tmp_path / "short.dat"
    write_dat(inp, _packaged_values(0)[:-1])
    with pytest.raises(ValueError, match=r"short\.dat.*16 values.*15"):
        run_example(0, input_path=inp, output_path=False, compare_path=False)


def test_invalid_example_number():
    for n in (5, -1):
        with pytest.raises(ValueError, match="n must be one of"):
            run_example(n, output_path=False, compare_path=False)
    # not an integer: TypeError naming n (the input rule)
    for n in ("0", 1.0, True, None, np.bool_(False)):
        with pytest.raises(TypeError, match="n must be an example number"):
            run_example(n, output_path=False, compare_path=False)


def test_compare_size_mismatch(tmp_path):
    ref = tmp_path / "ref.dat"
    write_dat(ref, np.zeros(7))
    s = run_example(0, output_path=False, compare_path=ref)
    assert s["max_abs_deviation"] == math.inf
    assert s["within_tolerance"] is False
    assert "size mismatch" in s["worst"]


def test_compare_missing_file(tmp_path):
    with pytest.raises(FileNotFoundError):
        run_example(0, output_path=False, compare_path=tmp_path / "nope.dat")


def test_reference_read_before_output_written(published_dir, tmp_path):
    same = tmp_path / "out_example0.dat"
    shutil.copy(_published(published_dir, "out_example0.dat"), same)
    original = read_dat(same)
    s = run_example(0, output_path=same, compare_path=same)
    assert s["max_abs_deviation"] == np.max(np.abs(s["values"] - original))
    np.testing.assert_array_equal(read_dat(same), s["values"])


# ------------------------------------------------------ reference lookup


def test_lookup_environment_variable(tmp_path, monkeypatch):
    (tmp_path / "out_example0.dat").write_text("1.0\n")
    monkeypatch.setenv(REFERENCE_ENV, str(tmp_path))
    assert find_published_output(0) == tmp_path / "out_example0.dat"
    assert reference_dirs()[0] == tmp_path


def test_lookup_relative_to_cwd(tmp_path, monkeypatch):
    shared = tmp_path / "shared" / "calgo903"
    shared.mkdir(parents=True)
    (shared / "out_example2.dat").write_text("1.0\n")
    work = tmp_path / "work"
    work.mkdir()
    monkeypatch.delenv(REFERENCE_ENV, raising=False)
    monkeypatch.chdir(work)
    assert find_published_output(2) == shared / "out_example2.dat"


def test_lookup_nothing_found(tmp_path, monkeypatch):
    monkeypatch.delenv(REFERENCE_ENV, raising=False)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(datasets, "source_root", lambda: None)
    assert find_published_output(0) is None
    s = run_example(0)
    assert s["compare"] is None and s["max_abs_deviation"] is None
    assert s["within_tolerance"] is None
    assert (tmp_path / "out_example0.dat").is_file()  # default output in the cwd


def test_lookup_source_tree(monkeypatch, tmp_path):
    monkeypatch.delenv(REFERENCE_ENV, raising=False)
    monkeypatch.chdir(tmp_path)
    root = examples.source_root()
    if root is None:
        pytest.skip("frb is not imported from a source tree")
    assert reference_dirs()[-1] == (root.parent / "shared" / "calgo903").resolve()


# ------------------------------------------------------------------- CLI


def test_cli_no_compare(tmp_path, capsys):
    out = tmp_path / "o.dat"
    assert main(["0", "--output", str(out), "--no-compare"]) == 0
    text = capsys.readouterr().out
    assert "example 0" in text and "comparison turned off" in text and str(out) in text
    assert read_dat(out).size == 25


def test_cli_compare_prints_where(published_dir, tmp_path, capsys):
    ref = _published(published_dir, "out_example2.dat")
    out = tmp_path / "o.dat"
    assert main(["2", "--output", str(out), "--compare", str(ref), "--tol", "1e-9"]) == 0
    text = capsys.readouterr().out
    assert f"compared with: {ref}" in text and "OK" in text


def test_cli_failed_comparison_exit_status(tmp_path, capsys):
    out = tmp_path / "o.dat"
    main(["0", "--output", str(out), "--no-compare"])
    bad = tmp_path / "bad.dat"
    v = read_dat(out)
    v[3] += 1e-6
    write_dat(bad, v)
    assert main(["0", "--output", str(out), "--compare", str(bad)]) == 1
    assert "EXCEEDS" in capsys.readouterr().out


def test_cli_default_output_in_cwd(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert main(["2", "--no-compare"]) == 0
    assert read_dat(tmp_path / "out_example2.dat").size == 15


def test_cli_errors(tmp_path, capsys):
    with pytest.raises(SystemExit) as exc:
        main(["7"])
    assert exc.value.code == 2
    with pytest.raises(SystemExit):
        main(["0", "--compare", "x", "--no-compare"])
    assert main(["0", "--no-compare", "--input", str(tmp_path / "missing.dat")]) == 2
    bad = tmp_path / "garbage.dat"
    bad.write_text("1.0\nfoo\n")
    assert main(["0", "--no-compare", "--input", str(bad)]) == 2
    assert "garbage.dat:2" in capsys.readouterr().err
    assert main(["0", "--output", str(tmp_path / "o"), "--compare", str(tmp_path / "no")]) == 2


# --------------------------------------------------------------- drivers


def _run_driver(repo_root, n, args, monkeypatch):
    script = repo_root / "drivers" / f"example{n}.py"
    if not script.is_file():
        pytest.skip(f"{script} not found")
    monkeypatch.setattr(sys, "argv", [str(script), *args])
    with pytest.raises(SystemExit) as exc:
        runpy.run_path(str(script), run_name="__main__")
    return exc.value.code


@per_target
@pytest.mark.parametrize("n", [0, 2, 3, 4])
def test_drivers(repo_root, tmp_path, monkeypatch, capsys, n):
    out = tmp_path / f"out_example{n}.dat"
    code = _run_driver(repo_root, n, ["--output", str(out), "--no-compare"], monkeypatch)
    assert code == 0
    text = capsys.readouterr().out
    assert str(repo_root / "data" / f"init_example{n}.dat") in text
    assert read_dat(out).size in (25, 15, 11 * RECORD.get(n, 1))


def test_driver1_input_override(repo_root, tmp_path, monkeypatch, capsys):
    v = _packaged_values(1)
    v[16] = 1.0  # Tfin: two steps
    inp = tmp_path / "short1.dat"
    write_dat(inp, v)
    out = tmp_path / "out1.dat"
    code = _run_driver(
        repo_root, 1, ["--input", str(inp), "--output", str(out), "--no-compare"], monkeypatch
    )
    assert code == 0
    assert str(inp) in capsys.readouterr().out
    assert read_dat(out).size == 3 * 13
