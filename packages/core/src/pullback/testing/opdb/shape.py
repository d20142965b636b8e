"""Shape records: reshape/view, flatten, permute/transpose/swapaxes, .T/.mT, squeeze/unsqueeze,
expand/broadcast_to, cat/stack/split/chunk/unbind, pad, flip, repeat/tile, tril/triu, roll."""

from __future__ import annotations

from typing import Any, Callable

import numpy as np

import pullback as pb

from ...errors import ArgumentError, ShapeError
from ._inputs import ALL, maker, values
from ._record import Arg, ErrorCase, OpRecord, Sample

Build = Callable[[Callable[..., Arg]], list[Sample]]


def _samples(build: Build) -> Callable[[np.dtype, np.random.Generator], list[Sample]]:
    """Samples written with ``a(shape, layout="contiguous")`` making tensor arguments."""

    def samples(dtype: np.dtype, rng: np.random.Generator) -> list[Sample]:
        mk = maker(values, dtype, rng)
        return build(lambda shape, layout="contiguous": Arg(mk(shape), layout))

    return samples


def _errors(build: Callable[[Callable[..., Arg]], list[ErrorCase]]) -> Callable[..., list[ErrorCase]]:
    def errors(rng: np.random.Generator) -> list[ErrorCase]:
        mk = maker(values, np.dtype(np.float64), rng)
        return build(lambda shape, layout="contiguous": Arg(mk(shape), layout))

    return errors


def _record(name: str, fn: Callable[..., Any], torch: Callable[[Any], Any], ops: tuple[str, ...],
            build: Build, errors: Callable[[Callable[..., Arg]], list[ErrorCase]] | None = None,
            dtypes: tuple[str, ...] = ALL, note: str = "") -> OpRecord:
    return OpRecord(name=name, fn=fn, torch=torch, ops=ops, dtypes=dtypes, samples=_samples(build),
                    errors=_errors(errors or (lambda a: [])), note=note)


def _reshape_samples(a: Callable[..., Arg]) -> list[Sample]:
    return [
        Sample((a((2, 3)), (3, 2))), Sample((a((2, 3)), (-1,))), Sample((a((2, 3)), 6, 1)),
        Sample((a(()), (1,))), Sample((a((1,)), ())), Sample((a((0, 3)), (3, 0))),
        Sample((a((3, 4), "transposed"), (2, 6))), Sample((a((2, 3), "strided"), (3, -1))),
    ]


def _reshape_errors(a: Callable[..., Arg]) -> list[ErrorCase]:
    return [ErrorCase((a((2, 3)), (4,)), ShapeError, r"reshape.*\(2, 3\).*\(4,\)"),
            ErrorCase((a((2, 3)), (-1, -1)), ShapeError, "reshape.*-1")]


def _view_samples(a: Callable[..., Arg]) -> list[Sample]:
    # Non-contiguous inputs only where the layout allows a view (PyTorch's rule).
    return [
        Sample((a((2, 3)), (3, 2))), Sample((a((2, 3)), (-1,))), Sample((a((2, 3)), 6, 1)),
        Sample((a(()), (1,))), Sample((a((1,)), ())), Sample((a((0, 3)), (3, 0))),
        Sample((a((3, 4), "transposed"), (3, 1, 4))), Sample((a((2, 3), "strided"), (1, 2, 3))),
        Sample((a((2, 3, 4), "strided"), (6, 4))),
    ]


def _view_errors(a: Callable[..., Arg]) -> list[ErrorCase]:
    # A copy would silently lose every write made through the "view" (it returned one).
    return _reshape_errors(a) + [
        ErrorCase((a((2, 3), "transposed"), 6), ShapeError,
                  r"view: a tensor of shape \(2, 3\) and strides \(1, 2\) cannot be viewed as "
                  r"\(6,\).*use \.reshape\(\.\.\.\) instead", label="transposed")]


def _flatten_errors(a: Callable[..., Arg]) -> list[ErrorCase]:
    # flatten(1, 0) returned shape (2, 1, 3)
    return [ErrorCase((a((2, 3)), 1, 0), ShapeError,
                      r"flatten: start_dim 1 comes after end_dim 0 .*\(2, 3\)"),
            ErrorCase((a((2, 3)), 0, 5), ShapeError, "flatten: axis 5 is out of range")]


def _permute_samples(a: Callable[..., Arg]) -> list[Sample]:
    return [Sample((a((2, 3, 4)), (2, 0, 1))), Sample((a((2, 3, 4)), (-1, 0, 1))),
            Sample((a((2, 3)), 1, 0)), Sample((a(()), ())), Sample((a((0, 3)), (1, 0))),
            Sample((a((3, 4), "transposed"), (1, 0))), Sample((a((2, 3), "strided"), (1, 0)))]


def _transpose_samples(a: Callable[..., Arg]) -> list[Sample]:
    return [Sample((a((2, 3)),)), Sample((a((2, 3, 4)), 0, 2)), Sample((a((2, 3, 4)), -1, 0)),
            Sample((a((3, 4), "transposed"), 0, 1)), Sample((a((0, 3)), 0, 1))]


def _torch_transpose(t: Any) -> Callable[..., Any]:
    return lambda x, axis0=-2, axis1=-1: t.transpose(x, axis0, axis1)


def _two_axes_errors(name: str) -> Callable[[Callable[..., Arg]], list[ErrorCase]]:
    return lambda a: [ErrorCase((a((2, 3)), 0, 2), ShapeError, rf"{name}.*axis 2")]


def _squeeze_samples(a: Callable[..., Arg]) -> list[Sample]:
    return [Sample((a((1, 3, 1)),)), Sample((a((1, 3, 1)), 0)), Sample((a((1, 3, 1)), -1)),
            Sample((a((1, 3, 1)), (0, 2))), Sample((a((1, 3, 1)), 1)), Sample((a((1,)),)),
            Sample((a((1, 3)),), {"dim": 0}), Sample((a((3, 1), "transposed"),))]


def _torch_squeeze(t: Any) -> Callable[..., Any]:
    def call(x: Any, axis: Any = None, *, dim: Any = None) -> Any:
        axis = dim if dim is not None else axis
        return t.squeeze(x) if axis is None else t.squeeze(x, axis)

    return call


def _unsqueeze_samples(a: Callable[..., Arg]) -> list[Sample]:
    return [Sample((a((2, 3)), 0)), Sample((a((2, 3)), -1)), Sample((a((2, 3)), 1)),
            Sample((a(()), 0)), Sample((a((3, 4), "transposed"), -2)),
            Sample((a((2, 3)),), {"dim": 2})]


def _torch_unsqueeze(t: Any) -> Callable[..., Any]:
    return lambda x, axis=None, *, dim=None: t.unsqueeze(x, dim if dim is not None else axis)


def _expand_samples(a: Callable[..., Arg]) -> list[Sample]:
    return [Sample((a((3, 1)), 3, 4)), Sample((a((3, 1)), (2, 3, 4))), Sample((a((3, 1)), -1, 4)),
            Sample((a(()), (2,))), Sample((a((1,)), (0,))), Sample((a((1, 3), "strided"), 2, 3))]


def _broadcast_samples(a: Callable[..., Arg]) -> list[Sample]:
    return [Sample((a((3, 1)), (2, 3, 4))), Sample((a(()), (2, 2))), Sample((a((3,)), (0, 3))),
            Sample((a((3, 4), "transposed"), (2, 3, 4)))]


def _expand_errors(name: str) -> Callable[[Callable[..., Arg]], list[ErrorCase]]:
    return lambda a: [ErrorCase((a((2, 3)), (4, 3)), ShapeError, rf"{name}.*\(2, 3\).*\(4, 3\)")]


def _cat_samples(a: Callable[..., Arg]) -> list[Sample]:
    return [
        Sample(([a((2, 3)), a((1, 3)), a((0, 3))],)),
        Sample(([a((2, 3)), a((2, 1))],), {"axis": 1}),
        Sample(([a((2, 3)), a((2, 3), "strided")],), {"axis": -1}),
        Sample(([a((3, 4), "transposed")],)),
        Sample(([a((2, 2)), a((2, 2))],), {"dim": 1}),
    ]


def _torch_along(t: Any, name: str) -> Callable[..., Any]:
    fn = getattr(t, name)
    return lambda xs, axis=0, *, dim=None: fn(list(xs), dim=dim if dim is not None else axis)


def _cat_errors(a: Callable[..., Arg]) -> list[ErrorCase]:
    return [ErrorCase(([a((2, 3)), a((2, 4))],), ShapeError, r"cat.*\(2, 3\).*\(2, 4\)"),
            ErrorCase(([],), ShapeError, "cat.*non-empty")]


def _stack_samples(a: Callable[..., Arg]) -> list[Sample]:
    return [Sample(([a((2, 3)), a((2, 3))],)), Sample(([a((2, 3)), a((2, 3))],), {"axis": 1}),
            Sample(([a((2, 3)), a((2, 3), "transposed")],), {"axis": -1}),
            Sample(([a(()), a(()), a(())],)), Sample(([a((0, 2))],), {"dim": 2})]


def _stack_errors(a: Callable[..., Arg]) -> list[ErrorCase]:
    return [ErrorCase(([a((2, 3)), a((3, 2))],), ShapeError, r"stack.*\(2, 3\).*\(3, 2\)"),
            ErrorCase(([],), ShapeError, "stack.*non-empty")]


def _split_samples(a: Callable[..., Arg]) -> list[Sample]:
    return [Sample((a((5, 2)), 2)), Sample((a((5, 2)), [1, 4])), Sample((a((2, 6)), 3, 1)),
            Sample((a((2, 6)), [2, 0, 4]), {"dim": -1}), Sample((a((4, 3), "transposed"), 2))]


def _torch_split(t: Any) -> Callable[..., Any]:
    return lambda x, sizes, axis=0, *, dim=None: t.split(x, sizes, dim=dim if dim is not None else axis)


def _split_errors(a: Callable[..., Arg]) -> list[ErrorCase]:
    return [ErrorCase((a((5, 2)), [2, 2]), ShapeError, r"split.*\[2, 2\].*5"),
            ErrorCase((a((5, 2)), 0), ShapeError, "split.*positive")]


def _chunk_samples(a: Callable[..., Arg]) -> list[Sample]:
    return [Sample((a((5, 2)), 3)), Sample((a((6, 2)), 4)), Sample((a((2, 6)), 2, 1)),
            Sample((a((2, 6)), 6), {"dim": 1}), Sample((a((4, 3), "transposed"), 2))]


def _torch_chunk(t: Any) -> Callable[..., Any]:
    return lambda x, chunks, axis=0, *, dim=None: t.chunk(x, chunks, dim=dim if dim is not None else axis)


def _unbind_samples(a: Callable[..., Arg]) -> list[Sample]:
    return [Sample((a((3, 2)),)), Sample((a((2, 3)), 1)), Sample((a((3, 4), "transposed"),),
                                                                    {"dim": -1})]


def _torch_unbind(t: Any) -> Callable[..., Any]:
    return lambda x, axis=0, *, dim=None: t.unbind(x, dim if dim is not None else axis)


def _pad_samples(dtype: np.dtype, rng: np.random.Generator) -> list[Sample]:
    mk = maker(values, dtype, rng)

    def a(shape: tuple[int, ...], layout: str = "contiguous") -> Arg:
        return Arg(mk(shape), layout)

    out = [Sample((a((2, 3)), (1, 2))), Sample((a((3,)), (2, 2))), Sample((a((0, 2)), (1, 1))),
           Sample((a((3, 4), "transposed"), (0, 1, 2, 0)))]
    if dtype.kind == "f" or dtype.name == "bfloat16":  # modes other than constant take floats
        out += [
            Sample((a((2, 3)), (1, 0, 0, 2)), {"value": 1.5}),
            Sample((a((2, 4)), (2, 1)), {"mode": "reflect"}),
            Sample((a((1, 3, 4)), (1, 2, 2, 1)), {"mode": "reflect"}),
            Sample((a((1, 2, 3)), (2, 1)), {"mode": "replicate"}),
            Sample((a((1, 2, 3)), (1, 2)), {"mode": "circular"}),
        ]
    return out


def _pad_errors(a: Callable[..., Arg]) -> list[ErrorCase]:
    return [ErrorCase((a((2, 3)), (3, 0)), ShapeError, "pad.*reflect.*size 3",
                      {"mode": "reflect"}),
            ErrorCase((a((2, 3)), (1, 2, 3)), ShapeError, r"pad.*3 values.*\(2, 3\)"),
            ErrorCase((a((2, 3)), (1, 1)), ValueError, "pad.*mode", {"mode": "wrap"})]


def _flip_samples(a: Callable[..., Arg]) -> list[Sample]:
    return [Sample((a((2, 3)), 0)), Sample((a((2, 3)), (0, 1))), Sample((a((2, 3)),)),
            Sample((a((2, 3, 2)), -1)), Sample((a(()),)), Sample((a((3, 4), "transposed"), 1)),
            Sample((a((2, 3)),), {"dims": (1,)})]


def _torch_flip(t: Any) -> Callable[..., Any]:
    def call(x: Any, axis: Any = None, *, dims: Any = None) -> Any:
        axis = dims if dims is not None else axis
        axis = tuple(range(x.ndim)) if axis is None else (axis,) if isinstance(axis, int) else axis
        return t.flip(x, axis)

    return call


def _repeat_samples(a: Callable[..., Arg]) -> list[Sample]:
    return [Sample((a((2, 3)), 2, 1)), Sample((a((2, 3)), (1, 2, 2))), Sample((a((3,)), 2, 2)),
            Sample((a(()), 3)), Sample((a((3, 2), "transposed"), 1, 2))]


def _tile_samples(a: Callable[..., Arg]) -> list[Sample]:
    return [Sample((a((2, 3)), (2,))), Sample((a((2, 3)), (2, 1, 2))), Sample((a((3,)), 2)),
            Sample((a((3, 2), "transposed"), (2, 2)))]


def _torch_tile(t: Any) -> Callable[..., Any]:
    return lambda x, reps: t.tile(x, (reps,) if isinstance(reps, int) else reps)


def _triangle_samples(a: Callable[..., Arg]) -> list[Sample]:
    return [Sample((a((3, 4)),)), Sample((a((3, 4)), -1)), Sample((a((3, 4)), 1)),
            Sample((a((2, 3, 3)),)), Sample((a((4, 3), "transposed"),)), Sample((a((0, 2)),))]


def _triangle_errors(name: str) -> Callable[[Callable[..., Arg]], list[ErrorCase]]:
    return lambda a: [ErrorCase((a((3,)),), ShapeError, rf"{name}.*2 dims.*\(3,\)")]


def _roll_samples(a: Callable[..., Arg]) -> list[Sample]:
    return [Sample((a((2, 3)), 1)), Sample((a((2, 3)), 1, 0)), Sample((a((2, 3)), (1, -1), (0, 1))),
            Sample((a((2, 3)), -4, 1)), Sample((a((3, 4), "transposed"), 2), {"dims": 1})]


def _torch_roll(t: Any) -> Callable[..., Any]:
    return lambda x, shifts, axis=None, *, dims=None: t.roll(
        x, shifts, dims if dims is not None else axis)


def _flatten_samples(a: Callable[..., Arg]) -> list[Sample]:
    return [Sample((a((2, 3, 4)),)), Sample((a((2, 3, 4)), 1)), Sample((a((2, 3, 4)), 0, -2)),
            Sample((a(()),)), Sample((a((0, 3)),)), Sample((a((3, 4), "transposed"),))]


RECORDS = [
    _record("reshape", pb.reshape, lambda t: lambda x, *shape: x.reshape(*shape), ("reshape",),
            _reshape_samples, _reshape_errors),
    _record("view", pb.view, lambda t: lambda x, *shape: x.view(*shape), ("reshape",),
            _view_samples, _view_errors),
    _record("flatten", pb.flatten, lambda t: t.flatten, ("reshape",), _flatten_samples,
            _flatten_errors),
    _record("permute", pb.permute, lambda t: lambda x, *axes: x.permute(*axes), ("permute",),
            _permute_samples,
            lambda a: [ErrorCase((a((2, 3)), (0, 0)), ShapeError, r"permute.*\(0, 0\)")]),
    _record("transpose", pb.transpose, _torch_transpose, ("permute",), _transpose_samples,
            _two_axes_errors("transpose")),
    _record("swapaxes", pb.swapaxes, _torch_transpose, ("permute",), _transpose_samples,
            _two_axes_errors("transpose"), note="Alias of transpose."),
    _record("Tensor.T", lambda x: x.T, lambda t: lambda x: x.permute(tuple(reversed(range(x.ndim)))),
            ("permute",),
            lambda a: [Sample((a(()),)), Sample((a((3,)),)), Sample((a((2, 3)),)),
                       Sample((a((2, 3, 4)),)), Sample((a((3, 4), "transposed"),))],
            note="All axes reversed, for any ndim (PyTorch deprecates .T for ndim != 2)."),
    _record("Tensor.mT", lambda x: x.mT, lambda t: lambda x: x.mT, ("swapaxes",),
            lambda a: [Sample((a((2, 3)),)), Sample((a((2, 3, 4)),)),
                       Sample((a((3, 4), "transposed"),)), Sample((a((0, 2)),))],
            lambda a: [ErrorCase((a((3,)),), ShapeError, r"mT.*\(3,\)")]),
    _record("squeeze", pb.squeeze, _torch_squeeze, ("reshape",), _squeeze_samples,
            lambda a: [ErrorCase((a((1, 3)), 2), ShapeError, "squeeze.*axis 2")]),
    _record("unsqueeze", pb.unsqueeze, _torch_unsqueeze, ("reshape",), _unsqueeze_samples,
            lambda a: [ErrorCase((a((2, 3)), 4), ShapeError, "unsqueeze.*axis 4")]),
    _record("expand", pb.expand, lambda t: lambda x, *sizes: x.expand(*sizes), ("broadcast_to",),
            _expand_samples, _expand_errors("broadcast_to")),
    _record("broadcast_to", pb.broadcast_to, lambda t: t.broadcast_to, ("broadcast_to",),
            _broadcast_samples, _expand_errors("broadcast_to")),
    _record("cat", pb.cat, lambda t: _torch_along(t, "cat"), ("cat",), _cat_samples, _cat_errors),
    _record("stack", pb.stack, lambda t: _torch_along(t, "stack"), ("stack",), _stack_samples,
            _stack_errors),
    _record("split", pb.split, _torch_split, ("getitem",), _split_samples, _split_errors),
    _record("chunk", pb.chunk, _torch_chunk, ("getitem",), _chunk_samples,
            lambda a: [ErrorCase((a((4,)), 0), ArgumentError,  # a ZeroDivisionError before
                                 "chunk: chunks must be a positive int, got 0"),
                       ErrorCase((a((4,)), -2), ArgumentError,
                                 "chunk: chunks must be a positive int, got -2")]),
    _record("unbind", pb.unbind, _torch_unbind, ("getitem",), _unbind_samples),
    OpRecord(name="pad", fn=pb.pad, torch=lambda t: t.nn.functional.pad, ops=("pad", "take"),
             dtypes=ALL, samples=_pad_samples, errors=_errors(_pad_errors),
             note="Constant padding for every dtype; reflect/replicate/circular for floats "
             "(PyTorch has them for floats only)."),
    _record("flip", pb.flip, _torch_flip, ("flip",), _flip_samples,
            lambda a: [ErrorCase((a((2, 3)), 2), ShapeError, "flip.*axis 2")]),
    _record("repeat", pb.repeat, lambda t: lambda x, *sizes: x.repeat(*sizes),
            ("reshape", "broadcast_to"), _repeat_samples,
            lambda a: [ErrorCase((a((2, 3)), 2), ShapeError, "repeat.*1 sizes.*2-d")]),
    _record("tile", pb.tile, _torch_tile, ("reshape", "broadcast_to"), _tile_samples),
    _record("tril", pb.tril, lambda t: t.tril, ("tril",), _triangle_samples,
            _triangle_errors("tril")),
    _record("triu", pb.triu, lambda t: t.triu, ("triu",), _triangle_samples,
            _triangle_errors("triu")),
    _record("roll", pb.roll, _torch_roll, ("roll",), _roll_samples),
]
