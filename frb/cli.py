"""Command line entry points ``frb-example`` (the Algorithm 903 examples and the published
experiments) and ``frb-compare`` (work-precision comparison of the methods).

Usage::

    frb-example --help | --list | --names | --version
    frb-example NAME [--plot PATH] [--reference DIR] [--OPTION VALUE ...]   (NAME --help)
    frb-example N [--input PATH] [--output PATH] [--reference DIR]
                  [--compare PATH | --no-compare] [--tol TOL]
    frb-compare [--problem free|heavy-top|gravity-gradient|damped|gyrostat] [--methods A,B,...] [--plot PATH] ...

``NAME`` is an experiment of :mod:`frb.experiments`; it prints its tables and, with ``--plot``,
writes the figure (matplotlib).

``N`` is 0..4.  The default input is the packaged ``frb/data/init_exampleN.dat``,
the default output ``out_exampleN.dat`` in the current directory, and the
default comparison the published ``out_exampleN.dat`` of the Algorithm 903 distribution
(:data:`PUBLISHED_SOURCE`), which frb does not ship: from ``--reference DIR``, else found as
described in :mod:`frb.datasets` (the environment variable ``FRB_REFERENCE_DIR`` first;
nothing is compared if it is absent, and the summary says where to get it).  ``--names``
prints the experiments' names, one per line (for scripts).  The exit status is
0, or 1 when a comparison was made and the largest absolute deviation exceeds
the tolerance (default: the published tolerance of the example), or 2 for
usage and input errors.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib.util
import os
import re
import sys
import textwrap
from os import PathLike
from typing import TYPE_CHECKING, Any, Callable, Iterator, Literal, NoReturn, Sequence

from .datasets import PUBLISHED_SOURCE, REFERENCE_ENV

if TYPE_CHECKING:
    from .reporting import Experiment

__all__ = ["main", "run_driver", "build_parser", "compare_main", "list_text", "PUBLISHED_SOURCE"]


def _version_text(prog: str) -> str:
    from . import __version__

    return f"{prog} (frb) {__version__}"


class _Parser(argparse.ArgumentParser):
    """argparse with its usage errors on one line (``prog: error: message``, exit status 2), and
    option values that start with a minus sign (``--m0 -1,2,3``) taken as values."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._valued: set[str] = set()

    def add_argument(self, *names: Any, **kwargs: Any) -> argparse.Action:
        action = super().add_argument(*names, **kwargs)
        if action.option_strings and action.nargs is None and kwargs.get("action") in (None, "store"):
            self._valued.update(action.option_strings)
        return action

    def parse_args(self, args: Any = None, namespace: Any = None) -> Any:
        argv = list(sys.argv[1:] if args is None else args)
        joined = []
        i = 0
        while i < len(argv):
            # (argparse reads "-1,2,3" as an option: given as "--m0=-1,2,3" it is the value)
            if argv[i] in self._valued and i + 1 < len(argv) and _NEGATIVE.match(argv[i + 1]):
                joined.append(f"{argv[i]}={argv[i + 1]}")
                i += 2
                continue
            joined.append(argv[i])
            i += 1
        return super().parse_args(joined, namespace)

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: error: {' '.join(message.split())}\n")

    def print_help(self, file: Any = None) -> None:
        # (argparse ignores a failed write of its help: a full disk would exit 0 with no output)
        out = sys.stdout if file is None else file
        if out is not None:     # (None: started with its standard output closed)
            out.write(self.format_help())
            out.flush()


class _Version(argparse.Action):
    """``--version``: the version text on standard output, whose failed write is an error (the
    action of argparse ignores it)."""

    def __init__(self, option_strings: Any, version: str, dest: str = argparse.SUPPRESS,
                 default: str = argparse.SUPPRESS, help: str = "show program's version number and exit"
                 ) -> None:
        super().__init__(option_strings, dest=dest, default=default, nargs=0, help=help)
        self.version = version

    def __call__(self, parser: argparse.ArgumentParser, namespace: Any, values: Any,
                 option_string: Any = None) -> NoReturn:
        if sys.stdout is not None:
            sys.stdout.write(self.version + "\n")
            sys.stdout.flush()
        parser.exit()


#: A value that starts with a minus sign: a negative number or a list starting with one.
_NEGATIVE = re.compile(r"-(?:\d|\.\d|inf|nan)", re.IGNORECASE)


def build_parser() -> argparse.ArgumentParser:
    """The parser of ``frb-example N``; its ``--help`` lists every example and experiment."""
    from .examples import EXAMPLES, PUBLISHED_TOLERANCE

    tols = ", ".join(f"{k}: {v:g}" for k, v in PUBLISHED_TOLERANCE.items())
    p = _Parser(
        prog="frb-example",
        usage="frb-example [-h] [--list] [--names] [--version] {N | NAME} [options]",
        description=textwrap.fill(
            "Run an example of ACM TOMS Algorithm 903 (exact free rigid body motion) and compare "
            "it with the published output, or rerun a published experiment.", 79),
        epilog=list_text() + "\n\n" + textwrap.fill(_reference_help(), 79),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("example", type=int, choices=EXAMPLES, metavar="N",
                   help="example number, 0..4 (or an experiment's NAME: see below)")
    p.add_argument("--list", action="store_true",
                   help="list the examples and the experiments, and exit")
    p.add_argument("--names", action="store_true",
                   help="print the experiments' names, one per line (for scripts), and exit")
    p.add_argument("--version", action=_Version, version=_version_text("frb-example"))
    p.add_argument(
        "--reference", metavar="DIR", default=None,
        help="directory holding the published out_exampleN.dat (default: $FRB_REFERENCE_DIR, "
        "else looked for beside a development checkout)",
    )
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
        help="reference output file to compare with (default: the published "
        "out_exampleN.dat, see --reference)",
    )
    g.add_argument("--no-compare", action="store_true", help="do not compare")
    p.add_argument(
        "--tol", type=float, default=None,
        help=f"tolerance on the largest absolute deviation (default per example: {tols})",
    )
    return p


def _reference_help() -> str:
    return ("The published outputs out_exampleN.dat, which frb does not ship, come with "
            f"{PUBLISHED_SOURCE}. Point at the folder holding them with --reference DIR or the "
            f"environment variable {REFERENCE_ENV}=DIR; without them the examples run and "
            "nothing is compared.")


def list_text() -> str:
    """The text of ``frb-example --list``: every example and experiment with one line each."""
    from .experiments import EXPERIMENTS

    lines = ["Algorithm 903 examples (frb-example N; compared with the published outputs):",
             "  0  one exact step, rotation matrices (frb_step)",
             "  1  perturbed body, sixth-order splitting RKN6_14, t in [0, 5000]",
             "  2  one exact step, quaternions (quat_step)",
             "  3  semi-exact steps (5 Gauss-Legendre nodes), rotation matrices",
             "  4  semi-exact steps (5 Gauss-Legendre nodes), quaternions",
             "", "Published experiments (frb-example NAME [--plot PATH]; NAME --help):"]
    width = max(len(n) for n in EXPERIMENTS)
    lines += [f"  {n.ljust(width)}  {e.summary}  [{e.reference}]" for n, e in EXPERIMENTS.items()]
    return "\n".join(lines)


def _experiment_parser(exp: Experiment) -> argparse.ArgumentParser:
    p = _Parser(prog=f"frb-example {exp.name}", description=exp.description)
    p.add_argument("--plot", metavar="PATH", default=None,
                   help="write the figure to PATH (format from the suffix, e.g. .png), or into "
                   "the folder PATH as NAME.png; needs matplotlib: pip install 'frb[plot]'")
    p.add_argument("--reference", metavar="DIR", default=None,
                   help="directory holding the published out_exampleN.dat, for the "
                   f"experiments that compare with them (default: ${REFERENCE_ENV})")
    for o in exp.options:
        # (the text is converted and checked by the option: its messages name --NAME)
        p.add_argument("--" + o.name.replace("_", "-"), dest=o.name, type=str,
                       default=None, metavar=o.type.__name__.upper(),
                       help=o.help if "default" in o.help else f"{o.help} (default: {o.default})")
    return p


def _run_experiment(name: str, argv: Sequence[str]) -> int:
    from .experiments import EXPERIMENTS, plot_experiment, run_experiment

    exp = EXPERIMENTS[name]
    args = vars(_experiment_parser(exp).parse_args(argv))
    path = args.pop("plot")
    reference = args.pop("reference")
    if reference is not None and not os.path.isdir(reference):
        return _error(f"--reference must name a directory, got {reference!r}",
                      f"frb-example {name}")
    try:
        if path is not None:
            path = _plot_option(path, name)       # (checked ahead of the run)
        options = {o.name: o.parse(args[o.name]) for o in exp.options
                   if args[o.name] is not None}
        with _reference_dir(reference):
            result = run_experiment(name, **options)
    except MemoryError as exc:
        return _error(f"not enough memory for this run ({exc})", f"frb-example {name}")
    except (TypeError, ValueError, OverflowError, RuntimeError) as exc:
        return _error(exc, f"frb-example {name}",
                      {o.name: "--" + o.name.replace("_", "-") for o in exp.options})
    print(result.format())
    if path is not None:
        try:
            path = plot_experiment(result, path)
        except (ImportError, OSError, ValueError) as exc:
            return _error(f"cannot write the figure: {exc}", f"frb-example {name}")
        print(f"figure written to {path}")
    return 0


def _plot_option(path: str, name: str) -> str:
    """:func:`frb.reporting.figure_path` of --plot PATH; its ValueError naming --plot, also
    when matplotlib is missing (checked ahead of the run)."""
    from .reporting import figure_path

    if importlib.util.find_spec("matplotlib") is None:
        raise ValueError("--plot: plots need matplotlib: pip install 'frb[plot]'")
    try:
        return figure_path(path, name)
    except ValueError as exc:
        raise ValueError(f"--plot: {exc}") from None


@contextlib.contextmanager
def _reference_dir(directory: str | None) -> Iterator[None]:
    """``FRB_REFERENCE_DIR`` set to ``directory`` (when not None) for the duration."""
    if directory is None:
        yield
        return
    old = os.environ.get(REFERENCE_ENV)
    os.environ[REFERENCE_ENV] = os.path.abspath(directory)
    try:
        yield
    finally:
        if old is None:
            del os.environ[REFERENCE_ENV]
        else:
            os.environ[REFERENCE_ENV] = old


def _reader_gone() -> int:
    """The exit of a command whose reader closed the pipe (``frb-example --list | head -1``):
    quiet, status 0, stdout pointed at the null device so that the interpreter's last flush
    does not fail again."""
    try:
        null = os.open(os.devnull, os.O_WRONLY)
        os.dup2(null, sys.stdout.fileno())
        os.close(null)
    except (OSError, ValueError, AttributeError):   # (a stdout without a file descriptor)
        pass
    return 0


def _guarded(command: Callable[[Sequence[str] | None], int], prog: str,
             argv: Sequence[str] | None) -> int:
    """The exit status of a command: 0 and quiet when its reader closed the pipe; 1 with one
    line on stderr when its standard output cannot be written (a full disk, ``> /dev/full``)."""
    try:
        try:
            return command(argv)
        finally:
            if sys.stdout is not None:          # (None: started with its standard output closed)
                sys.stdout.flush()
    except BrokenPipeError:
        return _reader_gone()
    except OSError as exc:
        if exc.filename is not None:
            raise
        print(f"{prog}: error: cannot write the output: {exc}", file=sys.stderr)
        _reader_gone()
        return 1


def main(argv: Sequence[str] | None = None) -> int:
    """Run ``frb-example`` with ``argv`` (default ``sys.argv[1:]``); return the exit status."""
    return _guarded(_example_main, "frb-example", argv)


def _example_main(argv: Sequence[str] | None) -> int:
    from .examples import format_summary, run_example
    from .experiments import EXPERIMENTS

    argv = sys.argv[1:] if argv is None else list(argv)
    if argv and argv[0] == "--list":
        print(list_text())
        return 0
    if argv and argv[0] == "--names":
        print("\n".join(EXPERIMENTS))
        return 0
    if argv and argv[0] in EXPERIMENTS:
        return _run_experiment(argv[0], argv[1:])
    if argv and not argv[0].startswith("-") and not argv[0].isdigit():
        print(f"frb-example: error: unknown example or experiment {argv[0]!r}; "
              "frb-example --list lists them", file=sys.stderr)
        return 2
    args = build_parser().parse_args(argv)
    problem = _check_options(args)
    if problem:
        return _error(problem)
    compare: str | Literal[False] | None = False if args.no_compare else args.compare
    if args.reference is not None and compare is None:
        compare = os.path.join(args.reference, f"out_example{args.example}.dat")
        if not os.path.isfile(compare):
            return _error(f"--reference {args.reference}: no out_example{args.example}.dat in "
                          f"it (the published outputs come with {PUBLISHED_SOURCE})")
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
        return _error(exc, options=_EXAMPLE_OPTIONS)
    print(format_summary(summary))
    if summary["within_tolerance"] is False:
        return 1
    return 0


#: The options of ``frb-example N`` by the arguments of :func:`frb.examples.run_example`.
_EXAMPLE_OPTIONS = {"input_path": "--input", "output_path": "--output",
                    "compare_path": "--compare", "tolerance": "--tol"}
#: The options of ``frb-compare`` by the arguments of :func:`frb.compare`.
_COMPARE_OPTIONS = {name: "--" + name.replace("_", "-") for name in (
    "problem", "methods", "bodies", "inertia", "m0", "t_final", "steps", "rng", "coefficients",
    "reference")}


def _as_options(message: object, options: dict[str, str]) -> str:
    """``message`` of the Python API with the names of its arguments written as the command's
    options where they name the argument (``t_final must be finite`` as ``--t-final must be
    finite``): the message's subject (``NAME must``, ``is``, ``contains``, ``NAME = value``,
    ``NAME:``, ``NAME / NAME must``), ``for NAME = value``, ``lower NAME or NAME`` (and raise,
    lengthen, shorten), ``NAME and NAME`` and ``units of NAME``; elsewhere (formulas, prose,
    code) names are left as they are."""
    text = str(message)
    if not options:
        return text
    names = "|".join(map(re.escape, sorted(options, key=len, reverse=True)))

    def option(match: re.Match[str]) -> str:
        return "".join(options.get(part, part) for part in re.split(r"(\W+)", match.group(0)))

    for pattern in (
            # the subject, alone or as a ratio
            rf"^(?:{names})(?=\s+(?:must|is|contains)\b|\s+=\s|:)",
            rf"^(?:{names})\s*/\s*[\w-]+(?=\s+(?:must|is)\b)",
            rf"(?<=\bfor )(?:{names})(?=\s+=\s)",
            rf"(?:(?<=\blower )|(?<=\braise )|(?<=\blengthen )|(?<=\bshorten ))"
            rf"(?:{names})(?: or (?:{names}))?\b",
            rf"(?<![\w.-])(?:{names}) and (?:{names})\b",
            rf"(?<=\bunits of )(?:{names})\b"):
        text = re.sub(pattern, option, text)
    return text


def _error(message: object, prog: str = "frb-example", options: dict[str, str] | None = None
           ) -> int:
    """Print ``prog: error: message`` as one line on stderr (the Python API's argument names
    in it written as the command's ``options``); return the exit status 2."""
    one_line = " ".join(_as_options(message, options or {}).split())
    print(f"{prog}: error: {one_line}", file=sys.stderr)
    return 2


def _check_options(args: argparse.Namespace) -> str | None:
    """The problem with --tol, --output or --reference, or None."""
    import math

    if args.list or args.names:
        return "--list and --names take no example: frb-example --list"
    if args.reference is not None and not os.path.isdir(args.reference):
        return f"--reference must name a directory, got {args.reference!r}"
    if args.tol is not None and not (math.isfinite(args.tol) and args.tol >= 0):
        return f"--tol must be a finite number >= 0, got {args.tol!r}"
    if args.output is not None:
        if not args.output.strip():
            return "--output must name a file, got an empty path"
        if os.path.isdir(args.output):
            return f"--output must name a file, but {args.output!r} is a directory"
    return None


def run_driver(n: int, default_input: str | PathLike[str], argv: Sequence[str] | None = None
               ) -> int:
    """Entry for ``drivers/exampleN.py``: ``frb-example n --input default_input`` plus ``argv``.

    Options in ``argv`` (default ``sys.argv[1:]``) override the default input.
    """
    argv = sys.argv[1:] if argv is None else list(argv)
    return main([str(n), "--input", str(default_input), *argv])


def _floats(text: str) -> list[float]:
    try:
        return [float(x) for x in text.split(",")]
    except ValueError:
        raise argparse.ArgumentTypeError(f"three comma-separated numbers expected, got "
                                         f"{text!r}") from None


def _int_text(text: str) -> int:
    try:
        return int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"an integer expected, got {text!r}") from None


def _float_text(text: str) -> float:
    try:
        return float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"a number expected, got {text!r}") from None


def build_compare_parser() -> argparse.ArgumentParser:
    from .schedules import COEFFICIENT_SETS
    from .workprecision import DEFAULT_METHODS, DEFAULT_STEPS, PROBLEMS

    p = _Parser(
        prog="frb-compare",
        description="Work-precision comparison of the methods of frb.integrate: for each method "
        "and step, the error at the final time against a stated reference (the exact flow for a "
        "free body, RKN6_14 at a small step otherwise), the cost per body-step measured in this "
        "run, and the change of the invariants. Defaults: "
        f"{', '.join(DEFAULT_METHODS)} on 500 random bodies to t = 10.")
    p.add_argument("--problem", choices=list(PROBLEMS), default="free",
                   help="free body, heavy top (weight 1, centre (0, 0, 0.5)) or gravity gradient "
                   "(orbital rate 1); default: free")
    p.add_argument("--methods", default=None,
                   help="comma-separated methods, or 'all' (default: one or two per family)")
    p.add_argument("--bodies", type=_int_text, default=500, help="number of random bodies (default 500)")
    p.add_argument("--inertia", type=_floats, default=None, metavar="I1,I2,I3",
                   help="one body: its moments (with --m0; attitude the identity)")
    p.add_argument("--m0", type=_floats, default=None, metavar="M1,M2,M3",
                   help="one body: its initial body momentum (with --inertia)")
    p.add_argument("--t-final", type=_float_text, default=10.0, help="final time (default 10)")
    p.add_argument("--steps", default=",".join(map(str, DEFAULT_STEPS)),
                   help="comma-separated step counts (h = t_final / n); default "
                   + ",".join(map(str, DEFAULT_STEPS)))
    p.add_argument("--rng", type=_int_text, default=0,
                   help="start of the random generator of the bodies (default 0)")
    p.add_argument("--coefficients", metavar="NAME|FILE", default=None,
                   help="splitting coefficients compared as the method SPLITTING (added to the "
                   "default methods, or named in --methods): a named set ("
                   + ", ".join(sorted(COEFFICIENT_SETS)) + ") or a text file of two lines, "
                   "a_1..a_{s+1} and b_1..b_s (numbers separated by commas or spaces; "
                   "'#' starts a comment)")
    p.add_argument("--reference", metavar="FILE", default=None,
                   help="the state at t_final of the body of --m0 and --inertia the errors are "
                   "measured against (e.g. from a computation of higher precision; its accuracy "
                   "is not estimated): a text file of two lines, the body momentum M1 M2 M3 and "
                   "the attitude as a unit quaternion Q0 Q1 Q2 Q3 (scalar first) or a rotation "
                   "matrix (9 numbers, row by row), or an .npz file with the arrays m and "
                   "attitude")
    p.add_argument("--plot", metavar="PATH", default=None,
                   help="draw error against cost on log axes (needs matplotlib)")
    p.add_argument("--markdown", action="store_true", help="print the table as Markdown")
    p.add_argument("--version", action=_Version, version=_version_text("frb-compare"))
    return p


#: The longest file of --coefficients or --reference read (bytes): a few rows of numbers.
_OPTION_FILE_BYTES = 1 << 20


def _option_file(path: str, option: str) -> None:
    """ValueError naming ``option`` unless ``path`` is a regular file of at most
    _OPTION_FILE_BYTES (a FIFO would wait for a writer, a device never end)."""
    import stat

    try:
        info = os.stat(path)
    except OSError as exc:
        raise ValueError(f"{option}: cannot read {path!r}: {exc.strerror or exc}") from None
    if not stat.S_ISREG(info.st_mode):
        raise ValueError(f"{option}: {path!r} is not a regular file")
    if info.st_size > _OPTION_FILE_BYTES:
        raise ValueError(f"{option}: {path!r} holds {info.st_size} bytes, more than the "
                         f"{_OPTION_FILE_BYTES} of a file of a few rows of numbers")


def _number_lines(path: str, option: str) -> list[list[float]]:
    """The rows of numbers of a text file (commas or spaces between them, '#' comments, blank
    lines skipped); ValueError naming ``option`` and the file."""
    _option_file(path, option)
    try:
        with open(path, encoding="utf-8") as f:
            text = f.read(_OPTION_FILE_BYTES + 1)
    except UnicodeDecodeError as exc:
        raise ValueError(f"{option}: {path!r} is not a text file (byte {exc.object[exc.start]:#04x} "
                         f"at offset {exc.start} is not UTF-8)") from None
    except OSError as exc:
        raise ValueError(f"{option}: cannot read {path!r}: {exc}") from None
    rows = []
    for number, line in enumerate(text.splitlines(), 1):
        line = line.split("#", 1)[0].replace(",", " ").strip()
        if not line:
            continue
        try:
            rows.append([float(x) for x in line.split()])
        except ValueError:
            raise ValueError(f"{option}: line {number} of {path!r} is not a row of numbers: "
                             f"{line!r}") from None
    return rows


def _coefficients_option(text: str) -> tuple[list[float], list[float]]:
    """The pair (a, b) of --coefficients: a named set or the two rows of a file."""
    from ._validate import name_key
    from .schedules import COEFFICIENT_SETS

    if name_key(text) in COEFFICIENT_SETS:
        a, b = COEFFICIENT_SETS[name_key(text)]
        return list(a), list(b)
    if not os.path.exists(text):
        raise ValueError(f"--coefficients must be one of {sorted(COEFFICIENT_SETS)} or a file, "
                         f"got {text!r} (no such file)")
    rows = _number_lines(text, "--coefficients")
    if len(rows) != 2:
        raise ValueError(f"--coefficients: {text!r} must have two rows of numbers, a_1..a_{{s+1}} "
                         f"and b_1..b_s, got {len(rows)}")
    return rows[0], rows[1]


def _reference_option(path: str) -> tuple[Any, Any]:
    """The pair (m, attitude) of --reference: an .npz file or two rows of a text file."""
    import numpy as np

    if path.endswith(".npz"):
        import zipfile

        _option_file(path, "--reference")
        try:
            with np.load(path, allow_pickle=False) as data:
                files = sorted(data.files)
                if "m" in files and "attitude" in files:
                    return data["m"], data["attitude"]
        except (OSError, EOFError, ValueError, zipfile.BadZipFile) as exc:
            raise ValueError(f"--reference: cannot read {path!r}: {exc}") from None
        raise ValueError(f"--reference: {path!r} must hold the arrays m and attitude, got "
                         f"{files}")
    rows = _number_lines(path, "--reference")
    if len(rows) != 2 or len(rows[0]) != 3 or len(rows[1]) not in (4, 9):
        raise ValueError(f"--reference: {path!r} must have two rows of numbers, the momentum "
                         f"(3) and the attitude (4: a quaternion, or 9: a matrix), got rows of "
                         f"{[len(r) for r in rows]}")
    m, att = np.array(rows[0]), np.array(rows[1])
    return m, (att if att.size == 4 else att.reshape(3, 3))


def compare_main(argv: Sequence[str] | None = None) -> int:
    """Run ``frb-compare`` with ``argv`` (default ``sys.argv[1:]``); return the exit status."""
    return _guarded(_compare_main, "frb-compare", argv)


def _compare_main(argv: Sequence[str] | None) -> int:
    from .workprecision import compare

    args = build_compare_parser().parse_args(argv)
    kw: dict[str, Any] = {}
    if (args.inertia is None) != (args.m0 is None):
        print("frb-compare: error: give --inertia and --m0 together", file=sys.stderr)
        return 2
    if args.inertia is not None:
        kw = dict(m0=args.m0, attitude0=[1.0, 0.0, 0.0, 0.0], inertia=args.inertia)
    try:
        steps = [int(x) for x in args.steps.split(",")]
    except ValueError:
        return _error(f"--steps must be comma-separated integers, got {args.steps!r}",
                      "frb-compare")
    if args.bodies < 1:
        return _error(f"--bodies must be a positive integer, got {args.bodies}", "frb-compare")
    try:
        plot_path = None
        if args.plot is not None:
            plot_path = _plot_option(args.plot, f"compare-{args.problem}")
        if args.coefficients is not None:
            kw["coefficients"] = _coefficients_option(args.coefficients)
        if args.reference is not None:
            if args.inertia is None:
                return _error("--reference needs the body it belongs to: give --m0 and "
                              "--inertia", "frb-compare")
            kw["reference"] = _reference_option(args.reference)
        result = compare(args.methods, problem=args.problem, bodies=args.bodies,
                         t_final=args.t_final, steps=steps, rng=args.rng, **kw)
    except MemoryError as exc:
        return _error(f"not enough memory for this run ({exc})", "frb-compare")
    except (TypeError, ValueError, OverflowError, RuntimeError) as exc:
        text = str(exc)
        for option in ("coefficients", "reference"):
            # (the checks of the file's numbers: "reference m must ...", "coefficients a ...")
            if getattr(args, option) is not None and text.startswith(option + " "):
                text = f"--{option}: {text}"
        return _error(text, "frb-compare", _COMPARE_OPTIONS)
    print(result.to_markdown() if args.markdown else result.format())
    if plot_path is not None:
        try:
            result.plot(plot_path)
        except (ImportError, OSError, ValueError) as exc:
            return _error(f"cannot write the figure: {exc}", "frb-compare")
        print(f"figure written to {plot_path}")
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
