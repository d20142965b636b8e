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
from typing import Any, Callable, NamedTuple

import numpy as np

from pullback import native

_ROW_MAJOR, _NO_TRANS, _TRANS = 101, 111, 112
NO_PACKING = (0, 0, 0)  # null addresses: epilogues call cblas_?gemm on every block
_SEQUENTIAL = 1  # MKL_THREADING_SEQUENTIAL
_CBLAS_INT_MAX = 2**31 - 1


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
    """The products of one loaded ``libmkl_rt``: for each dtype, the addresses of
    ``cblas_?gemm`` and ``cblas_?gemm_batch`` and the row-range kernels of
    ``_csrc/gemm_rows.c`` that call them on a share of the rows (or of the stack), and the
    addresses of the packed-operand API (``cblas_?gemm_pack_get_size``, ``cblas_?gemm_pack``,
    ``cblas_?gemm_compute``; zeros where the library lacks it) that epilogues use."""

    def __init__(self, library: ctypes.CDLL, rows: ctypes.CDLL) -> None:
        library.MKL_Set_Threading_Layer.argtypes = [ctypes.c_int]
        library.MKL_Set_Threading_Layer(_SEQUENTIAL)
        self.gemm: dict[str, tuple[int, Any]] = {}
        self.batch: dict[str, tuple[int, Any]] = {}
        self.pack: dict[str, tuple[int, int, int]] = {}
        for dtype, prefix in (("float32", "s"), ("float64", "d")):
            self.gemm[dtype] = (_address(getattr(library, f"cblas_{prefix}gemm")),
                                native.declare(rows, f"{prefix}gemm_rows", 4, 7))
            self.batch[dtype] = (_address(getattr(library, f"cblas_{prefix}gemm_batch")),
                                 native.declare(rows, f"{prefix}gemm_batch_rows", 4, 7))
            try:
                self.pack[dtype] = tuple(  # type: ignore[assignment]
                    _address(getattr(library, f"cblas_{prefix}gemm_{name}"))
                    for name in ("pack_get_size", "pack", "compute"))
            except AttributeError:
                self.pack[dtype] = NO_PACKING


def _address(function: Any) -> int:
    return ctypes.cast(function, ctypes.c_void_p).value  # type: ignore[return-value]


_loaded: list[_Mkl | None] = []  # empty until MKL was looked for


def _mkl() -> _Mkl | None:
    if not _loaded:
        mkl = None
        path = _library_path()
        rows = native.load("compiler_gemm_rows", Path(__file__).parent / "_csrc" / "gemm_rows.c")
        if path is not None and rows is not None:
            try:
                mkl = _Mkl(ctypes.CDLL(path), rows)
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
    pack: tuple[int, int, int]  # the packed-operand API's addresses, or NO_PACKING

    def arguments(self) -> tuple[Any, ...]:
        """The product's arguments in gemm_rows.c's order, after the row range."""
        return (self.gemm, native.address(self.x), native.address(self.y),
                native.address(self.out), *self.sizes)

    def blocked_arguments(self) -> tuple[Any, ...]:
        """The product's arguments in the order of an epilogue's ``_after_product`` function
        (:meth:`pullback.compiler._fused.FusedKernel.after_product_function`)."""
        gemm, *rest = self.arguments()
        return (gemm, *self.pack, *rest)


def _operands(mkl: _Mkl, x: Any, y: Any) -> tuple[Any, ...] | None:
    """``(x, y, stack shape, out)`` of ``x @ y`` as MKL will run it, or ``None`` when MKL does
    not take these operands."""
    dtype = x.dtype
    if (x.__class__ is not np.ndarray or y.__class__ is not np.ndarray or dtype != y.dtype
            or dtype.name not in mkl.gemm or x.ndim < 2 or y.ndim < 2
            or x.shape[-1] != y.shape[-2]):
        return None
    k, n = x.shape[-1], y.shape[-1]
    if x.ndim > 2 and y.ndim == 2 and x.flags.c_contiguous:
        x = x.reshape(-1, k)  # one GEMM over the stack's rows
    try:
        batch = np.broadcast_shapes(x.shape[:-2], y.shape[:-2])
    except ValueError:
        return None
    if k == 0 or x.shape[-2] == 0 or n == 0 or 0 in batch:
        return None  # NumPy's empty-product conventions
    x, trans_x, ldx = _matrix(x)
    y, trans_y, ldy = _matrix(y)
    if max(x.shape[-2], n, k, ldx, ldy) > _CBLAS_INT_MAX:
        return None  # beyond CBLAS's 32-bit sizes
    out = np.empty(batch + (x.shape[-2], n), dtype=dtype)
    return x, y, batch, out, trans_x, trans_y, ldx, ldy


# Single products planned before, by operand layout: a compiled graph calls each product on
# arrays of one layout every step, and planning one (the checks, strides and transposes of
# _operands) costs about 20 us, a fiftieth of a GPT product. Only plans that read the operands
# in place are kept (a copied operand is planned again).
_PLANS: dict[tuple[Any, ...], tuple[Any, ...]] = {}
_MAX_PLANS = 1024


def _layout(x: Any, y: Any) -> tuple[Any, ...] | None:
    if x.__class__ is not np.ndarray or y.__class__ is not np.ndarray:
        return None
    return x.shape, x.strides, x.dtype, y.shape, y.strides, y.dtype


def _plan(mkl: _Mkl, x: Any, y: Any) -> SingleProduct | tuple[Any, ...] | None:
    """``x @ y`` planned: a :class:`SingleProduct`, or :func:`_operands`'s tuple for a stack of
    products, or ``None`` when MKL does not take these operands."""
    layout = _layout(x, y)
    known = _PLANS.get(layout) if layout is not None else None
    if known is not None:
        gemm, kernel, out_shape, sizes, shape, pack = known
        return SingleProduct(gemm, kernel, x, y, np.empty(out_shape, x.dtype), sizes, shape,
                             pack)
    found = _operands(mkl, x, y)
    if found is None or found[2]:
        return found
    single = _single(mkl, x, y, found)
    if (native.address(single.x) == native.address(x)
            and native.address(single.y) == native.address(y)):
        if len(_PLANS) >= _MAX_PLANS:
            _PLANS.clear()
        _PLANS[layout] = (single.gemm, single.kernel, single.out.shape, single.sizes,  # type: ignore[index]
                          single.shape, single.pack)
    return single


def single_product(mkl: _Mkl, x: Any, y: Any) -> SingleProduct | None:
    """``x @ y`` planned as one CBLAS product (a 2-D result, or a stack of rows times one
    matrix), or ``None`` (a stack of products, or operands MKL does not take)."""
    planned = _plan(mkl, x, y)
    return planned if planned.__class__ is SingleProduct else None


def _single(mkl: _Mkl, x: Any, y: Any, found: tuple[Any, ...]) -> SingleProduct:
    """The planned product of :func:`_operands`'s ``found`` for a 2-D result."""
    xm, ym, _, out, trans_x, trans_y, ldx, ldy = found
    gemm, kernel = mkl.gemm[x.dtype.name]
    # row i of x starts i rows (no transpose) or i elements (transposed) in
    x_row = ldx if trans_x == _NO_TRANS else 1
    k, n = x.shape[-1], y.shape[-1]
    return SingleProduct(gemm, kernel, xm, ym, out, (trans_x, trans_y, n, k, ldx, x_row, ldy),
                         x.shape[:-1] + (n,), mkl.pack[x.dtype.name])


def mkl_matmul(mkl: _Mkl, x: Any, y: Any) -> np.ndarray | None:
    """``x @ y`` through MKL, or ``None`` when MKL does not take these operands."""
    planned = _plan(mkl, x, y)
    if planned is None:
        return None
    if planned.__class__ is SingleProduct:
        single: SingleProduct = planned
        rows, (n, k) = single.out.shape[0], single.sizes[2:4]
        native.run_rows(single.kernel, rows, n * k, *single.arguments())
        # a view only where the shape differs: a view of a fresh array would be copied where
        # it becomes a .grad (compiled results must own their memory)
        out = single.out
        return out if out.shape == single.shape else out.reshape(single.shape)
    xm, ym, batch, out, trans_x, trans_y, ldx, ldy = planned
    # One group of equal products: the matrices' addresses in three arrays.
    rows, k, n = xm.shape[-2], xm.shape[-1], ym.shape[-1]
    a, b = _pointers(xm, batch), _pointers(ym, batch)
    c = native.address(out) + np.arange(a.size, dtype=np.int64) * (rows * n * out.itemsize)
    gemm_batch, kernel = mkl.batch[x.dtype.name]
    native.run_rows(kernel, a.size, rows * n * k, gemm_batch, native.address(a),
                    native.address(b), native.address(c), trans_x, trans_y, rows, n, k, ldx, ldy)
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
            return _epilogue(node, device, mkl)
        return kernel

    return wrap


def _epilogue(node: Any, device: str, mkl: _Mkl) -> Callable[..., Any]:
    """A ``compiler.matmul_epilogue`` node on MKL: one product (2-D, or a stack of rows times
    one matrix) with its loop run block by block after it (:meth:`FusedKernel.run_after_product`);
    anything else, the product and then the loop over all of it."""
    from pullback.registry import get_op

    from .passes.epilogue import lower_epilogue

    product_op = node.attrs["product"]
    product = get_op(product_op).kernel_for(device)
    fast = _linear(product, mkl) if product_op == "nn.linear" else _matmul(product, mkl)
    unfused = lower_epilogue(node, device, product=fast)
    kernel, at = node.attrs["kernel"], node.attrs["at"]
    n_args = node.attrs["n_product_args"]

    def run(*args: Any) -> Any:
        x, y = args[0], args[1]
        if product_op == "nn.linear":
            if args[2] is not None or y.__class__ is not np.ndarray:
                return unfused(*args)  # the bias was left out of the loop
            y = y.T
        single = single_product(mkl, x, y)
        if single is None:
            return unfused(*args)
        result = kernel.run_after_product(single, at, args[n_args:])
        if result is NotImplemented:
            return unfused(*args)
        return result

    return run
