"""The routes of the exact steps (frb.frb_step, frb.quat_step), shared by frb.flows and
frb.derivatives, which take the same arguments with the same names."""

from __future__ import annotations

from ._run import Route

__all__ = ["ROUTES"]

#: The routes of the two steps, by the name of their attitude argument.
ROUTES = {
    "Q": Route("frb.frb_step", {"m": "m", "attitude": "Q", "h": "h", "inertia": "inertia"},
               forms=("matrix",), h_per_body=True),
    "q": Route("frb.quat_step", {"m": "m", "attitude": "q", "h": "h", "inertia": "inertia"},
               forms=("quaternion",), h_per_body=True),
}
