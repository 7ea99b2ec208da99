"""The method table of frb: every integrator of :func:`frb.integrate`, with its reference,
order, properties, the torques it takes and the codes of its compiled step.

:data:`METHODS` maps a case-insensitive name to a :class:`MethodInfo`; the family and variant
codes are the shared numbers of ``tools/numbers_table.py`` (``FAMILY_*``, ``VARIANT_*``), the
ones the Fortran families select their variants by. Adding a method: its family's Fortran
module, its variant in the table of shared numbers, one row here, and its test.
"""
from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from . import _numbers_table as _sn
from . import _validate, schedules
from ._numbers_table import (
    FAMILY_EXACT_SPLITTINGS as _CZ, FAMILY_APPROXIMATE_FREE_FLOWS as _VILMART,
    FAMILY_RUNGE_KUTTA as _GANAPATHI, FAMILY_LIE_STORMER_VERLET as _TERZE,
    FAMILY_MIDPOINT_TRAPEZOID as _KRYSL)
from .torques import ConstantField, LinearDamping, Rotor, Torque, TorqueSum, as_torque, shown

#: A rotor, for the methods that take rotors (a gyrostat: wheels without a law).
_ZERO_ROTOR = Rotor(np.zeros(3))

__all__ = ["MethodInfo", "METHODS", "SPLITTING", "NEWTON_RTOL", "NEWTON_MAX_ITER",
           "MAX_INERTIA_RATIO", "method_of", "check_dmv_inertia"]

#: Newton tolerance of the implicit methods (4 eps, shared with the compiled loop): the
#: iteration stops when the update is at most this times the size of the unknown.
NEWTON_RTOL: float = _sn.NEWTON_RTOL
#: Iteration cap of the implicit methods (50, shared with the compiled loop).
NEWTON_MAX_ITER: int = _sn.NEWTON_MAX_ITER

#: The torque classes of a method that takes any torque, of NYSTROM4 (the flow of the modified
#: potential {U, {U, T}} is known for the field torques only), and of the free flow EXACT.
ANY_TORQUE: tuple[type, ...] = (Torque,)
FIELD_TORQUES: tuple[type, ...] = (ConstantField,)
NO_TORQUE: tuple[type, ...] = ()
#: EXACT: linear damping alone (its exact flow is a time change of the free flow), or constant
#: rotors alone (a gyrostat, whose flow is exact too).
DAMPING_OR_ROTORS: tuple[type, ...] = (LinearDamping, Rotor)


@dataclass(frozen=True)
class MethodInfo:
    """What :func:`integrate` knows of a method: its reference, order and properties.

    ``torques`` lists the torque classes the method takes (``()``: torque-free only);
    :meth:`accepts` tells whether a given torque is one of them."""

    name: str
    family: int
    variant: int
    reference: str
    order: int | None
    implicit: bool
    conserves: str
    description: str
    torques: tuple[type, ...] = ANY_TORQUE
    #: why the method takes only the torques above (the end of its refusal message)
    torque_note: str = ""
    #: whether it takes torques of the angular momentum (``torque(t, Q, m)``, damping, rotors,
    #: attitude control), and its order with them (None with ``momentum``: exact)
    momentum: bool = False
    momentum_order: int | None = None
    #: The scale range of the method, as a power of two (see frb._scaling): runs outside it
    #: are rescaled exactly by powers of two; None: the method takes every scale itself.
    scale_exponent: int | None = _sn.SCALE_EXPONENT
    #: whether it takes reaction wheels driven by a law (frb.Wheels, frb.wheel_laws), and its
    #: order with them (None with ``wheels``: the order of the user's coefficients)
    wheels: bool = False
    wheel_order: int | None = None

    @property
    def sensitivities(self) -> bool:
        """True when :func:`frb.integrate` computes the sensitivities of its solutions
        (``sensitivities=``: the exact flow, the exact-flow splittings and RK4; the variational
        steps of its family carry the derivatives of the discrete map)."""
        return self.family in (_CZ, _GANAPATHI)

    @property
    def free_steps(self) -> bool:
        """True when the method's family steps torque-free bodies several steps a call, each
        with its own step length (the exact flow, the approximate free flows)."""
        return self.family in (_CZ, _VILMART)

    def accepts(self, torque: Any) -> bool:
        """True when the method takes ``torque`` (None, a Torque or a plain callable): one of
        ``torques``, or a sum of terms of one of them; a method limited to some torques takes
        them compiled only (not a subclass called from Python)."""
        if torque is None:
            return True
        tq = as_torque(torque)
        if tq is None:
            return True
        terms = tq.terms if isinstance(tq, TorqueSum) and self.torques != ANY_TORQUE else (tq,)
        if not any(all(isinstance(t, kind) for t in terms) for kind in self.torques):
            return False
        if self.torques != ANY_TORQUE and tq.compiled is None:
            return False
        return self.momentum or not tq.uses_momentum

    def refusal(self, torque: Any) -> str:
        """Why the method does not take ``torque`` (for its ValueError)."""
        tq = as_torque(torque)
        if tq is not None and isinstance(tq, self.torques) and tq.uses_momentum and \
                not self.momentum:
            return (f"method {self.name} does not take torques of the angular momentum "
                    f"({shown(tq)}): use STRANG, YOSHIDA4, RK4 or a DMV method")
        return f"method {self.name} {self.torque_note}"

    def wheel_refusal(self) -> str:
        """Why the method does not take reaction wheels (for its ValueError)."""
        takers = ", ".join(name for name, info in METHODS.items() if info.wheels)
        text = (f"method {self.name} does not take reaction wheels (wheels=): their motor torques "
                f"are torques of the state, which its steps do not take; use one of {takers}")
        if self.accepts(_ZERO_ROTOR):
            text = text.replace("reaction wheels (wheels=)",
                                "reaction wheels driven by a law (wheels=, wheel_law=)") + \
                "; wheels without a law keep their momenta (a gyrostat), which it takes"
        return text


#: The order of each method with reaction wheels driven by a law (frb.Wheels): the splittings
#: split in the total momentum (their orders with torques of m; RKN6_14 with the wheel kick of
#: order 4), the free part of the approximate flows (order 2), RK4; measured in
#: tests/test_wheels.py. The other methods refuse wheels.
WHEEL_ORDERS: dict[str, int] = {"STRANG": 2, "YOSHIDA4": 4, "RKN6_14": 4, "RK4": 4, "DMV2": 2,
                                "DMV4": 2, "DMV6": 2, "DMV8": 2, "SPLIT3": 2, "SYMROT": 2,
                                "MIDPOINT": 2}


def _m(name: str, family: int, variant: int, reference: str, order: int | None, implicit: bool,
       conserves: str, description: str, torques: tuple[type, ...] = ANY_TORQUE,
       torque_note: str = "", momentum: bool = False, momentum_order: int | None = None
       ) -> tuple[str, MethodInfo]:
    # DMV of orders 4-8: the corrections of the moments take powers up to the seventh of 1 / I
    scale = _sn.SCALE_EXPONENT_DMV if family == _VILMART and variant in (
        _sn.VARIANT_DMV4, _sn.VARIANT_DMV6, _sn.VARIANT_DMV8) else _sn.SCALE_EXPONENT
    return name, MethodInfo(name, family, variant, reference, order, implicit, conserves,
                            description, torques=torques, torque_note=torque_note,
                            momentum=momentum, momentum_order=momentum_order,
                            scale_exponent=scale, wheels=name in WHEEL_ORDERS,
                            wheel_order=WHEEL_ORDERS.get(name))


_CZ2010 = "Celledoni and Zanna 2010 (ACM TOMS Algorithm 903)"
_V2013 = "Vilmart 2013, Rigid body dynamics"
_K2008 = "Krysl 2008"
#: The methods of :func:`integrate` (case-insensitive names).
METHODS: dict[str, MethodInfo] = dict([
    _m("EXACT", _CZ, _sn.VARIANT_EXACT, _CZ2010 + ", the exact flow; the gyrostat: Volterra "
       "1899, frb's exact flow (docs: How the exact flow is computed)", None, False,
       "|m|, E, Qm (exact flow); with rotors |m + h|, E, Q(m + h)",
       "one exact free flow a step (torque-free bodies; linear damping alone: the free flow "
       "in the time (1 - e^{-ch}) / c, m scaled by e^{-ch}; rotors alone: the exact flow of the "
       "gyrostat with their internal momentum)", DAMPING_OR_ROTORS,
       "is the exact flow: it takes no torque but linear_damping or rotors, alone (use STRANG, "
       "RKN6_14 or another method for a torqued body)", True),
    _m("STRANG", _CZ, _sn.VARIANT_SPLITTING, _CZ2010 + ", splitting with the exact free flow", 2, False,
       "|m|, Qm (torque-free: exact)",
       "A(h/2) B(h) A(h/2), A the exact free flow, B the exact flow of the torque (Q fixed); "
       "with rotors A is the gyrostat's exact flow and B the other terms'",
       momentum=True, momentum_order=2),
    _m("RKN6_14", _CZ, _sn.VARIANT_SPLITTING, "Blanes and Moan 2002, RKN6 of 14 stages; " + _CZ2010 + ", eq. (23)",
       6, False, "|m|, Qm (torque-free: exact)",
       "14-stage sixth-order splitting, A exact free flow (order 6 for torques of Q only: its "
       "coefficients assume a kick that does not depend on m: order 4 measured with torques of m)",
       momentum=True, momentum_order=4),
    _m("YOSHIDA4", _CZ, _sn.VARIANT_SPLITTING, "Yoshida 1990 (triple jump of Strang); " + _CZ2010 + ", splitting "
       "with the exact free flow", 4, False, "|m|, Qm (torque-free: exact)",
       "S(g1 h) S(g2 h) S(g1 h), S = STRANG, g1 = 1 / (2 - 2^(1/3)), g2 = 1 - 2 g1: order 4 "
       "also for torques of m", momentum=True, momentum_order=4),
    _m("DMV2", _VILMART, _sn.VARIANT_DMV2, "Moser and Veselov 1991; " + _V2013 + ", Algorithm 3 (eq. (16) with "
       "a torque)", 2, True, "|m|, E, Qm (torque-free); vertical Qm (heavy top)",
       "discrete Moser-Veselov; with a torque the free part of Strang eq. (16)",
       momentum=True, momentum_order=2),
    *(_m(f"DMV{p}", _VILMART, variant, "Hairer and Vilmart 2006; " + _V2013 + ", Algorithm 4, Table 1",
         p, True, "|m|, E, Qm (torque-free); vertical Qm (heavy top)",
         f"preprocessed DMV of order {p} (order 2 with a torque: free part of Strang eq. (16))",
         momentum=True, momentum_order=2)
      for p, variant in ((4, _sn.VARIANT_DMV4), (6, _sn.VARIANT_DMV6), (8, _sn.VARIANT_DMV8))),
    _m("SPLIT3", _VILMART, _sn.VARIANT_SPLIT3, _V2013 + ", splitting into three rotations (symmetric "
       "composition)", 2, False, "|m|, Qm (torque-free; not E); vertical Qm (heavy top)",
       "R3(h/2) R2(h/2) R1(h) R2(h/2) R3(h/2); with a torque the free part of Strang eq. (16)",
       momentum=True, momentum_order=2),
    _m("SYMROT", _VILMART, _sn.VARIANT_SYMROT, _V2013 + ", Algorithm 2 (with alpha, beta corrected)", 2,
       False, "|m|, Qm (torque-free; not E); exact for I1 = I2 or I2 = I3, not I1 = I3",
       "symmetric + rotation splitting R(h/2) S(h) R(h/2) (axis 3 the symmetric axis); with a "
       "torque the free part of Strang eq. (16)", momentum=True, momentum_order=2),
    _m("MIDPOINT", _VILMART, _sn.VARIANT_MIDPOINT, _V2013 + ", Remark 4", 2, True,
       "all quadratic invariants: |m|, E, Qm, Q^T Q (torque-free)",
       "implicit midpoint rule (Newton); with a torque the free part of Strang eq. (16)",
       momentum=True, momentum_order=2),
    _m("NYSTROM4", _VILMART, _sn.VARIANT_NYSTROM4, _V2013 + ", fourth-order Nystrom splitting (flow of the "
       "modified potential corrected)", 4, False,
       "|m| of the free part; Qm (vertical) for the heavy top",
       "U(h/6) T(h/2) U(2h/3) V(-h^3/72) T(h/2) U(h/6), T the exact free flow", FIELD_TORQUES,
       "needs the flow of the modified potential {U,{U,T}}: it supports torque=None, "
       "constant_field and heavy_top only"),
    _m("RK4", _GANAPATHI, _sn.VARIANT_RK4, "Ganapathi 2005, sections 3.1-3.4 and 7 (q' = q (0, omega) / 2; the "
       "torque at every stage)", 4, False,
       "|q| = 1 by renormalisation only (no invariant exact; not symmetric)",
       "classical RK4 on (q, omega); the torque at the normalised stage quaternion",
       momentum=True, momentum_order=4),
    _m("TERZE", _TERZE, _sn.VARIANT_TERZE, "Terze, Mueller and Zlatar 2015 (explicit Lie-group Stormer-Verlet "
       "scheme)", 2, False, "Qm, |m| (torque-free); (Qm)_z for the heavy top; not E; not "
       "symmetric", "explicit Lie-group Stormer-Verlet type scheme (one torque evaluation a step)"),
    # Krysl 2008: name, where in the paper, conserved quantities, the step (the variant: the
    # shared number VARIANT_<name>)
    *(_m(name, _KRYSL, getattr(_sn, f"VARIANT_{name}"), _K2008 + where, 2, True, conserves, step)
      for name, where, conserves, step in [
          ("TRAP", ", eq. (14)", "the 'midpoint' energy E(m - h/2 w x m) (torque-free)",
           "trapezoidal: fE(h/2) then bE(h/2)"),
          ("IMID", ", algorithm IMID (torque at t + h/2)", "E, |m| (torque-free)",
           "midpoint: bE(h/2) then fE(h/2)"),
          ("TRAPM", ", eq. (20)", "Qm (torque-free); vertical Qm (heavy top)",
           "momentum trapezoidal: (18)(h/2) then (19)(h/2)"),
          ("IMIDM", ", algorithm IMIDM", "Qm (torque-free); vertical Qm (heavy top)",
           "momentum midpoint: (19)(h/2) then (18)(h/2)"),
          ("SWC1", ", SWC1 (Simo and Wong 1991, ALGO_C1)",
           "E, Qm (torque-free); vertical Qm (heavy top)",
           "Simo-Wong energy-momentum; T_{n-1/2} = T(t + h/2, R exp[Psi/2]) (frb's choice)"),
          ("AKW", ", AKW (Austin, Krishnaprasad and Wang 1993; Cayley map of h omega / 2)",
           "E, Qm (torque-free); E and vertical Qm (heavy top)",
           "Austin-Krishnaprasad-Wang implicit midpoint"),
          ("BBTRAP", ", BBTRAP (Bottasso and Borri 1998)",
           "E, Qm (torque-free); vertical Qm (heavy top)", "Bottasso-Borri trapezoidal, dexp^-1 ~ 1"),
          ("BBTRAPWD", ", BBTRAPWD (Bottasso and Borri 1998)",
           "Qm (torque-free); vertical Qm (heavy top); not symmetric",
           "Bottasso-Borri trapezoidal with dexp^-1"),
      ]),
])

#: A splitting of the exact free flow with the user's coefficients (``coefficients=(a, b)``).
SPLITTING = MethodInfo("SPLITTING", _CZ, _sn.VARIANT_SPLITTING, _CZ2010 + ", splitting with the exact free flow",
                       None, False, "", "user splitting coefficients", momentum=True, wheels=True)


def method_of(method: str | None, coefficients: tuple[ArrayLike, ArrayLike] | None
              ) -> tuple[str, MethodInfo, tuple[tuple[float, ...], tuple[float, ...]] | None]:
    """(name, MethodInfo, splitting coefficients or None) of ``method`` (case-insensitive) or
    of the user's ``coefficients`` (then method SPLITTING); ValueError / TypeError naming
    ``method`` otherwise."""
    if coefficients is None and isinstance(method, str):
        try:
            return _named_method(method)
        except KeyError:
            pass        # reported below
    if coefficients is not None:
        a, b = schedules.coefficients(None, coefficients)
        return "SPLITTING", SPLITTING, (a, b)
    if method is None:
        raise TypeError("integrate() needs method= (one of " + ", ".join(METHODS)
                        + ") or coefficients=(a, b)")
    if not isinstance(method, str):
        raise TypeError(f"method must be a method's name (a string, one of {', '.join(METHODS)}),"
                        f" got {method!r}")
    raise ValueError(f"method must be one of {', '.join(METHODS)}, got {method!r}")


@functools.lru_cache(maxsize=64)
def _named_method(method: str
                  ) -> tuple[str, MethodInfo, tuple[tuple[float, ...], tuple[float, ...]] | None]:
    """_method of a valid name (cached: a call of integrate looks it up once)."""
    name = _validate.name_key(method)
    return name, METHODS[name], schedules.COEFFICIENT_SETS.get(name)


#: Largest I_max / I_min of each DMV order (frb.integrate's DMVp and frb.dmv_step /
#: frb.dmv_integrate): the h^2..h^6 corrections of the moments involve powers of the inverse
#: moments up to the seventh, which overflow beyond (order 2 has no corrections).
MAX_INERTIA_RATIO: dict[int, float] = {2: np.inf, 4: 1e100, 6: 1e50, 8: 1e40}


def check_dmv_inertia(info: MethodInfo, I2: NDArray[np.float64], single: bool) -> None:
    """Raise ValueError when ``info`` is a DMV method of order p and a body's I_max / I_min in
    I2 (n, 3) exceeds MAX_INERTIA_RATIO[p] (the message names the body unless ``single``).
    Non-finite or non-positive moments are left to the value checks."""
    order = {_sn.VARIANT_DMV2: 2, _sn.VARIANT_DMV4: 4, _sn.VARIANT_DMV6: 6,
             _sn.VARIANT_DMV8: 8}.get(info.variant) if info.family == _VILMART else None
    if order is None:
        return
    limit = MAX_INERTIA_RATIO[order]
    if limit == np.inf or not np.isfinite(I2).all() or not (I2 > 0).all():
        return
    with np.errstate(over="ignore"):     # (a ratio beyond float64 is inf: refused)
        ratio = I2.max(axis=1) / I2.min(axis=1)
    if (ratio > limit).any():
        b = int(np.argmax(ratio > limit))
        body = "" if single else f" (body {b})"
        raise ValueError(f"inertia: the DMV method of order {order} supports I_max / I_min up to "
                         f"{limit:.0e}, got {ratio[b]:.3g}{body} (its corrections of the moments "
                         "would overflow); use order 2 or frb.quat_step")
