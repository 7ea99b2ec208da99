"""Command line entry point ``frb-example``: run the Algorithm 903 examples.

Usage::

    frb-example N [--input PATH] [--output PATH] [--compare PATH | --no-compare] [--tol TOL]

``N`` is 0..4.  The default input is the packaged ``frb/data/init_exampleN.dat``,
the default output ``out_exampleN.dat`` in the current directory, and the
default comparison the published ``out_exampleN.dat`` found as described in
:mod:`frb.examples` (nothing is compared if it is absent).  The exit status is
0, or 1 when a comparison was made and the largest absolute deviation exceeds
the tolerance (default: the published tolerance of the example), or 2 for
usage and input errors.
"""

from __future__ import annotations

import argparse
import sys

__all__ = ["main", "run_driver", "build_parser"]


def build_parser() -> argparse.ArgumentParser:
    from .examples import EXAMPLES, PUBLISHED_TOLERANCE

    tols = ", ".join(f"{k}: {v:g}" for k, v in PUBLISHED_TOLERANCE.items())
    p = argparse.ArgumentParser(
        prog="frb-example",
        description="Run an example of ACM TOMS Algorithm 903 (exact free rigid body motion) "
        "and compare it with the published output.",
    )
    p.add_argument("example", type=int, choices=EXAMPLES, help="example number")
    p.add_argument(
        "--input", metavar="PATH", default=None,
        help="input file in the original layout (default: packaged init_exampleN.dat)",
    )
    p.add_argument(
        "--output", metavar="PATH", default=None,
        help="output file (default: out_exampleN.dat in the current directory)",
    )
    g = p.add_mutually_exclusive_group()
    g.add_argument(
        "--compare", metavar="PATH", default=None,
        help="reference output to compare with (default: the published "
        "out_exampleN.dat from $FRB_REFERENCE_DIR, ../shared/calgo903 of the current "
        "directory or of the source tree, if present)",
    )
    g.add_argument("--no-compare", action="store_true", help="do not compare")
    p.add_argument(
        "--tol", type=float, default=None,
        help=f"tolerance on the largest absolute deviation (default per example: {tols})",
    )
    return p


def main(argv=None) -> int:
    """Run ``frb-example`` with ``argv`` (default ``sys.argv[1:]``); return the exit status."""
    from .examples import format_summary, run_example

    args = build_parser().parse_args(argv)
    problem = _check_options(args)
    if problem:
        return _error(problem)
    compare = False if args.no_compare else args.compare
    try:
        summary = run_example(
            args.example,
            input_path=args.input,
            output_path=args.output,
            compare_path=compare,
            tolerance=args.tol,
        )
    except MemoryError as exc:
        return _error(f"not enough memory for this run ({exc})")
    except (OSError, ValueError, TypeError, OverflowError, RuntimeError) as exc:
        # input errors, and runs that the inputs make impossible (IntegrationError, too many steps)
        return _error(str(exc))
    print(format_summary(summary))
    if summary["within_tolerance"] is False:
        return 1
    return 0


def _error(message) -> int:
    """Print ``frb-example: error: message`` as one line on stderr; return the exit status 2."""
    one_line = " ".join(str(message).split())
    print(f"frb-example: error: {one_line}", file=sys.stderr)
    return 2


def _check_options(args):
    """The problem with --tol or --output, or None."""
    import math
    import os

    if args.tol is not None and not (math.isfinite(args.tol) and args.tol >= 0):
        return f"--tol must be a finite number >= 0, got {args.tol!r}"
    if args.output is not None:
        if not args.output.strip():
            return "--output must name a file, got an empty path"
        if os.path.isdir(args.output):
            return f"--output must name a file, but {args.output!r} is a directory"
    return None


def run_driver(n: int, default_input, argv=None) -> int:
    """Entry for ``drivers/exampleN.py``: ``frb-example n --input default_input`` plus ``argv``.

    Options in ``argv`` (default ``sys.argv[1:]``) override the default input.
    """
    argv = sys.argv[1:] if argv is None else list(argv)
    return main([str(n), "--input", str(default_input), *argv])


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
