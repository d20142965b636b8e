"""vmap of nn's first-order backward ops (softmax's, log-softmax's, cross-entropy's, attention's)
against a
loop over the samples. The transforms' own reverse passes differentiate through the grad rules'
``F`` ops, so these rules are reached only when a user (or a traced program) maps one of these
ops directly: tested here on purpose, with batched and unbatched operands."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import pullback as pb

pytest.importorskip("pullback.nn")
from pullback.dispatch import apply  # noqa: E402
from pullback.func import vmap  # noqa: E402
from pullback.registry import get_op  # noqa: E402

B, N, C = 3, 4, 5


def _loop(fn: Any, args: tuple[Any, ...], in_dims: tuple[Any, ...]) -> np.ndarray:
    outs = []
    for i in range(B):
        sample = [a if d is None else pb.tensor(np.take(a.numpy(), i, axis=d))
                  for a, d in zip(args, in_dims)]
        outs.append(fn(*sample).numpy())
    return np.stack(outs)


def _check(fn: Any, args: tuple[Any, ...], in_dims: tuple[Any, ...]) -> None:
    got = vmap(fn, in_dims=in_dims)(*args).numpy()
    np.testing.assert_allclose(got, _loop(fn, args, in_dims), rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("name", ["nn.softmax_backward", "nn.log_softmax_backward"])
@pytest.mark.parametrize("in_dims", [(0, 0), (None, 0), (0, None), (1, 0)])
@pytest.mark.parametrize("axis", [-1, 0])
def test_softmax_backward_ops(name: str, in_dims: tuple[Any, ...], axis: int) -> None:
    rng = np.random.default_rng(0)
    shape = lambda d: (N, C) if d is None else ((B, N, C) if d == 0 else (N, B, C))  # noqa: E731
    g, y = (pb.tensor(rng.normal(size=shape(d))) for d in in_dims)
    op = get_op(name)
    _check(lambda g, y: apply(op, g, y, axis=axis), (g, y), in_dims)


@pytest.mark.parametrize("in_dims", [(0, 0, 0, 0), (None, 0, None, 0), (0, None, 0, None),
                                     (0, 0, None, 0)])
def test_cross_entropy_backward(in_dims: tuple[Any, ...]) -> None:
    rng = np.random.default_rng(1)
    lead = lambda d: () if d is None else (B,)  # noqa: E731
    g = pb.tensor(rng.normal(size=lead(in_dims[0]) + (N,)))
    raw = rng.normal(size=lead(in_dims[1]) + (N, C))
    target = rng.integers(0, C, size=lead(in_dims[2]) + (N,))
    target[..., 0] = -100  # an ignored row
    # Rows are independent whatever the statistics hold: any (max, log-sum-exp) pairs will do.
    stats = pb.tensor(rng.normal(size=lead(in_dims[3]) + (N, 2)))
    op = get_op("nn.cross_entropy_backward")
    _check(lambda g, x, t, s: apply(op, g, x, t, s, ignore_index=-100),
           (g, pb.tensor(raw), pb.tensor(target), stats), in_dims)


@pytest.mark.parametrize("in_dims", [(0, 0, 0, 0, 0), (0, None, None, None, 0),
                                     (None, 0, 0, 0, None), (1, 0, None, 0, 1)])
@pytest.mark.parametrize("causal", [False, True])
def test_attention_backward(in_dims: tuple[Any, ...], causal: bool) -> None:
    rng = np.random.default_rng(2)
    heads, length, dim = 2, 5, 3

    def operand(d: Any, rows: int, cols: int) -> pb.Tensor:
        shape = [heads, rows, cols]
        if d is not None:
            shape.insert(d, B)
        return pb.tensor(rng.normal(size=shape))

    g, q, k, v = (operand(d, length, dim) for d in in_dims[:4])
    # any weights will do (the op reads them as the saved softmax), zero where a causal
    # query does not see the key, as the forward leaves them
    weights = operand(in_dims[4], length, length)
    if causal:
        weights = pb.tensor(np.tril(weights.numpy()))
    op = get_op("nn.scaled_dot_product_attention_backward")
    for i in range(3):
        _check(lambda g, q, k, v, w, i=i: apply(op, g, q, k, v, w, scale=0.4, causal=causal)[i],
               (g, q, k, v, weights), in_dims)
