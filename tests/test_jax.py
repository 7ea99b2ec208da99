"""frb.jax: values bit for bit those of frb (plain, jit, vmap), derivatives against central
finite differences (Richardson-extrapolated) and against frb's jacobians mapped to JAX's
coordinates written out here, and grad through integrate against Trajectory.sensitivities."""
import numpy as np
import pytest

jax = pytest.importorskip("jax")
jax.config.update("jax_enable_x64", True)
import jax.numpy as jnp  # noqa: E402

import frb  # noqa: E402
import frb.jax as fj  # noqa: E402
from frb.torques import heavy_top, linear_damping  # noqa: E402

M = np.array([0.3, -0.5, 0.8])
Q = np.array([0.6, 0.0, -0.48, 0.64])           # a unit quaternion
INERTIA = np.array([1.0, 2.0, 3.5])
H = 0.7


def qmul(p, q):
    """Quaternion product, scalar first (written here, not frb's)."""
    s1, v1, s2, v2 = p[0], p[1:], q[0], q[1:]
    return np.concatenate([[s1 * s2 - v1 @ v2], s1 * v2 + s2 * v1 + np.cross(v1, v2)])


def qconj(q):
    return np.concatenate([q[:1], -q[1:]])


def hat(w):
    return np.array([[0, -w[2], w[1]], [w[2], 0, -w[0]], [-w[1], w[0], 0]])


def quat_matrix(q):
    s, (x, y, z) = q[0], q[1:]
    return np.array([[1 - 2 * (y * y + z * z), 2 * (x * y - s * z), 2 * (x * z + s * y)],
                     [2 * (x * y + s * z), 1 - 2 * (x * x + z * z), 2 * (y * z - s * x)],
                     [2 * (x * z - s * y), 2 * (y * z + s * x), 1 - 2 * (x * x + y * y)]])


def richardson(f, x, eps):
    """Central differences of f at x along each coordinate, Richardson-extrapolated:
    (4 D(eps/2) - D(eps)) / 3; columns are the coordinates."""
    x = np.asarray(x, float)

    def central(e):
        cols = []
        for j in range(x.size):
            d = np.zeros(x.size)
            d[j] = e
            cols.append((f(x + d) - f(x - d)) / (2 * e))
        return np.stack(cols, axis=-1)
    return (4 * central(eps / 2) - central(eps)) / 3


def flat_step(m, q, h, inertia):
    m1, q1 = frb.quat_step(m, q / np.linalg.norm(q), h, inertia)
    return np.concatenate([m1, q1])


def in_map(q):
    """dq -> dtheta = 2 vec(conj(q) dq), as a 3 x 4 matrix."""
    return np.stack([2 * qmul(qconj(q), e)[1:] for e in np.eye(4)], axis=1)


def out_map(q):
    """dtheta -> q (0, dtheta/2), as a 4 x 3 matrix."""
    return np.stack([qmul(q, np.concatenate([[0.0], 0.5 * e])) for e in np.eye(3)], axis=1)


def test_values_bit_for_bit():
    m1, q1 = frb.quat_step(M, Q, H, INERTIA)
    got = fj.quat_step(M, Q, H, INERTIA)
    assert np.array_equal(got[0], m1) and np.array_equal(got[1], q1)
    jitted = jax.jit(fj.quat_step)(M, Q, H, INERTIA)
    assert np.array_equal(jitted[0], m1) and np.array_equal(jitted[1], q1)
    Qm = quat_matrix(Q)
    m1, Q1 = frb.frb_step(M, Qm, H, INERTIA)
    got = jax.jit(fj.frb_step)(M, Qm, H, INERTIA)
    assert np.array_equal(got[0], m1) and np.array_equal(got[1], Q1)


def test_vmap_is_one_batch_with_the_same_bits(monkeypatch):
    calls = []

    def counted(*args):
        calls.append(np.shape(args[0]))
        return frb.quat_step(*args)
    monkeypatch.setattr(fj, "_quat_step", counted)
    rng = np.random.default_rng(5)
    n = 7
    m = rng.normal(size=(n, 3))
    q = rng.normal(size=(n, 4))
    q /= np.linalg.norm(q, axis=1, keepdims=True)
    h = rng.uniform(0.1, 3.0, n)
    inertia = rng.uniform(0.5, 2.0, (n, 3))
    ref = frb.quat_step(m, q, h, inertia)
    got = jax.jit(jax.vmap(fj.quat_step))(m, q, h, inertia)
    assert np.array_equal(got[0], ref[0]) and np.array_equal(got[1], ref[1])
    assert calls == [(n, 3)]                  # one batched frb call
    # an argument not mapped (the moments shared)
    ref = frb.quat_step(m, q, h, INERTIA)
    got = jax.vmap(fj.quat_step, in_axes=(0, 0, 0, None))(m, q, h, INERTIA)
    assert np.array_equal(got[0], ref[0]) and np.array_equal(got[1], ref[1])
    # every body alone gives the same bits as the batch
    for j in range(n):
        one = frb.quat_step(m[j], q[j], h[j], INERTIA)
        assert np.array_equal(got[0][j], one[0]) and np.array_equal(got[1][j], one[1])


def test_integrate_values_bit_for_bit():
    rng = np.random.default_rng(8)
    m = rng.normal(size=(4, 3))
    q = np.tile(Q, (4, 1))
    for kw in (dict(method="EXACT"), dict(method="EXACT", torque=linear_damping(0.1)),
               dict(method="STRANG", torque=heavy_top(0.5, [0.0, 0.0, 1.0])),
               dict(method="RK4", torque=heavy_top(0.5, [0.0, 0.0, 1.0]))):
        tr = frb.integrate(m, q, INERTIA, 0.05, 23, save_every=5, **kw)
        mk, qk = jax.jit(lambda a, b: fj.integrate(a, b, INERTIA, 0.05, 23, save_every=5, **kw)
                         )(m, q)
        assert mk.shape == (4, 6, 3)
        assert np.array_equal(mk, np.swapaxes(tr.m, 0, 1))
        assert np.array_equal(qk, np.swapaxes(tr.q, 0, 1))
        one = frb.integrate(m[2], q[2], INERTIA, 0.05, 23, save_every=None, **kw)
        mk, qk = fj.integrate(m[2], q[2], INERTIA, 0.05, 23, **kw)
        assert np.array_equal(mk, one.m) and np.array_equal(qk, one.q)
    # vmap over the step: one run for each distinct h
    hs = np.array([0.05, 0.02, 0.05, 0.1])
    mk, qk = jax.vmap(lambda a, b, h: fj.integrate(a, b, INERTIA, h, 10, method="EXACT"))(m, q, hs)
    for j in range(4):
        one = frb.integrate(m[j], q[j], INERTIA, hs[j], 10, method="EXACT", save_every=None)
        assert np.array_equal(mk[j], one.m) and np.array_equal(qk[j], one.q)


def test_jacfwd_of_quat_step_against_finite_differences():
    jm, jq, jh, ji = jax.jacfwd(lambda *a: jnp.concatenate(fj.quat_step(*a)),
                                argnums=(0, 1, 2, 3))(M, Q, H, INERTIA)
    scale = 1.0
    for got, f, x in ((jm, lambda x: flat_step(x, Q, H, INERTIA), M),
                      (jq, lambda x: flat_step(M, x, H, INERTIA), Q),
                      (ji, lambda x: flat_step(M, Q, H, x), INERTIA)):
        ref = richardson(f, x, 1e-3)
        assert np.abs(np.asarray(got) - ref).max() < 1e-7 * scale
    ref = richardson(lambda x: flat_step(M, Q, x[0], INERTIA), [H], 1e-3)[:, 0]
    assert np.abs(np.asarray(jh) - ref).max() < 1e-7
    # the component along q is dropped: q is in the null space of d(q1)/dq
    assert np.abs(np.asarray(jq) @ Q).max() < 1e-14


def test_jacfwd_of_frb_step_against_finite_differences():
    Qm = quat_matrix(Q)

    def flat(Qx):
        U, _, Vt = np.linalg.svd(Qx.reshape(3, 3))       # the orthogonal polar factor
        m1, Q1 = frb.frb_step(M, U @ Vt, H, INERTIA)
        return np.concatenate([m1, Q1.ravel()])
    got = jax.jacfwd(lambda x: jnp.concatenate([a.ravel() for a in fj.frb_step(M, x, H, INERTIA)])
                     )(Qm)
    ref = richardson(flat, Qm.ravel(), 1e-3)
    assert np.abs(np.asarray(got).reshape(12, 9) - ref).max() < 1e-7


def test_jacfwd_equals_the_step_jacobian_in_jax_coordinates():
    _, q1, jac = frb.quat_step(M, Q, H, INERTIA, jacobian=True)
    Phi = jac.state
    jm, jq, jh, ji = jax.jacfwd(lambda *a: jnp.concatenate(fj.quat_step(*a)),
                                argnums=(0, 1, 2, 3))(M, Q, H, INERTIA)
    T_in, T_out = in_map(Q), out_map(q1)
    assert np.abs(np.asarray(jm)[:3] - Phi[:3, :3]).max() < 1e-14
    assert np.abs(np.asarray(jm)[3:] - T_out @ Phi[3:, :3]).max() < 1e-14
    assert np.abs(np.asarray(jq)[:3] - Phi[:3, 3:] @ T_in).max() < 1e-14
    assert np.abs(np.asarray(jq)[3:] - T_out @ Phi[3:, 3:] @ T_in).max() < 1e-14
    assert np.abs(np.asarray(jh) - np.concatenate([jac.h[:3], T_out @ jac.h[3:]])).max() < 1e-14
    assert np.abs(np.asarray(ji) - np.vstack([jac.inertia[:3], T_out @ jac.inertia[3:]])
                  ).max() < 1e-14


@pytest.mark.parametrize("kw", [dict(method="EXACT"), dict(method="EXACT", torque=linear_damping(0.2)),
                                dict(method="YOSHIDA4", torque=heavy_top(0.5, [0.0, 0.0, 1.0])),
                                dict(method="RK4", torque=heavy_top(0.5, [0.0, 0.0, 1.0]))],
                         ids=["EXACT", "damped", "YOSHIDA4", "RK4"])
def test_grad_through_integrate_against_the_sensitivities(kw):
    a = np.array([0.3, -1.0, 0.4])
    b = np.array([0.2, 0.7, -0.5, 0.1])

    def loss(m0, q0, h, inertia):
        mk, qk = fj.integrate(m0, q0, inertia, h, 40, **kw)
        return mk[-1] @ a + qk[-1] @ b

    grads = jax.grad(loss, argnums=(0, 1, 2, 3))(M, Q, 0.05, INERTIA)
    tr = frb.integrate(M, Q, INERTIA, 0.05, 40, save_every=None,
                       sensitivities=("state", "h", "inertia"), **kw)
    s = tr.sensitivities
    # the derivative of the loss in (dm, dtheta) of the final state, then chained
    row = np.concatenate([a, b @ out_map(tr.q[-1])])
    assert np.allclose(grads[0], row @ s.state[-1][:, :3], rtol=0, atol=1e-13)
    assert np.allclose(grads[1], row @ s.state[-1][:, 3:] @ in_map(Q), rtol=0, atol=1e-13)
    assert abs(grads[2] - row @ s.h[-1]) < 1e-12
    assert np.allclose(grads[3], row @ s.inertia[-1], rtol=0, atol=1e-12)
    # and against central differences of frb.integrate (Richardson), for the moments and m0
    f = (lambda x: np.array([frb.integrate(x, Q, INERTIA, 0.05, 40, save_every=None, **kw).m[-1]
                             @ a + frb.integrate(x, Q, INERTIA, 0.05, 40, save_every=None, **kw
                                                 ).q[-1] @ b]))
    assert np.abs(richardson(f, M, 1e-3)[0] - grads[0]).max() < 1e-7


def test_jacrev_of_kept_states_and_matrices():
    Qm = quat_matrix(Q)

    def kept(m0):
        mk, Qk = fj.integrate(m0, Qm, INERTIA, 0.1, 12, method="STRANG",
                              torque=heavy_top(0.5, [0.0, 0.0, 1.0]), save_every=4)
        return Qk
    got = np.asarray(jax.jacrev(kept)(M))               # (K, 3, 3, 3)
    tr = frb.integrate(M, Qm, INERTIA, 0.1, 12, method="STRANG",
                       torque=heavy_top(0.5, [0.0, 0.0, 1.0]), save_every=4, sensitivities=True)
    assert got.shape == (4, 3, 3, 3)
    for k in range(4):
        for j in range(3):
            ref = tr.Q[k] @ hat(tr.sensitivity[k][3:, j])
            assert np.abs(got[k, :, :, j] - ref).max() < 1e-13


def test_needs_x64_and_refuses_bad_input():
    jax.config.update("jax_enable_x64", False)
    try:
        with pytest.raises(RuntimeError, match="jax_enable_x64"):
            fj.quat_step(M, Q, H, INERTIA)
    finally:
        jax.config.update("jax_enable_x64", True)
    with pytest.raises(ValueError, match="inertia"):
        fj.quat_step(M, Q, H, INERTIA[:2])
    with pytest.raises(ValueError, match="q must have shape"):
        fj.quat_step(M, Q[:3], H, INERTIA)
    with pytest.raises(TypeError, match="wheels"):
        fj.integrate(M, Q, INERTIA, 0.1, 3, wheels=None)
    with pytest.raises(ValueError, match="nsteps"):
        fj.integrate(M, Q, INERTIA, 0.1, -1)


@pytest.mark.parametrize("call, error, words", [
    (lambda: fj.quat_step(M, Q, np.nan, INERTIA), ValueError, "h contains non-finite"),
    (lambda: fj.quat_step(M, Q, H, -INERTIA), ValueError, "inertia must contain strictly positive"),
    (lambda: fj.quat_step(M, np.zeros(4), H, INERTIA), ValueError, "q must be a unit quaternion"),
    (lambda: fj.frb_step(M, np.ones((3, 3)), H, INERTIA), ValueError, "Q must be a rotation"),
    (lambda: fj.quat_step(M, Q, "x", INERTIA), TypeError, "h must be an array of real numbers"),
    (lambda: fj.quat_step(None, Q, H, INERTIA), TypeError, "m must be an array of real numbers"),
    (lambda: fj.integrate(M, Q, INERTIA, np.inf, 3, method="EXACT"), ValueError, "h"),
    (lambda: fj.integrate(M, Q, INERTIA, 0.1, 3.5), TypeError, "nsteps"),
    (lambda: fj.integrate(M, Q, INERTIA, 0.1, 3, save_every=True), TypeError, "save_every"),
    (lambda: fj.integrate(M, Q, INERTIA, 0.1, 3, save_every=0), ValueError, "save_every"),
])
def test_eager_calls_raise_frb_errors(call, error, words):
    """Outside jit the values are known: frb's own exception, not JAX's runtime error."""
    with pytest.raises(error, match=words):
        call()


def test_grad_of_a_method_without_sensitivities_refused_when_traced():
    with pytest.raises(ValueError, match="not for method TERZE"):
        jax.grad(lambda h: fj.integrate(M, Q, INERTIA, h, 3, method="TERZE")[0][0, 0])(0.1)
    # its values alone are frb's
    m1, q1 = fj.integrate(M, Q, INERTIA, 0.1, 3, method="TERZE")
    tr = frb.integrate(M, Q, INERTIA, 0.1, 3, method="TERZE", save_every=None)
    assert np.array_equal(m1, tr.m) and np.array_equal(q1, tr.q)


@pytest.mark.parametrize("method, torque, words", [
    ("STRANG", frb.torques.rotor([1.0, 0.0, 0.0]), "not available with a rotor"),
    ("EXACT", frb.torques.rotor([0.0, 0.0, 2.0]), "not available with a rotor"),
    ("RK4", lambda t, Q: np.zeros((len(Q), 3)), "not for a torque called from Python")])
def test_grad_of_a_run_without_sensitivities_refused_when_traced(method, torque, words):
    # frb's refusal of the run's sensitivities, raised while JAX traces (not a JaxRuntimeError)
    with pytest.raises(ValueError, match=words):
        jax.grad(lambda h: fj.integrate(M, Q, INERTIA, h, 3, method=method,
                                        torque=torque)[0][0, 0])(0.1)


@pytest.mark.parametrize("h, error, words", [
    (2 ** 63, ValueError, "h is too long"),                 # a Python int beyond int64
    (10 ** 400, ValueError, "h is too large for a float64")])
def test_python_integers_beyond_int64_are_read_as_floats(h, error, words):
    with pytest.raises(error, match=words):
        fj.quat_step(M, Q, h, INERTIA)


def test_empty_batches_give_empty_results_like_frb():
    """An empty batch (of states or of steps) is empty results of the shapes frb gives."""
    q0, I = jnp.array([1.0, 0, 0, 0]), jnp.array([1.0, 2, 3])
    m1, q1 = fj.quat_step(jnp.zeros((0, 3)), jnp.zeros((0, 4)), 0.1, I)
    ref = frb.quat_step(np.zeros((0, 3)), np.zeros((0, 4)), 0.1, np.asarray(I))
    assert (m1.shape, q1.shape) == (ref[0].shape, ref[1].shape) == ((0, 3), (0, 4))
    m1, q1 = fj.quat_step(jnp.zeros(3), q0, jnp.zeros(0), I)
    assert (m1.shape, q1.shape) == ((0, 3), (0, 4))
    m1, Q1 = fj.frb_step(jnp.zeros((0, 3)), jnp.zeros((0, 3, 3)), 0.1, I)
    assert (m1.shape, Q1.shape) == ((0, 3), (0, 3, 3))
    m, q = fj.integrate(jnp.zeros((0, 3)), jnp.zeros((0, 4)), I, 0.1, 3, method="EXACT",
                        save_every=1)
    assert (m.shape, q.shape) == ((0, 4, 3), (0, 4, 4))
    jac = jax.jacfwd(lambda x: fj.integrate(x, jnp.zeros((0, 4)), I, 0.1, 3, method="EXACT")[0])(
        jnp.zeros((0, 3)))
    assert jac.shape == (0, 1, 3, 0, 3)


def test_integrate_names_its_own_arguments():
    with pytest.raises(ValueError, match="^m0 must have shape"):
        fj.integrate(np.ones(4), np.array([1.0, 0.0, 0.0, 0.0]), np.array([1.0, 2.0, 3.0]), 0.1, 2)
    with pytest.raises(ValueError, match="^attitude0 must have shape"):
        fj.integrate(np.array([0.3, 0.5, 0.8]), np.ones(3), np.array([1.0, 2.0, 3.0]), 0.1, 2)


def test_per_body_torques_with_a_step_per_body():
    # bodies of different steps run apart, each with its own part of a per-body torque: as
    # frb.integrate of each body alone, bit for bit; parameters for another count refused
    m = np.array([[0.3, 0.5, 0.8], [0.1, -0.2, 0.3], [0.2, 0.1, -0.4]])
    for tq in (frb.torques.rotor([[0.1, 0, 0], [0, 0.2, 0], [0, 0, 0.3]]),
               heavy_top(1.0, [[0, 0, 0.1], [0, 0, 0.2], [0.1, 0, 0]])):
        h = np.array([0.1, 0.2, 0.1])
        m1, q1 = fj.integrate(jnp.asarray(m), jnp.array([1.0, 0, 0, 0]), jnp.array([1.0, 2, 3]),
                              jnp.asarray(h), 5, method="RK4", torque=tq)
        for b in range(3):
            alone = frb.integrate(m[b], [1.0, 0, 0, 0], [1.0, 2, 3], h[b], 5, method="RK4",
                                  torque=tq.bodies(b, b + 1))
            assert np.array_equal(np.asarray(m1)[b, -1], alone.m[-1])
            assert np.array_equal(np.asarray(q1)[b, -1], alone.q[-1])
        with pytest.raises(ValueError, match="given for 3 bodies, the run has 2"):
            fj.integrate(jnp.asarray(m[:2]), jnp.array([1.0, 0, 0, 0]), jnp.array([1.0, 2, 3]),
                         jnp.array([0.1, 0.2]), 5, method="RK4", torque=tq)


@pytest.mark.parametrize("kw, error, words", [
    ({"nsteps": 2**40}, ValueError, "nsteps must be an integer in 0..2147483646"),
    ({"nsteps": 2**31 - 2, "save_every": 1}, ValueError, "the kept states would take"),
    ({"method": "BOGUS"}, ValueError, "method must be one of"),
    ({"threads": 0}, ValueError, "threads must be a positive integer"),
    ({"torque": frb.torques.rotor([[0.1, 0, 0], [0, 0.2, 0]])}, ValueError,
     "given for 2 bodies, the run has 1"),
])
def test_runs_frb_refuses_are_refused_while_tracing(kw, error, words):
    args = {"nsteps": 5, "method": "RK4", **kw}
    nsteps = args.pop("nsteps")

    def run(m):
        return fj.integrate(m, jnp.array([1.0, 0, 0, 0]), jnp.array([1.0, 2, 3]), 0.1, nsteps,
                            **args)

    with pytest.raises(error, match=words):
        jax.eval_shape(run, jnp.zeros(3))
    with pytest.raises(TypeError, match="nsteps must be a Python or numpy integer"):
        fj.integrate(jnp.ones(3), jnp.array([1.0, 0, 0, 0]), jnp.array([1.0, 2, 3]), 0.1,
                     jnp.array(3), method="RK4")
