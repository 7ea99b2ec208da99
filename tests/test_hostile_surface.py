"""Hostile inputs around the core, each class with its neighbours: the right answer against an
independent reference (the same body alone, the scaling law of the free motion) or a clear
exception of the type the input rule says, naming the argument."""
import decimal
import warnings

import numpy as np
import pytest

import frb

M, QUAT, I = np.array([0.3, 0.5, 0.8]), np.array([1.0, 0.0, 0.0, 0.0]), np.array([1.0, 2.0, 3.5])


@pytest.mark.parametrize("method", ["SPLIT3", "SYMROT", "MIDPOINT", "NYSTROM4", "DMV4"])
@pytest.mark.parametrize("scale", [2.0**-500, 2.0**-230, 2.0**-60])
def test_free_batch_of_scales_moves_each_body_as_alone(method, scale):
    # a torque-free batch is rescaled body by body, each body with its own step: body 0 far
    # from the others' scale, bodies 1 and 2 at scale 1, each as when run alone; the free motion
    # of s m over h is s times that of m over s h
    m = np.array([scale * M, M, M[::-1]])
    q = np.tile(QUAT, (3, 1))
    h, n = 0.03, 40
    batch = frb.integrate(m, q, I, h, n, method=method, save_every="final")
    for b in (0, 1, 2):
        alone = frb.integrate(m[b], QUAT, I, h, n, method=method, save_every="final")
        assert np.array_equal(batch.m[-1, b], alone.m[-1]), b
        assert np.array_equal(batch.q[-1, b], alone.q[-1]), b
    unit = frb.integrate(M, QUAT, I, h * scale, n, method=method, save_every="final")
    np.testing.assert_allclose(batch.m[-1, 0] / scale, unit.m[-1], rtol=0, atol=1e-15)
    np.testing.assert_allclose(batch.q[-1, 0], unit.q[-1], rtol=0, atol=1e-15)


def test_broadcast_batches_beyond_memory_refused_naming_the_argument():
    n = 10**12 // 3
    cases = [(lambda: frb.quat_step(np.broadcast_to(M, (n, 3)), np.broadcast_to(QUAT, (n, 4)),
                                    0.1, I), "m"),
             (lambda: frb.quat_step(M, QUAT, np.broadcast_to(0.1, (n,)), I), "h"),
             (lambda: frb.integrate(np.broadcast_to(M, (n, 3)), np.broadcast_to(QUAT, (n, 4)),
                                    I, 0.1, 2, method="RK4", save_every=None), "m0"),
             (lambda: frb.kinetic_energy(np.broadcast_to(M, (n, 3)), I), "m"),
             (lambda: frb.quat_mul(np.broadcast_to(QUAT, (n, 4)), QUAT), "p")]
    for call, name in cases:
        with pytest.raises(ValueError, match=f"^{name} is a broadcast array"):
            call()
    # a broadcast batch that fits is taken as the same batch written out
    small = frb.quat_step(np.broadcast_to(M, (5, 3)), np.broadcast_to(QUAT, (5, 4)), 0.1, I)
    one = frb.quat_step(M, QUAT, 0.1, I)
    assert all(np.array_equal(a, np.broadcast_to(b, a.shape)) for a, b in zip(small, one))


@pytest.mark.parametrize("value", [decimal.Decimal("sNaN"), decimal.Decimal("-sNaN"),
                                   np.longdouble("1e4000")])
def test_numbers_beyond_float64_named_without_warnings(value):
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(ValueError, match="^h "):
            frb.quat_step(M, QUAT, value, I)
        with pytest.raises(ValueError, match="^m "):
            frb.quat_step(np.array([value, 0.5, 0.8], dtype=object), QUAT, 0.1, I)


def test_torque_flow_of_the_wrong_signature_refused():
    with pytest.raises(TypeError, match="torque two_args must take three arguments"):
        def two_args(m, Q):
            return m, Q
        frb.splitting.integrate(M, np.eye(3), I, 0.1, 3, torque=two_args)


@pytest.mark.parametrize("progress", [None, {}, 0, "yes"])
def test_dmv_progress_follows_the_input_rule(progress):
    with pytest.raises(TypeError, match="progress"):
        frb.dmv_integrate(M, QUAT, I, 0.1, 3, progress=progress)


Q3 = frb.quat_to_matrix(np.array([0.8, 0.6, 0.0, 0.0]))
TORQUES = {"damping": frb.torques.linear_damping(0.5), "rotor": frb.torques.rotor([0, 0, 0.8]),
           "control": frb.torques.attitude_control(QUAT, 1.0, 0.5),
           "field": frb.torques.constant_field([0, 0.3, 1.0]),
           "gradient": frb.torques.gravity_gradient(1.0),
           "user": frb.torques.as_torque(lambda t, Q: np.zeros(Q.shape[:-2] + (3,)))}


@pytest.mark.parametrize("name", sorted(TORQUES))
@pytest.mark.parametrize("arg, bad", [("t", None), ("t", "0.1"), ("Q", None), ("Q", True),
                                      ("m", True), ("m", "x"), ("inertia", True)])
def test_direct_torque_calls_check_every_argument(name, arg, bad):
    args = dict(t=0.1, Q=Q3, m=M, inertia=I)
    args[arg] = bad
    with pytest.raises(TypeError, match=arg if arg != "inertia" else "inertia"):
        TORQUES[name](args["t"], args["Q"], args["m"], inertia=args["inertia"])


def test_damping_called_for_a_batch_returns_one_torque_a_body():
    Q = np.stack([Q3, np.eye(3)])
    got = TORQUES["damping"](0.0, Q, M)
    np.testing.assert_array_equal(got, np.stack([-0.5 * M, -0.5 * M]))
    total = (TORQUES["damping"] + TORQUES["field"])(0.0, Q, M)
    np.testing.assert_allclose(total, got + TORQUES["field"](0.0, Q), rtol=0, atol=0)


def test_error_and_potential_check_the_attitudes():
    with pytest.raises(TypeError, match="Q"):
        TORQUES["control"].error(None)
    with pytest.raises(TypeError, match="t"):
        TORQUES["control"].error(Q3, None)
    with pytest.raises(TypeError, match="Q"):
        TORQUES["rotor"].potential(None)
    e = TORQUES["control"].error(Q3)
    np.testing.assert_allclose(e, [0.8, 0.6, 0.0, 0.0], rtol=0, atol=1e-15)


def test_per_body_parameters_bound_bodies_and_frames():
    rotors = frb.torques.rotor([[0, 0, 1.0], [0, 1.0, 0], [1.0, 0, 0]])
    np.testing.assert_array_equal(rotors.bodies(1, 3).h, [[0, 1.0, 0], [1.0, 0, 0]])
    for start, stop in ((1, 4), (2, 2)):
        with pytest.raises(ValueError, match="stop = 4 is beyond the 3 bodies|selects no body"):
            rotors.bodies(start, stop)
    control = frb.torques.attitude_control(np.tile(QUAT, (2, 1)), 1.0, 1.0)
    with pytest.raises(ValueError, match="^R is given for 3 bodies"):
        control.in_frame(np.tile(np.eye(3), (3, 1, 1)))
    with pytest.raises(ValueError, match="^R must hold at least one rotation"):
        TORQUES["control"].in_frame(np.empty((0, 3, 3)))
    with pytest.raises(ValueError, match="^kp must be"):
        frb.torques.attitude_control(QUAT, np.empty((0, 3, 3)), 1.0)
    law = frb.wheel_laws.quaternion_feedback(np.tile(QUAT, (2, 1)), 1.0, 1.0)
    with pytest.raises(ValueError, match="stop = 3 is beyond the 2 bodies"):
        law.bodies(0, 3)


def test_reference_functions_give_one_quaternion_a_body():
    m, q = np.tile(M, (2, 1)), np.tile(QUAT, (2, 1))
    five = lambda t: np.tile(QUAT, (5, 1))          # noqa: E731
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", frb.NotCompiledWarning)
        with pytest.raises(ValueError, match="q_ref\\(t\\)"):
            frb.integrate(m, q, I, 0.1, 3, method="RK4",
                          torque=frb.torques.attitude_control(five, 1.0, 1.0))
        with pytest.raises(ValueError, match="q_ref\\(t\\) gives 5 reference quaternions"):
            frb.integrate(m, q, I, 0.1, 3, method="YOSHIDA4", wheels=frb.Wheels(np.eye(3), np.zeros(3)),
                          wheel_law=frb.wheel_laws.quaternion_feedback(five, 1.0, 1.0))


def test_wheel_momentum_follows_the_input_rule():
    axes = np.array([[1.0, 0, 0], [0, 0.6, 0.8], [0, 0, 1.0]])
    wheels = frb.Wheels(axes, np.zeros(3))
    np.testing.assert_allclose(wheels.momentum([1.0, 2.0, 3.0]), [1.0, 1.2, 4.6], rtol=0,
                               atol=1e-15)
    with pytest.raises(TypeError, match="^h "):
        wheels.momentum(None)
    with pytest.raises(ValueError, match="^h \\(the wheels' momenta\\) must have shape"):
        wheels.momentum([1.0, 2.0])


def test_dask_derivative_without_parameters_is_empty_like_numpy():
    dask_array = pytest.importorskip("dask.array")
    m, q = np.tile(M, (4, 1)), np.tile(QUAT, (4, 1))
    local = frb.integrate(m, q, I, 0.1, 3, method="RK4", sensitivities=("state", "torque"))
    import frb.dask as fdask
    lazy = fdask.integrate(dask_array.from_array(m, chunks=2), dask_array.from_array(q, chunks=2),
                           I, 0.1, 3, method="RK4", sensitivities=("state", "torque"))
    assert lazy.sensitivities.torque.compute().shape == local.sensitivities.torque.shape
    np.testing.assert_array_equal(lazy.sensitivities.state.compute(), local.sensitivities.state)


def test_small_refusals_follow_the_input_rule(tmp_path):
    pytest.importorskip("scipy")
    from scipy.spatial.transform import Rotation
    with pytest.raises(TypeError, match="^form must be"):
        frb.from_rotation(Rotation.identity(), None)
    with pytest.raises(ValueError, match="^path must be a file path, but it holds a null"):
        frb.read_dat("a\x00b")
    with pytest.raises(ValueError, match="^path must be a file path, but it holds a null"):
        frb.write_dat("a\x00b", [1.0])


def test_sensitivities_beyond_float64_refused():
    with pytest.raises(ValueError, match="^sensitivities: the derivative of the state with "
                                         "respect to h is beyond the float64 range"):
        frb.integrate(M * 1e300, QUAT, I, 1e-301, 3, method="EXACT",
                      sensitivities=("state", "h"))


def test_experiment_options_refused_by_name_before_running():
    from frb.experiments import run_experiment
    with pytest.raises(ValueError, match="^slew / h must give 1 to"):
        run_experiment("satellite", slew=0.1)
    with pytest.raises(ValueError, match="^slew / h must give 1 to .* got inf"):
        run_experiment("satellite", slew=1e308)
    with pytest.raises(ValueError, match="^kp = .* is too stiff for h = 0.5"):
        run_experiment("satellite", kp=1e6)
    with pytest.raises(ValueError, match="^kd = .* is too stiff"):
        run_experiment("satellite", kd=1e4)
    for dt in (1e-3, 1e-308):
        with pytest.raises(ValueError, match="^the measurements span n dt|^dt = "):
            run_experiment("inertia-identification", dt=dt)
    with pytest.raises(ValueError, match="run fewer steps \\(nsteps\\)"):
        run_experiment("krysl-coulomb", nsteps=2**31 - 2)


def test_example_and_figure_paths_follow_the_input_rule(tmp_path):
    from frb.examples import format_summary, run_example
    for name in ("input_path", "output_path", "compare_path"):
        with pytest.raises(TypeError, match=f"^{name} must be a path"):
            run_example(1, **{name: 3})
    with pytest.raises(TypeError, match="no key 'input'"):
        format_summary({"example": 1})
    from frb.reporting import figure_path
    with pytest.raises(TypeError, match="^path must be a file or folder path"):
        figure_path(None, "x")
    with pytest.raises(ValueError, match="null character"):
        figure_path(str(tmp_path / "a\x00b.png"), "x")
    assert figure_path(tmp_path, "x") == str(tmp_path / "x.png")


def test_compare_takes_bodies_of_the_right_shape_only():
    for m0 in (np.array(1.0), np.ones(4), np.ones((2, 2, 3))):
        with pytest.raises(ValueError, match="^m0 must have shape \\(3,\\) or \\(N, 3\\)"):
            frb.compare(m0=m0, attitude0=QUAT, inertia=I, steps=[10], methods=["RK4"])
    with pytest.raises(TypeError, match="^tolerance"):
        frb.compare(m0=M, attitude0=QUAT, inertia=I, steps=[10], methods=["RK4"]).best(None)


def test_rotation_exp_refuses_angles_beyond_float64():
    from frb.rotations import rotation_exp
    with pytest.raises(ValueError, match="^v: the angle"):
        rotation_exp(np.full(3, np.finfo(float).max))
    # the largest representable angle about an axis is still a rotation
    R = rotation_exp([np.finfo(float).max, 0.0, 0.0])
    np.testing.assert_allclose(R @ R.T, np.eye(3), rtol=0, atol=4e-16)
    assert R[0, 0] == 1.0


def test_momentum_limit_of_a_feedback_law_with_a_reference_function():
    # quaternion_feedback with q_ref a Python function runs as a Python law: its h_max holds
    # after every step as for the compiled law of the same constant reference
    from frb.wheel_laws import quaternion_feedback
    q_ref = np.array([np.cos(0.3), np.sin(0.3), 0.0, 0.0])
    wheels = frb.Wheels(np.eye(3), np.zeros(3))
    for method in ("RK4", "STRANG", "YOSHIDA4"):
        runs = []
        for ref in (q_ref, lambda t: q_ref):
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", frb.NotCompiledWarning)
                runs.append(frb.integrate([0.05, -0.03, 0.02], QUAT, [10.0, 12.0, 8.0], 0.2, 100,
                                          method=method, wheels=wheels,
                                          wheel_law=quaternion_feedback(ref, 0.5, 2.0, h_max=0.3)))
        compiled, python = runs
        assert np.abs(compiled.wheel_momentum).max() == 0.3
        assert np.abs(python.wheel_momentum).max() == 0.3, method
        np.testing.assert_allclose(python.m, compiled.m, rtol=0, atol=1e-13)


def test_reference_turning_by_a_huge_angle_stays_finite_or_is_refused():
    # a reference turned by (t - t_ref) rate = 1e200 rad (its squares overflow) is the Python
    # reference's (the same reference restarted there: no turn); a turn beyond float64 within
    # the run is refused naming the law or torque
    from frb.wheel_laws import quaternion_feedback, rotating_reference
    wheels = frb.Wheels(np.eye(3), np.zeros(3))
    rate = [0.0, 0.0, 1.0]
    far = rotating_reference(QUAT, rate)
    restarted = rotating_reference(far(1e200), rate, t_ref=1e200)
    for law in (quaternion_feedback, frb.torques.attitude_control):
        runs = [frb.integrate([0.1, 0.0, 0.0], QUAT, [10.0, 12.0, 8.0], 0.1, 5, method="RK4",
                              t0=1e200, **({"wheels": wheels, "wheel_law": law(ref, 1.0, 1.0)}
                                           if law is quaternion_feedback else
                                           {"torque": law(ref, 1.0, 1.0)}))
                for ref in (far, restarted)]
        assert np.isfinite(runs[0].m).all()
        np.testing.assert_allclose(runs[0].m, runs[1].m, rtol=0, atol=1e-14)
    fast = rotating_reference(QUAT, [0.0, 0.0, 1e300])
    for kw in ({"wheels": wheels, "wheel_law": quaternion_feedback(fast, 1.0, 1.0)},
               {"torque": frb.torques.attitude_control(fast, 1.0, 1.0)}):
        with pytest.raises(ValueError, match="reference's turn"):
            frb.integrate([0.1, 0.0, 0.0], QUAT, [10.0, 12.0, 8.0], 0.1, 5, method="RK4",
                          t0=1e10, **kw)


def test_sensitivities_of_a_torque_without_one_are_empty():
    # the derivative with respect to the parameters of no torque has no column, alone or with
    # the state's (also for a run the engine rescales)
    for m0 in ([0.3, 0.5, 0.8], [0.3e-200, 0.5e-200, 0.8e-200]):
        alone = frb.integrate(m0, QUAT, I, 0.1, 3, method="EXACT", sensitivities=("torque",))
        both = frb.integrate(m0, QUAT, I, 0.1, 3, method="EXACT",
                             sensitivities=("state", "torque"))
        assert alone.sensitivities.torque.shape == both.sensitivities.torque.shape == (4, 6, 0, 27)


def test_wheels_and_references_per_body_for_no_body_refused():
    from frb.wheel_laws import rotating_reference
    wheels = frb.Wheels(np.stack([np.eye(3)] * 2), np.zeros((2, 3)))
    with pytest.raises(ValueError, match="stop = 5 is beyond the 2 bodies"):
        wheels.bodies(0, 5)
    assert wheels.bodies(1, 2).bodies_count == 1
    with pytest.raises(ValueError, match="rate must"):
        rotating_reference(QUAT, np.zeros((0, 3)))
    # wheels of no body (a part of a batch: frb.dask's empty chunks) are refused by a run
    with pytest.raises(ValueError, match="wheels"):
        frb.integrate(np.tile(M, (2, 1)), np.tile(QUAT, (2, 1)), I, 0.1, 2, method="RK4",
                      wheels=frb.Wheels(np.eye(3), np.zeros((0, 3))))


def test_refusal_messages_say_what_was_given():
    from frb.wheel_laws import quaternion_feedback
    with pytest.raises(ValueError, match=r"\|q\| - 1 = -1"):
        quaternion_feedback([0.0, 0.0, 0.0, 0.0], 1.0, 1.0)
    with pytest.raises(ValueError, match=r"m must have shape \(3,\) for Q of shape \(3, 3\)"):
        frb.torques.rotor([0.1, 0.0, 0.0])(0.0, np.eye(3), np.ones((2, 3)))
    with pytest.raises(ValueError, match="linear_damping.*: method EXACT is the exact flow"):
        frb.integrate(M, QUAT, I, 0.1, 3, method="EXACT", wheels=frb.Wheels(np.eye(3), np.zeros(3)),
                      torque=frb.torques.linear_damping(0.1))


def test_kinetic_energy_of_moments_of_any_ratio():
    # each moment scaled on its own: a finite energy of moments spanning beyond 2^1022 is
    # finite, against exact rational arithmetic; the plain formula bit for bit elsewhere
    from fractions import Fraction
    for m, inertia in (([1.0, 0.0, 0.0], [1e-10, 1.0, 1e300]), ([1.0, 0.0, 0.0], [1e-300, 1.0, 1e10]),
                       ([1e-100, 3.0, 1e100], [1e-300, 2.0, 1e300])):
        exact = sum(Fraction(x) ** 2 / (2 * Fraction(j)) for x, j in zip(m, inertia))
        assert frb.kinetic_energy(m, inertia) == pytest.approx(float(exact), rel=1e-15)
    tr = frb.integrate([1.0, 0.1, 0.0], QUAT, [1e-10, 1.0, 1e300], 1e-12, 2, method="EXACT")
    np.testing.assert_allclose(tr.energy, 0.5e10 + 0.005, rtol=1e-14)
    rng = np.random.default_rng(5)
    m, inertia = rng.normal(size=(500, 3)), rng.uniform(0.1, 5.0, (500, 3))
    assert np.array_equal(frb.kinetic_energy(m, inertia), np.sum(m * m / (2 * inertia), axis=-1))


def test_compare_drifts_follow_the_scaling_law():
    # the drifts of a free body are the same at every scale of m, of the moments and of time
    def drifts(scale_m, scale_i):
        c = frb.compare(["EXACT", "RK4"], m0=np.array([0.3, 0.5, 0.8]) * scale_m,
                        attitude0=QUAT, inertia=I * scale_i, steps=(5,),
                        t_final=scale_i / scale_m)
        return np.array([[r.energy, r.norm_m, r.momentum] for r in c.rows])
    unit = drifts(1.0, 1.0)
    for scale_m, scale_i in ((2.0**600, 1.0), (2.0**-600, 1.0), (2.0**900, 2.0**900)):
        got = drifts(scale_m, scale_i)
        assert np.isfinite(got).all()
        np.testing.assert_allclose(got[1], unit[1], rtol=1e-6)
        assert (got[0] < 1e-14).all()


CLI_COMMANDS = [["frb-example", "--list"],
                ["frb-compare", "--bodies", "2", "--steps", "5", "--t-final", "1"],
                ["frb-example", "--help"], ["frb-compare", "--help"],
                ["frb-example", "vilmart-book", "--help"], ["frb-example", "--version"],
                ["frb-compare", "--version"]]


def _cli_process(command, **options):
    """The finished process of ``command`` (its stderr as text), run by the CLI's function."""
    import subprocess
    import sys
    module = "main" if command[0] == "frb-example" else "compare_main"
    code = f"import sys; from frb.cli import {module}; sys.exit({module}(sys.argv[1:]))"
    return subprocess.run([sys.executable, "-c", code, *command[1:]], stderr=subprocess.PIPE,
                          text=True, timeout=300, **options)


@pytest.mark.skipif(not __import__("os").path.exists("/dev/full"), reason="no /dev/full")
@pytest.mark.parametrize("command", CLI_COMMANDS)
def test_commands_whose_output_cannot_be_written_say_so_in_one_line(command):
    with open("/dev/full", "w") as full:
        done = _cli_process(command, stdout=full)
    assert done.returncode == 1
    assert done.stderr.strip().splitlines() == [
        f"{command[0]}: error: cannot write the output: [Errno 28] No space left on device"]


@pytest.mark.parametrize("command", CLI_COMMANDS)
def test_commands_started_with_their_output_closed_end_without_a_traceback(command):
    import subprocess
    done = _cli_process(command, stdout=subprocess.DEVNULL,
                        preexec_fn=lambda: __import__("os").close(1))
    assert done.returncode == 0 and "Traceback" not in done.stderr, done.stderr[-2000:]


@pytest.mark.parametrize("method", ["DMV2", "DMV4", "DMV6", "DMV8"])
def test_dmv_body_in_a_batch_moves_as_alone(method):
    # the lanes' Newton iteration freezes each body once it has converged: a body takes the
    # updates it takes alone, whatever bodies share its chunk
    rng = np.random.default_rng(1)
    for _ in range(20):
        m = rng.normal(size=(7, 3))
        q = rng.normal(size=(7, 4))
        q /= np.linalg.norm(q, axis=1)[:, None]
        inertia = rng.uniform(0.5, 3.0, size=(7, 3))
        batch = frb.integrate(m, q, inertia, 0.05, 2, method=method, save_every=None)
        for b in range(7):
            alone = frb.integrate(m[b], q[b], inertia[b], 0.05, 2, method=method, save_every=None)
            assert np.array_equal(batch.m[-1, b], alone.m[-1]), b
            assert np.array_equal(batch.q[-1, b], alone.q[-1]), b


@pytest.mark.parametrize("command, fragment", [
    (["compare", "--bodies", "1000000000000"], "--bodies must be an integer in 1..2147483647"),
    (["compare", "--t-final", "nan"], "--t-final must be finite, got nan"),
    (["compare", "--steps", "0"], "--steps must be an integer in 1..2147483646, got 0"),
    (["compare", "--inertia", "1,2,0", "--m0", "1,1,1"],
     "--inertia must contain strictly positive moments of inertia"),
    (["satellite", "--coast", "1e308"], "--coast / --h must give 1 to 2147483646 steps"),
    (["satellite", "--h", "5"], "--kd = 25.0 is too stiff for --h = 5.0: the law's rate kd / I_min"),
    (["satellite", "--damping", "1e308"], "--damping = 1e+308 is too stiff for --h = 0.5: the "
     "damping rate c = 1e+308 1/s exceeds 1 / h"),
])
def test_command_refusals_name_the_options_as_typed(capsys, command, fragment):
    from frb import cli
    if command[0] == "compare":
        status = cli.compare_main(command[1:])
        prog = "frb-compare"
    else:
        status = cli.main(command)
        prog = f"frb-example {command[0]}"
    err = capsys.readouterr().err
    assert status == 2
    assert err.startswith(f"{prog}: error: ") and err.count("\n") == 1, err
    assert fragment in err, err


def test_kinetic_energy_takes_inertia_tensors_as_every_route():
    rng = np.random.default_rng(5)
    A = rng.normal(size=(6, 3, 3))
    J = A @ np.swapaxes(A, 1, 2) + 0.5 * np.eye(3)       # symmetric positive definite
    m = rng.normal(size=(6, 3))
    solve = 0.5 * np.einsum("ni,ni->n", m, np.linalg.solve(J, m[..., None])[..., 0])
    np.testing.assert_allclose(frb.kinetic_energy(m, J), solve, rtol=1e-14)
    one = 0.5 * np.einsum("ni,ni->n", m, np.linalg.solve(J[0], m.T).T)
    np.testing.assert_allclose(frb.kinetic_energy(m, J[0]), one, rtol=1e-14)
    np.testing.assert_allclose(frb.kinetic_energy(m, J[:1]), one, rtol=1e-14)
    assert np.shape(frb.kinetic_energy(m[0], J[0])) == ()
    np.testing.assert_allclose(frb.kinetic_energy(m[0], J[0]), one[0], rtol=1e-14)
    # the energy of frb.integrate's trajectory with the same tensor
    tr = frb.integrate(m[0], np.eye(3), J[0], 0.1, 4, method="EXACT")
    np.testing.assert_allclose(frb.kinetic_energy(tr.m, J[0]), tr.kinetic_energy, rtol=1e-14)
    # (3, 3) for exactly three bodies: their principal moments, one row each
    moments = rng.uniform(0.5, 2.0, size=(3, 3))
    np.testing.assert_array_equal(frb.kinetic_energy(m[:3], moments),
                                  np.sum(m[:3] ** 2 / (2 * moments), axis=1))
    with pytest.raises(ValueError, match="inertia must be a symmetric matrix"):
        frb.kinetic_energy(m[0], [[1, 2, 3], [4, 5, 6], [7, 8, 9.0]])
    with pytest.raises(ValueError, match=r"inertia tensors must have shape \(3, 3\), \(1, 3, 3\) "
                       r"or \(6, 3, 3\)"):
        frb.kinetic_energy(m, J[:4])


def test_python_functions_returning_non_numbers_raise_type_error():
    def law(t, Q, m, h):
        return None

    wheels = frb.Wheels(np.eye(3), [0.01, 0.01, 0.01])
    with pytest.raises(TypeError, match=r"wheel_law law \(method RK4, step 1\) returned None"):
        frb.integrate([0.3, 0.5, 0.8], [1.0, 0, 0, 0], [1.0, 2.0, 3.0], 0.1, 2, method="RK4",
                      wheels=wheels, wheel_law=law)
    with pytest.raises(TypeError, match="in a sum must return real numbers, got dtype bool"):
        (frb.torques.as_torque(lambda t, Q: np.zeros((1, 3), bool))
         + frb.torques.linear_damping(0.1))(0.0, np.eye(3)[None], np.ones((1, 3)))
    with pytest.raises(TypeError, match="must return a pair"):
        frb.splitting.integrate([0.3, 0.5, 0.8], np.eye(3), [1.0, 2.0, 3.0], 0.1, 1,
                                torque=lambda m, Q, t: None)


@pytest.mark.skipif(not hasattr(__import__("os"), "mkfifo"), reason="no FIFOs")
def test_fifos_and_devices_are_refused_without_waiting(tmp_path, capsys):
    import os
    from frb import cli
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    with pytest.raises(ValueError, match="is a FIFO"):
        frb.write_dat(fifo, [1.0])
    assert cli.main(["0", "--output", str(fifo), "--no-compare"]) == 2
    assert f"--output: '{fifo}' is not a regular file" in capsys.readouterr().err
    for option in ("--coefficients", "--reference"):
        extra = ["--m0", "1,2,3", "--inertia", "1,2,3"] if option == "--reference" else []
        assert cli.compare_main([option, str(fifo), *extra]) == 2
        assert f"{option}: '{fifo}' is not a regular file" in capsys.readouterr().err
    from frb.reporting import figure_path
    for path in (fifo, "/dev/null"):
        with pytest.raises(ValueError, match="neither a regular file nor a folder"):
            figure_path(path, "name")
    (tmp_path / "plain").write_text("x")
    with pytest.raises(ValueError, match="an existing file without a suffix"):
        figure_path(tmp_path / "plain", "name")
    assert figure_path(tmp_path / "new", "name") == str(tmp_path / "new") + ".png"
    with pytest.raises(ValueError, match="input_path must name a file, got an empty path"):
        frb.examples.run_example(0, input_path="", output_path=False, compare_path=False)


@pytest.mark.skipif(not hasattr(__import__("socket"), "AF_UNIX"), reason="no UNIX sockets")
def test_read_dat_refuses_sockets_and_terminals(tmp_path):
    import os
    import pty
    import socket
    path = str(tmp_path / "sock")
    with socket.socket(socket.AF_UNIX) as sock:
        sock.bind(path)
        with pytest.raises(ValueError, match="is a socket: read_dat reads files"):
            frb.read_dat(path)
    leader, follower = pty.openpty()
    try:
        with pytest.raises(ValueError, match="is a terminal: read_dat reads files"):
            frb.read_dat(os.ttyname(follower))
    finally:
        os.close(leader)
        os.close(follower)


def test_a_figure_path_that_is_only_a_suffix_is_refused(tmp_path, capsys):
    # '.png' names no file: matplotlib would add its default suffix to it ('.png.png')
    pytest.importorskip("matplotlib")
    from frb import cli
    from frb.reporting import figure_path
    for suffix in (".png", ".PDF"):
        with pytest.raises(ValueError, match=f"'{suffix}' is a suffix without a file name"):
            figure_path(suffix, "name")
        with pytest.raises(ValueError, match="give a name .e.g. '.*figure" + suffix):
            figure_path(tmp_path / suffix, "name")
    assert cli.main(["torus", "--plot", ".png"]) == 2
    assert "--plot: the figure path '.png' is a suffix without a file name" in capsys.readouterr().err
    assert cli.compare_main(["--bodies", "2", "--plot", ".svg"]) == 2
    assert "--plot: the figure path '.svg' is a suffix without a file name" in capsys.readouterr().err
    assert figure_path(tmp_path / ".hidden", "name") == str(tmp_path / ".hidden") + ".png"


def test_momenta_beyond_the_float64_range_refused_by_name():
    big = [1.7e308] * 3                               # |m| = 2.9e308
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(ValueError, match="m: the momentum has a norm beyond"):
            frb.frb_step(big, np.eye(3), 1e-300, [1.0, 2.0, 3.0])
        with pytest.raises(ValueError, match="m0: the momentum of body 1 has a norm beyond"):
            frb.integrate([[1.0, 0, 0], big], [[1.0, 0, 0, 0]] * 2, [1.0, 2.0, 3.0], 1e-300, 2,
                          method="EXACT")
        # |m| within the range: its rotated components are finite
        m1, _ = frb.frb_step([1e308, 1e308, 0.0], np.eye(3), 1e-300, [1.0, 2.0, 3.0])
        assert np.isfinite(m1).all()
        np.testing.assert_allclose(np.linalg.norm(m1 / 1e308), np.sqrt(2.0), rtol=1e-15)


def test_compare_refuses_an_empty_method_list():
    for methods in ([], "", "RK4,"):
        with pytest.raises(ValueError, match="methods must name at least one method"):
            frb.compare(methods, bodies=2, steps=(5,))


@pytest.mark.parametrize("chunk", [7, 100, 1 << 24])
def test_files_of_plain_numbers_read_as_by_the_record_reader(tmp_path, monkeypatch, chunk):
    from frb import io as frb_io
    monkeypatch.setattr(frb_io, "PLAIN_CHUNK_BYTES", chunk)
    rng = np.random.default_rng(8)
    v = rng.normal(size=3000) * 10.0 ** rng.integers(-300, 300, 3000)
    v[::97] = 0.0
    forms = [lambda x: f"{x:.17g}", lambda x: f"{x:.16E}".replace("E", "D"),
             lambda x: f"{x:+.17e}", lambda x: f"{x:.16e}".replace("e", "d")]
    words = [forms[i % 4](x) for i, x in enumerate(v)]
    lines, i = [], 0
    while i < len(words):
        k = int(rng.integers(1, 6))
        lines.append(("\t" if k % 2 else "  ").join(words[i:i + k]))
        i += k
    text = "\r\n".join(lines)
    (tmp_path / "plain.dat").write_bytes(b"\xef\xbb\xbf" + text.encode())
    (tmp_path / "record.dat").write_text(text + ",\n")      # (a comma: the record reader)
    plain = frb.read_dat(tmp_path / "plain.dat")
    assert np.array_equal(plain, v)
    assert np.array_equal(plain, frb.read_dat(tmp_path / "record.dat"))
    # what the plain reader leaves to the record reader is still read, or refused by line
    (tmp_path / "sign.dat").write_text("1.0 2.5+3\n")
    assert np.array_equal(frb.read_dat(tmp_path / "sign.dat"), [1.0, 2500.0])
    (tmp_path / "big.dat").write_text("1.0\n2.0\n1e400\n")
    with pytest.raises(ValueError, match=r"big.dat:3: '1e400' is too large"):
        frb.read_dat(tmp_path / "big.dat")
    (tmp_path / "many.dat").write_text("1 2\n3 4\n5\n")
    with pytest.raises(ValueError, match=r"many.dat:2: the file would hold 4 values or more"):
        frb.read_dat(tmp_path / "many.dat", max_values=3)


def test_step_figure_path_and_three_body_tensor_refusals(tmp_path):
    from frb.experiments import run_experiment
    from frb.reporting import figure_path
    with pytest.raises(ValueError, match=r"^h = 1.5 must divide 5 s"):
        run_experiment("satellite", h=1.5)
    (tmp_path / "file.png").write_text("x")
    with pytest.raises(ValueError, match="of the figure .* is not a folder"):
        figure_path(tmp_path / "file.png" / "y.png", "name")
    with pytest.raises(ValueError, match=r"longer than a file name can be \(255 bytes\)"):
        figure_path(tmp_path / ("a" * 300 + ".png"), "name")
    tensor = np.array([[2.0, -0.5, 0.3], [-0.5, 2.0, 0.2], [0.3, 0.2, 3.0]])
    with pytest.raises(ValueError, match=r"for a batch of exactly three bodies an inertia of "
                                         r"shape \(3, 3\) holds their principal moments"):
        frb.kinetic_energy(np.ones((3, 3)), tensor)
    np.testing.assert_allclose(frb.kinetic_energy(np.ones((3, 3)), tensor[None]),
                               [0.5 * np.ones(3) @ np.linalg.solve(tensor, np.ones(3))] * 3,
                               rtol=1e-14)


def test_command_file_refusals_name_the_option(tmp_path, capsys):
    from frb import cli
    (tmp_path / "bad.dat").write_text("abc\n")
    assert cli.main(["0", "--input", str(tmp_path / "bad.dat"), "--no-compare"]) == 2
    assert f"--input: {tmp_path / 'bad.dat'}:1: cannot read 'abc' as a number" in \
        capsys.readouterr().err
    (tmp_path / "coefficients.txt").write_text("1 2 3\n1 2\n")
    assert cli.compare_main(["--coefficients", str(tmp_path / "coefficients.txt")]) == 2
    assert "--coefficients: coefficients are not consistent" in capsys.readouterr().err


@pytest.mark.parametrize("text, values", [
    ("1\n,2\n3\n", [1.0, 2.0, 3.0]),            # a comma starting a record after a value
    ("1 2\n,\n3\n", [1.0, 2.0, 3.0]),
    ("1\n\n  ,2\n3\n", [1.0, 2.0, 3.0]),
    ("1,2\n,3\n", [1.0, 2.0, 3.0]),
    ("1 ,\n2 3\n", [1.0, 2.0, 3.0]),
    (",1 2 3\n", None),                           # a comma starting the input: a null value
    ("1,\n,2\n3\n", None),                        # a comma after a comma: a null value
])
def test_commas_across_records_read_as_fortran_reads_them(tmp_path, text, values):
    # (gfortran's list-directed read gives these values, and a null value for the others)
    (tmp_path / "x.dat").write_text(text)
    if values is None:
        with pytest.raises(ValueError, match="null value"):
            frb.read_dat(tmp_path / "x.dat")
    else:
        assert frb.read_dat(tmp_path / "x.dat").tolist() == values


def test_ganapathi_symmetric_step_too_long_for_rk4_names_dt():
    from frb.experiments import run_experiment
    with pytest.raises(ValueError, match=r"^dt = 1.5 is too long for RK4 on this top"):
        run_experiment("ganapathi-symmetric", dt=1.5)


def test_empty_batch_keeping_more_times_than_memory_is_refused():
    # the times of an empty batch are kept too: refused before they are allocated
    args = (np.zeros((0, 3)), np.zeros((0, 4)), [1.0, 2.0, 3.0], 0.1, 2**31 - 2)
    with pytest.raises(ValueError, match="the kept states would take .* save_every"):
        frb.integrate(*args, method="RK4")
    tr = frb.integrate(*args, method="RK4", save_every=None)
    assert tr.t.tolist() == [0.1 * (2**31 - 2)] and tr.m.shape == (1, 0, 3)


@pytest.mark.parametrize("coefficients, sums", [
    (((1e308, 1e308, 1.0), (0.25, 0.25)), "got inf and 1.0"),
    (((0.25, 0.25, 0.0), (1e308, 1e308)), "got 1.0 and inf"),
    (((-1e308, -1e308, 1.0), (0.25, 0.25)), "got -inf and 1.0"),
])
def test_coefficients_whose_sums_leave_the_float64_range_are_inconsistent(coefficients, sums):
    for call in (frb.splitting.integrate, frb.integrate):
        with pytest.raises(ValueError, match=f"coefficients are not consistent: .*{sums}"):
            call([0.3, 0.5, 0.8], np.eye(3), [1.0, 2.0, 3.0], 0.1, 2, coefficients=coefficients)


def test_a_trajectory_keeps_its_moments_when_the_callers_array_changes():
    """The moments (or tensors) a trajectory keeps are its own: changing the caller's array after
    the run leaves its energies, against those of the same run with the array never changed."""
    tensor = np.diag(I)
    tensor[0, 1] = tensor[1, 0] = 0.1
    runs = [
        lambda J: frb.integrate(M, QUAT, J, 0.1, 3, method="RK4"),
        lambda J: frb.integrate(np.tile(M, (2, 1)), np.tile(QUAT, (2, 1)), np.tile(J, (2, 1)),
                                0.1, 3, method="EXACT"),
        lambda J: frb.splitting.integrate(M, np.eye(3), J, 0.1, 3,
                                          torque=frb.torques.heavy_top(1.0, [0.0, 0.0, 0.1])),
    ]
    for given, run in [(I, runs[0]), (I, runs[1]), (I, runs[2]), (tensor, runs[0])]:
        reference = run(given.copy()).kinetic_energy
        J = given.copy()
        tr = run(J)
        J[...] = 10 * J
        assert np.array_equal(tr.kinetic_energy, reference)


@pytest.mark.parametrize("make", [
    lambda: ((np.array(True), 2.0, 3.0), QUAT, I),
    lambda: (M, QUAT, [np.array(True), 2.0, 3.5]),
    lambda: ([np.array([True, False, True]), [1.0, 2.0, 3.0]], np.tile(QUAT, (2, 1)), I),
    lambda: ([np.array([0.3, 0.5, True], dtype=object), [1.0, 2.0, 3.0]], np.tile(QUAT, (2, 1)), I),
    lambda: (bytearray(b"\x01\x02\x03"), QUAT, I),
    lambda: (M, QUAT, memoryview(b"\x01\x02\x03")),
])
def test_booleans_inside_arrays_in_lists_and_raw_bytes_are_refused(make):
    m, q, inertia = make()
    with pytest.raises(TypeError, match="boolean|bytes"):
        frb.quat_step(m, q, 0.1, inertia)


def test_a_memoryview_of_float64_and_zero_dimensional_arrays_in_lists_are_numbers():
    m1, q1 = frb.quat_step(M, QUAT, 0.1, I)
    for m in (memoryview(M.copy()), [np.array(0.3), 0.5, np.array(0.8)]):
        m2, q2 = frb.quat_step(m, QUAT, 0.1, I)
        assert np.array_equal(m2, m1) and np.array_equal(q2, q1)


@pytest.mark.parametrize("torque", [frb.torques.rotor([0.0, 0.0, 1e-308]),
                                    frb.torques.gravity_gradient(1e-310),
                                    frb.torques.linear_damping(1e-310)])
@pytest.mark.parametrize("method", ["RK4", "STRANG", "EXACT"])
def test_subnormal_torque_parameters_run_as_the_free_body(torque, method):
    """A parameter subnormal as given (it moves the body by far less than its rounding) is run,
    not refused as beyond the range of a rescaling: the free motion to rounding."""
    if method == "EXACT" and not frb.METHODS["EXACT"].accepts(torque):
        pytest.skip("EXACT takes rotors and damping alone")
    tr = frb.integrate(M, QUAT, I, 0.1, 5, method=method, torque=torque)
    free = frb.integrate(M, QUAT, I, 0.1, 5, method=method)
    np.testing.assert_allclose(tr.m, free.m, rtol=0, atol=4e-15)
    np.testing.assert_allclose(tr.q, free.q, rtol=0, atol=4e-15)


def test_a_bad_wheel_inertia_names_its_wheel_and_body_briefly():
    axes = np.tile([0.0, 0.0, 1.0], (4, 1))
    with pytest.raises(ValueError, match=r"got -1.0 for wheel 0 \(body 0\)$") as info:
        frb.Wheels(axes, np.zeros((100000, 4)), inertia=-np.ones((100000, 4)))
    assert len(str(info.value)) < 200
    with pytest.raises(ValueError, match=r"got nan for wheel 1 \(body 1\)$"):
        frb.Wheels(axes, np.zeros((2, 4)), inertia=[[1.0] * 4, [1.0, np.nan, 1.0, 1.0]])


def test_spatial_momentum_and_energy_of_many_kept_quaternions_in_blocks():
    """A trajectory of more kept attitudes than one block of matrices (2^20): Q m and the
    potential energy from the quaternions block by block, bit for bit those of all matrices at
    once."""
    rng = np.random.default_rng(3)
    n = 700
    m = rng.normal(size=(n, 3))
    q = rng.normal(size=(n, 4))
    q /= np.linalg.norm(q, axis=1, keepdims=True)
    top = frb.torques.heavy_top(1.0, [0.0, 0.0, 0.1])
    tr = frb.integrate(m, q, I, 0.05, 1600, method="STRANG", torque=top)
    Q = frb.quat_to_matrix(tr.q)
    assert np.array_equal(tr.spatial_momentum, np.einsum("...ij,...j->...i", Q, tr.m))
    assert np.array_equal(tr.potential_energy, top.potential(Q))


def test_a_torque_returning_an_array_of_float_objects_is_read_as_numbers():
    free = frb.integrate(M, QUAT, I, 0.1, 3, method="RK4",
                         torque=lambda t, Q: np.full((len(Q), 3), 0.01))
    objects = frb.integrate(M, QUAT, I, 0.1, 3, method="RK4",
                            torque=lambda t, Q: np.full((len(Q), 3), 0.01).astype(object))
    assert np.array_equal(objects.m, free.m) and np.array_equal(objects.q, free.q)
    with pytest.raises(TypeError, match="holds a boolean"):
        frb.integrate(M, QUAT, I, 0.1, 3, method="RK4",
                      torque=lambda t, Q: np.array([[True, 0.0, 0.0]], dtype=object))


def test_a_figure_without_matplotlib_is_refused_before_the_run(monkeypatch, capsys, tmp_path):
    """--plot without matplotlib: status 2 and the reason, before the run (no result printed)."""
    import sys
    from frb.cli import compare_main, main
    monkeypatch.setitem(sys.modules, "matplotlib", None)
    assert main(["ganapathi-symmetric", "--nsteps", "10", "--plot", str(tmp_path / "x.png")]) == 2
    out = capsys.readouterr()
    assert "--plot: plots need matplotlib" in out.err and out.out == ""


def test_matrix_gains_that_feed_energy_in_are_refused_as_negative_numbers_are():
    """A gain matrix is >= 0 when its symmetric part is positive semidefinite: -1 as a matrix is
    refused as -1 as a number is, naming the gain (and the body of a gain per body)."""
    ref = [1.0, 0.0, 0.0, 0.0]
    with pytest.raises(ValueError, match="kp must be a finite number >= 0"):
        frb.torques.attitude_control(ref, -1.0, 1.0)
    with pytest.raises(ValueError, match=r"kp must be a number >= 0 or a matrix whose symmetric "
                                         r"part is positive semidefinite.*eigenvalue -1.0$"):
        frb.torques.attitude_control(ref, -np.eye(3), 1.0)
    with pytest.raises(ValueError, match=r"kd must .*eigenvalue -1.0$"):
        frb.wheel_laws.quaternion_feedback(ref, 1.0, np.diag([1.0, 1.0, -1.0]))
    per_body = np.array([np.eye(3), np.diag([1.0, -0.5, 1.0])])
    with pytest.raises(ValueError, match=r"eigenvalue -0.5 \(body 1\)$"):
        frb.torques.attitude_control(ref, per_body, 1.0)
    # a gyroscopic (skew) part feeds no energy in: accepted, as is a gain k J
    gyro = np.array([[1.0, 2.0, 0.0], [-2.0, 1.0, 0.0], [0.0, 0.0, 1.0]])
    assert np.array_equal(frb.torques.attitude_control(ref, gyro, 1.0).kp, gyro)
    frb.wheel_laws.quaternion_feedback(ref, 0.3 * np.diag(I), 0.0)


def test_dask_runs_keep_the_arrays_they_were_given():
    """The chunks of frb.dask run at compute(): a shared inertia, a step or a t0 given as arrays
    and changed by the caller before compute() leave the results of the arrays as given."""
    da = pytest.importorskip("dask.array")
    import frb.dask as fd
    m = da.ones((2, 3), chunks=1)
    q = da.from_array(np.tile(QUAT, (2, 1)), chunks=1)
    reference = fd.quat_step(m, q, 0.1, I.copy())[0].compute()
    J, h = I.copy(), np.array(0.1)
    step = fd.quat_step(m, q, h, J)[0]
    J *= 2
    h[()] = 5.0
    assert np.array_equal(step.compute(), reference)
    control = frb.torques.attitude_control(lambda t: [1.0, 0.0, 0.0, 0.0] if t < 50 else
                                           [0.0, 1.0, 0.0, 0.0], 1.0, 1.0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", frb.NotCompiledWarning)
        expected = fd.integrate(m, q, I.copy(), 0.1, 3, method="RK4", torque=control,
                                t0=0.0).compute()
        J, t0 = I.copy(), np.array(0.0)
        tr = fd.integrate(m, q, J, 0.1, 3, method="RK4", torque=control, t0=t0)
        J *= 2
        t0[()] = 100.0
        got = tr.compute()
    assert np.array_equal(got.m, expected.m)
    assert np.array_equal(got.kinetic_energy, expected.kinetic_energy)


@pytest.mark.parametrize("run", [
    lambda: frb.integrate(M, QUAT, I, 0.1, 2, method="RK4", torque=lambda t, Q: [[True, 0, 0]]),
    lambda: frb.integrate(M, QUAT, I, 0.1, 2, method="RK4",
                          torque=lambda t, Q: [np.array(False), 0.0, 0.0]),
    lambda: frb.integrate(M, QUAT, I, 0.1, 2, method="RK4",
                          torque=frb.torques.heavy_top(1.0, [0.0, 0.0, 0.1])
                          + frb.torques.as_torque(lambda t, Q: [[True, 0, 0]])),
    lambda: frb.integrate(M, QUAT, np.diag(I) + 0.1 * (1 - np.eye(3)), 0.1, 2, method="RK4",
                          torque=lambda t, Q: [[True, 0, 0]]),
    lambda: frb.integrate(M, QUAT, I, 0.1, 2, method="RK4",
                          torque=lambda t, Q: [bytearray(b"\x05\x00\x00")]),
    lambda: frb.integrate(M, QUAT, I, 0.1, 2, method="RK4",
                          wheels=frb.Wheels([[0.0, 0.0, 1.0]], [0.0]),
                          wheel_law=lambda t, Q, m, h: [[True]]),
])
def test_a_callables_result_holding_booleans_or_bytes_is_refused(run):
    with pytest.raises(TypeError, match="must return real numbers, but its result holds"):
        run()


@pytest.mark.parametrize("call, name", [
    (lambda: frb.integrate([bytearray(b"\x01\x02\x03")], [QUAT], I, 0.1, 2, method="EXACT"), "m0"),
    (lambda: frb.Wheels(np.eye(3), [bytearray(b"\x01\x02\x03")]), "h0"),
    (lambda: frb.kinetic_energy([[1.0], 2.0, 3.0], I), "m"),
    (lambda: frb.torques.attitude_control(QUAT, 1.0, 1.0).reference(None), "t"),
    (lambda: frb.compare(["EXACT"], bodies=3, t_final=1.0, steps=bytearray(b"\x05\x0a")), "steps"),
    (lambda: frb.read_dat(__file__, max_values=np.timedelta64(1, "s")), "max_values"),
])
def test_bytes_ragged_rows_durations_and_missing_times_are_type_errors_naming_the_argument(
        call, name):
    with pytest.raises(TypeError, match=rf"^{name} must"):
        call()


@pytest.mark.parametrize("call, name", [
    (lambda: frb.quat_step([np.timedelta64(1), 0.5, 0.2], QUAT, 0.1, I), "m"),
    (lambda: frb.hat([np.timedelta64(1, "s"), 0.0, 0.0]), "v"),
    (lambda: frb.quat_step(np.tile(M, (2, 1)), np.tile(QUAT, (2, 1)), [np.timedelta64(1), 0.1], I),
     "h"),
    (lambda: frb.derivatives.flow_jacobian(np.ma.masked_array(M, mask=[0, 1, 0]), QUAT, 0.1, I),
     "m"),
    (lambda: frb.derivatives.flow_jacobian(M, QUAT, np.ma.masked_array(1.0, mask=True), I), "h"),
    (lambda: frb.quat_step(M, QUAT, 0.1, np.ma.masked_array(I, mask=[0, 0, 1]), jacobian=True),
     "inertia"),
    (lambda: frb.wheel_laws.quaternion_feedback(QUAT, 1.0, 1.0).reference("x"), "t"),
    (lambda: frb.set_num_threads(np.timedelta64(1, "s")), "n"),
])
def test_durations_masked_entries_and_times_are_refused_on_every_route(call, name):
    """Durations inside lists (numpy's timedelta64 is an integer type), masked entries on the
    derivative routes, a time that is not a number: TypeError naming the argument."""
    with pytest.raises(TypeError, match=rf"^{name} must"):
        call()


def test_a_masked_torque_result_is_refused_in_the_frame_of_a_tensor():
    tensor = np.diag(I) + 0.1 * (1 - np.eye(3))
    for torque in (lambda t, Q: np.ma.masked_array([1.0, 5.0, 0.0], mask=[0, 1, 0]),
                   lambda t, Q, m: np.ma.masked_array([1.0, 5.0, 0.0], mask=[0, 1, 0])):
        with pytest.raises(TypeError, match="masked array with masked entries"):
            frb.integrate(M, QUAT, tensor, 0.1, 3, method="RK4", torque=torque)


def test_a_monte_carlo_spread_needs_two_trials():
    from frb.experiments import run_experiment
    with pytest.raises(ValueError, match=r"trials must be an integer in 2\.\."):
        run_experiment("inertia-identification", trials=1, n=20)


def test_a_term_of_a_sum_may_return_one_bodys_torque_as_a_torque_alone_may():
    """One body: a Python term of a sum returning shape (3,) is that body's torque, as for a
    user torque alone; the run equals the one with the term returning (1, 3)."""
    top = frb.torques.heavy_top(1.0, [0.0, 0.0, 0.1])
    flat = top + frb.torques.as_torque(lambda t, Q: np.array([0.0, 0.01, 0.0]))
    rows = top + frb.torques.as_torque(lambda t, Q: np.array([[0.0, 0.01, 0.0]]))
    a = frb.integrate(M, QUAT, I, 0.1, 3, method="RK4", torque=flat)
    b = frb.integrate(M, QUAT, I, 0.1, 3, method="RK4", torque=rows)
    assert np.array_equal(a.m, b.m) and np.array_equal(a.q, b.q)
    with pytest.raises(ValueError, match=r"in a sum must return an array of shape \(2, 3\)"):
        frb.integrate(np.tile(M, (2, 1)), np.tile(QUAT, (2, 1)), I, 0.1, 3, method="RK4",
                      torque=flat)
