"""Type stub of the compiled extension ``frb._core`` (f2py, from fortran/core.pyf).

The signatures are those f2py generates (``print(frb._core.<name>.__doc__)``): inputs are
converted by f2py (anything array-like of real numbers, copied to float64 in Fortran order if
needed); ``in/output`` arrays are modified in place and must be float64 arrays in Fortran order
of the stated shape (the Python layer passes the transposes ``x.T`` of C-ordered arrays).
Array shapes are in the Fortran order of the binding: ``n`` bodies, ``natt`` reals of an
attitude (4: a quaternion, 9: a matrix as Q^T column by column), ``nk`` kept states, ``nh`` and
``ni`` 1 or ``n``. The integer configuration ``config`` of the time loop has the slots
``RUN_*`` of ``frb._numbers_table``. Routines used only by the tests and benchmarks are in
``frb._testing`` (built with the meson option ``testing``). frb._run is the only module that
calls the time loop.
"""
from typing import Any, Callable

from numpy.typing import ArrayLike, NDArray
import numpy as np

_F64 = NDArray[np.float64]

#: The call-back of a user torque: ``cb(n, t, step, qt, m, tb)`` with ``qt`` (3, 3, n) the
#: attitudes and ``m`` (3, n) the momenta, fills and returns ``tb`` (3, n), the body torques.
_UserTorque = Callable[[int, float, int, _F64, _F64, _F64], Any]
# a wheel law: (n, nw, t, step, qt, m, hw, u) -> u
_UserLaw = Callable[[int, int, float, int, _F64, _F64, _F64, _F64], Any]

# the time loop: a segment of a run (the state carried in m, att, ws, and the variational state
# in vs), or a whole run in one call. plan (PLAN_ROWS, flows): kind, fraction of h; terms
# (1 + TORQUE_TERM_REALS, terms): kind, parameters; body (TORQUE_BODY_REALS, bodies); times: t0,
# then h (one, or one per body); vs (nv n,), vs_out (nv n nk,): the variational state, flat (nv = 0
# without, else VARIATIONAL_ROWS times its columns). (status, fail_step, fail_body), status 0
# (INFO_OK) when every body ran
def engine_segment(config: ArrayLike, plan: ArrayLike, terms: ArrayLike, body: ArrayLike,
                   times: ArrayLike, m0: ArrayLike, att0: ArrayLike, inertia: ArrayLike,
                   m: _F64, att: _F64, ws: _F64, m_out: _F64, att_out: _F64, vs: _F64,
                   vs_out: _F64, wheels: ArrayLike, law: ArrayLike, h0: ArrayLike, hw: _F64,
                   h_out: _F64, cb: _UserTorque, lcb: _UserLaw, cb_extra_args: tuple[Any, ...] = ...,
                   lcb_extra_args: tuple[Any, ...] = ...) -> tuple[int, int, int]: ...
def engine_segment_gil(config: ArrayLike, plan: ArrayLike, terms: ArrayLike, body: ArrayLike,
                       times: ArrayLike, m0: ArrayLike, att0: ArrayLike, inertia: ArrayLike,
                       m: _F64, att: _F64, ws: _F64, m_out: _F64, att_out: _F64, vs: _F64,
                       vs_out: _F64, wheels: ArrayLike, law: ArrayLike, h0: ArrayLike, hw: _F64,
                       h_out: _F64, cb: _UserTorque, lcb: _UserLaw,
                       cb_extra_args: tuple[Any, ...] = ...,
                       lcb_extra_args: tuple[Any, ...] = ...) -> tuple[int, int, int]: ...
def engine_whole(config: ArrayLike, plan: ArrayLike, terms: ArrayLike, body: ArrayLike,
                 times: ArrayLike, m0: ArrayLike, att0: ArrayLike, inertia: ArrayLike,
                 m_out: _F64, att_out: _F64, vs_out: _F64, wheels: ArrayLike, law: ArrayLike,
                 h0: ArrayLike, h_out: _F64) -> tuple[int, int, int]: ...

# torque-free steps of one body with its checks: (m_out (3,), att_out (natt,), check code,
# info code)
def free_steps_one(family: int, variant: int, quadrature: int, nsteps: int, m: ArrayLike,
                   att: ArrayLike, h: float, inertia: ArrayLike) -> tuple[_F64, _F64, int, int]: ...

# the checks of n bodies: (check code, first invalid body from 0 or -1, the batch's extremes
# (CHECK_EXTREMES reals, filled in place): largest and smallest nonzero max |m_i|, smallest
# and largest moment, largest phase)
def check_bodies(m: ArrayLike, att: ArrayLike, h: ArrayLike, inertia: ArrayLike, threads: int,
                 extremes: _F64) -> tuple[int, int, _F64]: ...
# the quaternions (4, n) of matrices qt (3, 3, n) = Q^T
def matrix_quaternions(qt: ArrayLike) -> _F64: ...

# one step of EXACT of each body with its derivatives (fortran/flow_derivatives.f90): m (3, n),
# att (natt, n), h (1,) or (n,), inertia (3, n); (m_out, att_out, phi (6, 6, n), dh (6, n),
# status), and the derivatives in the moments (di (6, 3, n), status)
def flow_jacobian(m: ArrayLike, att: ArrayLike, h: ArrayLike, inertia: ArrayLike, quadrature: int,
                  threads: int) -> tuple[_F64, _F64, _F64, _F64, int]: ...
def flow_inertia_jacobian(m: ArrayLike, h: ArrayLike, inertia: ArrayLike, quadrature: int,
                          threads: int) -> tuple[_F64, int]: ...

def openmp_info() -> tuple[int, int]: ...
def cpu_target_select(requested: int) -> tuple[int, int]: ...
