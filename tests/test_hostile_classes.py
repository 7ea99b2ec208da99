"""Hostile inputs class by class, each with its neighbours (the other routes, the
other arguments): the right answer, checked against an independent reference (exact rational
arithmetic, the construction of the input, another route), or a clear exception of the type the
input rule says, naming the argument."""
import math
import os
import re
import subprocess
import sys
import textwrap
import warnings
from fractions import Fraction

import numpy as np
import pytest

import frb
from frb.torques import UserTorque, attitude_control, constant_field, gravity_gradient, rotor

M, QUAT, I = np.array([0.3, 0.5, 0.8]), np.array([1.0, 0.0, 0.0, 0.0]), np.array([1.0, 2.0, 3.0])
J = np.array([[2.0, 0.1, 0.0], [0.1, 3.0, 0.0], [0.0, 0.0, 4.0]])


def _unit(q):
    q = np.asarray(q, dtype=float)
    return q / np.linalg.norm(q)


def _coefficients(s):
    """A consistent symmetric set with s torque kicks a half step: 4 s + 1 flows a step."""
    return [1.0 / (2 * s + 1)] * (s + 1), [0.5 / s] * s


# ------------------------------------------------------ splitting coefficient sets of > 64 flows

@pytest.mark.parametrize("call", [
    lambda c: frb.splitting.integrate(M, np.eye(3), I, 0.1, 2, coefficients=c),
    lambda c: frb.splitting.integrate(M, np.eye(3), I, 0.1, 2, coefficients=c,
                                      torque=constant_field([0.0, 0.0, 1.0])),
    lambda c: frb.splitting.integrate(M, np.eye(3), I, 0.1, 2, coefficients=c,
                                      torque=lambda m, Q, t: (m, Q)),
    lambda c: frb.splitting.integrate(M, np.eye(3), J, 0.1, 2, coefficients=c,
                                      torque=constant_field([0.0, 0.0, 1.0])),
    lambda c: frb.integrate(M, QUAT, I, 0.1, 2, coefficients=c),
    lambda c: frb.integrate(M, QUAT, I, 0.1, 2, coefficients=c,
                            torque=constant_field([0.0, 0.0, 1.0])),
    lambda c: frb.compare(["SPLITTING"], bodies=2, steps=(2,), coefficients=c),
], ids=["split-free", "split-engine", "split-flow", "split-tensor", "integrate-free",
        "integrate-torque", "compare"])
def test_more_than_64_flows_refused_by_every_route(call):
    with pytest.raises(ValueError, match="at most 64 flows.*got 65"):
        call(_coefficients(16))


def test_61_flows_right_in_every_route():
    """The largest sets taken give the torqued motion: against RKN6_14 at a small step."""
    c = _coefficients(15)
    field = constant_field([0.0, 0.0, 1.0])
    ref = frb.splitting.integrate(M, np.eye(3), I, 0.01, 200, torque=field, save_every=None)
    runs = [frb.splitting.integrate(M, np.eye(3), I, 0.1, 20, torque=field, coefficients=c),
            frb.splitting.integrate(M, np.eye(3), I, 0.1, 20, torque=field.flow,
                                    coefficients=c),
            frb.integrate(M, np.eye(3), I, 0.1, 20, torque=field, coefficients=c)]
    for tr in runs:
        assert np.abs(tr.m[-1] - ref.m[-1]).max() < 1e-3
        assert np.abs(tr.Q[-1] - ref.Q[-1]).max() < 1e-3


# ------------------------------------------------------------------------------------ frb.dask

@pytest.fixture(scope="module")
def dask_array():
    return pytest.importorskip("dask.array")


@pytest.mark.parametrize("bad, fragment", [
    (np.ones((4, 3), bool), "booleans"), (np.ones((4, 3), complex), "complex"),
    (np.array([["1", "2", "3"]] * 4), "strings")])
@pytest.mark.parametrize("where", ["m", "inertia"])
def test_dask_per_body_arrays_follow_the_input_rule(dask_array, bad, fragment, where):
    import frb.dask
    m = dask_array.from_array(bad if where == "m" else np.tile(M, (4, 1)), chunks=2)
    inertia = bad if where == "inertia" else I
    with pytest.raises(TypeError, match=f"{where}.*{fragment}"):
        frb.dask.quat_step(m, np.tile(QUAT, (4, 1)), 0.1, inertia)


def test_dask_per_body_torque_and_empty_batch(dask_array):
    import frb.dask
    m = np.random.default_rng(3).normal(size=(6, 3))
    q = np.tile(QUAT, (6, 1))
    torque = rotor(np.arange(18.0).reshape(6, 3) / 10) + constant_field([0.0, 0.0, 1.0])
    lazy = frb.dask.integrate(dask_array.from_array(m, chunks=(2, 3)), q, I, 0.1, 5,
                              method="RK4", torque=torque).compute()
    whole = frb.integrate(m, q, I, 0.1, 5, method="RK4", torque=torque)
    assert np.array_equal(lazy.m, whole.m) and np.array_equal(lazy.q, whole.q)
    m1, q1 = frb.dask.quat_step(np.empty((0, 3)), np.empty((0, 4)), 0.1, I)
    assert m1.compute().shape == (0, 3) and q1.compute().shape == (0, 4)
    m1, Q1 = frb.dask.frb_step(np.empty((0, 3)), np.empty((0, 3, 3)), 0.1, I)
    assert m1.compute().shape == (0, 3) and Q1.compute().shape == (0, 3, 3)
    tr = frb.dask.integrate(np.empty((0, 3)), np.empty((0, 4)), I, 0.1, 3, method="RK4")
    assert tr.compute().m.shape == (4, 0, 3)


@pytest.mark.parametrize("rows", [5, 7])
def test_dask_per_body_torque_of_another_batch_refused_before_compute(dask_array, rows):
    import frb.dask
    m = dask_array.from_array(np.tile(M, (6, 1)), chunks=(2, 3))
    with pytest.raises(ValueError, match=rf"its per-body parameters are given for {rows} bodies, "
                                         r"the run has 6$"):
        frb.dask.integrate(m, np.tile(QUAT, (6, 1)), I, 0.1, 2, method="RK4",
                           torque=rotor(np.ones((rows, 3))))


def _field_of_all(t, Q):
    """Each body's third axis in the field of the sum of all third axes (couples the bodies)."""
    axes = Q[:, :, 2]
    return np.einsum("kji,kj->ki", Q, np.cross(axes, axes.sum(axis=0)))


def _declared(function):
    function.couples_bodies = True
    return function


@pytest.mark.parametrize("torque", [
    _declared(lambda t, Q: _field_of_all(t, Q)),
    UserTorque(_field_of_all, couples_bodies=True),
    UserTorque(_field_of_all, couples_bodies=True) + constant_field([0.0, 0.0, 1.0]),
    UserTorque(_field_of_all, couples_bodies=True).in_frame(np.diag([1.0, -1.0, -1.0])),
], ids=["attribute", "keyword", "in-a-sum", "in-a-frame"])
def test_dask_refuses_torques_that_couple_the_bodies(dask_array, torque):
    import frb.dask
    m = dask_array.from_array(np.tile(M, (4, 1)), chunks=(2, 3))
    with pytest.raises(ValueError, match="couples the bodies"):
        frb.dask.integrate(m, np.tile(QUAT, (4, 1)), I, 0.1, 2, method="RK4", torque=torque)
    # the whole batch in one call is right: the torque sees every body (against the bodies
    # integrated one stage at a time by hand with RK4's first stage: the torque of all bodies)
    tr = frb.integrate(np.tile(M, (4, 1)), np.tile(QUAT, (4, 1)), I, 0.1, 1, method="RK4",
                       torque=torque)
    assert tr.m.shape == (2, 4, 3) and np.isfinite(tr.m).all()


def test_coupling_torque_sees_the_whole_batch():
    """The coupled torque of two bodies differs from that of each alone; frb.integrate gives the
    pair the pair's torque: Euler-like check at a tiny step against the torque of the pair."""
    m = np.array([[0.3, 0.5, 0.8], [0.1, -0.4, 0.2]])
    q = np.array([_unit([1.0, 0.2, 0.0, 0.1]), _unit([0.7, 0.0, 0.5, 0.0])])
    h = 1e-7
    tr = frb.integrate(m, q, I, h, 1, method="RK4",
                       torque=UserTorque(_field_of_all, couples_bodies=True))
    Q = frb.quat_to_matrix(q)
    expected = m + h * (np.cross(m, m / I) + _field_of_all(0.0, Q))
    assert np.abs(tr.m[-1] - expected).max() < 1e-12


# ------------------------------------------------------- per-body parameters of torques, direct

@pytest.mark.parametrize("torque, fragment", [
    (rotor([[1.0, 0.0, 0.0], [0.0, 1.0, 0.0]]), "rotor: h is given for 2 bodies, Q holds 4"),
    (rotor([[1.0, 0.0, 0.0]]), "rotor: h is given for 1 bodies, Q holds 4"),
    (attitude_control([QUAT, QUAT], 1.0, 1.0), "q_ref is given for 2 bodies, Q holds 4"),
    (rotor([[1.0, 0.0, 0.0]] * 2) + constant_field([0.0, 0.0, 1.0]), "h is given for 2"),
])
def test_per_body_parameters_checked_in_direct_calls(torque, fragment):
    Q4, m4 = np.tile(np.eye(3), (4, 1, 1)), np.tile(M, (4, 1))
    with pytest.raises(ValueError, match=fragment):
        torque(0.0, Q4, m4, inertia=I)
    with pytest.raises(ValueError, match="per-body parameters are given for"):
        frb.integrate(m4, np.tile(QUAT, (4, 1)), I, 0.1, 1, method="RK4", torque=torque)


def test_bad_per_body_q_ref_names_its_body():
    with pytest.raises(ValueError, match=r"q_ref must be unit quaternions .*\(body 2\)"):
        attitude_control([QUAT, QUAT, [2.0, 0, 0, 0]], 1.0, 1.0)
    with pytest.raises(ValueError, match=r"q_ref must be finite \(body 1\)"):
        attitude_control([QUAT, [np.nan, 0, 0, 0]], 1.0, 1.0)


def test_refusal_shows_the_torque_the_user_gave():
    """With an inertia tensor the run holds the torque in the principal frame; the message shows
    the user's q_ref."""
    q_ref = [[0.6, 0.8, 0.0, 0.0], [1.0, 0.0, 0.0, 0.0]]
    with pytest.raises(ValueError, match=r"attitude_control\(\[\[0\.6, 0\.8, 0\.0, 0\.0\]"):
        frb.integrate(np.tile(M, (4, 1)), np.tile(QUAT, (4, 1)), J, 0.1, 1, method="RK4",
                      torque=attitude_control(q_ref, 1.0, 1.0))


def test_gravity_gradient_called_with_a_tensor():
    """T_b = 3 n^2 c x (J c), c = Q^T r: the formula written here, for one body and a batch."""
    n, t = 1.3, 0.4
    Q = frb.quat_to_matrix(_unit([0.9, 0.1, 0.3, 0.2]))
    r = np.array([np.cos(n * t), np.sin(n * t), 0.0])
    c = Q.T @ r
    expected = 3 * n**2 * np.cross(c, J @ c)
    got = gravity_gradient(n)(t, Q, inertia=J)
    assert got.shape == (3,) and np.allclose(got, expected, rtol=1e-14, atol=1e-14)
    got2 = gravity_gradient(n)(t, np.stack([Q, Q]), inertia=J)
    assert got2.shape == (2, 3) and np.allclose(got2, [expected, expected], rtol=1e-14,
                                                atol=1e-14)
    with pytest.raises(ValueError, match="inertia must have shape"):
        gravity_gradient(n)(t, Q, inertia=[1.0, 2.0])
    with pytest.raises(ValueError, match="positive definite"):
        gravity_gradient(n)(t, Q, inertia=-J)


def test_rotor_called_with_a_tensor():
    h = np.array([0.5, -0.2, 1.0])
    got = rotor(h)(0.0, np.eye(3), M, inertia=J)
    assert np.allclose(got, np.cross(h, np.linalg.solve(J, M)), rtol=1e-14, atol=1e-15)


# ------------------------------------------------------------------- singular inertia tensors

def test_inertia_singular_up_to_rounding_refused():
    rng = np.random.default_rng(11)
    for _ in range(50):
        R = frb.quat_to_matrix(_unit(rng.normal(size=4)))
        Js = R @ np.diag([0.0, 1.0, 2.0]) @ R.T
        with pytest.raises(ValueError, match="inertia (is singular up to rounding|must be positive "
                                             "definite)"):
            frb.principal_axes(Js)
        with pytest.raises(ValueError, match="inertia"):
            frb.quat_step(M, QUAT, 0.1, Js)
    # batches name the body
    good = np.diag([1.0, 2.0, 3.0]) + 0.1 * (np.ones((3, 3)) - np.eye(3))
    R = frb.quat_to_matrix(_unit([1.0, 2.0, 3.0, 4.0]))
    with pytest.raises(ValueError, match=r"singular up to rounding .*\(body 1\)"):
        frb.integrate(np.tile(M, (2, 1)), np.tile(QUAT, (2, 1)),
                      np.stack([good, R @ np.diag([1e-14, 1.0, 2.0]) @ R.T]), 0.1, 1,
                      method="RK4")


def test_inertia_well_conditioned_accepted_and_exactly_diagonal_any_ratio():
    R = frb.quat_to_matrix(_unit([1.0, 2.0, 3.0, 4.0]))
    moments = np.array([1e-9, 1.0, 2.0])
    got, _ = frb.principal_axes(R @ np.diag(moments) @ R.T)
    assert abs(got[0] / 1e-9 - 1) < 1e-5 and np.allclose(got[1:], [1.0, 2.0], rtol=1e-14)
    # an exactly diagonal tensor is its moments, whatever their ratio
    assert np.array_equal(frb.principal_axes(np.diag([1e-17, 1.0, 2.0]))[0], [1e-17, 1.0, 2.0])


# ------------------------------------------------------------------------------------- threads

def test_thread_count_bounded_by_the_process():
    script = textwrap.dedent("""
        import numpy as np, frb
        n = 20000
        m = np.random.default_rng(0).normal(size=(n, 3)); q = np.tile([1.0, 0, 0, 0], (n, 1))
        print(frb.get_num_threads(), frb.threads.THREAD_LIMIT)
        a = frb.quat_step(m, q, 0.1, [1.0, 2.0, 3.0])
        b = frb.quat_step(m, q, 0.1, [1.0, 2.0, 3.0], threads=4096)
        c = frb.integrate(m, q, [1.0, 2.0, 3.0], 0.1, 2, method="DMV6").m[-1]
        frb.set_num_threads(4096)
        d = frb.dmv_integrate(m, q, [1.0, 2.0, 3.0], 0.1, 2)[0]
        print(bool((a[0] == b[0]).all() and (c == d).all()), frb.get_num_threads())
    """)
    env = dict(os.environ, OMP_NUM_THREADS="100000")
    out = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True,
                         timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    lines = out.stdout.split("\n")
    threads, limit = map(int, lines[0].split())
    assert 1 <= threads <= limit <= 4096
    same, after = lines[1].split()
    assert same == "True" and int(after) <= limit


def test_threads_argument_still_checked():
    with pytest.raises(ValueError, match="at most 4096"):
        frb.quat_step(M, QUAT, 0.1, I, threads=4097)
    with pytest.raises(TypeError, match="threads"):
        frb.quat_step(M, QUAT, 0.1, I, threads=True)


# --------------------------------------------------------------------------------------- times

@pytest.mark.parametrize("call", [
    lambda: frb.integrate(M * 1e-300, QUAT, I, 1e308, 10, method="RK4"),
    lambda: frb.integrate(M * 1e-300, QUAT, I, 1e307, 10, method="RK4", t0=1.7e308),
    lambda: frb.splitting.integrate(M * 1e-300, np.eye(3), I, 1e308, 10),
    lambda: frb.splitting.integrate(M * 1e-300, np.eye(3), I, 1e308, 10,
                                    torque=lambda m, Q, t: (m, Q)),
    lambda: frb.dmv_integrate(M * 1e-300, QUAT, I, 1e308, 10),
    lambda: frb.integrate(M * 1e-300, QUAT, I, -1e308, 10, method="EXACT"),
])
def test_times_beyond_float64_refused(call):
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(ValueError, match=r"^h is too long for 10 steps: the times"):
            call()


def test_times_at_the_edge_kept():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        tr = frb.integrate(M * 1e-300, QUAT, I, 1e307, 10, method="EXACT")
    assert tr.t[-1] == 1e307 * 10 and np.isfinite(tr.t).all()


# ------------------------------------------------------------------------------ kinetic energy

def _exact_energy(m, inertia):
    e = sum(Fraction(float(x)) ** 2 / (2 * Fraction(float(i))) for x, i in zip(m, inertia))
    return float(e)      # (correctly rounded, also into the subnormals)


@pytest.mark.parametrize("ms, Is", [(1e160, 1e20), (1e-170, 1e-20), (1e-160, 1.0),
                                    (1e154, 1.0), (1.0, 1e-300), (1e-300, 1e-300), (1.0, 1.0)])
def test_kinetic_energy_without_spurious_overflow(ms, Is):
    m, inertia = M * ms, I * Is
    exact = _exact_energy(m, inertia)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        got = float(frb.kinetic_energy(m, inertia))
        tr = frb.integrate(m, QUAT, inertia, 0.0, 1, method="EXACT")
        traj = tr.kinetic_energy
    tiny = np.nextafter(0.0, 1.0)
    for value in (got, float(traj[0])):
        assert abs(value - exact) <= max(4e-16 * exact, 2 * tiny), (value, exact)


def test_kinetic_energy_of_tensors_scaled():
    tr = frb.integrate(M * 1e160, QUAT, J * 1e20, 0.0, 1, method="EXACT")
    exact = 0.5 * float(M @ np.linalg.solve(J, M)) * 1e300
    assert abs(tr.kinetic_energy[0] / exact - 1) < 1e-14


# ------------------------------------------------------------------------- counts and n, bools

def test_save_every_beyond_the_steps_keeps_first_and_last():
    tr = frb.integrate(M, QUAT, I, 0.1, 2, method="RK4", save_every=10**20)
    ref = frb.integrate(M, QUAT, I, 0.1, 2, method="RK4")
    assert np.array_equal(tr.t, [0.0, 0.2]) and np.array_equal(tr.m, ref.m[[0, -1]])


@pytest.mark.parametrize("bad", [True, False, None, 2.0, "3"])
def test_example_number_follows_the_input_rule(bad):
    from frb.examples import run_example
    with pytest.raises(TypeError, match="n must be an example number"):
        run_example(bad, output_path=False, compare_path=False)


@pytest.mark.parametrize("value", [True, np.bool_(True), 2.0])
def test_save_every_bool_and_float_are_type_errors(value):
    with pytest.raises(TypeError, match="save_every"):
        frb.splitting.integrate(M, np.eye(3), I, 0.1, 2, save_every=value)
    with pytest.raises(TypeError, match="save_every"):
        frb.integrate(M, QUAT, I, 0.1, 2, method="RK4", save_every=value)


# -------------------------------------------------------------------------------------- read_dat

def test_read_dat_repeat_counts_bounded(tmp_path):
    path = tmp_path / "big.dat"
    path.write_text("1000000000*0.0\n")
    with pytest.raises(ValueError, match="1000000000 values or more, beyond the"):
        frb.read_dat(path, max_values=None)
    path.write_text("100000000000000000000000*0.0\n")
    for limit in (None, 10):
        with pytest.raises(ValueError, match="100000000000000000000000 values or more"):
            frb.read_dat(path, max_values=limit)
    path.write_text("3*0.5 2\n")
    assert np.array_equal(frb.read_dat(path, max_values=None), [0.5, 0.5, 0.5, 2.0])


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs here")
def test_read_dat_refuses_a_fifo_without_waiting(tmp_path):
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    script = f"import frb\ntry:\n    frb.read_dat({str(fifo)!r})\nexcept ValueError as e:\n" \
             "    print(e)\n"
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                         timeout=60)
    assert "is a FIFO (named pipe)" in out.stdout, out.stderr[-1000:]


@pytest.mark.parametrize("bad", [None, 3.5, ["a.dat"]])
def test_dat_paths_named(tmp_path, bad):
    with pytest.raises(TypeError, match="path must be a file path"):
        frb.read_dat(bad)
    with pytest.raises(TypeError, match="path must be a file path"):
        frb.write_dat(bad, [1.0])


# ------------------------------------------------------------------------ memory of the runs

def test_example4_refuses_runs_that_do_not_fit(tmp_path):
    from frb.examples import run_example
    inp = tmp_path / "init.dat"
    frb.write_dat(inp, [1e-9, 2.0, 0.3, 0.5, 0.8, 1.0, 0.0, 0.0, 0.0, 1.0, 2.0, 3.0, 1.0])
    with pytest.raises(ValueError, match="the kept states would take"):
        run_example(4, input_path=inp, output_path=False, compare_path=False)


def test_compare_refuses_batches_that_do_not_fit():
    with pytest.raises(ValueError, match="bodies = 2147483647: the runs would need"):
        frb.compare(bodies=2**31 - 1)


# ---------------------------------------------------------------------------------- frb.compare

def test_compare_body_at_rest_refused():
    with pytest.raises(ValueError, match="m0 is zero"):
        frb.compare(m0=[0.0, 0.0, 0.0], attitude0=QUAT, inertia=I)
    with pytest.raises(ValueError, match=r"m0 is zero \(body 1\)"):
        frb.compare(["EXACT"], m0=[M, [0.0, 0.0, 0.0]], attitude0=[QUAT, QUAT], inertia=I)


def test_compare_user_coefficients_and_reference():
    from frb.splitting import STRANG
    table = frb.compare(["STRANG", "SPLITTING"], problem="heavy-top", bodies=3, steps=(20, 40),
                        t_final=1.0, coefficients=STRANG, min_time=0.0)
    rows = {(r.method, r.nsteps): r for r in table.rows}
    for n in (20, 40):
        assert rows["SPLITTING", n].error_m == rows["STRANG", n].error_m is not None
    # a reference of the user's: the exact flow in one step, the default reference of a free
    # body, gives the same errors
    m0, q0, inertia = frb.workprecision.random_bodies(3, rng=5)
    ref = frb.integrate(m0, q0, inertia, 2.0, 1, method="EXACT")
    mine = frb.compare(["RK4"], m0=m0, attitude0=q0, inertia=inertia, t_final=2.0,
                       steps=(10, 20), reference=(ref.m[-1], ref.q[-1]), min_time=0.0)
    default = frb.compare(["RK4"], m0=m0, attitude0=q0, inertia=inertia, t_final=2.0,
                          steps=(10, 20), min_time=0.0)
    assert [r.error_m for r in mine.rows] == [r.error_m for r in default.rows]
    assert mine.reference_accuracy is None and "not estimated" in mine.format()
    with pytest.raises(ValueError, match="reference m must have the shape of m0"):
        frb.compare(["RK4"], m0=m0, attitude0=q0, inertia=inertia, reference=(M, QUAT))
    with pytest.raises(ValueError, match="method SPLITTING needs the coefficients"):
        frb.compare(["SPLITTING"], bodies=2, steps=(2,))


def test_compare_marks_diverged_runs_failed():
    table = frb.compare(["IMID", "EXACT"], bodies=2, steps=(1, 50), t_final=100.0,
                        min_time=0.0)
    failed = [r for r in table.rows if r.failure]
    assert failed and all(r.method == "IMID" for r in failed)
    assert all(r.error is None for r in failed)
    best = table.best(10.0)
    assert best is not None and (best[0], best[1]) not in {(r.method, r.nsteps) for r in failed}
    text = table.format()
    assert "failed runs:" in text and "IMID n=1:" in text
    assert "nan" not in text.lower()


def test_frb_compare_prints_the_reason(capsys):
    from frb.cli import compare_main
    assert compare_main(["--methods", "IMID", "--steps", "1", "--t-final", "100",
                         "--bodies", "2"]) == 0
    out = capsys.readouterr().out
    assert "failed runs:" in out and ("did not converge" in out or "diverged" in out)


def test_frb_compare_body_at_rest_exits_2(capsys):
    from frb.cli import compare_main
    assert compare_main(["--m0", "0,0,0", "--inertia", "1,2,3"]) == 2
    assert "m0 is zero" in capsys.readouterr().err


# --------------------------------------------------------------- messages name the step as given

def test_steps_named_as_the_user_gave_them():
    with pytest.raises(ValueError, match=r"^t_final / n is too long"):
        frb.compare(["EXACT"], bodies=2, t_final=1e25, steps=(1,))
    from frb.experiments import run_experiment
    with pytest.raises(ValueError, match=r"^dt is too long"):
        run_experiment("ganapathi-symmetric", dt=1e300)


def test_ganapathi_period_not_measured_says_why():
    from frb.experiments import run_experiment
    result = run_experiment("ganapathi-stable", dt=60.0)
    assert np.isnan(result.numbers["measured_period"])
    assert "not measured: 1 sign change(s)" in result.format() or \
        "not measured: 0 sign change(s)" in result.format()
    assert "nan" not in result.format().lower()


def test_quat_mul_shapes_named():
    with pytest.raises(ValueError, match="p and q must broadcast"):
        frb.quat_mul(np.ones((2, 4)), np.ones((3, 4)))


# --------------------------------------------------------------------------------- broken pipes

@pytest.mark.parametrize("entry, argv", [("main", ["--list"]), ("main", ["--names"]),
                                         ("compare_main", ["--help"])])
def test_cli_quiet_when_the_reader_closes_the_pipe(entry, argv):
    script = f"import sys, time\ntime.sleep(0.5)\nfrom frb.cli import {entry}\n" \
             f"sys.exit({entry}({argv!r}))\n"
    child = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE)
    child.stdout.close()            # the reader is gone before the first line
    _, err = child.communicate(timeout=60)
    assert child.returncode == 0 and b"Traceback" not in err and b"BrokenPipe" not in err, err


# ----------------------------------------------------------- the derivative switches and flags

@pytest.mark.parametrize("step, attitude", [(frb.quat_step, QUAT), (frb.frb_step, np.eye(3))])
@pytest.mark.parametrize("value", ["yes", 1, 1.0, 1j, np.nan, [1], np.ones(2)])
def test_jacobian_must_be_a_bool(step, attitude, value):
    with pytest.raises(TypeError, match="jacobian"):
        step(M, attitude, 0.1, I, jacobian=value)


def test_jacobian_takes_numpy_bools():
    """np.True_ asks for the derivatives, np.False_ does not: the results of the plain bools."""
    with_jac = frb.quat_step(M, QUAT, 0.1, I, jacobian=np.True_)
    plain = frb.quat_step(M, QUAT, 0.1, I, jacobian=np.False_)
    assert len(with_jac) == 3 and len(plain) == 2
    np.testing.assert_array_equal(with_jac[2].state, frb.quat_step(M, QUAT, 0.1, I, jacobian=True)[2].state)


def test_sensitivities_take_numpy_bools_and_refuse_other_names():
    run = frb.integrate(M, QUAT, I, 0.1, 3, method="EXACT", sensitivities=np.True_)
    ref = frb.integrate(M, QUAT, I, 0.1, 3, method="EXACT", sensitivities=True)
    np.testing.assert_array_equal(run.sensitivity, ref.sensitivity)
    assert frb.integrate(M, QUAT, I, 0.1, 3, method="EXACT", sensitivities=np.False_).sensitivity is None
    with pytest.raises(TypeError, match="sensitivities must name parts"):
        frb.integrate(M, QUAT, I, 0.1, 3, method="EXACT", sensitivities=["state", 1])
    with pytest.raises(ValueError, match="'spin' is not one of"):
        frb.integrate(M, QUAT, I, 0.1, 3, method="EXACT", sensitivities=["spin"])


@pytest.mark.parametrize("torque, words", [(None, r"\|h\| \|m\| / I_min is beyond the float64 range, above 1e\+18"),
                                           (rotor([0.0, 0.0, 1e300]), r"\|h\| \(\|m\| \+ \|h_r\|\) / I_min is beyond the float64 range, above 1e\+18")])
def test_phase_beyond_the_float64_range_said_in_words(torque, words):
    with pytest.raises(ValueError, match=words):
        frb.integrate(M * 1e300, QUAT, I * 1e-300, 0.1, 2, method="EXACT", torque=torque)


# --- a body near rest under an ordinary torque, and other classes of the second trial ---

@pytest.mark.parametrize("method", ["RK4", "IMID", "STRANG", "RKN6_14"])
@pytest.mark.parametrize("torque", [gravity_gradient(1.0), frb.torques.heavy_top(1.0, [1.0, 0, 0])])
@pytest.mark.parametrize("scale", [1e-160, 1e-250])
def test_body_near_rest_under_a_torque_moves_as_from_rest(method, torque, scale):
    """|m| far below the torque's scale: the torque sets the units of the run; the result is
    that of the body released from rest, to within |m| (the motion is continuous in m0)."""
    m = np.array([1.0, 2.0, 3.0])
    q, inertia = [1.0, 0.0, 0.0, 0.0], [1.0, 2.0, 3.0]
    near = frb.integrate(scale * m, q, inertia, 0.1, 5, method=method, torque=torque)
    rest = frb.integrate(0.0 * m, q, inertia, 0.1, 5, method=method, torque=torque)
    assert np.abs(rest.m[-1]).max() > 1e-3
    assert np.abs(near.m[-1] - rest.m[-1]).max() <= 1e-15 + 10 * scale


@pytest.mark.parametrize("scale", [1e-155, 1e-300])
def test_sensitivity_to_h_near_rest_is_the_difference_quotient(scale):
    m = scale * np.array([1.0, 2.0, 3.0])
    q, inertia = [1.0, 0.0, 0.0, 0.0], [1.0, 2.0, 3.0]
    damping = frb.torques.linear_damping(0.5)
    tr = frb.integrate(m, q, inertia, 0.1, 3, method="RK4", torque=damping, sensitivities=["h"])
    d = 1e-6
    up = frb.integrate(m, q, inertia, 0.1 + d, 3, method="RK4", torque=damping).m[-1]
    down = frb.integrate(m, q, inertia, 0.1 - d, 3, method="RK4", torque=damping).m[-1]
    quotient = (up - down) / (2 * d)
    got = tr.sensitivities.h[-1][:3]
    assert np.isfinite(got).all()
    np.testing.assert_allclose(got, quotient, rtol=1e-6, atol=0)


@pytest.mark.parametrize("s", [1e-300, 1e-200, 1e-160, 1e160, 1e300])
def test_momentum_period_at_every_scale(s):
    from frb.rotations import momentum_period
    m, inertia = [0.0, 0.6, -0.8], [0.376, 0.627, 1.0]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        base = momentum_period(m, inertia)
        assert momentum_period(np.multiply(m, s), inertia) * s == pytest.approx(base, rel=1e-15)
        assert momentum_period(m, np.multiply(inertia, s)) / s == pytest.approx(base, rel=1e-15)
        assert momentum_period([0.0, 0.0, 0.0], inertia) == np.inf
        assert momentum_period(m, [1.0, 1.0, 1.0]) == np.inf


def test_per_body_parameters_with_per_body_tensors_counted_first():
    J = np.array([[2, 0.1, 0], [0.1, 3, 0.2], [0, 0.2, 4.0]])
    tensors = np.stack([J, J + np.eye(3)])
    m2, q2 = np.ones((2, 3)), np.tile([1.0, 0, 0, 0], (2, 1))
    wheels = frb.Wheels(np.eye(3), np.zeros(3))
    for kw in (dict(torque=rotor(np.ones((3, 3)))),
               dict(torque=attitude_control(np.tile([1.0, 0, 0, 0], (3, 1)), 1.0, 1.0)),
               dict(torque=rotor(np.ones((3, 3))) + frb.torques.linear_damping(0.1)),
               dict(wheels=wheels, wheel_law=frb.wheel_laws.quaternion_feedback(
                   np.tile([1.0, 0, 0, 0], (3, 1)), 1.0, 1.0))):
        with pytest.raises(ValueError, match="for 3 bodies, the run has 2"):
            frb.integrate(m2, q2, tensors, 0.1, 3, method="RK4", **kw)


def test_rotating_reference_time_follows_the_input_rule():
    ref = frb.wheel_laws.rotating_reference([1.0, 0, 0, 0], [0, 0, 0.1])
    with pytest.raises(TypeError, match="^t "):
        ref(None)
    with pytest.raises(ValueError, match="^t "):
        ref(float("nan"))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        q = ref(1e308)          # an angle of 1e307 rad: representable, a unit quaternion
    assert abs(np.linalg.norm(q) - 1) < 1e-15
    # the half angle of the turn (the double 1e308 * 0.1) reduced by mpmath
    import mpmath as mp
    with mp.workdps(400):
        half = mp.mpf(1e308 * 0.1) / 2
        assert q[0] == pytest.approx(float(mp.cos(half)), abs=1e-15)


def test_choices_and_signatures_are_type_checked():
    m, q, inertia = np.array([1.0, 2, 3]), np.array([1.0, 0, 0, 0]), np.array([1.0, 2, 3])
    J = np.array([[2, 0.1, 0], [0.1, 3, 0.2], [0, 0.2, 4.0]])
    with pytest.raises(TypeError, match="^form "):
        frb.derivatives.flow_jacobian(m, q, 0.1, inertia, form=["q"])
    with pytest.raises(TypeError, match="^problem "):
        frb.workprecision.compare(["RK4"], bodies=2, steps=(4,), problem=["free"])
    with pytest.raises(TypeError, match="^mode "):
        frb.show_config(mode=np.array([]))
    with pytest.raises(TypeError, match="^sensitivities "):
        frb.integrate(m, q, J, 0.1, 3, method="EXACT", sensitivities=1)
    with pytest.raises(TypeError, match="^terms "):
        frb.torques.TorqueSum(-1)
    with pytest.raises(TypeError, match="^summary "):
        frb.examples.format_summary(None)
    wheels = frb.Wheels(np.eye(3), np.zeros(3))
    with pytest.raises(TypeError, match="requires 4 positional"):
        frb.integrate(m, q, inertia, 0.1, 3, method="RK4", torque=lambda t, Q, m, extra: m)
    with pytest.raises(TypeError, match="^wheel_law "):
        frb.integrate(m, q, inertia, 0.1, 3, method="RK4", wheels=wheels,
                      wheel_law=lambda t, Q: 0)
    with pytest.raises(TypeError, match="^wheel_law "):
        frb.integrate(m, q, inertia, 0.1, 3, method="RK4", wheels=wheels,
                      wheel_law=rotor([0, 0, 1.0]))
    with pytest.raises(TypeError, match="^q_ref "):
        attitude_control(lambda t, Q: 0, 1.0, 1.0)
    with pytest.raises(TypeError, match="^q_ref "):
        frb.wheel_laws.quaternion_feedback(lambda: 0, 1.0, 1.0)


def test_random_bodies_arguments():
    from frb.workprecision import random_bodies
    with pytest.raises(ValueError, match="^n "):
        random_bodies(2**31)
    with pytest.raises(TypeError, match="^n "):
        random_bodies(True)
    with pytest.raises(TypeError, match="^rng "):
        random_bodies(3, rng="abc")
    m, q, inertia = random_bodies(5, rng=np.random.default_rng(2))
    np.testing.assert_allclose(np.linalg.norm(m, axis=1), 1.0, rtol=1e-15)


def test_kept_sensitivities_counted_in_the_memory_guard():
    from frb._kept import available_memory
    free = available_memory()
    # states alone (7 values a state) fit in the memory; with their 36 sensitivities not
    nsteps = int(0.9 * free / 8 / 20)
    if nsteps >= 2**31 - 1:
        pytest.skip("more memory than a run's step count can address")
    with pytest.raises(ValueError, match="kept states would take"):
        frb.integrate([1.0, 2, 3], [1.0, 0, 0, 0], [1.0, 2, 3], 1e-9, nsteps, method="RK4",
                      sensitivities=True)


def test_flow_jacobian_beyond_the_memory_is_refused_before_allocating(monkeypatch):
    import frb._kept
    from frb.derivatives import flow_jacobian
    # a machine of 1 GiB: bodies that fit as given (24 and 32 bytes a body) whose derivatives
    # (928 bytes a body) do not
    monkeypatch.setattr(frb._kept, "available_memory", lambda: 2.0**30)
    n = int(0.9 * 2.0**30 / 8 / 100)
    m = np.broadcast_to(np.array([0.3, 0.5, 0.8]), (n, 3))
    q = np.broadcast_to(np.array([1.0, 0.0, 0.0, 0.0]), (n, 4))
    with pytest.raises(ValueError, match="the steps and their derivatives would take .* "
                                         "derive fewer bodies at a time"):
        flow_jacobian(m, q, 0.1, [1.0, 2.0, 3.0])


def test_dask_scaling_beyond_the_range_refused_in_words(dask_array):
    import frb.dask as fdask
    m2, q2 = np.ones((2, 3)), np.tile([1.0, 0, 0, 0], (2, 1))
    tr = fdask.integrate(dask_array.from_array(m2), dask_array.from_array(q2), np.array([1.0, 2, 3]) * 1e-320, 0.1, 3,
                         method="RK4")
    with pytest.raises(ValueError, match="too long"):
        tr.m.compute()


def test_public_helpers_follow_the_input_rule():
    from frb import inertia as fi, io as fio, reporting as rp, rotations as ro
    J = np.array([[2, 0.1, 0], [0.1, 3, 0.2], [0, 0.2, 4.0]])
    with pytest.raises(TypeError, match="^m "):
        fi.tensor_kinetic_energy(None, J)
    with pytest.raises(ValueError, match="^m "):
        fi.tensor_kinetic_energy([[np.nan, 1, 1]], J)
    # m . J^-1 m / 2 by a linear solve
    m = np.array([[0.3, -1.2, 2.0]])
    assert fi.tensor_kinetic_energy(m, J)[0] == pytest.approx(0.5 * m[0] @ np.linalg.solve(J, m[0]),
                                                              rel=1e-14)
    with pytest.raises(ValueError, match="^inertia "):
        fi.shared_tensor([1.0, 2.0, 3.0])
    with pytest.raises(ValueError, match="^inertia "):
        fi.shared_tensor(J * np.nan)
    with pytest.raises(TypeError, match="^Q "):
        ro.is_rotation(True)
    assert ro.is_rotation(np.eye(3)) and not ro.is_rotation(np.full((3, 3), np.nan))
    with pytest.raises(ValueError, match="^v "):
        fio.matrix_from_columns([1.0, 2.0])
    with pytest.raises(ValueError, match="^Q "):
        fio.matrix_to_columns(np.full((3, 3), np.nan))
    with pytest.raises(TypeError, match="^hs "):
        rp.fit_order(None, [1e-2, 1e-3, 1e-4])
    with pytest.raises(ValueError, match="^hs "):
        rp.fit_order([0.0, 0.0, 0.0], [1.0, 2.0, 3.0])
    with pytest.raises(ValueError, match="^t_final "):
        rp.steps_of(10**400, 0.1)
    with pytest.raises(TypeError, match="^methods "):
        rp.method_list(b"RK4", ("EXACT",))
    with pytest.raises(ValueError, match="^m_ref: "):
        rp.batch_error(np.ones((1, 3)), np.eye(3)[None], np.zeros((1, 3)), np.eye(3)[None])


@pytest.mark.parametrize("name, options, fragment", [
    ("vilmart-book", dict(h=2.0, t_final=1.0), "t_final / h must give 1 to 2147483646 steps, got 0.5"),
    ("ganapathi-stable", dict(dt=120.0), "t_final / dt must give 1 to 2147483646 steps, got 0.5"),
    ("torus", dict(t_final=1.0, h=2.0), "t_final / h must give 1 to 2147483646 steps, got 0.5"),
    ("krysl-slow-top", dict(h_ref=40.0), "h_ref = 40.0 (t_final / h_ref, t_final = 20) must give"),
])
def test_experiments_refuse_steps_that_round_to_none(name, options, fragment):
    # t_final / h = 0.5 rounds (half to even) to zero steps: refused, not a run of no steps
    from frb.experiments import run_experiment
    with pytest.raises(ValueError) as info:
        run_experiment(name, **options)
    assert fragment in str(info.value)


def test_a_figure_suffix_alone_is_refused_without_matplotlib(monkeypatch):
    from frb import reporting as rp
    monkeypatch.setattr(rp, "_figure_formats", lambda: set())
    with pytest.raises(ValueError, match="is a suffix without a file name"):
        rp.figure_path(".png", "x")


def test_broadcast_results_beyond_the_memory_are_refused_by_name():
    # batches that broadcast to 1e10 bodies (a terabyte): refused before numpy allocates
    with pytest.raises(ValueError, match=r"p and q: their broadcast batch \(100000, 100000\) "
                                         "would take"):
        frb.quat_mul(np.ones((10**5, 1, 4)), np.ones((1, 10**5, 4)))
    with pytest.raises(ValueError, match="m and inertia: their broadcast batch"):
        frb.kinetic_energy(np.ones((10**5, 1, 3)), np.ones((1, 10**5, 3)))
    with pytest.raises(ValueError, match="m and Q: their broadcast batch"):
        frb.spatial_momentum(np.ones((10**5, 1, 3)), np.broadcast_to(np.eye(3), (1, 10**5, 3, 3)))
    n = 10**10
    m = np.broadcast_to(np.array([0.3, 0.5, 0.8]), (n, 3))
    q = np.broadcast_to(np.array([1.0, 0.0, 0.0, 0.0]), (n, 4))
    with pytest.raises(ValueError, match=r"m is a broadcast array of shape \(10000000000, 3\)"):
        frb.quat_step(m, q, 0.1, [1.0, 2.0, 3.0], jacobian=True)


def test_fit_order_of_two_dimensional_sequences_says_so():
    from frb import reporting as rp
    with pytest.raises(ValueError, match="two one-dimensional sequences of the same length, got "
                                         r"shapes \(1, 2\) and \(1, 2\)"):
        rp.fit_order([[0.1, 0.05]], [[1e-4, 2.5e-5]])


def test_momentum_period_of_a_symmetric_body_is_its_rotation_period():
    # I1 = I2: the momentum turns about e3 at Omega = m3 (1 / I3 - 1 / I1); m3 = 0 is steady
    assert frb.rotations.momentum_period([0.3, 0.6, -0.8], [1.0, 1.0, 2.0]) == \
        pytest.approx(2 * np.pi / abs(-0.8 * (1 / 2.0 - 1 / 1.0)), rel=1e-15)
    assert frb.rotations.momentum_period([0.3, 0.6, 0.0], [1.0, 1.0, 2.0]) == np.inf


def test_tables_with_rows_of_another_length_are_refused():
    from frb import reporting as rp
    table = rp.Table("t", ["a", "b"], [[1.0, 2.0], [1.0]])
    for make in (table.format, table.to_markdown):
        with pytest.raises(ValueError, match="rows: row 1 has 1 values for the 2 columns"):
            make()


def test_plans_of_coefficients_in_lists_and_checked():
    from frb import schedules
    flows, longest = schedules.plan([0.5, 0.0], [0.5])      # Strang: A(h/2) B(h) A(h/2)
    assert flows.tolist() == [[0.0, 0.5], [1.0, 1.0], [0.0, 0.5]] and longest == 0.5
    with pytest.raises(ValueError, match="coefficients are not consistent"):
        schedules.plan((0.0, 0.0), (0.5,))
    with pytest.raises(TypeError, match="coefficients b must be an array of real numbers, but "
                                        "it holds a boolean"):
        schedules.plan((0.5, 0.0), (True,))


@pytest.mark.parametrize("scale", [1e200, 1e-300, 1.0])
def test_batch_error_at_every_scale(scale):
    from frb import reporting as rp
    # |m - m_ref| / |m_ref| = 0.5 and ||Q - diag(1, 1, -1)||_2 = 2 whatever the scale
    err = rp.batch_error(np.full((1, 3), scale), np.eye(3)[None], np.full((1, 3), 2 * scale),
                         np.diag([1.0, 1.0, -1.0])[None])
    assert err == (0.5, 2.0)
    assert rp.attitude_error(np.full((3, 3), scale), -np.full((3, 3), scale)) == pytest.approx(
        6 * scale, rel=1e-15)


def test_batch_error_refuses_empty_and_mismatched_batches():
    from frb import reporting as rp
    with pytest.raises(ValueError, match="m and m_ref hold no bodies"):
        rp.batch_error(np.empty((0, 3)), np.empty((0, 3, 3)), np.empty((0, 3)), np.empty((0, 3, 3)))
    with pytest.raises(ValueError, match=r"Q must have the shape \(2, 3, 3\) of m's bodies"):
        rp.batch_error(np.ones((2, 3)), np.eye(3)[None], np.ones((2, 3)), np.eye(3)[None])
    with pytest.raises(ValueError, match="the norm of their difference is beyond the float64"):
        rp.attitude_error(np.full((3, 3), 1e308), -np.full((3, 3), 1e308))
    with pytest.raises(ValueError, match=r"m0 holds no bodies \(shape \(0, 3\)\)"):
        frb.compare(m0=np.empty((0, 3)), attitude0=np.empty((0, 4)), inertia=[1.0, 2.0, 3.0])


@pytest.mark.parametrize("v", [[1e300, 0.0, 0.0], [3e-300, -2e-300, 1e-300], [0.3, -0.2, 0.5]])
def test_rotation_exp_at_every_scale(v):
    """exp(hat(v)) against the quaternion (cos(|v|/2), sin(|v|/2) v/|v|) in 50 digits."""
    import mpmath as mp
    R = frb.rotations.rotation_exp(v)
    with mp.workdps(50):
        w = [mp.mpf(x) for x in v]
        a = mp.sqrt(sum(x * x for x in w))
        s = mp.sin(a / 2)
        q = [mp.cos(a / 2)] + [s * x / a for x in w]
    expected = frb.quat_to_matrix(np.array([float(x) for x in q]))
    np.testing.assert_allclose(R, expected, rtol=0, atol=4e-16)


def test_user_torque_in_a_sum_checked_as_alone():
    m, q = np.array([[1.0, 2, 3], [0.5, -1, 2]]), np.tile([1.0, 0, 0, 0], (2, 1))
    top = frb.torques.heavy_top(1.0, [0, 0, 0.3])
    for bad, words, error in ((lambda t, Q: np.zeros((2, 2)), "shape", ValueError),
                              (lambda t, Q: "abc", "real numbers", TypeError),
                              (lambda t, Q: [0.0, 0, 1.0], "shape", ValueError)):
        with pytest.raises(error, match=words):
            frb.integrate(m, q, [1.0, 2, 3], 0.1, 3, method="RK4", torque=top + bad)
    # a zero user term changes nothing: the sum equals the built-in torque alone
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        both = frb.integrate(m, q, [1.0, 2, 3], 0.1, 3, method="RK4",
                             torque=top + (lambda t, Q: np.zeros((len(Q), 3))))
    alone = frb.integrate(m, q, [1.0, 2, 3], 0.1, 3, method="RK4", torque=top)
    np.testing.assert_allclose(both.m, alone.m, rtol=0, atol=1e-15)


def test_wheel_law_reference_function_checked():
    m, q = np.array([[1.0, 2, 3], [0.5, -1, 2]]), np.tile([1.0, 0, 0, 0], (2, 1))
    wheels = frb.Wheels(np.eye(3), np.zeros(3), [0.1] * 3)
    for bad, error in ((lambda t: [1.0, 0.0], ValueError), (lambda t: "abc", TypeError),
                       (lambda t: [2.0, 0, 0, 0], ValueError)):
        law = frb.wheel_laws.quaternion_feedback(bad, 1.0, 1.0)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            with pytest.raises(error, match=r"^q_ref\(t\)"):
                frb.integrate(m, q, [1.0, 2, 3], 0.1, 3, method="YOSHIDA4", wheels=wheels,
                              wheel_law=law)


def test_experiment_options_bounded():
    from frb.experiments import run_experiment
    with pytest.raises(ValueError, match="^bodies "):
        run_experiment("satellite", bodies=10**9, coast=2.0, detumble=2.0, slew=2.0)


@pytest.mark.parametrize("method", ["DMV4", "DMV6", "DMV8", "RK4", "STRANG"])
def test_a_body_nearly_at_rest_in_a_torqued_batch(method):
    """A batch spanning 2^130 in |m| (within every method's range for momenta) runs: the small
    body's |m| decays as e^{-c t} under linear damping (to rounding), and each body's trajectory
    is the one it has alone."""
    from frb.torques import linear_damping
    m = np.array([[0.0, 0.0, 1.0], [1e-40, 2e-40, -1e-40]])
    q = np.array([[1.0, 0, 0, 0], [0.6, 0.8, 0, 0]])
    inertia = np.array([[1.0, 2, 3], [1.5, 2, 2.5]])
    tq = linear_damping(0.3)
    tr = frb.integrate(m, q, inertia, 0.01, 20, method=method, torque=tq, save_every=None)
    ratio = np.linalg.norm(tr.m[-1], axis=1) / np.linalg.norm(m, axis=1)
    # (RK4's error for m' = -c m: 20 (c h)^5 / 120 = 4e-14; the others take the damping exactly)
    np.testing.assert_allclose(ratio, np.exp(-0.3 * 0.2), rtol=1e-13 if method == "RK4" else 4e-15)
    alone = frb.integrate(m[1], q[1], inertia[1], 0.01, 20, method=method, torque=tq,
                          save_every=None)
    np.testing.assert_allclose(tr.m[-1, 1], alone.m[-1], rtol=1e-14, atol=0)
    np.testing.assert_allclose(tr.q[-1, 1], alone.q[-1], rtol=0, atol=1e-14)


def test_empty_batch_with_per_body_steps():
    """Steps given one a body for an empty batch: empty results (as for one shared step)."""
    m, q = frb.quat_step(np.zeros((0, 3)), np.zeros((0, 4)), np.zeros(0), [1.0, 2, 3])
    assert m.shape == (0, 3) and q.shape == (0, 4)
    m, Q = frb.frb_step(np.zeros((0, 3)), np.zeros((0, 3, 3)), np.zeros(0), np.zeros((0, 3)))
    assert m.shape == (0, 3) and Q.shape == (0, 3, 3)


@pytest.mark.parametrize("a, b, error, words", [
    ([], (1.0,), ValueError, "one more coefficient"),
    (np.array(1.0), (1.0,), ValueError, "shapes ()"),
    ("abc", (1.0,), TypeError, "a must be"),
    ([1, "a", 3], [1, 2], TypeError, "a must be"),
    ([0.5, 0.0], [math.nan], ValueError, "finite"),
])
def test_schedule_checks_its_coefficients(a, b, error, words):
    from frb.schedules import schedule
    with pytest.raises(error, match=re.escape(words)):
        schedule(a, b)


def test_schedule_of_yoshida_merges_neighbours():
    """Yoshida's fourth-order step as its flows: the free flows x1/2, (x0 + x1)/2, ... with
    x1 = 1 / (2 - 2^(1/3)), x0 = 1 - 2 x1 (Yoshida 1990), the kicks x1, x0, x1."""
    from frb.schedules import YOSHIDA4, schedule
    x1 = 1.0 / (2.0 - 2.0 ** (1.0 / 3.0))
    x0 = 1.0 - 2.0 * x1
    got = schedule(*YOSHIDA4)
    assert [k for k, _ in got] == list("ABABABA")
    np.testing.assert_allclose([c for _, c in got],
                               [x1 / 2, x1, (x0 + x1) / 2, x0, (x0 + x1) / 2, x1, x1 / 2],
                               rtol=1e-14)


def test_small_refusals_name_their_argument(tmp_path):
    from frb.experiments import get_experiment
    with pytest.raises(IsADirectoryError, match=re.escape(str(tmp_path))):
        frb.read_dat(tmp_path)
    with pytest.raises(TypeError, match="name must be an experiment's name"):
        get_experiment(None)
    with pytest.raises(TypeError, match="steps must be a sequence"):
        frb.compare(steps=np.array(5))


@pytest.mark.parametrize("method", ["DMV2", "SYMROT", "MIDPOINT", "NYSTROM4", "RK4"])
def test_moments_of_one_body_beyond_the_methods_range_refused(method):
    """A body whose moments span more than 2^200 is refused by name by the methods whose
    arithmetic holds 2^200; the exact flow takes it (its value there: the limit I3 -> inf, a
    body spinning about axis 3 at a rate m3 / I3 -> 0, is the planar free body in the
    (1, 2) plane, which the exact flow of I = (1, 2, 2^199) matches)."""
    with pytest.raises(ValueError, match=r"inertia: the principal moments span more"):
        frb.integrate([0.1, 0.2, 0.3], [1.0, 0, 0, 0], [1, 2, 1e308], 0.1, 3, method=method)
    wide = frb.integrate([0.1, 0.2, 0.3], [1.0, 0, 0, 0], [1, 2, 1e308], 0.1, 3, method="EXACT")
    within = frb.integrate([0.1, 0.2, 0.3], [1.0, 0, 0, 0], [1, 2, 2.0**199], 0.1, 3,
                           method=method)
    # (the methods' own errors at h = 0.1: orders 2, 4 and the exact free part of NYSTROM4)
    atol = {"DMV2": 1e-4, "SYMROT": 1e-4, "MIDPOINT": 1e-4, "RK4": 1e-9}.get(method, 1e-12)
    np.testing.assert_allclose(wide.m[-1], within.m[-1], rtol=0, atol=atol)


def test_per_body_moments_given_as_one_tensor_say_so():
    q = np.tile([1.0, 0, 0, 0], (3, 1))
    inertia = np.array([[1.0, 2, 4], [1.5, 2, 2.5], [1, 1.7, 3]])
    with pytest.raises(ValueError, match=r"shape \(3, 3\) for a batch of 4 bodies is one inertia "
                                         r"tensor.*need shape \(4, 3\)"):
        frb.integrate(np.ones((4, 3)), q, inertia, 0.1, 2, method="RK4")


def test_messages_cut_the_parameters_of_large_batches():
    # a torque with parameters for 1e5 bodies is named in a message of a few hundred characters
    n = 100_000
    with pytest.raises(ValueError, match=r"heavy_top\(1.0, \[\[1.0, .* \.\.\. \(\d+ characters\): "
                                         r"its per-body parameters are given for 100000 bodies, "
                                         r"the run has 99999") as info:
        frb.integrate(np.ones((n - 1, 3)), np.tile(QUAT, (n - 1, 1)), I, 0.1, 2, method="RK4",
                      torque=frb.torques.heavy_top(1.0, np.ones((n, 3))))
    assert len(str(info.value)) < 400
