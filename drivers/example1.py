#!/usr/bin/env python3
"""Example 1 of ACM TOMS Algorithm 903: perturbed rigid body (constant field torque), sixth-order RKN6_14 splitting. Options: --help (run_example.py)."""
import runpy, pathlib
if __name__ == "__main__":
    runpy.run_path(str(pathlib.Path(__file__).with_name("run_example.py")), {"EXAMPLE": 1}, "__main__")
