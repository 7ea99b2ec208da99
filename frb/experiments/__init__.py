"""The published experiments, one module per paper.

``run_experiment(name, **options)`` returns a :class:`frb.reporting.Result` (parameters, tables,
key numbers, data for the figure); ``plot_experiment(result, path)`` draws the figure the paper
shows (matplotlib, the ``plot`` extra). The command ``frb-example NAME`` runs the same. The
tables, options and figures are built with :mod:`frb.reporting`.

=======================  ==========================================================================
name                     module (paper, figure)
=======================  ==========================================================================
vilmart-book             :mod:`.vilmart_book` (Vilmart 2013, Fig. 1)
ganapathi-symmetric      :mod:`.ganapathi_symmetric` (Ganapathi 2005, Figs. 1-3)
ganapathi-stable         :mod:`.ganapathi_axes` (Ganapathi 2005, Fig. 4)
ganapathi-unstable       :mod:`.ganapathi_axes` (Ganapathi 2005, Fig. 5)
krysl-free               :mod:`.krysl_convergence` (Krysl 2008, section 5.1, Fig. 1)
krysl-slow-top           :mod:`.krysl_convergence` (Krysl 2008, section 5.2, Fig. 2)
krysl-fast-top           :mod:`.krysl_convergence` (Krysl 2008, section 5.3, Fig. 3)
krysl-coulomb            :mod:`.krysl_coulomb` (Krysl 2008, section 5.4, Figs. 4-5)
torus                    :mod:`.torus` (Celledoni and Zanna 2010, section 4.3, Fig. 7)
satellite                :mod:`.satellite` (frb's own spacecraft problem in the same style)
inertia-identification   :mod:`.inertia_identification` (frb's own: moments from noisy attitudes)
=======================  ==========================================================================

The papers: G. Vilmart, "Rigid body dynamics", 2013 (HAL preprint hal-00912388);
V. Ganapathi, "Simulation of rigid body dynamics in Matlab", Stanford University, 2005;
P. Krysl, "Dynamically equivalent implicit algorithms for the integration of rigid body
rotations", Commun. Numer. Meth. Engng, 2008; E. Celledoni and A. Zanna, "FRB-FORTRAN routines
for the exact computation of free rigid body motions", ACM Trans. Math. Softw. 37(2), 2010
(Algorithm 903).
"""
from __future__ import annotations

from os import PathLike
from typing import Any

from .._messages import IntegrationError, step_renamed

from ..reporting import Experiment, Option, Result, Table, figure_path
from . import (ganapathi_axes, ganapathi_symmetric, inertia_identification, krysl_convergence,
               krysl_coulomb, satellite, torus, vilmart_book)

__all__ = ["EXPERIMENTS", "Experiment", "Option", "Result", "Table", "run_experiment",
           "plot_experiment", "get_experiment"]

#: The experiments by name, in the order of the papers above.
EXPERIMENTS: dict[str, Experiment] = {
    e.name: e for e in (vilmart_book.EXPERIMENT, ganapathi_symmetric.EXPERIMENT,
                        *ganapathi_axes.EXPERIMENTS, *krysl_convergence.EXPERIMENTS,
                        krysl_coulomb.EXPERIMENT, torus.EXPERIMENT, satellite.EXPERIMENT,
                        inertia_identification.EXPERIMENT)
}


def get_experiment(name: str) -> Experiment:
    """The experiment called ``name`` (TypeError for a name that is not a string, ValueError
    listing the names for an unknown one)."""
    if not isinstance(name, str):
        raise TypeError(f"name must be an experiment's name (a string, one of: "
                        f"{', '.join(EXPERIMENTS)}), got {name!r}")
    if name not in EXPERIMENTS:
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
    checked = exp.checked(options)
    try:
        return exp.run(**{**exp.defaults(), **checked})
    except (ValueError, IntegrationError) as exc:
        step = _step_name(exp.defaults())
        if step is None:
            raise
        raise step_renamed(exc, step) from None


def _step_name(defaults: dict[str, Any]) -> str | None:
    """The name of an experiment's step option when it is not ``h`` (``dt``), else None."""
    return "dt" if "dt" in defaults and "h" not in defaults else None




def plot_experiment(result: Result, path: str | PathLike[str]) -> str:
    """Write the figure of ``result`` (from :func:`run_experiment`) to ``path``: a file (format
    from its suffix, ``.png`` when it has none) or an existing folder (``path/NAME.png``).
    Returns the path written."""
    if not isinstance(result, Result):
        raise TypeError(f"result must be a Result of run_experiment, got {type(result).__name__}")
    out = figure_path(path, result.name)
    get_experiment(result.name).plot(result, out)
    return out
