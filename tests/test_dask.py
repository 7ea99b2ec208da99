"""frb.dask on a LocalCluster of two worker processes: the results of the in-process functions
bit for bit (one cluster for the module: its start-up takes a few seconds)."""
import logging

import numpy as np
import pytest

distributed = pytest.importorskip("dask.distributed",
                                  reason="dask[distributed] (extra 'dask') not installed")
import dask  # noqa: E402
import dask.array as da  # noqa: E402

import frb  # noqa: E402
import frb.dask  # noqa: E402
from frb.torques import attitude_control, gravity_gradient, heavy_top  # noqa: E402

N, CHUNK = 1000, 250


@pytest.fixture(scope="module")
def client():
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                  dashboard_address=None, silence_logs=logging.ERROR) as cluster:
        with distributed.Client(cluster) as c:
            yield c


@pytest.fixture(scope="module")
def batch():
    rng = np.random.default_rng(11)
    m = rng.normal(size=(N, 3))
    q = rng.normal(size=(N, 4))
    q /= np.linalg.norm(q, axis=1, keepdims=True)
    inertia = rng.uniform(0.5, 2.0, size=(N, 3))
    h = rng.uniform(-0.2, 0.2, N)
    return m, q, frb.quat_to_matrix(q), inertia, h


def test_steps_on_the_cluster_equal_in_process(client, batch):
    m, q, Q, inertia, h = batch
    dm = da.from_array(m, chunks=(CHUNK, 3))
    lazy = frb.dask.frb_step(dm, Q, h, inertia) + frb.dask.quat_step(dm, q, 0.1, inertia[0],
                                                                   quadrature=3)
    persisted = client.persist(list(lazy))
    distributed.wait(persisted)
    # the chunks were spread over both worker processes
    holders = set()
    for workers in client.who_has(distributed.futures_of(persisted)).values():
        holders.update(workers)
    assert len(holders) == 2
    got = dask.compute(*persisted)
    want = frb.frb_step(m, Q, h, inertia) + frb.quat_step(m, q, 0.1, inertia[0], quadrature=3)
    assert all(g.shape == w.shape and np.array_equal(g, w) for g, w in zip(got, want))


def test_integrate_on_the_cluster_equals_in_process(client, batch):
    m, q, Q, inertia, _ = batch
    dm = da.from_array(m, chunks=(CHUNK, 3))
    lazy = frb.dask.integrate(dm, da.from_array(Q, chunks=(100, 3, 3)), inertia, 0.05, 7,
                              method="DMV6", torque=gravity_gradient(0.3), save_every=3)
    assert lazy.m.shape == (4, N, 3) and lazy.q.chunks[1] == dm.chunks[0]
    want = frb.integrate(m, Q, inertia, 0.05, 7, method="DMV6", torque=gravity_gradient(0.3),
                         save_every=3)
    got = lazy.compute()
    assert got.form == "matrix" and np.array_equal(got.t, want.t)
    assert np.array_equal(got.m, want.m) and np.array_equal(got.q, want.q)
    assert np.array_equal(lazy.Q.compute(), want.Q)
    # the final states only, a shared inertia and quaternions
    final = frb.dask.integrate(dm, q, inertia[0], 0.05, 7, method="RKN6_14",
                               torque=heavy_top(1.0, [0.0, 0.1, 0.9]), save_every=None)
    want = frb.integrate(m, q, inertia[0], 0.05, 7, method="RKN6_14",
                         torque=heavy_top(1.0, [0.0, 0.1, 0.9]), save_every=None)
    m1, q1 = dask.compute(final.m[-1], final.attitude[-1])
    assert np.array_equal(m1, want.m[-1]) and np.array_equal(q1, want.q[-1])


def test_sensitivities_on_the_cluster_equal_in_process(client, batch):
    """sensitivities= through the chunks: every part the whole batch's, bit for bit, for a
    torque with per-body parameters too (sliced with the bodies)."""
    m, q, _, inertia, _ = batch
    dm, dq = da.from_array(m[:60], chunks=(25, 3)), da.from_array(q[:60], chunks=(25, 4))
    per_body = attitude_control(q[60:120], 0.5, 0.3)     # a reference quaternion per body
    for kw in (dict(method="EXACT", sensitivities=True, save_every=2),
               dict(method="STRANG", torque=per_body, sensitivities=("state", "h", "inertia", "torque")),
               dict(method="RK4", torque=heavy_top(1.0, [0.0, 0.1, 0.9]), sensitivities="h",
                    save_every=None)):
        lazy = frb.dask.integrate(dm, dq, inertia[:60], 0.05, 5, **kw)
        want = frb.integrate(m[:60], q[:60], inertia[:60], 0.05, 5, **kw)
        got = lazy.compute()
        for part in ("state", "h", "inertia", "torque"):
            a, b = getattr(got.sensitivities, part), getattr(want.sensitivities, part)
            assert (a is None) == (b is None), part
            if b is not None:
                assert a.shape == b.shape and np.array_equal(a, b), part
    empty = frb.dask.integrate(dm[:0], dq[:0], inertia[0], 0.05, 5, method="EXACT",
                               sensitivities=True).compute()
    assert empty.sensitivity.shape == (6, 0, 6, 6)


def test_errors_name_the_body_in_the_whole_batch(client, batch):
    m, q, Q, inertia, _ = batch
    with pytest.raises(ValueError, match="method must be one of"):
        frb.dask.integrate(da.from_array(m, chunks=CHUNK), q, inertia, 0.1, 3, method="nope")
    bad = m.copy()
    bad[610] = np.nan
    with pytest.raises(ValueError, match=r"\(body 610\).*bodies 500\.\.749"):
        frb.dask.quat_step(da.from_array(bad, chunks=(CHUNK, 3)), q, 0.1, inertia)[0].compute()
    fast = m.copy()
    fast[777] *= 100.0     # h |omega| far beyond the DMV equation's limit
    with pytest.raises(frb.IntegrationError, match="body 777") as info:
        frb.dask.integrate(da.from_array(fast, chunks=(CHUNK, 3)), q, inertia, 0.05, 2,
                           method="DMV2").compute()
    assert info.value.body == 777 and info.value.step == 1
