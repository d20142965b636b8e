"""The GEMM provider of compiled programs: NumPy's ``matmul`` (OpenBLAS), or with
``compile(..., gemm="mkl")`` (or ``"auto"``) Intel MKL's CBLAS from the optional ``mkl`` wheel
(``pip install pullback-compiler[mkl]``).

NumPy's is the default because it keeps a compiled step's results eager's, bit for bit where
the loops are exact: MKL rounds its sums differently, and float32 training amplifies that (200
steps of the benchmark GPT end 6e-3 apart in relative loss, against the issue's 1e-5).

Measured on this project's CPU (float32, one thread, CPU time, the GPT benchmark's linear-layer
shapes): MKL's ``sgemm`` runs at about 155-160 GFLOP/s where NumPy's OpenBLAS reaches 125-140;
attention's stacks of 64 x 32 x 64 products, one ``cblas_sgemm_batch`` call, take 10-15 % less
time than NumPy's loop of one BLAS call per matrix. GEMMs are about 70 % of a compiled GPT step
(docs/compiler.md, "Where the time goes").

MKL is found through the installed ``mkl`` distribution's files (or ``$PULLBACK_MKL``, a path
to ``libmkl_rt``). MKL runs sequential: with more threads (:func:`pullback.get_num_threads`) a
large product is split by rows over pullback's own thread pool (:func:`pullback.native.run_rows`),
as its fused loops are. MKL's OpenMP layer would start a second runtime's threads next to
OpenBLAS's and PyTorch's: measured at 2 threads on 2 cores, it made the compiled GPT step 1.9x
slower and slowed the eager steps beside it. Products MKL does not take
(integer or mixed dtypes, 1-D operands, empty products) go to NumPy; matrices with no unit
stride are copied first. The results are MKL's roundings, not OpenBLAS's: equal to float32 /
float64 tolerance, not in bits (``run_graph`` keeps NumPy's).
"""

from __future__ import annotations

import ctypes
import os
from importlib import metadata
from pathlib import Path
from typing import Any, Callable

import numpy as np

from pullback import native

_ROW_MAJOR, _NO_TRANS, _TRANS = 101, 111, 112
_SEQUENTIAL = 1  # MKL_THREADING_SEQUENTIAL


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


class _Mkl:
    """``cblas_?gemm`` and ``cblas_?gemm_batch`` of one loaded ``libmkl_rt``."""

    def __init__(self, library: ctypes.CDLL) -> None:
        library.MKL_Set_Threading_Layer.argtypes = [ctypes.c_int]
        library.MKL_Set_Threading_Layer(_SEQUENTIAL)
        self.gemm: dict[str, Any] = {}
        self.batch: dict[str, Any] = {}
        for dtype, c_type, prefix in (("float32", ctypes.c_float, "s"),
                                      ("float64", ctypes.c_double, "d")):
            gemm = getattr(library, f"cblas_{prefix}gemm")
            gemm.restype = None
            gemm.argtypes = ([ctypes.c_int] * 6 + [c_type, ctypes.c_void_p, ctypes.c_int,
                             ctypes.c_void_p, ctypes.c_int, c_type, ctypes.c_void_p, ctypes.c_int])
            self.gemm[dtype] = gemm
            batch = getattr(library, f"cblas_{prefix}gemm_batch")
            batch.restype = None
            batch.argtypes = [ctypes.c_int] + [ctypes.c_void_p] * 13 + [ctypes.c_int,
                                                                       ctypes.c_void_p]
            self.batch[dtype] = batch


_loaded: list[_Mkl | None] = []  # empty until MKL was looked for


def _mkl() -> _Mkl | None:
    if not _loaded:
        mkl = None
        path = _library_path()
        if path is not None:
            try:
                mkl = _Mkl(ctypes.CDLL(path))
            except (OSError, AttributeError):
                mkl = None
        _loaded.append(mkl)
    return _loaded[0]


GEMMS = ("numpy", "mkl", "auto")


def provider(gemm: str = "auto") -> str:
    """The library that ``compile(..., gemm=gemm)`` runs matrix products with: ``"mkl"`` or
    ``"numpy"`` (``"auto"``: MKL where it is installed)."""
    if gemm not in GEMMS:
        raise ValueError(f"compile: gemm must be one of {', '.join(GEMMS)}, got {gemm!r}")
    if gemm == "numpy":
        return "numpy"
    if _mkl() is not None:
        return "mkl"
    if gemm == "mkl":
        raise ImportError("compile(gemm='mkl'): MKL was not found; pip install "
                          "'pullback-compiler[mkl]' (or set $PULLBACK_MKL to libmkl_rt's path)")
    return "numpy"


def _operand(a: np.ndarray) -> tuple[int, int] | None:
    """``(transpose flag, leading dimension)`` of the matrices of ``a`` (its last two axes)
    as BLAS reads them, or ``None`` when neither axis has a unit stride."""
    rows, cols = a.shape[-2:]
    item = a.itemsize
    s_row, s_col = a.strides[-2:]
    if (s_col == item or cols == 1) and s_row % item == 0 and s_row // item >= max(cols, 1):
        return _NO_TRANS, s_row // item
    if (s_row == item or rows == 1) and s_col % item == 0 and s_col // item >= max(rows, 1):
        return _TRANS, s_col // item
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
    return (a.ctypes.data + offsets).reshape(-1)


def mkl_matmul(mkl: _Mkl, x: np.ndarray, y: np.ndarray) -> np.ndarray | None:
    """``x @ y`` through MKL, or ``None`` when MKL does not take these operands."""
    dtype = x.dtype
    if (x.__class__ is not np.ndarray or y.__class__ is not np.ndarray or dtype != y.dtype
            or dtype.name not in mkl.gemm or x.ndim < 2 or y.ndim < 2
            or x.shape[-1] != y.shape[-2]):
        return None
    k, n = x.shape[-1], y.shape[-1]
    out_lead = x.shape[:-1]
    if x.ndim > 2 and y.ndim == 2 and x.flags.c_contiguous:
        x = x.reshape(-1, k)  # one GEMM over the stack's rows
    try:
        batch = np.broadcast_shapes(x.shape[:-2], y.shape[:-2])
    except ValueError:
        return None
    out = np.empty(batch + (x.shape[-2], n), dtype=dtype)
    if out.size == 0 or k == 0:
        return None  # NumPy's empty-product conventions
    x, trans_x, ldx = _matrix(x)
    y, trans_y, ldy = _matrix(y)
    rows = x.shape[-2]
    item = out.itemsize
    if not batch:
        gemm, xp, yp, cp = mkl.gemm[dtype.name], x.ctypes.data, y.ctypes.data, out.ctypes.data
        # row i of x starts i rows (no transpose) or i elements (transposed) in
        x_row = ldx * item if trans_x == _NO_TRANS else item

        def row_block(lo: int, hi: int) -> None:
            gemm(_ROW_MAJOR, trans_x, trans_y, hi - lo, n, k, 1.0, xp + lo * x_row, ldx, yp, ldy,
                 0.0, cp + lo * n * item, n)

        native.run_rows(row_block, rows, n * k)
        return out.reshape(out_lead + (n,))
    # One group of equal products per call: the matrices' addresses in three arrays.
    a, b = _pointers(x, batch), _pointers(y, batch)
    c = out.ctypes.data + np.arange(a.size, dtype=np.int64) * (rows * n * item)
    ints = [np.array([v], dtype=np.intc) for v in (trans_x, trans_y, rows, n, k, ldx, ldy, n)]
    ones = np.array([1.0, 0.0], dtype=dtype)
    batch_gemm = mkl.batch[dtype.name]

    def matrix_block(lo: int, hi: int) -> None:
        size = np.array([hi - lo], dtype=np.intc)
        batch_gemm(_ROW_MAJOR, ints[0].ctypes.data, ints[1].ctypes.data, ints[2].ctypes.data,
                   ints[3].ctypes.data, ints[4].ctypes.data, ones[:1].ctypes.data,
                   a[lo:].ctypes.data, ints[5].ctypes.data, b[lo:].ctypes.data,
                   ints[6].ctypes.data, ones[1:].ctypes.data, c[lo:].ctypes.data,
                   ints[7].ctypes.data, 1, size.ctypes.data)

    native.run_rows(matrix_block, a.size, rows * n * k)
    return out


def _matmul(fallback: Callable[..., Any], mkl: _Mkl) -> Callable[..., Any]:
    def matmul(x: Any, y: Any) -> Any:
        out = mkl_matmul(mkl, x, y)
        return fallback(x, y) if out is None else out

    return matmul


def _linear(fallback: Callable[..., Any], mkl: _Mkl) -> Callable[..., Any]:
    def linear(x: Any, w: Any, b: Any) -> Any:
        y = mkl_matmul(mkl, x, w.T) if x.__class__ is np.ndarray else None
        if y is None:
            return fallback(x, w, b)
        if b is not None:
            y += b
        return y

    return linear


def faster_products(device: str) -> Callable[[Any, Callable[..., Any]], Callable[..., Any]]:
    """A ``wrap`` for :func:`pullback.compiler.lower` that runs the graph's products (``matmul``,
    ``nn.linear`` and the products of ``compiler.matmul_epilogue`` nodes) through MKL where it
    is installed (CPU), and leaves every other kernel as it is: what ``lower(graph,
    gemm="mkl")`` applies (``compile(..., gemm="mkl")`` lowers so; ``run_graph`` never does)."""
    mkl = _mkl() if device == "cpu" else None

    def wrap(node: Any, kernel: Callable[..., Any]) -> Callable[..., Any]:
        if mkl is None:
            return kernel
        if node.op == "matmul":
            return _matmul(kernel, mkl)
        if node.op == "nn.linear":
            return _linear(kernel, mkl)
        if node.op == "compiler.matmul_epilogue":
            from pullback.registry import get_op

            from .passes.epilogue import lower_epilogue

            product = get_op(node.attrs["product"]).kernel_for(device)
            fast = _linear(product, mkl) if node.attrs["product"] == "nn.linear" else \
                _matmul(product, mkl)
            return lower_epilogue(node, device, product=fast)
        return kernel

    return wrap
