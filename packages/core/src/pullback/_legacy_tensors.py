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


class _LegacyTensorType(type):
    dtype: np.dtype[Any]

    def __call__(cls, *args: Any) -> Tensor:
        """``Cls(data)`` converts ``data``; ``Cls(*sizes)`` is an uninitialized tensor of that
        shape (here zero-filled); ``Cls()`` is empty."""
        from .creation import tensor, zeros

        if not args:
            return zeros(0, dtype=cls.dtype)
        if all(a.__class__ is builtins.int for a in args):
            return zeros(*args, dtype=cls.dtype)
        if len(args) > 1:
            raise TypeError(f"{cls.__name__}(): pass either one sequence of values or ints "
                            f"(a shape), got {', '.join(type(a).__name__ for a in args)}")
        return tensor(args[0], dtype=cls.dtype)

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
