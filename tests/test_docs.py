"""The manual and the docstrings: every example runs, and the manual builds without warnings.

* Every ``>>>`` example in the docstrings of the installed package runs (doctest), with the
  print options of the manual (``docs/conf.py``: 6 digits, no scientific notation).
* Every public function of ``frb`` shows an example.
* The Sphinx manual (``docs/``) builds with warnings as errors, and its doctest builder runs every
  example of the manual's pages and of the docstrings it documents. These need the ``docs``
  extra (``pip install '.[docs]'``; ``bash .ci/run`` installs it) and skip, saying so, without it.
"""
from __future__ import annotations

import doctest
import importlib
import inspect
import os
import pkgutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import frb

DOCS = Path(__file__).resolve().parents[1] / "docs"
FLAGS = doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE
OPTIONAL = {"frb.dask": "dask", "frb.jax": "jax"}   # module -> the optional package it needs


def _modules():
    return ["frb"] + sorted(info.name for info in pkgutil.walk_packages(frb.__path__, "frb.")
                            if not info.name.split(".")[-1].startswith(("_", "lib")))


@pytest.mark.parametrize("name", _modules())
def test_docstring_examples_run(name):
    if name in OPTIONAL:
        pytest.importorskip(OPTIONAL[name])
    module = importlib.import_module(name)
    finder = doctest.DocTestFinder(exclude_empty=True)
    runner = doctest.DocTestRunner(optionflags=FLAGS)
    saved = np.get_printoptions()
    np.set_printoptions(precision=6, suppress=True)
    old_threads = frb.threads._num_threads
    try:
        # the finder keeps the objects defined in this module (not the re-exported ones)
        tests = [t for t in finder.find(module, name, globs={"np": np, "frb": frb}) if t.examples]
        out: list[str] = []
        for t in tests:
            runner.run(t, out=out.append)
    finally:
        np.set_printoptions(**saved)
        frb.threads._num_threads = old_threads
    assert runner.failures == 0, "".join(out)


def test_every_public_function_has_an_example():
    functions = {name: getattr(frb, name) for name in frb.__all__
                 if inspect.isfunction(getattr(frb, name))}
    functions.update({"splitting.integrate": frb.splitting.integrate,
                      "torques.heavy_top": frb.torques.heavy_top,
                      "torques.gravity_gradient": frb.torques.gravity_gradient,
                      "experiments.run_experiment": frb.experiments.run_experiment})
    missing = [name for name, f in functions.items() if ">>>" not in (f.__doc__ or "")]
    assert not missing, f"public functions without an example in their docstring: {missing}"


def _sphinx(builder, tmp_path):
    pytest.importorskip("sphinx", reason="the manual needs the docs extra: pip install '.[docs]'")
    pytest.importorskip("numpydoc", reason="the manual needs the docs extra: pip install '.[docs]'")
    if not (DOCS / "conf.py").is_file():
        pytest.skip(f"no manual sources at {DOCS} (tests run from a clone)")
    cmd = [sys.executable, "-m", "sphinx", "-W", "--keep-going", "-q", "-b", builder,
           "-d", str(tmp_path.parent / "doctrees"), str(DOCS), str(tmp_path / builder)]
    env = dict(os.environ, OMP_NUM_THREADS=os.environ.get("OMP_NUM_THREADS", "2"))
    published = DOCS.parents[1] / "shared" / "calgo903"
    if published.is_dir():      # the page on the published outputs compares with them
        env.setdefault("FRB_REFERENCE_DIR", str(published))
    # from docs/, not the repository root, whose frb/ (no extension) would shadow the install
    return subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=str(DOCS))


@pytest.fixture(scope="module")
def docs_tmp(tmp_path_factory):
    return tmp_path_factory.mktemp("manual")


def test_manual_builds_without_warnings(docs_tmp):
    run = _sphinx("html", docs_tmp)
    assert run.returncode == 0, run.stdout[-4000:] + run.stderr[-4000:]
    assert (docs_tmp / "html" / "index.html").is_file()
    assert (docs_tmp / "html" / "api" / "generated" / "frb.integrate.html").is_file()


def test_manual_examples_run(docs_tmp):
    run = _sphinx("doctest", docs_tmp)
    report = (docs_tmp / "doctest" / "output.txt")
    text = report.read_text() if report.is_file() else ""
    assert run.returncode == 0, text[-4000:] + run.stderr[-4000:]
    # the pages and the documented docstrings were all tested
    assert "0 failures in tests" in text
    for page in ("getting_started", "conventions", "guide/torques", "guide/clusters",
                 "api/generated/frb.integrate", "api/generated/frb.quat_step"):
        assert f"Document: {page}\n" in text, f"no examples were run on {page}"
    if (DOCS.parents[1] / "shared" / "calgo903").is_dir():
        assert "Document: published\n" in text, "the comparison with the published outputs was skipped"
