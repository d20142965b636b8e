"""Bad input gets a typed error whose message names what is wrong: times that are not monotone,
an unknown method or option, a rate of the wrong shape, NaN from func (with the time and the
step), too many steps."""

from __future__ import annotations

import math
import re

import numpy as np
import pytest

import pullback
from pullback.errors import DTypeError, ShapeError
from pullback.sutra import MaxStepsError, NonFiniteError, SolverError, odeint
from sutra_cases import ADAPTIVE, FIXED, tensor

T = tensor([0.0, 0.5, 1.0])
Y0 = tensor([1.0, 2.0])


def decay(t, y):
    return -y


@pytest.mark.parametrize("t, where", [([0.0, 1.0, 0.5], "t[2]=0.5"), ([1.0, 0.5, 0.7], "t[2]=0.7"),
                                      ([0.0, 0.0, 1.0], "t[1]=0.0")])
def test_times_must_be_strictly_monotone(t: list[float], where: str) -> None:
    with pytest.raises(ValueError, match=re.escape(where)) as info:
        odeint(decay, Y0, tensor(t))
    assert "strictly increasing or strictly decreasing" in str(info.value)


def test_times_must_be_a_1d_floating_tensor_without_nan() -> None:
    with pytest.raises(TypeError, match="t must be a 1-D floating-point Tensor"):
        odeint(decay, Y0, [0.0, 1.0])
    with pytest.raises(ShapeError, match=r"shape \(1, 2\)"):
        odeint(decay, Y0, tensor([[0.0, 1.0]]))
    with pytest.raises(DTypeError, match="t must be a floating-point Tensor, got int64"):
        odeint(decay, Y0, pullback.tensor([0, 1]))
    with pytest.raises(ValueError, match="NaN or Inf"):
        odeint(decay, Y0, tensor([0.0, math.nan]))


def test_y0_must_be_floating_tensors() -> None:
    with pytest.raises(DTypeError, match="y0 must be a floating-point Tensor, got int64"):
        odeint(decay, pullback.tensor([1, 2]), T)
    with pytest.raises(TypeError, match="y0 must be a Tensor or a non-empty tuple"):
        odeint(decay, [1.0, 2.0], T)


def test_unknown_method_lists_the_solvers() -> None:
    with pytest.raises(ValueError, match="unknown method 'rk45'; the solvers are adaptive_heun, bosh3"):
        odeint(decay, Y0, T, method="rk45")


@pytest.mark.parametrize("method, option", [("dopri5", "step_size"), ("rk4", "first_step"),
                                            ("euler", "norm"), ("tsit5", "max_steps")])
def test_unknown_option_names_it_and_the_valid_ones(method: str, option: str) -> None:
    with pytest.raises(ValueError, match=f"method '{method}' takes no option '{option}'") as info:
        odeint(decay, Y0, T, method=method, options={option: 1})
    valid = "first_step" if method in ADAPTIVE else "step_size"
    assert valid in str(info.value)


@pytest.mark.parametrize("method", ["dopri5", "rk4"])
def test_a_rate_of_the_wrong_shape(method: str) -> None:
    with pytest.raises(ShapeError, match=r"returned shape \(1, 2\) for y0 of shape \(2,\)"):
        odeint(lambda t, y: -y.reshape(1, 2), Y0, T, method=method, options=_fixed(method))


def test_a_tuple_state_needs_a_tuple_of_rates() -> None:
    state = (tensor([1.0]), tensor([0.0, 0.0]))
    with pytest.raises(TypeError, match="must return a tuple of 2; got a tuple of 1"):
        odeint(lambda t, s: (s[0],), state, T)
    with pytest.raises(ShapeError, match=r"shape \(1,\) for y0\[1\] of shape \(2,\)"):
        odeint(lambda t, s: (s[0], s[0]), state, T)
    with pytest.raises(TypeError, match="must return a Tensor like y0"):
        odeint(lambda t, y: np.zeros(2), Y0, T)


@pytest.mark.parametrize("method", ["dopri5", "bosh3", "rk4", "euler", "implicit_adams"])
def test_nan_from_func_names_the_time_and_the_step(method: str) -> None:
    def blows_up(t, y):
        return -y * (math.nan if float(t) > 0.3 else 1.0)

    with pytest.raises(NonFiniteError) as info:
        odeint(blows_up, Y0, T, method=method, options=_fixed(method))
    message = str(info.value)
    assert re.search(r"func returned NaN at t=0\.3\d*", message), message
    assert re.search(rf"step \d+ of {method}", message), message
    assert "the state it was given was finite" in message


def test_nan_at_the_initial_time() -> None:
    with pytest.raises(NonFiniteError, match=r"func returned NaN at t=0 \(step 0 of dopri5"):
        odeint(lambda t, y: y * math.nan, Y0, T)


def test_overflow_of_the_state_is_not_blamed_on_func() -> None:
    with pytest.raises(NonFiniteError, match="though func returned finite values"):
        odeint(lambda t, y: y * 0 + 1e308, Y0, tensor([0.0, 10.0]), method="euler")


def test_max_num_steps() -> None:
    with pytest.raises(MaxStepsError, match="max_num_steps=5 steps and reached t=0") as info:
        odeint(lambda t, y: -50 * y, Y0, T, options={"max_num_steps": 5})
    assert isinstance(info.value, SolverError) and isinstance(info.value, RuntimeError)


def test_bad_tolerances() -> None:
    with pytest.raises(ValueError, match="rtol must be a finite non-negative number, got -1"):
        odeint(decay, Y0, T, rtol=-1)
    with pytest.raises(ShapeError, match=r"atol of shape \(3,\) does not broadcast"):
        odeint(decay, Y0, T, atol=tensor([1e-6, 1e-6, 1e-6]))
    with pytest.raises(ValueError, match="a tuple rtol needs a tuple y0"):
        odeint(decay, Y0, T, rtol=(1e-6, 1e-6))


def test_bad_option_values() -> None:
    with pytest.raises(ValueError, match="step_size must be a positive number, got -0.1"):
        odeint(decay, Y0, T, method="rk4", options={"step_size": -0.1})
    with pytest.raises(ValueError, match="step_t and jump_t must not share a time"):
        odeint(decay, Y0, T, options={"step_t": tensor([0.5]), "jump_t": tensor([0.5])})
    with pytest.raises(ValueError, match="max_order must be at most 12"):
        odeint(decay, Y0, T, method="implicit_adams", options={"max_order": 13})
    with pytest.raises(ValueError, match="grid_constructor must return a grid from t"):
        odeint(decay, Y0, T, method="euler",
               options={"grid_constructor": lambda f, y, t: tensor([0.1, 1.0])})
    with pytest.raises(TypeError, match="norm"):
        odeint(decay, Y0, T, options={"norm": "max"})


def test_event_needs_two_times_and_a_callable() -> None:
    with pytest.raises(ValueError, match="t holds the start time and one more"):
        odeint(decay, Y0, T, event_fn=lambda t, y: y[0] - 0.5)
    with pytest.raises(TypeError, match="event_fn must be callable"):
        odeint(decay, Y0, tensor([0.0, 1.0]), event_fn=0.5)


def test_the_corrector_warns_when_it_does_not_converge() -> None:
    with pytest.warns(UserWarning, match="implicit_adams corrector did not converge in 1 iter"):
        odeint(lambda t, y: -20 * y, Y0, tensor([0.0, 1.0]), method="implicit_adams",
               options={"step_size": 0.05, "max_iters": 1})


def _fixed(method: str) -> dict:
    return {"step_size": 0.05} if method in FIXED else {}
