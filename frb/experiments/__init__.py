"""The published experiments of the seed documents, one module per experiment.

``run_experiment(name, **options)`` returns a :class:`Result` (parameters, tables, key numbers,
data for the figure); ``plot_experiment(result, path)`` draws the figure the paper shows
(matplotlib, the ``plot`` extra). The command ``frb-example NAME`` runs the same.

=====================  ==========================================================================
name                   module (seed, figure)
=====================  ==========================================================================
vilmart-book           :mod:`.vilmart_book` (000 Vilmart, Fig. 1)
ganapathi-symmetric    :mod:`.ganapathi_symmetric` (001 Ganapathi, Figs. 1-3)
ganapathi-stable       :mod:`.ganapathi_axes` (001 Ganapathi, Fig. 4)
ganapathi-unstable     :mod:`.ganapathi_axes` (001 Ganapathi, Fig. 5)
krysl-free             :mod:`.krysl_convergence` (003 Krysl, section 5.1, Fig. 1)
krysl-slow-top         :mod:`.krysl_convergence` (003 Krysl, section 5.2, Fig. 2)
krysl-fast-top         :mod:`.krysl_convergence` (003 Krysl, section 5.3, Fig. 3)
krysl-coulomb          :mod:`.krysl_coulomb` (003 Krysl, section 5.4, Figs. 4-5)
torus                  :mod:`.torus` (004 Celledoni-Zanna, Fig. 7)
=====================  ==========================================================================
"""
from __future__ import annotations

from os import PathLike
from typing import Any

from ._common import Experiment, Option, Result, Table
from . import (ganapathi_axes, ganapathi_symmetric, krysl_convergence, krysl_coulomb, torus,
               vilmart_book)

__all__ = ["EXPERIMENTS", "Experiment", "Option", "Result", "Table", "run_experiment",
           "plot_experiment", "get_experiment"]

#: The experiments by name, in the order of the seeds.
EXPERIMENTS: dict[str, Experiment] = {
    e.name: e for e in (vilmart_book.EXPERIMENT, ganapathi_symmetric.EXPERIMENT,
                        *ganapathi_axes.EXPERIMENTS, *krysl_convergence.EXPERIMENTS,
                        krysl_coulomb.EXPERIMENT, torus.EXPERIMENT)
}


def get_experiment(name: str) -> Experiment:
    """The experiment called ``name`` (ValueError listing the names otherwise)."""
    if not isinstance(name, str) or name not in EXPERIMENTS:
        raise ValueError(f"unknown experiment {name!r}; one of: {', '.join(EXPERIMENTS)}")
    return EXPERIMENTS[name]


def run_experiment(name: str, **options: Any) -> Result:
    """Run the experiment ``name`` with its defaults overridden by ``options``.

    Examples
    --------
    >>> from frb.experiments import run_experiment
    >>> result = run_experiment("ganapathi-symmetric", nsteps=30)
    >>> print(f"{result.numbers['precession_rate']:.5f}")
    4.12311
    """
    exp = get_experiment(name)
    unknown = set(options) - set(exp.defaults())
    if unknown:
        raise TypeError(f"{name} has no option(s) {', '.join(sorted(unknown))}; "
                        f"options: {', '.join(exp.defaults())}")
    return exp.run(**{**exp.defaults(), **options})


def plot_experiment(result: Result, path: str | PathLike[str]) -> None:
    """Write the figure of ``result`` (from :func:`run_experiment`) to ``path``."""
    get_experiment(result.name).plot(result, path)
