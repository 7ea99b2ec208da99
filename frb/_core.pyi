"""Type stub of the compiled extension ``frb._core`` (f2py, from fortran/bind_*.f90).

The signatures are those f2py generates (``print(frb._core.<name>.__doc__)``): inputs are
converted by f2py (anything array-like of real numbers, copied to float64 in Fortran order if
needed); ``in/output`` arrays are modified in place and must be float64 arrays in Fortran order
of the stated shape (the Python layer passes the transposes ``x.T`` of C-ordered arrays).
Array shapes are in the Fortran order of the binding; ``n`` bodies, ``nh`` and ``ni`` are 1
or ``n`` (one value shared by the batch, or one per body). Routines used only by the tests and
benchmarks are in ``frb._testing`` (built with the meson option ``testing``).
"""
from numpy.typing import ArrayLike, NDArray
import numpy as np

_F64 = NDArray[np.float64]

# checks (fortran/bind_core.f90)
def check_single_matrix(m: ArrayLike, qq: ArrayLike, inertia: ArrayLike, tol: float) -> int: ...
def check_single_matrix_quat(m: ArrayLike, qq: ArrayLike, inertia: ArrayLike, tol: float
                             ) -> tuple[int, _F64]: ...
def check_single_quat(m: ArrayLike, q: ArrayLike, inertia: ArrayLike, tol: float) -> int: ...
def openmp_info() -> tuple[int, int]: ...
def cpu_target_select(requested: int) -> tuple[int, int]: ...

# exact free flow: one body, (m (3,), qt (3, 3), info)
def frb_step_single(m: ArrayLike, qt: ArrayLike, h: float, inertia: ArrayLike, quadrature: int,
                    tol: float) -> tuple[_F64, _F64, int]: ...
def quat_step_single(m: ArrayLike, q: ArrayLike, h: float, inertia: ArrayLike, quadrature: int,
                     tol: float) -> tuple[_F64, _F64, int]: ...

# exact free flow: batches (m (3, n), qt (3, 3, n) or q (4, n), h (nh,), inertia (3, ni));
# (m_out, attitude_out, info, where)
def frb_step_batch(m: ArrayLike, qt: ArrayLike, h: ArrayLike, inertia: ArrayLike, quadrature: int,
                   tol: float, threads: int = ...) -> tuple[_F64, _F64, int, int]: ...
def frb_step_batch_f(m: ArrayLike, qf: ArrayLike, h: ArrayLike, inertia: ArrayLike,
                     quadrature: int, tol: float,
                     threads: int = ...) -> tuple[_F64, _F64, int, int]: ...
def quat_step_batch(m: ArrayLike, q: ArrayLike, h: ArrayLike, inertia: ArrayLike,
                    quadrature: int, tol: float,
                    threads: int = ...) -> tuple[_F64, _F64, int, int]: ...
def quat_step_batch_f(m: ArrayLike, q: ArrayLike, h: ArrayLike, inertia: ArrayLike,
                      quadrature: int, tol: float,
                      threads: int = ...) -> tuple[_F64, _F64, int, int]: ...

# the compiled loop of frb.splitting.integrate (fortran/bind_splitting.f90): m (3,), qt (3, 3),
# m_out (3, nk), qt_out (3, 3, nk) updated in place; kinds an int32 array (nf,)
# discrete Moser-Veselov (fortran/bind_dmv.f90)
def dmv_step_single(m: ArrayLike, q: ArrayLike, h: float, inertia: ArrayLike,
                    order: int) -> tuple[_F64, _F64]: ...
def dmv_step_batch(m: ArrayLike, q: ArrayLike, h: ArrayLike, inertia: ArrayLike, order: int,
                   threads: int = ...) -> tuple[_F64, _F64]: ...
def dmv_integrate_single(m: ArrayLike, q: ArrayLike, h: float, inertia: ArrayLike, order: int,
                         nsteps: int, tol: float) -> tuple[_F64, _F64, int, int]: ...
def dmv_integrate_batch(m: ArrayLike, q: ArrayLike, h: ArrayLike, inertia: ArrayLike, order: int,
                        nsteps: int, threads: int = ...) -> tuple[_F64, _F64]: ...
def dmv_integrate_checked(m: ArrayLike, q: ArrayLike, h: ArrayLike, inertia: ArrayLike,
                          order: int, nsteps: int, tol: float,
                          threads: int = ...) -> tuple[_F64, _F64, int, int, int]: ...
def dmv_check_batch(m: ArrayLike, q: ArrayLike, h: ArrayLike, inertia: ArrayLike, tol: float,
                    threads: int = ...) -> tuple[int, int]: ...
