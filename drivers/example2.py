#!/usr/bin/env python3
"""Example 2 of ACM TOMS Algorithm 903: one exact step of the free rigid body with quaternions (quat_step). Options: --help (run_example.py)."""
import runpy, pathlib
if __name__ == "__main__":
    runpy.run_path(str(pathlib.Path(__file__).with_name("run_example.py")), {"EXAMPLE": 2}, "__main__")
