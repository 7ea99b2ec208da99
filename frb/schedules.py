"""Symmetric splittings of the exact free flow A and the torque kick B: their coefficients and
the schedule of flows of one step, shared by :func:`frb.integrate` and
:func:`frb.splitting.integrate`.

One step of length ``h`` of a symmetric method with coefficients ``a_1..a_{s+1}``, ``b_1..b_s``
is the composition ``A(a_1 h) B(b_1 h) ... A(a_{s+1} h) ... B(b_1 h) A(a_1 h)``; consistency
requires ``2(a_1 + ... + a_s) + a_{s+1} = 1`` and ``2(b_1 + ... + b_s) = 1``. Flows with a zero
coefficient are skipped and the two neighbouring flows of the same kind merged.
"""
from __future__ import annotations

import math
from typing import Sequence

import numpy as np
from numpy.typing import ArrayLike, NDArray

from . import _validate
from ._numbers_table import MAX_FLOWS, PLAN_ROWS

__all__ = ["RKN6_14", "STRANG", "YOSHIDA4", "COEFFICIENT_SETS", "FREE_PLAN", "coefficients", "plan",
           "schedule"]

# Blanes & Moan (2002), RKN6 with 14 stages (Celledoni and Zanna 2010, appendix, eq. (23)).
_A7 = (
    0.0378593198406116,
    0.102635633102435,
    -0.0258678882665587,
    0.314241403071477,
    -0.130144459517415,
    0.106417700369543,
    -0.00879424312851058,
)
_B6 = (
    0.09171915262446165,
    0.183983170005006,
    -0.05653436583288827,
    0.004914688774712854,
    0.143761127168358,
    0.328567693746804,
)
#: First half ``(a_1..a_8), (b_1..b_7)`` of the sixth-order method RKN6_14 of
#: Blanes and Moan, with ``a_8 = 1 - 2(a_1+...+a_7)``, ``b_7 = 1/2 - (b_1+...+b_6)``.
RKN6_14: tuple[tuple[float, ...], tuple[float, ...]] = (
    _A7 + (1.0 - 2.0 * math.fsum(_A7),),
    _B6 + (0.5 - math.fsum(_B6),),
)
#: Strang splitting ``A(h/2) B(h) A(h/2)`` (second order).
STRANG: tuple[tuple[float, ...], tuple[float, ...]] = ((0.5, 0.0), (0.5,))
_G1 = 1.0 / (2.0 - 2.0 ** (1.0 / 3.0))
_G2 = 1.0 - 2.0 * _G1
#: Yoshida's triple jump of Strang ``S(g1 h) S(g2 h) S(g1 h)``, ``g1 = 1 / (2 - 2^(1/3))``,
#: ``g2 = 1 - 2 g1`` (H. Yoshida, "Construction of higher order symplectic integrators", Phys.
#: Lett. A 150, 1990): order 4 for any symmetric second-order S, so also with an exact torque flow
#: that depends on m. Written as A(g1/2) B(g1) A((g1+g2)/2) B(g2) A((g1+g2)/2) B(g1) A(g1/2).
YOSHIDA4: tuple[tuple[float, ...], tuple[float, ...]] = ((_G1 / 2, (_G1 + _G2) / 2, 0.0),
                                                         (_G1, _G2 / 2))
#: The coefficient sets of the named splitting methods (of :func:`frb.integrate` and
#: :func:`frb.splitting.integrate`), by name.
COEFFICIENT_SETS: dict[str, tuple[tuple[float, ...], tuple[float, ...]]] = {
    "RKN6_14": RKN6_14, "STRANG": STRANG, "YOSHIDA4": YOSHIDA4}

_CONSISTENCY_TOL = 1e-10


def coefficients(method: str | None, coefficients: tuple[ArrayLike, ArrayLike] | None
                  ) -> tuple[tuple[float, ...], tuple[float, ...]]:
    if coefficients is None:
        if not isinstance(method, str):
            raise TypeError(f"method must be a method's name (a string, one of "
                            f"{sorted(COEFFICIENT_SETS)}) or give coefficients=(a, b), got "
                            f"{method!r}")
        if _validate.name_key(method) not in COEFFICIENT_SETS:
            raise ValueError(
                f"method must be one of {sorted(COEFFICIENT_SETS)} (or give coefficients=(a, b)), "
                f"got {method!r}"
            )
        return COEFFICIENT_SETS[_validate.name_key(method)]
    if isinstance(coefficients, (str, bytes, bool, np.bool_)) or \
            not isinstance(coefficients, (tuple, list, np.ndarray)):
        raise TypeError("coefficients must be a pair (a, b) of sequences of real numbers "
                        f"(a_1..a_{{s+1}}, b_1..b_s), got {type(coefficients).__name__}")
    try:
        a, b = coefficients
    except (TypeError, ValueError) as exc:
        raise ValueError(
            "coefficients must be a pair (a, b) of sequences of real numbers "
            "(a_1..a_{s+1}, b_1..b_s)"
        ) from exc
    a, b = _pair(a, b, "coefficients a", "coefficients b")
    sa = 2.0 * _exact_sum(a[:-1]) + a[-1]
    sb = 2.0 * _exact_sum(b)
    if abs(sa - 1.0) > _CONSISTENCY_TOL or abs(sb - 1.0) > _CONSISTENCY_TOL:
        raise ValueError(
            "coefficients are not consistent: need 2(a_1+...+a_s) + a_{s+1} = 1 and "
            f"2(b_1+...+b_s) = 1, got {sa!r} and {sb!r}"
        )
    _check_flow_count(len(schedule(a, b)))
    return a, b


def _exact_sum(values: tuple[float, ...]) -> float:
    """math.fsum; where its partial sums leave the float64 range, the plain sum (+-inf or a
    number far from the consistency sums, either way refused)."""
    try:
        return math.fsum(values)
    except OverflowError:
        return sum(values)


def _pair(a: ArrayLike, b: ArrayLike, name_a: str, name_b: str
          ) -> tuple[tuple[float, ...], tuple[float, ...]]:
    """The coefficients a_1..a_{s+1}, b_1..b_s as tuples of floats: one-dimensional, finite,
    ``len(a) == len(b) + 1``; TypeError or ValueError naming them otherwise."""
    a_arr = _validate.real_array(a, name_a, finite=False)
    b_arr = _validate.real_array(b, name_b, finite=False)
    if a_arr.ndim != 1 or b_arr.ndim != 1:
        raise ValueError(f"{name_a} and {name_b} must be sequences of real numbers "
                         f"(a_1..a_{{s+1}}, b_1..b_s), got shapes {a_arr.shape} and {b_arr.shape}")
    at, bt = tuple(a_arr.tolist()), tuple(b_arr.tolist())
    if len(at) != len(bt) + 1:
        raise ValueError(f"{name_a} must have one more coefficient than {name_b} "
                         f"(a_1..a_{{s+1}}, b_1..b_s), got {len(at)} and {len(bt)}")
    if not all(math.isfinite(x) for x in at + bt):
        raise ValueError(f"{name_a} and {name_b} must be finite")
    return at, bt


def _check_flow_count(flows: int) -> None:
    """ValueError for a step of more flows than the compiled loop takes (every route refuses
    such coefficients, with a torque or without)."""
    if flows > MAX_FLOWS:
        raise ValueError(f"coefficients: a step of at most {MAX_FLOWS} flows (free flows and "
                         f"torque flows, after merging neighbours of one kind), got {flows}")


def plan(a: Sequence[float], b: Sequence[float]) -> tuple[NDArray[np.float64], float]:
    """The flows of one step of the method (a, b) as the compiled loop takes them, and the
    largest |fraction| of a free flow: a read-only (nf, PLAN_ROWS) array, a row a flow, its kind
    (0 = A, the free flow; 1 = B, the torque's flow) then its fraction of h. The coefficients
    are checked as :func:`coefficients` checks them (ValueError, TypeError)."""
    key = (a, b) if type(a) is tuple and type(b) is tuple and \
        all(type(x) is float for x in a + b) else None
    made = _PLANS.get(key) if key is not None else None
    if made is None:
        made = _plan(*coefficients(None, (a, b)))
        if key is not None and len(_PLANS) < _PLANS_KEPT:
            _PLANS[key] = made
    return made


#: The plans made for coefficients given as tuples of floats (the named sets, a user's set
#: used again), at most _PLANS_KEPT.
_PLANS: dict[tuple[tuple[float, ...], tuple[float, ...]], tuple[NDArray[np.float64], float]] = {}
_PLANS_KEPT = 64


def _plan(a: tuple[float, ...], b: tuple[float, ...]) -> tuple[NDArray[np.float64], float]:
    """plan of checked coefficients (tuples of floats)."""
    steps = schedule(a, b)
    _check_flow_count(len(steps))
    flows = np.empty((len(steps), PLAN_ROWS))
    flows[:, 0] = [0.0 if kind == "A" else 1.0 for kind, _ in steps]
    flows[:, 1] = [c for _, c in steps]
    flows.flags.writeable = False
    return flows, max(abs(c) for kind, c in steps if kind == "A")


#: The plan of a free body: one exact flow A(h) a step.
FREE_PLAN: tuple[NDArray[np.float64], float] = (np.array([[0.0, 1.0]]), 1.0)
FREE_PLAN[0].flags.writeable = False


def schedule(a: Sequence[float], b: Sequence[float]) -> list[tuple[str, float]]:
    """The flows of one symmetric step, zeros removed and neighbours of one kind merged.

    Parameters
    ----------
    a, b : sequences of real numbers
        The coefficients ``a_1..a_{s+1}`` of the free flow and ``b_1..b_s`` of the torque.

    Returns
    -------
    list of (str, float)
        ``("A", fraction of h)`` for a free flow, ``("B", fraction of h)`` for a torque flow.

    Raises
    ------
    TypeError, ValueError
        ``a`` or ``b`` not a sequence of finite real numbers, or ``len(a) != len(b) + 1``.

    Examples
    --------
    >>> from frb.schedules import schedule, STRANG
    >>> schedule(*STRANG)
    [('A', 0.5), ('B', 1.0), ('A', 0.5)]
    """
    a, b = _pair(a, b, "a", "b")
    half = []
    for i, bi in enumerate(b):
        half.append(("A", a[i]))
        half.append(("B", bi))
    seq = half + [("A", a[-1])] + half[::-1]
    out: list[list] = []
    for kind, c in seq:
        if c == 0.0:
            continue
        if out and out[-1][0] == kind:
            out[-1][1] += c
        else:
            out.append([kind, c])
    return [(kind, c) for kind, c in out]
