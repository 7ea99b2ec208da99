"""JAX functions of frb's exact flows and integrators, differentiable by frb's exact derivatives.

``frb.jax`` needs JAX (the ``jax`` extra: ``pip install 'frb[jax]'``) and its 64-bit mode,
enabled before the first call::

    import jax
    jax.config.update("jax_enable_x64", True)
    import frb.jax

* :func:`quat_step`, :func:`frb_step`: one exact step of the free rigid body;
* :func:`integrate`: a run of :func:`frb.integrate` (``EXACT``, free or with linear damping, the
  exact-flow splittings ``STRANG``, ``YOSHIDA4``, ``RKN6_14`` and ``coefficients=`` with the
  built-in compiled torques, and ``RK4``: the methods with sensitivities), its kept states.

Each is a :func:`jax.custom_jvp` function: its value is computed by the compiled frb code through
:func:`jax.pure_callback` (the values are those of :func:`frb.quat_step`, :func:`frb.frb_step`
and :func:`frb.integrate` bit for bit), and its derivatives are frb's exact derivatives
(:mod:`frb.derivatives`; ``Trajectory.sensitivities``): the state transition matrix ``Phi`` and
the derivatives with respect to the step ``h`` and the principal moments. :func:`jax.jit`,
:func:`jax.vmap` (a mapped call is one batched frb call), :func:`jax.jvp`, :func:`jax.grad`,
:func:`jax.jacfwd` and :func:`jax.jacrev` work; derivatives of second order do not (frb gives
the first derivatives only). Only the derivatives asked for are computed: a tangent that is zero
by construction (an argument not differentiated) asks frb for nothing, so ``jax.grad`` with
respect to the initial state does not pay for the derivatives in the moments.

Differentiable arguments: the initial momentum ``m``, the attitude, the step ``h`` and the
principal moments ``inertia``. Not differentiable: ``nsteps``, the method and the torque (its
parameters are constants here; :func:`frb.integrate` gives their sensitivities).

Tangents of the attitude
------------------------
frb's derivatives perturb the attitude in the body frame, ``Q~ = Q exp(hat(dtheta))``,
``q~ = q (1, dtheta/2)``. In JAX the tangent of an attitude is an array of its shape:

* out of a step, the tangent of ``q1`` is the quaternion product ``q1 (0, dtheta1 / 2)`` and that
  of ``Q1`` is ``Q1 hat(dtheta1)``;
* into a step, a tangent ``dq`` of ``q`` (4 components, not necessarily tangent to the unit
  sphere) is read as ``dtheta = 2 vec(conj(q) dq)``: its component along ``q`` is dropped (the
  orthogonal projection onto the tangent space of the unit sphere, that is the derivative of
  ``q / |q|``); a tangent ``dQ`` of ``Q`` is read as ``dtheta = vee(skew(Q^T dQ))``,
  ``skew(A) = (A - A^T) / 2`` (the projection onto the tangent space of SO(3) at ``Q``, the
  derivative of the orthogonal polar factor).

So the derivatives are those of the functions composed with the normalisation of ``q`` (the
polar factor of ``Q``): ``jax.jacfwd(quat_step, argnums=1)`` is ``(4, 4)`` with ``q`` in its
null space.

Examples
--------
>>> import jax, jax.numpy as jnp
>>> jax.config.update("jax_enable_x64", True)
>>> import frb.jax
>>> def angle_z(m0):
...     m1, q1 = frb.jax.quat_step(m0, jnp.array([1.0, 0.0, 0.0, 0.0]), 0.5,
...                                jnp.array([1.0, 2.0, 3.0]))
...     return q1[3]
>>> g = jax.grad(angle_z)(jnp.array([0.3, 0.5, 0.8]))
>>> g.shape
(3,)
"""
from __future__ import annotations

import functools
from typing import Any, Callable

import numpy as np

try:
    import jax
    import jax.numpy as jnp
    from jax.custom_derivatives import SymbolicZero
except ImportError as _exc:  # pragma: no cover - depends on the environment
    raise ImportError("frb.jax needs JAX: pip install 'frb[jax]' (or pip install jax jaxlib)"
                      ) from _exc

from . import _validate
from ._kept import check_kept_states, kept_count
from .derivatives import flow_jacobian
from .engine import integrate as _frb_integrate
from .flows import frb_step as _frb_step
from .flows import quat_step as _quat_step
from .methods import METHODS

__all__ = ["quat_step", "frb_step", "integrate", "require_x64"]

_F64 = np.float64


def require_x64() -> None:
    """Raise RuntimeError unless JAX's 64-bit mode is on (frb computes in float64 only)."""
    if not jax.config.read("jax_enable_x64"):
        raise RuntimeError("frb.jax needs JAX's 64-bit mode: call "
                           "jax.config.update('jax_enable_x64', True) before using it")


# ---- the attitude's tangents ----------------------------------------------------------------

def _quat_tangent_in(q: Any, dq: Any) -> Any:
    """``dtheta = 2 vec(conj(q) dq)`` (the component of ``dq`` along ``q`` dropped)."""
    s, v = q[..., :1], q[..., 1:]
    ds, dv = dq[..., :1], dq[..., 1:]
    return 2.0 * (s * dv - ds * v - jnp.cross(v, dv))


def _quat_tangent_out(q: Any, dtheta: Any) -> Any:
    """The tangent ``q (0, dtheta / 2)`` (quaternion product, scalar first)."""
    s, v = q[..., :1], q[..., 1:]
    w = 0.5 * dtheta
    return jnp.concatenate([-jnp.sum(v * w, axis=-1, keepdims=True), s * w + jnp.cross(v, w)],
                           axis=-1)


def _matrix_tangent_in(Q: Any, dQ: Any) -> Any:
    """``dtheta = vee(skew(Q^T dQ))``."""
    A = jnp.einsum("...ji,...jk->...ik", Q, dQ)
    return 0.5 * jnp.stack([A[..., 2, 1] - A[..., 1, 2], A[..., 0, 2] - A[..., 2, 0],
                            A[..., 1, 0] - A[..., 0, 1]], axis=-1)


def _hat(w: Any) -> Any:
    z = jnp.zeros_like(w[..., 0])
    return jnp.stack([jnp.stack([z, -w[..., 2], w[..., 1]], axis=-1),
                      jnp.stack([w[..., 2], z, -w[..., 0]], axis=-1),
                      jnp.stack([-w[..., 1], w[..., 0], z], axis=-1)], axis=-2)


def _matrix_tangent_out(Q: Any, dtheta: Any) -> Any:
    """The tangent ``Q hat(dtheta)``."""
    return Q @ _hat(dtheta)


_FORMS = {"q": (1, _quat_tangent_in, _quat_tangent_out),
          "Q": (2, _matrix_tangent_in, _matrix_tangent_out)}


def _is_zero(t: Any) -> bool:
    return isinstance(t, SymbolicZero)


def _concrete(*args: Any) -> bool:
    """True when no argument is traced (an eager call outside jit, grad and vmap): its values
    are known, and frb's checks raise their ValueError or TypeError directly. Inside a
    transformation the same checks run in the callback, where JAX reports them as a
    JaxRuntimeError carrying frb's message."""
    return not any(isinstance(a, jax.core.Tracer) for a in args)


def _as_f64(x: Any, name: str) -> Any:
    if not isinstance(x, jax.Array):
        # a concrete input (numbers, lists, numpy arrays of any real dtype, fractions): the
        # input rule of frb (finiteness is checked with the values)
        x = _validate.real_array(x, name, finite=False)
    a = jnp.asarray(x)
    if not jnp.issubdtype(a.dtype, jnp.floating) and not jnp.issubdtype(a.dtype, jnp.integer):
        raise TypeError(f"{name} must be real numbers, got dtype {a.dtype}")
    return a.astype(jnp.float64)


def _shapes(m: Any, att: Any, h: Any, inertia: Any, form: str,
            names: tuple[str, str] | None = None) -> tuple[int, ...]:
    """The batch shape of the arguments (ValueError naming the argument that does not fit;
    ``names``: those of m and the attitude, by default those of the steps)."""
    natt = _FORMS[form][0]
    want = (4,) if form == "q" else (3, 3)
    m_name, att_name = names or ("m", form)
    if m.ndim < 1 or m.shape[-1] != 3:
        raise ValueError(f"{m_name} must have shape (..., 3), got {m.shape}")
    if att.shape[att.ndim - natt:] != want or att.ndim < natt:
        raise ValueError(f"{att_name} must have shape (..., "
                         f"{', '.join(map(str, want))}), got {att.shape}")
    if inertia.ndim < 1 or inertia.shape[-1] != 3:
        raise ValueError(f"inertia must be principal moments of shape (..., 3), got "
                         f"{inertia.shape} (frb.jax takes no inertia tensors)")
    try:
        return tuple(np.broadcast_shapes(m.shape[:-1], att.shape[:att.ndim - natt], h.shape,
                                         inertia.shape[:-1]))
    except ValueError:
        raise ValueError(f"the batch shapes of {m_name} {m.shape[:-1]}, {att_name} "
                         f"{att.shape[:att.ndim - natt]}, h {h.shape} and inertia "
                         f"{inertia.shape[:-1]} do not broadcast") from None


# ---- one step -------------------------------------------------------------------------------

def _step_host(form: str, parts: tuple[str, ...]) -> Callable[..., tuple[np.ndarray, ...]]:
    """The host function of a step: (m, att, h, inertia) with any common batch shape (numpy
    broadcasting) to (m1, att1) and, for each of ``parts`` ("state", "h", "inertia"), the
    derivative; one frb call for the whole batch."""
    natt = _FORMS[form][0]
    tail = (4,) if form == "q" else (3, 3)

    def host(m: Any, att: Any, h: Any, inertia: Any) -> tuple[np.ndarray, ...]:
        m, att, h, inertia = (np.asarray(a, dtype=_F64) for a in (m, att, h, inertia))
        batch = np.broadcast_shapes(m.shape[:-1], att.shape[:att.ndim - natt], h.shape,
                                    inertia.shape[:-1])
        n = int(np.prod(batch))
        if batch == ():
            args: tuple[Any, ...] = (m, att, float(h), inertia)
        else:
            args = (np.broadcast_to(m, batch + (3,)).reshape(n, 3),
                    np.broadcast_to(att, batch + tail).reshape((n,) + tail),
                    np.broadcast_to(h, batch).reshape(n),
                    np.broadcast_to(inertia, batch + (3,)).reshape(n, 3))
        if not parts:
            step = _quat_step if form == "q" else _frb_step
            m1, att1 = step(*args)
            extra: list[np.ndarray] = []
        else:
            m1, att1, jac = flow_jacobian(*args, form=form)
            got = {"state": jac.state, "h": jac.h}
            extra = [np.asarray(got[p] if p != "inertia" else jac.inertia, dtype=_F64)
                     .reshape(batch + _part_shape(p)) for p in parts]
        return (np.asarray(m1, dtype=_F64).reshape(batch + (3,)),
                np.asarray(att1, dtype=_F64).reshape(batch + tail), *extra)

    return host


def _part_shape(part: str) -> tuple[int, ...]:
    """The shape of one body's derivative ``part`` of a step or a kept state."""
    return {"state": (6, 6), "h": (6,), "inertia": (6, 3)}[part]


def _call_step(form: str, parts: tuple[str, ...], m: Any, att: Any, h: Any, inertia: Any
               ) -> tuple[Any, ...]:
    batch = _shapes(m, att, h, inertia, form)
    tail = (4,) if form == "q" else (3, 3)
    shapes = [jax.ShapeDtypeStruct(batch + (3,), jnp.float64),
              jax.ShapeDtypeStruct(batch + tail, jnp.float64)]
    shapes += [jax.ShapeDtypeStruct(batch + _part_shape(p), jnp.float64) for p in parts]
    return tuple(jax.pure_callback(_step_host(form, parts), tuple(shapes), m, att, h, inertia,
                                   vmap_method="expand_dims"))


def _combine(parts: tuple[str, ...], derivs: tuple[Any, ...], dm: Any, dtheta: Any, dh: Any,
             dI: Any) -> Any:
    """``(dm1, dtheta1)`` (..., 6) from the derivatives of ``parts`` and the input tangents
    (``dtheta`` None, the others possibly symbolic zeros: only the parts asked for are
    nonzero)."""
    by = dict(zip(parts, derivs))
    out = None
    if "state" in by:
        zero = jnp.zeros(by["state"].shape[:-2] + (3,))
        x0 = jnp.concatenate([zero + (0.0 if _is_zero(dm) else dm),
                              zero + (0.0 if dtheta is None else dtheta)], axis=-1)
        out = jnp.einsum("...ij,...j->...i", by["state"], x0)
    if "h" in by:
        term = by["h"] * jnp.asarray(dh)[..., None]
        out = term if out is None else out + term
    if "inertia" in by:
        term = jnp.einsum("...ij,...j->...i", by["inertia"], dI)
        out = term if out is None else out + term
    return out


def _parts(dm: Any, datt: Any, dh: Any, dI: Any) -> tuple[str, ...]:
    parts = []
    if not (_is_zero(dm) and _is_zero(datt)):
        parts.append("state")
    if not _is_zero(dh):
        parts.append("h")
    if not _is_zero(dI):
        parts.append("inertia")
    return tuple(parts)


@functools.lru_cache(maxsize=None)
def _step_function(form: str) -> Any:
    @jax.custom_jvp
    def step(m: Any, att: Any, h: Any, inertia: Any) -> tuple[Any, Any]:
        m1, att1 = _call_step(form, (), m, att, h, inertia)
        return m1, att1

    def jvp(primals: tuple[Any, ...], tangents: tuple[Any, ...]) -> tuple[Any, Any]:
        m, att, h, inertia = primals
        parts = _parts(*tangents)
        if not parts:
            out = _call_step(form, (), m, att, h, inertia)
            return out, (jnp.zeros_like(out[0]), jnp.zeros_like(out[1]))
        m1, att1, *derivs = _call_step(form, parts, m, att, h, inertia)
        dm, datt, dh, dI = tangents
        dtheta = None if _is_zero(datt) else _FORMS[form][1](att, datt)
        d = _combine(parts, tuple(derivs), dm, dtheta, dh, dI)
        return (m1, att1), (d[..., :3], _FORMS[form][2](att1, d[..., 3:]))

    step.defjvp(jvp, symbolic_zeros=True)
    return step


def _step(form: str, m: Any, att: Any, h: Any, inertia: Any) -> tuple[Any, Any]:
    require_x64()
    args = (_as_f64(m, "m"), _as_f64(att, "q" if form == "q" else "Q"), _as_f64(h, "h"),
            _as_f64(inertia, "inertia"))
    _shapes(*args, form)
    if _concrete(*args):
        m1, att1 = _step_host(form, ())(*args)
        return jnp.asarray(m1), jnp.asarray(att1)
    out: tuple[Any, Any] = _step_function(form)(*args)
    return out


def quat_step(m: Any, q: Any, h: Any, inertia: Any) -> tuple[Any, Any]:
    """One exact step of the free rigid body, quaternion attitude (:func:`frb.quat_step`).

    Parameters
    ----------
    m : array, shape (..., 3)
        Body angular momentum.
    q : array, shape (..., 4)
        Unit quaternions, scalar first (``|q| = 1`` within 1e-10, as frb checks).
    h : array, shape (...)
        The step.
    inertia : array, shape (..., 3)
        Principal moments.

    The batch shapes broadcast; a batch (and :func:`jax.vmap`) is one batched frb call.

    Returns
    -------
    m1 : array, shape (..., 3)
    q1 : array, shape (..., 4)
        The values of :func:`frb.quat_step` bit for bit. Differentiable in every argument by
        frb's exact derivatives (module docstring: the tangent ``dq`` of ``q`` is read as
        ``dtheta = 2 vec(conj(q) dq)``, that of ``q1`` is ``q1 (0, dtheta1 / 2)``).
    """
    return _step("q", m, q, h, inertia)


def frb_step(m: Any, Q: Any, h: Any, inertia: Any) -> tuple[Any, Any]:
    """One exact step of the free rigid body, rotation matrix attitude (:func:`frb.frb_step`).

    As :func:`quat_step` with ``Q`` of shape (..., 3, 3) (columns the body axes in the fixed
    frame). The tangent ``dQ`` of ``Q`` is read as ``dtheta = vee(skew(Q^T dQ))``, that of
    ``Q1`` is ``Q1 hat(dtheta1)``.
    """
    return _step("Q", m, Q, h, inertia)


# ---- a run ----------------------------------------------------------------------------------

def _run_host(form: str, parts: tuple[str, ...], config: tuple[Any, ...]
              ) -> Callable[..., tuple[np.ndarray, ...]]:
    """The host function of a run: (m0, att0, h, inertia), batch shapes broadcasting, to the
    kept (m, att) with the batch first, (..., K, 3), and the derivatives ``parts``; one frb run
    for each distinct h of the batch."""
    nsteps, save_every, options = config
    natt = _FORMS[form][0]
    tail = (4,) if form == "q" else (3, 3)

    def host(m: Any, att: Any, h: Any, inertia: Any) -> tuple[np.ndarray, ...]:
        m, att, h, inertia = (np.asarray(a, dtype=_F64) for a in (m, att, h, inertia))
        batch = np.broadcast_shapes(m.shape[:-1], att.shape[:att.ndim - natt], h.shape,
                                    inertia.shape[:-1])
        n = int(np.prod(batch))
        mb = np.broadcast_to(m, batch + (3,)).reshape(n, 3)
        ab = np.broadcast_to(att, batch + tail).reshape((n,) + tail)
        hb = np.broadcast_to(h, batch).reshape(n)
        ib = np.broadcast_to(inertia, batch + (3,)).reshape(n, 3)
        sens: dict[str, Any] = {"sensitivities": parts} if parts else {}
        results: list[np.ndarray] | None = None
        if n and np.any(hb != hb[0]) and _per_body(options):
            # the per-body parameters checked against the whole batch first (frb's own
            # refusal), then each part runs with its own
            _frb_integrate(mb, ab, ib, float(hb[0]), 0, save_every=None, **options)
        for hv, rows, group_options in _step_groups(hb, options):
            if batch == ():
                tr = _frb_integrate(mb[0], ab[0], ib[0], float(hv), nsteps,
                                    save_every=save_every, **group_options, **sens)
                got = [tr.m[:, None], tr.attitude[:, None]]
                got += [getattr(tr.sensitivities, p)[:, None] for p in parts]
            else:
                tr = _frb_integrate(mb[rows], ab[rows], ib[rows], float(hv), nsteps,
                                    save_every=save_every, **group_options, **sens)
                got = [tr.m, tr.attitude] + [getattr(tr.sensitivities, p) for p in parts]
            if results is None:
                k = got[0].shape[0]
                results = [np.empty((n, k) + g.shape[2:], dtype=_F64) for g in got]
            for r, g in zip(results, got):
                r[rows] = np.swapaxes(g, 0, 1)
        assert results is not None
        return tuple(r.reshape(batch + r.shape[1:]) for r in results)

    return host


def _step_groups(hb: np.ndarray, options: dict[str, Any]
                 ) -> list[tuple[float, Any, dict[str, Any]]]:
    """The frb runs of a batch of steps hb: (h, rows, options) for each distinct h; when an
    option holds parameters per body (a torque, wheels or a law given per body), one run for each
    stretch of consecutive bodies with the same h, its options those bodies' parts
    (``.bodies(start, stop)``). An empty batch is one empty run (the shapes of its results)."""
    n = hb.shape[0]
    if n == 0:
        return [(1.0, np.arange(0), options)]
    per_body = _per_body(options)
    if not per_body:
        return [(float(hv), np.nonzero(hb == hv)[0], options) for hv in np.unique(hb)]
    edges = [0, *(np.nonzero(hb[1:] != hb[:-1])[0] + 1).tolist(), n]
    if len(edges) == 2:
        return [(float(hb[0]), np.arange(n), options)]
    return [(float(hb[a]), np.arange(a, b),
             {**options, **{key: value.bodies(a, b) for key, value in per_body.items()}})
            for a, b in zip(edges[:-1], edges[1:])]


def _per_body(options: dict[str, Any]) -> dict[str, Any]:
    """The options of a run that hold parameters per body (a torque, wheels or a wheel law
    whose ``bodies_count`` is set)."""
    return {key: value for key, value in options.items()
            if key in _PER_BODY_OPTIONS and getattr(value, "bodies_count", None) is not None}


def _call_run(form: str, parts: tuple[str, ...], config: tuple[Any, ...], m: Any, att: Any,
              h: Any, inertia: Any) -> tuple[Any, ...]:
    batch = _shapes(m, att, h, inertia, form, ("m0", "attitude0"))
    tail = (4,) if form == "q" else (3, 3)
    k = kept_count(config[0], config[1] or 0)
    shapes = [jax.ShapeDtypeStruct(batch + (k, 3), jnp.float64),
              jax.ShapeDtypeStruct(batch + (k,) + tail, jnp.float64)]
    shapes += [jax.ShapeDtypeStruct(batch + (k,) + _part_shape(p), jnp.float64) for p in parts]
    return tuple(jax.pure_callback(_run_host(form, parts, config), tuple(shapes), m, att, h,
                                   inertia, vmap_method="expand_dims"))


def _check_differentiable(form: str, config: tuple[Any, ...]) -> None:
    """frb's ValueError, when JAX traces a derivative, for a run whose sensitivities frb does
    not compute (the method, a rotor in an exact-flow method, wheels, a torque called from
    Python, ...): frb.integrate's own refusal, from a run of one body and no step with the same
    method, torque and options (the bodies' parts of those given per body). frb's check would
    otherwise run only in the callback, where JAX reports it as a JaxRuntimeError."""
    one = {key: value.bodies(0, 1) if key in _PER_BODY_OPTIONS and hasattr(value, "bodies")
           else value for key, value in config[2].items()}
    attitude = np.eye(3)[None] if form == "Q" else np.array([[1.0, 0.0, 0.0, 0.0]])
    _frb_integrate(np.array([[1.0, 0.0, 0.0]]), attitude, np.array([1.0, 2.0, 3.0]), 0.1, 0,
                   sensitivities=True, save_every=None, **one)


#: the options of frb.integrate that may hold parameters per body (their .bodies(start, stop))
_PER_BODY_OPTIONS = ("torque", "wheels", "wheel_law")


def _run_function(form: str, config: tuple[Any, ...]) -> Any:
    @jax.custom_jvp
    def run(m: Any, att: Any, h: Any, inertia: Any) -> tuple[Any, Any]:
        m1, att1 = _call_run(form, (), config, m, att, h, inertia)
        return m1, att1

    def jvp(primals: tuple[Any, ...], tangents: tuple[Any, ...]) -> tuple[Any, Any]:
        m, att, h, inertia = primals
        dm, datt, dh, dI = tangents
        parts = _parts(*tangents)
        if not parts:
            out = _call_run(form, (), config, m, att, h, inertia)
            return out, (jnp.zeros_like(out[0]), jnp.zeros_like(out[1]))
        _check_differentiable(form, config)
        m1, att1, *derivs = _call_run(form, parts, config, m, att, h, inertia)
        # the input tangents against the kept axis K (the batch first)
        dtheta = None if _is_zero(datt) else _FORMS[form][1](att, datt)[..., None, :]
        d = _combine(parts, tuple(derivs), dm if _is_zero(dm) else dm[..., None, :], dtheta,
                     dh if _is_zero(dh) else jnp.asarray(dh)[..., None],
                     dI if _is_zero(dI) else dI[..., None, :])
        return (m1, att1), (d[..., :3], _FORMS[form][2](att1, d[..., 3:]))

    run.defjvp(jvp, symbolic_zeros=True)
    return run


_RUN_OPTIONS = ("coefficients", "quadrature", "threads", "t0")


def integrate(m0: Any, attitude0: Any, inertia: Any, h: Any, nsteps: int, *,
              method: str | None = None, torque: Any = None,
              save_every: int | str | None = None, **options: Any) -> tuple[Any, Any]:
    """A run of :func:`frb.integrate` as a JAX function: the kept states.

    Parameters
    ----------
    m0 : array, shape (..., 3)
        Initial body angular momentum.
    attitude0 : array, shape (..., 4) or (..., 3, 3)
        Unit quaternions (scalar first) or rotation matrices; the form is taken from the shape
        (a trailing (3, 3) is a matrix).
    inertia : array, shape (..., 3)
        Principal moments (frb.jax takes no inertia tensors).
    h : array, shape (...)
        The step; bodies of a batch with the same ``h`` are one frb run.
    nsteps : int
        Number of steps (not differentiable).
    method, torque, save_every, coefficients, quadrature, threads, t0
        As :func:`frb.integrate` (not differentiable; the torque's parameters are constants).
        ``save_every`` None (the default) keeps the final state only.

    Returns
    -------
    m : array, shape (..., K, 3)
    attitude : array, shape (..., K, 4) or (..., K, 3, 3)
        The kept states (K = 1 for the final state only), the batch first: ``Trajectory.m``
        and ``Trajectory.attitude`` of :func:`frb.integrate` bit for bit (their axes K and N
        swapped). Differentiable in ``m0``, ``attitude0``, ``h`` and ``inertia`` by
        ``Trajectory.sensitivities`` (the exact derivatives of the method's discrete map) for
        the methods and torques that have them (:func:`frb.integrate`, ``sensitivities=``);
        the attitude's tangents as in the module docstring.
    """
    require_x64()
    unknown = set(options) - set(_RUN_OPTIONS)
    if unknown:
        raise TypeError(f"frb.jax.integrate got unexpected keyword(s) {', '.join(sorted(unknown))}"
                        f" (it takes {', '.join(_RUN_OPTIONS)}, method, torque, save_every)")
    if isinstance(nsteps, jax.Array):
        raise TypeError("nsteps must be a Python or numpy integer (it sets the shapes of the "
                        "results: under jax.jit, a static argument), got a JAX array")
    steps = _validate.count(nsteps, "nsteps", 0, _validate.MAX_STEPS)
    kept_every = _validate.save_every(save_every)
    att = _as_f64(attitude0, "attitude0")
    form = "Q" if att.ndim >= 2 and att.shape[-2:] == (3, 3) else "q"
    args = (_as_f64(m0, "m0"), att, _as_f64(h, "h"), _as_f64(inertia, "inertia"))
    batch = _shapes(*args, form, ("m0", "attitude0"))
    config = (steps, kept_every or None,
              {"method": method, "torque": torque, **options})
    if _concrete(*args):
        m1, att1 = _run_host(form, (), config)(*args)
        return jnp.asarray(m1), jnp.asarray(att1)
    _check_run(form, config, int(np.prod(batch)))
    out: tuple[Any, Any] = _run_function(form, config)(*args)
    return out


def _check_run(form: str, config: tuple[Any, ...], n: int) -> None:
    """frb's ValueError or TypeError, while JAX traces, for a run frb.integrate would refuse
    whatever the values of the arrays: its method, torque and options (their per-body
    parameters against the n bodies of the batch), from a run of no step; and kept states
    beyond the memory. frb's check would otherwise run only in the callback, where JAX reports
    it as a JaxRuntimeError."""
    nsteps, save_every, options = config
    attitude = np.broadcast_to(np.eye(3) if form == "Q" else np.array([1.0, 0.0, 0.0, 0.0]),
                               (n,) + ((3, 3) if form == "Q" else (4,)))
    _frb_integrate(np.broadcast_to(np.array([1.0, 0.0, 0.0]), (n, 3)), attitude,
                   np.array([1.0, 2.0, 3.0]), 0.1, 0, save_every=None, **options)
    check_kept_states(kept_count(nsteps, save_every or 0), n, 3 + (9 if form == "Q" else 4))
