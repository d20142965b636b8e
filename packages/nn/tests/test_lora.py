"""LoRA: injection, zero initial update, only adapters trainable, merge/unmerge, adapter-only
state dicts, and parity of the LoRA forward with an explicit formula."""

from __future__ import annotations

import numpy as np
import pytest

import pullback
import pullback.nn.functional as F
from pullback import nn


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.encoder = nn.Sequential(nn.Linear(6, 8), nn.ReLU())
        self.fc1 = nn.Linear(8, 8)
        self.head = nn.Linear(8, 3)

    def forward(self, x):
        return self.head(self.fc1(self.encoder(x)).relu())


def _injected(**kwargs):
    pullback.manual_seed(0)
    model = Net()
    x = pullback.randn(5, 6)
    before = model(x).detach().numpy()
    nn.inject_lora(model, ["fc1", "head"], r=2, alpha=4.0, **kwargs)
    return model, x, before


def test_injection_starts_from_the_same_function():
    model, x, before = _injected()
    assert isinstance(model.fc1, nn.LoRALinear) and isinstance(model.head, nn.LoRALinear)
    assert type(model.encoder[0]) is nn.Linear
    np.testing.assert_array_equal(model(x).detach().numpy(), before)


def test_only_adapters_are_trainable_and_get_gradients():
    model, x, _ = _injected()
    trainable = [n for n, p in model.named_parameters() if p.requires_grad]
    assert trainable == ["fc1.lora_A", "fc1.lora_B", "head.lora_A", "head.lora_B"]
    model(x).sum().backward()
    for name, p in model.named_parameters():
        assert (p.grad is not None) == p.requires_grad, name


def test_base_keys_are_unchanged_so_base_checkpoints_still_load():
    model, _, _ = _injected()
    base = Net().state_dict()
    result = model.load_state_dict(base, strict=False)
    assert result.unexpected_keys == []
    assert sorted(result.missing_keys) == ["fc1.lora_A", "fc1.lora_B", "head.lora_A", "head.lora_B"]


def test_forward_is_base_plus_scaled_low_rank_update():
    model, x, _ = _injected()
    layer = model.head
    with pullback.no_grad():
        layer.lora_B.copy_(pullback.randn(3, 2))
    h = pullback.randn(4, 8)
    expected = (h.numpy() @ layer.weight.detach().numpy().T + layer.bias.detach().numpy()
                + 2.0 * (h.numpy() @ layer.lora_A.detach().numpy().T
                         @ layer.lora_B.detach().numpy().T))
    np.testing.assert_allclose(layer(h).detach().numpy(), expected, rtol=1e-5, atol=1e-6)


def test_merge_and_unmerge():
    model, x, _ = _injected()
    with pullback.no_grad():
        for layer in (model.fc1, model.head):
            layer.lora_B.copy_(pullback.randn(*layer.lora_B.shape))
    w0 = model.fc1.weight.detach().numpy().copy()
    unmerged = model(x).detach().numpy()
    nn.merge_lora(model)
    assert model.fc1.merged
    np.testing.assert_allclose(model(x).detach().numpy(), unmerged, rtol=1e-5, atol=1e-5)
    nn.merge_lora(model)  # merging twice changes nothing
    np.testing.assert_allclose(model(x).detach().numpy(), unmerged, rtol=1e-5, atol=1e-5)
    nn.unmerge_lora(model)
    np.testing.assert_allclose(model.fc1.weight.detach().numpy(), w0, rtol=1e-6, atol=1e-6)


def test_adapter_state_dict_round_trip(tmp_path):
    model, x, _ = _injected()
    with pullback.no_grad():
        model.head.lora_B.copy_(pullback.randn(3, 2))
    adapters = nn.lora_state_dict(model)
    assert sorted(adapters) == ["fc1.lora_A", "fc1.lora_B", "head.lora_A", "head.lora_B"]
    pullback.save(adapters, tmp_path / "adapters.safetensors")
    other, _, _ = _injected()
    other.load_state_dict(model.state_dict())  # same base weights
    with pullback.no_grad():
        other.head.lora_B.zero_()
    other.load_state_dict(pullback.load(tmp_path / "adapters.safetensors"), strict=False)
    np.testing.assert_array_equal(other(x).detach().numpy(), model(x).detach().numpy())


def test_dropout_on_the_adapter_input_only_in_training():
    model, x, _ = _injected(dropout=0.5)
    model.eval()
    a = model(x).detach().numpy()
    assert np.array_equal(a, model(x).detach().numpy())


def test_no_match_is_a_clear_error():
    with pytest.raises(ValueError, match="no Linear layer matches"):
        nn.inject_lora(Net(), ["attention"], r=2)


def test_lora_linear_alone_trains_only_what_it_should():
    layer = nn.LoRALinear(4, 3, r=2, alpha=2.0)
    assert all(p.requires_grad for p in layer.parameters())  # standalone: everything trainable
    out = F.linear(pullback.randn(2, 4), layer.weight, layer.bias)
    np.testing.assert_array_equal(out.detach().numpy().shape, (2, 3))
