"""The module system: registration, walking, modes, moving, hooks, state dicts, containers."""

from __future__ import annotations

from collections import OrderedDict

import numpy as np
import pytest

import pullback
from pullback import nn
from pullback.errors import CheckpointError


class Tied(nn.Module):
    """An embedding and an output head sharing one weight (as in a GPT)."""

    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(6, 4)
        self.head = nn.Linear(4, 6, bias=False)
        self.head.weight = self.emb.weight
        self.register_buffer("steps", pullback.zeros(()))
        self.register_buffer("scratch", pullback.zeros(2), persistent=False)

    def forward(self, idx):
        return self.head(self.emb(idx))


def test_parameter_is_a_tensor_that_requires_grad():
    p = nn.Parameter(pullback.ones(2, 3))
    assert isinstance(p, pullback.Tensor) and p.requires_grad and p.is_leaf
    assert repr(p).startswith("Parameter containing:")
    frozen = nn.Parameter(pullback.ones(2), requires_grad=False)
    assert not frozen.requires_grad
    with pytest.raises(pullback.DTypeError):
        nn.Parameter(pullback.tensor([1, 2]))


def test_parameter_shares_memory_with_its_source():
    t = pullback.zeros(3)
    p = nn.Parameter(t)
    with pullback.no_grad():
        p.fill_(2.0)
    np.testing.assert_array_equal(t.numpy(), [2.0, 2.0, 2.0])


def test_registration_by_attribute_and_walking():
    model = nn.Sequential(OrderedDict(fc1=nn.Linear(3, 4), act=nn.ReLU(), fc2=nn.Linear(4, 2)))
    assert [n for n, _ in model.named_parameters()] == ["fc1.weight", "fc1.bias", "fc2.weight",
                                                        "fc2.bias"]
    assert [n for n, _ in model.named_modules()] == ["", "fc1", "act", "fc2"]
    assert [type(m).__name__ for m in model.children()] == ["Linear", "ReLU", "Linear"]
    assert len(list(model.modules())) == 4
    assert sum(p.numel() for p in model.parameters()) == 3 * 4 + 4 + 4 * 2 + 2
    assert model.get_submodule("fc2") is model.fc2
    assert model.get_parameter("fc1.bias") is model.fc1.bias
    with pytest.raises(AttributeError, match="no submodule 'nope'"):
        model.get_submodule("nope")


def test_tied_weight_is_one_parameter_but_two_state_dict_keys():
    model = Tied()
    assert [n for n, _ in model.named_parameters()] == ["emb.weight"]
    sd = model.state_dict()
    assert list(sd) == ["steps", "emb.weight", "head.weight"]  # non-persistent buffer left out
    assert [n for n, _ in model.named_buffers()] == ["steps", "scratch"]


def test_reassigning_and_deleting_attributes():
    m = nn.Linear(2, 2)
    with pytest.raises(TypeError, match="parameter 'weight'"):
        m.weight = pullback.ones(2, 2)
    m.bias = None
    assert [n for n, _ in m.named_parameters()] == ["weight"]
    m.extra = nn.ReLU()
    assert "extra" in dict(m.named_children())
    del m.extra
    assert "extra" not in dict(m.named_children())
    with pytest.raises(AttributeError, match="no attribute 'missing'"):
        m.missing  # noqa: B018


def test_forgetting_super_init_is_a_clear_error():
    class Broken(nn.Module):
        def __init__(self):
            self.fc = nn.Linear(2, 2)

    with pytest.raises(AttributeError, match="super\\(\\).__init__"):  # PyTorch's class
        Broken()


def test_train_eval_propagate():
    model = nn.Sequential(nn.Linear(2, 2), nn.Dropout(0.5))
    assert model.training and model[1].training
    model.eval()
    assert not model.training and not model[1].training
    model.train()
    assert model[1].training


def test_requires_grad_and_zero_grad():
    model = nn.Linear(3, 2)
    model(pullback.randn(4, 3)).sum().backward()
    assert model.weight.grad is not None
    model.zero_grad(set_to_none=False)
    np.testing.assert_array_equal(model.weight.grad.numpy(), np.zeros((2, 3)))
    model.zero_grad()
    assert model.weight.grad is None
    model.requires_grad_(False)
    assert not any(p.requires_grad for p in model.parameters())


def test_to_dtype_keeps_parameters_and_tying():
    model = Tied()
    params_before = [id(p) for p in model.parameters()]
    model.to(pullback.float64)
    assert [id(p) for p in model.parameters()] == params_before
    assert model.emb.weight is model.head.weight and model.emb.weight.dtype == np.float64
    assert model.steps.dtype == np.float64
    assert model.scratch.dtype == np.float64
    model.float()
    assert model.head.weight.dtype == np.float32


def test_to_dtype_leaves_integer_buffers_alone():
    bn = nn.BatchNorm1d(3).double()
    assert bn.running_mean.dtype == np.float64
    assert bn.num_batches_tracked.dtype == np.int64


def test_tying_survives_to_and_load_state_dict():
    model = Tied()
    source = Tied()
    model.to("cpu").to(pullback.float64)
    model.load_state_dict(source.state_dict())
    assert model.emb.weight is model.head.weight
    np.testing.assert_array_equal(model.head.weight.detach().numpy(),
                                  source.emb.weight.detach().numpy().astype(np.float64))


def test_apply_visits_children_first():
    order = []
    model = nn.Sequential(nn.Linear(2, 2), nn.Sequential(nn.ReLU()))
    model.apply(lambda m: order.append(type(m).__name__))
    assert order == ["Linear", "ReLU", "Sequential", "Sequential"]


def test_forward_hooks_can_replace_inputs_and_outputs():
    m = nn.Linear(2, 2)
    seen = []
    pre = m.register_forward_pre_hook(lambda mod, args: (args[0] * 0.0,))
    post = m.register_forward_hook(lambda mod, args, out: seen.append(out.shape) or out + 1.0)
    out = m(pullback.ones(3, 2))
    expected = m.bias.detach().numpy() + 1.0
    np.testing.assert_allclose(out.detach().numpy(), np.broadcast_to(expected, (3, 2)), rtol=1e-6)
    assert seen == [(3, 2)]
    pre.remove()
    post.remove()
    out = m(pullback.ones(1, 2))
    np.testing.assert_allclose(out.detach().numpy(),
                               (m.weight.detach().numpy().sum(1) + m.bias.detach().numpy())[None],
                               rtol=1e-6)


def test_state_dict_round_trip_against_torch():
    torch = pytest.importorskip("torch")
    t_model = torch.nn.Sequential(torch.nn.Conv2d(1, 2, 3), torch.nn.BatchNorm2d(2),
                                  torch.nn.Flatten(), torch.nn.Linear(8, 3))
    t_model(torch.randn(4, 1, 4, 4))  # move the running statistics away from their defaults
    model = nn.Sequential(nn.Conv2d(1, 2, 3), nn.BatchNorm2d(2), nn.Flatten(), nn.Linear(8, 3))
    assert list(model.state_dict()) == list(t_model.state_dict())
    model.load_state_dict({k: v.numpy() for k, v in t_model.state_dict().items()})
    back = {k: torch.from_numpy(np.array(v)) for k, v in model.state_dict().items()}
    result = t_model.load_state_dict(back)
    assert not result.missing_keys and not result.unexpected_keys
    for k, v in t_model.state_dict().items():
        np.testing.assert_array_equal(np.asarray(model.state_dict()[k]), v.numpy())


def test_load_state_dict_lists_every_problem():
    model = nn.Sequential(nn.Linear(3, 4), nn.Linear(4, 2))
    sd = dict(model.state_dict())
    del sd["0.bias"]
    sd["extra.weight"] = pullback.zeros(1)
    sd["1.weight"] = pullback.zeros(5, 4)
    with pytest.raises(CheckpointError) as info:
        model.load_state_dict(sd)
    message = str(info.value)
    assert "missing keys: 0.bias" in message
    assert "unexpected keys: extra.weight" in message
    assert "1.weight: checkpoint has shape (5, 4), the model (2, 4)" in message
    # strict=False reports missing/unexpected keys, but a shape mismatch stays an error.
    del sd["1.weight"]
    result = model.load_state_dict(sd, strict=False)
    assert result.missing_keys == ["0.bias", "1.weight"]
    assert result.unexpected_keys == ["extra.weight"]


def test_load_state_dict_casts_and_copies_in_place():
    model = nn.Linear(2, 2)
    weight = model.weight
    model.load_state_dict({"weight": np.ones((2, 2), np.float64), "bias": pullback.zeros(2)})
    assert model.weight is weight and weight.dtype == np.float32
    np.testing.assert_array_equal(weight.numpy() if not weight.requires_grad
                                  else weight.detach().numpy(), np.ones((2, 2)))


def test_checkpoint_round_trip_through_pullback_save(tmp_path):
    model = Tied()
    path = tmp_path / "model.safetensors"
    pullback.save(model.state_dict(), path)
    other = Tied()
    other.load_state_dict(pullback.load(path))
    for (k, a), b in zip(model.state_dict().items(), other.state_dict().values()):
        np.testing.assert_array_equal(a.numpy(), b.numpy(), err_msg=k)


def test_repr_tree():
    model = nn.Sequential(nn.Conv2d(1, 4, 3, padding=1), nn.ReLU(),
                          nn.Sequential(nn.Flatten(), nn.Linear(16, 2, bias=False)))
    assert repr(model) == (
        "Sequential(\n"
        "  (0): Conv2d(1, 4, kernel_size=(3, 3), stride=(1, 1), padding=(1, 1))\n"
        "  (1): ReLU()\n"
        "  (2): Sequential(\n"
        "    (0): Flatten(start_dim=1, end_dim=-1)\n"
        "    (1): Linear(in_features=16, out_features=2, bias=False)\n"
        "  )\n"
        ")"
    )


def test_modules_refuse_pickle():
    import pickle

    with pytest.raises(TypeError, match="pullback.save"):
        pickle.dumps(nn.Linear(2, 2))


def test_sequential_forms_and_indexing():
    a, b, c = nn.Linear(2, 3), nn.ReLU(), nn.Linear(3, 1)
    seq = nn.Sequential(a, b, c)
    assert seq[0] is a and seq[-1] is c and len(seq) == 3
    assert isinstance(seq[1:], nn.Sequential) and list(seq[1:]) == [b, c]
    named = nn.Sequential(OrderedDict([("first", a), ("second", c)]))
    assert [n for n, _ in named.named_children()] == ["first", "second"]
    del seq[1]
    assert list(seq) == [a, c] and [n for n, _ in seq.named_children()] == ["0", "1"]
    seq.append(nn.Tanh())
    assert len(seq) == 3
    with pytest.raises(IndexError):
        seq[5]  # noqa: B018


def test_module_list_and_dict():
    layers = nn.ModuleList([nn.Linear(2, 2) for _ in range(3)])
    layers.append(nn.ReLU())
    layers.insert(0, nn.Tanh())
    assert len(layers) == 5 and isinstance(layers[0], nn.Tanh)
    assert len(list(layers.parameters())) == 6
    del layers[0]
    assert isinstance(layers[0], nn.Linear)
    heads = nn.ModuleDict({"a": nn.Linear(2, 1), "b": nn.Linear(2, 3)})
    heads["c"] = nn.ReLU()
    assert list(heads) == ["a", "b", "c"] and "b" in heads
    assert [n for n, _ in heads.named_parameters()] == ["a.weight", "a.bias", "b.weight", "b.bias"]
    heads.pop("a")
    assert list(heads.keys()) == ["b", "c"]


def test_unflatten_and_flatten_shapes():
    x = pullback.randn(2, 12)
    assert nn.Unflatten(1, (3, 4))(x).shape == (2, 3, 4)
    assert nn.Flatten()(pullback.randn(2, 3, 4)).shape == (2, 12)
    with pytest.raises(pullback.ShapeError, match="Unflatten"):
        nn.Unflatten(1, (5, 3))(x)
