"""Type information of frb (PEP 561): the installed package carries py.typed and the stubs of
its compiled extensions, every public function is fully annotated, and mypy passes on the
package and on typical user code (tests/typing/user_code.py) while catching typical mistakes.

mypy checks the INSTALLED package directory (the one these tests import), with the settings of
[tool.mypy] in pyproject.toml; it is skipped when mypy is not installed (it is in the ``test``
extra). One mypy run, about 20 s without a cache.
"""
from __future__ import annotations

import importlib
import inspect
import runpy
import shutil
import textwrap
from pathlib import Path

import pytest

import frb

HERE = Path(__file__).resolve().parent
USER_CODE = HERE / "typing" / "user_code.py"
PYPROJECT = HERE.parent / "pyproject.toml"
PACKAGE = Path(frb.__file__).resolve().parent

#: Modules whose public functions and classes must be fully annotated.
PUBLIC_MODULES = ["frb", "frb.flows", "frb.derivatives", "frb.rotations", "frb.io", "frb.dmv", "frb.splitting",
                  "frb.engine", "frb.methods", "frb.trajectory", "frb.torques", "frb.inertia", "frb.threads", "frb.workprecision",
                  "frb.examples",
                  "frb.cli", "frb.experiments", "frb.reporting", "frb.datasets", "frb.schedules",
                  "frb.experiments.vilmart_book", "frb.experiments.ganapathi_symmetric",
                  "frb.experiments.ganapathi_axes", "frb.experiments.krysl_convergence",
                  "frb.experiments.krysl_coulomb", "frb.experiments.torus", "frb.dask"]

#: Mistakes a user makes, each on its own line, that the annotations must flag (the line
#: numbers of the snippet below, counted from 1).
MISTAKES = textwrap.dedent("""\
    import numpy as np
    import frb
    from frb import splitting
    m0, q0, inertia = np.array([0.3, -0.5, 0.8]), np.array([1.0, 0, 0, 0]), np.ones(3)
    tr = frb.integrate(m0, q0, inertia, 0.01, "100", method="RK4")
    frb.quat_step(m0, q0, 0.1, inertia, threads="2")
    e: str = frb.integrate(m0, q0, inertia, 0.01, 10, method="RK4").energy
    frb.integrate(m0, q0, inertia, 0.01, 10, method="RK4").energy_drift
    splitting.integrate(m0, np.eye(3), inertia, 0.01, 10, torque=lambda t, Q: Q)
    frb.from_rotation(frb.to_rotation(q0), form="matrices")
    frb.integrate(m0, q0, inertia, 0.01, 10, method="RK4", save_every="last")
    m, q, extra = frb.dmv_step(m0, q0, 0.1, inertia)
    frb.integrate(m0, q0, inertia, 0.01, 10, method="RK4", torque=3.0)
""")
MISTAKE_LINES = set(range(5, 14))


def _mypy_api():
    return pytest.importorskip("mypy.api", reason="mypy is not installed (it is in the test "
                               "extra: pip install 'frb[test]')")


def _run_mypy(paths: list[Path], cache: Path) -> tuple[int, str]:
    api = _mypy_api()
    out, err, status = api.run(["--config-file", str(PYPROJECT), "--cache-dir", str(cache),
                                "--no-pretty", "--show-error-codes",
                                *(str(p) for p in paths)])
    return status, out + err


def test_package_ships_type_information():
    """py.typed and the stubs of the compiled extensions sit beside the installed modules."""
    assert (PACKAGE / "py.typed").is_file(), f"no py.typed in {PACKAGE}"
    assert (PACKAGE / "_core.pyi").is_file(), f"no stub _core.pyi in {PACKAGE}"


@pytest.mark.parametrize("ext", ["_core", "_testing"])
def test_stubs_declare_every_compiled_routine(ext):
    """Each stub declares exactly the routines of its extension, with f2py's argument names."""
    import ast
    import re

    module = pytest.importorskip(f"frb.{ext}", reason="frb._testing not built (meson option testing)") if ext == "_testing" else \
        importlib.import_module(f"frb.{ext}")
    tree = ast.parse((PACKAGE / f"{ext}.pyi").read_text())
    stub = {f.name: [a.arg for a in f.args.args] for f in tree.body
            if isinstance(f, ast.FunctionDef)}
    routines = {n for n in dir(module) if not n.startswith("_")}
    assert set(stub) == routines
    for name in routines:
        first = getattr(module, name).__doc__.splitlines()[0]   # "out = name(a,b,[c])"
        args = re.search(r"\w+\((.*)\)", first).group(1).replace("[", "").replace("]", "")
        assert [a.strip() for a in args.split(",") if a.strip()] == stub[name], name


def _public_callables():
    for modname in PUBLIC_MODULES:
        try:
            module = importlib.import_module(modname)
        except ImportError:     # frb.dask without dask
            continue
        names = getattr(module, "__all__", None) or [n for n in vars(module)
                                                     if not n.startswith("_")]
        for name in names:
            obj = getattr(module, name)
            if inspect.isfunction(obj) and obj.__module__.startswith("frb"):
                yield f"{obj.__module__}.{obj.__qualname__}", obj
            elif inspect.isclass(obj) and obj.__module__.startswith("frb"):
                for attr, member in vars(obj).items():
                    if attr.startswith("_") and attr not in ("__init__", "__call__"):
                        continue
                    if isinstance(member, property):
                        member = member.fget
                    if inspect.isfunction(member):
                        yield f"{obj.__module__}.{obj.__qualname__}.{attr}", member


def test_public_functions_are_fully_annotated():
    missing = []
    seen = set()
    for label, func in _public_callables():
        if func in seen:
            continue
        seen.add(func)
        sig = inspect.signature(func)
        params = list(sig.parameters.values())
        if "." in func.__qualname__ and params and params[0].name in ("self", "cls"):
            params = params[1:]
        for p in params:
            if p.annotation is inspect.Parameter.empty:
                missing.append(f"{label}: parameter {p.name}")
        if sig.return_annotation is inspect.Signature.empty:
            missing.append(f"{label}: return")
    assert len(seen) > 80     # (the walk found the API)
    assert not missing, "missing annotations:\n" + "\n".join(missing)


def test_user_code_runs():
    """The type-checked user code is real code: it runs (and prints a few results)."""
    runpy.run_path(str(USER_CODE), run_name="__main__")


def test_mypy_passes_on_package_and_user_code_and_catches_mistakes(tmp_path):
    """One mypy run: the installed package, the user code, and a file of typical mistakes,
    each of which must be reported on its own line (and nothing else)."""
    mistakes = tmp_path / "mistakes.py"
    mistakes.write_text(MISTAKES)
    # mypy checks a copy of the installed package without its binaries: given the
    # package inside site-packages, it would take site-packages as a source root and report
    # the modules there (mypy_extensions.py "shadows library module")
    package = tmp_path / "src" / "frb"
    shutil.copytree(PACKAGE, package,
                    ignore=shutil.ignore_patterns("*.so", "*.pyd", "*.dll", "__pycache__"))
    status, output = _run_mypy([package, USER_CODE, mistakes], tmp_path / "cache")
    lines = [ln for ln in output.splitlines() if ": error:" in ln]
    elsewhere = [ln for ln in lines if not ln.startswith(str(mistakes))]
    assert not elsewhere, "mypy fails on frb or on the user code:\n" + output
    flagged = {int(ln.split(":")[1]) for ln in lines if ln.startswith(str(mistakes))}
    assert flagged == MISTAKE_LINES, (f"mistakes flagged on lines {sorted(flagged)}, expected "
                                      f"{sorted(MISTAKE_LINES)}:\n" + output)
    assert status == 1
