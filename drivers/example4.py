#!/usr/bin/env python3
"""Example 4 of ACM TOMS Algorithm 903: many semi-exact steps (Gauss-Legendre quadrature) with quaternions. Options: --help (run_example.py)."""
import runpy, pathlib
if __name__ == "__main__":
    runpy.run_path(str(pathlib.Path(__file__).with_name("run_example.py")), {"EXAMPLE": 4}, "__main__")
