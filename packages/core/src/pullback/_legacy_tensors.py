"""PyTorch's legacy typed constructors: ``LongTensor([1, 2])``, ``FloatTensor(3, 4)``.

Old scripts build tensors with these and test ``isinstance(x, torch.FloatTensor)``. Each is a
class whose call makes an ordinary :class:`~pullback.Tensor` of its dtype, and whose
``isinstance`` check asks for a CPU tensor of that dtype, as in PyTorch.
"""

from __future__ import annotations

import builtins
from typing import Any

import numpy as np

from .tensor import Tensor


def legacy_tensor(name: str, args: tuple[Any, ...], dtype: Any, device: Any = None) -> Tensor:
    """PyTorch's legacy constructor rules (``torch.Tensor``, ``torch.FloatTensor``...):
    ``name(*sizes)`` (ints, or one ``Size``) is an uninitialized tensor of that shape (here
    zero-filled), ``name()`` an empty one, ``name(data)`` converts a sequence or array to
    ``dtype``; a bare number is refused, as PyTorch does."""
    from ._introspection import Size
    from .creation import tensor, zeros

    if len(args) == 1 and isinstance(args[0], Size):
        args = tuple(args[0])
    if not args:
        return zeros(0, dtype=dtype, device=device)
    if all(a.__class__ is builtins.int for a in args):
        return zeros(*args, dtype=dtype, device=device)
    if len(args) > 1:
        raise TypeError(f"{name}(): pass either one sequence of values or ints (a shape), got "
                        f"{', '.join(type(a).__name__ for a in args)}")
    if isinstance(args[0], (builtins.float, builtins.bool, complex)):
        raise TypeError(f"{name}(): data must be a sequence (got {type(args[0]).__name__}); "
                        f"pullback.tensor({args[0]!r}) makes a 0-d tensor")
    return tensor(args[0], dtype=dtype, device=device)


class _LegacyTensorType(type):
    dtype: np.dtype[Any]

    def __call__(cls, *args: Any) -> Tensor:
        """``Cls(data)`` converts ``data``; ``Cls(*sizes)`` is an uninitialized tensor of that
        shape (here zero-filled); ``Cls()`` is empty."""
        return legacy_tensor(cls.__name__, args, cls.dtype)

    def __instancecheck__(cls, obj: Any) -> bool:
        return isinstance(obj, Tensor) and obj.device.type == "cpu" and obj.dtype == cls.dtype


def _legacy(name: str, dtype: Any) -> type:
    return _LegacyTensorType(name, (), {"dtype": np.dtype(dtype), "__module__": "pullback",
                                        "__doc__": f"A {np.dtype(dtype)} CPU tensor (legacy "
                                                   "constructor, as PyTorch's)."})


FloatTensor = _legacy("FloatTensor", np.float32)
DoubleTensor = _legacy("DoubleTensor", np.float64)
LongTensor = _legacy("LongTensor", np.int64)
IntTensor = _legacy("IntTensor", np.int32)
BoolTensor = _legacy("BoolTensor", np.bool_)
ByteTensor = _legacy("ByteTensor", np.uint8)
