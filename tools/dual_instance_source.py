"""The dual-number instance of a kind-generic Fortran include, written at build time by meson.build.

    python tools/dual_instance_source.py INPUT OUTPUT

frb writes its exact flow once, for a real kind ``wp`` (``fortran/*_generic.inc``, included by a
double- and a quadruple-precision module). The derivatives of the flow (``flow_derivatives``)
run the same source on dual numbers (``dual_numbers``: value and first derivatives, every
operation overloaded): this script copies INPUT to OUTPUT with

* every variable, dummy argument, result and component declared ``real(wp)`` declared
  ``type(dual_t)`` (named constants, ``real(wp), parameter``, stay real);
* every real literal passed as an actual argument to a kind-generic procedure (one defined in a
  ``*_generic.inc`` or ``*_table.inc`` of the input's directory) wrapped as ``as_dual(...)``,
  the dual constant (Fortran does not convert the type of an actual argument);
* every ``include`` of a file that defines procedures replaced by that file's dual instance (the
  tables of constants stay included as they are).

Nothing else changes: the formulas, their order and their branches are those of the source, so a
change to the flow reaches its derivatives (the module that includes OUTPUT, e.g.
``fortran/exact_flow_dual.f90``, supplies ``dual_t`` and the operations).
"""

from __future__ import annotations

import os
import re
import sys

DECLARATION = re.compile(r"^(\s*)real\(wp\)(?=\s*(,|::))", re.IGNORECASE)
INCLUDE = re.compile(r"^\s*include\s+'([^']+)'\s*$", re.IGNORECASE)
PROCEDURE = re.compile(r"\b(?:function|subroutine)\s+([a-z_]\w*)\s*\(", re.IGNORECASE)
REAL_LITERAL = re.compile(r"[+-]?(?:\d+\.\d*|\.\d+)(?:[ed][+-]?\d+)?_wp", re.IGNORECASE)


def defines_procedures(text: str) -> bool:
    return PROCEDURE.search(text) is not None


def generic_procedures(directory: str) -> set[str]:
    """Names of the procedures defined in the kind-generic includes of directory."""
    names: set[str] = set()
    for entry in sorted(os.listdir(directory)):
        if entry.endswith(("_generic.inc", "_table.inc")):
            with open(os.path.join(directory, entry), encoding="utf-8") as f:
                names.update(name.lower() for name in PROCEDURE.findall(f.read()))
    return names


def convert_declarations(text: str) -> str:
    out = []
    for line in text.splitlines(keepends=True):
        code = line.split("!", 1)[0]
        if DECLARATION.match(line) and "parameter" not in code.lower():
            line = DECLARATION.sub(r"\1type(dual_t)", line, count=1)
        out.append(line)
    return "".join(out)


def _arguments(text: str, start: int) -> tuple[list[tuple[int, int]], int]:
    """The spans of the top-level arguments of the call whose '(' is at text[start], and the
    index of its ')'. Comments (from '!' to the end of a line) and continuations are skipped."""
    depth = 0
    spans = []
    begin = start + 1
    i = start
    while i < len(text):
        ch = text[i]
        if ch == "!":
            i = text.index("\n", i)
            continue
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
            if depth == 0:
                spans.append((begin, i))
                return spans, i
        elif ch == "," and depth == 1:
            spans.append((begin, i))
            begin = i + 1
        i += 1
    raise ValueError(f"unbalanced parentheses after offset {start}")


def _bare(argument: str) -> str:
    """argument without blanks and continuation marks."""
    return re.sub(r"[\s&]+", "", argument)


def wrap_literal_arguments(text: str, procedures: set[str]) -> str:
    """text with each real literal actual argument of a call to one of procedures wrapped as
    as_dual(literal)."""
    call = re.compile(r"(?<![%\w])([a-z_]\w*)\s*\(", re.IGNORECASE)
    edits: list[tuple[int, int, str]] = []
    for match in call.finditer(text):
        name = match.group(1).lower()
        if name not in procedures:
            continue
        line_start = text.rfind("\n", 0, match.start()) + 1
        before = text[line_start:match.start()]
        if "!" in before or re.search(r"\b(function|subroutine)\s*$", before, re.IGNORECASE):
            continue
        spans, _ = _arguments(text, match.end() - 1)
        for begin, end in spans:
            bare = _bare(text[begin:end])
            if REAL_LITERAL.fullmatch(bare):
                edits.append((begin, end, f" as_dual({bare})" if text[begin] == " " else
                              f"as_dual({bare})"))
    for begin, end, new in sorted(edits, reverse=True):
        text = text[:begin] + new + text[end:]
    return text


def fold_long_lines(text: str, limit: int = 132) -> str:
    """text with every line longer than limit (free-form Fortran's) continued at a comma."""
    out = []
    for line in text.splitlines(keepends=True):
        while len(line.rstrip("\n")) > limit:
            indent = len(line) - len(line.lstrip())
            cut = line.rfind(", ", 0, limit - 10)
            if cut <= indent or "!" in line[:cut]:
                break
            out.append(line[:cut + 1] + " &\n")
            line = " " * (indent + 3) + line[cut + 2:]
        out.append(line)
    return "".join(out)


def dual_source(path: str, procedures: set[str]) -> str:
    directory = os.path.dirname(os.path.abspath(path))
    with open(path, encoding="utf-8") as f:
        text = f.read()
    out = []
    for line in text.splitlines(keepends=True):
        match = INCLUDE.match(line)
        if match:
            included = os.path.join(directory, match.group(1))
            with open(included, encoding="utf-8") as f:
                body = f.read()
            if defines_procedures(body):
                out.append(f"   ! (the dual instance of {match.group(1)})\n")
                out.append(dual_source(included, procedures))
                continue
        out.append(line)
    return wrap_literal_arguments(convert_declarations("".join(out)), procedures)


def main(argv: list[str]) -> int:
    if len(argv) != 3:
        print(__doc__.strip().splitlines()[2], file=sys.stderr)
        return 2
    source, output = argv[1:]
    procedures = generic_procedures(os.path.dirname(os.path.abspath(source)))
    text = fold_long_lines(dual_source(source, procedures))
    with open(output, "w", encoding="utf-8") as f:
        f.write(f"! Generated from {os.path.basename(source)} by tools/dual_instance_source.py "
                f"(the dual-number instance); do not edit.\n")
        f.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
