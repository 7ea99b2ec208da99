"""frb: exact motion of the free rigid body (a modern port of ACM TOMS Algorithm 903).

Public API
----------
frb_step, quat_step      exact / semi-exact free rigid body steps (matrix / scalar-first quaternion)
derivatives              their exact derivatives (``flow_jacobian``: the state transition matrix,
                         d/dh, d/dinertia; ``frb_step(..., jacobian=True)``)
integrate                every integrator of the papers, batched, with torques (``frb.engine``)
METHODS                  the methods of integrate: reference, order, properties (``frb.methods``)
Trajectory               the kept states of a run
torques                  built-in torques (constant_field, heavy_top, gravity_gradient, ...)
Wheels, wheel_laws       reaction wheels as states of the run, and the laws of their motors
splitting                splitting methods for torqued bodies (``frb.splitting.integrate``)
dmv_step, dmv_integrate  the preprocessed discrete Moser-Veselov method (orders 2, 4, 6, 8; ``frb.dmv``)
hat, quat_mul, quat_conj, quat_to_matrix, matrix_to_quat, kinetic_energy, spatial_momentum
to_rotation, from_rotation   conversion to and from scipy's Rotation (scipy optional)
principal_axes           moments and axes of an inertia tensor (every ``inertia`` takes tensors too)
read_dat, write_dat      the original free-format data files
experiments              the published experiments (``frb-example NAME``)
compare                  work-precision table of the methods on one problem (``frb-compare``)
set_num_threads, get_num_threads   threads of the compiled batched loops (OpenMP)
cpu_dispatch, set_cpu_target       SIMD target of the batched flows (``frb.simd``, FRB_CPU_TARGET)
show_config              how this installation was built (version, compilers, flags, OpenMP)
frb.dask                 batches as dask arrays, chunk by chunk (optional extra ``dask``)

Quaternions are **scalar first** everywhere in frb, ``q = (q0, q1, q2, q3)``, ``Q = E(q)``
(scipy's ``Rotation.as_quat`` is scalar last: convert with to_rotation / from_rotation).
Every public function takes real numbers under one rule (``frb._validate``): bools, complex
numbers, strings and None are refused with TypeError naming the argument.
"""
import os as _os

# The OpenMP runtime that frb._core loads reads OMP_WAIT_POLICY once, when it loads. Unless the
# user chose a policy, frb's threads wait passively (they sleep between parallel loops instead of
# spinning), so that they never take a core from another process or from the threads of numpy's
# BLAS; the environment is given back unchanged.
_choose_wait_policy = "OMP_WAIT_POLICY" not in _os.environ
if _choose_wait_policy:
    _os.environ["OMP_WAIT_POLICY"] = "PASSIVE"
try:
    try:
        from . import _core, _build_info
    except ImportError as _exc:  # the source folder, or an extension that does not load
        _here = _os.path.dirname(_os.path.abspath(__file__))
        if not any(_f.startswith("_core.") and not _f.endswith((".pyi", ".py"))
                   for _f in _os.listdir(_here)):
            raise ImportError(
                f"'import frb' found the source folder {_here}, which has no compiled extension: "
                "frb must be installed before it is imported. Install it (pip install .), or for "
                "development in place: pip install meson-python meson ninja numpy, then "
                "pip install --no-build-isolation -e . ; or run Python outside the source tree "
                "(the tests run from tests/). See README.md, section Install.") from None
        raise ImportError(f"frb could not load its compiled extension frb._core from {_here}: "
                          f"{_exc}") from _exc
finally:
    if _choose_wait_policy:
        del _os.environ["OMP_WAIT_POLICY"]

from .flows import frb_step, quat_step
from . import derivatives
from .inertia import kinetic_energy, principal_axes
from .rotations import (hat, quat_mul, quat_conj, quat_to_matrix, matrix_to_quat,
                        spatial_momentum, to_rotation, from_rotation)
from .io import read_dat, write_dat
from .dmv import dmv_step, dmv_integrate
from . import dmv, splitting, torques, engine, methods, wheel_laws
from .engine import integrate
from .wheels import Wheels
from .trajectory import Trajectory
from ._messages import IntegrationError, NotCompiledWarning
from .methods import METHODS
from . import experiments
from .workprecision import compare
from .threads import set_num_threads, get_num_threads
from . import simd
from .simd import cpu_dispatch, set_cpu_target
from ._config import show_config

#: The version of frb (the one version of meson.build, the metadata and the manual).
__version__: str = _build_info.VERSION

__all__ = ["compare", "experiments", "integrate", "Trajectory", "IntegrationError", "METHODS",
           "Wheels", "wheel_laws", "NotCompiledWarning",
           "torques", "engine", "methods", "frb_step", "quat_step", "derivatives", "dmv_step",
           "dmv_integrate",
           "dmv", "splitting", "hat", "quat_mul", "quat_conj", "quat_to_matrix",
           "matrix_to_quat", "kinetic_energy", "spatial_momentum", "to_rotation", "from_rotation",
           "read_dat", "write_dat", "set_num_threads", "get_num_threads", "principal_axes",
           "simd", "cpu_dispatch", "set_cpu_target", "show_config"]
