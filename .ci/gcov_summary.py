"""Line coverage of fortran/ from the gcov counters of a meson build (bash .ci/run --coverage).

Runs ``gcov --json-format`` on every ``.gcda`` of the build directory (no sources needed) and
adds up the counts of each line of each file of ``fortran/`` over all objects that compiled it
(an include file is counted in every module that includes it, a lane module in each SIMD target's
copy: a line counts as covered when any of them ran it). Writes a table (lines, executed,
percentage, the lines not executed) and a last TOTAL row.

    python .ci/gcov_summary.py BUILD_DIR [--out coverage/fortran.txt]
"""
from __future__ import annotations

import argparse
import gzip
import json
import re
import subprocess
import sys
import tempfile
from collections import defaultdict
from pathlib import Path

SOURCE = Path(__file__).resolve().parents[1] / "fortran"
# the first line of a SIMD target's copy of a lane module (tools/simd_target_source.py): the
# source's name; the copy's line n + 1 is the source's line n
GENERATED = re.compile(r"^! Generated from (\S+) by tools/simd_target_source\.py")


def generated_from(path: Path) -> str | None:
    """The name of the file of fortran/ that the build's file ``path`` copies, or None."""
    try:
        with open(path, encoding="utf-8") as f:
            match = GENERATED.match(f.readline())
    except (OSError, UnicodeDecodeError):
        return None
    return match.group(1) if match else None


def ranges(lines: list[int]) -> str:
    out, start, prev = [], None, None
    for n in lines:
        if start is None:
            start = prev = n
        elif n == prev + 1:
            prev = n
        else:
            out.append(f"{start}-{prev}" if prev > start else f"{start}")
            start = prev = n
    if start is not None:
        out.append(f"{start}-{prev}" if prev > start else f"{start}")
    return ",".join(out)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("build_dir", type=Path)
    p.add_argument("--out", type=Path, default=None)
    a = p.parse_args(argv)
    ours = {f.name for f in SOURCE.iterdir() if f.suffix in (".f90", ".inc", ".c")}
    counts: dict[str, dict[int, int]] = defaultdict(lambda: defaultdict(int))
    with tempfile.TemporaryDirectory() as tmp:
        for gcda in sorted(a.build_dir.rglob("*.gcda")):
            subprocess.run(["gcov", "--json-format", "-o", str(gcda.parent), str(gcda)],
                           cwd=tmp, capture_output=True, check=False)
            for js in Path(tmp).glob("*.gcov.json.gz"):
                data = json.loads(gzip.decompress(js.read_bytes()))
                for f in data.get("files", []):
                    name, offset = Path(f["file"]).name, 0
                    if name not in ours:
                        # a SIMD target's copy counts for its source; f2py wrappers, libraries not
                        copy = Path(f["file"])
                        source = generated_from(copy if copy.is_absolute() else a.build_dir / copy)
                        if source not in ours:
                            continue
                        name, offset = source, 1
                    for line in f["lines"]:
                        if line["line_number"] > offset:
                            counts[name][line["line_number"] - offset] += line["count"]
                js.unlink()
    rows, total, hit = [], 0, 0
    for name in sorted(counts):
        lines = counts[name]
        missing = sorted(n for n, c in lines.items() if c == 0)
        n, h = len(lines), len(lines) - len(missing)
        total, hit = total + n, hit + h
        rows.append(f"{name:34s} {n:6d} {h:6d} {100 * h / max(n, 1):6.1f}%   {ranges(missing)}")
    text = "\n".join([f"{'file':34s} {'lines':>6s} {'exec':>6s} {'cover':>7s}   missing", *rows,
                      f"{'TOTAL':34s} {total:6d} {hit:6d} {100 * hit / max(total, 1):6.1f}%"])
    if a.out:
        a.out.write_text(text + "\n")
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
