"""The configuration of this installation: :func:`show_config` (``frb.show_config()``).

What the build was made with (the version, meson, the compilers and their flags, OpenMP) is
recorded when meson builds the package, from its introspection of the build directory
(``frb/_build_info.py``, written by ``tools/build_info.py``); what is found at run time (Python,
numpy, the thread count, the SIMD target of the compiled loops, the optional extras) is asked
for when :func:`show_config` is called.
"""
from __future__ import annotations

import os
import platform
import sys
from importlib import metadata
from typing import Any

from . import _build_info, _validate

__all__ = ["show_config", "EXTRAS"]

#: The optional dependencies by extra (``pip install 'frb[EXTRA]'``) and what frb uses them for.
EXTRAS: dict[str, tuple[tuple[str, ...], str]] = {
    "rotation": (("scipy",), "frb.to_rotation / frb.from_rotation"),
    "plot": (("matplotlib",), "the figures of the experiments and of frb-compare"),
    "dask": (("dask", "distributed"), "frb.dask: batches on a cluster"),
    "progress": (("tqdm",), "the progress bar of long runs"),
    "test": (("pytest", "hypothesis", "mpmath", "mypy"), "the test suite"),
    "docs": (("sphinx", "numpydoc"), "the manual"),
}


def _version_of(dist: str) -> str | None:
    try:
        return metadata.version(dist)
    except metadata.PackageNotFoundError:
        return None


def _config() -> dict[str, Any]:
    import numpy

    from .simd import cpu_dispatch, supported_cpu_targets
    from .threads import get_num_threads, openmp_enabled

    build = _build_info.BUILD
    return {
        "frb": {"version": _build_info.VERSION,
                "path": os.path.dirname(os.path.abspath(__file__))},
        "python": {"version": platform.python_version(), "executable": sys.executable},
        "numpy": {"version": numpy.__version__},
        "machine": {"system": platform.system(), "cpu": platform.machine()},
        "build": {"meson": build["meson"], **build["options"]},
        "compilers": build["compilers"],
        "flags": build["flags"],
        "openmp": {**build["openmp"], "enabled": openmp_enabled(),
                   "threads": get_num_threads()},
        "simd": {"target": cpu_dispatch(), "supported": list(supported_cpu_targets())},
        "extras": {name: {dist: _version_of(dist) for dist in dists}
                   for name, (dists, _) in EXTRAS.items()},
    }


def _format(cfg: dict[str, Any]) -> str:
    out = [f"frb {cfg['frb']['version']}  ({cfg['frb']['path']})",
           f"  python:     {cfg['python']['version']}  ({cfg['python']['executable']})",
           f"  numpy:      {cfg['numpy']['version']}",
           f"  machine:    {cfg['machine']['system']} {cfg['machine']['cpu']}"]
    b = cfg["build"]
    out.append(f"  build:      meson {b['meson']}, buildtype {b['buildtype']}, optimization "
               f"{b['optimization']}, link-time optimisation {'on' if b['b_lto'] else 'off'}, "
               f"frb._testing {'built' if b['testing'] else 'not built'}")
    out.append("  compilers:")
    for lang, c in cfg["compilers"].items():
        out.append(f"    {lang + ':':9s} {c['command']} ({c['full_version']}), linker {c['linker']}")
    out.append("  flags (as meson passed them to the compiler):")
    for lang, f in cfg["flags"].items():
        out.append(f"    {lang + ':':9s} {' '.join(f['common'])}")
        for target, extra in f["extra"].items():
            out.append(f"      and for {target}: {' '.join(extra)}")
    o = cfg["openmp"]
    if o["enabled"]:
        out.append(f"  OpenMP:     {o['version']} ({' '.join(o['flags'])}); threads: {o['threads']} "
                   "(frb.set_num_threads, OMP_NUM_THREADS)")
    else:
        out.append("  OpenMP:     not in this build (every loop runs on one thread)")
    target = cfg["simd"]["target"]
    out.append(f"  SIMD:       {target} (this CPU supports: {', '.join(cfg['simd']['supported'])}; "
               "frb.set_cpu_target, FRB_CPU_TARGET)")
    out.append("  extras (pip install 'frb[EXTRA]'):")
    for name, dists in cfg["extras"].items():
        have = ", ".join(f"{d} {v}" if v else f"{d} not installed" for d, v in dists.items())
        out.append(f"    {name + ':':9s} {have}  [{EXTRAS[name][1]}]")
    return "\n".join(out)


def show_config(mode: str = "stdout") -> dict[str, Any] | None:
    """Show how this installation of frb was built and what it finds at run time.

    Like ``numpy.show_config()``: the version, Python and numpy, the build (meson, its options,
    the compilers and the flags it passed them, recorded when the package was built), OpenMP
    and the thread count, the SIMD target of the compiled loops (when the build dispatches
    among several) and which optional extras are installed.

    Parameters
    ----------
    mode : {"stdout", "dicts"}
        ``"stdout"`` prints the report; ``"dicts"`` returns it as a dict instead.

    Returns
    -------
    dict or None
        With ``mode="dicts"``: the keys ``frb``, ``python``, ``numpy``, ``machine``, ``build``,
        ``compilers``, ``flags``, ``openmp``, ``simd`` and ``extras``; else None.

    Raises
    ------
    ValueError
        ``mode`` is neither ``"stdout"`` nor ``"dicts"``.

    Examples
    --------
    >>> import frb
    >>> cfg = frb.show_config(mode="dicts")
    >>> cfg["frb"]["version"] == frb.__version__
    True
    >>> sorted(cfg["compilers"])
    ['c', 'fortran']
    """
    _validate.choice(mode, "mode", ("stdout", "dicts"), "'stdout' or 'dicts'")
    cfg = _config()
    if mode == "dicts":
        return cfg
    print(_format(cfg))
    return None
