"""Error of the semi-exact steps (quadrature np = 1..5) against the exact flow, batched.

4000 random bodies (half with moments (0.8, 1.7, 2.6), half with random moments in random
order), random momenta and attitudes; for h in {0.01, 0.1, 1} the states after 1 and after 100
steps of frb._testing.quat_integrate_batch with quadrature np against quadrature 0. The error of a
body is |q - q_exact| + |m - m_exact| / |m0| (the momentum is exact in both, to rounding);
the table gives its maximum and median over the bodies.

    python benchmarks/semi_exact_error.py [--save FILE.npz]

--save keeps every final state, to compare two builds bit for bit (numpy.load, key
"h_steps_np").
"""
from __future__ import annotations

import argparse
import sys

import numpy as np


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--save", help="write the final states to this .npz file")
    a = p.parse_args(argv)
    import frb._testing
    core = frb._testing
    rng = np.random.default_rng(11)
    n = 4000
    m = rng.normal(size=(n, 3))
    q = rng.normal(size=(n, 4))
    q /= np.linalg.norm(q, axis=1, keepdims=True)
    inertia = np.sort(rng.uniform(0.3, 3.0, size=(n, 3)), axis=1)[:, rng.permutation(3)]
    inertia[:n // 2] = [0.8, 1.7, 2.6]
    states = {}
    print(f"{'h':>5s} {'steps':>5s} " + " ".join(f"{'np = ' + str(k):>21s}" for k in range(1, 6)))
    print(f"{'':11s} " + " ".join(f"{'max':>10s} {'median':>10s}" for _ in range(1, 6)))
    for h in (0.01, 0.1, 1.0):
        for steps in (1, 100):
            hs = np.array([h])
            row = []
            for k in range(6):
                mo, qo = core.quat_integrate_batch(m.T, q.T, hs, inertia.T, k, steps, threads=1)
                states[f"{h}_{steps}_{k}"] = np.concatenate([mo, qo])
                if k == 0:
                    m_ref, q_ref = mo, qo
                    continue
                e = (np.linalg.norm(qo - q_ref, axis=0)
                     + np.linalg.norm(mo - m_ref, axis=0) / np.linalg.norm(m, axis=1))
                row.append((e.max(), np.median(e)))
            print(f"{h:5.2f} {steps:5d} " + " ".join(f"{x:10.2e} {y:10.2e}" for x, y in row))
    if a.save:
        np.savez(a.save, **states)
    return 0


if __name__ == "__main__":
    sys.exit(main())
