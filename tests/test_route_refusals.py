"""Refusals and edge cases of the routes (frb/_run.py) that the other tests do not reach: each
refusal is the documented exception naming the argument, an empty batch the documented shapes."""
from __future__ import annotations

import numpy as np
import pytest

import frb
from frb.derivatives import flow_jacobian

M = np.array([[0.3, 0.5, 0.8], [-0.2, 0.9, 0.1]])
QUAT = np.tile([1.0, 0, 0, 0], (2, 1))
I = np.array([1.0, 2.0, 3.0])


def test_wheel_law_that_is_not_a_law_is_refused():
    wheels = frb.wheels.Wheels(np.eye(3), np.zeros(3))
    with pytest.raises(TypeError,
                       match=r"^wheel_law must be None, a law of frb.wheel_laws or a callable"):
        frb.integrate(M[0], QUAT[0], I, 0.1, 2, method="RK4", wheels=wheels, wheel_law=5)


def test_user_wheel_law_returning_complex_numbers_is_refused():
    wheels = frb.wheels.Wheels(np.eye(3), np.zeros(3))

    def law(t, Q, m, h):
        return np.zeros((len(m), 3), dtype=complex)

    with pytest.raises(TypeError, match=r"^wheel_law law \(method RK4, step 1\) must return "
                                         r"real numbers, got dtype complex128"):
        frb.integrate(M, QUAT, I, 0.1, 2, method="RK4", wheels=wheels, wheel_law=law)


@pytest.mark.parametrize("attitude, natt", [(np.zeros((0, 4)), 4), (np.zeros((0, 3, 3)), 9)])
def test_flow_jacobian_of_an_empty_batch(attitude, natt):
    m1, a1, jac = flow_jacobian(np.zeros((0, 3)), attitude, 0.1, I)
    assert m1.shape == (0, 3) and a1.shape == attitude.shape
    assert jac.state.shape == (0, 6, 6) and jac.h.shape == (0, 6)
    assert jac.inertia.shape == (0, 6, 3)


_Z3, _Z4, _Z33 = np.zeros((0, 3)), np.zeros((0, 4)), np.zeros((0, 3, 3))


@pytest.mark.parametrize("call, message", [
    (lambda: frb.quat_step(_Z3, _Z4, np.nan, I), "h contains non-finite values"),
    (lambda: frb.quat_step(_Z3, _Z4, 0.1, [-1.0, 2.0, 3.0]), "inertia must contain strictly positive"),
    (lambda: frb.frb_step(_Z3, _Z33, np.inf, I), "h contains non-finite values"),
    (lambda: frb.dmv_step(_Z3, _Z4, np.nan, I), "h contains non-finite values"),
    (lambda: frb.dmv_integrate(_Z3, _Z4, I, np.nan, 3), "h contains non-finite values"),
    (lambda: frb.integrate(_Z3, _Z4, [1.0, 0.0, 2.0], 0.1, 3, method="EXACT"), "inertia must contain strictly positive"),
    (lambda: flow_jacobian(_Z3, _Z4, np.nan, I), "h contains non-finite values"),
    (lambda: frb.quat_step(_Z3, _Z4, np.nan, I, jacobian=True), "h contains non-finite values"),
])
def test_empty_batches_check_their_shared_arguments(call, message):
    with pytest.raises(ValueError, match=message) as info:
        call()
    assert "body" not in str(info.value)


@pytest.mark.parametrize("method", ["STRANG", "YOSHIDA4", "RKN6_14"])
def test_splitting_with_a_rotor_whose_state_overflows_stops(method):
    # a heavy top's kick at h = 1e12 grows |m| until a flow of the step turns the body by more
    # than the phase limit: that flow leaves the state non-finite, the gyrostat flows after it
    # in the same step must pass it on (not step it), and the run stops naming the step
    torque = frb.torques.rotor([0.3, 1.0, 0.0]) + frb.torques.heavy_top(1.0, [0.0, 0.0, 1.0])
    with pytest.raises(frb.IntegrationError, match=r"non-finite at step 1, body 0"):
        frb.integrate(M[:1], QUAT[:1], I, 1e12, 1, method=method, torque=torque)


@pytest.mark.parametrize("h, error, message", [
    (-1.0, ValueError, r"^rotor h \(the rotor's angular momentum\) must have shape \(3,\) or \(N, 3\)"),
    ([np.nan, 0, 0], ValueError, r"^rotor h must be finite"),
    ("x", TypeError, r"^rotor h must be an array of real numbers")])
def test_rotor_momentum_is_named_apart_from_the_step(h, error, message):
    with pytest.raises(error, match=message):
        frb.torques.rotor(h)


@pytest.mark.parametrize("method", ["YOSHIDA4", "RKN6_14"])
def test_subnormal_step_of_a_splitting_raises_no_numpy_error(method):
    # a step of 1e-320 leaves the state unchanged (to rounding), also when the caller turned
    # numpy's floating-point warnings into errors
    wheels = frb.wheels.Wheels(np.eye(3), np.zeros(3))
    with np.errstate(all="raise"):
        run = frb.integrate(M, QUAT, I, 1e-320, 2, method=method, wheels=wheels)
    np.testing.assert_allclose(run.m[-1], M, rtol=1e-15, atol=0)


@pytest.mark.parametrize("part", [
    frb.torques.rotor(np.ones((4, 3))),
    frb.torques.heavy_top(1.0, np.ones((4, 3))),
    frb.torques.rotor(np.ones((4, 3))) + frb.torques.heavy_top(1.0, [0.0, 0.0, 1.0]),
    frb.torques.constant_field([0.0, 0.0, 1.0]),
    frb.wheels.Wheels(np.eye(3), np.zeros((4, 3))),
    frb.wheel_laws.quaternion_feedback(np.tile([1.0, 0, 0, 0], (4, 1)), 1.0, 1.0)])
@pytest.mark.parametrize("start, stop, error, message", [
    (0.5, 2, TypeError, r"^start must be an integer, got 0.5"),
    (0, None, TypeError, r"^stop must be an integer, got None"),
    (-1, 2, ValueError, r"^start must be an integer in 0\.\.2147483647, got -1"),
    (3, 1, ValueError, r"^stop must be >= start, got start=3, stop=1")])
def test_part_of_a_batch_is_named_by_checked_integers(part, start, stop, error, message):
    with pytest.raises(error, match=message):
        part.bodies(start, stop)


def test_part_of_a_batch_takes_those_bodies_parameters():
    h = np.arange(12.0).reshape(4, 3)
    np.testing.assert_array_equal(frb.torques.rotor(h).bodies(np.int64(1), 3).h, h[1:3])


def test_a_step_per_body_of_another_count_says_which_shapes_it_takes():
    with pytest.raises(ValueError, match=r"h must be a scalar, or have shape \(1,\) or \(2,\) "
                                         r"\(one step for all or one a body\), got shape \(3,\)"):
        frb.quat_step(np.ones((2, 3)), np.tile([1.0, 0, 0, 0], (2, 1)), np.array([0.1, 0.2, 0.3]),
                      I)
