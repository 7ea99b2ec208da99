"""Threads (OpenMP), the GIL, Ctrl-C, progress and kept states of the compiled loops.

Results must be the same bit for bit for every thread count and for every split of a run into
segments (the compiled loops are entered from Python in segments of about 0.1 s); the compiled
work must release the GIL; Ctrl-C must stop a long run within about a second.
"""
import _thread
import os
import signal
import subprocess
import sys
import textwrap
import threading
import time

import numpy as np
import pytest

import frb
import frb._run as segments
from frb import _core
from frb import _numbers_table as sn
from frb.torques import constant_field, gravity_gradient, heavy_top

THREADS = (1, 2, 3)
#: bodies of one step enough for the batched loops to start their threads
PARALLEL_BATCH = sn.MIN_PARALLEL_WORK + 1000


def bodies(n, seed=0):
    """n bodies of every kind: generic, near an axis, symmetric moments, at rest, and a
    per-body step of either sign."""
    rng = np.random.default_rng(seed)
    m = rng.normal(size=(n, 3))
    m[::7] = [0.0, 0.0, 1.0] + 1e-9 * rng.normal(size=(len(m[::7]), 3))
    m[5::97] = 0.0
    q = rng.normal(size=(n, 4))
    q /= np.linalg.norm(q, axis=1, keepdims=True)
    inertia = rng.uniform(0.5, 2.0, size=(n, 3))
    inertia[3::11, 1] = inertia[3::11, 0]
    h = rng.uniform(-0.2, 0.2, n)
    return m, q, inertia, h


def assert_all_equal(results):
    first = results[0]
    for other in results[1:]:
        for a, b in zip(first, other):
            assert np.array_equal(a, b)


# ------------------------------------------------------------------ thread counts


def test_openmp_build_and_thread_count():
    assert frb.threads.openmp_enabled() in (True, False)
    default = frb.get_num_threads()
    assert default >= 1
    try:
        frb.set_num_threads(3)
        assert frb.get_num_threads() == (3 if frb.threads.openmp_enabled() else 1)
    finally:
        frb.set_num_threads(None)
    assert frb.get_num_threads() == default


@pytest.mark.parametrize("bad, error", [(0, ValueError), (-2, ValueError), (1.5, TypeError),
                                        (True, TypeError), ("2", TypeError)])
def test_bad_thread_counts_are_rejected(bad, error):
    m, q, inertia, h = bodies(4)
    with pytest.raises(error, match="threads"):
        frb.quat_step(m, q, h, inertia, threads=bad)
    with pytest.raises(error, match="threads"):
        frb.integrate(m, q, inertia, 0.1, 2, method="DMV6", threads=bad)
    with pytest.raises(error, match="threads"):
        frb.dmv_integrate(m, q, inertia, 0.1, 2, threads=bad)
    with pytest.raises(error, match="threads"):
        frb.splitting.integrate(m[0], np.eye(3), inertia[0], 0.1, 2, threads=bad)
    with pytest.raises(error):
        frb.set_num_threads(bad)


def test_steps_identical_for_every_thread_count():
    _testing = pytest.importorskip("frb._testing", reason="frb._testing not built (meson option testing)")
    m, q, inertia, h = bodies(PARALLEL_BATCH)
    Q = frb.quat_to_matrix(q)
    mf, qf, Qf = np.asfortranarray(m), np.asfortranarray(q), np.asfortranarray(Q)
    runs = []
    for t in THREADS:
        runs.append(frb.frb_step(m, Q, h, inertia, threads=t)
                    + frb.quat_step(m, q, h, inertia, threads=t)
                    + frb.quat_step(m, q, 0.1, inertia[0], quadrature=4, threads=t)
                    + frb.frb_step(mf, Qf, h, inertia, threads=t)
                    + frb.quat_step(mf, qf, h, inertia, threads=t)
                    + frb.dmv_step(m, q, h, inertia, order=6, threads=t)
                    + frb.dmv_step(m, q, 0.05, inertia[0], order=8, threads=t)
                    + _testing.frb_integrate_batch(m.T, Q.T, h, inertia.T, 0, 5, threads=t)
                    + _testing.quat_integrate_batch(m.T, q.T, h, inertia.T, 2, 5, threads=t))
    assert_all_equal(runs)
    # the set_num_threads route, and single bodies against the batch
    try:
        frb.set_num_threads(2)
        assert_all_equal([runs[0][2:4], frb.quat_step(m, q, h, inertia)])
    finally:
        frb.set_num_threads(None)
    for i in (0, 5, 7, 999):
        mi, qi = frb.quat_step(m[i], q[i], h[i], inertia[i])
        assert np.array_equal(mi, runs[0][2][i]) and np.array_equal(qi, runs[0][3][i])


def test_invalid_body_reported_the_same_for_every_thread_count():
    m, q, inertia, h = bodies(PARALLEL_BATCH)
    m[700] = np.nan
    q[300] *= 1.1   # not a unit quaternion: the first invalid body
    for t in THREADS:
        with pytest.raises(ValueError, match=r"unit quaternion.*\(body 300\)"):
            frb.quat_step(m, q, h, inertia, threads=t)
        with pytest.raises(ValueError, match=r"\(body 300\)"):
            frb.dmv_step(m, q, h, inertia, threads=t)


def test_batch_checks_report_the_first_invalid_body_and_the_scales_for_every_thread_count():
    """The compiled checks of a batch of many chunks: the smallest invalid index (with its own
    code) whichever chunk a thread finds first, and the batch's scales as numpy computes them."""
    n = 5 * PARALLEL_BATCH
    m, q, inertia, h = bodies(n, seed=5)
    bm = np.abs(m).max(axis=1)
    expected = [bm.max(), bm[bm > 0].min(), inertia.min(), inertia.max(),
                (np.abs(h) * bm).max() / inertia.min()]
    for t in THREADS:
        extremes = np.empty(sn.CHECK_EXTREMES)
        code, body, _ = _core.check_bodies(m.T, q.T, h, inertia.T, t, extremes)
        assert (code, body) == (sn.INPUT_OK, -1)
        assert np.array_equal(extremes, expected)
    valid = m.copy(), q.copy(), inertia.copy()
    # invalid bodies in three chunks; each in turn the first once the earlier ones are repaired
    m[n - 3], inertia[3 * n // 4, 2], q[n // 2 + 1] = np.inf, -1.0, 2 * q[n // 2 + 1]
    for body, code in ((n // 2 + 1, sn.BAD_QUATERNION), (3 * n // 4, sn.BAD_INERTIA_SIGN),
                       (n - 3, sn.BAD_M)):
        for t in THREADS:
            found = _core.check_bodies(m.T, q.T, h, inertia.T, t, np.empty(sn.CHECK_EXTREMES))
            assert found[:2] == (code, body)
        for array, original in zip((m, q, inertia), valid):
            array[body] = original[body]


@pytest.mark.parametrize("method, torque", [
    ("DMV6", None), ("RKN6_14", heavy_top(1.0, [0.1, 0.2, 0.8])), ("IMIDM", gravity_gradient(0.7)),
    ("TERZE", constant_field([0.0, 0.0, 2.0])), ("EXACT", None)])
def test_integrate_identical_for_every_thread_count(method, torque):
    m, q, inertia, _ = bodies(PARALLEL_BATCH // 6 + 64, seed=1)
    runs = []
    for t in THREADS:
        tr = frb.integrate(m, q, inertia, 0.05, 6, method=method, torque=torque, save_every=2,
                           threads=t)
        runs.append((tr.m, tr.q))
    assert_all_equal(runs)


def test_dmv_integrate_identical_for_every_thread_count():
    m, q, inertia, h = bodies(500, seed=2)
    h *= 0.3
    runs = [frb.dmv_integrate(m, q, inertia, h, 40, order=8, threads=t) for t in THREADS]
    assert_all_equal(runs)


def test_earliest_failure_reported_for_every_thread_count_and_segmentation(monkeypatch):
    """The failure of the smallest step (then the smallest body) is reported, whatever the
    threads and the segments: body 10 (first chunk) fails at step 4, body 150 at step 1."""
    n = 200
    m = np.tile([0.1, 0.05, 0.02], (n, 1))
    q = np.tile([1.0, 0.0, 0.0, 0.0], (n, 1))
    inertia = np.tile([5.0, 6.0, 7.0], (n, 1))
    m[10], inertia[10] = [2.0, 0.3, 0.2], [0.5, 1.0, 1.5]
    m[150], inertia[150] = [0.5, 0.3, 0.2], [0.5, 1.0, 1.5]
    torque = heavy_top(30.0, [0.1, 0.2, 0.9])
    with pytest.raises(frb.IntegrationError) as info:
        frb.integrate(m[10], q[10], inertia[10], 0.2, 50, method="IMID", torque=torque)
    assert info.value.step == 4
    for t in THREADS:
        for tiny in (False, True):
            if tiny:   # blocks of 64 bodies, one step a call: body 10's block fails first
                monkeypatch.setattr(segments, "FIRST_WORK", 1)
                monkeypatch.setattr(segments, "TARGET_SECONDS", 0.0)
                monkeypatch.setattr(segments, "CHUNKS_PER_THREAD", 0)
            with pytest.raises(frb.IntegrationError) as info:
                frb.integrate(m, q, inertia, 0.2, 50, method="IMID", torque=torque, threads=t)
            assert (info.value.step, info.value.body) == (1, 150)


@pytest.mark.parametrize("user_policy, expected", [(None, "PASSIVE"), ("ACTIVE", "ACTIVE")])
def test_openmp_threads_wait_passively_unless_the_user_chose(user_policy, expected):
    """The OpenMP runtime prints its settings when it starts (OMP_DISPLAY_ENV): frb's threads
    wait passively unless OMP_WAIT_POLICY was set, and the environment is given back as it was."""
    script = "import os, frb; print(os.environ.get('OMP_WAIT_POLICY'), frb.threads.openmp_enabled())"
    env = {k: v for k, v in os.environ.items() if k != "OMP_WAIT_POLICY"}
    env["OMP_DISPLAY_ENV"] = "TRUE"
    if user_policy is not None:
        env["OMP_WAIT_POLICY"] = user_policy
    run = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=env,
                         timeout=120, check=True)
    policy, enabled = run.stdout.split()
    assert policy == str(user_policy)
    if enabled == "True":
        assert f"OMP_WAIT_POLICY = '{expected}'" in run.stderr


def test_omp_num_threads_is_followed_and_sigint_stops_a_run():
    """A child process with OMP_NUM_THREADS=3 reports 3 threads, then runs a long integrate;
    SIGINT (Ctrl-C) must raise KeyboardInterrupt there within about a second."""
    script = textwrap.dedent("""
        import signal, sys, time
        import numpy as np
        import frb
        # (a shell's background job starts with SIGINT ignored, and Python then keeps it so)
        signal.signal(signal.SIGINT, signal.default_int_handler)
        print(frb.get_num_threads(), frb.threads.openmp_enabled(), flush=True)
        m = np.tile([0.3, 0.2, 0.9], (512, 1)); q = np.tile([1.0, 0, 0, 0], (512, 1))
        print("ready", flush=True)
        try:
            frb.integrate(m, q, [1.0, 2.0, 3.0], 0.01, 10**8, method="DMV6", save_every=None)
            print("finished", flush=True)
        except KeyboardInterrupt:
            print("interrupted", time.perf_counter(), flush=True)
    """)
    env = dict(os.environ, OMP_NUM_THREADS="3")
    child = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True,
                             env=env)
    try:
        threads, enabled = child.stdout.readline().split()
        assert int(threads) == (3 if enabled == "True" else 1)
        assert child.stdout.readline().strip() == "ready"
        time.sleep(0.3)
        sent = time.perf_counter()
        child.send_signal(signal.SIGINT)
        out, _ = child.communicate(timeout=20)
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()
    word, when = out.split()
    assert word == "interrupted"
    assert float(when) - sent < 1.5   # perf_counter is system-wide (CLOCK_MONOTONIC) on Linux


# ------------------------------------------------------------------------ the GIL


def _gil_free_during(call):
    """Number of times a Python thread ran while call() was in compiled code (more than 10 ms
    from its start and end): zero if the GIL were held."""
    stamps, stop = [], threading.Event()

    def count():
        while not stop.is_set():
            stamps.append(time.perf_counter())
            time.sleep(0)

    worker = threading.Thread(target=count)
    worker.start()
    try:
        time.sleep(0.01)
        start = time.perf_counter()
        call()
        end = time.perf_counter()
    finally:
        stop.set()
        worker.join()
    assert end - start > 0.03, "the call is too short to tell"
    return sum(start + 0.01 < s < end - 0.01 for s in stamps)


def test_compiled_work_releases_the_gil(monkeypatch):
    m, q, inertia, _ = bodies(300_000, seed=3)
    # (h = 1: the longer step, about 60 ms for these bodies on the AVX2 target; a DMV step about
    # 30 ms: calls repeated so that each window is well above the 30 ms the count needs)
    assert _gil_free_during(lambda: [frb.quat_step(m, q, 1.0, inertia, threads=1)
                                     for _ in range(2)]) > 0
    assert _gil_free_during(lambda: [frb.dmv_step(m, q, 0.1, inertia, threads=1)
                                     for _ in range(4)]) > 0
    # the segmented loops as one segment each
    monkeypatch.setattr(segments, "FIRST_WORK", 10**9)
    small = slice(0, 4000)
    assert _gil_free_during(lambda: frb.integrate(m[small], q[small], inertia[small], 0.1, 2000,
                                                  method="DMV6", save_every=None, threads=1)) > 0
    assert _gil_free_during(lambda: frb.dmv_integrate(m[small], q[small], inertia[small],
                                                      0.1, 4000, threads=1)) > 0
    assert _gil_free_during(lambda: frb.splitting.integrate(
        m[0], np.eye(3), inertia[0], 0.1, 500_000, save_every=None)) > 0


# ---------------------------------------------------------------------- Ctrl-C


def _interrupted(call, after=0.3):
    """True when a simulated Ctrl-C (SIGINT to the main thread, `after` s into call) stops call
    with a KeyboardInterrupt before it returns."""
    returned = []

    # Ctrl-C must reach Python's handler (a library loaded by another test may have replaced it)
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    timer = threading.Timer(after, _thread.interrupt_main)
    timer.start()
    try:
        with pytest.raises(KeyboardInterrupt):
            call()
            returned.append(True)
            time.sleep(60)   # the call ended first: the interrupt still comes, but too late
        return not returned
    finally:
        timer.cancel()
        signal.signal(signal.SIGINT, previous)


@pytest.mark.parametrize("which", ["integrate", "dmv_integrate", "splitting"])
def test_ctrl_c_stops_long_runs(which):
    m = np.tile([0.3, 0.2, 0.9], (256, 1))
    q = np.tile([1.0, 0.0, 0.0, 0.0], (256, 1))
    inertia = [1.0, 2.0, 3.0]
    calls = {
        # (runs of a few seconds on an idle machine: 2e5 steps took 0.2 s on the AVX2 target)
        "integrate": lambda: frb.integrate(m, q, inertia, 0.01, 4 * 10**6, method="DMV6",
                                           save_every=None),
        "dmv_integrate": lambda: frb.dmv_integrate(m, q, inertia, 0.01, 4 * 10**6),
        "splitting": lambda: frb.splitting.integrate(m[0], np.eye(3), inertia, 0.01, 10**7,
                                                     torque=constant_field([0, 0, 1.0]),
                                                     save_every=None),
    }
    assert _interrupted(calls[which])


# ------------------------------------------------ segments, kept states and progress


def _testing():
    return pytest.importorskip("frb._testing", reason="frb._testing not built (meson option testing)")


def _one_call_and_tiny_segments(monkeypatch, run):
    """run() in one compiled call, and in segments of one step (and of one block of bodies)."""
    monkeypatch.setattr(segments, "FIRST_WORK", 10**12)
    monkeypatch.setattr(segments, "SINGLE_CALL_WORK", 10**12)
    whole = run()
    monkeypatch.setattr(segments, "FIRST_WORK", 1)
    monkeypatch.setattr(segments, "TARGET_SECONDS", 0.0)
    monkeypatch.setattr(segments, "CHUNKS_PER_THREAD", 0)
    monkeypatch.setattr(segments, "SINGLE_CALL_WORK", 0)
    tiny = run()
    return whole, tiny


@pytest.mark.parametrize("method, torque", [
    ("DMV6", None), ("TERZE", constant_field([0.0, 0.0, 2.0])), ("STRANG", gravity_gradient(0.5))])
def test_integrate_in_segments_equals_one_call(monkeypatch, method, torque):
    m, q, inertia, _ = bodies(150, seed=4)    # three chunks of 64 bodies

    def run():
        a = frb.integrate(m, q, inertia, 0.05, 9, method=method, torque=torque)
        b = frb.integrate(m, q, inertia, 0.05, 9, method=method, torque=torque, save_every=4)
        return a, b

    calls = []
    real, real_once = _core.engine_segment, _core.engine_whole

    def spy(*args, **kwargs):
        c = args[0]   # the configuration: b_first, b_last, k_first, k_last
        calls.append(tuple(int(c[k - 1]) for k in (sn.RUN_FIRST_BODY, sn.RUN_LAST_BODY,
                                                   sn.RUN_FIRST_STEP, sn.RUN_LAST_STEP)))
        return real(*args, **kwargs)

    def spy_once(*args, **kwargs):
        # every body (m0.T, the sixth input), steps 1..nsteps
        calls.append((1, args[5].shape[1], 0, int(args[0][sn.RUN_NSTEPS - 1])))
        return real_once(*args, **kwargs)

    monkeypatch.setattr(_core, "engine_segment", spy)
    monkeypatch.setattr(_core, "engine_whole", spy_once)
    (a, b), (c, d) = _one_call_and_tiny_segments(monkeypatch, run)
    # one call each, then blocks of 64 bodies, one step a call, a block after the other
    assert calls[:5] == [(1, 150, 0, 9)] * 2 + [(1, 64, 0, 1), (1, 64, 1, 2), (1, 64, 2, 3)]
    assert calls[11:13] == [(65, 128, 0, 1), (65, 128, 1, 2)] and len(calls) == 2 + 2 * 9 * 3
    for x, y in ((a, c), (b, d)):
        assert np.array_equal(x.t, y.t) and np.array_equal(x.m, y.m) and np.array_equal(x.q, y.q)
    keep = [0, 4, 8, 9]
    assert np.array_equal(b.t, a.t[keep]) and np.array_equal(b.m, a.m[keep])
    assert np.array_equal(b.q, a.q[keep])


def test_user_torque_in_segments_equals_one_call(monkeypatch):
    m, q, inertia, _ = bodies(70, seed=5)

    def torque(t, Q):
        return 0.3 * np.cos(t) * Q[:, 2, :]

    def run():
        tr = frb.integrate(m, q, inertia, 0.1, 7, method="RK4", torque=torque)
        return tr.m, tr.q

    whole, tiny = _one_call_and_tiny_segments(monkeypatch, run)
    assert_all_equal([whole, tiny])


def test_dmv_integrate_in_segments_equals_one_call(monkeypatch):
    m, q, inertia, _ = bodies(200, seed=6)
    h = np.array([0.05])
    calls = []
    real = _core.engine_segment

    def spy(*a, **kw):
        # (steps, b_first, b_last) of each compiled call
        c = a[0]
        calls.append((int(c[sn.RUN_LAST_STEP - 1] - c[sn.RUN_FIRST_STEP - 1]),
                      int(c[sn.RUN_FIRST_BODY - 1]), int(c[sn.RUN_LAST_BODY - 1])))
        return real(*a, **kw)

    monkeypatch.setattr(_core, "engine_segment", spy)
    whole, tiny = _one_call_and_tiny_segments(
        monkeypatch, lambda: frb.dmv_integrate(m, q, inertia, h, 30, order=6))
    # one step of a block of 64 bodies (4 lanes of 16) at a time, a block after the other
    assert calls[:2] == [(1, 1, 64)] * 2 and calls[30:32] == [(1, 65, 128)] * 2
    assert calls[-1] == (1, 193, 200) and len(calls) == 4 * 30
    kernel = _testing().dmv_integrate_batch(m.T, q.T, h, inertia.T, 6, 30)
    assert_all_equal([whole, tiny, (kernel[0].T, kernel[1].T)])
    # a shared moment tensor (the lanes' own modified inverse), and one body
    whole, tiny = _one_call_and_tiny_segments(
        monkeypatch, lambda: frb.dmv_integrate(m, q, inertia[0], 0.05, 30, order=8))
    kernel = _testing().dmv_integrate_batch(m.T, q.T, np.array([0.05]), inertia[:1].T, 8, 30)
    assert_all_equal([whole, tiny, (kernel[0].T, kernel[1].T)])
    whole, tiny = _one_call_and_tiny_segments(
        monkeypatch, lambda: frb.dmv_integrate(m[3], q[3], inertia[3], 0.05, 30, order=4))
    assert_all_equal([whole, tiny, (whole[0], whole[1])])


def test_dmv_segments_report_no_solution(monkeypatch):
    monkeypatch.setattr(segments, "FIRST_WORK", 1)
    monkeypatch.setattr(segments, "SINGLE_CALL_WORK", 0)
    with pytest.raises(RuntimeError, match="no solution"):
        frb.dmv_integrate([2.0, 0.0, 0.0], [1.0, 0, 0, 0], [0.5, 1.0, 1.5], 0.3, 5, order=2)
    with pytest.raises(ValueError, match=r"\(body 1\)"):
        frb.dmv_integrate([[1.0, 0, 0], [np.inf, 0, 0]], [[1.0, 0, 0, 0]] * 2, [1, 2, 3], 0.1, 5)


@pytest.mark.parametrize("torque", [None, constant_field([0.1, 0.2, 0.3])])
def test_splitting_in_segments_and_kept_states(monkeypatch, torque):
    m0, Q0, inertia = np.array([0.3, -0.2, 0.9]), frb.quat_to_matrix([0.6, 0.0, 0.8, 0.0]), [1, 2, 3]

    def run():
        return [frb.splitting.integrate(m0, Q0, inertia, 0.3, 20, torque=torque, save_every=s)
                for s in (1, 3, None)]

    whole, tiny = _one_call_and_tiny_segments(monkeypatch, run)
    for x, y in zip(whole, tiny):
        assert np.array_equal(x.t, y.t) and np.array_equal(x.m, y.m) and np.array_equal(x.Q, y.Q)
    full, third, final = whole
    keep = [0, 3, 6, 9, 12, 15, 18, 20]
    assert np.array_equal(third.t, full.t[keep]) and np.array_equal(third.m, full.m[keep])
    assert np.array_equal(third.Q, full.Q[keep])
    assert final.t.tolist() == [6.0] and np.array_equal(final.m, full.m[-1:])
    assert np.array_equal(final.Q, full.Q[-1:])
    # the Python loop (any other callable) keeps the same states
    py = frb.splitting.integrate(m0, Q0, inertia, 0.3, 20, save_every=3,
                                 torque=lambda m, Q, t: (m, Q))
    assert np.array_equal(py.t, third.t) and py.m.shape == (8, 3)


def test_final_state_only():
    m, q, inertia, _ = bodies(40, seed=7)
    full = frb.integrate(m, frb.quat_to_matrix(q), inertia, 0.1, 11, method="DMV4")
    for final in ("final", None):
        tr = frb.integrate(m, frb.quat_to_matrix(q), inertia, 0.1, 11, method="DMV4",
                           save_every=final)
        assert tr.t.tolist() == [full.t[-1]] and tr.m.shape == (1, 40, 3)
        assert np.array_equal(tr.m, full.m[-1:]) and np.array_equal(tr.Q, full.Q[-1:])
    one = frb.integrate(m[0], q[0], inertia[0], 0.1, 11, method="DMV4", save_every=None)
    assert one.m.shape == (1, 3) and np.array_equal(one.m[0], full.m[-1, 0])
    zero = frb.integrate(m, q, inertia, 0.1, 0, method="DMV4", save_every=None)
    assert zero.t.tolist() == [0.0] and np.array_equal(zero.m[0], m)
    for bad in (0, -1, "all", 1.5):
        with pytest.raises((ValueError, TypeError), match="save_every"):
            frb.integrate(m, q, inertia, 0.1, 3, method="DMV4", save_every=bad)
        with pytest.raises((ValueError, TypeError), match="save_every"):
            frb.splitting.integrate(m[0], np.eye(3), inertia[0], 0.1, 3, save_every=bad)


def test_progress_bar_and_plain_line(monkeypatch, capsys):
    pytest.importorskip("tqdm", reason="tqdm (extra 'progress') not installed")
    m, q, inertia, _ = bodies(20, seed=8)
    plain = frb.integrate(m, q, inertia, 0.1, 50, method="DMV6")
    with_bar = frb.integrate(m, q, inertia, 0.1, 50, method="DMV6", progress=True)
    err = capsys.readouterr().err
    assert "frb.integrate DMV6" in err and "1.00k/1.00k" in err
    assert np.array_equal(plain.m, with_bar.m) and np.array_equal(plain.q, with_bar.q)
    # without tqdm: a plain line on stderr
    monkeypatch.setattr(frb._progress, "_tqdm_class", lambda: None)
    frb.dmv_integrate(m, q, inertia, 0.1, 50, progress=True)
    frb.splitting.integrate(m[0], np.eye(3), inertia[0], 0.1, 30, progress=True)
    frb.splitting.integrate(m[0], np.eye(3), inertia[0], 0.1, 30, progress=True,
                            torque=lambda m, Q, t: (m, Q))
    lines = [x for x in capsys.readouterr().err.replace("\r", "\n").split("\n") if x]
    assert len(lines) == 3
    for line, start in zip(lines, ["frb.dmv_integrate DMV6: 100.0% (50/50 steps, ",
                                   "frb.splitting.integrate RKN6_14: 100.0% (30/30 steps, ",
                                   "frb.splitting.integrate RKN6_14: 100.0% (30/30 steps, "]):
        assert line.startswith(start) and line.endswith(" s)")
    with pytest.raises(TypeError, match="progress"):
        frb.integrate(m, q, inertia, 0.1, 5, method="DMV6", progress="yes")
