#!/usr/bin/env python3
"""What every ``drivers/exampleN.py`` runs: ``frb-example N`` with the input
``data/init_exampleN.dat`` of this repository, for the ``EXAMPLE`` number the driver passes.

Usage (through a driver)::

    python drivers/exampleN.py [--input PATH] [--output PATH] [--compare PATH | --no-compare] [--tol TOL]
    python drivers/run_example.py N [OPTIONS]         (the same)

Without an installed frb, the source tree is put on the import path.
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
    n = int(globals()["EXAMPLE"]) if "EXAMPLE" in globals() else int(sys.argv.pop(1))
    sys.exit(run_driver(n, REPO / "data" / f"init_example{n}.dat"))
