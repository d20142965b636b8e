"""Every solver against closed-form solutions: exponential decay, a linear system (the matrix
exponential, from PyTorch), the harmonic oscillator as a tuple state, time-dependent dynamics
and time running backwards, in float64 and float32."""

from __future__ import annotations

import math

import numpy as np
import pytest

import pullback
from pullback.sutra import odeint
from sutra_cases import METHODS, accurate, allowed_error, tensor


@pytest.mark.parametrize("method", METHODS)
def test_exponential_decay(method: str) -> None:
    t = np.linspace(0.0, 2.0, 6)
    y = odeint(lambda t, y: -1.5 * y, tensor([1.0, -2.0]), tensor(t), **accurate(method))
    assert y.shape == (6, 2)
    np.testing.assert_allclose(y.numpy(), np.exp(-1.5 * t)[:, None] * [1.0, -2.0], atol=allowed_error(method))


@pytest.mark.parametrize("method", METHODS)
def test_linear_system_matches_the_matrix_exponential(method: str) -> None:
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(0)
    u = rng.standard_normal((4, 4)) * 0.5
    a = u - u.T - 0.2 * np.eye(4)  # a damped rotation
    y0 = rng.standard_normal(4)
    t = np.linspace(0.0, 1.5, 4)
    matrix = tensor(a)
    y = odeint(lambda t, y: matrix @ y, tensor(y0), tensor(t), **accurate(method))
    exact = [torch.linalg.matrix_exp(torch.tensor(a * s)).numpy() @ y0 for s in t]
    np.testing.assert_allclose(y.numpy(), np.stack(exact), atol=allowed_error(method))


@pytest.mark.parametrize("method", METHODS)
def test_harmonic_oscillator_as_a_tuple_state(method: str) -> None:
    omega = 2.0
    t = np.linspace(0.0, 3.0, 5)
    x, v = odeint(lambda t, s: (s[1], -omega ** 2 * s[0]), (tensor([1.0]), tensor([0.0])),
                  tensor(t), **accurate(method))
    assert x.shape == v.shape == (5, 1)
    np.testing.assert_allclose(x.numpy()[:, 0], np.cos(omega * t), atol=allowed_error(method))
    np.testing.assert_allclose(v.numpy()[:, 0], -omega * np.sin(omega * t), atol=allowed_error(method))


@pytest.mark.parametrize("method", METHODS)
def test_time_dependent_dynamics_backwards_in_time(method: str) -> None:
    # y' = -2 t y, y = exp(-t^2); from t = 1 back to t = -1 (through the peak at 0).
    t = np.linspace(1.0, -1.0, 5)
    y = odeint(lambda t, y: -2 * t * y, tensor([math.exp(-1.0)]), tensor(t), **accurate(method))
    np.testing.assert_allclose(y.numpy()[:, 0], np.exp(-t ** 2), atol=allowed_error(method))


@pytest.mark.parametrize("method", ["dopri5", "tsit5", "rk4"])
def test_float32_state_stays_float32(method: str) -> None:
    y0 = pullback.tensor([1.0, 0.5], dtype=pullback.float32)
    seen = []

    def func(t, y):
        seen.append(t.dtype)
        return -y

    options = {"step_size": 0.05} if method == "rk4" else None
    y = odeint(func, y0, pullback.tensor([0.0, 1.0]), method=method, options=options,
               rtol=1e-5, atol=1e-6)
    assert y.dtype == pullback.float32 and set(seen) == {pullback.float32}
    np.testing.assert_allclose(y.numpy()[1], np.exp(-1.0) * np.array([1.0, 0.5]), rtol=1e-4)
