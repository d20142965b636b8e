"""In-place operations and ``__setitem__``, with the version counter that protects saved tensors.

Without a graph to record (grad off, or nothing requires grad) an in-place op writes into the
existing array (bumping the version counter), so that views and optimizers see the change. When
the op must be recorded, the result is computed out of place and the tensor is re-pointed at it
and at the new graph node: arrays saved for backward stay intact (so this is not an error).
Recording an in-place op on a tensor that requires grad and shares memory with a view is
refused, since the view's graph would silently go stale.
"""

from __future__ import annotations

from typing import Any, Callable

from ..dispatch import notify_write, state
from ..dtypes import can_cast
from ..errors import AutogradError, DTypeError, ShapeError
from ..tensor import Tensor


def _check_leaf(t: Tensor, name: str) -> None:
    if state.grad_enabled and t._requires_grad and t._node is None:
        raise AutogradError(
            f"{name}: a leaf tensor that requires grad cannot be modified in place while grad "
            "is enabled; wrap the update in pullback.no_grad()"
        )


def _check_castable(result_dtype: Any, t: Tensor, name: str) -> None:
    """PyTorch's rule: an in-place op computes in the promoted dtype, then stores into the
    tensor's dtype, which must not lose the kind (a float result into ints, ints into bool)."""
    if not can_cast(result_dtype, t.dtype):
        raise DTypeError(
            f"{name}: result type {result_dtype} can't be cast to the desired output type "
            f"{t.dtype} (an in-place op keeps the tensor's dtype; use the out-of-place op)"
        )


def _write(t: Tensor, result: Any, name: str) -> None:
    if tuple(result.shape) != tuple(t.shape):
        raise ShapeError(
            f"{name}: the result has shape {tuple(result.shape)} but the tensor written in place "
            f"has shape {tuple(t.shape)}"
        )
    _check_castable(result.dtype, t, name)
    xp = t.device.backend.xp
    try:
        xp.copyto(t.array, result, casting="unsafe")
    except ValueError as exc:  # read-only (e.g. a broadcast view)
        raise AutogradError(f"{name}: cannot write into this tensor in place ({exc})") from None


def inplace(t: Tensor, fn: Callable[..., Tensor], *args: Any, **kwargs: Any) -> Tensor:
    """Run ``fn(t, *args)`` and store the result into ``t`` (see the module docstring)."""
    name = getattr(fn, "__name__", "op") + "_"
    _check_leaf(t, name)
    records = state.grad_enabled and (
        t._requires_grad or any(isinstance(a, Tensor) and a._requires_grad for a in args)
    )
    if records:
        if t._base is not None or len(t._version) > 1:
            raise AutogradError(
                f"{name}: in-place op on a tensor that requires grad and shares memory with a "
                "view is not supported (the view would go stale); use the out-of-place op"
            )
        result = fn(t, *args, **kwargs)
        if tuple(result.shape) != tuple(t.shape):
            raise ShapeError(f"{name}: result shape {tuple(result.shape)} != {tuple(t.shape)}")
        if result.dtype != t.dtype:
            _check_castable(result.dtype, t, name)
            result = result.to(t.dtype)
        # Re-point instead of overwriting: arrays saved by earlier nodes stay intact, so the old
        # version counter is left alone and the tensor gets a fresh one for its new array.
        t.array = result.array
        t._node = result._node
        t._requires_grad = result._requires_grad
        t._version = [0]
        return t
    else:
        prev = state.grad_enabled
        state.grad_enabled = False
        try:
            result = fn(t, *args, **kwargs)
        finally:
            state.grad_enabled = prev
        _write(t, result.array, name)
        t._version[0] += 1
        if state.modes:
            notify_write(t, result)
        return t


def setitem(t: Tensor, key: Any, value: Any) -> None:
    """``t[key] = value`` for tensors outside any graph."""
    from ._keys import normalize_key, split_key

    value_grad = isinstance(value, Tensor) and value._requires_grad
    if state.grad_enabled and (t._requires_grad or value_grad):
        raise AutogradError(
            "__setitem__: assigning into a tensor that requires grad (or assigning a tensor that "
            "requires grad) would corrupt the graph; build the result with where()/cat() or do "
            "it under pullback.no_grad()"
        )
    nkey, advanced = normalize_key(t, key)
    target = t.array
    if advanced:  # PyTorch's placement: integers first (a view to write through), then arrays
        basic, nkey = split_key(nkey)
        if basic is not None:
            target = target[basic]
    if isinstance(value, Tensor):
        if value.device is not t.device:
            from ..errors import DeviceError

            raise DeviceError(f"__setitem__: tensor on {t.device}, value on {value.device}")
        value = value.array
    elif not isinstance(value, (bool, int, float, complex)):
        # Lists and host arrays go to the tensor's device first (CuPy takes no NumPy values).
        value = t.device.backend.asarray(value, index=t.device.index or 0)
    try:
        target[nkey] = value
    except IndexError as exc:
        from ..errors import IndexOutOfRangeError

        raise IndexOutOfRangeError(f"__setitem__ on shape {tuple(t.shape)}: {exc}") from None
    except ValueError as exc:
        raise ShapeError(f"__setitem__ on shape {tuple(t.shape)}: {exc}") from None
    t._version[0] += 1


def copy_(t: Tensor, src: Any) -> Tensor:
    """Copy ``src`` into ``t`` (broadcast, cast). Differentiable, as PyTorch's: when a graph is
    recorded the gradient reaches ``src`` (summed over the broadcast axes) and ``t``'s earlier
    values get a zero gradient."""
    _check_leaf(t, "copy_")
    if state.grad_enabled and (t._requires_grad or (isinstance(src, Tensor)
                                                    and src._requires_grad)):
        return inplace(t, copy, src)  # named copy: inplace reports it as copy_
    source = src  # what the modes are told was written
    if isinstance(src, Tensor):
        if src.device is not t.device:
            src = src.to(t.device)
        src = src.array
    xp = t.device.backend.xp
    try:
        xp.copyto(t.array, xp.broadcast_to(xp.asarray(src), t.shape), casting="unsafe")
    except ValueError as exc:
        raise ShapeError(f"copy_: cannot copy shape {getattr(src, 'shape', ())} into "
                         f"{tuple(t.shape)} ({exc})") from None
    t._version[0] += 1
    if state.modes:
        notify_write(t, source)
    return t


def copy(t: Tensor, src: Any) -> Tensor:
    """``src`` in ``t``'s shape and dtype, as a graph node of both (a ``where`` whose condition
    is all false: ``t`` gets a zero gradient, never NaN, whatever its values)."""
    from ..creation import as_tensor, zeros
    from .elementwise import where
    from .shape import broadcast_to

    src = as_tensor(src, device=t.device) if isinstance(src, Tensor) else as_tensor(
        src, dtype=t.dtype, device=t.device)
    value = broadcast_to(src.to(t.dtype), tuple(t.shape))
    keep_old = zeros(tuple(t.shape), dtype="bool", device=t.device)
    return where(keep_old, t, value)


def fill_(t: Tensor, value: Any) -> Tensor:
    """Fill ``t`` with a scalar; no graph."""
    _check_leaf(t, "fill_")
    t.array[...] = value
    t._version[0] += 1
    if state.modes:
        notify_write(t, value)
    return t


def fill_random_(t: Tensor, kind: str, a: float, b: float) -> Tensor:
    """Fill with uniform(a, b) or normal(a, b) samples from the device's generator."""
    from ..creation import normal, uniform

    _check_leaf(t, f"{kind}_")
    sample = uniform if kind == "uniform" else normal
    values = sample(a, b, size=tuple(t.shape), dtype=t.dtype, device=t.device)
    t.array[...] = values.array
    t._version[0] += 1
    return t
