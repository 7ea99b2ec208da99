"""The package as a user meets it: one version everywhere (meson.build, the metadata,
frb.__version__, the manual, CITATION.cff, CHANGELOG.md), the licence and authors in the
metadata, frb.show_config(), and the message of 'import frb' from a source folder.
"""
from __future__ import annotations

import re
import shutil
import subprocess
import sys
from importlib import metadata
from pathlib import Path

import pytest

import frb

REPO = Path(__file__).resolve().parents[1]


# ------------------------------------------------------------------------------ version

def test_one_version_everywhere():
    """meson.build's project version is the metadata's, frb.__version__, the manual's (its
    conf.py reads frb.__version__), CITATION.cff's and the newest release of CHANGELOG.md."""
    meson = re.search(r"project\(\s*'frb'.*?version:\s*'([^']+)'", (REPO / "meson.build")
                      .read_text(), re.S)
    assert meson is not None
    version = meson.group(1)
    assert frb.__version__ == version
    assert metadata.version("frb") == version
    cff = re.search(r"^version:\s*\"?([^\"\n]+)\"?$", (REPO / "CITATION.cff").read_text(), re.M)
    assert cff is not None and cff.group(1) == version
    release = re.search(r"^## \[(\d[^\]]*)\]", (REPO / "CHANGELOG.md").read_text(), re.M)
    assert release is not None and release.group(1) == version
    conf = (REPO / "docs" / "conf.py").read_text()
    assert "release = frb.__version__" in conf
    pyproject = (REPO / "pyproject.toml").read_text()
    assert 'dynamic = ["version"]' in pyproject and not re.search(r"^version\s*=", pyproject,
                                                                   re.M)


def test_metadata_licence_authors_classifiers():
    """What pip show and PyPI display: the licence (SPDX), its file, authors, classifiers."""
    md = metadata.metadata("frb")
    assert md["License-Expression"] == "BSD-3-Clause"
    assert md["Author"] == "the frb developers"
    assert any(c.startswith("Programming Language :: Fortran") for c in md.get_all("Classifier"))
    assert "Algorithm 903" in md["Keywords"]
    files = metadata.files("frb") or []
    licence = [f for f in files if f.name == "LICENSE"]
    assert licence, "the LICENSE file is not in the installed metadata"
    text = licence[0].read_text()
    assert "Redistribution and use in source and binary forms" in text
    assert text == (REPO / "LICENSE").read_text()


def test_citation_names_the_papers():
    """CITATION.cff cites frb and lists Algorithm 903 and the papers of the methods."""
    text = (REPO / "CITATION.cff").read_text()
    assert text.startswith("cff-version: 1.2.0")
    assert "license: BSD-3-Clause" in text
    for needle in ("Algorithm 903", "10.1145/1731022.1731033", "Vilmart", "Hairer",
                   "Ganapathi", "Terze", "Krysl", "Blanes", "Yoshida", "Carlson"):
        assert needle in text, needle


# -------------------------------------------------------------------------- show_config

def test_show_config_dicts():
    cfg = frb.show_config(mode="dicts")
    assert cfg is not None
    assert cfg["frb"]["version"] == frb.__version__
    assert set(cfg) == {"frb", "python", "numpy", "machine", "build", "compilers", "flags",
                        "openmp", "simd", "extras"}
    assert cfg["compilers"]["fortran"]["version"]
    assert cfg["flags"]["fortran"]["common"], "no Fortran flags recorded"
    assert cfg["openmp"]["threads"] == frb.get_num_threads()
    assert cfg["openmp"]["enabled"] == frb.threads.openmp_enabled()
    assert set(cfg["extras"]) == {"rotation", "plot", "dask", "progress", "test", "docs"}
    assert cfg["extras"]["test"]["pytest"] == metadata.version("pytest")


def test_show_config_prints(capsys, monkeypatch):
    """The report names the version, the Fortran compiler and its flags, OpenMP, the SIMD
    target (frb.cpu_dispatch) and the extras, installed or not."""
    from frb import _config

    monkeypatch.setitem(_config.EXTRAS, "plot", (("no-such-distribution-xyz",), "figures"))
    assert frb.show_config() is None
    out = capsys.readouterr().out
    assert out.startswith(f"frb {frb.__version__}")
    assert "fortran:" in out and frb.show_config("dicts")["compilers"]["fortran"]["version"] in out
    assert "OpenMP:" in out and "SIMD:" in out
    assert "no-such-distribution-xyz not installed" in out
    config = frb.show_config("dicts")
    assert config["simd"] == {"target": frb.cpu_dispatch(),
                              "supported": list(frb.simd.supported_cpu_targets())}
    frb.set_cpu_target("baseline")
    try:
        frb.show_config()
    finally:
        frb.set_cpu_target(config["simd"]["target"])
    assert "SIMD:       baseline (this CPU supports: baseline" in capsys.readouterr().out


def test_show_config_mode_refused():
    with pytest.raises(ValueError, match="mode"):
        frb.show_config(mode="json")


# ------------------------------------------------------------------ 'import frb' in place

def _import_in(folder: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", "import frb"], cwd=folder, capture_output=True,
                          text=True, timeout=60)


def _source_copy(tmp_path: Path) -> Path:
    """The source folder frb/ (no compiled extension) copied into tmp_path."""
    shutil.copytree(REPO / "frb", tmp_path / "frb",
                    ignore=shutil.ignore_patterns("*.so", "__pycache__", "_build_info.py"))
    return tmp_path


def test_import_from_source_folder_says_what_to_do(tmp_path):
    """'import frb' beside the source folder (as at the repository root) raises an ImportError
    that says to install frb and how, not a message about a circular import."""
    res = _import_in(_source_copy(tmp_path))
    if res.returncode == 0:
        pytest.skip("an editable install of frb takes precedence over the folder")
    err = res.stderr.strip().splitlines()[-1]
    assert err.startswith("ImportError: 'import frb' found the source folder")
    assert "pip install ." in err and "pip install --no-build-isolation -e ." in err
    assert "circular" not in res.stderr


def test_import_with_a_broken_extension_names_it(tmp_path):
    """An extension that is there but does not load: the loader's reason is passed on."""
    folder = _source_copy(tmp_path)
    (folder / "frb" / "_core.cpython-311-x86_64-linux-gnu.so").write_bytes(b"not a library")
    (folder / "frb" / "_core.so").write_bytes(b"not a library")
    res = _import_in(folder)
    if res.returncode == 0:
        pytest.skip("an editable install of frb takes precedence over the folder")
    assert "could not load its compiled extension frb._core" in res.stderr
