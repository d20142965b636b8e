"""Graphs every pass is proved on: traced functions with inputs that include NaN, infinities and
signed zeros, so that a rewrite which is not exact shows up as a different result."""

from __future__ import annotations

from typing import Any, Callable

import numpy as np

import pullback as pb
from compiler_battery import gpt, gpt_batch, loss_and_backward, mlp, mlp_batch
from pullback.compiler import Graph, trace

SPECIAL = np.array([np.nan, np.inf, -np.inf, 0.0, -0.0, 1.0, -1.0, 1e-30])


def special_floats(shape: tuple[int, ...], dtype: str = "float32", seed: int = 0) -> pb.Tensor:
    rng = np.random.default_rng(seed)
    values = rng.standard_normal(shape)
    flat = values.reshape(-1)
    flat[: min(flat.size, SPECIAL.size)] = SPECIAL[: flat.size]
    return pb.tensor(values.astype(dtype))


def _rewrites(x, w):
    a = (x + (-0.0)) * 1.0 / 1.0
    b = pb.neg(pb.neg(1.0 * a))
    c = b.T.T.reshape(2, 6).reshape(3, 4) - 0.0
    d = pb.broadcast_to(c, (3, 4))
    kept = (x + 0.0) + (x * 0.0) + (x - x) + (x / x)  # none of these is exact: all stay
    return d * w + kept


def _integer_rewrites(i, j):
    return (i - i) + (j * 0) + (i + 0) * 1


def _duplicates(x, w):
    return pb.exp(x) * w + pb.exp(x) + (x @ w.T).sum() + (x @ w.T).sum()


def _constants(x, w):
    scale = pb.ones(4) * 2.0 + pb.arange(4, dtype="float32")
    return x * scale + w


def _dead(x, w):
    unused = pb.tanh(x) @ w.T
    del unused
    return x + w


def _cases() -> list[tuple[str, Callable[..., Any], tuple[Any, ...], bool]]:
    """(name, function, inputs, with grad)."""
    x, w = special_floats((3, 4)), special_floats((3, 4), seed=1)
    ints = pb.tensor(np.arange(12).reshape(3, 4)), pb.tensor(-np.arange(12).reshape(3, 4))
    mlp_x, mlp_y = mlp_batch("float64")
    tokens, targets = gpt_batch()
    return [
        ("rewrites", _rewrites, (x, w), False),
        ("integer_rewrites", _integer_rewrites, ints, False),
        ("duplicates", _duplicates, (x, w), False),
        ("constants", _constants, (x, w), False),
        ("dead", _dead, (x, w), False),
        ("mlp_forward", mlp("float64"), (mlp_x,), False),
        ("mlp_backward", loss_and_backward(mlp("float64")), (mlp_x, mlp_y), True),
        ("gpt_forward", gpt(), (tokens,), False),
        ("gpt_backward", loss_and_backward(gpt()), (tokens, targets), True),
    ]


CASES = {name: (fn, inputs, grad) for name, fn, inputs, grad in _cases()}


def traced(name: str) -> tuple[Graph, list[pb.Tensor]]:
    fn, inputs, with_grad = CASES[name]
    with pb.set_grad_enabled(with_grad):
        graph = trace(fn, *inputs)
    return graph, list(inputs)


def assert_identical(a: Any, b: Any, where: str) -> None:
    """Bit for bit (NaN where NaN, and the sign of zeros), dtype and shape included."""
    a, b = np.asarray(a), np.asarray(b)
    assert a.dtype == b.dtype and a.shape == b.shape, (where, a.dtype, b.dtype, a.shape, b.shape)
    np.testing.assert_array_equal(a, b, err_msg=where)
    if a.dtype.kind == "f":
        np.testing.assert_array_equal(np.signbit(a), np.signbit(b), err_msg=where + " (signs)")


def tolerance(dtype: np.dtype) -> tuple[float, float]:
    """(rtol, atol) of the fused loops (per op: see pullback.compiler.passes.fusion)."""
    return (2e-6, 1e-30) if dtype == np.float32 else (1e-13, 1e-300)


def assert_close(a: Any, b: Any, where: str) -> None:
    """Within the fused loops' tolerance (NaN where NaN; integers and booleans exactly)."""
    a, b = np.asarray(a), np.asarray(b)
    assert a.dtype == b.dtype and a.shape == b.shape, where
    if a.dtype.kind != "f":
        np.testing.assert_array_equal(a, b, err_msg=where)
        return
    rtol, atol = tolerance(a.dtype)
    # A loop's last-ulp difference (its exp is not NumPy's) that then goes through a matmul
    # lands on outputs that cancel to near zero: compare those at the output's scale.
    finite = np.abs(b[np.isfinite(b)])
    scale = float(finite.max()) if finite.size else 0.0
    np.testing.assert_allclose(a, b, rtol=rtol, atol=max(atol, rtol * scale), equal_nan=True,
                               err_msg=where)
