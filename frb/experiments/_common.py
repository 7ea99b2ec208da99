"""Former location of the reporting helpers, kept as an alias of :mod:`frb.reporting` for code
that imported it; new code imports :mod:`frb.reporting`."""
from __future__ import annotations

from ..reporting import (Experiment, Option, Result, Table, attitude_error, batch_error, fit_order,
                         format_value, pyplot)
from ..rotations import momentum_period

__all__ = ["Experiment", "Option", "Table", "Result", "pyplot", "momentum_period", "fit_order",
           "attitude_error", "format_value", "batch_error"]
