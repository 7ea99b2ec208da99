"""Loader for the extended-precision reference sets in tests/data/reference_<name>.npz.

Each set holds float64 arrays m0 (n,3), Q0 (n,3,3), q0 (n,4), inertia (n,3), h (n,),
the reference results m1 (n,3), Q1 (n,3,3), q1 (n,4) (exact flow of the stored
inputs, correctly rounded to float64), and a unicode array label (n,).
Sets: "generic", "api", "special".  Regenerate with tests/reference/make_reference.py.
Also variational_flow: the jacobian of a step computed on demand (tests/reference/taylor.py).
"""

import functools
import importlib.util
import os

import numpy as np

_DATA = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data")


def load(name):
    """Return the reference set `name` as a dict of numpy arrays."""
    path = os.path.join(_DATA, "reference_%s.npz" % name)
    with np.load(path, allow_pickle=False) as f:
        return {k: f[k] for k in f.files}


@functools.lru_cache(maxsize=None)
def _taylor():
    """tests/reference/taylor.py as a module (loaded once)."""
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "reference", "taylor.py")
    spec = importlib.util.spec_from_file_location("variational_taylor", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def variational_flow(m0, inertia, h):
    """The jacobian of an exact step by tests/reference/taylor.py: the variational equations of
    the free body integrated at 160 bits (a dict of mpf lists: phi (6 x 6), dh, dinertia)."""
    return _taylor().variational_flow(m0, inertia, h)
