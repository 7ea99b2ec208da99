"""Cost of jax.grad through frb.jax.integrate against frb.integrate with sensitivities, side by
side.

    python benchmarks/jax_grad.py [--repeat 5]

For one body (1000 steps) and a batch (1000 bodies, 20 steps), EXACT free and RK4 with a heavy
top, the final state kept: processor time (time.process_time, the minimum over the repetitions,
the variants timed alternately) of

* frb.integrate alone;
* frb.integrate with sensitivities ("state"; "state", "inertia") and the gradient of
  ``sum(a . m_K + b . q_K)`` chained by hand in numpy (frb's derivatives used directly);
* frb.jax.integrate, jitted (the value);
* jax.grad of the same loss through frb.jax.integrate, jitted, with respect to m0 and to
  (m0, inertia).

Needs JAX (``pip install 'frb[jax]'``); threads: one.
"""
from __future__ import annotations

import argparse
import time

import numpy as np

import frb
from frb.torques import heavy_top

try:
    import jax
except ImportError:  # pragma: no cover
    raise SystemExit("benchmarks/jax_grad.py needs JAX: pip install 'frb[jax]'")
jax.config.update("jax_enable_x64", True)
import jax.numpy as jnp  # noqa: E402

import frb.jax as fj  # noqa: E402

A = np.array([0.3, -1.0, 0.4])
B = np.array([0.2, 0.7, -0.5, 0.1])


def out_map(q):
    """(..., 4, 3): dtheta -> q (0, dtheta / 2)."""
    s, v = q[..., 0], q[..., 1:]
    cols = []
    for e in np.eye(3):
        w = 0.5 * e
        cols.append(np.concatenate([-(v @ w)[..., None], s[..., None] * w + np.cross(v, w)],
                                   axis=-1))
    return np.stack(cols, axis=-1)


def timed(fn):
    t0 = time.process_time()
    fn()
    return time.process_time() - t0


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args()
    frb.set_num_threads(1)
    rng = np.random.default_rng(0)
    inertia = np.array([1.0, 2.0, 3.0])
    print("| case | frb.integrate (ms) | + sensitivities, grad by hand (ms) | frb.jax value, jit (ms) "
          "| jax.grad, jit (ms) | grad / frb sens. | grad / run |")
    print("|---|---|---|---|---|---|---|")
    for bodies, steps in ((1, 1000), (1000, 20)):
        m0 = rng.normal(size=(bodies, 3))
        q0 = rng.normal(size=(bodies, 4))
        q0 /= np.linalg.norm(q0, axis=1, keepdims=True)
        if bodies == 1:
            m0, q0 = m0[0], q0[0]
        for method, torque in (("EXACT", None), ("RK4", heavy_top(0.5, [0.0, 0.0, 1.0]))):
            for parts in (("state",), ("state", "inertia")):
                kw = dict(method=method, torque=torque)

                def run():
                    frb.integrate(m0, q0, inertia, 0.05, steps, save_every=None, **kw)

                def by_hand():
                    tr = frb.integrate(m0, q0, inertia, 0.05, steps, save_every=None,
                                       sensitivities=parts, **kw)
                    row = np.concatenate([np.broadcast_to(A, tr.m[-1].shape),
                                          np.einsum("j,...jk->...k", B, out_map(tr.q[-1]))],
                                         axis=-1)
                    g = np.einsum("...i,...ij->...j", row, tr.sensitivities.state[-1][..., :3])
                    if "inertia" in parts:
                        gi = np.einsum("...i,...ij->...j", row, tr.sensitivities.inertia[-1])
                        return g, gi
                    return g

                def loss(m, inert):
                    mk, qk = fj.integrate(m, q0, inert, 0.05, steps, **kw)
                    return jnp.sum(mk[..., -1, :] @ A) + jnp.sum(qk[..., -1, :] @ B)

                argnums = (0,) if parts == ("state",) else (0, 1)
                value = jax.jit(loss)
                grad = jax.jit(jax.grad(loss, argnums=argnums))
                jax.block_until_ready(value(m0, inertia))
                jax.block_until_ready(grad(m0, inertia))
                fns = [run, by_hand, lambda: jax.block_until_ready(value(m0, inertia)),
                       lambda: jax.block_until_ready(grad(m0, inertia))]
                best = [np.inf] * len(fns)
                for _ in range(args.repeat):
                    for i, f in enumerate(fns):
                        best[i] = min(best[i], timed(f))
                ms = [1e3 * b for b in best]
                name = (f"{method}{' + heavy top' if torque else ''}, {bodies} bod"
                        f"{'y' if bodies == 1 else 'ies'} x {steps} steps, d/d({', '.join(parts)})")
                print(f"| {name} | {ms[0]:.3f} | {ms[1]:.3f} | {ms[2]:.3f} | {ms[3]:.3f} | "
                      f"{ms[3] / ms[1]:.2f} | {ms[3] / ms[0]:.1f} |")


if __name__ == "__main__":
    main()
