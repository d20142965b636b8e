"""Bad input to optimizers and schedulers: typed errors whose messages name the bad value.
The optimizer cases are generated from the registry and each constructor's signature."""

from __future__ import annotations

import inspect

import numpy as np
import pytest

import pullback
from pullback.errors import AutogradError, DTypeError, RegistryError, ShapeError
from pullback.optim import (
    OPTIMIZERS, HyperparameterError, OptimizerError, OptimizerTypeError, ParamGroupError,
)
from pullback.optim import lr_scheduler as L


def weights(n: int = 2) -> list[pullback.Tensor]:
    return [pullback.zeros(3, requires_grad=True) for _ in range(n)]


def with_betas() -> list[str]:
    return sorted(n for n, c in OPTIMIZERS.items()
                  if "betas" in inspect.signature(c.__init__).parameters)


def non_negative_options(name: str) -> list[str]:
    return [o for o in ("lr", "eps", "weight_decay", "momentum", "alpha", "lr_decay",
                        "momentum_decay", "initial_accumulator_value")
            if o in inspect.signature(OPTIMIZERS[name].__init__).parameters]


def test_errors_are_value_and_type_errors_of_pullback():
    assert issubclass(HyperparameterError, ValueError)
    assert issubclass(ParamGroupError, ValueError)
    assert issubclass(OptimizerTypeError, TypeError)
    assert issubclass(OptimizerError, pullback.PullbackError)


@pytest.mark.parametrize("name", sorted(OPTIMIZERS))
@pytest.mark.parametrize("bad", [-0.1, float("nan")])
def test_negative_or_nan_settings(name: str, bad: float):
    for option in non_negative_options(name):
        with pytest.raises(HyperparameterError, match=f"invalid {option}: {bad}"):
            OPTIMIZERS[name](weights(), **{option: bad})


@pytest.mark.parametrize("name", sorted(OPTIMIZERS))
def test_non_number_lr(name: str):
    with pytest.raises(HyperparameterError, match="lr must be a real number, got '0.1'"):
        OPTIMIZERS[name](weights(), lr="0.1")


@pytest.mark.parametrize("name", with_betas())
@pytest.mark.parametrize("betas,index,value", [((1.0, 0.999), 0, "1.0"), ((0.9, -0.1), 1, "-0.1"),
                                               ((0.9, 1.5), 1, "1.5")])
def test_betas_outside_zero_one(name: str, betas, index, value):
    with pytest.raises(HyperparameterError, match=rf"invalid betas\[{index}\]: {value}"):
        OPTIMIZERS[name](weights(), betas=betas)


def test_betas_not_a_pair():
    with pytest.raises(HyperparameterError, match=r"pair of numbers, got \(0.9,\)"):
        OPTIMIZERS["adam"](weights(), betas=(0.9,))


def test_group_options_are_checked_too():
    with pytest.raises(HyperparameterError, match="invalid lr: -1"):
        OPTIMIZERS["sgd"]([{"params": weights()}, {"params": weights(), "lr": -1}])


@pytest.mark.parametrize("name", sorted(OPTIMIZERS))
def test_a_parameter_listed_twice(name: str):
    w = weights()
    with pytest.raises(ParamGroupError, match=r"parameter 2 of param group 0 \(shape \(3,\)\) is "
                       r"listed twice: it is also parameter 0 of param group 0"):
        OPTIMIZERS[name]([w[0], w[1], w[0]])


def test_a_parameter_in_two_groups():
    w = weights()
    opt = OPTIMIZERS["adam"]([w[0]])
    with pytest.raises(ParamGroupError, match="parameter 1 of param group 1 .* also parameter 0 "
                       "of param group 0"):
        opt.add_param_group({"params": [w[1], w[0]]})
    assert len(opt.param_groups) == 1  # nothing half-added


@pytest.mark.parametrize("name", sorted(OPTIMIZERS))
def test_an_empty_parameter_list(name: str):
    with pytest.raises(ParamGroupError, match="empty parameter list"):
        OPTIMIZERS[name]([])
    with pytest.raises(ParamGroupError, match="empty parameter list"):
        OPTIMIZERS[name](iter(()))


def test_an_empty_group():
    with pytest.raises(ParamGroupError, match="param group 1 has an empty parameter list"):
        OPTIMIZERS["sgd"]([{"params": weights()}, {"params": []}])


@pytest.mark.parametrize("name", sorted(OPTIMIZERS))
def test_a_non_floating_parameter(name: str):
    ints = pullback.tensor([1, 2, 3])
    with pytest.raises(OptimizerTypeError, match="parameter 1 of param group 0 has dtype int64; "
                       "only floating point tensors"):
        OPTIMIZERS[name]([weights(1)[0], ints])


@pytest.mark.parametrize("name", sorted(OPTIMIZERS))
def test_a_non_leaf_parameter(name: str):
    w = weights(1)[0]
    with pytest.raises(ParamGroupError, match=r"parameter 0 of param group 0 \(shape \(3,\)\) is "
                       "not a leaf tensor: it was computed by op 'mul'"):
        OPTIMIZERS[name]([w * 2])


def test_things_that_are_not_parameters():
    with pytest.raises(OptimizerTypeError, match="got a single Tensor of shape"):
        OPTIMIZERS["sgd"](weights(1)[0])
    with pytest.raises(OptimizerTypeError, match="not a set"):
        OPTIMIZERS["sgd"](set(weights()))
    with pytest.raises(OptimizerTypeError, match="parameter 0 of param group 0 is ndarray"):
        OPTIMIZERS["sgd"]([np.zeros(3)])
    with pytest.raises(OptimizerTypeError, match="got int"):
        OPTIMIZERS["sgd"](3)


def test_unknown_optimizer_name_lists_the_known():
    with pytest.raises(RegistryError, match="no optimizer named 'adamm'; known: adadelta, adagrad, adam,"):
        OPTIMIZERS["adamm"]


def test_gradient_of_another_shape():
    w = weights(1)[0]
    w.grad = pullback.zeros(1)
    with pytest.raises(ShapeError, match=r"shape \(3,\) has a gradient of shape \(1,\)"):
        OPTIMIZERS["sgd"]([w], lr=0.1).step()


def test_a_step_invalidates_graphs_that_saved_the_old_weights():
    w = pullback.tensor([1.0, 2.0], requires_grad=True)
    opt = OPTIMIZERS["sgd"]([w], lr=0.1)
    (w * w).sum().backward()
    loss = (w * w).sum()  # saves w
    opt.step()
    with pytest.raises(AutogradError, match="modified in place"):
        loss.backward()


def test_sgd_nesterov_needs_momentum():
    with pytest.raises(HyperparameterError, match="Nesterov momentum needs momentum > 0 and "
                       "dampening == 0, got momentum=0.0, dampening=0.0"):
        OPTIMIZERS["sgd"](weights(), nesterov=True)


# -- schedulers ---------------------------------------------------------------------------

def test_scheduler_of_something_else():
    with pytest.raises(OptimizerTypeError, match="StepLR needs a pullback.optim Optimizer, got list"):
        L.StepLR([], step_size=3)


def sgd():
    return OPTIMIZERS["sgd"](weights(), lr=0.1, momentum=0.9)


@pytest.mark.parametrize("make,message", [
    (lambda o: L.StepLR(o, step_size=0), "step_size must be a positive integer, got 0"),
    (lambda o: L.CosineAnnealingLR(o, T_max=0), "T_max must be a positive integer, got 0"),
    (lambda o: L.LinearLR(o, start_factor=0.0), r"start_factor must be in \(0, 1\], got 0.0"),
    (lambda o: L.LinearLR(o, end_factor=1.5), r"end_factor must be in \[0, 1\], got 1.5"),
    (lambda o: L.LambdaLR(o, [abs, abs]), "lr_lambda has 2 values but the optimizer has 1 param"),
    (lambda o: L.LambdaLR(o, 0.5), "lr_lambda must be callable, got 0.5"),
    (lambda o: L.OneCycleLR(o, max_lr=1.0), "needs total_steps, or epochs and steps_per_epoch"),
    (lambda o: L.OneCycleLR(o, max_lr=1.0, total_steps=0), "total_steps must be a positive"),
    (lambda o: L.OneCycleLR(o, max_lr=1.0, total_steps=10, pct_start=1.5), "pct_start"),
    (lambda o: L.OneCycleLR(o, max_lr=1.0, total_steps=10, anneal_strategy="cosine"),
     "anneal_strategy must be 'cos' or 'linear', got 'cosine'"),
    (lambda o: L.OneCycleLR(OPTIMIZERS["adagrad"](weights()), 1.0, total_steps=10),
     "Adagrad has neither"),
    (lambda o: L.ReduceLROnPlateau(o, factor=1.0), "factor must be < 1.0, got 1.0"),
    (lambda o: L.ReduceLROnPlateau(o, mode="least"), "mode must be 'min' or 'max', got 'least'"),
    (lambda o: L.ReduceLROnPlateau(o, threshold_mode="pct"), "threshold_mode"),
    (lambda o: L.SequentialLR(o, [L.StepLR(o, 2)], milestones=[3]),
     "one milestone fewer than schedulers, got 1 milestones for 1 schedulers"),
    (lambda o: L.SequentialLR(o, [L.ReduceLROnPlateau(o)], milestones=[]),
     "schedulers.0. is a ReduceLROnPlateau"),
    (lambda o: L.ChainedScheduler([L.StepLR(o, 2), L.StepLR(sgd(), 2)]),
     r"schedulers\[1\] \(StepLR\) drives another optimizer"),
    (lambda o: L.warmup_cosine(o, 10, 10), "total_steps must be an integer > warmup_steps=10"),
    (lambda o: L.warmup_cosine(o, -1, 10), "warmup_steps must be an integer >= 0, got -1"),
    (lambda o: L.warmup_stable_decay(o, 10, 50, 41),
     r"decay_steps \(41\) must be at most total_steps - warmup_steps \(50 - 10\)"),
    (lambda o: L.warmup_stable_decay(o, 10, 50, 0), "decay_steps must be an integer >= 1, got 0"),
    (lambda o: L.warmup_stable_decay(o, 0, 50, 10, shape="exp"),
     r"shape must be one of \['1-sqrt', 'cosine', 'linear'\], got 'exp'"),
    (lambda o: L.warmup_stable_decay(o, 0, 50, 10, min_lr=-1.0), "min_lr must be >= 0"),
    (lambda o: L.StepLR(o, 3, last_epoch=5), "param group 0 has no 'initial_lr'"),
])
def test_bad_scheduler_settings(make, message):
    with pytest.raises((HyperparameterError, ParamGroupError), match=message):
        make(sgd())


def test_one_cycle_stepped_past_its_end():
    opt = sgd()
    sched = L.OneCycleLR(opt, max_lr=1.0, total_steps=3)
    for _ in range(3):
        sched.step()
    with pytest.raises(HyperparameterError, match="stepped 4 times, past its total_steps=3"):
        sched.step()


def test_dtype_error_of_core_is_not_used_for_parameters():
    # parameters get the optimizer's own type error, which is still a TypeError
    assert not issubclass(OptimizerTypeError, DTypeError)
