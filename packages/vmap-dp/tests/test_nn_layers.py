"""Every layer of pullback.nn under the transforms, through batching and jvp rules of its own
ops (no layer runs through the loop fallback): vmap against a loop over samples, per-sample
gradients (vmap(grad) through functional_call) against a loop of backward passes, jvp against
finite differences; per-sample gradients of the layers that have a PyTorch twin against
torch.func. The catalogue (func_nn_layers.py) must name every Module that pullback.nn exports."""

from __future__ import annotations

import inspect
import warnings
from typing import Any

import numpy as np
import pytest

import pullback as pb
from pullback.func import VmapFallbackWarning, functional_call, grad, jvp, vmap
from pullback.func._pytree import tree_flatten

nn = pytest.importorskip("pullback.nn")

from func_nn_layers import (  # noqa: E402
    FUNCTIONALS, LAYERS, NOT_LAYERS, REFUSED, TORCH_FUNC_FAILS, TORCH_TWINS)

B = 3


def test_catalogue_names_every_layer() -> None:
    exported = {obj for name, obj in vars(nn).items() if inspect.isclass(obj)
                and issubclass(obj, nn.Module) and not name.startswith("_")
                and name not in NOT_LAYERS}
    covered = {type(make()) for make, _ in LAYERS.values()}
    covered |= {type(make()) for make, _, _ in REFUSED.values()}
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


@pytest.mark.parametrize("name", list(TORCH_TWINS))
def test_per_sample_gradients_match_torch_func(name) -> None:
    torch = pytest.importorskip("torch")
    module, samples = _setup(name)
    twin = TORCH_TWINS[name](torch.nn).double()
    params = {k: v.detach() for k, v in module.named_parameters()}
    twin.load_state_dict({k: torch.tensor(v.numpy()) for k, v in params.items()}, strict=False)
    batched = [np.stack([s[k] for s in samples]) for k in range(len(samples[0]))]

    def ours(p, *xs):
        return _scalar(functional_call(module, p, xs))

    def theirs(p, *xs):
        outs = torch.func.functional_call(twin, p, xs)
        leaves = [o for o in torch.utils._pytree.tree_leaves(outs) if o.is_floating_point()]
        return sum(o.sum() for o in leaves)

    got = vmap(grad(ours), in_dims=(None,) + (0,) * len(batched))(
        params, *[pb.tensor(x) for x in batched])
    twin_params = dict(twin.named_parameters())
    if name in TORCH_FUNC_FAILS:  # a loop of torch backward passes instead (see the catalogue)
        rows = [torch.autograd.grad(theirs(twin_params, *[torch.tensor(x[b]) for x in batched]),
                                    list(twin_params.values())) for b in range(B)]
        want = {k: torch.stack([r[i] for r in rows]) for i, k in enumerate(twin_params)}
    else:
        want = torch.func.vmap(torch.func.grad(theirs), in_dims=(None,) + (0,) * len(batched))(
            twin_params, *[torch.tensor(x) for x in batched])
    assert set(got) == set(want)
    for k in got:
        np.testing.assert_allclose(got[k].numpy(), want[k].detach().numpy(), rtol=1e-9,
                                   atol=1e-11, err_msg=f"{name} {k}")


@pytest.mark.parametrize("name", list(REFUSED))
def test_refused_layers_raise_a_clear_error(name) -> None:
    make, makers, reason = REFUSED[name]
    module = make().double()
    rng = np.random.default_rng(0)
    batched = [pb.tensor(np.stack([m(rng) for _ in range(B)])) for m in makers]
    with pytest.raises(pb.errors.PullbackError, match=reason):
        vmap(lambda *xs: module(*xs))(*batched)


@pytest.mark.parametrize("name", ["LSTM-bidirectional-projected", "GRU", "RNNCell"])
def test_recurrent_layers_with_per_sample_weights(name) -> None:
    """vmap over models: the batched-weights path of nn.recurrent_layer's batching rule."""
    module, samples = _setup(name)
    params = {k: v.detach().numpy() for k, v in module.named_parameters()}
    scales = [1.0, 0.7, 1.3]
    stacked = {k: pb.tensor(np.stack([v * s for s in scales])) for k, v in params.items()}
    batched = [pb.tensor(np.stack([s[k] for s in samples])) for k in range(len(samples[0]))]
    got = _floats(vmap(lambda p, *xs: functional_call(module, p, xs))(stacked, *batched))
    for b, s in enumerate(scales):
        own = {k: pb.tensor(v * s) for k, v in params.items()}
        want = _floats(functional_call(module, own, tuple(pb.tensor(x) for x in samples[b])))
        for g, w in zip(got, want):
            np.testing.assert_allclose(g.detach().numpy()[b], w.detach().numpy(), rtol=1e-10,
                                       atol=1e-12, err_msg=f"{name} sample {b}")


def test_packed_sequences_under_vmap_and_per_sample_gradients() -> None:
    """Packed sequences carry per-element lengths: the batching rule repeats them per sample."""
    pack = nn.utils.rnn.pack_padded_sequence
    module = nn.LSTM(3, 4).double()
    params = {k: v.detach() for k, v in module.named_parameters()}
    xs = np.random.default_rng(5).standard_normal((B, 4, 2, 3))

    def loss(p, x):
        out, (h, c) = functional_call(module, p, (pack(x, [4, 2], enforce_sorted=False),))
        return (out.data ** 2).sum() + h.sum() + c.sum()

    per_sample = vmap(grad(loss), in_dims=(None, 0))(params, pb.tensor(xs))
    for b in range(B):
        module.zero_grad()
        loss(dict(module.named_parameters()), pb.tensor(xs[b])).backward()
        for k, p in module.named_parameters():
            np.testing.assert_allclose(per_sample[k].numpy()[b], p.grad.numpy(), rtol=1e-9,
                                       atol=1e-11, err_msg=f"{k} sample {b}")


def test_recurrent_jacobians_and_hessian_compose() -> None:
    """jacfwd (vmap of the reference's jvp) equals jacrev (the "vjp" rule), and the Hessian
    (jacfwd of jacrev) equals central differences of the gradient."""
    from pullback.func import hessian, jacfwd, jacrev

    pb.manual_seed(0)
    module = nn.GRU(2, 3, batch_first=True).double()
    x = np.random.default_rng(6).standard_normal((1, 3, 2))
    np.testing.assert_allclose(jacfwd(lambda v: module(v)[0])(pb.tensor(x)).detach().numpy(),
                               jacrev(lambda v: module(v)[0])(pb.tensor(x)).detach().numpy(),
                               rtol=1e-10, atol=1e-13)

    def energy(v):
        return (module(v)[0] ** 2).sum()

    h = hessian(energy)(pb.tensor(x)).detach().numpy().reshape(x.size, x.size)
    eps, fd = 1e-5, np.empty((x.size, x.size))
    for k in range(x.size):
        step = np.zeros(x.size)
        step[k] = eps
        plus = grad(energy)(pb.tensor(x + step.reshape(x.shape))).detach().numpy().reshape(-1)
        minus = grad(energy)(pb.tensor(x - step.reshape(x.shape))).detach().numpy().reshape(-1)
        fd[:, k] = (plus - minus) / (2 * eps)
    np.testing.assert_allclose(h, fd, rtol=1e-6, atol=1e-8)


@pytest.mark.parametrize("wrap", ["weight_norm", "spectral_norm", "parametrizations.weight_norm",
                                  "parametrizations.spectral_norm"])
def test_per_sample_gradients_through_reparametrized_weights(wrap) -> None:
    """functional_call replaces the parameters a reparametrization reads (weight_g/weight_v,
    weight_orig, parametrizations.weight.original*): per-sample gradients reach them. Spectral
    norm runs in eval mode (its power iteration updates buffers in place in training)."""
    pb.manual_seed(0)
    fn = nn.utils
    for part in wrap.split("."):
        fn = getattr(fn, part)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)  # the hook-based weight_norm, as torch
        module = fn(nn.Linear(4, 3)).double()
    if "spectral" in wrap:
        module.eval()
    params = {k: v.detach() for k, v in module.named_parameters()}
    assert "weight" not in params  # the reparametrized originals only
    xs = np.random.default_rng(7).standard_normal((B, 2, 4))

    def loss(p, x):
        return (functional_call(module, p, (x,)) ** 2).sum()

    per_sample = vmap(grad(loss), in_dims=(None, 0))(params, pb.tensor(xs))
    for b in range(B):
        module.zero_grad()
        (module(pb.tensor(xs[b])) ** 2).sum().backward()
        for k, p in module.named_parameters():
            assert np.abs(p.grad.numpy()).max() > 0
            np.testing.assert_allclose(per_sample[k].numpy()[b], p.grad.numpy(), rtol=1e-10,
                                       atol=1e-12, err_msg=f"{wrap} {k} sample {b}")


@pytest.mark.parametrize("name", list(FUNCTIONALS))
def test_functional_composites_under_vmap_and_jvp(name) -> None:
    """nn.functional's composites without a layer (grid_sample, affine_grid, pdist...): vmap
    against a loop, jvp along each input against central differences."""
    f, shapes = FUNCTIONALS[name]
    rng = np.random.default_rng(8)
    xs = [0.8 * rng.standard_normal((B,) + s) for s in shapes]
    got = vmap(f)(*[pb.tensor(x) for x in xs]).detach().numpy()
    for b in range(B):
        want = f(*[pb.tensor(x[b]) for x in xs]).detach().numpy()
        np.testing.assert_allclose(got[b], want, rtol=1e-12, atol=1e-12, err_msg=name)
    point = [pb.tensor(x[0]) for x in xs]
    for k, shape in enumerate(shapes):
        t = pb.tensor(rng.standard_normal(shape))

        def along(v, k=k):
            return f(*point[:k], v, *point[k + 1:])

        _, tangent = jvp(along, (point[k],), (t,))
        eps = 1e-6
        fd = (along(point[k] + eps * t).detach().numpy()
              - along(point[k] - eps * t).detach().numpy()) / (2 * eps)
        np.testing.assert_allclose(tangent.detach().numpy(), fd, rtol=1e-5, atol=1e-7,
                                   err_msg=f"{name} input {k}")
