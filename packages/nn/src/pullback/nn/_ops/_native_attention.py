"""Scaled-dot-product attention forward and backward on NumPy arrays with the fused C kernels of
``_csrc/attention.c``: per (batch, head) pair the scores, the causal mask, the softmax and the
products stay in the core's caches, where the op composition makes six batched matrix products,
a softmax and its backward, and the heads' split and merge copies, each a pass over memory.

Covered: float32 or float64 ``q`` (..., L, E), ``k`` (..., S, E), ``v`` (..., S, Ev) of one
dtype, at most two batch axes (broadcast among the operands), no size 0, no additive mask and
no dropout (the op's caller decides that), v's batch axes no wider than q's and k's together
(the saved weights keep the composition's shape), with a C compiler. Both functions return
``NotImplemented`` otherwise, and the op's NumPy composition runs.

The operands are read through their strides, so the heads that the GPT slices out of its QKV
projection (``reshape(B, T, H, D).transpose(1, 2)`` of a third of it) are never copied. With two
batch axes (B, H) every result is written as a (B, T, H, D) array and returned as its
(B, H, T, D) transposed view: merging the heads back (``transpose(1, 2).reshape(B, T, H * D)``)
is then a view, not a copy. The forward saves the attention weights, C-contiguous, as the
composition does: either backward can follow either forward.
"""

from __future__ import annotations

import functools
from typing import Any

import numpy as np

from pullback import native

from . import _native

_FLOATS = {np.dtype(np.float32): "f32", np.dtype(np.float64): "f64"}


# The kernels' pointer arguments, passed as the NumPy arrays (native.run_rows_of_arrays):
# q, k, v, out, weights, scale; and g, q, k, v, weights, gq, gk, gv, scale.
_FORWARD_ARRAYS = tuple(range(6))
_BACKWARD_ARRAYS = tuple(range(9))


def _kernel(name: str, n_pointers: int, n_sizes: int) -> Any:
    return _native._function(name, n_pointers, n_sizes, source="attention")


def _grid(batch: tuple[int, ...]) -> tuple[int, int]:
    """The batch shape as the kernels' (B, H) grid."""
    return (batch[0] if len(batch) == 2 else 1), (batch[-1] if batch else 1)


def _strides(a: Any, batch: tuple[int, ...]) -> tuple[int, ...] | None:
    """Element strides of ``a`` broadcast to ``batch + a.shape[-2:]``, as (batch, head, row,
    feature); ``None`` when a byte stride is not a whole number of elements."""
    strides = a.strides
    if a.shape[:-2] != batch:
        strides = np.broadcast_to(a, batch + a.shape[-2:]).strides
    size = a.itemsize
    if any(s % size for s in strides):
        return None
    return (0,) * (2 - len(batch)) + tuple(s // size for s in strides)


def _operands(*arrays: Any) -> tuple[tuple[int, ...], str, list[tuple[int, ...]]] | None:
    """``(batch, suffix, strides)`` of the attention operands ``q, k, v`` (and ``g``), or
    ``None`` when the kernels do not cover them."""
    if any(a.__class__ is not np.ndarray or a.ndim < 2 or a.ndim > 4 or a.size == 0
           for a in arrays):
        return None
    suffix = _FLOATS.get(arrays[0].dtype)
    if suffix is None or any(a.dtype != arrays[0].dtype for a in arrays):
        return None
    batch = arrays[0].shape[:-2]
    if any(a.shape[:-2] != batch for a in arrays):
        try:
            batch = tuple(np.broadcast_shapes(*(a.shape[:-2] for a in arrays)))
        except ValueError:
            return None
    if len(batch) > 2:
        return None
    strides = [_strides(a, batch) for a in arrays]
    if any(s is None for s in strides):
        return None
    return batch, suffix, strides  # type: ignore[return-value]


def _heads_out(batch: tuple[int, ...], rows: int, features: int, dtype: Any) -> Any:
    """An uninitialized ``batch + (rows, features)`` result; with two batch axes (B, H) the
    (B, H, rows, features) view of a (B, rows, H, features) array."""
    if len(batch) == 2:
        return np.empty((batch[0], rows, batch[1], features), dtype=dtype).transpose(0, 2, 1, 3)
    return np.empty(batch + (rows, features), dtype=dtype)


def _out_strides(a: Any) -> tuple[int, int, int]:
    """(batch, head, row) element strides of a :func:`_heads_out` result (features are
    contiguous)."""
    size = a.itemsize
    strides = (0,) * (4 - a.ndim) + tuple(s // size for s in a.strides)
    return strides[0], strides[1], strides[2]


@functools.lru_cache(maxsize=64)
def _scale(scale: float, dtype: Any) -> Any:
    # by pointer: the kernel convention passes floats as C floats, too narrow for float64;
    # one read-only array per scale and dtype, kept (the kernels only read it)
    box = np.array([scale], dtype=dtype)
    box.flags.writeable = False
    return box


def attention(q: Any, k: Any, v: Any, bias: Any = None, keep: Any = None, *, scale: float,
              causal: bool) -> Any:
    """``(softmax(q k^T * scale) @ v, (weights,))``, query ``i`` seeing keys ``0..i`` when
    ``causal``; ``NotImplemented`` with a ``bias`` or a dropout mask ``keep``."""
    found = None if bias is not None or keep is not None else _operands(q, k, v)
    if found is None or q.shape[-1] != k.shape[-1] or k.shape[-2] != v.shape[-2]:
        return NotImplemented
    batch, suffix, (qs, ks, vs) = found
    kernel = _kernel(f"sdpa_forward_{suffix}", 6, 21)
    if kernel is None or np.broadcast_shapes(q.shape[:-2], k.shape[:-2]) != batch:
        return NotImplemented  # (also where only v's batch axes widen: the weights would too)
    (length, features), keys, value_features = q.shape[-2:], k.shape[-2], v.shape[-1]
    out = _heads_out(batch, length, value_features, q.dtype)
    weights = np.empty(batch + (length, keys), dtype=q.dtype)
    scale_box = _scale(scale, q.dtype)
    b, h = _grid(batch)
    native.run_rows_of_arrays(kernel, _FORWARD_ARRAYS, b * h,
                              length * keys * (features + value_features), q, k, v, out, weights,
                              scale_box, h, length, keys, features, value_features, *qs, *ks,
                              *vs, *_out_strides(out), int(causal))
    return out, (weights,)


def attention_backward(g: Any, q: Any, k: Any, v: Any, weights: Any, *, scale: float,
                       causal: bool, out: tuple[Any, Any, Any] | None = None) -> Any:
    """``(gq, gk, gv)`` of :func:`attention` from the output's gradient ``g`` and the saved
    weights, each of the operands' broadcast batch shape.

    ``out``: three arrays of those shapes and ``q``'s dtype, features contiguous (views of one
    buffer, such as the column blocks of a packed QKV gradient), written as if added into zeros
    (``-0.0`` becomes ``0.0``) and returned; ``NotImplemented`` for arrays the kernel cannot
    write."""
    found = _operands(g, q, k, v)
    if found is None or q.shape[-1] != k.shape[-1] or k.shape[-2] != v.shape[-2]:
        return NotImplemented
    batch, suffix, (gs, qs, ks, vs) = found
    length, features = q.shape[-2:]
    keys, value_features = v.shape[-2:]
    if (g.shape != batch + (length, value_features) or weights.__class__ is not np.ndarray
            or weights.dtype != q.dtype or weights.shape != batch + (length, keys)):
        return NotImplemented
    kernel = _kernel(f"sdpa_backward_{suffix}", 9, 32)
    shapes = [batch + (length, features), batch + (keys, features),
              batch + (keys, value_features)]
    if kernel is None or (out is not None and not _writable(out, shapes, q.dtype)):
        return NotImplemented
    weights = np.ascontiguousarray(weights)
    gq, gk, gv = out if out is not None else (
        _heads_out(batch, shape[-2], shape[-1], q.dtype) for shape in shapes)
    scale_box = _scale(scale, q.dtype)
    b, h = _grid(batch)
    native.run_rows_of_arrays(kernel, _BACKWARD_ARRAYS, b * h,
                              length * keys * (features + value_features), g, q, k, v, weights,
                              gq, gk, gv, scale_box, h, length, keys, features, value_features,
                              *gs, *qs, *ks, *vs, *_out_strides(gq), *_out_strides(gk),
                              *_out_strides(gv), int(causal), int(out is not None))
    return gq, gk, gv


def _writable(out: Any, shapes: list[tuple[int, ...]], dtype: Any) -> bool:
    """Whether ``out`` holds three arrays of ``shapes`` and ``dtype`` that the kernel writes
    through their strides: features contiguous, whole-element strides, no two overlapping."""
    if len(out) != 3 or any(
            a.__class__ is not np.ndarray or a.dtype != dtype or a.shape != shape
            or not a.flags.writeable or (a.shape[-1] > 1 and a.strides[-1] != a.itemsize)
            or any(st % a.itemsize for st in a.strides) for a, shape in zip(out, shapes)):
        return False
    return not any(np.shares_memory(a, b) for i, a in enumerate(out) for b in out[i + 1:])
