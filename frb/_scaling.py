"""The one rescaling policy of frb: runs at extreme scales are made in units where the largest
``|m_i|`` and the largest moment of inertia are about 1.

Every method is covariant under ``m -> a m``, ``I -> b I``, ``t -> t b / a`` with the torque
``T -> (a^2 / b) T`` (the built-in torques through their parameters: the field and the weight
times ``a^2 / b``, the orbital rate times ``a / b``, a rotor's momentum times ``a``; a user torque
is called at the original time and its result scaled), and powers of two scale every operation
exactly. So a run whose ``|m|``, moments or torque parameters lie outside ``2^-e .. 2^e`` (``e``
the method's ``scale_exponent``: the range where its squares and the powers of its corrections
neither overflow nor underflow) runs with ``a = 2^ka``, ``b = 2^kb`` such that the largest
``|m_i|`` and moment are in ``[1/2, 1)``: the same results, bit for bit, as the run at moderate
scale.

* A torque-free run of a method that steps each body with its own step length (the exact
  flows, the approximate free flows: ``MethodInfo.free_steps``) is scaled body by body (a batch
  may span any scales).
* Any other run is scaled as a whole (the torque's parameters and the time are shared): a batch
  whose bodies span more than ``2^e`` in the moments, or more than ``2^200`` (every method's
  range) in ``|m|``, is refused (split it): a body far below the batch's ``|m|`` only has
  corrections of relative size ``(|h| |m| / I)^2`` and beyond underflow.

Where the step would leave the float64 range in those units (a step that turns its body by
less than ``2^-1000`` radians), the momenta are scaled less, as far as the step needs; a run
whose torque's parameters, step and momenta cannot all be full-precision numbers in one set of
units (a damping rate and ``|m| / I`` more than ``2^1000`` apart) is refused with ValueError.

The exact free flows take every scale themselves (``flow_prepare`` of
``fortran/exact_flow.f90``), to a few ulps; rescaled, their results are those of the moderate
scale bit for bit.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Optional

import numpy as np
from numpy.typing import NDArray

from ._numbers_table import FAMILY_EXACT_SPLITTINGS, SCALE_EXPONENT, TORQUE_TERM_HEADER, \
    TORQUE_TERM_REALS
from ._validate import fmt
from .methods import MethodInfo
from .torques import PARAMETER_SCALES, CompiledTorque

__all__ = ["Scaling", "scaling_of", "torque_beyond"]

#: A compiled torque as a run holds it: its form, its terms and its per-body parameters (or None).
TorqueTerms = tuple[CompiledTorque, NDArray[np.float64], Optional[NDArray[np.float64]]]


@dataclass(frozen=True)
class Scaling:
    """Powers of two of a rescaled run: ``m -> 2^ka m``, ``I -> 2^kb I``, ``t -> 2^(kb - ka) t``,
    a torque ``T -> 2^(2 ka - kb) T``; ``ka``, ``kb`` of shape (n, 1) (per body) or (1, 1)
    (the whole run)."""

    ka: NDArray[np.int64]
    kb: NDArray[np.int64]

    @property
    def common(self) -> bool:
        return self.ka.shape[0] == 1

    def momenta(self, m: NDArray[np.float64]) -> NDArray[np.float64]:
        """Momenta (n, 3) in the run's units."""
        return np.ldexp(m, self.ka)

    def moments(self, inertia: NDArray[np.float64]) -> NDArray[np.float64]:
        """Moments (n, 3) in the run's units."""
        return np.ldexp(inertia, self.kb)

    def time(self, t: NDArray[np.float64]) -> NDArray[np.float64]:
        """Times or steps (1,) or (n,) in the run's units."""
        return np.ldexp(t, (self.kb - self.ka)[:, 0])

    def momenta_back(self, m: NDArray[np.float64], name: str, single: bool = False,
                     failed: bool = False) -> NDArray[np.float64]:
        """Kept momenta (K, n, 3) of the run back in the user's units; ValueError naming the
        momentum ``name`` (and the body, unless ``single``: a run of one body given as such)
        when a component leaves the float64 range (a momentum whose norm is beyond it: its
        rotated components are not representable); ``failed``: the states of a failed run,
        infinite where they left the range."""
        with np.errstate(over="ignore"):
            back = np.ldexp(m, -self.ka)
        if not failed and not np.isfinite(back).all() and np.isfinite(m).all():
            body = int(np.argmax((~np.isfinite(back)).any(axis=(0, 2)))) if back.ndim == 3 else 0
            raise ValueError(f"{name}: the momentum{_of_body(body, single)} has a norm beyond the "
                             f"float64 range (above {np.finfo(np.float64).max:.4g}): its "
                             "components along the turning body axes are not representable")
        return back

    def first_beyond(self, m: NDArray[np.float64], m0: NDArray[np.float64]
                     ) -> tuple[int, int] | None:
        """(kept state, body) of the first kept momentum (K, n, 3) of the run whose components
        in the user's units leave the float64 range while the run's are finite, for a body
        whose initial momentum ``m0`` (n, 3, in the run's units) has a norm within the range
        there (the momentum grew beyond it); None otherwise."""
        with np.errstate(over="ignore"):
            back = np.ldexp(m, -self.ka)
            start = np.ldexp(np.sqrt(np.sum(m0 * m0, axis=1)), -self.ka[:, 0])
        lost = np.any(~np.isfinite(back) & np.isfinite(m), axis=2)
        if not lost.any() or not np.isfinite(start[np.any(lost, axis=0)]).all():
            return None
        k = int(np.argmax(np.any(lost, axis=1)))
        return k, int(np.argmax(lost[k]))

    @property
    def exponents(self) -> tuple[int, int, int]:
        """(time, torque, momentum) exponents of a common scaling: the user torque's time is
        ``2^time`` times the run's, its result times ``2^torque``, its momenta ``2^momentum``
        times the run's."""
        ka, kb = int(self.ka[0, 0]), int(self.kb[0, 0])
        return ka - kb, 2 * ka - kb, -ka

    def torque_terms(self, form: CompiledTorque, terms: NDArray[np.float64],
                     body: NDArray[np.float64] | None
                     ) -> tuple[NDArray[np.float64], NDArray[np.float64] | None]:
        """The terms (a row a term: its kind, its block, then its parameters) and the per-body
        parameters of a compiled torque in the run's units (frb.torques.PARAMETER_SCALES, the
        same for a term's parameters given per body)."""
        ka, kb = int(self.ka[0, 0]), int(self.kb[0, 0])
        scaled = np.array(terms)
        scaled_body = None if body is None else np.array(body)
        with np.errstate(over="ignore", under="ignore"):
            for i, kind in enumerate(form.kinds):
                powers = np.array([a * ka + b * kb for a, b in PARAMETER_SCALES[kind]])
                scaled[i, TORQUE_TERM_HEADER:] = np.ldexp(scaled[i, TORQUE_TERM_HEADER:], powers)
                block = form.blocks[i] if form.blocks else 0
                if block and scaled_body is not None:
                    cols = slice((block - 1) * TORQUE_TERM_REALS, block * TORQUE_TERM_REALS)
                    scaled_body[:, cols] = np.ldexp(scaled_body[:, cols], powers)
        _representable(terms[:, TORQUE_TERM_HEADER:], scaled[:, TORQUE_TERM_HEADER:])
        if body is not None and scaled_body is not None:
            _representable(body, scaled_body)
        return scaled, scaled_body


#: The binary exponent below which a momentum in a rescaled run's units loses digits (the
#: smallest normal float64 over the unit roundoff).
_FULL_PRECISION_EXPONENT = -969
_FULL_PRECISION = 2.0**_FULL_PRECISION_EXPONENT
#: The smallest binary exponent a step keeps in a rescaled run's units (-_STEP_MARGIN): a step
#: that small turns its body by less than 2^-1000 radians, and is then a full-precision number.
_STEP_MARGIN = 960


def _of_body(b: int, single: bool) -> str:
    """" of body b" in a message about a batch, "" for a run of one body given as such."""
    return "" if single else f" of body {b}"


def _representable(given: NDArray[np.float64], scaled: NDArray[np.float64]) -> None:
    """ValueError naming ``torque`` when a parameter of the torque, in the units of a rescaled
    run, leaves the float64 range or loses its precision (beyond ``2^1024``, or made smaller
    than the smallest normal number): the torque's scale and the bodies' are too far apart for
    one run."""
    # (a parameter subnormal as given keeps what it has; one that the scaling makes subnormal,
    # or more so, loses digits)
    lost = ~np.isfinite(scaled) | ((given != 0) & (np.abs(scaled) < np.finfo(np.float64).tiny)
                                   & (np.abs(scaled) < np.abs(given)))
    if lost.any():
        raise ValueError("torque: its parameters are beyond the float64 range in the units the "
                         "run is rescaled to for bodies of this scale (|m| and the moments far "
                         "from 1 by powers of two, the torque's parameters not): give the torque, "
                         "m and inertia in units of closer scales")


def _torque_exponents(torque: TorqueTerms) -> list[tuple[int, int, int, int]]:
    """(smallest, largest binary exponent, a, b) of every nonzero parameter of a compiled torque
    whose units involve the momentum (``a != 0``; its terms and per-body parameters as in
    :meth:`Scaling.torque_terms`): what a common scaling must keep in range."""
    form, terms, body = torque
    out = []
    for i, kind in enumerate(form.kinds):
        block = form.blocks[i] if form.blocks else 0
        for j, (a, b) in enumerate(PARAMETER_SCALES[kind]):
            if a == 0:
                continue
            values = np.array([terms[i, TORQUE_TERM_HEADER + j]])
            if block and body is not None:
                values = np.append(values, body[:, (block - 1) * TORQUE_TERM_REALS + j])
            exps = np.frexp(values[(values != 0) & np.isfinite(values)])[1]
            if exps.size:
                out.append((int(exps.min()), int(exps.max()), a, b))
    return out


def torque_beyond(extent: tuple[float, float] | None, e: int | None) -> bool:
    """True when a compiled torque's parameters (their ``extent``, CompiledTorque.extent) reach
    outside ``2^-e .. 2^e`` (a cheap test that may say True for parameters whose units do not
    scale, such as a reference quaternion's components: :func:`scaling_of` decides)."""
    return e is not None and extent is not None and \
        (extent[0] < 2.0**-e or extent[1] > 2.0**e)


def _torque_bounds(params: list[tuple[int, int, int, int]], kb: int, e: int
                   ) -> tuple[float, float]:
    """The momentum exponents ka of a common scaling (the moments' kb given) that keep every
    parameter of ``params`` (:func:`_torque_exponents`) within ``2^-e .. 2^e``."""
    lo, hi = -math.inf, math.inf
    for emin, emax, a, b in params:
        # -e <= exponent + a ka + b kb <= e for the smallest and the largest exponent
        first, last = (-e - emin - b * kb) / a, (e - emax - b * kb) / a
        if a < 0:
            first, last = last, first
        lo, hi = max(lo, math.ceil(first)), min(hi, math.floor(last))
    return lo, hi


def scaling_of(method: MethodInfo, m2: NDArray[np.float64], I2: NDArray[np.float64],
               h: NDArray[np.float64], torqued: bool, extremes: NDArray[np.float64],
               torque: TorqueTerms | None = None, single: bool = False,
               wheels: bool = False) -> Scaling | None:
    """The scaling of a run (see the module), or None when it needs none: the momenta m2 (n, 3),
    the moments I2 (n, 3), the steps h (1,) or (n,), all finite, the moments positive;
    ``extremes`` the scales of the batch found by the compiled checks (the largest and the
    smallest nonzero max_i |m_i| of a body, the smallest and the largest moment);
    ``torque`` the run's compiled torque, if any; ``single``: a run of one body given as such
    (its messages name no body); ``wheels``: a run with reaction wheels. Raises ValueError for a
    batch that spans too many scales for one common scaling.

    A run whose bodies are within the method's range is rescaled when a parameter of its torque
    is not (a field or a rate beyond ``2^e``: its square would overflow), unless that would
    lose the momenta's digits or the step (then, and with reaction wheels, it runs as given).

    A common scaling brings the largest ``|m_i|`` to about 1 unless that would take a parameter
    of the torque out of ``2^-e .. 2^e``: then the momenta are scaled as near to it as the
    torque allows (a body far from rest against the torque's scale, or nearly at rest: the
    torque sets the scale of the motion, as it does for a body at rest)."""
    e = method.scale_exponent
    if e is None or m2.shape[0] == 0:
        return None
    lo, hi = 2.0**-e, 2.0**e
    # in a common scaling, a body whose |m| is far below the batch's is held to the range of
    # every method: its step is small against its own scale (the batch's fastest body bounds h),
    # so only its corrections of relative size (|h| |m| / I)^2 and beyond underflow (DMV's
    # narrower range is for the powers of h m / I of a body at its own scale)
    lo_m = min(lo, 2.0**-SCALE_EXPONENT)
    big, small, smallest_moment, largest_moment = extremes[:4].tolist()
    torque_params = _torque_exponents(torque) if torque is not None else None
    bodies_in_range = big <= hi and small >= lo and smallest_moment >= lo and \
        largest_moment <= hi
    if bodies_in_range and (wheels or not torque_params or
                            all(-e <= emin and emax <= e for emin, emax, _, _ in torque_params)):
        return None
    big_m = np.abs(m2).max(axis=1)
    i_max, i_min = I2.max(axis=1), I2.min(axis=1)
    if method.family != FAMILY_EXACT_SPLITTINGS:
        # (the exact flows take any moments; the other methods' arithmetic holds a body whose
        # moments span at most 2^SCALE_EXPONENT)
        with np.errstate(over="ignore"):        # (inf for a large moment: not wide)
            wide = np.ldexp(i_min, SCALE_EXPONENT) < i_max
        if wide.any():
            b = int(np.argmax(wide))
            raise ValueError(f"inertia: the principal moments{_of_body(b, single)} span more than "
                             f"2^{SCALE_EXPONENT} ({fmt(float(i_min[b]))} to "
                             f"{fmt(float(i_max[b]))}), beyond what method {method.name} holds; "
                             "the exact flow (method EXACT, and the exact splittings) takes any "
                             "moments")
    if not torqued and method.free_steps:
        ka = np.where(big_m > 0, -np.frexp(big_m)[1], 0).astype(np.int64)
        kb = np.broadcast_to(-np.frexp(i_max)[1], ka.shape).astype(np.int64)
        h_body = np.broadcast_to(h, ka.shape)
        if method.family != FAMILY_EXACT_SPLITTINGS:
            # a step that turns its body by less than 2^-1000 radians: the momentum is scaled
            # less, to keep the step a full-precision float64 in the run's units (the exact
            # flows take such a body in its own units)
            ka = np.where(h_body != 0, np.minimum(ka, _STEP_MARGIN + kb + np.frexp(h_body)[1]),
                          ka)
        # a body whose step or momentum is still not a float64 in the run's units keeps its units
        with np.errstate(over="ignore", under="ignore"):
            h_run = np.ldexp(h_body, kb - ka)
            m_run = np.ldexp(big_m, ka)
        bad = ~np.isfinite(h_run) | ((h_run == 0) & (h_body != 0)) \
            | ((m_run < _FULL_PRECISION) & (big_m > 0))
        ka[bad] = 0
        kb[bad] = 0
        return Scaling(ka[:, None], kb[:, None])
    g = float(big_m.max())
    ka0 = -math.frexp(g)[1] if g > 0 else 0
    kb0 = -math.frexp(float(i_max.max()))[1]
    torque_bound = False
    if torque_params:
        lo_ka, hi_ka = _torque_bounds(torque_params, kb0, e)
        # (and the largest |m_i| no larger than 2^e in the run's units)
        hi_ka = min(hi_ka, e + ka0)
        if lo_ka <= hi_ka and not lo_ka <= ka0 <= hi_ka:
            ka0 = int(min(max(ka0, lo_ka), hi_ka))
            torque_bound = True
    h0 = float(np.abs(h).max())
    step_bound = False
    if h0 != 0 and kb0 - ka0 + math.frexp(h0)[1] < -_STEP_MARGIN \
            and method.family != FAMILY_EXACT_SPLITTINGS:
        # a step that turns the bodies by less than 2^-1000 radians: the momenta are scaled
        # less, to keep the step a full-precision float64 in the run's units
        ka0 = _STEP_MARGIN + kb0 + math.frexp(h0)[1]
        step_bound = True
        if torque_params and ka0 < lo_ka:
            return None
    try:
        h_run = math.ldexp(h0, kb0 - ka0)
    except OverflowError:
        h_run = math.inf
    if not math.isfinite(h_run) or (h0 != 0 and h_run == 0):
        return None
    small_m = np.ldexp(big_m, ka0)
    lost = (big_m > 0) & (small_m < _FULL_PRECISION) & (ka0 < 0)
    if lost.any() and bodies_in_range:
        return None     # (bodies within the range, a torque beyond it: the run as given)
    if lost.any():
        b = int(np.argmax(lost))
        raise ValueError(f"torque: its parameters, the step and the momentum{_of_body(b, single)} "
                         f"(|m_i| up to {fmt(float(big_m[b]))}) are too far apart in scale for "
                         "float64: in units where the torque's parameters and the step are float64 "
                         f"numbers, the momentum is below 2^{_FULL_PRECISION_EXPONENT} and loses "
                         "its digits (a rate of the torque and |m| / I more than 2^1000 apart); "
                         "give the torque, the step, m and inertia in units of closer scales")
    bad_m = (big_m > 0) & (small_m < lo_m) & (not torque_bound) & (not step_bound)
    bad_i = np.ldexp(i_min, kb0) < lo
    if bad_m.any() or bad_i.any():
        b = int(np.argmax(bad_m | bad_i))
        what = "|m|" if bad_m[b] else "the moments of inertia"
        raise ValueError(f"the batch spans too many scales: body {b} has {what} below "
                         f"2^-{SCALE_EXPONENT if bad_m[b] else e} of "
                         f"the largest in the batch, so no common rescaling keeps every body "
                         f"exact for method {method.name} (bodies of extreme scale are rescaled "
                         "by powers of two); integrate bodies of very different scales in "
                         "separate calls")
    return Scaling(np.array([[ka0]], dtype=np.int64), np.array([[kb0]], dtype=np.int64))
