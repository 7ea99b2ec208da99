"""Generate tests/data/reference_gyrostat_paths.npz: the gyrostat at steps of phase up to the
long-step threshold with many periods or near a separatrix (k'^2 small), and long steps whose
orbit leaves the hemisphere of its start, from the Taylor-series reference (gyrostat_taylor.py).

    python tests/reference/make_gyrostat_paths_reference.py [--procs 2] [--out FILE]

The bodies (BODIES: h, m0, hr, inertia, kind) are drawn as in benchmarks/gyrostat.py (m normal,
moments uniform in [0.5, 3], rotors of random direction with |hr| / |m| log-uniform in [1e-3, 1e3],
or |hr| = |m|) among those whose steps take: a step spanning tens of quarter periods of a fast
rotor's small loop (k'^2 near 1: double precision), a step whose loss estimate exceeds 20
(double precision when k'^2 >= 1/2, else quadruple-precision arithmetic with the rules of
double-precision results), a long step whose period's angle needs a gauge other than its start.
q0 from a fixed random start. Arrays: m0, hr, inertia (n, 3), q0 (n, 4),
h (n,), m1 (n, 3), q1 (n, 4) (the reference rounded to float64), kind (n,) (unicode).
"""

import argparse
import os
import sys
from multiprocessing import Pool

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import gyrostat_taylor  # noqa: E402

DATA = os.path.join(os.path.dirname(HERE), "data")
RNG_STATE = 20261128
FAST = "fast rotor: a step over tens of quarter periods of a small loop (k'^2 near 1)"
LOSS = "rotor of random direction: a step whose loss estimate exceeds 20"
GAUGE = "|hr| = |m|: a long step whose orbit leaves the hemisphere of u0"

BODIES = [
    (0.1, [-0.13865532509133732, 0.03300010398406011, -1.4253489608701877],
     [206.60699486096638, 908.3907556939859, 151.08295069350345],
     [1.4897049797448707, 2.9391020389032407, 2.3441086298879257], FAST),
    (0.1, [1.7533841175163727, -0.11129219318751944, -0.6885649476343216],
     [-492.3614263071496, -91.17356190916719, -262.558845359289],
     [2.0018600365067076, 2.169578180380997, 1.34477970245636], FAST),
    (0.1, [-1.1755359049207805, 0.16007589253434076, -2.1378243580905774],
     [210.2606336585303, 173.73431869447495, 345.6141134821879],
     [0.7982494898057029, 0.8573395996589823, 2.7057861936936694], FAST),
    (0.1, [0.16863040701051427, -0.4590715557127591, 1.2262706003162174],
     [354.26590983414377, -34.66052352847762, -287.70301727815166],
     [1.8560390772564626, 0.7240483892125824, 1.8032733164925245], FAST),
    (1.0, [0.4695680987474934, -1.0338667223549824, 0.6658894397639671],
     [0.059510576994785604, -0.047556851619793734, -0.08254901927511554],
     [1.0099812055171935, 1.758901603780711, 2.6942446890928777], LOSS),
    (1.0, [0.6168787551543194, 2.547897815483126, -1.0009248488718936],
     [0.04562081689030264, 0.18327308876030118, 0.028691276412212738],
     [1.215786204169594, 1.0293526802062791, 1.8084671247161708], LOSS),
    (1.0, [-0.5060254839367364, -0.34811746668377785, 0.5320020862917986],
     [0.006190468108294357, -0.014934981849483225, 0.005036148446989517],
     [0.675005641870484, 1.0514180509407889, 2.0768498944879736], LOSS),
    (1.0, [-0.43798807560230063, -0.20689292471224427, -0.33372600380413486],
     [51.07762176302949, 67.24699470142481, -21.87055281241663],
     [1.6716025356709445, 1.5391375851821216, 2.205665101032941], LOSS),
    (10.0, [0.05410227877154389, 0.27279133916445375, -0.9821881249409777],
     [0.0004161281487040766, -0.0004197820130386215, 0.001718620545194761],
     [0.8878164333956156, 2.750381771103192, 1.7544848218759663], LOSS),
    (10.0, [0.4695680987474934, -1.0338667223549824, 0.6658894397639671],
     [0.059510576994785604, -0.047556851619793734, -0.08254901927511554],
     [1.0099812055171935, 1.758901603780711, 2.6942446890928777], LOSS),
    (10.0, [0.6168787551543194, 2.547897815483126, -1.0009248488718936],
     [0.04562081689030264, 0.18327308876030118, 0.028691276412212738],
     [1.215786204169594, 1.0293526802062791, 1.8084671247161708], LOSS),
    (10.0, [-0.5060254839367364, -0.34811746668377785, 0.5320020862917986],
     [0.006190468108294357, -0.014934981849483225, 0.005036148446989517],
     [0.675005641870484, 1.0514180509407889, 2.0768498944879736], LOSS),
    (10.0, [1.3573580749634357, 1.7674890811247375, 0.07880787025970594],
     [-2.05981591380047, 0.826994574668883, 0.214214030121863],
     [2.625743963418162, 2.3163302326201567, 0.5429112222306769], GAUGE),
    (10.0, [0.8516417154449, -0.9144449831041731, -2.729084930821099],
     [2.512695037929806, 1.5551010736506512, 0.5267182314469935],
     [0.7570872600271104, 1.8672861690867022, 2.9522471351722057], GAUGE),
    (10.0, [2.729167039004296, 1.842447605618157, -0.21452399950632314],
     [0.6871639225776266, -3.058996850925917, -1.029237806404719],
     [1.580044894207394, 0.5727142291708673, 0.7176481565963704], GAUGE),
    (10.0, [-0.6945933575499162, -1.180283911849588, -1.7838454781954174],
     [-0.5599939339824644, 2.135070406690098, -0.4307155527499478],
     [0.6935024874673306, 2.1289930647693693, 2.034727536511512], GAUGE),
]


def reference(args):
    h, m0, hr, inertia, q0 = args
    m1, q1 = gyrostat_taylor.flow(m0, hr, inertia, q0, h)
    return [float(x) for x in m1], [float(x) for x in q1]


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--procs", type=int, default=2)
    ap.add_argument("--out", default=os.path.join(DATA, "reference_gyrostat_paths.npz"))
    args = ap.parse_args()
    rng = np.random.default_rng(RNG_STATE)
    q0 = rng.normal(size=(len(BODIES), 4))
    q0 /= np.linalg.norm(q0, axis=1)[:, None]
    jobs = [(b[0], b[1], b[2], b[3], list(q)) for b, q in zip(BODIES, q0)]
    with Pool(args.procs) as pool:
        out = pool.map(reference, jobs)
    np.savez_compressed(
        args.out, m0=np.array([b[1] for b in BODIES]), hr=np.array([b[2] for b in BODIES]),
        inertia=np.array([b[3] for b in BODIES]), q0=q0, h=np.array([b[0] for b in BODIES]),
        m1=np.array([o[0] for o in out]), q1=np.array([o[1] for o in out]),
        kind=np.array([b[4] for b in BODIES]))


if __name__ == "__main__":
    main()
