"""Every solver against torchdiffeq (the reference) on the same problem with the same tolerances
and options: forward and backward in time, tuple states with per-component tolerances, float32,
and each option that changes what the solver does (first_step, the step-size factors, step_t,
jump_t, min/max_step, a custom norm, perturb, cubic interpolation, grid_constructor).

The solvers run torchdiffeq's algorithms, so the solutions agree to rounding, far inside the
tolerances: 1e-10 here, with values of order one. Two exceptions:

- dopri8's error estimate is a sum of fourteen terms that cancel to the last few digits, so
  rounding alone moves its step sizes a little; its solutions agree to the tolerance.
- bosh3 and adaptive_heun take the same steps, but interpolate between them with the cubic
  Hermite polynomial, where torchdiffeq's quartic goes through a mid-step estimate of too low an
  order: at output times inside a step they must be at least as accurate as torchdiffeq.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import pullback
from pullback.sutra import odeint
from sutra_cases import (FIXED, METHODS, OWN_DENSE_OUTPUT, install_torch_tsit5, parity_kwargs,
                         tensor)

torch = pytest.importorskip("torch")
torchdiffeq = pytest.importorskip("torchdiffeq")

# At the steps used here the Adams corrector does not always converge within its four
# iterations: both libraries then warn and drop the oldest rate (which the parity checks).
pytestmark = pytest.mark.filterwarnings("ignore:.*did not converge")

A = np.array([[-0.1, 2.0], [-2.0, -0.1]])
Y0 = np.array([[2.0, 0.0], [0.5, -1.0]])


@pytest.fixture(autouse=True)
def _torch_tsit5(monkeypatch: pytest.MonkeyPatch) -> None:
    install_torch_tsit5(torch, monkeypatch)


def agreement(method: str) -> float:
    return 1e-6 if method == "dopri8" else 1e-10


def ours_and_theirs(t: np.ndarray, method: str, dtype: str = "float64", **kwargs: Any):
    a_pb, a_t = pullback.tensor(A, dtype=dtype), torch.tensor(A, dtype=getattr(torch, dtype))

    def f_pb(t, y):
        return (y @ a_pb) * (1 + 0.5 * t.sin())

    def f_t(t, y):
        return (y @ a_t) * (1 + 0.5 * torch.sin(t))

    ours = odeint(f_pb, pullback.tensor(Y0, dtype=dtype), pullback.tensor(t, dtype=dtype),
                  method=method, **kwargs)
    theirs = torchdiffeq.odeint(f_t, torch.tensor(Y0, dtype=getattr(torch, dtype)),
                                torch.tensor(t, dtype=getattr(torch, dtype)), method=method,
                                **_torch_kwargs(kwargs))
    return ours.numpy(), theirs.numpy()


def _torch_kwargs(kwargs: dict[str, Any]) -> dict[str, Any]:
    out = dict(kwargs)
    if out.get("options") is not None:
        out["options"] = {k: torch.tensor(v.numpy()) if isinstance(v, pullback.Tensor) else v
                          for k, v in out["options"].items()}
    return out


def check_parity(t: np.ndarray, method: str) -> None:
    ours, theirs = ours_and_theirs(t, method, **parity_kwargs(method))
    if method not in OWN_DENSE_OUTPUT:
        np.testing.assert_allclose(ours, theirs, rtol=0, atol=agreement(method))
        return
    truth, _ = ours_and_theirs(t, "dopri5", rtol=1e-12, atol=1e-14)
    ours_error, theirs_error = np.abs(ours - truth).max(), np.abs(theirs - truth).max()
    assert ours_error <= theirs_error * 1.01 + 1e-12, (ours_error, theirs_error)
    np.testing.assert_allclose(ours, theirs, rtol=0, atol=2 * theirs_error + 1e-12)


@pytest.mark.parametrize("method", METHODS)
def test_forward_in_time(method: str) -> None:
    check_parity(np.linspace(0.0, 4.0, 9), method)


@pytest.mark.parametrize("method", METHODS)
def test_backward_in_time(method: str) -> None:
    check_parity(np.linspace(1.0, -2.0, 5), method)


@pytest.mark.parametrize("method", ["dopri5", "tsit5", "fehlberg2", "rk4"])
def test_float32(method: str) -> None:
    ours, theirs = ours_and_theirs(np.linspace(0.0, 2.0, 5), method, dtype="float32",
                                   rtol=1e-5, atol=1e-6,
                                   options=parity_kwargs(method).get("options"))
    assert ours.dtype == np.float32
    np.testing.assert_allclose(ours, theirs, rtol=0, atol=1e-5)


@pytest.mark.parametrize("method", ["dopri5", "fehlberg2", "implicit_adams"])
def test_tuple_state_with_per_component_tolerances(method: str) -> None:
    t = np.linspace(0.0, 3.0, 4)
    options = {"step_size": 0.05} if method in FIXED else {}

    def f_pb(t, s):
        x, v = s
        return v, -4.0 * x - 0.3 * v

    def f_t(t, s):
        x, v = s
        return v, -4.0 * x - 0.3 * v

    x0, v0 = np.array([[1.0], [0.5]]), np.array([[0.0], [1.0]])
    ours = odeint(f_pb, (tensor(x0), tensor(v0)), tensor(t), method=method, options=options,
                  rtol=(1e-6, 1e-5), atol=(1e-8, tensor([1e-7, 1e-6])))
    theirs = torchdiffeq.odeint(f_t, (torch.tensor(x0), torch.tensor(v0)), torch.tensor(t),
                                method=method, options=options, rtol=(1e-6, 1e-5),
                                atol=(1e-8, torch.tensor([1e-7, 1e-6], dtype=torch.float64)))
    assert [o.shape for o in ours] == [(4, 2, 1), (4, 2, 1)]
    for o, r in zip(ours, theirs):
        np.testing.assert_allclose(o.numpy(), r.numpy(), rtol=0, atol=1e-10)


ADAPTIVE_OPTIONS = {
    "first_step": {"first_step": 0.01},
    "step_factors": {"safety": 0.8, "ifactor": 3.0, "dfactor": 0.5},
    "min_and_max_step": {"max_step": 0.05, "min_step": 1e-3},
    "step_t": {"step_t": [0.3, 1.7, 2.5]},
    "jump_t": {"jump_t": [0.5, 1.2]},
    "step_t_and_jump_t": {"step_t": [0.7], "jump_t": [1.5]},
}


@pytest.mark.parametrize("name", sorted(ADAPTIVE_OPTIONS))
@pytest.mark.parametrize("reverse", [False, True], ids=["forward", "backward"])
def test_adaptive_options(name: str, reverse: bool) -> None:
    options = {k: tensor(v) if isinstance(v, list) else v for k, v in ADAPTIVE_OPTIONS[name].items()}
    if reverse:
        options = {k: -v if isinstance(v, pullback.Tensor) else v for k, v in options.items()}
    t = np.linspace(-3.0, 0.0, 4) if reverse else np.linspace(0.0, 3.0, 4)
    ours, theirs = ours_and_theirs(t[::-1].copy() if reverse else t, "dopri5", rtol=1e-6,
                                   atol=1e-8, options=options)
    np.testing.assert_allclose(ours, theirs, rtol=0, atol=1e-10)


def test_jump_t_at_a_discontinuity_of_func() -> None:
    # dy/dt switches sign at t = 1: the solver steps to 1 and re-evaluates just after it.
    def f_pb(t, y):
        return y * (1.0 if float(t) < 1.0 else -1.0)

    def f_t(t, y):
        return y * (1.0 if float(t) < 1.0 else -1.0)

    t = np.linspace(0.0, 2.0, 5)
    ours = odeint(f_pb, tensor([1.0]), tensor(t), rtol=1e-8, atol=1e-10,
                  options={"jump_t": tensor([1.0])})
    theirs = torchdiffeq.odeint(f_t, torch.tensor([1.0], dtype=torch.float64), torch.tensor(t),
                                rtol=1e-8, atol=1e-10,
                                options={"jump_t": torch.tensor([1.0], dtype=torch.float64)})
    np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=0, atol=1e-12)
    np.testing.assert_allclose(ours.numpy()[:, 0], np.exp(1 - np.abs(1 - t)), rtol=1e-6)


def test_custom_norm() -> None:
    ours, theirs = ours_and_theirs(np.linspace(0.0, 3.0, 4), "dopri5", rtol=1e-6, atol=1e-8,
                                   options={"norm": lambda y: y.abs().max()})
    ref, _ = ours_and_theirs(np.linspace(0.0, 3.0, 4), "dopri5", rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(ours, theirs, rtol=0, atol=1e-10)
    assert np.abs(ours - ref).max() > 1e-9  # the norm changed the steps


@pytest.mark.parametrize("method", ["euler", "rk4", "implicit_adams"])
@pytest.mark.parametrize("options", [{"perturb": True}, {"interp": "cubic"}],
                         ids=["perturb", "cubic"])
def test_fixed_grid_options(method: str, options: dict[str, Any]) -> None:
    ours, theirs = ours_and_theirs(np.linspace(0.0, 2.0, 7), method,
                                   options={"step_size": 0.15, **options})
    np.testing.assert_allclose(ours, theirs, rtol=0, atol=1e-10)


def test_grid_constructor() -> None:
    def grid_pb(func, y0, t):
        return pullback.tensor(np.linspace(float(t[0]), float(t[-1]), 23), dtype=pullback.float64)

    def grid_t(func, y0, t):
        return torch.linspace(float(t[0]), float(t[-1]), 23, dtype=torch.float64)

    t = np.linspace(0.0, 2.0, 5)
    ours = odeint(lambda t, y: -y * t, tensor([1.0]), tensor(t), method="midpoint",
                  options={"grid_constructor": grid_pb})
    theirs = torchdiffeq.odeint(lambda t, y: -y * t, torch.tensor([1.0], dtype=torch.float64),
                                torch.tensor(t), method="midpoint",
                                options={"grid_constructor": grid_t})
    np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=0, atol=1e-12)
