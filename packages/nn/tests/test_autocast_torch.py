"""CPU autocast against PyTorch's: under ``autocast("cpu", dtype=bfloat16)`` every op and layer
below gives the dtype torch's gives (products, convolutions, attention and recurrent layers in
bfloat16; losses and the float32 list in float32; the rest in their inputs' dtype), for float32
and for bfloat16 inputs, with values that agree within bfloat16's rounding; gradients reach
float32 leaves in float32."""

from __future__ import annotations

from typing import Any, Callable

import numpy as np
import pytest

import pullback
import pullback.nn as pnn

torch = pytest.importorskip("torch", reason="PyTorch, the oracle, is installed for Python 3.11 only")

LIBRARIES = {"torch": (torch, torch.nn), "pullback": (pullback, pnn)}


def _labels(lib: Any) -> Any:
    return lib.tensor([0, 1, 2, 3])


# name -> case(lib, nn, x) where x is a (4, 4) tensor of the dtype under test
CASES: dict[str, Callable[[Any, Any, Any], Any]] = {
    # bfloat16 on PyTorch's CPU list
    "matmul": lambda lib, nn, x: x @ x,
    "mm": lambda lib, nn, x: lib.mm(x, x),
    "bmm": lambda lib, nn, x: lib.bmm(x[None], x[None]),
    "addmm": lambda lib, nn, x: lib.addmm(x, x, x),
    "baddbmm": lambda lib, nn, x: lib.baddbmm(x[None], x[None], x[None]),
    "einsum": lambda lib, nn, x: lib.einsum("ij,jk->ik", x, x),
    "tensordot": lambda lib, nn, x: lib.tensordot(x, x, 1),
    "linear": lambda lib, nn, x: nn.functional.linear(x, x, x[0]),
    "conv1d": lambda lib, nn, x: nn.functional.conv1d(x.reshape(1, 1, 16),
                                                      x[0, :3].reshape(1, 1, 3)),
    "conv2d": lambda lib, nn, x: nn.functional.conv2d(x.reshape(1, 1, 4, 4),
                                                      x[:2, :2].reshape(1, 1, 2, 2)),
    "conv_transpose2d": lambda lib, nn, x: nn.functional.conv_transpose2d(
        x.reshape(1, 1, 4, 4), x[:2, :2].reshape(1, 1, 2, 2)),
    "prelu": lambda lib, nn, x: nn.functional.prelu(x, x[0, :1]),
    "attention": lambda lib, nn, x: nn.functional.scaled_dot_product_attention(
        x[None], x[None], x[None]),
    # float32 on PyTorch's CPU list
    "prod": lambda lib, nn, x: x.prod(),
    "quantile": lambda lib, nn, x: lib.quantile(x, 0.5),
    "mse_loss": lambda lib, nn, x: nn.functional.mse_loss(x, x * 2),
    "l1_loss": lambda lib, nn, x: nn.functional.l1_loss(x, x * 2),
    "smooth_l1_loss": lambda lib, nn, x: nn.functional.smooth_l1_loss(x, x * 2),
    "huber_loss": lambda lib, nn, x: nn.functional.huber_loss(x, x * 2),
    "cross_entropy": lambda lib, nn, x: nn.functional.cross_entropy(x, _labels(lib)),
    "cross_entropy_smoothing": lambda lib, nn, x: nn.functional.cross_entropy(
        x, _labels(lib), label_smoothing=0.1),
    "nll_loss": lambda lib, nn, x: nn.functional.nll_loss(x, _labels(lib)),
    "kl_div": lambda lib, nn, x: nn.functional.kl_div(x, nn.functional.softmax(x, -1), reduction="batchmean"),
    "binary_cross_entropy": lambda lib, nn, x: nn.functional.binary_cross_entropy(
        x.sigmoid(), x.sigmoid()),
    "bce_with_logits": lambda lib, nn, x: nn.functional.binary_cross_entropy_with_logits(
        x, x.sigmoid()),
    "margin_ranking_loss": lambda lib, nn, x: nn.functional.margin_ranking_loss(x, x * 0.5,
                                                                                x.sign()),
    "hinge_embedding_loss": lambda lib, nn, x: nn.functional.hinge_embedding_loss(x, x.sign()),
    "soft_margin_loss": lambda lib, nn, x: nn.functional.soft_margin_loss(x, x.sign()),
    "poisson_nll_loss": lambda lib, nn, x: nn.functional.poisson_nll_loss(x, x.abs()),
    "max_pool3d": lambda lib, nn, x: nn.functional.max_pool3d(x.reshape(1, 1, 1, 4, 4),
                                                              (1, 2, 2)),
    "inverse": lambda lib, nn, x: lib.linalg.inv(x + 4 * lib.eye(4, dtype=x.dtype)),
    # neither: they run in their inputs' dtype
    "softmax": lambda lib, nn, x: nn.functional.softmax(x, -1),
    "log_softmax": lambda lib, nn, x: nn.functional.log_softmax(x, -1),
    "layer_norm": lambda lib, nn, x: nn.functional.layer_norm(x, (4,)),
    "group_norm": lambda lib, nn, x: nn.functional.group_norm(x.reshape(1, 4, 4), 2),
    "sum": lambda lib, nn, x: x.sum(),
    "mean": lambda lib, nn, x: x.mean(),
    "exp": lambda lib, nn, x: x.exp(),
    "pow": lambda lib, nn, x: x.pow(2),
    "pad_reflect": lambda lib, nn, x: nn.functional.pad(x.reshape(1, 1, 4, 4), (1, 1, 1, 1),
                                                        mode="reflect"),
    "pad_replicate": lambda lib, nn, x: nn.functional.pad(x.reshape(1, 4, 4), (1, 1),
                                                          mode="replicate"),
    "pad_constant": lambda lib, nn, x: nn.functional.pad(x, (1, 1)),
    "relu": lambda lib, nn, x: x.relu(),
    "gelu": lambda lib, nn, x: nn.functional.gelu(x),
    "cumsum": lambda lib, nn, x: x.cumsum(0),
    "cosine_similarity": lambda lib, nn, x: nn.functional.cosine_similarity(x, x + 1),
    "avg_pool2d": lambda lib, nn, x: nn.functional.avg_pool2d(x.reshape(1, 1, 4, 4), 2),
    "outer": lambda lib, nn, x: lib.outer(x[0], x[1]),
    "cat_with_float32": lambda lib, nn, x: lib.cat([x, x.float()]),
}


def _run(name: str, lib: Any, nn: Any, dtype_name: str) -> Any:
    x = lib.tensor(np.random.default_rng(0).uniform(-1.0, 1.0, (4, 4)).astype(np.float32))
    x = x.to(getattr(lib, dtype_name))
    with lib.autocast("cpu", dtype=lib.bfloat16):
        return CASES[name](lib, nn, x)


def _dtype_name(t: Any) -> str:
    return str(t.dtype).replace("torch.", "")


@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
@pytest.mark.parametrize("name", sorted(CASES))
def test_an_op_under_cpu_autocast_has_pytorch_s_dtype_and_values(name, dtype):
    ours = _run(name, pullback, pnn, dtype)
    theirs = _run(name, torch, torch.nn, dtype)
    assert _dtype_name(ours) == _dtype_name(theirs)
    want = theirs.detach().float().numpy()
    got = ours.detach().float().numpy()
    scale = max(1.0, float(np.abs(want).max()))
    np.testing.assert_allclose(got, want, rtol=3e-2, atol=3e-2 * scale)


@pytest.mark.parametrize("layer", ["LSTM", "GRU", "MultiheadAttention", "Conv2d", "Linear"])
def test_layers_under_cpu_autocast_give_pytorch_s_dtype(layer):
    dtypes = {}
    for name, (lib, nn) in LIBRARIES.items():
        lib.manual_seed(0)
        x = lib.ones(2, 3, 4)
        args = {"LSTM": (4, 5), "GRU": (4, 5), "MultiheadAttention": (4, 2), "Conv2d": (2, 3, 2),
                "Linear": (4, 2)}[layer]
        module = getattr(nn, layer)(*args)
        with lib.autocast("cpu", dtype=lib.bfloat16):
            out = module(x, x, x) if layer == "MultiheadAttention" else module(x)
        out = out[0] if isinstance(out, tuple) else out
        dtypes[name] = _dtype_name(out)
    assert dtypes["pullback"] == dtypes["torch"]


def test_gradients_reach_float32_leaves_in_float32_as_pytorch_s():
    grads = {}
    for name, (lib, nn) in LIBRARIES.items():
        w = lib.tensor(np.linspace(-1, 1, 12, dtype=np.float32).reshape(4, 3), requires_grad=True)
        x = lib.tensor(np.linspace(0, 1, 8, dtype=np.float32).reshape(2, 4))
        with lib.autocast("cpu", dtype=lib.bfloat16):
            loss = nn.functional.mse_loss(x @ w, lib.zeros(2, 3))
        loss.backward()
        grads[name] = (w.grad.dtype, w.grad.numpy())
    assert str(grads["pullback"][0]) == str(grads["torch"][0]).replace("torch.", "")
    np.testing.assert_allclose(grads["pullback"][1], grads["torch"][1], rtol=2e-2, atol=2e-3)
