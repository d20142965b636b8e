"""Reductions (``Reduce*``), ``ArgMax``/``ArgMin``, ``TopK`` and the cumulative operators.

A reduction's axes are an attribute before opset 18 (13 for ``ReduceSum``) and an optional
input after; none means every axis, unless ``noop_with_empty_axes`` is set, when the
reduction reduces nothing (its elementwise part, ``abs`` for ``ReduceL1`` say, still applies,
as in ONNX's reference). An empty reduced axis gives the reduction's identity (``-inf`` for
``ReduceMax``, 0 for ``ReduceSum``).
"""

from __future__ import annotations

from typing import Any, Callable

import numpy as np

import pullback as pb
from pullback.tensor import Tensor

from . import NodeContext, converter, ints, optional, scalar


def reduction_axes(x: Tensor, ins: list[Any], attrs: dict[str, Any]) -> tuple[int, ...]:
    """The axes a ``Reduce*`` node reduces (an empty tuple: none)."""
    if "axes" in attrs:
        axes = list(attrs["axes"])
    elif optional(ins, 1) is not None:
        axes = ints(ins[1])
    else:
        axes = []
    if not axes:
        return () if attrs.get("noop_with_empty_axes", 0) else tuple(range(x.ndim))
    return tuple(sorted({a % max(x.ndim, 1) for a in axes}))


def _identity_fill(x: Tensor, axes: tuple[int, ...], keep: bool, value: float) -> Tensor:
    shape = tuple(1 if d in axes else s for d, s in enumerate(x.shape)) if keep else \
        tuple(s for d, s in enumerate(x.shape) if d not in axes)
    return pb.full(shape, value, dtype=x.dtype)


def _reduction(pre: Callable[[Tensor], Tensor], reduce: Callable[..., Tensor],
               post: Callable[[Tensor], Tensor], empty: float) -> Any:
    def convert(ins: list[Any], attrs: dict[str, Any], node: NodeContext) -> list[Any]:
        x = ins[0]
        axes, keep = reduction_axes(x, ins, attrs), bool(attrs.get("keepdims", 1))
        if any(x.shape[a] == 0 for a in axes):
            return [_identity_fill(x, axes, keep, empty)]
        y = pre(x)
        if axes:
            y = reduce(y, axes, keep)
        return [post(y).to(x.dtype)]
    return convert


def _same(x: Tensor) -> Tensor:
    return x


def _sum(x: Tensor, axes: tuple[int, ...], keep: bool) -> Tensor:
    return x.sum(axis=axes, keepdims=keep)


for _op, (_pre, _reduce, _post, _empty) in {
    "ReduceSum": (_same, _sum, _same, 0.0),
    "ReduceMean": (_same, lambda x, a, k: x.mean(axis=a, keepdims=k), _same, float("nan")),
    "ReduceMax": (_same, lambda x, a, k: x.amax(axis=a, keepdims=k), _same, -np.inf),
    "ReduceMin": (_same, lambda x, a, k: x.amin(axis=a, keepdims=k), _same, np.inf),
    "ReduceProd": (_same, lambda x, a, k: x.prod(axis=a, keepdims=k), _same, 1.0),
    "ReduceL1": (pb.abs, _sum, _same, 0.0),
    "ReduceL2": (lambda x: x * x, _sum, pb.sqrt, 0.0),
    "ReduceSumSquare": (lambda x: x * x, _sum, _same, 0.0),
    "ReduceLogSum": (_same, _sum, pb.log, -np.inf),
    "ReduceLogSumExp": (_same, lambda x, a, k: pb.logsumexp(x, a, keepdims=k), _same, -np.inf),
}.items():
    converter(_op)(_reduction(_pre, _reduce, _post, _empty))


def _arg(fn: Callable[..., Tensor]) -> Any:
    def convert(ins: list[Any], attrs: dict[str, Any], node: NodeContext) -> list[Any]:
        x = ins[0]
        axis = int(attrs.get("axis", 0)) % x.ndim
        keep = bool(attrs.get("keepdims", 1))
        if attrs.get("select_last_index", 0):  # the last of equal extremes: search reversed
            flipped = fn(pb.flip(x, axis), axis=axis, keepdims=keep)
            return [(x.shape[axis] - 1 - flipped).to(np.int64)]
        return [fn(x, axis=axis, keepdims=keep).to(np.int64)]
    return convert


converter("ArgMax")(_arg(pb.argmax))
converter("ArgMin")(_arg(pb.argmin))


@converter("TopK")
def _top_k(ins: list[Any], attrs: dict[str, Any], node: NodeContext) -> list[Any]:
    """The ``k`` largest (or smallest) along ``axis``; of equal values, the lower index first
    (a stable sort, as ONNX's reference)."""
    x = ins[0]
    k = int(scalar(ins[1])) if optional(ins, 1) is not None else int(attrs["k"])
    axis = int(attrs.get("axis", -1)) % x.ndim
    largest = bool(attrs.get("largest", 1))
    if largest:  # descending and stable: sort the negated order keys ascending
        keys = -x.to(np.float64) if x.dtype.kind in "ub" else -x
    else:
        keys = x
    order = pb.argsort(keys, dim=axis, stable=True)
    index = order.narrow(axis, 0, k)
    return [pb.take_along_axis(x, index, axis), index.to(np.int64)]


def _cumulative(fn: Callable[..., Tensor]) -> Any:
    def convert(ins: list[Any], attrs: dict[str, Any], node: NodeContext) -> list[Any]:
        x, axis = ins[0], int(scalar(ins[1])) % ins[0].ndim
        reverse, exclusive = attrs.get("reverse", 0), attrs.get("exclusive", 0)
        if reverse:
            x = pb.flip(x, axis)
        y = fn(x, dim=axis)
        if exclusive:  # shift by one: the identity first, the last total dropped
            first = pb.ones_like(x.narrow(axis, 0, 1)) if fn is pb.cumprod else \
                pb.zeros_like(x.narrow(axis, 0, 1))
            y = pb.cat([first, y.narrow(axis, 0, x.shape[axis] - 1)], axis=axis)
        if reverse:
            y = pb.flip(y, axis)
        return [y.to(ins[0].dtype)]
    return convert


converter("CumSum")(_cumulative(pb.cumsum))
converter("CumProd")(_cumulative(pb.cumprod))
