"""Type stub of the compiled extension ``frb._engine`` (f2py, from fortran/engine.pyf).

``engine_integrate`` runs the steps ``k_first + 1 .. k_last`` of the bodies ``b_first ..
b_last`` (1-based) of one method (``family``, ``variant``) without the GIL;
``engine_integrate_gil`` is the same routine holding the GIL, for a user torque ``cb``;
``engine_integrate_builtin`` is it again for a whole run in one call (every body, steps 1 ..
nsteps from t0 = 0) that calls no Python (a built-in torque, or no step): no call-back and no
carried state.
Array shapes are in the Fortran order of the binding (the Python layer passes the transposes
``x.T`` of C-ordered arrays): ``n`` bodies, ``nf`` flows a step, ``nk`` kept states. The
``in/output`` arrays (m, q, ws, m_out, q_out) are updated in place and must be float64 arrays
in Fortran order. Returns ``(status, fail_step, fail_body)``, status 0 when every body ran.
"""
from typing import Any, Callable

from numpy.typing import ArrayLike, NDArray
import numpy as np

_F64 = NDArray[np.float64]

#: The call-back of a user torque: ``cb(n, t, step, qt, m, tb)`` with ``qt`` (3, 3, n) the
#: attitudes and ``m`` (3, n) the momenta, fills and returns ``tb`` (3, n), the body torques.
_UserTorque = Callable[[int, float, int, _F64, _F64, _F64], Any]

def engine_integrate(family: int, variant: int, quadrature: int, kinds: ArrayLike,
                     frac: ArrayLike, tkinds: ArrayLike, tpar: ArrayLike, tuser: int,
                     tbody: ArrayLike, tbody_term: int, nsteps: int, save_every: int,
                     chunk: int, threads: int, b_first: int, b_last: int, k_first: int,
                     k_last: int, h: float, t0: float, m0: ArrayLike, q0: ArrayLike, m: _F64,
                     q: _F64, ws: _F64, inertia: ArrayLike, m_out: _F64, q_out: _F64,
                     cb: _UserTorque,
                     cb_extra_args: tuple[Any, ...] = ...) -> tuple[int, int, int]: ...
def engine_integrate_gil(family: int, variant: int, quadrature: int, kinds: ArrayLike,
                         frac: ArrayLike, tkinds: ArrayLike, tpar: ArrayLike, tuser: int,
                         tbody: ArrayLike, tbody_term: int, nsteps: int,
                         save_every: int, chunk: int, threads: int, b_first: int, b_last: int,
                         k_first: int, k_last: int, h: float, t0: float, m0: ArrayLike,
                         q0: ArrayLike, m: _F64, q: _F64, ws: _F64, inertia: ArrayLike,
                         m_out: _F64, q_out: _F64, cb: _UserTorque,
                         cb_extra_args: tuple[Any, ...] = ...) -> tuple[int, int, int]: ...
def engine_integrate_builtin(family: int, variant: int, quadrature: int, kinds: ArrayLike,
                             frac: ArrayLike, tkinds: ArrayLike, tpar: ArrayLike,
                             tbody: ArrayLike, tbody_term: int, nsteps: int,
                             save_every: int, chunk: int, threads: int, h: float, t0: float,
                             m0: ArrayLike,
                             q0: ArrayLike, inertia: ArrayLike, m_out: _F64,
                             q_out: _F64) -> tuple[int, int, int]: ...
def engine_workspace() -> int: ...
def cpu_target_select(requested: int) -> tuple[int, int]: ...
