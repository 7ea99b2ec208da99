"""Write frb/_build_info.py at build time (a custom target of meson.build).

    python tools/build_info.py BUILD_DIR OUTPUT

Reads meson's introspection of the build directory (``BUILD_DIR/meson-info/*.json``: the
project's version, the compilers, the build options, the dependencies and every target's
compile arguments) and writes a Python module holding what :func:`frb.show_config` prints:
the version, the compilers and their flags, OpenMP, and the build options. The flags are the
ones meson passes to the compiler for the sources of frb's libraries and extensions, as meson
recorded them; paths of include and module directories of the build machine are left out.
"""
from __future__ import annotations

import json
import pprint
import sys
from pathlib import Path
from typing import Any


def _load(info: Path, name: str) -> Any:
    return json.loads((info / f"intro-{name}.json").read_text(encoding="utf-8"))


def _flags(params: list[str]) -> list[str]:
    """Compile arguments without the build machine's paths (-I, -J) and without colours."""
    out = []
    for p in params:
        if p.startswith(("-I", "-J", "-fdiagnostics-color")):
            continue
        out.append(p)
    return out


def _common(lists: list[list[str]]) -> list[str]:
    """The arguments every list has, in the order of the first."""
    if not lists:
        return []
    return [a for a in lists[0] if all(a in other for other in lists[1:])]


def collect(build_dir: Path) -> dict[str, Any]:
    """The build description (a dict of plain values) from meson's introspection files."""
    info = build_dir / "meson-info"
    project = _load(info, "projectinfo")
    compilers = _load(info, "compilers").get("host", {})
    options = {o["name"]: o["value"] for o in _load(info, "buildoptions")}
    deps = {d["name"]: d for d in _load(info, "dependencies")}
    meson_info = json.loads((info / "meson-info.json").read_text(encoding="utf-8"))

    per_target: dict[str, dict[str, list[str]]] = {}
    for target in _load(info, "targets"):
        for src in target.get("target_sources", []):
            lang = src.get("language")
            # (the SIMD targets' copies of the lane modules are generated sources)
            if lang not in ("fortran", "c") or not (src.get("sources")
                                                    or src.get("generated_sources")):
                continue
            per_target.setdefault(lang, {})[target["name"]] = _flags(src.get("parameters", []))
    flags: dict[str, Any] = {}
    for lang, targets in sorted(per_target.items()):
        common = _common(list(targets.values()))
        flags[lang] = {
            "common": common,
            "extra": {name: [a for a in args if a not in common]
                      for name, args in sorted(targets.items())
                      if any(a not in common for a in args)},
        }
    omp = deps.get("openmp")
    return {
        "version": project["version"],
        "meson": meson_info.get("meson_version", {}).get("full", "unknown"),
        "options": {k: options.get(k) for k in ("buildtype", "optimization", "b_lto", "b_ndebug",
                                                "testing")},
        "compilers": {lang: {"id": c.get("id"), "version": c.get("version"),
                             "full_version": c.get("full_version"),
                             "command": " ".join(c.get("exelist", [])),
                             "linker": c.get("linker_id")}
                      for lang, c in sorted(compilers.items())},
        "flags": flags,
        "openmp": {"found": omp is not None,
                   "version": None if omp is None else omp.get("version"),
                   "flags": [] if omp is None else omp.get("compile_args", [])},
    }


def render(build: dict[str, Any]) -> str:
    """The text of the generated module."""
    return (
        '"""The build of this installation of frb: written by tools/build_info.py when meson\n'
        'built the package (do not edit). Read by frb.show_config()."""\n\n'
        "from typing import Any\n\n"
        f"VERSION: str = {build['version']!r}\n\n"
        f"BUILD: dict[str, Any] = {pprint.pformat(build, sort_dicts=False)}\n"
    )


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        print("usage: python tools/build_info.py BUILD_DIR OUTPUT", file=sys.stderr)
        return 2
    text = render(collect(Path(argv[0])))
    out = Path(argv[1])
    if not out.is_file() or out.read_text(encoding="utf-8") != text:
        out.write_text(text, encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
