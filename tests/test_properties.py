"""Property tests: for any valid input the flows return finite states that keep the invariants.

Inputs mix generic values with the degenerate ones (zero components, equal moments, components near
underflow, huge and tiny scales, long steps). The number of examples of each property is its own
below, or ``FRB_FUZZ_EXAMPLES`` when that is set (``bash .ci/run --fuzz N`` runs this file with
tests/test_fuzz.py at that budget)."""
import os

import numpy as np
import pytest
from hypothesis import example, given, settings, strategies as st

import frb
from refdata import variational_flow

# the accuracy tests of the batched flows run under each SIMD target of this CPU (frb.simd)
pytestmark = pytest.mark.usefixtures("each_cpu_target")


def _examples(default: int) -> int:
    """The examples of a property: FRB_FUZZ_EXAMPLES when set, else default."""
    return int(os.environ.get("FRB_FUZZ_EXAMPLES", default))


component = st.one_of(
    st.floats(-1e3, 1e3, allow_nan=False, allow_subnormal=False),
    st.sampled_from([0.0, -0.0, 1.0, -1.0, 1e-12, -1e-9, 1e-160, 2.5e-300]),
)
moment = st.one_of(st.floats(1e-3, 1e3), st.sampled_from([1.0, 2.0, 3.0]))
step = st.one_of(st.floats(-50, 50, allow_nan=False, allow_subnormal=False), st.sampled_from([0.0, 1e-300, -1e4, 3e3]))


@st.composite
def bodies(draw):
    m = np.array([draw(component) for _ in range(3)])
    inertia = np.array([draw(moment) for _ in range(3)])
    if draw(st.booleans()):
        i, j = draw(st.permutations([0, 1, 2]))[:2]
        inertia[j] = inertia[i]              # symmetric body (or the sphere, twice)
    q = np.array([draw(st.floats(-1, 1, allow_subnormal=False)) for _ in range(4)])
    if np.linalg.norm(q) < 1e-3:
        q = np.array([1.0, 0, 0, 0])
    return m, inertia, q / np.linalg.norm(q), draw(step)


def _norm(v):
    """|v| without underflow of the squares (numpy's norm underflows below ~1e-154)."""
    big = np.max(np.abs(v))
    return 0.0 if big == 0 else big * np.linalg.norm(v / big)


@settings(max_examples=_examples(400))
@given(bodies(), st.integers(0, 3))
# within 1e-141 of the axis of a symmetric body the frame angle's coefficient sqrt(c0 (c0 + c1))
# underflows to 0 (atan2_ratio takes that quotient without a NaN)
@example((np.array([0.0, 9.65001741e-142, 1.0]), np.array([1.0, 1.0, 0.5]), np.array([1.0, 0, 0, 0]), 1e-300), 0)
@example((np.array([0.0, 9.65001741e-142, 1.0]), np.array([1.0, 1.0, 0.5]), np.array([1.0, 0, 0, 0]), 0.1), 0)
# on the separatrix, cosh(u0) overflows and the quadrature's first
# amplitude is exactly pi/2, where the integrand is infinite (NaN = Inf * 0 before the guard)
@example((np.array([2.5e-300, 1e-160, 1.0]), np.array([2.0, 0.5, 1.0]), np.array([1.0, 0, 0, 0]), 1.0), 1)
# a semi-exact step of a symmetric body with a tiny component along its distinct axis (the
# angle's sum of order 1 / B without its secular part taken exactly)
@example((np.array([4.8, 2.10925258e-63, 456.5625]), np.array([1.0, 3.0, 1.0]),
          np.array([1.0, 0, 0, 0]), 0.125), 1)
def test_flows_are_finite_and_keep_the_invariants(body, quadrature):
    m, inertia, q, h = body
    Q = frb.quat_to_matrix(q)
    m1, Q1 = frb.frb_step(m, Q, h, inertia, quadrature)
    m2, q2 = frb.quat_step(m, q, h, inertia, quadrature)
    for a in (m1, Q1, m2, q2):
        assert np.all(np.isfinite(a))
    g = _norm(m)
    tol = 1e-13 * g
    assert abs(_norm(m1) - g) <= tol and abs(_norm(m2) - g) <= tol
    assert np.max(np.abs(Q1 @ m1 - Q @ m)) <= 1e-13 * g
    assert np.max(np.abs(frb.quat_to_matrix(q2) @ m2 - Q @ m)) <= 1e-13 * g
    assert np.max(np.abs(Q1.T @ Q1 - np.eye(3))) <= 1e-14
    assert abs(np.linalg.norm(q2) - 1) <= 1e-14
    # energy, relative to the largest possible |m|^2/I_min scale
    if g > 0:
        e0 = np.sum((m / g) ** 2 / inertia)
        assert abs(np.sum((m1 / g) ** 2 / inertia) - e0) <= 1e-13 / inertia.min()


# ----------------------------------------------------------------- extreme scales
#
# Scaling law: if m(t), Q(t) solve m' = m x I^-1 m, Q' = Q hat(I^-1 m), then for a, b > 0
# a m(a t / b), Q(a t / b) solve the same equations with the moments b I:
#     d/dt [a m(a t/b)] = (a^2/b) (m x I^-1 m) = (a m) x (b I)^-1 (a m),
#     d/dt Q(a t/b) = (a/b) Q hat(I^-1 m) = Q hat((b I)^-1 (a m)).
# So the step h of the body (m, I) equals the step h b / a of (a m, b I), momentum times a and
# the same attitude. With a, b powers of two every scaled input is exact (or, if subnormal,
# rounded: the reference then starts from the rounded input scaled back exactly), and the
# reference is an independent computation at moderate scale.

moderate = st.floats(0.1, 10.0)


@st.composite
def scaled_bodies(draw):
    m = np.array([draw(st.floats(-10, 10, allow_subnormal=False)) for _ in range(3)])
    if not np.abs(m).max() > 1e-3:
        m = np.array([0.3, -0.5, 0.8])
    inertia = np.array([draw(moderate) for _ in range(3)])
    phase = draw(st.one_of(st.floats(1e-3, 50), st.sampled_from([1e3, 1e8, 1e15])))
    h = phase * inertia.min() / np.linalg.norm(m) * draw(st.sampled_from([1.0, -1.0]))
    # exponents of a and b: the scaled |m|, moments and step anywhere in the float64 range,
    # subnormal ones included
    ka = draw(st.integers(-1070, 1020))
    kb = draw(st.integers(max(-1070, ka - 1000), min(1020, ka + 1000)))
    return m, inertia, h, ka, kb


def _scale(x, k):
    # (beyond the float64 range: infinite, which the test skips or bounds by an infinite size)
    with np.errstate(over="ignore"):
        return np.ldexp(x, k)


@settings(max_examples=_examples(150))
@given(scaled_bodies(), st.sampled_from([0, 3]))
# (a component at the smallest normal number at moderate scale)
@example((np.array([1.0, 0.5, 2.0**-1022]), np.array([1.0, 1.0, 1.0]), 0.8944271909999159, 26, 0), 0)
@example((np.array([2.0**-1022, 1.25, 2.0**-1022]), np.array([1.0, 0.5, 1.0]), 400.0, 200, 0), 0)
def test_extreme_scales_follow_the_scaling_law(body, quadrature):
    m, inertia, h, ka, kb = body
    m_s, i_s, h_s = _scale(m, ka), _scale(inertia, kb), _scale(h, kb - ka)
    if not (np.isfinite(h_s) and h_s != 0 and (np.abs(m_s) > 0).any()):
        return          # the scaled step is not a float64 (or the momentum underflows to 0)
    # the inputs the scaled call really gets, at moderate scale
    m_r, i_r, h_r = _scale(m_s, -ka), _scale(i_s, -kb), _scale(h_s, ka - kb)
    q = np.array([0.5, 0.5, -0.5, 0.5])
    Q = frb.quat_to_matrix(q)
    m1, Q1 = frb.frb_step(m_r, Q, h_r, i_r, quadrature)
    m1s, Q1s = frb.frb_step(m_s, Q, h_s, i_s, quadrature)
    m2s, q2s = frb.quat_step(m_s, q, h_s, i_s, quadrature)
    for a in (m1s, Q1s, m2s, q2s):
        assert np.isfinite(a).all()
    # The two differ by the rounding of the unit momentum (its formula changes where |m|^2 leaves
    # [1e-290, 1e290]), which the flow amplifies by up to the angle |h| |m| / I_min; steps beyond
    # 64 radians run in quadruple precision from the unscaled inputs, the same at every scale.
    phase = abs(h_r) * np.linalg.norm(m_r) / i_r.min()
    rel = 2e-15 * (2 + (phase if phase <= 64 else 0))
    size = np.ldexp(np.abs(m1).max(), ka)
    assert np.abs(m1s - _scale(m1, ka)).max() <= rel * size + 4 * 2.0**-1074
    assert np.abs(Q1s - Q1).max() <= rel
    assert np.abs(frb.quat_to_matrix(q2s) - Q1).max() <= rel + 4e-15
    # bit for bit where the scaled computation takes the same path (everything in the normal
    # range of the unit-norm scaling: |m|^2 in [1e-290, 1e290], moments and h / I_max normal)
    # (and every component of the moderate-scale momentum well above the smallest normal number:
    # m = (1, 0.5, 2^-1022), ka = 26 has products subnormal at one scale and normal at the other)
    big = np.abs(m_s).max()
    if (1e-145 <= big <= 1e144 and 1e-290 <= np.sum(m_r**2) <= 1e290
            and i_s.min() > 1e-300 and abs(h_s) / i_s.max() > 1e-300 and np.abs(m_s).min() > 1e-300
            and np.abs(m_r).min() > 1e-290):
        assert np.array_equal(m1s, _scale(m1, ka)) and np.array_equal(Q1s, Q1)


@settings(max_examples=_examples(60))
@given(scaled_bodies())
@example((np.array([1.0, 2.0**-7, 2.0**-1022]), np.array([1.0, 1.0, 1.0]), 1.0, 26, 0))
# (a body of |m| 2^-183 alone, below DMV6's range: rescaled)
@example((np.array([0.3, -0.5, 0.8]), np.array([1.0, 1.0, 2.0]), 1.0, -183, 63))
@example((np.array([0.3, -0.5, 0.8]), np.array([1.0, 1.0, 1.0]), 1.0, -178, 64))
def test_dmv_follows_the_scaling_law(body):
    # the DMV baseline rescales what its kernel cannot take: bit for bit in the normal range
    m, inertia, h, ka, kb = body
    h = 0.3 * inertia.min() / np.linalg.norm(m)       # a step the DMV equation solves
    m_s, i_s, h_s = _scale(m, ka), _scale(inertia, kb), _scale(h, kb - ka)
    if not (np.isfinite(h_s) and h_s != 0 and (np.abs(m_s) > 0).any()):
        return
    m_r, i_r, h_r = _scale(m_s, -ka), _scale(i_s, -kb), _scale(h_s, ka - kb)
    q = np.array([1.0, 0, 0, 0])
    m1, q1 = frb.dmv_step(m_r, q, h_r, i_r)
    m1s, q1s = frb.dmv_step(m_s, q, h_s, i_s)
    tol = 4e-15 * np.ldexp(np.abs(m1).max(), ka) + 4 * 2.0**-1074
    assert np.abs(m1s - _scale(m1, ka)).max() <= tol
    assert np.abs(q1s - q1).max() <= 4e-15
    # bit for bit where no intermediate of either run is subnormal: powers of two scale every
    # normal operation exactly, a subnormal one rounds at an absolute 2^-1074. The attitude does
    # not scale: its components of the size of min_i |m_i| / |m| (at h |m| / I of order 1) come
    # from products that are subnormal at one scale and normal at the other when a component of
    # the moderate-scale momentum is near the smallest normal number (m = (1, 2^-7, 2^-1022),
    # ka = 26: the last component of q, 3.3e-309, differs by one subnormal ulp)
    if (np.abs(m_s).min() > 1e-300 and np.abs(m_r).min() > 1e-300 and i_s.min() > 1e-300
            and abs(h_s) > 1e-300):
        assert np.array_equal(m1s, _scale(m1, ka)) and np.array_equal(q1s, q1)


@pytest.mark.parametrize("method", ["RKN6_14", "DMV6", "RK4", "TRAP", "SWC1", "TERZE"])
@pytest.mark.parametrize("torque", ["free", "heavy top", "gravity gradient"])
def test_integrate_follows_the_scaling_law(method, torque):
    # frb.integrate runs bodies of extreme scales rescaled by powers of two: the same results bit
    # for bit as at moderate scale, the torques' parameters scaled too
    # (field and weight by a^2 / b, orbital rate by a / b)
    m, inertia, q = np.array([[0.3, 0.5, 0.8], [-0.2, 0.9, 0.1]]), np.array([1.0, 2.0, 3.0]), \
        np.tile([0.5, 0.5, -0.5, 0.5], (2, 1))

    def make(ka, kb):
        if torque == "heavy top":
            return frb.torques.heavy_top(np.ldexp(1.0, 2 * ka - kb), [0.1, 0.0, 0.5])
        if torque == "gravity gradient":
            return frb.torques.gravity_gradient(np.ldexp(0.7, ka - kb))
        return None

    ref = frb.integrate(m, q, inertia, 0.1, 5, method=method, torque=make(0, 0), save_every=2)
    for ka, kb in [(-520, 0), (-900, -1000), (500, 0), (0, -600), (0, 600)]:
        tr = frb.integrate(np.ldexp(m, ka), q, np.ldexp(inertia, kb), np.ldexp(0.1, kb - ka), 5,
                           method=method, torque=make(ka, kb), save_every=2)
        assert np.array_equal(np.ldexp(tr.m, -ka), ref.m) and np.array_equal(tr.q, ref.q)
        assert np.array_equal(np.ldexp(tr.t, ka - kb), ref.t)


def test_integrate_user_torque_is_called_in_the_callers_units():
    seen = []

    def torque(t, Q):
        seen.append(t)
        return np.cross(Q[..., 2, :], [0.1, 0.0, 0.5]) * 2.0**-1000 * (1 + 0.1 * np.sin(t * 2.0**-500))

    m, inertia = np.array([0.3, 0.5, 0.8]) * 2.0**-500, np.array([1.0, 2.0, 3.0])
    tr = frb.integrate(m, [1.0, 0, 0, 0], inertia, 0.1 * 2.0**500, 3, method="RK4", torque=torque)
    # the times the torque saw are the caller's (multiples of h / 2 for RK4's stages)
    assert max(seen) == pytest.approx(3 * 0.1 * 2.0**500)
    ref = frb.integrate(m * 2.0**500, [1.0, 0, 0, 0], inertia, 0.1, 3, method="RK4",
                        torque=lambda t, Q: np.cross(Q[..., 2, :], [0.1, 0.0, 0.5]) * (1 + 0.1 * np.sin(t)))
    assert np.array_equal(tr.m * 2.0**500, ref.m) and np.array_equal(tr.q, ref.q)


# (each example integrates the reference at 160 bits, about 20 ms: at most 2,000 of them)
@settings(max_examples=min(_examples(40), 2000), deadline=None)
@given(st.lists(st.floats(-1.0, 1.0, allow_subnormal=False), min_size=3, max_size=3),
       st.floats(-3.0, 3.0), moment, moment, moment, st.floats(-16.0, np.log10(0.06)),
       st.booleans())
def test_attitude_block_of_short_turns(direction, log_scale, i1, i2, i3, log_turn, backwards):
    """The attitude's derivative in the momentum of an exact step turning the body by
    phi = |h| |m| / I_min <= 0.06 (below the series' bound 1/16 after the rounding of h) agrees with the variational equations integrated at 160 bits to
    4e-15 of the block's largest entry."""
    u = np.array(direction)
    if _norm(u) < 1e-3:
        u = np.array([0.6, 0.0, 0.8])
    m = u / _norm(u) * 10.0 ** log_scale
    inertia = np.array([i1, i2, i3])
    h = (-1.0 if backwards else 1.0) * 10.0 ** log_turn * inertia.min() / _norm(m)
    ref = variational_flow(m, inertia, h)
    block = np.array([[float(x) for x in row[:3]] for row in ref["phi"][3:]])
    _, _, jac = frb.quat_step(m, [1.0, 0.0, 0.0, 0.0], h, inertia, jacobian=True)
    e = np.abs(jac.state[3:, :3] - block).max() / np.abs(block).max()
    assert e < 4e-15, e
