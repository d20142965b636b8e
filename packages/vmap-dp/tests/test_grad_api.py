"""grad, grad_and_value, vjp, functional_call and their compositions: gradients of nn models
against PyTorch (float64), per-sample gradients (vmap(grad)) against a loop of backward passes
and against torch.func, higher orders, and the errors."""

from __future__ import annotations

import numpy as np
import pytest

import pullback as pb
import pullback.nn as nn
import pullback.nn.functional as F
from pullback.func import (
    FuncError, functional_call, grad, grad_and_value, jacrev, jvp, vjp, vmap,
)

torch = pytest.importorskip("torch")


def _mlp() -> nn.Module:
    pb.manual_seed(0)
    return nn.Sequential(nn.Linear(12, 16), nn.Tanh(), nn.Linear(16, 5)).double()


def _cnn() -> nn.Module:
    pb.manual_seed(1)
    return nn.Sequential(nn.Conv2d(1, 4, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                         nn.Conv2d(4, 6, 3, stride=2), nn.GELU(), nn.Flatten(),
                         nn.Linear(6, 5)).double()


def _torch_mlp(p, x):
    h = torch.tanh(x @ p["0.weight"].T + p["0.bias"])
    return h @ p["2.weight"].T + p["2.bias"]


def _torch_cnn(p, x):
    tf = torch.nn.functional
    h = tf.max_pool2d(tf.relu(tf.conv2d(x, p["0.weight"], p["0.bias"], padding=1)), 2)
    h = tf.gelu(tf.conv2d(h, p["3.weight"], p["3.bias"], stride=2)).flatten(1)
    return h @ p["6.weight"].T + p["6.bias"]


def _params(model):
    return {k: v.detach() for k, v in model.named_parameters()}


def _torch_params(params):
    return {k: torch.tensor(v.numpy()) for k, v in params.items()}


MODELS = {"mlp": (_mlp, _torch_mlp, (12,)), "cnn": (_cnn, _torch_cnn, (1, 6, 6))}


@pytest.mark.parametrize("name", list(MODELS))
def test_per_sample_gradients_match_loop_and_torch_func(name) -> None:
    make, torch_fn, shape = MODELS[name]
    model = make()
    params = _params(model)
    rng = np.random.default_rng(0)
    x = pb.tensor(rng.standard_normal((7,) + shape))
    t = pb.tensor(rng.integers(0, 5, 7))

    def loss(p, xi, ti):
        out = functional_call(model, p, (xi.unsqueeze(0),))
        return F.cross_entropy(out, ti.unsqueeze(0))

    per_sample = vmap(grad(loss), in_dims=(None, 0, 0))(params, x, t)
    # a loop of ordinary backward passes
    for i in range(7):
        model.zero_grad()
        F.cross_entropy(model(x[i:i + 1]), t[i:i + 1]).backward()
        for k, p in model.named_parameters():
            np.testing.assert_allclose(per_sample[k].numpy()[i], p.grad.numpy(), rtol=1e-10,
                                       atol=1e-12, err_msg=f"{name} {k} sample {i}")
    # torch.func
    tp = _torch_params(params)

    def torch_loss(p, xi, ti):
        return torch.nn.functional.cross_entropy(torch_fn(p, xi.unsqueeze(0)), ti.unsqueeze(0))

    ref = torch.func.vmap(torch.func.grad(torch_loss), in_dims=(None, 0, 0))(
        tp, torch.tensor(x.numpy()), torch.tensor(t.numpy()))
    for k in params:
        np.testing.assert_allclose(per_sample[k].numpy(), ref[k].numpy(), rtol=1e-10,
                                   atol=1e-12, err_msg=f"{name} {k} vs torch.func")


def test_grad_argnums_has_aux_and_value() -> None:
    def f(x, y):
        z = (x * y.exp()).sum()
        return z, {"z2": z * 2}

    x, y = pb.tensor([1.0, 2.0], dtype="float64"), pb.tensor([0.5, -1.0], dtype="float64")
    (gx, gy), aux = grad(f, argnums=(0, 1), has_aux=True)(x, y)
    np.testing.assert_allclose(gx.numpy(), np.exp(y.numpy()))
    np.testing.assert_allclose(gy.numpy(), x.numpy() * np.exp(y.numpy()))
    g, (value, aux2) = grad_and_value(f, argnums=1, has_aux=True)(x, y)
    np.testing.assert_allclose(value.numpy(), (x.numpy() * np.exp(y.numpy())).sum())
    np.testing.assert_allclose(aux2["z2"].numpy(), 2 * value.numpy())
    assert not isinstance(aux["z2"], pb.func._vjp.TrackedTensor)


def test_higher_order_grad_of_grad() -> None:
    x = pb.tensor([0.3, -1.2, 2.0], dtype="float64")
    d3 = grad(lambda z: grad(lambda w: grad(lambda v: pb.sin(v).sum())(w).sum())(z).sum())(x)
    np.testing.assert_allclose(d3.numpy(), -np.cos(x.numpy()))


def test_closure_over_outer_variable_no_perturbation_confusion() -> None:
    # d/dx [x * d/dy (x * y)] = d/dx [x * x] = 2x (the inner grad must not see the outer x)
    x = pb.tensor(3.0, dtype="float64")
    out = grad(lambda a: a * grad(lambda b: a * b)(pb.tensor(1.0, dtype="float64")))(x)
    assert out.item() == pytest.approx(6.0)


def test_vjp_pytree_output_and_cotangents() -> None:
    x = pb.tensor([1.0, 2.0], dtype="float64")
    out, fn = vjp(lambda v: {"a": v * 2, "b": (v.sum(), v ** 2)}, x)
    (g,) = fn({"a": pb.ones(2, dtype="float64"), "b": (pb.tensor(1.0, dtype="float64"),
                                                        pb.ones(2, dtype="float64"))})
    np.testing.assert_allclose(g.numpy(), 2 + 1 + 2 * x.numpy())
    with pytest.raises(FuncError, match="cotangent 0 has shape"):
        fn({"a": pb.ones(3), "b": (pb.tensor(1.0), pb.ones(2))})


def test_unused_input_gets_zeros() -> None:
    g = grad(lambda x, y: (x * 2).sum(), argnums=(0, 1))(pb.ones(2), pb.ones(3))
    assert g[1].tolist() == [0.0, 0.0, 0.0]


def test_grad_needs_a_scalar() -> None:
    with pytest.raises(FuncError, match="one element"):
        grad(lambda x: x * 2)(pb.ones(3))
    with pytest.raises(FuncError, match="argnums 2 is out of range"):
        grad(lambda x: x.sum(), argnums=2)(pb.ones(3))


def test_inplace_inside_grad() -> None:
    def f(x):
        h = x * 2
        h.mul_(x)  # h = 2 x^2
        h.add_(1.0)
        h[0] = 5.0 * x[1]
        return h.sum()

    x = pb.tensor([1.0, 2.0, 3.0], dtype="float64")
    np.testing.assert_allclose(grad(f)(x).numpy(), [0.0, 8.0 + 5.0, 12.0])
    with pytest.raises(FuncError, match="input of vjp/grad cannot be modified"):
        grad(lambda x: x.mul_(2).sum())(x)


def test_no_grad_inside_grad_is_respected() -> None:
    def f(x):
        with pb.no_grad():
            c = x * 3
        return (c * x).sum()

    x = pb.tensor([1.0, 2.0], dtype="float64")
    np.testing.assert_allclose(grad(f)(x).numpy(), 3 * x.numpy())


def test_grad_composes_with_pullback_autograd() -> None:
    x = pb.tensor([0.5, 1.5], dtype="float64", requires_grad=True)
    g = grad(lambda v: (v ** 3).sum())(x)
    g.sum().backward()  # the gradient is itself on pullback's tape
    np.testing.assert_allclose(x.grad.numpy(), 6 * x.detach().numpy())


def test_jvp_of_grad_is_a_hessian_vector_product() -> None:
    x = pb.tensor([0.5, -1.0, 2.0], dtype="float64")
    v = pb.tensor([1.0, 0.5, -2.0], dtype="float64")
    f = lambda z: (pb.sin(z) * z.sum()).sum()  # noqa: E731
    _, hv = jvp(grad(f), (x,), (v,))
    h = torch.func.hessian(lambda z: (torch.sin(z) * z.sum()).sum())(torch.tensor(x.numpy()))
    np.testing.assert_allclose(hv.numpy(), (h @ torch.tensor(v.numpy())).numpy(), rtol=1e-12)


def test_functional_call_restores_and_ties() -> None:
    pytest.importorskip("pullback.gpt")
    from pullback.gpt import GPT, GPTConfig

    model = GPT(GPTConfig(vocab_size=7, block_size=4, n_layer=1, n_head=1, n_embd=4))
    original = model.lm_head.weight
    new = pb.zeros_like(original.detach())
    idx = pb.tensor([[1, 2, 3]])
    logits, _ = functional_call(model, {"transformer.wte.weight": new}, (idx,))
    assert np.all(logits.detach().numpy() == 0.0)  # the tied head followed the embedding
    assert model.lm_head.weight is original and model.transformer.wte.weight is original
    with pytest.raises(FuncError, match="no parameter or buffer named nope"):
        functional_call(model, {"nope": new}, (idx,))
    with pytest.raises(FuncError, match="strict=True"):
        functional_call(model, {"transformer.wte.weight": new}, (idx,), strict=True)


def test_vmap_over_models_ensembling() -> None:
    models = [_mlp() for _ in range(3)]
    stacked = {k: pb.stack([dict(m.named_parameters())[k].detach() for m in models])
               for k, _ in models[0].named_parameters()}
    x = pb.tensor(np.random.default_rng(0).standard_normal((4, 12)))
    out = vmap(lambda p: functional_call(models[0], p, (x,)))(stacked)
    for i, m in enumerate(models):
        np.testing.assert_allclose(out.numpy()[i], m(x).detach().numpy(), rtol=1e-12)


def test_jacrev_of_vector_function_matches_torch() -> None:
    x = np.random.default_rng(0).standard_normal(4)
    ours = jacrev(lambda z: pb.tanh(z) * z.sum())(pb.tensor(x))
    ref = torch.func.jacrev(lambda z: torch.tanh(z) * z.sum())(torch.tensor(x))
    np.testing.assert_allclose(ours.numpy(), ref.numpy(), rtol=1e-12)


def test_vmap_of_jvp_batched_tangents() -> None:
    rng = np.random.default_rng(5)
    x = pb.tensor(rng.standard_normal(4))
    tangents = pb.tensor(rng.standard_normal((6, 4)))
    f = lambda z: pb.tanh(z) * z.sum()  # noqa: E731
    batched = vmap(lambda t: jvp(f, (x,), (t,))[1])(tangents)
    for i in range(6):
        np.testing.assert_allclose(batched.numpy()[i], jvp(f, (x,), (tangents[i],))[1].numpy(),
                                   rtol=1e-12)


def test_linearize_matches_jvp_without_recomputing() -> None:
    from pullback.func import linearize

    x = pb.tensor([0.3, -0.7, 1.1], dtype="float64")
    f = lambda z: pb.exp(z) * pb.sin(z).sum()  # noqa: E731
    out, jvp_fn = linearize(f, x)
    for seed in range(3):
        t = pb.tensor(np.random.default_rng(seed).standard_normal(3))
        np.testing.assert_allclose(jvp_fn(t).numpy(), jvp(f, (x,), (t,))[1].numpy(), rtol=1e-12)
    np.testing.assert_allclose(out.numpy(), f(x).numpy())


def test_forward_over_forward_second_derivative() -> None:
    x = pb.tensor([0.5, 1.5], dtype="float64")
    one = pb.ones(2, dtype="float64")
    second = jvp(lambda z: jvp(pb.sin, (z,), (one,))[1], (x,), (one,))[1]
    np.testing.assert_allclose(second.numpy(), -np.sin(x.numpy()))
