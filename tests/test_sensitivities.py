"""frb.integrate(..., sensitivities=...): the derivatives of the numerical solution against
central finite differences of frb.integrate itself, Richardson-extrapolated (an independent
reference: the kept states of runs from perturbed inputs, differenced), for every method and
built-in torque that frb differentiates; the states with sensitivities equal those without, bit
for bit; the exact flow's against the variational reference (the state transition matrix of one
step, tests/data/reference_jacobian.npz); refusals by name.

Perturbations: the momentum along e_i; the attitude by the body-frame rotation exp(hat(eps e_j))
(q (cos(eps/2), sin(eps/2) e_j)); the result's attitude difference read as the body-frame angle
of conj(q_ref) q (its logarithm). The differences are (f(eps) - f(-eps)) / (2 eps) at eps and
eps/2, extrapolated (4 D(eps/2) - D(eps)) / 3: a truncation error of O(eps^4).
"""
import numpy as np
import pytest

import frb
from frb import torques
from frb._numbers_table import CONTROL_KD, CONTROL_KP, CONTROL_Q_REF

TOL = 1e-7


def qmul(p, q):
    p0, pv = p[..., :1], p[..., 1:]
    q0, qv = q[..., :1], q[..., 1:]
    return np.concatenate([p0 * q0 - np.sum(pv * qv, axis=-1, keepdims=True),
                           p0 * qv + q0 * pv + np.cross(pv, qv)], axis=-1)


def conj(q):
    return q * np.array([1.0, -1.0, -1.0, -1.0])


def log_angle(q):
    """The body-frame angle theta with q = exp(theta / 2) (the shorter of q, -q)."""
    q = np.where(q[..., :1] < 0, -q, q)
    v = q[..., 1:]
    s = np.linalg.norm(v, axis=-1, keepdims=True)
    angle = 2 * np.arctan2(s, q[..., :1])
    return np.where(s > 0, v / np.where(s > 0, s, 1.0) * angle, 2 * v)


def state_of(tr, ref_q):
    """(K, N, 6): the momenta and the attitude angles relative to ref_q (K, N, 4)."""
    return np.concatenate([tr.m, log_angle(qmul(conj(ref_q), tr.q))], axis=-1)


def richardson(run, eps):
    """(4 D(eps/2) - D(eps)) / 3, D(e) = (run(e) - run(-e)) / (2 e)."""
    d1 = (run(eps) - run(-eps)) / (2 * eps)
    d2 = (run(eps / 2) - run(-eps / 2)) / eps
    return (4 * d2 - d1) / 3


def relative(x, ref):
    return float(np.abs(x - ref).max() / max(np.abs(ref).max(), 1e-300))


def check_method(method, torque, m0, q0, inertia, h, nsteps, parts, save_every=None,
                 eps_state=1e-3, eps_h=1e-4, eps_i=1e-4, eps_p=1e-4):
    """Every column of the asked parts against finite differences; the worst relative error."""
    kwargs = dict(method=method, torque=torque, save_every=save_every)
    tr = frb.integrate(m0, q0, inertia, h, nsteps, sensitivities=parts, **kwargs)
    plain = frb.integrate(m0, q0, inertia, h, nsteps, **kwargs)
    assert np.array_equal(tr.m, plain.m) and np.array_equal(tr.q, plain.q)
    ref_q = tr.q
    sens = tr.sensitivities
    worst = 0.0
    if "state" in parts:
        for i in range(6):
            def run(e, i=i):
                m, q = m0.copy(), q0.copy()
                if i < 3:
                    m[..., i] += e
                else:
                    rot = np.zeros(4)
                    rot[0] = np.cos(e / 2)
                    rot[1 + i - 3] = np.sin(e / 2)
                    q = qmul(q, rot)
                return state_of(frb.integrate(m, q, inertia, h, nsteps, **kwargs), ref_q)
            fd = richardson(run, eps_state)
            worst = max(worst, relative(sens.state[..., i], fd))
    if "h" in parts:
        fd = richardson(lambda e: state_of(frb.integrate(m0, q0, inertia, h + e, nsteps, **kwargs),
                                           ref_q), eps_h)
        worst = max(worst, relative(sens.h, fd))
    if "inertia" in parts:
        for l in range(3):
            def run(e, l=l):
                I = np.array(inertia, dtype=float)
                I[..., l] += e
                return state_of(frb.integrate(m0, q0, I, h, nsteps, **kwargs), ref_q)
            fd = richardson(run, eps_i)
            worst = max(worst, relative(sens.inertia[..., l], fd))
    return tr, worst


def bodies(n, seed=0):
    rng = np.random.default_rng(seed)
    m = rng.normal(size=(n, 3))
    q = rng.normal(size=(n, 4))
    q /= np.linalg.norm(q, axis=1)[:, None]
    return m, q


INERTIA = np.array([0.9, 1.3, 2.1])


@pytest.mark.parametrize("method", ["EXACT", "RK4"])
def test_free_body(method):
    """A free body: Phi, d/dh and d/dI of 40 steps of EXACT and RK4, 3 bodies."""
    m0, q0 = bodies(3)
    _, worst = check_method(method, None, m0, q0, INERTIA, 0.05, 40, ("state", "h", "inertia"))
    assert worst < TOL


def test_exact_damping():
    """EXACT with linear damping (the time change of the free flow): every column, the
    damping rate included."""
    m0, q0 = bodies(2, 1)
    tq = torques.linear_damping(0.3)
    tr, worst = check_method("EXACT", tq, m0, q0, INERTIA, 0.1, 20, ("state", "h", "inertia"))
    assert worst < TOL
    c = 0.3
    fd = richardson(lambda e: state_of(frb.integrate(m0, q0, INERTIA, 0.1, 20, method="EXACT",
                                                     torque=torques.linear_damping(c + e),
                                                     save_every=None), tr.q), 1e-4)
    got = frb.integrate(m0, q0, INERTIA, 0.1, 20, method="EXACT", torque=tq, save_every=None,
                        sensitivities=("torque",)).sensitivities.torque[..., 0, 0]
    assert relative(got, fd) < TOL


def test_exact_damping_of_rate_zero():
    """EXACT with linear_damping(0): the free body's derivatives, and the rate's column the
    limit c -> 0 (one-sided differences in c, Richardson-extrapolated)."""
    m0, q0 = bodies(2, 5)
    kwargs = dict(method="EXACT", save_every=None)
    tr = frb.integrate(m0, q0, INERTIA, 0.1, 20, torque=torques.linear_damping(0.0),
                       sensitivities=("state", "h", "torque"), **kwargs)
    free = frb.integrate(m0, q0, INERTIA, 0.1, 20, sensitivities=("state", "h"), **kwargs)
    assert np.array_equal(tr.m, free.m) and np.array_equal(tr.q, free.q)
    np.testing.assert_allclose(tr.sensitivities.state, free.sensitivities.state, rtol=0,
                               atol=1e-14)
    np.testing.assert_allclose(tr.sensitivities.h, free.sensitivities.h, rtol=0, atol=1e-14)

    def run(c):
        return state_of(frb.integrate(m0, q0, INERTIA, 0.1, 20,
                                      torque=torques.linear_damping(c), **kwargs), tr.q)
    d1 = (run(1e-4) - run(0.0)) / 1e-4
    d2 = (run(0.5e-4) - run(0.0)) / 0.5e-4
    assert relative(tr.sensitivities.torque[..., 0, 0], 2 * d2 - d1) < 1e-6


TORQUES = {
    "field": lambda: torques.constant_field([0.2, -0.1, 0.4]),
    "heavy top": lambda: torques.heavy_top(0.7, [0.0, 0.1, 0.3]),
    "gravity gradient": lambda: torques.gravity_gradient(0.8),
    "damping": lambda: torques.linear_damping(0.25),
    "rotor": lambda: torques.rotor([0.1, -0.2, 0.3]),
    "attitude control": lambda: torques.attitude_control(
        np.array([0.9, 0.1, -0.3, 0.2]) / np.sqrt(0.95), 0.6, 0.4),
    "sum": lambda: torques.gravity_gradient(0.5) + torques.linear_damping(0.1)
    + torques.heavy_top(0.3, [0.0, 0.2, 0.1]),
    "sum with a rotor": lambda: torques.gravity_gradient(0.5) + torques.linear_damping(0.1)
    + torques.rotor([0.0, 0.2, 0.1]),
}
#: the exact-flow splittings with a rotor take the gyrostat as their free flow, whose
#: derivatives frb does not carry: refused
SPLITTINGS = ("EXACT", "STRANG", "YOSHIDA4", "RKN6_14")
WITH_ROTOR = ("rotor", "sum with a rotor")


def refused_rotor(method, torque):
    """True (after checking the refusal by name) for a rotor in an exact-flow splitting."""
    if method not in SPLITTINGS or torque not in WITH_ROTOR:
        return False
    m0, q0 = bodies(1)
    with pytest.raises(ValueError, match="sensitivities are not available with a rotor"):
        frb.integrate(m0, q0, INERTIA, 0.07, 3, method=method, torque=TORQUES[torque](),
                      sensitivities=True)
    return True


@pytest.mark.parametrize("method", ["STRANG", "YOSHIDA4", "RKN6_14", "RK4"])
@pytest.mark.parametrize("torque", sorted(TORQUES))
def test_torqued(method, torque):
    """The exact-flow splittings and RK4 with each built-in torque (and a sum of three): Phi,
    d/dh and d/dI of 12 steps of 2 bodies, kept every 4 steps (a rotor in a splitting:
    refused)."""
    if refused_rotor(method, torque):
        return
    m0, q0 = bodies(2, 2)
    _, worst = check_method(method, TORQUES[torque](), m0, q0, INERTIA, 0.07, 12,
                            ("state", "h", "inertia"), save_every=4)
    assert worst < TOL


@pytest.mark.parametrize("method", ["STRANG", "RK4"])
@pytest.mark.parametrize("torque", ["field", "gravity gradient", "rotor", "attitude control",
                                    "damping"])
def test_torque_parameters(method, torque):
    """The derivatives with respect to the torque's parameters (its compiled form's order):
    each parameter of the single term perturbed through the term's compiled parameters (a rotor
    in a splitting: refused)."""
    if refused_rotor(method, torque):
        return
    m0, q0 = bodies(2, 3)
    tq = TORQUES[torque]()
    h, nsteps = 0.07, 10
    kwargs = dict(method=method, save_every=None)
    tr = frb.integrate(m0, q0, INERTIA, h, nsteps, torque=tq, sensitivities=("torque",), **kwargs)
    form = tq.compiled
    params = np.array(form.parameters, dtype=float)
    got = tr.sensitivities.torque
    assert got.shape[-2:] == (1, frb._numbers_table.TORQUE_TERM_REALS)
    rebuild = {"field": lambda p: torques.constant_field(p[:3]),
               "gravity gradient": lambda p: torques.gravity_gradient(p[0]),
               "rotor": lambda p: torques.rotor(p[:3]),
               "attitude control": lambda p: torques.attitude_control(
                   p[CONTROL_Q_REF - 1:CONTROL_Q_REF + 3], p[CONTROL_KP - 1], p[CONTROL_KD - 1]),
               "damping": lambda p: torques.linear_damping(p[0])}[torque]
    used = {"field": range(3), "gravity gradient": [0], "rotor": range(3),
            "attitude control": [CONTROL_KP - 1, CONTROL_KD - 1], "damping": [0]}[torque]
    for c in used:
        def run(e, c=c):
            p = params.reshape(-1).copy()
            p[c] += e
            return state_of(frb.integrate(m0, q0, INERTIA, h, nsteps, torque=rebuild(p),
                                          **kwargs), tr.q)
        fd = richardson(run, 1e-4)
        assert relative(got[..., 0, c], fd) < TOL, c


@pytest.mark.parametrize("method", ["STRANG", "RKN6_14"])
@pytest.mark.parametrize("scale", [2.0**70, 2.0**-90, 2.0**250])
def test_torque_of_m_at_any_scale(method, scale):
    """Bodies of any scale: m, I and the gains times s leave the motion as it is (m times s)
    and d m / d I, d m / d Kd as they are: against finite differences of the run at scale 1
    (the exponentials of the torque's affine flow balanced, not scaled by the torque's size)."""
    m0, q0 = bodies(2, 4)
    q_ref = np.array([0.9, 0.1, -0.3, 0.2]) / np.sqrt(0.95)

    def control(s, kd=0.4):
        return torques.attitude_control(q_ref, 0.6 * s, kd * s) + torques.linear_damping(0.2)
    kwargs = dict(method=method, save_every=None)
    tr = frb.integrate(m0 * scale, q0, INERTIA * scale, 0.07, 10, torque=control(scale),
                       sensitivities=("inertia", "torque"), **kwargs)
    ref_q = tr.q
    # (the angles' derivatives at scale s are 1 / s those at scale 1, the momenta's the same)
    weights = np.array([1.0, 1.0, 1.0, scale, scale, scale])
    for l in range(3):
        def run(e, l=l):
            inertia = INERTIA.copy()
            inertia[l] += e
            return state_of(frb.integrate(m0, q0, inertia, 0.07, 10, torque=control(1.0),
                                          **kwargs), ref_q)
        fd = richardson(run, 1e-4)
        assert relative(tr.sensitivities.inertia[..., l] * weights, fd) < TOL
    fd = richardson(lambda e: state_of(frb.integrate(m0, q0, INERTIA, 0.07, 10,
                                                     torque=control(1.0, 0.4 + e), **kwargs),
                                       ref_q), 1e-4)
    got = tr.sensitivities.torque[..., 0, CONTROL_KD - 1]
    assert relative(got * weights, fd) < TOL


def test_batch_is_each_body():
    """A batch carries each body's derivatives as its own run does, bit for bit (EXACT free,
    STRANG with a torque of Q and m, YOSHIDA4 with torques of Q alone)."""
    m0, q0 = bodies(4, 4)
    for method, tq in (("EXACT", None), ("STRANG", TORQUES["sum"]()),
                       ("YOSHIDA4", TORQUES["gravity gradient"]() + TORQUES["heavy top"]())):
        tr = frb.integrate(m0, q0, INERTIA, 0.09, 6, method=method, torque=tq,
                           sensitivities=("state", "h", "inertia"), save_every=3)
        for b in range(4):
            one = frb.integrate(m0[b], q0[b], INERTIA, 0.09, 6, method=method, torque=tq,
                                sensitivities=("state", "h", "inertia"), save_every=3)
            for part in ("state", "h", "inertia"):
                assert np.array_equal(getattr(one.sensitivities, part),
                                      getattr(tr.sensitivities, part)[:, b])


def test_threads():
    """The derivatives of a batch do not depend on the thread count (the engine's chunks)."""
    m0, q0 = bodies(300, 5)
    runs = [frb.integrate(m0, q0, INERTIA, 0.05, 8, method="RK4", torque=TORQUES["field"](),
                          sensitivities=True, save_every=4, threads=t) for t in (1, 2)]
    assert runs[0].sensitivity.shape == (3, 300, 6, 6)
    assert np.array_equal(runs[0].sensitivity, runs[1].sensitivity)


def test_one_step_is_the_flow_jacobian():
    """One step of EXACT: the run's Phi and d/dh are those of frb.quat_step(..., jacobian=True)
    bit for bit, and agree with the variational reference (tests/data/reference_jacobian.npz:
    the variational equations integrated at 140 bits, every case of its edge families and
    random bodies) to 1e-11 relative to the largest entry."""
    import os
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data",
                        "reference_jacobian.npz")
    with np.load(path, allow_pickle=False) as f:
        ref = {k: f[k] for k in ("m0", "h", "inertia", "phi", "dh", "dinertia")}
    for i in range(len(ref["h"])):
        m, h, inertia = ref["m0"][i], float(ref["h"][i]), ref["inertia"][i]
        tr = frb.integrate(m, [1.0, 0, 0, 0], inertia, h, 1, method="EXACT",
                           sensitivities=("state", "h", "inertia"), save_every=None)
        _, _, jac = frb.quat_step(m, [1.0, 0, 0, 0], h, inertia, jacobian=True)
        sens = tr.sensitivities
        assert np.array_equal(sens.state[-1], jac.state)
        assert np.array_equal(sens.h[-1], jac.h)
        assert relative(sens.state[-1], ref["phi"][i]) < 1e-11, i
        assert relative(sens.h[-1], ref["dh"][i]) < 1e-11, i
        assert relative(sens.inertia[-1], ref["dinertia"][i]) < 1e-11, i


def test_refusals():
    """Methods, torques and options without sensitivities are refused by name."""
    m0, q0 = bodies(1)
    with pytest.raises(ValueError, match="DMV4"):
        frb.integrate(m0, q0, INERTIA, 0.1, 3, method="DMV4", sensitivities=True)
    with pytest.raises(ValueError, match="IMID"):
        frb.integrate(m0, q0, INERTIA, 0.1, 3, method="IMID", sensitivities=True)
    with pytest.raises(ValueError, match="Python"):
        frb.integrate(m0, q0, INERTIA, 0.1, 3, method="RK4", sensitivities=True,
                      torque=lambda t, Q: np.zeros(Q.shape[:-2] + (3,)))
    with pytest.raises(ValueError, match="quadrature"):
        frb.integrate(m0, q0, INERTIA, 0.1, 3, method="EXACT", sensitivities=True, quadrature=8)
    with pytest.raises(ValueError, match="sensitivities"):
        frb.integrate(m0, q0, INERTIA, 0.1, 3, method="EXACT", sensitivities="moments")
    with pytest.raises(TypeError, match="sensitivities"):
        frb.integrate(m0, q0, INERTIA, 0.1, 3, method="EXACT", sensitivities=3)


def test_refusals_of_wheels_and_attitude_control():
    """Reaction wheels, and an attitude-control law with gain matrices or a turning reference,
    are refused by name; the same law with gains that are numbers and a fixed reference is
    not."""
    from frb.wheel_laws import quaternion_feedback, rotating_reference
    m0, q0 = bodies(1)
    wheels = frb.Wheels(np.eye(3), np.zeros(3))
    for law in (None, quaternion_feedback([1.0, 0, 0, 0], kp=0.1, kd=0.2)):
        with pytest.raises(ValueError, match="not available with wheels"):
            frb.integrate(m0, q0, INERTIA, 0.1, 3, method="RK4", sensitivities=True,
                          wheels=wheels, wheel_law=law)
    q_ref = np.array([0.9, 0.1, -0.3, 0.2]) / np.sqrt(0.95)
    for tq in (torques.attitude_control(q_ref, 0.6 * np.eye(3), 0.4),
               torques.attitude_control(rotating_reference(q_ref, [0.0, 0.0, 0.1]), 0.6, 0.4),
               torques.linear_damping(0.1) + torques.attitude_control(q_ref, 0.6, np.eye(3))):
        for method in ("STRANG", "RK4"):
            with pytest.raises(ValueError, match="not available with attitude_control"):
                frb.integrate(m0, q0, INERTIA, 0.1, 3, method=method, torque=tq,
                              sensitivities=True)


def test_per_body_parameters():
    """Terms whose parameters are given per body (a rotor's momentum, heavy-top centres): Phi,
    d/dh, d/dI and each body's derivatives in its own rotor momentum against finite
    differences (RK4; STRANG with the heavy-top centres alone)."""
    m0, q0 = bodies(2, 8)
    hs = np.array([[0.1, -0.2, 0.3], [0.0, 0.25, -0.1]])
    centres = np.array([[0.0, 0.1, 0.3], [0.1, 0.0, 0.2]])
    _, worst = check_method("STRANG", torques.heavy_top(0.7, centres), m0, q0, INERTIA, 0.07, 10,
                            ("state", "h", "inertia"), save_every=5)
    assert worst < TOL
    for method in ("RK4",):
        tq = torques.rotor(hs) + torques.heavy_top(0.7, centres)
        _, worst = check_method(method, tq, m0, q0, INERTIA, 0.07, 10, ("state", "h", "inertia"),
                                save_every=5)
        assert worst < TOL, method
        tr = frb.integrate(m0, q0, INERTIA, 0.07, 10, method=method, torque=tq,
                           sensitivities=("torque",), save_every=5)
        for c in range(3):
            def run(e, c=c):
                h = hs.copy()
                h[:, c] += e
                return state_of(frb.integrate(m0, q0, INERTIA, 0.07, 10, method=method,
                                              torque=torques.rotor(h)
                                              + torques.heavy_top(0.7, centres),
                                              save_every=5), tr.q)
            fd = richardson(run, 1e-4)
            assert relative(tr.sensitivities.torque[..., 0, c], fd) < TOL, (method, c)


def test_step_jacobian_of_a_batch_with_shared_moments():
    """quat_step(..., jacobian=True) of a batch with one row of moments for all bodies: each
    body's matrices are those of its own step, bit for bit (the compiled loop shares the row;
    the jacobian takes one row a body)."""
    m0, q0 = bodies(20, 6)
    m1, q1, jac = frb.quat_step(m0, q0, 0.3, INERTIA, jacobian=True)
    for b in (0, 7, 19):
        mb, qb, jb = frb.quat_step(m0[b], q0[b], 0.3, INERTIA, jacobian=True)
        assert np.array_equal(jac.state[b], jb.state) and np.array_equal(jac.h[b], jb.h)
        assert np.array_equal(jac.inertia[b], jb.inertia)
        assert np.array_equal(m1[b], mb) and np.array_equal(q1[b], qb)


def test_inertia_tensor():
    """An inertia tensor: the run in the principal frame, its Phi and d/dh mapped back
    (D S D^T, D = diag(R, R)), against finite differences in the given frame; the moments'
    and the torque's derivatives are refused for a tensor."""
    m0, q0 = bodies(2, 7)
    J = np.array([[2.0, 0.3, -0.1], [0.3, 1.5, 0.2], [-0.1, 0.2, 1.1]])
    for method, torque in (("EXACT", None), ("STRANG", "field"), ("RK4", "damping")):
        tq = TORQUES[torque]() if torque else None
        _, worst = check_method(method, tq, m0, q0, J, 0.07, 10, ("state", "h"), save_every=5)
        assert worst < TOL, method
    with pytest.raises(ValueError, match="tensors"):
        frb.integrate(m0, q0, J, 0.07, 3, method="EXACT", sensitivities=("state", "inertia"))


LANE_TORQUES = {
    "free": lambda: None,
    "heavy top": lambda: torques.heavy_top(1.0, [0.0, 0.0, 1.0]),
    "field": TORQUES["field"],
    "gravity gradient": TORQUES["gravity gradient"],
    "damping": TORQUES["damping"],
    "sum with a rotor": lambda: (torques.heavy_top(0.8, [0.1, -0.05, 0.7])
                                 + torques.gravity_gradient(0.7) + torques.linear_damping(0.2)
                                 + torques.rotor([0.1, 0.2, -0.3])),
}


@pytest.mark.parametrize("torque", sorted(LANE_TORQUES))
def test_rk4_tangents_in_lanes_are_the_one_body_tangents(torque):
    """RK4 with sensitivities through the lanes (runge_kutta_tangent_lanes, compiled per SIMD
    target): every part (Phi, h, the moments, the torque's parameters) and the states equal
    those of the one-body code (the lane steps turned off through frb._testing) bit for bit,
    under every SIMD target the CPU supports, for 70 bodies (a chunk of 64 and one of 6) with
    moments per body and with one row of moments for all, two threads, and a body alone."""
    _testing = pytest.importorskip("frb._testing")
    rng = np.random.default_rng(11)
    n = 70
    m0, q0 = bodies(n, 9)
    m0[3] = 0.0                                        # a body at rest
    inertia = rng.uniform(0.8, 2.6, size=(n, 3))
    inertia[4] = [1.0, 1.0, 2.0]                       # a symmetric body
    tq = LANE_TORQUES[torque]()
    parts = ("state", "h", "inertia") + (("torque",) if tq is not None else ())
    fields = ("state", "h", "inertia") + (("torque",) if tq is not None else ())

    def run(moments, threads=1, sl=slice(None)):
        tr = frb.integrate(m0[sl], q0[sl], moments, 0.07, 6, method="RK4", torque=tq, t0=0.3,
                           sensitivities=parts, save_every=3, threads=threads)
        return [tr.m, tr.q] + [getattr(tr.sensitivities, f) for f in fields]

    before = frb.cpu_dispatch()
    try:
        for moments in (inertia, INERTIA):
            _testing.lane_steps_use(0)
            frb.set_cpu_target("baseline")
            reference = run(moments)
            _testing.lane_steps_use(1)
            for target in frb.simd.supported_cpu_targets():
                frb.set_cpu_target(target)
                for got in (run(moments), run(moments, threads=2)):
                    for x, y in zip(got, reference):
                        assert np.array_equal(x, y), target
            alone = run(moments[65] if moments is inertia else moments, sl=65)
            for x, y in zip(alone, reference):
                assert np.array_equal(x, y[:, 65])
    finally:
        _testing.lane_steps_use(1)
        frb.set_cpu_target(before)
