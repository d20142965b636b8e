"""Sample-input builders shared by the op families: values per dtype and the standard shapes.

Floating values are drawn away from zero by default (``nonzero``), so that samples sit away from
the kinks of abs/relu/clamp and finite differences are valid; records that need the kinks add
samples for them explicitly, marked ``gradcheck=False``.
"""

from __future__ import annotations

from typing import Any, Callable, Iterable, Mapping, Sequence

import numpy as np

from ...dtypes import is_floating
from ._record import Arg, Sample

FLOATS = ("float16", "bfloat16", "float32", "float64")
INTS = ("int32", "int64")
ALL = FLOATS + INTS + ("bool",)

Shape = tuple[int, ...]
Maker = Callable[[Shape], np.ndarray]


def values(shape: Shape, dtype: np.dtype, rng: np.random.Generator, low: float = -2.0,
           high: float = 2.0) -> np.ndarray:
    """Uniform values in ``[low, high]`` (integers for integer dtypes, fair coins for bool)."""
    if dtype.kind == "b":
        return rng.random(shape) < 0.5
    if dtype.kind in "iu":
        return rng.integers(int(np.ceil(low)), int(np.floor(high)) + 1, size=shape).astype(dtype)
    return rng.uniform(low, high, size=shape).astype(dtype)


def nonzero(shape: Shape, dtype: np.dtype, rng: np.random.Generator, low: float = 0.25,
            high: float = 2.0) -> np.ndarray:
    """Values with magnitude in ``[low, high]`` and random signs (floats); like :func:`values`
    for other dtypes."""
    if not is_floating(dtype):  # integers in [-4, 4] without 0 (divisors)
        magnitude = rng.integers(1, 5, size=shape)
        return np.where(rng.random(shape) < 0.5, -magnitude, magnitude).astype(dtype)
    signs = np.where(rng.random(shape) < 0.5, -1.0, 1.0)
    return (signs * rng.uniform(low, high, size=shape)).astype(dtype)


def positive(shape: Shape, dtype: np.dtype, rng: np.random.Generator, low: float = 0.5,
             high: float = 2.0) -> np.ndarray:
    """Values in ``[low, high]`` (integers in ``[1, 4]`` for integer dtypes)."""
    if not is_floating(dtype):
        return values(shape, dtype, rng, 1, 4)
    return rng.uniform(low, high, size=shape).astype(dtype)


def maker(fn: Callable[..., np.ndarray], dtype: np.dtype, rng: np.random.Generator,
          **bounds: float) -> Maker:
    """``fn`` (values/nonzero/positive) with the dtype, generator and bounds filled in."""
    return lambda shape: fn(shape, dtype, rng, **bounds)


def scalar(make: Maker) -> Any:
    """A Python scalar (float, int or bool) drawn like the tensors of ``make``."""
    return make(()).item()


def exact(data: Any, dtype: np.dtype) -> np.ndarray:
    """Literal values (for ties, zeros, NaN...) in ``dtype``."""
    return np.asarray(data, dtype=np.float64 if is_floating(dtype) else None).astype(dtype)


UNARY_SHAPES: Sequence[Shape] = ((), (0,), (1,), (5,), (2, 3), (2, 1, 3))


def unary_samples(make: Maker, attrs: Sequence[Mapping[str, Any]] = ({},)) -> list[Sample]:
    """Scalars, empty, size-1, vectors, matrices, non-contiguous views; then each further
    attribute variant on one matrix."""
    first = dict(attrs[0])
    samples = [Sample((Arg(make(s)),), first) for s in UNARY_SHAPES]
    samples.append(Sample((Arg(make((3, 4)), "transposed"),), first))
    samples.append(Sample((Arg(make((2, 3)), "strided"),), first))
    samples += [Sample((Arg(make((2, 3))),), dict(a)) for a in attrs[1:]]
    return samples


BINARY_SHAPES: Sequence[tuple[Shape, Shape]] = (
    ((2, 3), (2, 3)), ((2, 3), (3,)), ((2, 1), (1, 3)), ((3,), ()), ((), ()),
    ((0, 3), (1, 3)), ((1,), (2, 3)), ((4, 1, 3), (2, 1)),
)


def binary_samples(make_x: Maker, make_y: Maker | None = None, *, scalars: bool = True,
                   attrs: Mapping[str, Any] | None = None) -> list[Sample]:
    """Broadcasting pairs, Python scalars on either side, 0-d operands, size-0 and size-1
    dims, and transposed/strided operands."""
    make_y = make_y or make_x
    kw = dict(attrs or {})
    samples = [Sample((Arg(make_x(a)), Arg(make_y(b))), kw) for a, b in BINARY_SHAPES]
    if scalars:
        samples += [
            Sample((Arg(make_x((2, 3))), scalar(make_y)), kw),
            Sample((scalar(make_x), Arg(make_y((2, 3)))), kw),
            Sample((Arg(make_x(())), scalar(make_y)), kw),
        ]
    samples.append(Sample((Arg(make_x((3, 4)), "transposed"), Arg(make_y((3, 4)), "strided")), kw))
    return samples


def reduction_samples(make: Maker, *, tuple_axes: bool = True, empty_axis: bool = True,
                      extra: Iterable[Mapping[str, Any]] = ()) -> list[Sample]:
    """All elements, single axes (negative too), tuple axes, keepdims, 0-d, size-0 and size-1
    dims, non-contiguous inputs, and PyTorch's ``dim``/``keepdim`` spelling."""
    samples = [
        Sample((Arg(make((3, 4))),), {}),
        Sample((Arg(make((3, 4))),), {"axis": 0}),
        Sample((Arg(make((3, 4))),), {"axis": -1, "keepdims": True}),
        Sample((Arg(make(())),), {}),
        Sample((Arg(make((0, 3))),), {"axis": 1}),
        Sample((Arg(make((1, 3))),), {"axis": 0}),
        Sample((Arg(make((3, 4)), "transposed"),), {"axis": 0}),
        Sample((Arg(make((2, 3)), "strided"),), {"axis": 1, "keepdims": True}),
        Sample((Arg(make((2, 3))),), {"dim": 1, "keepdim": True}),
    ]
    if tuple_axes:
        samples += [
            Sample((Arg(make((2, 3, 4))),), {"axis": (0, 2)}),
            Sample((Arg(make((2, 3, 4))),), {"axis": (-1, 0), "keepdims": True}),
            Sample((Arg(make((2, 3))),), {"keepdims": True}),
        ]
    if empty_axis:  # reducing a size-0 axis gives the reduction's identity
        samples.append(Sample((Arg(make((0, 3))),), {"axis": 0}))
    samples += [Sample((Arg(make((3, 4))),), dict(kw)) for kw in extra]
    return samples
