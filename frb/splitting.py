"""Symmetric splitting methods for torqued rigid bodies.

The equations of a rigid body with a torque,

    m' = m x (m / I) + f(m, Q),     Q' = Q hat(m / I),

are split into the free rigid body ``A`` (solved exactly by
:func:`frb.flows.frb_step`) and the torque part ``B``.  One step of length
``h`` of a symmetric method with coefficients ``a_1..a_{s+1}``,
``b_1..b_s`` is the composition (applied left to right)

    A(a_1 h) B(b_1 h) A(a_2 h) ... B(b_s h) A(a_{s+1} h) B(b_s h) ... A(a_2 h) B(b_1 h) A(a_1 h)

(``2s+1`` flows ``A`` and ``2s`` flows ``B``); consistency requires
``2(a_1 + ... + a_s) + a_{s+1} = 1`` and ``2(b_1 + ... + b_s) = 1``.
Flows with a zero coefficient are skipped and the two neighbouring flows of the
same kind merged, so ``STRANG = ((1/2, 0), (1/2,))`` is ``A(h/2) B(h) A(h/2)``.

Torques
-------
A torque is either a torque of :mod:`frb.torques` (built in, such as :func:`constant_field`,
the torque of a body in a constant spatial field of example 1 of Algorithm 903, or a
:class:`frb.torques.UserTorque`), or the flow of its part of the vector field: any other
callable ``flow(m, Q, t) -> (m_new, Q_new)`` that advances the state over time ``t`` (``t`` may
be negative or zero).  A flow receives ``m`` as a float64 array of shape ``(3,)`` and ``Q`` of
shape ``(3, 3)``, must not modify them in place, and returns arrays (or array-likes) of the
same shapes.  The order of the splitting method is retained if the flow is exact, or at least
as accurate as the method.

The engine
----------
With ``torque=None`` or a torque of :mod:`frb.torques`, :func:`integrate` is a thin wrapper over
the engine of :func:`frb.integrate` (method ``EXACT`` for a free body, else the splitting): the
same numbers as ``frb.integrate(m0, Q0, inertia, h, nsteps, method=..., torque=...)``, bit for
bit, with the attitude carried as a unit quaternion and returned as matrices.  A torque flow
(any other callable) is applied from a Python loop whose free flows call the compiled exact
step (inputs are validated once; the flow's results are checked after each call).

Splitting coefficient sets: :data:`COEFFICIENT_SETS` (``RKN6_14``, ``STRANG``, ``YOSHIDA4``); the
methods of :func:`frb.integrate`, with their properties: :data:`frb.METHODS`.
"""

from __future__ import annotations

from typing import Any, Callable, Literal, Tuple

import numpy as np
from numpy.typing import ArrayLike, NDArray

from . import _numbers_table as _sn
from . import _validate
from ._kept import check_kept_states, kept_count, kept_steps
from ._messages import IntegrationError, check_message
from ._progress import Progress
from ._run import Request, Route, check, execute, free_flow, is_rotation_matrix, prepare
from .inertia import tensor_frame
from .methods import METHODS, SPLITTING
from .schedules import COEFFICIENT_SETS, RKN6_14, STRANG, coefficients as _coefficients, plan, \
    schedule
from .torques import (AttitudeControl, ConstantField, GravityGradient, HeavyTop, LinearDamping, Rotor,
                      TorqueSum, UserTorque, constant_field)
from .threads import resolve as resolve_threads
from .trajectory import Trajectory

__all__ = ["RKN6_14", "STRANG", "COEFFICIENT_SETS", "ConstantField", "constant_field", "integrate"]

#: Torques that run in the compiled loop: the built-in ones (their exact types, which have a
#: compiled form; a subclass may change the torque and is taken as a flow) and user torques.
_ENGINE_TORQUES = frozenset({ConstantField, HeavyTop, GravityGradient, LinearDamping, Rotor,
                             AttitudeControl, TorqueSum, UserTorque})

#: A torque flow of :func:`integrate`: ``flow(m, Q, t) -> (m_new, Q_new)``, the exact flow of
#: the torque over time ``t`` from the state ``m`` (3,), ``Q`` (3, 3) (read-only).
TorqueFlow = Callable[[NDArray[np.float64], NDArray[np.float64], float],
                      Tuple[ArrayLike, ArrayLike]]

#: The route of :func:`integrate`.
ROUTE = Route("frb.splitting.integrate", {"m": "m0", "attitude": "Q0", "h": "h",
                                          "inertia": "inertia"}, forms=("matrix",), batch=False,
              terse=True)
#: The keywords of :func:`integrate` besides its named parameters, with their defaults.
OPTIONS: dict[str, Any] = {"quadrature": 0, "coefficients": None, "progress": False,
                           "threads": None, "t0": 0.0, "wheels": None, "wheel_law": None}


def _check_torque_result(res: Any, name: str = "torque"
                         ) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    try:
        m_new, Q_new = res
    except TypeError as exc:
        raise TypeError(f"{name} must return a pair (m_new, Q_new), got "
                        f"{type(res).__name__}") from exc
    except ValueError as exc:
        raise ValueError(f"{name} must return a pair (m_new, Q_new)") from exc
    m_new = _validate.real_array(m_new, f"the m returned by {name}", finite=False)
    Q_new = _validate.real_array(Q_new, f"the Q returned by {name}", finite=False)
    if m_new.shape != (3,) or Q_new.shape != (3, 3):
        raise ValueError(
            f"{name} must return m of shape (3,) and Q of shape (3, 3), "
            f"got {m_new.shape} and {Q_new.shape}"
        )
    return m_new, Q_new


def _rotation(Q: NDArray[np.float64], name: str) -> None:
    """Raise unless Q (a float64 array of shape (3, 3)) is a rotation matrix (the compiled
    check of the attitudes)."""
    if not is_rotation_matrix(np.ascontiguousarray(Q)):
        tol = _validate.ORTHOGONALITY_TOLERANCE
        raise ValueError(f"{name} must be a rotation matrix (Q^T Q = 1 within {tol}, det Q = +1)")


def _torque_label(torque: object) -> str:
    return getattr(torque, "__name__", None) or repr(torque)


def _torque_state(res: Any, Q_prev: NDArray[np.float64], label: str = "torque",
                  step: int | None = None) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """Check a torque result; a new Q (not the object passed in) is checked as a rotation."""
    where = "" if step is None else f" (step {step})"
    m_new, Q_new = _check_torque_result(res, f"torque {label}{where}" if step is not None else "torque")
    if not np.isfinite(m_new).all():
        raise ValueError(f"torque {label}{where} returned a non-finite m")
    if Q_new is not Q_prev:
        if not np.isfinite(Q_new).all():
            raise ValueError(f"torque {label}{where} returned a non-finite Q")
        _rotation(Q_new, f"the Q returned by torque {label}{where}")
    return m_new, Q_new


def _apply_torque(torque: TorqueFlow, m: NDArray[np.float64], Q: NDArray[np.float64], tau: float,
                  step: int) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """The torque flow over tau at step ``step``, with Q read-only (the torque must not modify it
    in place: a changed Q would escape the rotation check) and its result checked."""
    label = _torque_label(torque)
    Q.flags.writeable = False
    try:
        res = torque(m, Q, tau)
    except ValueError as exc:
        if "read-only" in str(exc):
            raise ValueError(f"torque {label} (step {step}) must not modify Q in place; return a "
                             f"new array instead ({exc})") from exc
        raise ValueError(f"torque {label} (step {step}): {exc}") from exc
    return _torque_state(res, Q, label, step)


def _free_flow(m: NDArray[np.float64], Q: NDArray[np.float64], tau: float,
               inertia: NDArray[np.float64], quadrature: int
               ) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """The exact free flow of one body over time tau (inputs validated); ValueError when the
    state is not one the flow takes (|m| grown by the torque beyond the phase limit)."""
    m1, Q1, code = free_flow(m, np.ascontiguousarray(Q), tau, inertia, quadrature)
    if code:
        raise ValueError(check_message(code, {"m": "m", "attitude": "Q"}))
    return m1, Q1


def _splitting_failure(step: int, saved: NDArray[np.float64], m_out: NDArray[np.float64]
                       ) -> IntegrationError:
    """The IntegrationError of a state that became non-finite at ``step``, placed among the kept
    steps ``saved`` (m_out: the kept momenta, filled up to the failure)."""
    j = int(np.searchsorted(saved, step))
    k = int(saved[j]) if j < len(saved) else step
    prev = int(saved[j - 1]) if j > 0 else None
    if k == step and prev == step - 1:
        where = f"at step {step}"
    elif prev is None:
        where = f"by step {k} (at step {step};"
    else:
        where = f"between steps {prev} and {k} (at step {step};"
    g = float(_validate.norm3(m_out[j - 1])) if j > 0 else float("nan")
    known = f" |m| = {g:.3g} at step {prev})" if where.endswith(";") else \
        f" (|m| = {g:.3g} at step {prev})"
    return IntegrationError(
        f"splitting: the state became non-finite {where}{known}: an overflow, or |m| grown by "
        "the torque until a free flow would turn the body by more than "
        f"{_validate.PHASE_LIMIT:.0e} radians", "SPLITTING", step, 0)


def integrate(m0: ArrayLike, Q0: ArrayLike, inertia: ArrayLike, h: float, nsteps: int,
              torque: TorqueFlow | None = None, method: str = "RKN6_14",
              save_every: int | Literal["final"] | None = 1, **options: Any) -> Trajectory:
    """Integrate a (torqued) rigid body with a symmetric splitting method.

    Parameters
    ----------
    m0 : array_like, shape (3,)
        Initial body angular momentum (any norm).
    Q0 : array_like, shape (3, 3)
        Initial attitude matrix (columns = body axes in the fixed frame).
    inertia : array_like, shape (3,), (3, 3) or (1, 3, 3)
        Positive principal moments of inertia, in any order; or an inertia tensor, symmetric
        positive definite, in the body frame of ``Q0`` (``m0``, ``Q0``, the torque or the
        torque flow and the trajectory stay in that frame; the run is made in its principal
        frame, :mod:`frb.inertia`).
    h : float
        Step length (finite; negative integrates backwards).
    nsteps : int
        Number of steps, ``>= 0``.
    torque : a torque of :mod:`frb.torques`, a callable flow, or None
        A torque (e.g. :func:`constant_field`; then the run is the engine's, the numbers of
        :func:`frb.integrate` with the same method and torque, bit for bit), or the flow of the
        torque part, ``flow(m, Q, t) -> (m_new, Q_new)`` (see the module documentation).
        ``None`` means a free body: each step is then a single exact flow ``A(h)``.
    method : {"RKN6_14", "STRANG"}
        Named splitting method (case-insensitive); ignored when
        ``coefficients`` is given.
    quadrature : int
        Free flows as in :func:`frb.flows.frb_step`: 0 for the exact elliptic integral
        of the third kind, ``1..10`` for Gauss-Legendre quadrature with that
        many nodes (semi-exact flow).
    coefficients : pair of sequences, optional
        ``(a, b)`` = ``(a_1..a_{s+1}), (b_1..b_s)``, the first half of a
        symmetric method (see the module documentation); must be consistent to
        within 1e-10.
    save_every : int, None or "final"
        Keep the states after the steps ``0, save_every, 2 save_every, ...`` and always the
        last; ``None`` (or ``"final"``) keeps the final state only.
    progress : bool
        Show a progress bar (tqdm when installed, else a line on stderr).
    **options
        ``quadrature``, ``coefficients``, ``progress``, ``threads``, ``t0``, ``wheels``,
        ``wheel_law`` (below); any other keyword is a TypeError naming it.
    wheels, wheel_law : frb.Wheels, law of frb.wheel_laws or callable, optional
        Reaction wheels and the law of their motor torques, as for :func:`frb.integrate`
        (with a torque of :mod:`frb.torques` or none; the splitting is split in the total
        momentum, the attitude held as a quaternion and returned as ``Q``).
    threads : int, optional
        Accepted for a uniform interface with the batched integrators: one body runs on one
        thread whatever its value (it is validated as they validate it).
    t0 : float
        The time of the initial state (``t`` holds ``t0 + k h``; a time-dependent torque sees
        those times).

    Returns
    -------
    frb.Trajectory
        ``t``, ``m``, ``Q`` at the kept times ``k h`` (all ``nsteps + 1`` of them, ``0, h, ...,
        nsteps h``, by default; ``form`` is ``"matrix"``). The inputs are not modified.

    Raises
    ------
    TypeError
        An argument that is not (an array of) real numbers (the rule of :mod:`frb._validate`),
        a count that is not an integer.
    ValueError
        Wrong shapes, non-finite values, inertia not positive, ``Q0`` not a rotation,
        ``nsteps`` outside 0..2**31 - 2, a free flow turning the body by more than 1e18
        radians (``|h| |m0| / I_min``), a torque whose result is not a finite pair of the
        right shapes or that modifies ``Q`` in place (the message names the torque and step).
    IntegrationError
        The state became non-finite (overflow) or a free flow grew beyond the limit during the
        run; the message names the step.

    Notes
    -----
    The compiled loop is entered in segments of about 0.1 s of work, the state carried
    between them: Ctrl-C stops a long run within a fraction of a second (KeyboardInterrupt),
    and the results are those of an uninterrupted loop bit for bit.

    Examples
    --------
    Example 1 of Algorithm 903 in short: a body in a constant field, RKN6_14:

    >>> import numpy as np
    >>> import frb
    >>> from frb.splitting import constant_field
    >>> tr = frb.splitting.integrate([0.3, 0.5, 0.8], np.eye(3), [1.0, 2.0, 3.0], 0.5, 20,
    ...                              torque=constant_field([0.0, 0.0, 1.0]))
    >>> tr.t[-1], tr.m.shape, tr.Q.shape
    (np.float64(10.0), (21, 3), (21, 3, 3))
    """
    frame = tensor_frame(inertia, m0)
    if frame is not None:   # an inertia tensor: the run in its principal frame (frb.inertia)
        engine_torque = type(torque) in _ENGINE_TORQUES or isinstance(torque, UserTorque)
        return frame.splitting(integrate, m0, Q0, h, nsteps, torque, engine_torque, method=method,
                               save_every=save_every, **options)
    opts = _validate.options_of(options, OPTIONS, "splitting.integrate") if options else OPTIONS
    coefficients = opts["coefficients"]
    a, b = _coefficients(method, coefficients)
    if torque is not None and not callable(torque):
        raise TypeError(
            "torque must be None or a callable flow(m, Q, t) -> (m_new, Q_new), "
            f"got {type(torque).__name__}"
        )
    if torque is not None and type(torque) not in _ENGINE_TORQUES and \
            not isinstance(torque, UserTorque) and not _validate.takes_positional(torque, 3):
        raise TypeError(f"torque {_torque_label(torque)} must take three arguments, "
                        "flow(m, Q, t) -> (m_new, Q_new)")
    name = "SPLITTING" if coefficients is not None else str(method).upper()
    wheels, law = opts["wheels"], opts["wheel_law"]
    with_wheels = wheels is not None or law is not None
    if torque is None or type(torque) in _ENGINE_TORQUES or isinstance(torque, UserTorque):
        # the time loop (method EXACT for a free body, else the splitting), with the attitude
        # held as the matrix it is (as a quaternion with reaction wheels)
        free = torque is None and not with_wheels
        info = METHODS["EXACT"] if free else (
            SPLITTING if coefficients is not None else METHODS[name])
        run = prepare(Request(ROUTE, info, m0, Q0, inertia, h, nsteps, torque=torque,
                              coefficients=None if free else (a, b),
                              save_every=save_every, quadrature=opts["quadrature"],
                              threads=_one_thread(opts["threads"]),
                              progress=opts["progress"], t0=opts["t0"], name=name,
                              wheels=wheels, wheel_law=law))
        out = execute(run)
        m_out = out.m[:, 0]
        if out.failure is not None:
            raise _splitting_failure(out.failure.step, kept_steps(run.nsteps, run.save_every),
                                     m_out)
        kept: dict[str, Any] = dict(wheels=run.wheel_run.wheels,
                                    wheel_momentum=None if out.h is None else out.h[:, 0])
        if run.natt == 4:
            return Trajectory(run.times(), m_out, out.attitude[:, 0], "matrix", name,
                              run.inertia_given[0], torque, **kept)
        return Trajectory(run.times(), m_out, None, "matrix", "EXACT" if free else name,
                          run.inertia_given[0], torque, out.attitude[:, 0].reshape(-1, 3, 3),
                          **kept)
    if with_wheels:
        raise ValueError("wheels and wheel_law take a torque of frb.torques (or none), not a "
                         f"torque flow such as {torque!r}: use frb.integrate with a torque")
    return _flow_loop(Request(ROUTE, METHODS["EXACT"], m0, Q0, inertia, h, nsteps,
                              torque=torque, coefficients=(a, b), save_every=save_every,
                              name=name), opts)


def _one_thread(threads: Any) -> int:
    """threads checked as the batched routes check it; one body runs on one thread."""
    resolve_threads(threads)
    return 1


def _flow_loop(req: Request, opts: dict[str, Any]) -> Trajectory:
    """integrate with a torque flow (``req.torque``, splitting ``req.coefficients``): a Python
    loop of the compiled free flows and the flow."""
    coef = req.coefficients
    assert coef is not None
    torque, name = req.torque, req.name
    c = plan(*coef)[1]
    # the checks of the time loop's route (a run of no step), the phase of the longest free flow
    run = prepare(req._replace(nsteps=0, torque=None, coefficients=None, save_every=None,
                               quadrature=opts["quadrature"],
                               threads=_one_thread(opts["threads"]),
                               progress=opts["progress"], t0=opts["t0"]))
    check(run)
    m, Q, I = run.m[0].copy(), run.attitude[0].reshape(3, 3).copy(), run.inertia[0]
    h = run.h_given
    phase = _validate.phase_scalar(c * abs(h), float(_validate.norm3(m)), float(I.min()))
    if phase > _validate.PHASE_LIMIT:
        from ._messages import phase_message
        raise ValueError(phase_message(f"h (the longest free flow of a step is {c:.4g} h)",
                                       phase))
    nsteps = _validate.count(req.nsteps, "nsteps", 0, _validate.MAX_STEPS)
    save_every = _validate.save_every(req.save_every)
    check_kept_states(kept_count(nsteps, save_every), 1, 12)
    saved = kept_steps(nsteps, save_every)      # (float64, read-only)
    t0 = run.t0_given
    _validate.times_in_range(t0, run.h, nsteps, ROUTE.names["h"])
    t_out = t0 + h * saved
    m_out = np.empty((len(saved), 3))
    Q_out = np.empty((len(saved), 3, 3))
    if saved[0] == 0:
        m_out[0] = m
        Q_out[0] = Q
    quadrature = int(run.config[_sn.RUN_QUADRATURE - 1])
    flows = [(kind, frac * h) for kind, frac in schedule(*coef)]
    bar = Progress(run.progress, nsteps, 1, ROUTE.label + " " + name)
    try:
        j = 1 if saved[0] == 0 else 0
        for k in range(1, nsteps + 1):
            for kind, tau in flows:
                if kind == "A":
                    try:
                        m, Q = _free_flow(m, Q, tau, I, quadrature)
                    except ValueError as exc:   # |m| grown by the torque beyond the phase limit
                        raise IntegrationError(f"splitting: the free flow of step {k} failed: "
                                               f"{exc}", "SPLITTING", k, 0) from None
                else:
                    m, Q = _apply_torque(torque, m, Q, tau, k)
            if j < len(saved) and saved[j] == k:
                m_out[j] = m
                Q_out[j] = Q
                j += 1
            bar.update(1)
    finally:
        bar.close()
    return Trajectory(t_out, m_out, None, "matrix", name, run.inertia_given[0], torque, Q_out)
