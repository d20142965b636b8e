"""``copy.deepcopy`` of Modules and Parameters, as in PyTorch: independent memory, gradients and
buffers copied, a parameter shared inside the copied object shared in the copy."""

from __future__ import annotations

import copy

import numpy as np
import pytest

import pullback
from pullback import nn
from pullback.errors import AutogradError


def _tied_model() -> nn.Module:
    model = nn.Sequential(nn.Embedding(5, 3), nn.BatchNorm1d(3), nn.Linear(3, 5))
    model[2].weight = model[0].weight  # weight tying, as in a language model
    return model


def test_deepcopy_keeps_values_sharing_grads_and_buffers():
    model = _tied_model()
    model(pullback.tensor([[1, 2, 3], [0, 4, 1]]).reshape(-1)).sum().backward()
    clone = copy.deepcopy(model)
    assert clone[2].weight is clone[0].weight, "a tied parameter must stay tied in the copy"
    assert clone[0].weight is not model[0].weight
    assert isinstance(clone[0].weight, nn.Parameter) and clone[0].weight.requires_grad
    np.testing.assert_array_equal(clone[0].weight.grad.numpy(), model[0].weight.grad.numpy())
    for name, buffer in model.named_buffers():
        np.testing.assert_array_equal(dict(clone.named_buffers())[name].numpy(), buffer.numpy())
    assert list(clone.state_dict()) == list(model.state_dict())
    with pullback.no_grad():
        clone[0].weight.fill_(0.0)
        clone[1].running_mean.fill_(7.0)
    assert float(model[0].weight.abs().sum()) > 0, "the copy must not share memory"
    assert float(model[1].running_mean.abs().max()) != 7.0


def test_deepcopy_of_a_module_list_gives_independent_layers():
    layer = nn.Linear(4, 4)
    layers = nn.ModuleList([copy.deepcopy(layer) for _ in range(3)])
    ids = {id(p) for p in layers.parameters()}
    assert len(ids) == 6
    for copied in layers:
        np.testing.assert_array_equal(copied.weight.detach().numpy(), layer.weight.detach().numpy())


def test_deepcopy_refuses_a_non_leaf_like_pytorch():
    w = nn.Parameter(pullback.ones(2))
    with pytest.raises(AutogradError, match="leaf"):
        copy.deepcopy(w * 2)


def test_deepcopy_matches_torch_on_sharing():
    torch = pytest.importorskip("torch", reason="PyTorch is the oracle of the sharing rules")
    theirs = torch.nn.Sequential(torch.nn.Embedding(5, 3), torch.nn.Linear(3, 5))
    theirs[1].weight = theirs[0].weight
    ours = nn.Sequential(nn.Embedding(5, 3), nn.Linear(3, 5))
    ours[1].weight = ours[0].weight
    t_copy, o_copy = copy.deepcopy(theirs), copy.deepcopy(ours)
    assert ([n for n, _ in t_copy.named_parameters()] == [n for n, _ in o_copy.named_parameters()])
