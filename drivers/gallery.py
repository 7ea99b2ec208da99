"""Regenerate the README gallery: every published experiment and the two work-precision
diagrams, through the commands themselves (``frb-example NAME --plot``, ``frb-compare --plot``).

    python drivers/gallery.py [OUTDIR [NAME ...]]   (default: docs/gallery, every figure)

Each figure goes to ``OUTDIR/NAME.png`` and the printed tables to ``OUTDIR/NAME.txt``.
"""
import contextlib
import io
import sys
import time
from pathlib import Path

from frb.cli import compare_main, main
from frb.experiments import EXPERIMENTS

out = Path(sys.argv[1]) if len(sys.argv) > 1 else Path(__file__).resolve().parents[1] / "docs" / "gallery"
out.mkdir(parents=True, exist_ok=True)
runs = [(name, main, [name]) for name in EXPERIMENTS]
runs += [(f"compare-{p}", compare_main, ["--problem", p]) for p in ("free", "heavy-top")]
only = set(sys.argv[2:])
for name, command, argv in runs:
    if only and name not in only:
        continue
    t0 = time.perf_counter()
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        status = command(argv + ["--plot", str(out / f"{name}.png")])
    # the figure's file name, not this machine's path
    (out / f"{name}.txt").write_text(buf.getvalue().replace(str(out / f"{name}.png"), f"{name}.png"))
    print(f"{name}: exit {status}, {time.perf_counter() - t0:.1f} s")
    if status:
        sys.exit(status)
