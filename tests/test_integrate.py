"""frb.integrate: the engine, its torques and its exact-flow splittings (Celledoni and Zanna 2010)."""
import numpy as np
import pytest

import frb
from frb.torques import constant_field, gravity_gradient, heavy_top

# example 1 of Algorithm 903 (Celledoni and Zanna 2010, section 4.3)
M0 = np.array([-3.4790957088547336e-01, -1.9822914599675923e-01, -9.1633189192763642e-01])
U0 = np.array([9.5586303547238536e-05, 4.8777318247201465e-04, -8.6772148817192390e-04])
I1 = np.array([1.0, 1.0126869887825154, 3.3062374224730378])


def random_bodies(n, seed=0):
    rng = np.random.default_rng(seed)
    m = rng.normal(size=(n, 3))
    q = rng.normal(size=(n, 4))
    q /= np.linalg.norm(q, axis=1, keepdims=True)
    inertia = rng.uniform(0.5, 2.0, size=(n, 3))
    return m, q, inertia


def test_exact_equals_quat_step():
    m, q, inertia = random_bodies(6)
    tr = frb.integrate(m, q, inertia, 0.3, 4, method="exact")
    mm, qq = m, q
    for _ in range(4):
        mm, qq = frb.quat_step(mm, qq, 0.3, inertia)
    np.testing.assert_allclose(tr.m[-1], mm, rtol=0, atol=1e-14)
    np.testing.assert_allclose(tr.q[-1], qq, rtol=0, atol=1e-14)


def test_splitting_matches_frb_splitting_integrate():
    """RKN6_14 and STRANG of frb.integrate agree with frb.splitting.integrate (matrix path)
    to roundoff on example 1 (the engine holds quaternions, so bits differ)."""
    for method in ("RKN6_14", "STRANG"):
        old = frb.splitting.integrate(M0, np.eye(3), I1, 0.5, 200, method=method,
                                      torque=frb.splitting.constant_field(U0))
        new = frb.integrate(M0, np.eye(3), I1, 0.5, 200, method=method, torque=constant_field(U0))
        assert new.form == "matrix"
        np.testing.assert_allclose(new.m, old.m, rtol=0, atol=1e-12)
        np.testing.assert_allclose(new.Q, old.Q, rtol=0, atol=1e-12)


def test_user_coefficients_equal_named_method():
    a = frb.integrate(M0, np.eye(3), I1, 0.5, 20, method="STRANG", torque=constant_field(U0))
    b = frb.integrate(M0, np.eye(3), I1, 0.5, 20, coefficients=((0.5, 0.0), (0.5,)),
                      torque=constant_field(U0))
    assert np.array_equal(a.m, b.m) and np.array_equal(a.q, b.q)


def test_heavy_top_is_a_constant_field_on_e3_and_conserves_energy_to_order_6():
    a = frb.integrate(M0, np.eye(3), I1, 0.1, 50, method="RKN6_14", torque=heavy_top(2.0, [0, 0, 1]))
    b = frb.integrate(M0, np.eye(3), I1, 0.1, 50, method="RKN6_14",
                      torque=constant_field([0, 0, 2.0]))
    assert np.array_equal(a.m, b.m)
    # a general centre of mass: energy error of a sixth-order method drops by ~2^6 when h halves
    top = heavy_top(1.5, [0.1, -0.2, 0.7])
    q0 = np.array([0.9, 0.1, -0.3, 0.2]) / np.linalg.norm([0.9, 0.1, -0.3, 0.2])
    errs = []
    for h in (0.2, 0.1):
        tr = frb.integrate([0.3, 1.1, -0.4], q0, [0.8, 1.1, 1.7], h, int(round(4 / h)),
                           method="RKN6_14", torque=top)
        errs.append(np.abs(tr.energy - tr.energy[0]).max())
    assert 40 < errs[0] / errs[1] < 100
    # and the vertical component of the spatial momentum is conserved exactly (torque horizontal)
    for method in ("STRANG", "RKN6_14"):
        tr = frb.integrate([0.3, 1.1, -0.4], q0, [0.8, 1.1, 1.7], 0.1, 1000, method=method,
                           torque=top)
        lz = tr.spatial_momentum[:, 2]
        assert np.abs(lz - lz[0]).max() < 1e-13 * np.abs(tr.m).max()


def test_built_in_torques_match_their_formulas():
    """The compiled torques against the same formulas written in numpy as user torques."""
    m, q, inertia = random_bodies(5, seed=3)
    top = heavy_top(1.3, [0.2, -0.1, 0.9])

    def top_user(t, Q):
        return 1.3 * np.cross(Q[:, 2, :], [0.2, -0.1, 0.9])

    rate = 0.7

    def gg_user(t, Q):
        r = np.array([np.cos(rate * t), np.sin(rate * t), 0.0])
        c = np.einsum("nji,j->ni", Q, r)
        return 3 * rate**2 * np.cross(c, inertia * c)

    for built, user in ((top, top_user), (gravity_gradient(rate), gg_user)):
        a = frb.integrate(m, q, inertia, 0.05, 40, method="RKN6_14", torque=built)
        b = frb.integrate(m, q, inertia, 0.05, 40, method="RKN6_14", torque=user)
        np.testing.assert_allclose(a.m, b.m, rtol=0, atol=1e-13)
        np.testing.assert_allclose(a.q, b.q, rtol=0, atol=1e-13)


def test_gravity_gradient_torque_formula():
    """T_b = 3 n^2 c x (I c): zero when a principal axis points at the planet, and the
    small-angle restoring torque -3 n^2 (I2 - I1) theta about the orbit normal when the body
    x axis is turned by theta from the planet direction."""
    gg = gravity_gradient(2.0)
    theta = 1e-4
    # body x axis rotated by theta about z from r(0) = e_x
    Q = np.array([[np.cos(theta), -np.sin(theta), 0], [np.sin(theta), np.cos(theta), 0], [0, 0, 1]])
    tb = gg.torque(0.0, Q, np.array([1.0, 2.0, 3.0]))
    np.testing.assert_allclose(tb, [0, 0, 3 * 4.0 * (2.0 - 1.0) * (-theta)], rtol=1e-7, atol=1e-20)
    assert np.abs(gg.torque(0.0, np.eye(3), np.array([1.0, 2.0, 3.0]))).max() == 0


#: Relabellings of the body axes by a rotation S (a signed permutation): axis i of the relabelled
#: body is axis |S_i| of the given one; m' = S m, I' = the moments permuted, Q' = Q S^T.
RELABELLINGS = [np.array([[0, 1, 0], [0, 0, 1], [1, 0, 0]]),
                np.array([[0, 1, 0], [1, 0, 0], [0, 0, -1]])]


@pytest.mark.parametrize("name", sorted(frb.METHODS))
@pytest.mark.parametrize("S", RELABELLINGS, ids=["cyclic", "swap"])
def test_relabelled_axes_give_the_relabelled_motion(name, S):
    """Euler's equations and the attitude equation keep their form under a relabelling of the
    principal axes by a rotation S: the relabelled body's states are S m(t) and Q(t) S^T. Every
    method but SPLIT3 and SYMROT (whose splittings name axes, docs/guide/choosing.rst) gives
    them within 1e-13 after 20 steps; those two differ by their step error."""
    rng = np.random.default_rng(3)
    m0 = rng.normal(size=3)
    inertia = np.array([0.8, 1.7, 2.6])
    q0 = rng.normal(size=4)
    Q0 = frb.quat_to_matrix(q0 / np.linalg.norm(q0))
    order = np.abs(S).argmax(axis=1)
    a = frb.integrate(m0, Q0, inertia, 0.05, 20, method=name, save_every="final")
    b = frb.integrate(S @ m0, Q0 @ S.T, inertia[order], 0.05, 20, method=name, save_every="final")
    diff = max(np.abs(b.m[-1] - S @ a.m[-1]).max(), np.abs(b.Q[-1] - a.Q[-1] @ S.T).max())
    if name in ("SPLIT3", "SYMROT"):
        assert diff > 1e-6
    else:
        assert diff <= 1e-13


@pytest.mark.parametrize("name", sorted(frb.METHODS))
def test_a_nearly_unit_quaternion_is_taken_as_given(name):
    """q0 with |q0| = 1 + 5e-11 (accepted: within 1e-10): RK4 and SYMROT normalise every step,
    every other method turns q0 by unit quaternions and keeps its norm to rounding (the
    documented rule of frb.integrate)."""
    q0 = np.array([0.5, 0.5, 0.5, 0.5]) * (1 + 5e-11)
    tr = frb.integrate([0.3, -0.7, 0.5], q0, [0.8, 1.7, 2.6], 0.1, 5, method=name)
    norm = np.linalg.norm(tr.q[-1])
    if name in ("RK4", "SYMROT"):
        assert abs(norm - 1) <= 2e-15
    else:
        assert abs(norm - np.linalg.norm(q0)) <= 2e-15


def test_batched_equals_single_bit_for_bit():
    m, q, inertia = random_bodies(9, seed=5)
    for torque in (None, heavy_top(1.0, [0.1, 0.2, 0.8]), gravity_gradient(0.5)):
        for method in ("EXACT", "STRANG", "RKN6_14"):
            if method == "EXACT" and torque is not None:
                continue
            b = frb.integrate(m, q, inertia, 0.1, 7, method=method, torque=torque)
            for j in (0, 4, 8):
                s = frb.integrate(m[j], q[j], inertia[j], 0.1, 7, method=method, torque=torque)
                assert np.array_equal(b.m[:, j], s.m) and np.array_equal(b.q[:, j], s.q)


def test_chunk_size_does_not_change_results(monkeypatch):
    m, q, inertia = random_bodies(70, seed=6)
    a = frb.integrate(m, q, inertia, 0.1, 5, method="STRANG", torque=heavy_top(1.0, [0, 0, 1]))
    monkeypatch.setattr(frb._numbers_table, "ENGINE_CHUNK", 7)
    b = frb.integrate(m, q, inertia, 0.1, 5, method="STRANG", torque=heavy_top(1.0, [0, 0, 1]))
    assert np.array_equal(a.m, b.m) and np.array_equal(a.q, b.q)


def test_user_torque_is_called_once_per_stage_for_the_whole_batch():
    m, q, inertia = random_bodies(11, seed=7)
    calls = []

    def torque(t, Q):
        calls.append((t, Q.shape))
        assert not Q.flags.writeable
        return np.zeros((Q.shape[0], 3))

    frb.integrate(m, q, inertia, 0.1, 3, method="STRANG", torque=torque)
    assert [c[1] for c in calls] == [(11, 3, 3)] * 3
    # the kick of A(h/2) B(h) A(h/2) is at the middle of each step
    np.testing.assert_allclose([c[0] for c in calls], [0.05, 0.15, 0.25], atol=1e-15)


def test_save_every_and_shapes():
    m, q, inertia = random_bodies(3)
    tr = frb.integrate(m, q, inertia, 0.25, 10, method="exact", save_every=4)
    np.testing.assert_allclose(tr.t, [0, 1.0, 2.0, 2.5])
    assert tr.m.shape == (4, 3, 3) and tr.q.shape == (4, 3, 4) and tr.Q.shape == (4, 3, 3, 3)
    full = frb.integrate(m, q, inertia, 0.25, 10, method="exact")
    assert np.array_equal(tr.m, full.m[[0, 4, 8, 10]])
    one = frb.integrate(m[0], frb.quat_to_matrix(q[0]), inertia[0], 0.25, 0, method="exact")
    assert one.m.shape == (1, 3) and one.Q.shape == (1, 3, 3) and one.attitude.shape == (1, 3, 3)
    # the kept initial state (written by the compiled loop) is the input, for every kind of run
    assert np.array_equal(one.m[0], m[0]) and np.allclose(one.q[0] * np.sign(one.q[0, 0]),
                                                          q[0] * np.sign(q[0, 0]), atol=1e-15)
    for kw in (dict(nsteps=0), dict(nsteps=3), dict(nsteps=3, save_every=None),
               dict(nsteps=3, method="RK4", torque=lambda t, Q: 0.1 * Q[:, 2])):
        kw = dict(dict(method="STRANG", torque=heavy_top(1, [0, 0, 1])), **kw)
        tr = frb.integrate(m, q, inertia, 0.25, **kw)
        kept = 0 if kw.get("save_every", 1) else kw["nsteps"]
        assert np.array_equal(tr.m[0], m) == (kept == 0) and np.array_equal(tr.q[0], q) == (kept == 0)
        assert np.array_equal(tr.t, [0.25 * kept] if kept else 0.25 * np.arange(kw["nsteps"] + 1))
    assert "1 body" in repr(one) and len(repr(tr)) < 200


def test_matrix_and_quaternion_input_agree():
    m, q, inertia = random_bodies(4)
    a = frb.integrate(m, q, inertia, 0.2, 5, method="RKN6_14", torque=heavy_top(1, [0, 0, 1]))
    b = frb.integrate(m, frb.quat_to_matrix(q), inertia, 0.2, 5, method="RKN6_14",
                      torque=heavy_top(1, [0, 0, 1]))
    np.testing.assert_allclose(a.Q, b.Q, atol=1e-14)
    np.testing.assert_allclose(a.m, b.m, atol=1e-14)


@pytest.mark.parametrize("kwargs, exc, fragment", [
    (dict(m0=[1, 2]), ValueError, "m0 must have shape"),
    (dict(m0=[1, 2, np.nan]), ValueError, "m0 contains non-finite"),
    (dict(m0=["a", "b", "c"]), TypeError, "m0 must be an array of real numbers"),
    (dict(m0=[1 + 1j, 2, 3]), TypeError, "m0 must be an array of real numbers"),
    (dict(attitude0=np.eye(3) * 2), ValueError, "rotation matrices"),
    (dict(attitude0=[1, 0, 0, 0.1]), ValueError, "unit quaternions"),
    (dict(attitude0=np.eye(4)), ValueError, "attitude0 must have shape"),
    (dict(inertia=[1, 0, 2]), ValueError, "strictly positive"),
    (dict(inertia=[[1, 2, 3]]), ValueError, "inertia must have shape (3,)"),
    (dict(h=np.inf), ValueError, "h must be finite"),
    (dict(h="0.1"), TypeError, "h must be a real number"),
    (dict(nsteps=-1), ValueError, "nsteps must be an integer in"),
    (dict(nsteps=2**31 - 1), ValueError, "2147483646"),
    (dict(nsteps=1.5), TypeError, "nsteps must be an integer"),
    (dict(save_every=0), ValueError, "save_every"),
    (dict(method="nope"), ValueError, "method must be one of"),
    (dict(method=None), TypeError, "needs method="),
    (dict(method="EXACT", torque=heavy_top(1, [0, 0, 1])), ValueError, "takes no torque"),
    (dict(method="NYSTROM4", torque=gravity_gradient(1.0)), ValueError, "NYSTROM4"),
    (dict(method="STRANG", torque=42), TypeError, "torque must be None"),
    (dict(method="DMV6", quadrature=2), ValueError, "quadrature applies"),
])
def test_bad_input_raises(kwargs, exc, fragment):
    args = dict(m0=[0.3, 0.5, 0.8], attitude0=np.eye(3), inertia=[1, 2, 3], h=0.1, nsteps=3,
                method="STRANG")
    args.update(kwargs)
    with pytest.raises(exc) as info:
        frb.integrate(args.pop("m0"), args.pop("attitude0"), args.pop("inertia"), args.pop("h"),
                      args.pop("nsteps"), **args)
    assert fragment in str(info.value)


@pytest.mark.parametrize("result, fragment, error", [
    (lambda n: np.zeros((n, 2)), "must return an array of shape (4, 3)", ValueError),
    (lambda n: np.full((n, 3), np.nan), "non-finite torque for body 0", ValueError),
    (lambda n: np.array([["a"] * 3] * n), "must return real numbers", TypeError),
    (lambda n: np.zeros((n, 3), bool), "must return real numbers, got dtype bool", TypeError),
    (lambda n: None, "returned None", TypeError),
])
def test_bad_user_torque_results_name_the_torque_and_step(result, fragment, error):
    m, q, inertia = random_bodies(4)

    def my_torque(t, Q):
        return result(Q.shape[0])

    with pytest.raises(error) as info:
        frb.integrate(m, q, inertia, 0.1, 3, method="STRANG", torque=my_torque)
    assert fragment in str(info.value) and "my_torque" in str(info.value) and "step 1" in str(info.value)


def test_user_torque_exception_propagates():
    def broken(t, Q):
        raise KeyError("from the torque")

    with pytest.raises(KeyError):
        frb.integrate([0.3, 0.5, 0.8], np.eye(3), [1, 2, 3], 0.1, 3, method="STRANG", torque=broken)


def test_overflow_is_an_integration_error_naming_step_and_body():
    m, q, inertia = random_bodies(3)
    with pytest.raises(frb.IntegrationError) as info:
        frb.integrate(m, q, inertia, 10.0, 5, method="STRANG",
                      torque=constant_field([1e308, 1e308, 1e308]))
    err = info.value
    assert err.method == "STRANG" and err.step >= 1 and 0 <= err.body < 3
    assert f"step {err.step}" in str(err) and f"body {err.body}" in str(err)


def test_inputs_not_modified():
    m, q, inertia = random_bodies(3)
    copies = [a.copy() for a in (m, q, inertia)]
    frb.integrate(m, q, inertia, 0.1, 3, method="RKN6_14", torque=heavy_top(1, [0, 0, 1]))
    assert all(np.array_equal(a, b) for a, b in zip((m, q, inertia), copies))


def _heavy_top_run(method, h, T=2.0, weight=1.5, **kw):
    q0 = np.array([0.9, 0.1, -0.3, 0.2]) / np.linalg.norm([0.9, 0.1, -0.3, 0.2])
    return frb.integrate([0.3, 1.1, -0.4], q0, [0.8, 1.1, 1.7], h, int(round(T / h)),
                         method=method, torque=heavy_top(weight, [0.1, -0.2, 0.7]), **kw)


@pytest.mark.parametrize("method, order, hs, weight", [("STRANG", 2, (0.1, 0.05, 0.025), 1.5),
                                                       ("RKN6_14", 6, (0.1, 0.08, 0.0625, 0.05), 20.0)])
def test_order_of_exact_flow_splittings_on_a_heavy_top(method, order, hs, weight):
    """Against RKN6_14 at h = 0.005 (a heavier top for RKN6_14, whose error constants are small:
    with weight 1.5 its errors reach the roundoff floor before the asymptotic regime). The
    reference itself carries about 5e-13 of roundoff (its 5,600 flows; it differs from the run at
    h = 0.0025 by that much), so RKN6_14's smallest error, 2e-11 at h = 0.05, stays 40 times above
    it (at h = 0.025 its error, about 1e-13, would be the reference's roundoff, not its own)."""
    ref = _heavy_top_run("RKN6_14", 0.005, weight=weight)
    errs = [np.abs(_heavy_top_run(method, h, weight=weight).m[-1] - ref.m[-1]).max() for h in hs]
    slope = np.polyfit(np.log(hs), np.log(errs), 1)[0]
    assert abs(slope - order) < 0.2, (slope, errs)


@pytest.mark.parametrize("method", ["STRANG", "RKN6_14"])
def test_exact_flow_splittings_are_symmetric(method):
    fwd = _heavy_top_run(method, 0.3, T=0.3)
    back = frb.integrate(fwd.m[-1], fwd.q[-1], [0.8, 1.1, 1.7], -0.3, 1, method=method,
                         torque=heavy_top(1.5, [0.1, -0.2, 0.7]))
    np.testing.assert_allclose(back.m[-1], fwd.m[0], atol=1e-14)
    np.testing.assert_allclose(back.q[-1], fwd.q[0], atol=1e-14)


@pytest.mark.parametrize("method", ["EXACT", "RKN6_14", "DMV6", "RK4"])
def test_one_body_set_up_gives_the_results_of_the_general_path(method):
    """One body (m0 (3,), attitude0 (4,) or (3, 3), inertia (3,)) takes integrate's lean set-up
    (one compiled value check); the trajectory must be that of the same body given as a batch of
    one (the general set-up), bit for bit, for array-likes of any kind."""
    rng = np.random.default_rng(8)
    torque = None if method == "EXACT" else heavy_top(1.0, [0.0, 0.0, 1.0])
    for _ in range(5):
        m = rng.normal(size=3)
        q = rng.normal(size=4)
        q /= np.linalg.norm(q)
        Q = frb.quat_to_matrix(q)
        inertia = rng.uniform(0.5, 2.0, 3)
        for att in (q, Q):
            ref = frb.integrate(m[None], att[None], inertia, 0.05, 7, method=method, torque=torque)
            for mv, av, iv in ((m, att, inertia), (list(m), att.tolist(), list(inertia)),
                               (np.repeat(m, 2)[::2], np.asfortranarray(att), inertia)):
                tr = frb.integrate(mv, av, iv, 0.05, 7, method=method, torque=torque)
                assert tr.form == ref.form
                assert np.array_equal(tr.m, ref.m[:, 0]) and np.array_equal(tr.q, ref.q[:, 0])
                assert np.array_equal(tr.attitude, ref.attitude[:, 0])


@pytest.mark.parametrize("kwargs, fragment", [
    (dict(m0=np.array([np.nan, 0.0, 1.0]), attitude0=np.array([2.0, 0, 0, 0])), "m0 contains non-finite"),
    (dict(attitude0=np.array([np.inf, 0, 0, 0]), inertia=np.array([-1.0, 1, 1])),
     "attitude0 contains non-finite"),
    (dict(attitude0=np.full((3, 3), np.nan)), "attitude0 contains non-finite"),
    (dict(attitude0=np.array([1.0 + 2e-10, 0, 0, 0]), inertia=np.array([np.nan, 1, 1])),
     "unit quaternions, scalar first (|q| = 1 within 1e-10)"),
    (dict(attitude0=np.diag([1.0, 1.0, -1.0]), inertia=np.array([0.0, 1, 1])),
     "rotation matrices (Q^T Q = 1 within 1e-10, det Q = +1)"),
    (dict(inertia=np.array([1.0, np.inf, 1.0])), "inertia contains non-finite"),
    (dict(inertia=np.array([1.0, 0.0, 1.0])), "inertia must contain strictly positive"),
])
def test_one_body_set_up_keeps_every_check_in_order(kwargs, fragment):
    """The lean set-up's compiled checks raise the general path's messages, first problem first
    in its order (m0, attitude0, inertia)."""
    args = dict(m0=np.array([0.3, 0.5, 0.8]), attitude0=np.array([1.0, 0, 0, 0]),
                inertia=np.array([1.0, 2.0, 3.0]))
    args.update(kwargs)
    with pytest.raises(ValueError) as info:
        frb.integrate(args["m0"], args["attitude0"], args["inertia"], 0.1, 2, method="EXACT")
    assert fragment in str(info.value)


def test_energy_of_a_run_with_centres_per_body_is_each_body_alone():
    # the potential of a torque given per body along a run (Q of shape (K, N, 3, 3))
    rng = np.random.default_rng(8)
    centres, m0 = rng.random((4, 3)), rng.random((4, 3))
    q0 = np.tile([1.0, 0.0, 0.0, 0.0], (4, 1))
    tr = frb.integrate(m0, q0, [1.0, 2.0, 3.0], 0.05, 10, method="RK4", torque=heavy_top(1.0, centres))
    for k in range(4):
        alone = frb.integrate(m0[k], q0[k], [1.0, 2.0, 3.0], 0.05, 10, method="RK4",
                              torque=heavy_top(1.0, centres[k]))
        assert np.array_equal(tr.energy[:, k], alone.energy)


def test_one_body_with_parameters_given_per_body_for_it():
    # a torque or wheels given "per body" for the one body of a run: the energy and the
    # total momentum as with the parameters given once; the heavy top conserves the energy
    m0, q0, centre = np.array([0.3, 0.5, 0.8]), [1.0, 0.0, 0.0, 0.0], np.array([0.1, -0.2, 0.3])
    per_body = frb.integrate(m0, q0, [1.0, 2.0, 3.0], 0.01, 200, method="RKN6_14",
                             torque=heavy_top(1.0, centre[None]))
    once = frb.integrate(m0, q0, [1.0, 2.0, 3.0], 0.01, 200, method="RKN6_14",
                         torque=heavy_top(1.0, centre))
    assert per_body.energy.shape == (201,)
    assert np.array_equal(per_body.energy, once.energy)
    assert np.abs(per_body.energy / per_body.energy[0] - 1).max() < 1e-10
    wheels = frb.Wheels(np.eye(3)[None], centre[None], inertia=np.full((1, 3), 0.01))
    tr = frb.integrate(m0, q0, [1.0, 2.0, 3.0], 0.01, 200, method="RK4", wheels=wheels)
    assert tr.total_momentum.shape == (201, 3)
    # no external torque: the total momentum is conserved (to RK4's error)
    assert np.abs(tr.total_momentum - tr.total_momentum[0]).max() < 1e-10


def test_body_rate_beyond_the_float64_range_is_refused():
    tr = frb.integrate([1e300, 0.0, 0.0], [1.0, 0.0, 0.0, 0.0], [1e-10, 1.0, 1.0], 1e-300, 3,
                       method="EXACT")
    with pytest.raises(ValueError, match="body_rate: the angular velocity I.-1 m is beyond the "
                                         "float64 range"):
        tr.body_rate
    # the momentum itself is kept (a body spinning about its axis keeps m)
    assert np.array_equal(tr.m[-1], [1e300, 0.0, 0.0])


def test_the_base_torque_class_is_not_a_torque():
    with pytest.raises(TypeError, match=r"torque: Torque defines no __call__\(t, Q, m=None\)"):
        frb.integrate([0.3, 0.5, 0.8], [1.0, 0.0, 0.0, 0.0], [1.0, 2.0, 3.0], 0.1, 3, method="RK4",
                      torque=frb.torques.Torque())

    class Incomplete(frb.torques.Torque):
        pass
    with pytest.raises(TypeError, match="torque: Incomplete defines no __call__"):
        frb.torques.linear_damping(0.1) + Incomplete()


@pytest.mark.parametrize("call", [
    lambda name: frb.integrate([0.3, 0.5, 0.8], [1.0, 0.0, 0.0, 0.0], [1.0, 2.0, 3.0], 0.1, 3,
                               method=name),
    lambda name: frb.splitting.integrate([0.3, 0.5, 0.8], [1.0, 0.0, 0.0, 0.0], [1.0, 2.0, 3.0],
                                         0.1, 3, method=name),
])
@pytest.mark.parametrize("name", ["mıdpoint", "ſtrang", "ＳＴＲＡＮＧ"])
def test_names_with_letters_that_upper_case_to_ascii_name_nothing(call, name):
    # "ı".upper() == "I", "ſ".upper() == "S": such a name is not a method's
    with pytest.raises(ValueError, match="method must be one of"):
        call(name)


def test_messages_of_one_body_name_no_body():
    # a body given as such (m of shape (3,)) is not "body 0" of a batch
    with pytest.raises(ValueError, match=r"returned a non-finite torque$"):
        frb.integrate([0.3, 0.5, 0.8], np.eye(3), [1, 2, 3], 0.1, 3, method="STRANG",
                      torque=lambda t, Q: np.full((len(Q), 3), np.nan))
    with pytest.raises(ValueError, match=r"^inertia: the principal moments span more than 2\^200"):
        frb.integrate([0.1, 0.2, 0.3], [1.0, 0, 0, 0], [1, 2, 1e308], 0.1, 3, method="RK4")
    with pytest.raises(ValueError, match=r"inertia: the principal moments of body 1 span more"):
        frb.integrate([[0.1, 0.2, 0.3]] * 2, [[1.0, 0, 0, 0]] * 2, [[1, 2, 3], [1, 2, 1e308]],
                      0.1, 3, method="RK4")


def test_a_user_torque_returning_masked_entries_is_refused():
    with pytest.raises(TypeError, match="returned a masked array with masked entries"):
        frb.integrate([0.3, 0.5, 0.8], np.eye(3), [1.0, 2.0, 3.0], 0.1, 3, method="RK4",
                      torque=lambda t, Q: np.ma.masked_all((len(Q), 3)))
