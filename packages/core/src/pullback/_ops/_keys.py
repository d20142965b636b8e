"""Index keys: what ``x[key]`` accepts, and PyTorch's placement of advanced-index dims.

NumPy and PyTorch agree on indexing except where an integer sits next to an advanced index
(an integer or bool array): NumPy counts the integer as an advanced index too, so ``x[0, :, idx]``
on shape (2, 3, 4) has its advanced dims first, (2, 3); PyTorch applies integers first, as basic
indexing, and gives (3, 2). :func:`split_key` splits a key into that basic part (integers and
slices, a view) and the advanced rest, which NumPy then places as PyTorch does.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..errors import DeviceError, IndexDTypeError

Key = tuple[Any, ...]
_FULL = slice(None)


def normalize_key(x: Any, key: Any) -> tuple[Key, bool]:
    """``key`` as a tuple of ints/slices/None/Ellipsis/backend arrays, and whether it is
    advanced (holds arrays). Lists, tuples and ranges inside the key are sequences of indices, as
    in PyTorch and NumPy (``x[(1, 0), :]`` takes rows 1 and 0, ``x[range(2)]`` rows 0 and 1)."""
    from ..tensor import Tensor

    if not isinstance(key, tuple):
        key = (key,)
    out: list[Any] = []
    advanced = False
    for k in key:
        if isinstance(k, Tensor):
            if k.device is not x.device:
                raise DeviceError(f"index: tensor on {x.device} indexed by a tensor on {k.device}")
            if k.dtype.kind not in "biu":
                raise IndexDTypeError(
                    f"index: tensors used as indices must be integer or bool, got {k.dtype}")
            out.append(k.array)
            advanced = True
        elif isinstance(k, (list, tuple, range, np.ndarray, bool)):
            arr = np.asarray(k)
            if arr.size == 0 and not isinstance(k, np.ndarray):
                arr = arr.astype(np.int64)  # x[[]], x[range(0)]: no rows (NumPy reads float64)
            if arr.dtype.kind not in "biu":
                raise IndexDTypeError(
                    f"index: arrays used as indices must be integer or bool, got {arr.dtype}")
            out.append(x.device.backend.asarray(arr, index=x.device.index or 0))
            advanced = True
        elif isinstance(k, np.integer):
            out.append(int(k))
        elif k is None or k is Ellipsis or isinstance(k, (int, slice)):
            out.append(k)
        else:
            raise TypeError(f"index: unsupported index {k!r} of type {type(k).__name__}")
    return tuple(out), advanced


def split_key(key: Key) -> tuple[Key | None, Key]:
    """An advanced ``key`` as ``(basic, rest)``: ``x[key]`` in PyTorch is ``x[basic][rest]``.

    ``basic`` holds the integers, slices, None and Ellipsis (arrays become full slices over the
    dims they index); ``rest`` the arrays, with full slices over the dims ``basic`` kept.
    ``basic`` is ``None`` when the key holds no integer (then NumPy already agrees).
    """
    if not any(k.__class__ is int for k in key):
        return None, key
    basic: list[Any] = []
    rest: list[Any] = []
    for k in key:
        if k.__class__ is int:
            basic.append(k)
        elif k is None or k.__class__ is slice:
            basic.append(k)
            rest.append(_FULL)
        elif k is Ellipsis:
            basic.append(k)
            rest.append(k)
        else:  # an array: a bool mask indexes as many dims as it has
            basic.extend([_FULL] * (k.ndim if k.dtype.kind == "b" else 1))
            rest.append(k)
    if Ellipsis not in basic:
        basic.append(Ellipsis)  # keeps the result an array (a view) when integers index every dim
    return tuple(basic), tuple(rest)
