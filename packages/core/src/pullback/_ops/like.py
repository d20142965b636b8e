"""Tensor methods that take their dtype, device or shape from a tensor: ``type_as``,
``new_zeros``/``new_ones``/``new_full``/``new_empty``/``new_tensor``, ``expand_as``,
``view_as``, ``reshape_as``, ``is_floating_point``. Each is a composition of ops that have
their own gradients (or a creation function, which has none)."""

from __future__ import annotations

from typing import Any

from ..dtypes import is_floating


def type_as(x: Any, other: Any) -> Any:
    """``x`` cast to ``other``'s dtype (differentiable; ``x`` itself when they match)."""
    return x.to(other.dtype)


def _new(fn: Any, x: Any, dtype: Any, device: Any, requires_grad: bool, *args: Any) -> Any:
    return fn(*args, dtype=x.dtype if dtype is None else dtype,
              device=x.device if device is None else device, requires_grad=requires_grad)


def new_zeros(x: Any, *size: Any, dtype: Any = None, device: Any = None,
              requires_grad: bool = False) -> Any:
    """Zeros of ``size``, with ``x``'s dtype and device unless given."""
    from ..creation import zeros

    return _new(zeros, x, dtype, device, requires_grad, *size)


def new_ones(x: Any, *size: Any, dtype: Any = None, device: Any = None,
             requires_grad: bool = False) -> Any:
    """Ones of ``size``, with ``x``'s dtype and device unless given."""
    from ..creation import ones

    return _new(ones, x, dtype, device, requires_grad, *size)


def new_empty(x: Any, *size: Any, dtype: Any = None, device: Any = None,
              requires_grad: bool = False) -> Any:
    """An uninitialized tensor of ``size``, with ``x``'s dtype and device unless given."""
    from ..creation import empty

    return _new(empty, x, dtype, device, requires_grad, *size)


def new_full(x: Any, size: Any, fill_value: Any, *, dtype: Any = None, device: Any = None,
             requires_grad: bool = False) -> Any:
    """``fill_value`` everywhere in ``size``, with ``x``'s dtype and device unless given."""
    from ..creation import full

    return _new(full, x, dtype, device, requires_grad, size, fill_value)


def new_tensor(x: Any, data: Any, *, dtype: Any = None, device: Any = None,
               requires_grad: bool = False) -> Any:
    """A copy of ``data`` (a leaf), with ``x``'s dtype and device unless given."""
    from ..creation import tensor

    return _new(tensor, x, dtype, device, requires_grad, data)


def is_floating_point(x: Any) -> bool:
    """Whether ``x``'s dtype is a floating one (float16/bfloat16/float32/float64)."""
    return is_floating(x.dtype)


def expand_as(x: Any, other: Any) -> Any:
    """``x`` broadcast to ``other``'s shape (a view; gradients sum back)."""
    from .shape import expand

    return expand(x, tuple(other.shape))


def view_as(x: Any, other: Any) -> Any:
    """``x`` viewed with ``other``'s shape."""
    from .shape import reshape

    return reshape(x, tuple(other.shape))


def reshape_as(x: Any, other: Any) -> Any:
    """``x`` reshaped to ``other``'s shape."""
    from .shape import reshape

    return reshape(x, tuple(other.shape))
