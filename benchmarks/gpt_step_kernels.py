"""The GPT step's non-product kernels against PyTorch's, one call each, on the benchmark's shapes
(benchmarks/gpt_step.py: batch 32 x 64 tokens, width 128, 4 heads, MLP width 512).

Each line times one kernel of pullback (the op's CPU kernel, as eager and compiled steps call
it) and PyTorch's ATen op on the same arrays, their blocks alternating (``best_times``), and
prints the ratio. These are the pieces of a compiled step that are not GEMMs
(docs/compiler.md, "The GPT step"):

* exact GELU forward and backward, 2^20 float32 elements;
* layer norm forward and backward (with the weight and bias gradients), 2048 x 128;
* the token embedding's gradient (``take_scatter_add``: 2,048 rows of 128 into 65);
* attention's fused backward into the packed (B, T, 3C) q/k/v gradient
  (``compiler.attention_backward_packed``), against nn's backward followed by the assembly of
  the three head gradients (``compiler.scatter_slices``) that the pass replaces, and against
  PyTorch's flash-attention backward (which returns three arrays, assembled by nothing).

    python benchmarks/gpt_step_kernels.py              # 2 threads, wall clock
    python benchmarks/gpt_step_kernels.py --threads 1 --clock cpu
"""

from __future__ import annotations

# Imported first: it applies --threads before NumPy loads.
from _nn_bench import OPTIONS, torch_module  # isort: skip

import time
from typing import Any, Callable

import numpy as np

import pullback as pb
import pullback.compiler  # noqa: F401  (registers compiler.attention_backward_packed)
import pullback.nn  # noqa: F401  (registers nn's ops)
from _common import best_times, emit
from pullback.registry import get_op

B, T, C, HEADS, HIDDEN, VOCAB = 32, 64, 128, 4, 512, 65
CLOCK = time.process_time if OPTIONS.clock == "cpu" else time.perf_counter


def kernel(name: str) -> Callable[..., Any]:
    return get_op(name).kernel_for("cpu")


def compare(what: str, ours: Callable[[], Any], theirs: Callable[[], Any]) -> None:
    mine, reference = best_times(ours, theirs, rounds=5, repeat=20, clock=CLOCK)
    emit(benchmark="gpt_step_kernels", kernel=what, pullback_ms=round(mine * 1e3, 3),
         torch_ms=round(reference * 1e3, 3), ratio=round(mine / reference, 3),
         threads=OPTIONS.threads, clock=OPTIONS.clock)


def gelu(torch: Any, rng: np.random.Generator) -> None:
    x, g = (rng.standard_normal((B * T, HIDDEN)).astype(np.float32) for _ in range(2))
    tx, tg = torch.from_numpy(x), torch.from_numpy(g)
    forward, backward = kernel("gelu"), kernel("gelu_backward")
    compare("gelu forward", lambda: forward(x), lambda: torch.nn.functional.gelu(tx))
    compare("gelu backward", lambda: backward(g, x), lambda: torch.ops.aten.gelu_backward(tg, tx))


def layer_norm(torch: Any, rng: np.random.Generator) -> None:
    x, g = (rng.standard_normal((B * T, C)).astype(np.float32) for _ in range(2))
    w, b = (rng.standard_normal(C).astype(np.float32) for _ in range(2))
    forward, backward = kernel("nn.layer_norm"), kernel("nn.layer_norm_backward")
    _, (mean, rstd) = forward(x, w, b, normalized_ndim=1, eps=1e-5)
    tx, tg, tw, tb = map(torch.from_numpy, (x, g, w, b))
    _, tmean, trstd = torch.ops.aten.native_layer_norm(tx, [C], tw, tb, 1e-5)
    compare("layer norm forward", lambda: forward(x, w, b, normalized_ndim=1, eps=1e-5),
            lambda: torch.ops.aten.native_layer_norm(tx, [C], tw, tb, 1e-5))
    compare("layer norm backward (+ weight, bias)",
            lambda: backward(g, x, w, mean, rstd, normalized_ndim=1),
            lambda: torch.ops.aten.native_layer_norm_backward(tg, tx, [C], tmean, trstd, tw, tb,
                                                              [True, True, True]))


def embedding_gradient(torch: Any, rng: np.random.Generator) -> None:
    g = rng.standard_normal((B * T, C)).astype(np.float32)
    idx = rng.integers(0, VOCAB, B * T)
    tg, tidx = torch.from_numpy(g), torch.from_numpy(idx)
    scatter = kernel("take_scatter_add")
    compare("embedding gradient (take_scatter_add)",
            lambda: scatter(g, idx, axis=0, shape=(VOCAB, C)),
            lambda: torch.ops.aten.embedding_dense_backward(tg, tidx, VOCAB, -1, False))


def attention_backward(torch: Any, rng: np.random.Generator) -> None:
    dim = C // HEADS
    qkv = rng.standard_normal((B, T, 3 * C)).astype(np.float32)
    q, k, v = (qkv[..., i * C:(i + 1) * C].reshape(B, T, HEADS, dim).transpose(0, 2, 1, 3)
               for i in range(3))
    g = rng.standard_normal((B, T, HEADS, dim)).astype(np.float32).transpose(0, 2, 1, 3)
    scale = dim ** -0.5
    _, (weights,) = kernel("nn.scaled_dot_product_attention")(q, k, v, None, None, scale=scale,
                                                              causal=True)
    backward, assemble = kernel("nn.scaled_dot_product_attention_backward"), kernel(
        "compiler.scatter_slices")
    packed = kernel("compiler.attention_backward_packed")
    keys = tuple((slice(None), slice(None), slice(i * C, (i + 1) * C)) for i in range(3))

    def unpacked() -> Any:
        heads = backward(g, q, k, v, weights, scale=scale, causal=True)
        return assemble(*(h.transpose(0, 2, 1, 3).reshape(B, T, C) for h in heads), keys=keys,
                        shape=(B, T, 3 * C))

    def into_one_buffer() -> Any:
        return packed(g, q, k, v, weights, scale=scale, causal=True, starts=(0, C, 2 * C),
                      shape=(B, T, 3 * C))

    np.testing.assert_array_equal(into_one_buffer(), unpacked())
    tq, tk, tv = (torch.from_numpy(np.ascontiguousarray(a)).requires_grad_() for a in (q, k, v))
    tg = torch.from_numpy(np.ascontiguousarray(g))

    def torch_backward() -> Any:
        out = torch.nn.functional.scaled_dot_product_attention(tq, tk, tv, is_causal=True)
        return torch.autograd.grad(out, (tq, tk, tv), tg)

    mine, assembled, reference = best_times(into_one_buffer, unpacked, torch_backward, rounds=5,
                                            repeat=20, clock=CLOCK)
    emit(benchmark="gpt_step_kernels", kernel="attention backward into the packed q/k/v gradient",
         pullback_ms=round(mine * 1e3, 3), unpacked_and_assembled_ms=round(assembled * 1e3, 3),
         torch_forward_and_backward_ms=round(reference * 1e3, 3),
         packed_vs_assembled=round(mine / assembled, 3), threads=OPTIONS.threads,
         clock=OPTIONS.clock)


def main() -> None:
    torch = torch_module()
    pb.set_num_threads(OPTIONS.threads)
    rng = np.random.default_rng(0)
    gelu(torch, rng)
    layer_norm(torch, rng)
    embedding_gradient(torch, rng)
    attention_backward(torch, rng)


if __name__ == "__main__":
    main()
