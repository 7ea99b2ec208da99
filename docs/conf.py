"""Sphinx configuration of the frb manual.

Build from docs/ (not the repository root, whose frb/ has no extension), with frb installed
(``pip install '.[docs]'``)::

    python -m sphinx -W -b html . _build/html         # the manual
    python -m sphinx -W -b doctest . _build/doctest   # run every example in it

``bash .ci/run --docs`` does both on a fresh machine. The manual documents the INSTALLED
package (``import frb`` must find the compiled extension), never the source folder.
"""
from __future__ import annotations

import doctest
import sys

import frb

try:  # the documented package must be the installed one (the source folder has no extension)
    import frb._core  # noqa: F401
except ImportError as exc:  # pragma: no cover
    sys.exit(f"docs/conf.py: 'import frb' found no compiled extension ({exc}); install frb first")

project = "frb"
author = "the frb developers"
copyright = "2026, the frb developers"
release = frb.__version__
version = ".".join(release.split(".")[:2])

extensions = [
    "sphinx.ext.autodoc",
    "sphinx.ext.autosummary",
    "sphinx.ext.doctest",
    "sphinx.ext.mathjax",
    "numpydoc",
]

exclude_patterns = ["_build", "gallery/*.txt"]
root_doc = "index"
language = "en"
nitpicky = False

# --- API reference -------------------------------------------------------------------------------
autosummary_generate = True
autosummary_imported_members = False
autodoc_default_options = {"members": False}
autodoc_typehints = "none"          # numpydoc's Parameters sections carry the types
try:  # frb.jax is documented without JAX too (the jax extra): its import mocked then
    import jax  # noqa: F401
except ImportError:
    autodoc_mock_imports = ["jax"]
numpydoc_show_class_members = False
numpydoc_class_members_toctree = False
numpydoc_xref_param_type = False
numpydoc_validation_checks: set[str] = set()

# --- doctest: every ``>>>`` example of the manual and of the documented docstrings runs -----------
doctest_global_setup = """
import numpy as np
import frb
np.set_printoptions(precision=6, suppress=True)
"""
doctest_default_flags = doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE
doctest_test_doctest_blocks = "default"

# --- HTML ----------------------------------------------------------------------------------------
html_theme = "alabaster"
html_title = f"frb {release}"
html_static_path: list[str] = []
html_theme_options = {
    "description": "Exact free-rigid-body motion, and every integrator of the field",
    "fixed_sidebar": True,
    "page_width": "1100px",
    "sidebar_width": "240px",
}
html_show_sourcelink = False
