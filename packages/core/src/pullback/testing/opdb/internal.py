"""Records of internal registry ops, called directly with ``pullback.apply``: the scatter ops
behind indexing gradients, norm2, swapaxes and copy. Their gradients are themselves
differentiated under ``create_graph``, so they get gradcheck and gradgradcheck like any op."""

from __future__ import annotations

from typing import Any, Callable

import numpy as np

from ...dispatch import apply
from ...registry import OPS
from . import _torch
from ._inputs import FLOATS, maker, nonzero
from ._record import Arg, OpRecord, Sample


def _direct(name: str) -> Callable[..., Any]:
    """Call the registry op ``name``; NumPy arrays in an index key go to the input's device."""
    op = OPS[name]

    def call(*args: Any, **attrs: Any) -> Any:
        if "key" in attrs:
            device = args[0].device
            attrs["key"] = tuple(device.backend.asarray(k) if isinstance(k, np.ndarray) else k
                                 for k in attrs["key"])
        return apply(op, *args, **attrs)

    call.__name__ = name
    return call


def _mk(dtype: np.dtype, rng: np.random.Generator) -> Callable[..., np.ndarray]:
    return maker(nonzero, dtype, rng)


def _getitem_scatter_samples(dtype: np.dtype, rng: np.random.Generator) -> list[Sample]:
    mk = _mk(dtype, rng)
    return [
        Sample((Arg(mk((4,))),), {"key": (1,), "shape": (3, 4)}),
        Sample((Arg(mk((2, 4))),), {"key": (slice(1, 3),), "shape": (3, 4)}),
        Sample((Arg(mk((3,))),), {"key": (Ellipsis, 1), "shape": (3, 4)}),
        Sample((Arg(mk((3, 2))),), {"key": (slice(None), slice(None, None, 2)), "shape": (3, 4)}),
        Sample((Arg(mk(())),), {"key": (1, 2), "shape": (3, 4)}),
        Sample((Arg(mk((3, 2)), "transposed"),), {"key": (slice(None), slice(1, 3)),
                                                  "shape": (3, 4)}),
    ]


def _torch_getitem_scatter(t: Any) -> Callable[..., Any]:
    def call(g: Any, key: Any, shape: tuple[int, ...]) -> Any:
        out = t.zeros(shape, dtype=g.dtype)
        out[key] = g
        return out

    return call


def _index_scatter_add_samples(dtype: np.dtype, rng: np.random.Generator) -> list[Sample]:
    mk = _mk(dtype, rng)
    rows = np.array([0, 2, 2, 1])
    mask = np.array([[1, 0, 1], [0, 0, 0], [1, 1, 0], [0, 1, 1]], dtype=bool)
    return [
        Sample((Arg(mk((4, 3))),), {"key": (rows,), "shape": (4, 3)}, label="repeated"),
        Sample((Arg(mk((3,))),), {"key": (np.array([0, 1, 1]), np.array([2, 2, 0])),
                                  "shape": (4, 3)}, label="repeated"),
        Sample((Arg(mk((6,))),), {"key": (mask,), "shape": (4, 3)}, label="mask"),
        Sample((Arg(mk((2, 2, 3))),), {"key": (np.array([[0, 1], [3, 3]]),), "shape": (4, 3)}),
    ]


def _torch_index_scatter_add(t: Any) -> Callable[..., Any]:
    def call(g: Any, key: Any, shape: tuple[int, ...]) -> Any:
        return t.zeros(shape, dtype=g.dtype).index_put(_torch.as_index(t, key), g, accumulate=True)

    return call


def _take_scatter_add_samples(dtype: np.dtype, rng: np.random.Generator) -> list[Sample]:
    mk = _mk(dtype, rng)
    idx = Arg(np.array([0, 2, 2]))
    return [
        Sample((Arg(mk((3, 3))), idx), {"axis": 0, "shape": (4, 3)}, label="repeated"),
        Sample((Arg(mk((4, 3))), idx), {"axis": 1, "shape": (4, 5)}, label="repeated"),
        Sample((Arg(mk((4, 3)), "transposed"), idx), {"axis": 1, "shape": (4, 3)}),
    ]


def _torch_take_scatter_add(t: Any) -> Callable[..., Any]:
    return lambda g, idx, axis, shape: t.zeros(shape, dtype=g.dtype).index_add(axis, idx, g)


def _gather_scatter_add_samples(dtype: np.dtype, rng: np.random.Generator) -> list[Sample]:
    mk = _mk(dtype, rng)
    return [
        Sample((Arg(mk((3, 5))), Arg(rng.integers(0, 4, (3, 5)))), {"axis": 1, "shape": (3, 4)},
               label="repeated"),
        Sample((Arg(mk((2, 4))), Arg(rng.integers(0, 3, (2, 4)))), {"axis": 0, "shape": (3, 4)}),
        Sample((Arg(mk((3, 4)), "transposed"), Arg(rng.integers(0, 3, (3, 4)))),
               {"axis": 0, "shape": (3, 4)}),
    ]


def _torch_gather_scatter_add(t: Any) -> Callable[..., Any]:
    return lambda g, idx, axis, shape: t.zeros(shape, dtype=g.dtype).scatter_add(axis, idx, g)


def _norm2_samples(dtype: np.dtype, rng: np.random.Generator) -> list[Sample]:
    mk = _mk(dtype, rng)
    return [Sample((Arg(mk((3, 4))),), {"axis": None, "keepdims": False}),
            Sample((Arg(mk((3, 4))),), {"axis": 1, "keepdims": False}),
            Sample((Arg(mk((3, 4))),), {"axis": -1, "keepdims": True}),
            Sample((Arg(mk((2, 3, 4))),), {"axis": (0, 2), "keepdims": False}),
            Sample((Arg(mk(())),), {"axis": None, "keepdims": False}),
            Sample((Arg(mk((3, 4)), "transposed"),), {"axis": 0, "keepdims": True})]


def _torch_norm2(t: Any) -> Callable[..., Any]:
    return lambda x, axis=None, keepdims=False: t.linalg.vector_norm(x, 2, dim=axis, keepdim=keepdims)


def _swapaxes_samples(dtype: np.dtype, rng: np.random.Generator) -> list[Sample]:
    mk = _mk(dtype, rng)
    return [Sample((Arg(mk((2, 3))),), {"a": 0, "b": 1}),
            Sample((Arg(mk((2, 3, 4))),), {"a": -1, "b": -2}),
            Sample((Arg(mk((2, 3, 4))),), {"a": 0, "b": 2}),
            Sample((Arg(mk((3, 4)), "transposed"),), {"a": 0, "b": 1})]


def _copy_samples(dtype: np.dtype, rng: np.random.Generator) -> list[Sample]:
    mk = _mk(dtype, rng)
    return [Sample((Arg(mk((2, 3))),)), Sample((Arg(mk(())),)),
            Sample((Arg(mk((3, 4)), "transposed"),))]


def _gelu_backward_samples(dtype: np.dtype, rng: np.random.Generator) -> list[Sample]:
    mk = _mk(dtype, rng)
    return [Sample((Arg(mk((3, 4))), Arg(mk((3, 4)))), {"approximate": approx})
            for approx in ("none", "tanh")] + [
        Sample((Arg(mk((2, 3))), Arg(mk((2, 3)), "transposed")), {"approximate": "none"}),
        Sample((Arg(mk(())), Arg(mk(()))), {"approximate": "tanh"})]


def _output_backward_samples(low: float, high: float) -> Callable[..., list[Sample]]:
    """(g, y) pairs for an activation's backward from its output y in (low, high)."""

    def samples(dtype: np.dtype, rng: np.random.Generator) -> list[Sample]:
        mk = _mk(dtype, rng)

        def outputs(shape: tuple[int, ...]) -> np.ndarray:
            return rng.uniform(low, high, shape).astype(dtype)

        return [Sample((Arg(mk((3, 4))), Arg(outputs((3, 4))))),
                Sample((Arg(mk((2, 3))), Arg(outputs((3, 2)).T.copy(), "transposed"))),
                Sample((Arg(mk(())), Arg(outputs(()))))]

    return samples


def _along_negative_axis_samples(dtype: np.dtype, rng: np.random.Generator) -> list[Sample]:
    """cat/stack called as grad rules call them: through apply, with a negative axis."""
    mk = _mk(dtype, rng)
    return [Sample((Arg(mk((2, 3))), Arg(mk((2, 3)))), {"axis": -1}),
            Sample((Arg(mk((2, 3, 2))), Arg(mk((2, 3, 2))), Arg(mk((2, 3, 2)))), {"axis": -2})]


def _torch_along(t: Any, name: str) -> Callable[..., Any]:
    fn = getattr(t, name)
    return lambda *xs, axis: fn(list(xs), dim=axis)


_DOC = "Internal op, called directly; PyTorch's equivalent written out."

RECORDS = [
    OpRecord(name="op:getitem_scatter", fn=_direct("getitem_scatter"),
             torch=_torch_getitem_scatter, ops=("getitem_scatter",), dtypes=FLOATS,
             samples=_getitem_scatter_samples, note=_DOC + " Gradient of basic indexing."),
    OpRecord(name="op:index_scatter_add", fn=_direct("index_scatter_add"),
             torch=_torch_index_scatter_add, ops=("index_scatter_add",), dtypes=FLOATS,
             samples=_index_scatter_add_samples,
             note=_DOC + " Gradient of advanced indexing (accumulates repeated indices)."),
    OpRecord(name="op:take_scatter_add", fn=_direct("take_scatter_add"),
             torch=_torch_take_scatter_add, ops=("take_scatter_add",), dtypes=FLOATS,
             samples=_take_scatter_add_samples, note=_DOC + " Gradient of index_select."),
    OpRecord(name="op:gather_scatter_add", fn=_direct("gather_scatter_add"),
             torch=_torch_gather_scatter_add, ops=("gather_scatter_add",), dtypes=FLOATS,
             samples=_gather_scatter_add_samples, note=_DOC + " Gradient of gather."),
    OpRecord(name="op:norm2", fn=_direct("norm2"), torch=_torch_norm2, ops=("norm2",),
             dtypes=FLOATS, samples=_norm2_samples, note=_DOC),
    OpRecord(name="op:swapaxes", fn=_direct("swapaxes"),
             torch=lambda t: lambda x, a, b: t.swapaxes(x, a, b), ops=("swapaxes",),
             dtypes=FLOATS, samples=_swapaxes_samples, note=_DOC),
    OpRecord(name="op:copy", fn=_direct("copy"), torch=lambda t: t.clone, ops=("copy",),
             dtypes=FLOATS, samples=_copy_samples, note=_DOC),
    OpRecord(name="op:gelu_backward", fn=_direct("gelu_backward"),
             torch=lambda t: lambda g, x, approximate="none": t.ops.aten.gelu_backward(
                 g, x, approximate=approximate),
             ops=("gelu_backward",), dtypes=FLOATS, samples=_gelu_backward_samples,
             note=_DOC + " GELU's gradient as one op."),
    OpRecord(name="op:tanh_backward", fn=_direct("tanh_backward"),
             torch=lambda t: lambda g, y: t.ops.aten.tanh_backward(g, y),
             ops=("tanh_backward",), dtypes=FLOATS, samples=_output_backward_samples(-0.95, 0.95),
             note=_DOC + " tanh's gradient from its output."),
    OpRecord(name="op:sigmoid_backward", fn=_direct("sigmoid_backward"),
             torch=lambda t: lambda g, y: t.ops.aten.sigmoid_backward(g, y),
             ops=("sigmoid_backward",), dtypes=FLOATS,
             samples=_output_backward_samples(0.05, 0.95),
             note=_DOC + " sigmoid's gradient from its output."),
    OpRecord(name="op:relu_backward", fn=_direct("relu_backward"),
             torch=lambda t: lambda g, y: t.ops.aten.threshold_backward(g, y, 0),
             ops=("relu_backward",), dtypes=FLOATS, samples=_output_backward_samples(-1.0, 1.0),
             note=_DOC + " ReLU's gradient from its output."),
    OpRecord(name="op:cat", fn=_direct("cat"), torch=lambda t: _torch_along(t, "cat"),
             ops=("cat",), dtypes=FLOATS, samples=_along_negative_axis_samples,
             note=_DOC + " A negative axis, as grad rules pass it (the public cat normalizes)."),
    OpRecord(name="op:stack", fn=_direct("stack"), torch=lambda t: _torch_along(t, "stack"),
             ops=("stack",), dtypes=FLOATS, samples=_along_negative_axis_samples,
             note=_DOC + " A negative axis, as grad rules pass it (the public stack normalizes)."),
]
