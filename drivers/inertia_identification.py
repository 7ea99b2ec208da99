#!/usr/bin/env python3
"""The experiment inertia-identification: the moment ratios and the initial state of a tumbling
body fitted to noisy attitude measurements, with the exact trajectory sensitivities and with
central differences. The same as ``frb-example inertia-identification [OPTIONS]``:

    python drivers/inertia_identification.py [--plot PATH] [--n 300] [--sigma 0.01] [--trials 100] ...

Without an installed frb, the source tree is put on the import path (it needs the compiled
extension, so a build in place).
"""
import sys
from pathlib import Path

try:
    from frb.cli import main
except ImportError:  # not installed: use the source tree
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    from frb.cli import main

if __name__ == "__main__":
    sys.exit(main(["inertia-identification", *sys.argv[1:]]))
