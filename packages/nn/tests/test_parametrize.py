"""nn.utils.parametrize's behaviour beyond the forward/backward parity in nn_cases_layers.py:
assignment through right_inverse, removal, caching, training through an optimizer, errors,
and spectral_norm's estimate against NumPy's singular values."""

from __future__ import annotations

import numpy as np
import pytest

import pullback
from pullback import nn
from pullback.nn.utils import parametrizations, parametrize

torch = pytest.importorskip("torch", reason="PyTorch is the reference of these tests")


class Double(nn.Module):
    def forward(self, x):
        return x * 2

    def right_inverse(self, x):
        return x / 2


def test_assignment_goes_through_right_inverse_and_keeps_the_parameter_object():
    layer = nn.Linear(3, 2)
    original = layer.weight
    parametrize.register_parametrization(layer, "weight", Double())
    assert layer.parametrizations.weight.original is original  # optimizers keep their handle
    assert type(layer).__name__ == "ParametrizedLinear"
    assert parametrize.type_before_parametrizations(layer) is nn.Linear
    target = pullback.tensor(np.arange(6.0).reshape(2, 3))
    layer.weight = target
    np.testing.assert_allclose(np.asarray(layer.weight.detach()), np.asarray(target))
    np.testing.assert_allclose(np.asarray(original.detach()), np.asarray(target) / 2)


def test_chained_parametrizations_compose_and_remove_like_torch():
    weight = np.random.default_rng(0).standard_normal((3, 3))
    ours, theirs = nn.Linear(3, 3), torch.nn.Linear(3, 3)
    ours.weight.data = pullback.tensor(weight, dtype=ours.weight.dtype)
    with torch.no_grad():
        theirs.weight.copy_(torch.tensor(weight))

    class TorchDouble(torch.nn.Module):
        def forward(self, x):
            return x * 2

        def right_inverse(self, x):
            return x / 2

    for m, layer, p in ((nn, ours, Double), (torch.nn, theirs, TorchDouble)):
        m.utils.parametrize.register_parametrization(layer, "weight", p())
        m.utils.parametrize.register_parametrization(layer, "weight", p())
    assert list(ours.state_dict()) == list(theirs.state_dict())
    np.testing.assert_allclose(np.asarray(ours.weight.detach()), theirs.weight.detach().numpy(),
                               rtol=1e-6)
    parametrize.remove_parametrizations(ours, "weight")
    torch.nn.utils.parametrize.remove_parametrizations(theirs, "weight")
    assert type(ours) is nn.Linear and not parametrize.is_parametrized(ours)
    assert list(ours.state_dict()) == list(theirs.state_dict())
    np.testing.assert_allclose(np.asarray(ours.weight.detach()), theirs.weight.detach().numpy(),
                               rtol=1e-6)


def test_weight_norm_trains_its_originals():
    pullback.manual_seed(0)
    layer = parametrizations.weight_norm(nn.Linear(4, 2))
    g, v = layer.parametrizations.weight.original0, layer.parametrizations.weight.original1
    assert {id(p) for p in layer.parameters()} == {id(g), id(v), id(layer.bias)}
    x = pullback.randn(5, 4)
    before = layer(x).detach().numpy()
    (layer(x) ** 2).sum().backward()
    # one plain SGD step on the originals, small enough to be a descent step whatever the
    # draw (0.1 could overshoot the quadratic loss)
    with pullback.no_grad():
        for p in layer.parameters():
            p -= 1e-3 * p.grad
    assert (layer(x) ** 2).sum().item() < (before ** 2).sum()


def test_cached_computes_each_parametrized_tensor_once():
    calls = []

    class Counting(nn.Module):
        def forward(self, x):
            calls.append(1)
            return x

    layer = parametrize.register_parametrization(nn.Linear(2, 2), "weight", Counting())
    calls.clear()
    with parametrize.cached():
        first, second = layer.weight, layer.weight
    assert first is second and len(calls) == 1
    layer.weight  # noqa: B018 - outside the context: computed again
    assert len(calls) == 2


def test_spectral_norm_divides_by_the_largest_singular_value():
    pullback.manual_seed(0)
    layer = parametrizations.spectral_norm(nn.Linear(6, 5), n_power_iterations=1)
    for _ in range(30):  # power iteration converges in training
        layer(pullback.randn(1, 6))
    original = np.asarray(layer.parametrizations.weight.original.detach())
    normalized = np.asarray(layer.weight.detach())
    np.testing.assert_allclose(normalized, original / np.linalg.svd(original)[1][0], rtol=1e-4)
    layer.eval()
    u = np.asarray(layer.parametrizations.weight[0]._u).copy()
    layer(pullback.randn(1, 6))
    np.testing.assert_array_equal(np.asarray(layer.parametrizations.weight[0]._u), u)


def test_errors_name_the_tensor():
    with pytest.raises(ValueError, match="no parameter, buffer or parametrized tensor named 'w'"):
        parametrize.register_parametrization(nn.Linear(2, 2), "w", Double())

    class Shrink(nn.Module):
        def forward(self, x):
            return x[:1]

    with pytest.raises(ValueError, match="must keep its shape"):
        parametrize.register_parametrization(nn.Linear(2, 2), "weight", Shrink())
    with pytest.raises(ValueError, match="has no parametrization on 'weight'"):
        parametrize.remove_parametrizations(nn.Linear(2, 2), "weight")
    layer = parametrizations.weight_norm(nn.Linear(2, 2))
    with pytest.raises(ValueError, match="cannot be left unparametrized"):
        parametrize.remove_parametrizations(layer, "weight", leave_parametrized=False)


@pytest.mark.parametrize("kind", ["weight_norm", "spectral_norm"])
def test_the_hook_based_forms_remove_like_torch(kind):
    import warnings

    theirs = torch.nn.Linear(4, 3).double()
    ours = nn.Linear(4, 3)
    ours.to("float64")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)
        getattr(torch.nn.utils, kind)(theirs)
        with pytest.warns(FutureWarning) if kind == "weight_norm" else warnings.catch_warnings():
            getattr(nn.utils, kind)(ours)
    ours.load_state_dict({k: v.detach().numpy() for k, v in theirs.state_dict().items()})
    x = np.random.default_rng(0).standard_normal((2, 4))
    np.testing.assert_allclose(ours(pullback.tensor(x)).detach().numpy(),
                               theirs(torch.tensor(x)).detach().numpy(), rtol=1e-12)
    getattr(nn.utils, "remove_" + kind)(ours)
    getattr(torch.nn.utils, "remove_" + kind)(theirs)
    assert list(ours.state_dict()) == list(theirs.state_dict())  # weight re-registered last
    np.testing.assert_allclose(np.asarray(ours.weight.detach()), theirs.weight.detach().numpy(),
                               rtol=1e-12)
    with pytest.raises(ValueError, match="not found"):
        getattr(nn.utils, "remove_" + kind)(ours)
