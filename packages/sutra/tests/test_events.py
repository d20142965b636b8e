"""Events: odeint with event_fn stops where it crosses zero, and odeint_event's gradients flow
through the event time. Checked against closed forms (a ball thrown up, hitting the ground) and
against torchdiffeq."""

from __future__ import annotations

import numpy as np
import pytest

import pullback
from pullback.sutra import odeint, odeint_adjoint, odeint_event
from sutra_cases import tensor

G = 9.81


def ball(t, state):
    height, velocity = state
    return velocity, velocity * 0 - G


def ground(t, state):
    return state[0]


def landing(h: float, v: float) -> tuple[float, float, float]:
    """Time to hit the ground from height h at upward speed v, and its derivatives."""
    root = np.sqrt(v * v + 2 * G * h)
    return (v + root) / G, 1 / root, (1 + v / root) / G


@pytest.mark.parametrize("method, options, tol", [("dopri5", {}, 1e-8), ("tsit5", {}, 1e-8),
                                                   ("bosh3", {}, 1e-6),
                                                   ("rk4", {"step_size": 0.01}, 1e-4)])
@pytest.mark.parametrize("interface", ["odeint", "odeint_adjoint"])
def test_event_time_and_its_gradient(method: str, options: dict, tol: float, interface: str) -> None:
    h, v = tensor([10.0], True), tensor([1.0], True)
    kwargs = {"odeint_interface": odeint_adjoint, "adjoint_params": ()} \
        if interface == "odeint_adjoint" else {}
    t_event, (x, u) = odeint_event(ball, (h, v), tensor(0.0), event_fn=ground, method=method,
                                   options=options, **kwargs)
    time, dt_dh, dt_dv = landing(10.0, 1.0)
    assert x.shape == (2, 1)
    np.testing.assert_allclose(float(t_event), time, atol=tol)
    np.testing.assert_allclose(float(x[-1, 0]), 0.0, atol=tol)
    # L = t_event + speed at landing (v - g t): both reach h and v through the event time.
    (t_event + u[-1].sum()).backward()
    np.testing.assert_allclose(float(h.grad[0]), dt_dh * (1 - G), atol=tol * 10)
    np.testing.assert_allclose(float(v.grad[0]), dt_dv * (1 - G) + 1, atol=tol * 10)


def test_gradient_of_the_start_time() -> None:
    # Autonomous dynamics: starting later lands later by the same amount.
    t0 = tensor(0.5, True)
    t_event, _ = odeint_event(ball, (tensor([10.0]), tensor([1.0])), t0, event_fn=ground)
    t_event.backward()
    np.testing.assert_allclose(float(t0.grad), 1.0, atol=1e-8)


def test_reverse_time_and_several_event_functions() -> None:
    # Back in time from the top of the throw: the first of two events (x = 5, x = 2) wins.
    t_event, (x, _) = odeint_event(ball, (tensor([10.0]), tensor([0.0])), tensor(0.0),
                                   event_fn=_two_heights, reverse_time=True, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(float(t_event), -np.sqrt(2 * 5.0 / G), atol=1e-7)
    np.testing.assert_allclose(float(x[-1, 0]), 5.0, atol=1e-7)


def _two_heights(t, state):
    return pullback.cat([state[0] - 5.0, state[0] - 2.0])


def test_odeint_with_event_fn_matches_torchdiffeq() -> None:
    torch = pytest.importorskip("torch")
    torchdiffeq = pytest.importorskip("torchdiffeq")
    ours_t, ours_y = odeint(lambda t, y: -y * (1 + t), tensor([2.0]), tensor([0.0, 1.0]),
                            event_fn=lambda t, y: y[0] - 1.0)
    theirs_t, theirs_y = torchdiffeq.odeint(
        lambda t, y: -y * (1 + t), torch.tensor([2.0], dtype=torch.float64),
        torch.tensor([0.0, 1.0], dtype=torch.float64), event_fn=lambda t, y: y[0] - 1.0)
    np.testing.assert_allclose(float(ours_t), float(theirs_t), atol=1e-12)
    np.testing.assert_allclose(ours_y.numpy(), theirs_y.numpy(), atol=1e-12)
