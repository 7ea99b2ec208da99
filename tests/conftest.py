"""Shared test configuration.

The tests run against the INSTALLED package (``cd tests && python -m pytest``): the source folder
``frb/`` has no compiled ``_core``. Published reference outputs are read from
``<repo>/../shared/calgo903`` (``published_dir`` fixture); tests that need them skip when absent.
"""
from __future__ import annotations

import sys
from pathlib import Path

import pytest
from hypothesis import settings

# no example database in the source tree; deterministic runs
settings.register_profile("frb", database=None, derandomize=True, deadline=None)
settings.load_profile("frb")

REPO_ROOT = Path(__file__).resolve().parents[1]
PUBLISHED_DIR = REPO_ROOT.parent / "shared" / "calgo903"
sys.path.insert(0, str(Path(__file__).resolve().parent))   # tests/refdata.py


@pytest.fixture(scope="session")
def flows_module():
    """The module providing frb_step / quat_step."""
    import frb.flows

    return frb.flows


@pytest.fixture(scope="session")
def published_dir():
    """Directory of the published Algorithm 903 files (skip if absent)."""
    if not PUBLISHED_DIR.is_dir():
        pytest.skip(f"published TOMS 903 files not found in {PUBLISHED_DIR} (../shared beside the clone)")
    return PUBLISHED_DIR


@pytest.fixture(scope="session")
def repo_root():
    return REPO_ROOT


def _supported_cpu_targets():
    import frb

    return frb.simd.supported_cpu_targets()


@pytest.fixture(scope="module", params=_supported_cpu_targets())
def each_cpu_target(request):
    """Runs every test of a module (``pytestmark = pytest.mark.usefixtures("each_cpu_target")``)
    once under each SIMD target this CPU supports (frb.simd), then restores the target."""
    import frb

    before = frb.cpu_dispatch()
    frb.set_cpu_target(request.param)
    yield request.param
    frb.set_cpu_target(before)


@pytest.fixture
def restore_dispatch():
    """Restores the SIMD target and the engine's lane steps after a test that changes them
    (``pytestmark = pytest.mark.usefixtures("restore_dispatch")``)."""
    import frb

    before = frb.cpu_dispatch()
    yield
    try:
        from frb import _testing
    except ImportError:
        pass
    else:
        _testing.lane_steps_use(1)
    frb.set_cpu_target(before)
