"""Model validation: BatchNorm refused with GroupNorm as the fix, layers without a per-sample
rule refused by name, evaluation mode refused; fix() swaps GroupNorm in; every layer of
pullback.nn that holds parameters has a per-sample rule or a validator of its own."""

from __future__ import annotations

import pytest

import pullback as pb
from pullback import nn, optim
from pullback.dp import (
    PER_SAMPLE_LAYERS, VALIDATORS, ModuleValidator, PrivacyEngine, UnsupportedModuleError,
)
from pullback.dp._validators import register_per_sample_layer
from pullback.nn.data import DataLoader, TensorDataset


class Scale(nn.Module):
    """A layer of a user's own, with a parameter, that pullback.dp does not know."""

    def __init__(self, n: int) -> None:
        super().__init__()
        self.gain = nn.Parameter(pb.ones(n))

    def forward(self, x: pb.Tensor) -> pb.Tensor:
        return x * self.gain


def cnn_with_batch_norm() -> nn.Module:
    return nn.Sequential(nn.Conv2d(1, 8, 3), nn.BatchNorm2d(8), nn.ReLU(), nn.Flatten(),
                         nn.Linear(8 * 4 * 4, 10))


def test_batch_norm_is_refused_by_name_with_group_norm_as_the_fix() -> None:
    issues = ModuleValidator.validate(cnn_with_batch_norm())
    assert [(i.path, i.layer) for i in issues] == [("1", "BatchNorm2d")]
    assert "depends on the others" in issues[0].problem
    assert "nn.GroupNorm(8, 8)" in issues[0].fix


def test_make_private_raises_one_error_listing_every_issue() -> None:
    model = nn.Sequential(nn.Linear(4, 6), nn.BatchNorm1d(6), Scale(6), nn.Linear(6, 2))
    data = DataLoader(TensorDataset(pb.randn(16, 4), pb.randint(0, 2, (16,))), batch_size=4)
    with pytest.raises(UnsupportedModuleError) as caught:
        PrivacyEngine().make_private(module=model, optimizer=optim.SGD(model.parameters(), lr=0.1),
                                     data_loader=data, noise_multiplier=1.0, max_grad_norm=1.0)
    message = str(caught.value)
    assert "2 problems" in message
    assert "'1' (BatchNorm1d)" in message and "GroupNorm" in message
    assert "'2' (Scale): it holds trainable parameters (gain)" in message
    assert "register_per_sample_layer(Scale)" in message


def test_a_frozen_or_registered_layer_is_accepted() -> None:
    frozen = nn.Sequential(nn.Linear(4, 6), Scale(6))
    frozen[1].requires_grad_(False)
    assert ModuleValidator.is_valid(frozen)
    frozen_norm = nn.Sequential(nn.Linear(4, 6), nn.BatchNorm1d(6).eval())
    assert ModuleValidator.is_valid(frozen_norm)  # running statistics: each sample on its own

    class Shift(Scale):
        pass

    assert not ModuleValidator.is_valid(nn.Sequential(Shift(3)))
    register_per_sample_layer(Shift)
    try:
        assert ModuleValidator.is_valid(nn.Sequential(Shift(3)))
    finally:
        del PER_SAMPLE_LAYERS["Shift"]


def test_evaluation_mode_is_refused() -> None:
    issues = ModuleValidator.validate(nn.Linear(2, 2).eval())
    assert [(i.path, i.fix) for i in issues] == [("", "call model.train() before make_private.")]


def test_fix_swaps_group_norm_in() -> None:
    model = ModuleValidator.fix(cnn_with_batch_norm())
    assert isinstance(model[1], nn.GroupNorm) and model[1].num_groups == 8
    assert ModuleValidator.is_valid(model)
    assert isinstance(ModuleValidator.fix(nn.BatchNorm1d(48)), nn.GroupNorm)


def test_every_nn_layer_with_parameters_is_covered() -> None:
    """A layer of pullback.nn (pullback.func's catalogue names every one) that holds trainable
    parameters of its own is either in PER_SAMPLE_LAYERS (whose members test_dp_per_sample.py
    checks against a loop) or has a validator of its own: none falls through to 'no per-sample
    rule'."""
    from func_nn_layers import LAYERS

    covered = set(PER_SAMPLE_LAYERS.values()) | set(VALIDATORS)
    layers = [make() for make, _ in LAYERS.values()]
    missing = sorted({type(m).__name__ for m in layers if m._parameters and type(m) not in covered})
    assert len(layers) > 30 and not missing


def test_time_major_recurrent_layers_and_tracked_instance_norm_are_refused() -> None:
    model = nn.Sequential(nn.LSTM(3, 4), nn.InstanceNorm1d(4, track_running_stats=True))
    issues = ModuleValidator.validate(model)
    assert [(i.path, i.layer) for i in issues] == [("0", "LSTM"), ("1", "InstanceNorm1d")]
    assert "batch_first=True" in issues[0].fix and "track_running_stats=False" in issues[1].fix
    assert ModuleValidator.is_valid(nn.Sequential(nn.GRU(3, 4, batch_first=True),
                                                  nn.InstanceNorm1d(4, affine=True)))
    assert ModuleValidator.validate(nn.BatchNorm3d(4))[0].layer == "BatchNorm3d"
    assert isinstance(ModuleValidator.fix(nn.BatchNorm3d(4)), nn.GroupNorm)
