"""Hostile inputs around the core, each class with its neighbours: the right answer against an
independent reference (the same body alone, the scaling law of the free motion) or a clear
exception of the type the input rule says, naming the argument."""
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
