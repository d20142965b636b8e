"""The CPU backend's GEMM provider: the one library that computes every float32/float64 matrix
product on NumPy arrays, eager and compiled alike (``matmul``, ``bmm``, ``nn.linear``,
convolutions' products, compiled programs' products and epilogues), so that a compiled program's
results stay eager's, bit for bit.

The provider is chosen once per process, at the first product (never at ``import pullback``:
loading MKL takes tens of milliseconds), by ``$PULLBACK_GEMM``:

* ``auto`` (the default): Intel MKL's CBLAS where the ``mkl`` wheel is installed (a dependency
  of pullback on x86-64 Linux) and native kernels can be built, else NumPy's ``matmul``;
* ``mkl``: MKL, or an ``ImportError`` at the first product where it is missing;
* ``numpy``: NumPy's ``matmul`` (OpenBLAS in NumPy's wheels).

Why MKL: on the project's 2-core Xeon (float32, one thread, CPU time, the GPT benchmark's
linear-layer shapes) MKL's ``sgemm`` runs at about 155-160 GFLOP/s where NumPy's OpenBLAS
reaches 125-140; attention's stacks of 64 x 32 x 64 products, one ``cblas_sgemm_batch`` call,
take 10-15 % less time than NumPy's loop of one BLAS call per matrix.

MKL is found through the installed ``mkl`` distribution's files (or ``$PULLBACK_MKL``, a path to
``libmkl_rt``) and runs sequential: with more threads (:func:`pullback.get_num_threads`) a
product is split by rows (a stack of products, by matrices) over pullback's own C thread pool
(:func:`pullback.native.run_rows`). MKL's OpenMP layer would start a second runtime's threads
next to OpenBLAS's and PyTorch's: measured at 2 threads on 2 cores, it made the compiled GPT step
1.9x slower and slowed the eager steps beside it. Products MKL does not take (integer, bfloat16
or mixed dtypes, 1-D operands, empty products), single-row products and small ones (below
``_MIN_MKL_MACS`` multiply-adds) go to NumPy; matrices with no unit stride are copied first.

Roundings: MKL and OpenBLAS both add a short inner dimension (up to 512 on this CPU) in order,
with fused multiply-adds, so most of the GPT's and MLP's products are the same bits either way;
longer ones (784 inputs, im2col's long columns) round differently (float32 tolerance). How MKL
adds a long inner dimension also depends on how many rows one call has, so results can move
with the thread count; a compiled program splits its products exactly as eager does
(:func:`pullback.native.run_rows`), which keeps its results eager's.
"""

from __future__ import annotations

import ctypes
import math
import os
from importlib import metadata
from pathlib import Path
from typing import Any, Callable, NamedTuple

import numpy as np

from . import native

PROVIDERS = ("auto", "mkl", "numpy")
_ROW_MAJOR, _NO_TRANS, _TRANS = 101, 111, 112
_SEQUENTIAL = 1  # MKL_THREADING_SEQUENTIAL
_CBLAS_INT_MAX = 2**31 - 1
# Where gemm_rows.c's row kernels take a, b and c (after the gemm's address): the callers pass
# the arrays themselves there (pullback.native.run_rows_of_arrays).
OPERANDS = (1, 2, 3)
# Below this many multiply-adds a single product is NumPy's (2 threads, wall clock, float32,
# x @ w.T: 32x64x64 5.6 us against MKL's 6.8, 20x2x50 1.1 against 4.1, 128x64x64 8.9 against
# 10.6; from here on MKL wins or ties: 32x128x128 12.0 against 10.3, 64x128x128 19.0 against
# 14.6, 128x128x128 46 against 21). Stacks of products stay on MKL's batched call.
_MIN_MKL_MACS = 1 << 19


def _library_path() -> str | None:
    explicit = os.environ.get("PULLBACK_MKL")
    if explicit:
        return explicit
    try:
        files = metadata.files("mkl") or []
    except metadata.PackageNotFoundError:
        return None
    for f in files:
        if Path(str(f)).name.startswith("libmkl_rt.so"):
            return str(f.locate())
    return None


class Mkl:
    """The products of one loaded ``libmkl_rt``: for each dtype, the addresses of
    ``cblas_?gemm`` and ``cblas_?gemm_batch`` and the row-range kernels of
    ``_csrc/gemm_rows.c`` that call them on a share of the rows (or of the stack)."""

    def __init__(self, library: ctypes.CDLL, rows: ctypes.CDLL, path: str) -> None:
        library.MKL_Set_Threading_Layer.argtypes = [ctypes.c_int]
        library.MKL_Set_Threading_Layer(_SEQUENTIAL)
        self.path = path
        self.gemm: dict[str, tuple[int, Any]] = {}
        self.batch: dict[str, tuple[int, Any]] = {}
        for dtype, prefix in (("float32", "s"), ("float64", "d")):
            self.gemm[dtype] = (_address(getattr(library, f"cblas_{prefix}gemm")),
                                native.declare(rows, f"{prefix}gemm_rows", 4, 7))
            self.batch[dtype] = (_address(getattr(library, f"cblas_{prefix}gemm_batch")),
                                 native.declare(rows, f"{prefix}gemm_batch_rows", 4, 7))


def _address(function: Any) -> int:
    return ctypes.cast(function, ctypes.c_void_p).value  # type: ignore[return-value]


_chosen: list[Mkl | None] = []  # empty until the first product chose the provider


def requested() -> str:
    """``$PULLBACK_GEMM`` (``auto`` when unset), checked."""
    wanted = os.environ.get("PULLBACK_GEMM", "auto").strip().lower() or "auto"
    if wanted not in PROVIDERS:
        raise ValueError(f"PULLBACK_GEMM must be one of {', '.join(PROVIDERS)}, got {wanted!r}")
    return wanted


def _load_mkl() -> Mkl | None:
    path = _library_path()
    if path is None:
        return None
    rows = native.load("gemm_rows", Path(__file__).parent / "_csrc" / "gemm_rows.c")
    if rows is None:
        return None
    try:
        return Mkl(ctypes.CDLL(path), rows, path)
    except (OSError, AttributeError):
        return None


def mkl() -> Mkl | None:
    """The loaded MKL when it is this process's provider, else ``None`` (chosen on first call)."""
    if not _chosen:
        wanted = requested()
        found = None if wanted == "numpy" else _load_mkl()
        if found is None and wanted == "mkl":
            raise ImportError("PULLBACK_GEMM=mkl: MKL was not found or native kernels cannot be "
                              "built (no C compiler, PULLBACK_NATIVE=0); pip install mkl (or set "
                              "$PULLBACK_MKL to libmkl_rt's path)")
        _chosen.append(found)
    return _chosen[0]


def provider() -> str:
    """The library that computes this process's CPU matrix products: ``"mkl"`` or
    ``"numpy"`` (chosen by ``$PULLBACK_GEMM`` on the first call, see the module's docstring)."""
    return "numpy" if mkl() is None else "mkl"


def _operand(a: np.ndarray) -> tuple[int, int] | None:
    """``(transpose flag, leading dimension)`` of the matrices of ``a`` (its last two axes)
    as BLAS reads them, or ``None`` when neither axis has a unit stride."""
    rows, cols = a.shape[-2:]
    item = a.itemsize
    s_row, s_col = a.strides[-2:]
    # the stride along an axis of length one is never used (NumPy may leave any value there, 0
    # for a broadcast axis): such an axis counts as contiguous, its leading dimension minimal
    if (cols == 1 or s_col == item) and (rows == 1 or s_row % item == 0):
        ld = s_row // item if rows > 1 else max(cols, 1)
        if ld >= max(cols, 1):
            return _NO_TRANS, ld
    if (rows == 1 or s_row == item) and (cols == 1 or s_col % item == 0):
        ld = s_col // item if cols > 1 else max(rows, 1)
        if ld >= max(rows, 1):
            return _TRANS, ld
    return None


def _matrix(a: np.ndarray) -> tuple[np.ndarray, int, int]:
    found = _operand(a)
    if found is None:
        a = np.ascontiguousarray(a)
        found = _operand(a)
        assert found is not None
    return a, found[0], found[1]


def _pointers(a: np.ndarray, batch: tuple[int, ...]) -> np.ndarray:
    """The address of each matrix of ``a`` broadcast over the stack shape ``batch``."""
    lead = a.ndim - 2
    strides = (0,) * (len(batch) - lead) + tuple(
        0 if n == 1 else s for n, s in zip(a.shape[:lead], a.strides[:lead]))
    offsets = np.zeros(batch, dtype=np.int64)
    for axis, (n, s) in enumerate(zip(batch, strides)):
        if s:
            shape = [1] * len(batch)
            shape[axis] = n
            offsets = offsets + (np.arange(n, dtype=np.int64) * s).reshape(shape)
    return (native.address(a) + offsets).reshape(-1)


class SingleProduct(NamedTuple):
    """One planned CBLAS product ``out = x @ y`` of a 2-D ``out`` (rows x n), not yet run."""

    gemm: int  # the address of cblas_?gemm
    kernel: Any  # gemm_rows.c's row-range kernel of the dtype
    x: np.ndarray  # the operands as BLAS reads them (kept alive until the product has run)
    y: np.ndarray
    out: np.ndarray
    sizes: tuple[int, ...]  # trans_x, trans_y, n, k, ldx, x's row step, ldy
    shape: tuple[int, ...]  # the product's shape (``out`` reshaped)

    def arguments(self) -> tuple[Any, ...]:
        """The product's arguments in gemm_rows.c's order, after the row range: its operands
        as the arrays (at :data:`OPERANDS`, for :func:`pullback.native.run_rows_of_arrays`)."""
        return (self.gemm, self.x, self.y, self.out, *self.sizes)

    def run(self) -> np.ndarray:
        """Compute the product, its rows split over the threads; ``out`` in the product's
        shape (a view only where the shape differs: a view of a fresh array would be copied
        where it becomes a ``.grad``)."""
        rows, (n, k) = self.out.shape[0], self.sizes[2:4]
        native.run_rows_of_arrays(self.kernel, OPERANDS, rows, n * k, *self.arguments())
        out = self.out
        return out if out.shape == self.shape else out.reshape(self.shape)


def _operands(lib: Mkl, x: Any, y: Any) -> tuple[Any, ...] | None:
    """``(x, y, stack shape, out, trans_x, trans_y, ldx, ldy, shape)`` of ``x @ y`` as MKL will
    run it (``shape``: the product's), or ``None`` when MKL does not take these operands."""
    dtype = x.dtype
    if (x.__class__ is not np.ndarray or y.__class__ is not np.ndarray or dtype != y.dtype
            or dtype.name not in lib.gemm or x.ndim < 2 or y.ndim < 2
            or x.shape[-1] != y.shape[-2]):
        return None
    k, n = x.shape[-1], y.shape[-1]
    try:
        batch = np.broadcast_shapes(x.shape[:-2], y.shape[:-2])
    except ValueError:
        return None
    shape = batch + (x.shape[-2], n)
    if k == 0 or x.shape[-2] == 0 or n == 0 or 0 in batch:
        return None  # NumPy's empty-product conventions
    if x.ndim > 2 and y.ndim == 2 and x.flags.c_contiguous:
        x, batch = x.reshape(-1, k), ()  # one GEMM over the stack's rows
    elif batch and math.prod(batch) == 1:  # a stack of one product (a batch of one image)
        x, y, batch = x.reshape(x.shape[-2:]), y.reshape(y.shape[-2:]), ()
    if not batch and (x.shape[-2] == 1 or x.shape[-2] * n * k < _MIN_MKL_MACS):
        # One row (batch-1 inference, a KV-cache step): OpenBLAS's gemv behind NumPy's product
        # beats MKL's gemm and this module's planning (MLP 784-256-256-10, one sample: 40 us
        # against 48-54 us, one thread, CPU time; benchmarks/eager_targets.py). A small product:
        # the C call costs about 3 us, more than NumPy's whole product.
        return None
    x, trans_x, ldx = _matrix(x)
    y, trans_y, ldy = _matrix(y)
    if max(x.shape[-2], n, k, ldx, ldy) > _CBLAS_INT_MAX:
        return None  # beyond CBLAS's 32-bit sizes
    out = np.empty(batch + (x.shape[-2], n), dtype=dtype)
    return x, y, batch, out, trans_x, trans_y, ldx, ldy, shape


# Single products planned before, by operand layout: a training step calls each product on
# arrays of one layout every step, and planning one (the checks, strides and transposes of
# _operands) costs about 20 us, a fiftieth of a GPT product. Only plans that read the operands
# in place are kept (a copied operand is planned again). A layout MKL declines (a single row,
# an integer dtype...) is kept as _DECLINED: batch-1 inference then reaches NumPy's product
# without the checks (they were a third of a 784-256-256-10 MLP's 60 us).
_PLANS: dict[tuple[Any, ...], tuple[Any, ...]] = {}
_DECLINED: tuple[Any, ...] = ()
_MAX_PLANS = 1024


def operand_layout(x: Any, y: Any) -> tuple[Any, ...] | None:
    """What the plan of ``x @ y`` depends on: the operands' shapes, strides and dtypes
    (``None`` unless both are NumPy arrays)."""
    if x.__class__ is not np.ndarray or y.__class__ is not np.ndarray:
        return None
    return x.shape, x.strides, x.dtype, y.shape, y.strides, y.dtype


def _plan(lib: Mkl, x: Any, y: Any, layout: Any = None) -> SingleProduct | tuple[Any, ...] | None:
    """``x @ y`` planned: a :class:`SingleProduct`, or :func:`_operands`'s tuple for a stack of
    products, or ``None`` when MKL does not take these operands."""
    if layout is None:
        layout = operand_layout(x, y)
    known = _PLANS.get(layout) if layout is not None else None
    if known is _DECLINED:
        return None
    if known is not None:
        gemm, kernel, out_shape, sizes, shape = known
        return SingleProduct(gemm, kernel, x, y, np.empty(out_shape, x.dtype), sizes, shape)
    found = _operands(lib, x, y)
    if found is None and layout is not None:
        _remember(layout, _DECLINED)
    if found is None or found[2]:
        return found
    single = _single(lib, x, y, found)
    if (native.address(single.x) == native.address(x)
            and native.address(single.y) == native.address(y)):
        _remember(layout, (single.gemm, single.kernel, single.out.shape, single.sizes,
                           single.shape))
    return single


def _remember(layout: tuple[Any, ...], plan: tuple[Any, ...]) -> None:
    if len(_PLANS) >= _MAX_PLANS:
        _PLANS.clear()
    _PLANS[layout] = plan


def _single(lib: Mkl, x: Any, y: Any, found: tuple[Any, ...]) -> SingleProduct:
    """The planned product of :func:`_operands`'s ``found`` for a 2-D result."""
    xm, ym, _, out, trans_x, trans_y, ldx, ldy, shape = found
    gemm, kernel = lib.gemm[x.dtype.name]
    # row i of x starts i rows (no transpose) or i elements (transposed) in
    x_row = ldx if trans_x == _NO_TRANS else 1
    k, n = x.shape[-1], y.shape[-1]
    return SingleProduct(gemm, kernel, xm, ym, out, (trans_x, trans_y, n, k, ldx, x_row, ldy),
                         shape)


def single_product(x: Any, y: Any) -> SingleProduct | None:
    """``x @ y`` planned as one CBLAS product (a 2-D result, or a stack of rows times one
    matrix), or ``None``: NumPy is the provider, a stack of products, or operands MKL does not
    take."""
    lib = mkl()
    planned = None if lib is None else _plan(lib, x, y)
    return planned if planned.__class__ is SingleProduct else None  # type: ignore[return-value]


def matmul(x: Any, y: Any) -> np.ndarray | None:
    """``x @ y`` through MKL, or ``None`` when NumPy is the provider or MKL does not take these
    operands (the caller then runs NumPy's product)."""
    lib = _chosen[0] if _chosen else mkl()
    if lib is None:
        return None
    if getattr(x, "ndim", 0) == 2 and x.shape[0] == 1 and getattr(y, "ndim", 0) == 2:
        return None  # one row: NumPy's (see _operands), before the layout look-up (batch 1)
    layout = operand_layout(x, y)
    known = _PLANS.get(layout) if layout is not None else None
    if known is not None:  # the common case, kept short: a product of a layout seen before
        if known is _DECLINED:
            return None
        gemm, kernel, out_shape, sizes, shape = known
        out = np.empty(out_shape, x.dtype)
        native.run_rows_of_arrays(kernel, OPERANDS, out_shape[0], sizes[2] * sizes[3], gemm, x,
                                  y, out, *sizes)
        return out if out_shape == shape else out.reshape(shape)
    planned = _plan(lib, x, y, layout)
    if planned is None:
        return None
    if planned.__class__ is SingleProduct:
        return planned.run()  # type: ignore[union-attr]
    xm, ym, batch, out, trans_x, trans_y, ldx, ldy, _ = planned  # type: ignore[misc]
    # One group of equal products: the matrices' addresses in three arrays.
    rows, k, n = xm.shape[-2], xm.shape[-1], ym.shape[-1]
    a, b = _pointers(xm, batch), _pointers(ym, batch)
    c = native.address(out) + np.arange(a.size, dtype=np.int64) * (rows * n * out.itemsize)
    gemm_batch, kernel = lib.batch[x.dtype.name]
    native.run_rows(kernel, a.size, rows * n * k, gemm_batch, native.address(a),
                    native.address(b), native.address(c), trans_x, trans_y, rows, n, k, ldx, ldy)
    return out


def gemm_first(kernel: Callable[..., Any]) -> Callable[..., Any]:
    """The CPU ``matmul`` kernel: :func:`matmul` (MKL), else ``kernel`` (NumPy's product)."""

    def run(x: Any, y: Any) -> Any:
        out = matmul(x, y)
        return kernel(x, y) if out is None else out

    run.__wrapped__ = kernel  # type: ignore[attr-defined]
    return run
