#!/usr/bin/env python3
"""Driver for example 0 of ACM TOMS Algorithm 903: one exact step of the free rigid body with rotation matrices (frb_step).

Thin wrapper over ``frb-example 0``; the default input is ``data/init_example0.dat`` of
this repository.  Usage::

    python drivers/example0.py [--input PATH] [--output PATH] [--compare PATH | --no-compare] [--tol TOL]
"""

import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]

try:
    from frb.cli import run_driver
except ImportError:  # not installed: use the source tree
    sys.path.insert(0, str(REPO))
    from frb.cli import run_driver

if __name__ == "__main__":
    sys.exit(run_driver(0, REPO / "data" / "init_example0.dat"))
