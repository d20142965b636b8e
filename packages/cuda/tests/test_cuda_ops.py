"""Core (and nn) ops on the GPU give what they give on the CPU, forward and backward.

A compact cross-device check of the generic kernels on CuPy, with the ops whose kernels branch
on the namespace (erf/gelu through cupyx.scipy.special, scatter-adds through cupyx) and those
that build index arrays on the host (reflect padding, advanced indexing). The backend
conformance suite (pullback.testing.conformance) covers every op of the registry.
"""

from __future__ import annotations

from typing import Any, Callable

import numpy as np
import pytest

import pullback as pb

pytestmark = pytest.mark.cuda

RNG = np.random.default_rng(0)


def _f(*shape: int) -> np.ndarray:
    return RNG.uniform(0.5, 2.0, size=shape).astype(np.float32) * RNG.choice([-1, 1], size=shape)


def _pos(*shape: int) -> np.ndarray:
    return RNG.uniform(0.5, 2.0, size=shape).astype(np.float32)


IDX = np.array([2, 0, 2, 1])

CASES: dict[str, tuple[Callable[..., Any], list[np.ndarray]]] = {
    "add_broadcast": (lambda a, b: a + b, [_f(3, 4), _f(4)]),
    "mul_div_pow": (lambda a, b: a * b / (b * b + 1.0) ** 1.5, [_f(3, 4), _f(3, 4)]),
    "exp_log": (lambda a: pb.log(pb.exp(a) + 1.0), [_f(5)]),
    "tanh_sigmoid_silu": (lambda a: pb.tanh(a) + pb.sigmoid(a) * pb.silu(a), [_f(6)]),
    "erf": (lambda a: pb.erf(a), [_f(7)]),
    "gelu_exact": (lambda a: pb.gelu(a), [_f(7)]),
    "gelu_tanh": (lambda a: pb.gelu(a, approximate="tanh"), [_f(7)]),
    "softplus_clamp": (lambda a: pb.softplus(a) + pb.clamp(a, -1.0, 1.0), [_f(8)]),
    "where_maximum": (lambda a, b: pb.where(a > b, a, b) + pb.maximum(a, b), [_f(4), _f(4)]),
    "sqrt_rsqrt": (lambda a: pb.sqrt(a) + pb.rsqrt(a), [_pos(5)]),
    "reductions": (lambda a: a.sum(axis=0) + a.mean(axis=0) + a.amax(axis=0)
                   + pb.logsumexp(a, axis=0), [_f(4, 3)]),
    "var_std_norm": (lambda a: a.var(axis=1) + a.std(axis=1) + pb.norm(a, axis=1), [_f(3, 5)]),
    "prod_cumsum": (lambda a: a.prod(axis=1) + a.cumsum(axis=1)[:, -1], [_f(3, 4)]),
    "matmul_batched": (lambda a, b: a @ b, [_f(2, 3, 4), _f(4, 5)]),
    "matmul_vector": (lambda a, b: a @ b, [_f(3, 4), _f(4)]),
    "einsum": (lambda a, b: pb.einsum("bij,bjk->bik", a, b), [_f(2, 3, 4), _f(2, 4, 2)]),
    "reshape_permute": (lambda a: a.reshape(4, 6).permute(1, 0) * 2.0, [_f(2, 3, 4)]),
    "cat_stack_split": (lambda a, b: pb.stack([pb.cat([a, b], axis=0)[:2], b * 2.0]),
                        [_f(2, 3), _f(2, 3)]),
    "pad_reflect": (lambda a: pb._ops.pad(a, (2, 1), mode="reflect"), [_f(3, 5)]),
    "pad_constant": (lambda a: pb._ops.pad(a, (1, 2), value=0.5), [_f(3, 5)]),
    "basic_index": (lambda a: a[1:, ::2] * 3.0, [_f(4, 6)]),
    "advanced_index_repeats": (lambda a: a[IDX] * 1.0, [_f(3, 4)]),
    "bool_mask": (lambda a: a[a > 0] * 2.0, [_f(4, 4)]),
    "index_select": (lambda a: pb.index_select(a, 0, pb.tensor(IDX, device=a.device)),
                     [_f(3, 4)]),
    "gather": (lambda a: pb.gather(a, 1, pb.tensor([[0, 0], [2, 1], [1, 1]], device=a.device)),
               [_f(3, 3)]),
    "scatter_add": (lambda a, s: pb.scatter_add(a, 0, pb.tensor([[0, 1], [0, 0]], device=a.device),
                                                s), [_f(2, 2), _f(2, 2)]),
    "tril_flip_roll": (lambda a: pb.tril(a) + pb.flip(a, 0) + pb.roll(a, 1, 1), [_f(3, 3)]),
}


def _run(fn: Callable[..., Any], arrays: list[np.ndarray], device: str) -> tuple[Any, list[Any]]:
    leaves = [pb.tensor(a, device=device, requires_grad=True) for a in arrays]
    out = fn(*leaves)
    weights = pb.tensor(np.linspace(0.5, 1.5, out.numel(), dtype=np.float32).reshape(out.shape),
                        device=device)
    (out * weights).sum().backward()
    return out.detach().numpy(), [t.grad.numpy() if t.grad is not None else None for t in leaves]


@pytest.mark.parametrize("case", sorted(CASES))
def test_op_on_cuda_matches_cpu(case):
    fn, arrays = CASES[case]
    out_cpu, grads_cpu = _run(fn, arrays, "cpu")
    out_gpu, grads_gpu = _run(fn, arrays, "cuda")
    np.testing.assert_allclose(out_gpu, out_cpu, rtol=1e-5, atol=1e-5)
    for g_gpu, g_cpu in zip(grads_gpu, grads_cpu):
        assert (g_gpu is None) == (g_cpu is None)
        if g_cpu is not None:
            np.testing.assert_allclose(g_gpu, g_cpu, rtol=1e-5, atol=1e-5)


def test_integer_and_bool_ops():
    a = np.array([[3, -1, 4], [1, -5, 9]], dtype=np.int64)
    for fn in (lambda x: x // 2, lambda x: x % 3, lambda x: pb.argmax(x, axis=1),
               lambda x: (x > 0).any(axis=0), lambda x: pb.one_hot(x.abs() % 4, 4)):
        np.testing.assert_array_equal(fn(pb.tensor(a, device="cuda")).numpy(),
                                      fn(pb.tensor(a)).numpy())


def test_setitem_and_inplace():
    x = pb.zeros(3, 4, device="cuda")
    x[1] = 2.0
    x[:, 0] = pb.tensor([1.0, 2.0, 3.0], device="cuda")
    x[np.array([2])] = 7.0
    x.add_(1.0).mul_(2.0)
    ref = np.zeros((3, 4), np.float32)
    ref[1] = 2.0
    ref[:, 0] = [1.0, 2.0, 3.0]
    ref[2] = 7.0
    np.testing.assert_array_equal(x.numpy(), (ref + 1.0) * 2.0)


def test_nn_layers_on_cuda_match_cpu():
    nn = pytest.importorskip("pullback.nn", reason="pullback-nn is not installed")
    F = nn.functional
    x, w, b = _f(2, 5, 8), _f(6, 8), _f(6)
    g, beta = _pos(6), _f(6)
    t = np.array([1, 0, 5, 3, 2, 4, 0, 1, 2, 3], dtype=np.int64)
    q = _f(2, 3, 4, 8)

    def model(x, w, b, g, beta, q):
        h = F.linear(x, w, b)
        h = F.layer_norm(h, (6,), g, beta)
        h = F.gelu(h) + F.softmax(h, dim=-1) + F.log_softmax(h, dim=-1)
        loss = F.cross_entropy(h.reshape(10, 6), pb.tensor(t, device=h.device))
        a = F.scaled_dot_product_attention(q, q, q, is_causal=True)
        return loss + a.sum() * 0.01

    out_cpu, grads_cpu = _run(model, [x, w, b, g, beta, q], "cpu")
    out_gpu, grads_gpu = _run(model, [x, w, b, g, beta, q], "cuda")
    np.testing.assert_allclose(out_gpu, out_cpu, rtol=1e-4, atol=1e-5)
    for g_gpu, g_cpu in zip(grads_gpu, grads_cpu):
        np.testing.assert_allclose(g_gpu, g_cpu, rtol=1e-4, atol=1e-5)


def test_conv_and_pool_on_cuda_match_cpu():
    nn = pytest.importorskip("pullback.nn", reason="pullback-nn is not installed")
    F = nn.functional

    def model(x, w):
        y = F.conv2d(x, w, padding=1)
        return F.max_pool2d(y, 2) + F.avg_pool2d(y, 2)

    args = [_f(2, 3, 8, 8), _f(4, 3, 3, 3)]
    out_cpu, grads_cpu = _run(model, args, "cpu")
    out_gpu, grads_gpu = _run(model, args, "cuda")
    np.testing.assert_allclose(out_gpu, out_cpu, rtol=1e-4, atol=1e-4)
    for g_gpu, g_cpu in zip(grads_gpu, grads_cpu):
        np.testing.assert_allclose(g_gpu, g_cpu, rtol=1e-4, atol=1e-4)


def test_nn_init_fills_cuda_tensors_in_place():
    nn = pytest.importorskip("pullback.nn", reason="pullback-nn is not installed")
    init = nn.init
    pb.manual_seed(0)
    w = pb.zeros(64, 32, device="cuda")
    for fill in (init.uniform_, init.normal_, init.trunc_normal_, init.xavier_uniform_,
                 init.kaiming_normal_):
        data = w.array
        fill(w)
        assert w.device.type == "cuda" and w.array is data  # written in place, on the device
        values = w.numpy()
        assert np.isfinite(values).all() and values.std() > 0, fill.__name__
    init.trunc_normal_(w, a=-0.5, b=0.5)
    assert np.abs(w.numpy()).max() <= 0.5
    init.orthogonal_(w)
    np.testing.assert_allclose(w.numpy().T @ w.numpy(), np.eye(32), atol=1e-5)
