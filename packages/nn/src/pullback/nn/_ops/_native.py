"""C kernels (``_csrc/*.c``, built by :mod:`pullback.native`) for nn's ops on the CPU: softmax
(attention's scale and causal mask folded in), layer norm and their backwards on float32, and
log-softmax and softmax cross-entropy with their backwards on float32 and float64 (``rows.c``):
one pass per row, where the NumPy kernels make five to ten passes over the whole array; and
convolution's im2col and col2im (``im2col.c``), which NumPy runs through strided views at a few
nanoseconds per element.

Each function returns ``NotImplemented`` for inputs it does not cover (another dtype, under
1,024 elements, no compiler), and the caller runs the NumPy kernel; strided inputs are copied
once.
Arguments that would make a C kernel read or write outside its arrays raise a typed error
instead (im2col and col2im check their geometry with :mod:`.geometry`): each C source states at
its top what these entry points guarantee it.
"""

from __future__ import annotations

import math
from functools import lru_cache
from pathlib import Path
from typing import Any, Callable

import numpy as np

from pullback import native
from pullback.errors import ShapeError

from .geometry import check_output_size, check_windows

_SOURCES = Path(__file__).parent / "_csrc"


@lru_cache(maxsize=None)
def _function(name: str, n_pointers: int, n_sizes: int, n_floats: int = 0,
              source: str = "rows") -> Callable[..., None] | None:
    library = native.load(f"nn_{source}", _SOURCES / f"{source}.c")
    if library is None:
        return None
    return native.declare(library, name, n_pointers, n_sizes, n_floats)


def _last_axis(x: Any, axis: int) -> bool:
    return x.ndim > 0 and axis in (-1, x.ndim - 1) and x.shape[-1] > 0


def softmax(x: Any, *, axis: int, scale: float = 1.0, causal: bool = False,
            out: Any = None) -> Any:
    """``softmax(scale * x)`` along the last axis; with ``causal``, query ``i`` (the
    second-to-last axis) sees keys ``0..i`` only. ``out`` may be ``x`` itself."""
    if not _last_axis(x, axis) or (causal and x.ndim < 2):
        return NotImplemented
    inputs = native.float32_inputs(x)
    if inputs is None or (out is not None and (out is not x or inputs[0] is not x)):
        return NotImplemented  # in place needs x itself, contiguous: C writes y over x
    kernel = _function("softmax_f32", 2, 3, 1)
    if kernel is None:
        return NotImplemented
    (x,) = inputs
    y = np.empty_like(x) if out is None else out
    cols = x.shape[-1]
    period = x.shape[-2] if causal else 1
    native.run_rows(kernel, x.size // cols, cols, native.address(x), native.address(y), cols,
                    period, int(causal), scale)
    return y


def softmax_backward(gy: Any, y: Any, *, axis: int) -> Any:
    """``y * (gy - sum(gy * y))`` along the last axis."""
    inputs = native.float32_inputs(gy, y) if gy.shape == y.shape and _last_axis(y, axis) else None
    kernel = _function("softmax_backward_f32", 3, 1)
    if inputs is None or kernel is None:
        return NotImplemented
    gy, y = inputs
    gx = np.empty_like(y)
    cols = y.shape[-1]
    native.run_rows(kernel, y.size // cols, cols, native.address(gy), native.address(y),
                    native.address(gx), cols)
    return gx



def _float_inputs(*arrays: Any) -> tuple[tuple[Any, ...], str] | None:
    """The arrays C-contiguous and the kernel suffix of their common dtype (``"f32"`` or
    ``"f64"``), or ``None``: as :func:`pullback.native.float32_inputs`, float64 included."""
    dtype = arrays[0].dtype if arrays[0].__class__ is np.ndarray else None
    if dtype == np.float32:
        inputs = native.float32_inputs(*arrays)
        return None if inputs is None else (inputs, "f32")
    if dtype != np.float64 or any(a.__class__ is not np.ndarray or a.dtype != dtype
                                  for a in arrays):
        return None
    if max(a.size for a in arrays) < native.MIN_NATIVE_ELEMENTS:
        return None
    return tuple(np.ascontiguousarray(a) for a in arrays), "f64"


def log_softmax(x: Any, *, axis: int) -> Any:
    """``(x - max) - log(sum(exp(x - max)))`` along the last axis."""
    found = _float_inputs(x) if _last_axis(x, axis) else None
    kernel = None if found is None else _function(f"log_softmax_{found[1]}", 2, 1)
    if kernel is None:
        return NotImplemented
    (x,), _ = found
    y = np.empty_like(x)
    cols = x.shape[-1]
    native.run_rows(kernel, x.size // cols, cols, native.address(x), native.address(y), cols)
    return y


def log_softmax_backward(g: Any, y: Any, *, axis: int) -> Any:
    """``g - exp(y) * sum(g)`` along the last axis (``y``: the log-softmax)."""
    fits = g.shape == y.shape and _last_axis(y, axis)
    found = _float_inputs(g, y) if fits else None
    kernel = None if found is None else _function(f"log_softmax_backward_{found[1]}", 3, 1)
    if kernel is None:
        return NotImplemented
    (g, y), _ = found
    gx = np.empty_like(y)
    cols = y.shape[-1]
    native.run_rows(kernel, y.size // cols, cols, native.address(g), native.address(y),
                    native.address(gx), cols)
    return gx


def _class_rows(logits: Any, target: Any) -> Any:
    """``target`` as C-contiguous int64, when ``logits`` is (N, C) with C >= 1 and ``target``
    holds N integers; else ``None``. (Out-of-range targets cannot make the C kernels read or
    write outside a row: they give a NaN loss there, see rows.c.)"""
    if (logits.ndim != 2 or logits.shape[1] == 0 or target.__class__ is not np.ndarray
            or target.shape != logits.shape[:1] or target.dtype.kind not in "iu"):
        return None
    if target.dtype == np.uint64 and target.size and int(target.max()) >= 2 ** 63:
        return None  # would wrap to negative int64 values; the NumPy kernel says what is wrong
    return np.ascontiguousarray(target, dtype=np.int64)


def _ignore(ignore_index: int) -> int | None:
    return ignore_index if -2 ** 63 <= ignore_index < 2 ** 63 else None


def _class_kernel(name: str, n_pointers: int, logits: Any, target: Any, floats: tuple[Any, ...],
                  ignore_index: int) -> tuple[Any, tuple[Any, ...], Any] | None:
    """``(kernel, floats, target)`` for the cross-entropy C kernel ``name`` of the operands'
    float type: ``floats`` (logits first) C-contiguous and ``target`` as int64; ``None`` when
    any operand does not fit (the NumPy kernel runs then)."""
    found = _float_inputs(*floats)
    target = None if found is None else _class_rows(logits, target)
    if target is None or _ignore(ignore_index) is None:
        return None
    kernel = _function(f"{name}_{found[1]}", n_pointers, 2)
    return None if kernel is None else (kernel, found[0], target)


def cross_entropy(logits: Any, target: Any, *, ignore_index: int) -> Any:
    """``(loss, (stats,))``: per row ``logsumexp(logits) - logits[target]`` (0 where the target
    is ``ignore_index``) and ``stats`` (N, 2), each row's max and log-sum of exponentials after
    it (what :func:`cross_entropy_backward` reads)."""
    found = (_class_kernel("cross_entropy", 4, logits, target, (logits,), ignore_index)
             if logits.ndim == 2 else None)
    if found is None:
        return NotImplemented
    kernel, (logits,), target = found
    rows, cols = logits.shape
    loss = np.empty(rows, dtype=logits.dtype)
    stats = np.empty((rows, 2), dtype=logits.dtype)
    native.run_rows(kernel, rows, cols, native.address(logits), native.address(target),
                    native.address(loss), native.address(stats), cols, ignore_index)
    return loss, (stats,)


def cross_entropy_backward(g: Any, logits: Any, target: Any, stats: Any, *,
                           ignore_index: int) -> Any:
    """``(softmax(logits) - onehot(target)) * g[:, None]``, rows whose target is
    ``ignore_index`` zero; ``g`` (N,) is the gradient of the per-row loss."""
    fits = logits.ndim == 2 and g.shape == logits.shape[:1] and stats.shape == (len(g), 2)
    found = (_class_kernel("cross_entropy_backward", 5, logits, target, (logits, g, stats),
                           ignore_index) if fits else None)
    if found is None:
        return NotImplemented
    kernel, (logits, g, stats), target = found
    rows, cols = logits.shape
    gx = np.empty_like(logits)
    native.run_rows(kernel, rows, cols, native.address(logits), native.address(target),
                    native.address(stats), native.address(g), native.address(gx), cols,
                    ignore_index)
    return gx


def _rows_cols(x: Any, normalized_ndim: int) -> tuple[int, int]:
    cols = math.prod(x.shape[x.ndim - normalized_ndim:])
    return x.size // cols, cols


def _params_fit(x: Any, normalized_ndim: int, *params: Any) -> bool:
    normalized = x.shape[x.ndim - normalized_ndim:]
    return (0 < normalized_ndim <= x.ndim and math.prod(normalized) > 0
            and all(p is None or p.shape == normalized for p in params))


def layer_norm(x: Any, w: Any, b: Any, *, normalized_ndim: int, eps: float) -> Any:
    """``((x - mean) * rstd * w + b, (mean, rstd))``, mean and rstd shaped as the NumPy kernel
    keeps them (``x``'s leading axes, then ones)."""
    inputs = native.float32_inputs(x, w, b) if _params_fit(x, normalized_ndim, w, b) else None
    kernel = _function("layer_norm_f32", 6, 1, 1)
    if inputs is None or kernel is None:
        return NotImplemented
    x, w, b = inputs
    rows, cols = _rows_cols(x, normalized_ndim)
    kept = x.shape[:x.ndim - normalized_ndim] + (1,) * normalized_ndim
    y = np.empty_like(x)
    mean = np.empty(kept, dtype=np.float32)
    rstd = np.empty(kept, dtype=np.float32)
    native.run_rows_of_arrays(kernel, _arrays_at((0, 3, 4, 5), (1, w), (2, b)), rows, cols, x, w,
                              b, y, mean, rstd, cols, eps)
    return y, (mean, rstd)


def _arrays_at(given: tuple[int, ...], *optional: tuple[int, Any]) -> tuple[int, ...]:
    """The positions of a kernel's array arguments (for :func:`native.run_rows_of_arrays`):
    ``given``, plus each optional one's position where it is not ``None`` (a NULL pointer)."""
    return given + tuple(i for i, a in optional if a is not None)


# Rows per block of layer norm's parameter sums (rows.c: each block sums in float, the blocks
# are added in double and in order): the sums depend on it, never on the thread count.
_LAYER_NORM_BLOCK_ROWS = 64


def layer_norm_backward(g: Any, x: Any, w: Any, mean: Any, rstd: Any, *, normalized_ndim: int,
                        param_grads: bool = True, add: Any = None) -> Any:
    """``(gx, gw, gb)`` of :func:`layer_norm`; ``gw`` and ``gb`` are ``None`` unless
    ``param_grads``. With ``add`` (an array of ``x``'s shape), ``gx`` is ``add + gx``, summed in
    the kernel's last pass over the row."""
    fits = g.shape == x.shape and _params_fit(x, normalized_ndim, w)
    fits = fits and (add is None or add.shape == x.shape)
    # the C kernel reads one mean and one rstd per row
    fits = fits and mean.size == rstd.size == _rows_cols(x, normalized_ndim)[0]
    inputs = native.float32_inputs(g, x, w, mean, rstd, add) if fits else None
    kernel = _function("layer_norm_backward_f32", 9, 3)
    if inputs is None or kernel is None:
        return NotImplemented
    g, x, w, mean, rstd, add = inputs
    rows, cols = _rows_cols(x, normalized_ndim)
    gx = np.empty_like(x)
    blocks = -(-rows // _LAYER_NORM_BLOCK_ROWS)
    # the blocks' parameter sums (blocks x cols doubles), w's and b's
    sums_w = np.empty((blocks, cols)) if param_grads else None
    sums_b = np.empty((blocks, cols)) if param_grads else None
    native.run_rows_of_arrays(kernel, _arrays_at((0, 1, 3, 4, 5), (2, w), (6, add), (7, sums_w),
                                                 (8, sums_b)),
                              blocks, _LAYER_NORM_BLOCK_ROWS * cols, g, x, w, mean, rstd, gx, add,
                              sums_w, sums_b, rows, cols, _LAYER_NORM_BLOCK_ROWS)
    if sums_w is None:
        return gx, None, None
    normalized = x.shape[x.ndim - normalized_ndim:]
    gw = np.empty(normalized, dtype=np.float32)
    gb = np.empty(normalized, dtype=np.float32)
    native.run_rows_of_arrays(_function("layer_norm_param_grads_f32", 4, 2), (0, 1, 2, 3), cols,
                              blocks, sums_w, sums_b, gw, gb, blocks, cols)
    return gx, gw, gb


Pair = tuple[int, int]


def _geometry(where: str, shape: tuple[int, ...], kernel: Pair, out_hw: Pair, stride: Pair,
              padding: tuple[Pair, Pair], dilation: Pair) -> tuple[int, ...]:
    """The sizes im2col.c takes after the geometry is checked (what its callers guarantee);
    along an axis with one window the stride is never used and goes to C as 1, so that a huge
    one cannot overflow its index arithmetic."""
    if len(shape) != 4:  # the C kernels are 2-d; geometry.py also passes 1-d and 3-d ones
        raise ShapeError(f"{where}: expected a 4-d (N, C, H, W) input, got shape {shape}")
    check_output_size(where, shape, kernel, stride, padding, dilation, out_hw)
    stride = tuple(s if o > 1 else 1 for s, o in zip(stride, out_hw))
    return (*kernel, *out_hw, *stride, padding[0][0], padding[1][0], *dilation)


def window_sizes(where: str, shape: tuple[int, ...], kernel: Pair, stride: Pair,
                 padding: tuple[Pair, Pair], dilation: Pair) -> tuple[Pair, tuple[int, ...]]:
    """The windows of a 2-d geometry over an input of ``shape`` ((Ho, Wo)) and the sizes the C
    kernels take (:func:`_geometry`), checked (the per-image convolution and the pooling
    forward keep what this returns per geometry: a batch-1 layer spends more in these checks
    than in its C call)."""
    out_hw = check_windows(where, shape, kernel, stride, padding, dilation)
    return out_hw, _geometry(where, tuple(shape), kernel, out_hw, stride, padding, dilation)


def im2col(x: Any, kernel: Pair, out_hw: Pair, stride: Pair, padding: tuple[Pair, Pair],
           dilation: Pair) -> Any:
    """The windows of ``x`` (N, C, H, W) as a (N, C, kh, kw, Ho, Wo) array (zeros in the
    padding), or ``NotImplemented``."""
    sizes = _geometry("nn im2col", tuple(x.shape), kernel, out_hw, stride, padding, dilation)
    inputs = native.float32_inputs(x)
    kernel_fn = _function("im2col_f32", 2, 12, source="im2col")
    if inputs is None or kernel_fn is None:
        return NotImplemented
    (x,) = inputs
    n, c, h, w = x.shape
    cols = np.empty((n, c) + tuple(kernel) + tuple(out_hw), dtype=np.float32)
    native.run_rows(kernel_fn, n * c, cols[0, 0].size, native.address(x), native.address(cols), h,
                    w, *sizes)
    return cols


def col2im(cols: Any, input_hw: Pair, stride: Pair, padding: tuple[Pair, Pair],
           dilation: Pair) -> Any:
    """The adjoint of :func:`im2col`: ``cols`` (N, C, kh, kw, Ho, Wo) added back into an
    (N, C, H, W) array, or ``NotImplemented``."""
    if cols.ndim != 6 or len(input_hw) != 2:
        raise ShapeError(f"nn col2im: expected (N, C, kh, kw, Ho, Wo) columns and an (H, W) "
                         f"size, got shapes {tuple(cols.shape)} and {tuple(input_hw)}")
    n, c, kh, kw, ho, wo = cols.shape
    sizes = _geometry("nn col2im", (n, c, *input_hw), (kh, kw), (ho, wo), stride, padding,
                      dilation)
    inputs = native.float32_inputs(cols)
    kernel_fn = _function("col2im_f32", 2, 12, source="im2col")
    if inputs is None or kernel_fn is None:
        return NotImplemented
    (cols,) = inputs
    dx = np.empty((n, c) + tuple(input_hw), dtype=np.float32)
    native.run_rows(kernel_fn, n * c, cols[0, 0].size, native.address(cols), native.address(dx),
                    *input_hw, *sizes)
    return dx
