"""Every layer of pullback.nn under the transforms, through batching and jvp rules of its own
ops (no layer runs through the loop fallback): vmap against a loop over samples, per-sample
gradients (vmap(grad) through functional_call) against a loop of backward passes, jvp against
finite differences. The catalogue must name every Module that pullback.nn exports."""

from __future__ import annotations

import inspect
import warnings
from typing import Any, Callable

import numpy as np
import pytest

import pullback as pb
from pullback.func import VmapFallbackWarning, functional_call, grad, jvp, vmap
from pullback.func._pytree import tree_flatten

nn = pytest.importorskip("pullback.nn")

B = 3


def _f(*shape: int) -> Callable[[np.random.Generator], np.ndarray]:
    return lambda rng: rng.standard_normal(shape)


def _pos(*shape: int) -> Callable[[np.random.Generator], np.ndarray]:
    return lambda rng: rng.uniform(0.1, 0.9, shape)


def _i(high: int, *shape: int) -> Callable[[np.random.Generator], np.ndarray]:
    return lambda rng: rng.integers(0, high, shape)


# name -> (module factory, per-sample input makers). Each sample has a leading N dim of its own
# where the layer wants one, so that the batch of vmap is a dim on top of the layer's batch.
LAYERS: dict[str, tuple[Callable[[], Any], list[Callable[[np.random.Generator], Any]]]] = {
    "Linear": (lambda: nn.Linear(4, 3), [_f(2, 4)]),
    "LoRALinear": (lambda: nn.LoRALinear(4, 3, r=2), [_f(2, 4)]),
    "Bilinear": (lambda: nn.Bilinear(3, 4, 2), [_f(2, 3), _f(2, 4)]),
    "Conv2d": (lambda: nn.Conv2d(2, 3, 3, padding=1), [_f(1, 2, 5, 5)]),
    "Conv2d-grouped-strided": (lambda: nn.Conv2d(4, 6, 3, stride=2, groups=2), [_f(2, 4, 7, 7)]),
    "Conv1d": (lambda: nn.Conv1d(2, 3, 3), [_f(1, 2, 7)]),
    "ConvTranspose2d": (lambda: nn.ConvTranspose2d(2, 3, 3, stride=2), [_f(1, 2, 4, 4)]),
    "MaxPool2d": (lambda: nn.MaxPool2d(2), [_f(1, 2, 4, 4)]),
    "AvgPool2d": (lambda: nn.AvgPool2d(2, padding=1), [_f(1, 2, 4, 4)]),
    "AdaptiveAvgPool2d": (lambda: nn.AdaptiveAvgPool2d(2), [_f(1, 2, 5, 5)]),
    "ReLU": (nn.ReLU, [_f(2, 5)]), "LeakyReLU": (nn.LeakyReLU, [_f(2, 5)]),
    "GELU": (nn.GELU, [_f(2, 5)]), "SiLU": (nn.SiLU, [_f(2, 5)]), "Tanh": (nn.Tanh, [_f(2, 5)]),
    "Sigmoid": (nn.Sigmoid, [_f(2, 5)]), "Softplus": (nn.Softplus, [_f(2, 5)]),
    "ELU": (nn.ELU, [_f(2, 5)]),
    "Softmax": (lambda: nn.Softmax(dim=-1), [_f(2, 5)]),
    "LogSoftmax": (lambda: nn.LogSoftmax(dim=1), [_f(2, 5)]),
    "MultiheadAttention": (lambda: nn.MultiheadAttention(4, 2, batch_first=True),
                           [_f(1, 3, 4), _f(1, 5, 4), _f(1, 5, 4)]),
    "TransformerBlock": (lambda: nn.TransformerBlock(4, 2, dim_feedforward=8, dropout=0.0),
                         [_f(1, 3, 4)]),
    "Dropout": (lambda: nn.Dropout(0.5).eval(), [_f(2, 5)]),
    "Embedding": (lambda: nn.Embedding(6, 3), [_i(6, 2, 4)]),
    "LayerNorm": (lambda: nn.LayerNorm(5), [_f(2, 5)]),
    "RMSNorm": (lambda: nn.RMSNorm(5), [_f(2, 5)]),
    "GroupNorm": (lambda: nn.GroupNorm(2, 4), [_f(2, 4, 3)]),
    "BatchNorm1d": (lambda: nn.BatchNorm1d(3).eval(), [_f(2, 3)]),
    "BatchNorm2d": (lambda: nn.BatchNorm2d(3).eval(), [_f(2, 3, 2, 2)]),
    "Identity": (nn.Identity, [_f(2, 5)]),
    "Flatten": (nn.Flatten, [_f(2, 3, 2)]),
    "Unflatten": (lambda: nn.Unflatten(1, (2, 3)), [_f(2, 6)]),
    "MSELoss": (nn.MSELoss, [_f(2, 3), _f(2, 3)]),
    "L1Loss": (nn.L1Loss, [_f(2, 3), _f(2, 3)]),
    "HuberLoss": (nn.HuberLoss, [_f(2, 3), _f(2, 3)]),
    "SmoothL1Loss": (nn.SmoothL1Loss, [_f(2, 3), _f(2, 3)]),
    "CrossEntropyLoss": (nn.CrossEntropyLoss, [_f(2, 5), _i(5, 2)]),
    "CrossEntropyLoss-smoothing": (lambda: nn.CrossEntropyLoss(label_smoothing=0.1),
                                   [_f(2, 5), _i(5, 2)]),
    "NLLLoss": (nn.NLLLoss, [_f(2, 5), _i(5, 2)]),
    "BCELoss": (nn.BCELoss, [_pos(2, 3), _pos(2, 3)]),
    "BCEWithLogitsLoss": (nn.BCEWithLogitsLoss, [_f(2, 3), _pos(2, 3)]),
    "KLDivLoss": (lambda: nn.KLDivLoss(reduction="batchmean"), [_f(2, 3), _pos(2, 3)]),
    "GaussianNLLLoss": (nn.GaussianNLLLoss, [_f(2, 3), _f(2, 3), _pos(2, 3)]),
}

# Modules that are bases or containers, not layers with a computation of their own.
NOT_LAYERS = {"Module", "Sequential", "ModuleList", "ModuleDict", "Parameter"}


def test_catalogue_names_every_layer() -> None:
    exported = {obj for name, obj in vars(nn).items() if inspect.isclass(obj)
                and issubclass(obj, nn.Module) and not name.startswith("_")
                and name not in NOT_LAYERS}
    covered = {type(make()) for make, _ in LAYERS.values()}
    missing = sorted(cls.__name__ for cls in exported - covered)
    assert not missing, f"layers without a transform test: {missing}"


def _setup(name: str, seed: int = 0):
    make, makers = LAYERS[name]
    pb.manual_seed(seed)
    module = make().double()
    rng = np.random.default_rng(seed)
    samples = [[m(rng) for m in makers] for _ in range(B)]
    return module, samples


def _floats(out: Any) -> list[pb.Tensor]:
    return [o for o in tree_flatten(out)[0] if isinstance(o, pb.Tensor) and o.dtype.kind == "f"]


def _scalar(out: Any) -> pb.Tensor:
    total = None
    for o in _floats(out):
        total = o.sum() if total is None else total + o.sum()
    return total


@pytest.fixture(autouse=True)
def _no_fallback():
    with warnings.catch_warnings():
        warnings.simplefilter("error", VmapFallbackWarning)
        yield


@pytest.mark.parametrize("name", list(LAYERS))
def test_vmap_matches_loop(name) -> None:
    module, samples = _setup(name)
    batched = [pb.tensor(np.stack([s[k] for s in samples])) for k in range(len(samples[0]))]
    got = _floats(vmap(lambda *xs: module(*xs))(*batched))
    for b in range(B):
        want = _floats(module(*[pb.tensor(x) for x in samples[b]]))
        for g, w in zip(got, want):
            np.testing.assert_allclose(g.detach().numpy()[b], w.detach().numpy(), rtol=1e-10,
                                       atol=1e-12, err_msg=f"{name} sample {b}")


@pytest.mark.parametrize("name", [n for n in LAYERS if list(LAYERS[n][0]().parameters())])
def test_per_sample_gradients_match_loop(name) -> None:
    module, samples = _setup(name)
    params = {k: v.detach() for k, v in module.named_parameters()}
    batched = [pb.tensor(np.stack([s[k] for s in samples])) for k in range(len(samples[0]))]

    def loss(p, *xs):
        return _scalar(functional_call(module, p, xs))

    per_sample = vmap(grad(loss), in_dims=(None,) + (0,) * len(batched))(params, *batched)
    for b in range(B):
        module.zero_grad()
        _scalar(module(*[pb.tensor(x) for x in samples[b]])).backward()
        for k, p in module.named_parameters():
            want = p.grad.numpy() if p.grad is not None else np.zeros(p.shape)
            np.testing.assert_allclose(per_sample[k].numpy()[b], want, rtol=1e-9, atol=1e-11,
                                       err_msg=f"{name} {k} sample {b}")


@pytest.mark.parametrize("name", list(LAYERS))
def test_jvp_matches_finite_differences(name) -> None:
    module, samples = _setup(name)
    xs = [pb.tensor(x) for x in samples[0]]
    k = next((i for i, x in enumerate(xs) if x.dtype.kind == "f"), None)
    if k is None:  # integer inputs (Embedding): the tangent is the weight's
        params = {n: v.detach() for n, v in module.named_parameters()}
        first = next(iter(params))

        def f(v):
            return _floats(functional_call(module, {**params, first: v}, tuple(xs)))

        point = params[first]
    else:
        def f(v):
            return _floats(module(*xs[:k], v, *xs[k + 1:]))

        point = xs[k]
    t = pb.tensor(np.random.default_rng(1).standard_normal(point.shape) * 1e-1)
    _, tangent = jvp(f, (point,), (t,))
    eps = 1e-6
    plus, minus = f(point + eps * t), f(point - eps * t)
    for o, p, m in zip(tangent, plus, minus):
        fd = (p.detach().numpy() - m.detach().numpy()) / (2 * eps)
        np.testing.assert_allclose(o.detach().numpy(), fd, rtol=1e-5, atol=1e-7, err_msg=name)


def test_batchnorm_in_training_mode_is_refused() -> None:
    module = nn.BatchNorm1d(3).double()  # training mode: updates its running statistics
    with pytest.raises((pb.func.VmapError, pb.errors.PullbackError)):
        vmap(module)(pb.tensor(np.random.default_rng(0).standard_normal((4, 2, 3))))


def test_attention_with_batched_boolean_masks() -> None:
    F = pytest.importorskip("pullback.nn.functional")
    rng = np.random.default_rng(4)
    q = pb.tensor(rng.standard_normal((3, 4, 2)))
    mask = pb.tensor(rng.random((3, 4, 4)) > 0.3)
    got = vmap(lambda a, m: F.scaled_dot_product_attention(a, a, a, attn_mask=m))(q, mask)
    for i in range(3):
        want = F.scaled_dot_product_attention(q[i], q[i], q[i], attn_mask=mask[i])
        np.testing.assert_allclose(got.numpy()[i], want.numpy(), rtol=1e-12)
