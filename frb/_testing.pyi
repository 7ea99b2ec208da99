"""Type stub of the compiled extension ``frb._testing`` (f2py, from fortran/bind_testing.f90).

Built only with the meson option ``testing`` (``pip install -Csetup-args=-Dtesting=true .``):
routines for the test suite and the benchmarks, not used by the package. Conventions as in
``frb._core`` (its stub): arrays in the Fortran order of the binding, ``n`` bodies, ``nh`` and
``ni`` 1 or ``n``.
"""
from numpy.typing import ArrayLike, NDArray
import numpy as np

_F64 = NDArray[np.float64]

# exact free flow, nsteps steps without checks: batches (m (3, n), qt (3, 3, n) or q (4, n),
# h (nh,), inertia (3, ni)); (m_out, attitude_out)
def frb_integrate_batch(m: ArrayLike, qt: ArrayLike, h: ArrayLike, inertia: ArrayLike,
                        quadrature: int, nsteps: int,
                        threads: int = ...) -> tuple[_F64, _F64]: ...
def quat_integrate_batch(m: ArrayLike, q: ArrayLike, h: ArrayLike, inertia: ArrayLike,
                         quadrature: int, nsteps: int,
                         threads: int = ...) -> tuple[_F64, _F64]: ...

# elliptic functions and integrals, elementwise over arrays of length n
def ell_carlson(x: ArrayLike, y: ArrayLike, z: ArrayLike,
                p: ArrayLike) -> tuple[_F64, _F64, _F64]: ...
def ell_first_kind(phi: ArrayLike, k: ArrayLike, kp: ArrayLike) -> tuple[_F64, _F64]: ...
def ell_jacobi(u: ArrayLike, k: ArrayLike, kp: ArrayLike) -> tuple[_F64, _F64, _F64, _F64]: ...
def ell_jacobi_series(v: ArrayLike, m: ArrayLike) -> tuple[_F64, _F64, _F64, float]: ...
def ell_third_kind(phi1: ArrayLike, phi2: ArrayLike, nn: ArrayLike, k: ArrayLike, kp: ArrayLike,
                   np: int) -> tuple[_F64, _F64, _F64, _F64]: ...

# the batched DMV kernel (moser_veselov.dmv_integrate_many): m (3, n), q (4, n), h (nh,),
# inertia (3, ni); (m_out, q_out)
def dmv_step_batch(m: ArrayLike, q: ArrayLike, h: ArrayLike, inertia: ArrayLike, order: int,
                   threads: int = ...) -> tuple[_F64, _F64]: ...
def dmv_integrate_batch(m: ArrayLike, q: ArrayLike, h: ArrayLike, inertia: ArrayLike, order: int,
                        nsteps: int, threads: int = ...) -> tuple[_F64, _F64]: ...
# one body through the scalar step dmv_step_one: m (3,), q (4,)
def dmv_step_single(m: ArrayLike, q: ArrayLike, h: float, inertia: ArrayLike,
                    order: int) -> tuple[_F64, _F64]: ...
# lane_math's sin, cos, atan, atan(x)/x, atan2(y, x) and the lanes' variants sincos_near (sin, cos)
# and atanc_near, elementwise over arrays of length n: (s, c, at, atc, at2, s_near, c_near, atc_near)
def lane_math_values(x: ArrayLike, y: ArrayLike) -> tuple[_F64, _F64, _F64, _F64, _F64, _F64, _F64,
                                                          _F64]: ...
# the step of each body with its derivatives by the closed form on dual numbers alone
# (flow_derivatives.free_flow_jacobian): (m_out (3, n), w (4, n), phi (6, 6, n), dh (6, n),
# di (6, 3, n)) of m (3, n), h (n,), inertia (3, n)
def dual_flow_jacobian(m: ArrayLike, h: ArrayLike, inertia: ArrayLike,
                       quadrature: int) -> tuple[_F64, _F64, _F64, _F64, _F64]: ...

# exact gyrostat step without checks: m (3, n), hr (3, nr), h (nh,), inertia (3, ni), nr, nh, ni
# 1 or n; (m_out, w) with q(h) = q w, or (m_out, q_out) from the attitudes q (4, n)
def gyrostat_step_batch(m: ArrayLike, hr: ArrayLike, h: ArrayLike, inertia: ArrayLike,
                        threads: int = ...) -> tuple[_F64, _F64]: ...
def gyrostat_quat_batch(m: ArrayLike, q: ArrayLike, hr: ArrayLike, h: ArrayLike,
                        inertia: ArrayLike, threads: int = ...) -> tuple[_F64, _F64]: ...
