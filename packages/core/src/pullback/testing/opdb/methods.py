"""Records of the Tensor methods a porter uses daily: ``type_as``, ``new_*``,
``is_floating_point``, ``size(dim)``, ``t()``, ``expand_as``/``view_as``/``reshape_as``."""

from __future__ import annotations

from typing import Any, Callable

import numpy as np

import pullback as pb

from ...errors import AxisError, ShapeError
from ._inputs import ALL, maker, values
from ._record import Arg, ErrorCase, OpRecord, Sample

_FLOAT64 = np.dtype(np.float64)


def _same(name: str) -> Callable[[Any], Any]:
    """The same method called on PyTorch's tensors."""
    return lambda t: lambda x, *args, **kwargs: getattr(x, name)(*args, **kwargs)


def _one_tensor(build: Callable[[Callable[..., Arg]], list[Sample]]) -> Any:
    def samples(dtype: np.dtype, rng: np.random.Generator) -> list[Sample]:
        mk = maker(values, dtype, rng)
        return build(lambda shape, layout="contiguous": Arg(mk(shape), layout))

    return samples


def _type_as_samples(dtype: np.dtype, rng: np.random.Generator) -> list[Sample]:
    x = Arg(values((2, 3), dtype, rng))
    others = ("float32", "float64", "int64", "bool", "float16")
    # Finite differences need float64 outputs: other targets are compared with PyTorch only.
    return [Sample((x, Arg(values((1,), np.dtype(o), rng), requires_grad=False)), label=o,
                   gradcheck=o == "float64") for o in others] + [
        Sample((Arg(values((3, 4), dtype, rng), "transposed"), Arg(values((), _FLOAT64, rng),
                                                                   requires_grad=False)))]


def _creation(name: str, call: Callable[[Any], Any], note: str) -> OpRecord:
    """A ``new_*`` method: the tensor it is called on gives only the dtype and device."""
    return OpRecord(
        name=f"Tensor.{name}", fn=call, torch=lambda t: call, ops=(), dtypes=ALL,
        samples=_one_tensor(lambda a: [Sample((a((2, 3)),)), Sample((a(()),))]),
        differentiable=False, note=note)


def _size_samples(a: Callable[..., Arg]) -> list[Sample]:
    return [Sample((a((2, 3, 4)), d)) for d in (0, 2, -1, -3)]


def _like_samples(a: Callable[..., Arg], shapes: list[tuple[tuple[int, ...], tuple[int, ...]]],
                  ) -> list[Sample]:
    return [Sample((a(x), Arg(np.zeros(o, dtype=a(()).value.dtype), requires_grad=False)))
            for x, o in shapes]


_EXPAND = [((3,), (2, 3)), ((2, 1), (2, 4)), ((), (3, 2)), ((1, 3), (2, 2, 3))]
_RESHAPE = [((2, 3), (3, 2)), ((2, 3), (6,)), ((1,), ()), ((0, 3), (3, 0))]

RECORDS = [
    OpRecord(name="Tensor.type_as", fn=lambda x, other: x.type_as(other), torch=_same("type_as"),
             ops=("cast",), dtypes=ALL, samples=_type_as_samples,
             note="Casts to the other tensor's dtype; the gradient comes back in x's dtype."),
    _creation("new_zeros", lambda x: x.new_zeros(2, 3), "Zeros in x's dtype and device."),
    _creation("new_ones", lambda x: x.new_ones((3,)), "Ones in x's dtype and device."),
    _creation("new_full", lambda x: x.new_full((2, 2), 3), "The fill value takes x's dtype."),
    _creation("new_empty", lambda x: x.new_empty((2, 3)).fill_(1),
              "Uninitialized: filled before the values are compared."),
    _creation("new_tensor", lambda x: x.new_tensor([[1, 0], [2, 3]]),
              "The data takes x's dtype, as in PyTorch."),
    OpRecord(name="Tensor.is_floating_point", fn=lambda x: pb.tensor(x.is_floating_point(), device=x.device),
             torch=lambda t: lambda x: t.tensor(x.is_floating_point()), ops=(), dtypes=ALL,
             samples=_one_tensor(lambda a: [Sample((a((2,)),))]), differentiable=False,
             note="The answer, as a bool tensor."),
    OpRecord(name="Tensor.size", fn=lambda x, dim: pb.tensor(x.size(dim), device=x.device),
             torch=lambda t: lambda x, dim: t.tensor(x.size(dim)), ops=(), dtypes=ALL,
             samples=_one_tensor(_size_samples), differentiable=False,
             errors=lambda rng: [ErrorCase((Arg(np.zeros((2, 3))), 2), AxisError,
                                           "size: axis 2 is out of range")],
             note="size(dim), negative dims included, as an int64 tensor."),
    OpRecord(name="t", fn=pb.t, torch=lambda t: t.t, ops=("permute",), dtypes=ALL,
             samples=_one_tensor(lambda a: [Sample((a(()),)), Sample((a((3,)),)),
                                            Sample((a((2, 3)),)), Sample((a((3, 4), "transposed"),))]),
             errors=lambda rng: [ErrorCase((Arg(np.zeros((2, 3, 4))),), ShapeError,
                                           r"t: .*\(2, 3, 4\)")],
             note="0-d and 1-d tensors come back as they are."),
    OpRecord(name="Tensor.expand_as", fn=lambda x, o: x.expand_as(o), torch=_same("expand_as"),
             ops=("broadcast_to",), dtypes=ALL,
             samples=_one_tensor(lambda a: _like_samples(a, _EXPAND))),
    OpRecord(name="Tensor.view_as", fn=lambda x, o: x.view_as(o), torch=_same("view_as"),
             ops=("reshape",), dtypes=ALL,
             samples=_one_tensor(lambda a: _like_samples(a, _RESHAPE))),
    OpRecord(name="Tensor.reshape_as", fn=lambda x, o: x.reshape_as(o), torch=_same("reshape_as"),
             ops=("reshape",), dtypes=ALL,
             samples=_one_tensor(lambda a: _like_samples(a, _RESHAPE))),
]
