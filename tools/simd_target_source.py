"""The source of one SIMD target of a lane module, written at build time by meson.build.

    python tools/simd_target_source.py SUFFIX INPUT OUTPUT

Copies the Fortran file INPUT to OUTPUT with every lane module's name (LANE_MODULES, as a whole
word, in its module, end module and use statements) followed by _SUFFIX, so that the same code
compiled for several instruction sets links into one extension without clashing names. Nothing
else changes: every target runs the same operations (simd_dispatch.f90 chooses one at run time).
"""

from __future__ import annotations

import re
import sys

# the modules compiled once per target
LANE_MODULES = ("exact_flow_lanes", "moser_veselov", "flow_batches", "flow_tangent_lanes",
                "torque_lanes", "runge_kutta_lanes", "splitting_lanes", "lie_group_lanes",
                "runge_kutta_tangent_lanes", "implicit_lanes", "check_lanes")


def target_source(text: str, suffix: str) -> str:
    """text with each name of LANE_MODULES renamed name_suffix."""
    pattern = re.compile(r"\b(%s)\b" % "|".join(LANE_MODULES), re.IGNORECASE)
    return pattern.sub(lambda match: f"{match.group(1)}_{suffix}", text)


def main(argv: list[str]) -> int:
    if len(argv) != 4 or not argv[1].isidentifier():
        print(__doc__.strip().splitlines()[2], file=sys.stderr)
        return 2
    suffix, source, output = argv[1:]
    with open(source, encoding="utf-8") as f:
        text = f.read()
    with open(output, "w", encoding="utf-8") as f:
        f.write(f"! Generated from {source.rsplit('/', 1)[-1]} by tools/simd_target_source.py "
                f"(target {suffix}); do not edit.\n")
        f.write(target_source(text, suffix))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
