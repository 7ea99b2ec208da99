"""frb.integrate: one compiled, batched entry point for every integrator of the field.

:func:`integrate` runs one of the methods of :data:`frb.methods.METHODS` over a batch of bodies
with any torque of :mod:`frb.torques`: it declares its arguments (a route of :mod:`frb._run`),
prepares one run and executes it in the one compiled time loop (``fortran/engine.f90``).

Equations: ``m' = m x I^-1 m + T_b(t, Q, m)``, ``Q' = Q hat(I^-1 m)``; ``m`` the body angular
momentum, ``I`` the principal moments, ``Q`` the attitude (columns = body axes in the fixed
frame), ``T_b`` the body torque (:mod:`frb.torques`). Quaternions are **scalar first**,
``q = (q0, q1, q2, q3)``, ``Q = E(q)`` (scipy's ``Rotation`` is scalar last).

The loop holds the attitude as a unit quaternion (scalar first), or for the exact-flow methods
started from a matrix, as that matrix (the free flow of :func:`frb.frb_step`); the trajectory
gives both forms (``Trajectory.q``, ``Trajectory.Q``).
"""
from __future__ import annotations

from typing import Any, Literal

import numpy as np
from numpy.typing import ArrayLike, NDArray

from . import _numbers_table as _sn

from ._messages import IntegrationError
from ._run import SENSITIVITY_PARTS, Request, Route, execute, prepare
from ._validate import options_of
from .inertia import tensor_frame
from .methods import MAX_INERTIA_RATIO, METHODS, NEWTON_MAX_ITER, NEWTON_RTOL, MethodInfo, method_of
from .trajectory import Sensitivities, TorqueLike, Trajectory

__all__ = ["integrate", "Trajectory", "IntegrationError", "METHODS", "MethodInfo", "TorqueLike",
           "NEWTON_RTOL", "NEWTON_MAX_ITER", "MAX_INERTIA_RATIO"]

#: The route of :func:`integrate`.
ROUTE = Route("frb.integrate", {"m": "m0", "attitude": "attitude0", "h": "h", "inertia": "inertia"},
              plural=True)

#: The keywords of :func:`integrate` besides its named parameters, with their defaults.
OPTIONS: dict[str, Any] = {"coefficients": None, "quadrature": 0, "threads": None,
                           "progress": False, "t0": 0.0, "wheels": None, "wheel_law": None,
                           "sensitivities": None}


def integrate(m0: ArrayLike, attitude0: ArrayLike, inertia: ArrayLike, h: float, nsteps: int, *,
              method: str | None = None, torque: TorqueLike | None = None,
              save_every: int | Literal["final"] | None = 1, **options: Any) -> Trajectory:
    """Integrate one or many (torqued) rigid bodies with any method of the field.

    Parameters
    ----------
    m0 : array_like, shape (3,) or (N, 3)
        Initial body angular momentum.
    attitude0 : array_like, shape (4,), (N, 4), (3, 3) or (N, 3, 3)
        Initial attitude: unit quaternions (scalar first, ``|q| = 1`` within 1e-10) or rotation
        matrices (columns = body axes in the fixed frame). A quaternion is taken as given, not
        normalised: the methods that turn it by unit quaternions (all but ``RK4`` and
        ``SYMROT``, which normalise every step) keep its norm to rounding.
    inertia : array_like, shape (3,), (N, 3), (3, 3), (1, 3, 3) or (N, 3, 3)
        Principal moments of inertia, positive, in any order; or inertia tensors, symmetric
        positive definite, in the body frame of ``attitude0``: (3, 3) for all bodies (for
        exactly N = 3 bodies (3, 3) is the moments of each body: give a shared tensor as
        (1, 3, 3)), (N, 3, 3) one per body. ``m0``, the attitude, the torque and the trajectory
        stay in that frame; the run is made in the principal frame (:mod:`frb.inertia`), at no
        cost per step except for a torque that must then be called from Python (a user
        torque, or a built-in one with a tensor per body).
    h : float
        Step length (negative integrates backwards).
    nsteps : int
        Number of steps, ``0 <= nsteps <= 2**31 - 2``.
    method : str
        Case-insensitive name, one of :data:`frb.methods.METHODS` (``frb.METHODS[name]``
        gives its reference, order and properties).
    torque : None, a torque of :mod:`frb.torques`, or callable ``torque(t, Q) -> T_b``
        ``None`` for a free body. A callable receives ``Q`` of shape ``(N, 3, 3)`` and returns
        ``(N, 3)``; it is called once per stage for the whole batch.
    save_every : int, None or "final"
        Keep the states after the steps ``0, save_every, 2 save_every, ...`` and always the last;
        ``None`` (or ``"final"``) keeps the final state only (K = 1), so that a long run of a
        large batch needs memory for its current state only.
    coefficients : pair of sequences, optional
        ``(a, b)``, the first half of a symmetric splitting of the exact free flow and the torque
        kick (see :mod:`frb.splitting`); replaces ``method``.
    quadrature : int
        Free flows of the exact-flow splittings: 0 exact, ``1..10`` Gauss-Legendre nodes.
    **options
        ``coefficients``, ``quadrature``, ``threads``, ``progress``, ``t0``, ``wheels``,
        ``wheel_law`` (below); any other keyword is a TypeError naming it.
    threads : int, optional
        Threads sharing the chunks of bodies (default: :func:`frb.get_num_threads`); the
        results are the same bit for bit for every count. A user torque runs on one thread
        (the Python callable needs the GIL; it is called once per stage for the whole batch).
    progress : bool
        Show a progress bar (tqdm when installed, else a line on stderr).
    t0 : float
        The time of the initial state: the states are at ``t0 + k h`` and a time-dependent
        torque sees those times (a run continued from another).
    wheels : frb.Wheels, optional
        Reaction wheels (:mod:`frb.wheels`): their axes and initial axial momenta, for all
        bodies or per body. ``m`` is then the momentum of the body without the wheels' axial
        inertia (``inertia`` too), and the wheel momenta are states of the run
        (``Trajectory.wheel_momentum``, ``Trajectory.total_momentum``).
    wheel_law : optional
        The law of the wheels' motor torques: :func:`frb.wheel_laws.quaternion_feedback`
        (compiled) or a callable ``law(t, Q, m, h) -> u`` (N, nw). Without a law the wheels keep
        their momenta (a gyrostat: :func:`frb.torques.rotor` of momentum ``A h0``). The methods
        that take wheels and their orders: ``MethodInfo.wheels``, ``MethodInfo.wheel_order``.
    sensitivities : bool, str or sequence of str
        Also carry the derivatives of the numerical solution (the exact derivatives of the
        method's discrete map, forward mode through its steps) and keep them with the states:
        ``True`` (or ``"state"``) the state transition matrices ``Phi`` of the kept states
        (``Trajectory.sensitivity``, (K, [N,] 6, 6)); names among ``"state"``, ``"h"``,
        ``"inertia"``, ``"torque"`` for the derivatives with respect to those
        (``Trajectory.sensitivities``). Rows and columns in the order ``(dm, dtheta)``, the
        attitude perturbed in the body frame (``Q~ = Q exp(hat(dtheta))``). For EXACT (free, or
        linear damping), the exact-flow splittings (STRANG, YOSHIDA4, RKN6_14, ``coefficients=``)
        and RK4, with the built-in torques of :mod:`frb.torques` and ``quadrature=0``; other
        methods are refused by name, and so are runs with reaction wheels (``wheels``), with
        :func:`frb.torques.attitude_control` of gain matrices or of a reference that turns or
        is a function of time (gains that are numbers and a fixed reference are
        differentiated), and with :func:`frb.torques.rotor` under EXACT and the exact-flow
        splittings (the gyrostat's flow has no derivatives in frb; RK4 takes a rotor). Inertia
        tensors: the state and ``h`` only.

    Returns
    -------
    Trajectory
        ``t`` (K,), ``m`` (K, 3) or (K, N, 3), ``q`` / ``Q`` and ``attitude`` in the form given.

    Notes
    -----
    The compiled loop is entered in segments of about 0.1 s of work (of steps, and of bodies for
    a batch whose single step takes longer), the state carried between them: Ctrl-C stops a
    run within a fraction of a second (KeyboardInterrupt), and the results are those of an
    uninterrupted loop bit for bit. The compiled work releases the GIL (except with a user
    torque).

    Raises
    ------
    TypeError, ValueError
        Invalid arguments, or a user torque whose result is not a finite (N, 3) array (the
        message names the torque, the method and the step).
    IntegrationError
        An implicit step did not converge (within :data:`NEWTON_MAX_ITER` iterations to
        :data:`NEWTON_RTOL`), had no solution, or the state became non-finite; the message
        names the method, the step and the body.

    Examples
    --------
    A heavy top by the sixth-order splitting RKN6_14, 1000 bodies, every 100th state kept:

    >>> import numpy as np
    >>> import frb
    >>> from frb.torques import heavy_top
    >>> m0 = np.random.default_rng(0).normal(size=(1000, 3))
    >>> q0 = np.tile([1.0, 0.0, 0.0, 0.0], (1000, 1))
    >>> tr = frb.integrate(m0, q0, [0.8, 1.1, 1.7], 0.05, 400, method="RKN6_14",
    ...                    torque=heavy_top(1.0, [0.0, 0.0, 1.0]), save_every=100)
    >>> tr.t
    array([ 0.,  5., 10., 15., 20.])
    >>> tr.m.shape, tr.Q.shape
    ((5, 1000, 3), (5, 1000, 3, 3))
    >>> bool(np.abs(tr.energy[-1] - tr.energy[0]).max() < 1e-6)
    True
    """
    frame = tensor_frame(inertia, m0)
    if frame is not None:   # inertia tensors: the run in their principal frame (frb.inertia)
        return frame.integrate(integrate, m0, attitude0, h, nsteps, method=method, torque=torque,
                               save_every=save_every, **options)
    opts = options if not options else options_of(options, OPTIONS, "integrate")
    name, info, coef = method_of(method, opts.get("coefficients"))
    run = prepare(Request(ROUTE, info, m0, attitude0, inertia, h, nsteps, torque=torque,
                          coefficients=coef, save_every=save_every,
                          quadrature=opts.get("quadrature", 0), threads=opts.get("threads"),
                          progress=opts.get("progress", False), t0=opts.get("t0", 0.0), name=name,
                          wheels=opts.get("wheels"), wheel_law=opts.get("wheel_law"),
                          sensitivities=opts.get("sensitivities")))
    out = execute(run)
    if out.failure is not None:
        raise out.failure
    m, att, hw, vs = out.m, out.attitude, out.h, out.variational
    if run.single:
        m, att, moments = m[:, 0], att[:, 0], run.inertia_given[0]
        hw = None if hw is None else hw[:, 0]
        vs = None if vs is None else vs[:, 0]
    else:
        moments = run.inertia_given
    sens = None if vs is None else _sensitivities(vs, run.variational)
    kept: dict[str, Any] = dict(wheels=run.wheel_run.wheels, wheel_momentum=hw,
                                sensitivities=sens)
    if run.natt == 9:
        return Trajectory(run.times(), m, None, run.form, name, moments, torque,
                          att.reshape(att.shape[:-1] + (3, 3)), **kept)
    return Trajectory(run.times(), m, att, run.form, name, moments, torque, **kept)


def _sensitivities(vs: NDArray[np.float64], parts: int) -> Sensitivities:
    """The parts of the kept variational states vs (..., 6, ncol) (the layout of
    fortran/variational.f90: the initial state, h, the moments, the torque's parameters)."""
    out: dict[str, NDArray[np.float64]] = {}
    c = 0
    for part, width in (("state", 6), ("h", 1), ("inertia", 3), ("torque", None)):
        if not parts & SENSITIVITY_PARTS[part]:
            continue
        if width is None:
            block = vs[..., c:]
            terms = block.shape[-1] // _sn.TORQUE_TERM_REALS
            out[part] = block.reshape(block.shape[:-1] + (terms, _sn.TORQUE_TERM_REALS))
        else:
            out[part] = vs[..., c] if width == 1 else vs[..., c:c + width]
            c += width
    for part, value in out.items():
        if not np.isfinite(value).all():
            raise ValueError(f"sensitivities: the derivative of the state with respect to {part} "
                             "is beyond the float64 range for these values of m0, h and inertia "
                             "(the run's states are finite; ask for the other parts alone)")
    return Sensitivities(**out)
