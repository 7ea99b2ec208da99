"""The public routes over the one engine, side by side in one run: one-body set-up, one-body
cost per step and batched cost per body-step of frb.integrate, frb.splitting.integrate,
frb.dmv_step / frb.dmv_integrate, each with the frb.integrate call that gives the same numbers,
and the ratio of the two (measured in the same run: machines are noisy, ratios less so).

    python benchmarks/route_costs.py [--repeat 5]

Run it against two builds (before and after a change) to compare them; for steady figures on a
busy machine count instructions instead (valgrind --tool=callgrind, see callgrind_steps.py).
"""
from __future__ import annotations

import argparse
import timeit

import numpy as np

import frb
from frb.torques import constant_field

M, I, Q, q = [0.3, 0.5, 0.8], [1.0, 2.0, 3.0], np.eye(3), [1.0, 0.0, 0.0, 0.0]
FIELD = constant_field([0.0, 0.0, 1.0])


def best(f, number: int, repeat: int) -> float:
    """Smallest time of one call of f, in seconds."""
    return min(timeit.repeat(f, number=number, repeat=repeat)) / number


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeat", type=int, default=5)
    r = parser.parse_args().repeat
    rng = np.random.default_rng(1)
    mb = rng.normal(size=(10_000, 3))
    qb = np.tile(q, (10_000, 1))
    rows = [
        # (what, route, the frb.integrate call with the same numbers, unit divisor, number)
        ("one-body set-up (1 step), us", lambda: frb.splitting.integrate(M, Q, I, 0.1, 1, torque=FIELD),
         lambda: frb.integrate(M, Q, I, 0.1, 1, method="RKN6_14", torque=FIELD), 1e-6, 2000,
         "splitting.integrate RKN6_14"),
        ("one-body set-up (1 step), us", lambda: frb.dmv_step(M, q, 0.1, I),
         lambda: frb.integrate(M, q, I, 0.1, 1, method="DMV6", save_every=None), 1e-6, 2000,
         "dmv_step"),
        ("one body, ns per step", lambda: frb.splitting.integrate(M, Q, I, 0.1, 20_000, torque=FIELD,
                                                                  save_every=None),
         lambda: frb.integrate(M, Q, I, 0.1, 20_000, method="RKN6_14", torque=FIELD,
                               save_every=None), 20_000e-9, 1, "splitting.integrate RKN6_14"),
        ("one body, ns per step", lambda: frb.dmv_integrate(M, q, I, 0.1, 100_000),
         lambda: frb.integrate(M, q, I, 0.1, 100_000, method="DMV6", save_every=None),
         100_000e-9, 1, "dmv_integrate"),
        ("1e4 bodies, ns per body-step", lambda: frb.dmv_integrate(mb, qb, I, 0.05, 50, threads=1),
         lambda: frb.integrate(mb, qb, I, 0.05, 50, method="DMV6", save_every=None, threads=1),
         500_000e-9, 1, "dmv_integrate"),
    ]
    print(f"{'what':32s} {'route':28s} {'route':>9s} {'integrate':>10s} {'ratio':>6s}")
    for what, route, same, unit, number, name in rows:
        a, b = best(route, number, r) / unit, best(same, number, r) / unit
        print(f"{what:32s} {name:28s} {a:9.1f} {b:10.1f} {a / b:6.2f}")


if __name__ == "__main__":
    main()
