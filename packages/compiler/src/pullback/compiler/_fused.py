"""A fused elementwise kernel: several elementwise ops (and optionally a trailing sum) as one C
loop, generated from the ops' ``"c_scalar"`` rules and built through :mod:`pullback.native`.

The loop runs over the output viewed as ``rows x cols`` (or over its flat elements when no input
broadcasts): each input is *full* (the output's shape), a *row* (broadcast along the leading
axes: a bias), a *column* (broadcast along the trailing axes: a per-row statistic), a single
element, or a runtime number. Temporaries live in registers; only the group's outputs are
written, once. The C file is written to the cache folder and compiled on first use (the shared
library is cached on disk by :func:`pullback.native.load`); with no compiler, with
``PULLBACK_NATIVE=0`` or on another device the same ops run one by one with their own kernels,
which is exactly the unfused computation.
"""

from __future__ import annotations

import ctypes
import hashlib
import math
from pathlib import Path
from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np

from pullback import native
from pullback._gemm import OPERANDS
from pullback.registry import get_op

from ._c_rules import c_literal

_CTYPES = {"float32": "float", "float64": "double", "bool": "unsigned char"}
INPUT_KINDS = ("full", "row", "col", "one", "number")
# Written into each source (not included) so that the source's hash, the cache key of its
# build, covers it.
_FUSED_MATH = (Path(__file__).parent / "_csrc" / "fused_math.h").read_text()
# An output written over an input (write_in_place) drops ``restrict``; element i is read before
# it is written in the same iteration, so iterations stay independent and may be vectorized:
# say so to the compiler, which would otherwise give up on the run-time alias checks.
_IVDEP = """#if defined(__clang__)
#define INDEPENDENT_ITERATIONS _Pragma("clang loop vectorize(assume_safety)")
#elif defined(__GNUC__)
#define INDEPENDENT_ITERATIONS _Pragma("GCC ivdep")
#else
#define INDEPENDENT_ITERATIONS
#endif"""
# What a loop of :meth:`FusedKernel.c_function` needs besides math.h and pullback_math.h.
LOOP_HELPERS = _FUSED_MATH + "\n" + _IVDEP + "\n"


@dataclass(eq=False)
class FusedOp:
    """One op of the group. ``args``: ``("in", k)`` an input, ``("tmp", j)`` the result of op
    ``j``, ``("lit", x)`` a Python number."""

    op: str
    args: tuple[tuple[str, Any], ...]
    attrs: dict[str, Any]
    dtype: np.dtype


@dataclass(eq=False)
class FusedKernel:
    """The callable behind a ``compiler.fused_elementwise`` node."""

    ops: list[FusedOp]
    input_kinds: list[str]
    input_dtypes: list[np.dtype | None]  # None for runtime numbers
    shape: tuple[int, ...]  # the shape the ops compute at
    split: int | None  # leading axes that are rows (None: one flat loop)
    outputs: list[int]  # the ops whose results are returned
    reduce_from: int | None = None  # sum over the axes from here on (the output is reduced)
    keepdims: bool = False
    out_into: dict[int, int] = field(default_factory=dict)  # output -> input it overwrites
    # The dtype of a matrix product this loop runs after, block by block (a matmul epilogue),
    # or None: then the source also has :meth:`after_product_function`'s entry point.
    after_product: str | None = None
    device: str = "cpu"
    _function: Any = field(default=None, repr=False)
    _built: bool = field(default=False, repr=False)
    _kernels: list[Any] | None = field(default=None, repr=False)
    _after: Any = field(default=None, repr=False)
    _extent: tuple[int, int] = field(default=(0, 0), repr=False)
    _out_shape: tuple[int, ...] = field(default=(), repr=False)
    _output_specs: list[tuple[np.dtype, int | None]] = field(default_factory=list, repr=False)
    _direct: Callable[[tuple[Any, ...]], list[Any] | None] | None = field(default=None,
                                                                         repr=False)
    _arrays_at: tuple[int, ...] = field(default=(), repr=False)
    _after_arrays_at: tuple[int, ...] = field(default=(), repr=False)

    # -- description ---------------------------------------------------------------------------
    def summary(self) -> str:
        names = [op.op for op in self.ops] + (["sum"] if self.reduce_from is not None else [])
        return f"<{len(names)} ops: {' '.join(names)}>"

    @property
    def out_shape(self) -> tuple[int, ...]:
        if self.reduce_from is None:
            return self.shape
        kept = self.shape[:self.reduce_from]
        return kept + (1,) * (len(self.shape) - self.reduce_from) if self.keepdims else kept

    # -- C source ------------------------------------------------------------------------------
    def c_source(self, name: str) -> str:
        prelude = ["#include <stdint.h>", "#include <stdlib.h>", "#include <math.h>",
                   '#include "pullback_math.h"', "", _FUSED_MATH, _IVDEP, ""]
        source = "\n".join(prelude) + "\n" + self.c_function(name)
        if self.after_product is not None:
            source += "\n" + self.after_product_function(name)
        return source

    def after_product_function(self, name: str) -> str:
        """``{name}_after_product(lo, hi, gemm, a, b, c, trans_a, trans_b, n, k, lda,
        a_row_step, ldb, scale, cols, inputs..., outputs...)``: rows ``lo`` to ``hi`` of the
        product ``c = op(a) op(b)`` (CBLAS's ``?gemm`` at address ``gemm``, row-major, ``n``
        columns), then this loop over those rows (``scale`` loop rows per product row: ``n``
        for a flat loop, else 1) in the same thread, while they are still in its cache. ``c``
        is the buffer the loop reads the product from.

        The product of a share is the one ``?gemm`` call that eager's product makes on the same
        share (:func:`pullback.native.run_rows` splits both alike), so the loop reads eager's
        bits. Blocks smaller than a share would round differently: MKL's sums over long inner
        dimensions (784, 1000) depend on how many rows a call has."""
        assert self.after_product is not None
        t = _CTYPES[self.after_product]
        args = ", ".join(self._argument_names())
        params = ", ".join(self._array_params(restrict=False))
        return f"""typedef void (*{name}_gemm_t)(int, int, int, int, int, int, {t}, const {t} *,
    int, const {t} *, int, {t}, {t} *, int);
void {name}_after_product(int64_t lo, int64_t hi, void *gemm, const {t} *a, const {t} *b,
        {t} *c, int64_t trans_a, int64_t trans_b, int64_t n, int64_t k, int64_t lda,
        int64_t a_row_step, int64_t ldb, int64_t scale, int64_t cols, {params}) {{
    (({name}_gemm_t)gemm)(101 /* row-major */, (int)trans_a, (int)trans_b, (int)(hi - lo),
        (int)n, (int)k, 1, a + lo * a_row_step, (int)lda, b, (int)ldb, 0, c + lo * n, (int)n);
    {name}(lo * scale, hi * scale, cols, {args});
}}
"""

    def c_function(self, name: str, index: str = "int64_t", storage: str = "") -> str:
        """The loop as one C function ``name(lo, hi, cols, inputs..., outputs...)`` over rows
        ``lo`` to ``hi``; ``index`` is the C type of its indices and ``storage`` goes before
        its definition (the C99 exporter writes ``static`` functions indexed by ``int``). It
        needs the math functions and ``INDEPENDENT_ITERATIONS`` of :meth:`c_source`."""
        lines = []
        params = [f"{index} lo", f"{index} hi", f"{index} cols", *self._array_params()]
        lines.append(f"{storage}void {name}({', '.join(params)}) {{")
        if self.split is None and self.reduce_from is None:
            lines.append("    (void)cols;  /* one flat loop */")
        body = self._body()
        if self.reduce_from is not None:
            acc = "double"
            lines += [f"    for ({index} r = lo; r < hi; r++) {{", f"        {acc} acc = 0;",
                      f"        for ({index} c = 0; c < cols; c++) {{",
                      f"            const {index} i = r * cols + c;"]
            lines += ["            " + b for b in body]
            lines += [f"            acc += t{self.outputs[0]};", "        }",
                      f"        out0[r] = ({_CTYPES[self.ops[self.outputs[0]].dtype.name]})acc;",
                      "    }"]
        elif self.split is None:
            lines.append("    INDEPENDENT_ITERATIONS")
            lines.append(f"    for ({index} i = lo; i < hi; i++) {{")
            lines += ["        " + b for b in body] + self._stores("        ") + ["    }"]
        else:
            lines += [f"    for ({index} r = lo; r < hi; r++) {{",
                      "        INDEPENDENT_ITERATIONS",
                      f"        for ({index} c = 0; c < cols; c++) {{",
                      f"            const {index} i = r * cols + c;"]
            lines += ["            " + b for b in body] + self._stores("            ")
            lines += ["        }", "    }"]
        lines.append("}")
        return "\n".join(lines) + "\n"

    def _array_params(self, restrict: bool = True) -> list[str]:
        """The C parameters after ``(lo, hi, cols)``: the inputs, then the outputs."""
        params = []
        shared = set(self.out_into.values())  # inputs an output overwrites: no restrict
        for k, dtype in enumerate(self.input_dtypes):
            if dtype is None:  # a runtime number
                params.append(f"double s{k}")
            else:
                qualifier = "restrict " if restrict and k not in shared else ""
                params.append(f"const {_CTYPES[dtype.name]} *{qualifier}in{k}")
        for j, o in enumerate(self.outputs):
            qualifier = "restrict " if restrict and j not in self.out_into else ""
            params.append(f"{_CTYPES[self.ops[o].dtype.name]} *{qualifier}out{j}")
        return params

    def _argument_names(self) -> list[str]:
        return [f"s{k}" if dtype is None else f"in{k}" for k, dtype in
                enumerate(self.input_dtypes)] + [f"out{j}" for j in range(len(self.outputs))]

    def _stores(self, indent: str) -> list[str]:
        return [f"{indent}out{j}[i] = t{o};" for j, o in enumerate(self.outputs)]

    def _body(self) -> list[str]:
        lines = []
        for k, (kind, dtype) in enumerate(zip(self.input_kinds, self.input_dtypes)):
            if kind == "number":
                continue
            index = {"full": "i", "row": "c", "col": "r", "one": "0"}[kind]
            assert dtype is not None  # arrays have one; runtime numbers were skipped
            lines.append(f"const {_CTYPES[dtype.name]} a{k} = in{k}[{index}];")
        for j, op in enumerate(self.ops):
            ctype = _CTYPES[op.dtype.name]
            rule = get_op(op.op).rule("c_scalar")
            compute = self._compute_type(op)
            args = [self._arg(a, compute) for a in op.args]
            lines.append(f"const {ctype} t{j} = {rule(args, compute, **op.attrs)};")
        return lines

    def _compute_type(self, op: FusedOp) -> str:
        """The float type an op computes in (that of its float arguments for comparisons)."""
        if op.dtype.kind == "f":
            return _CTYPES[op.dtype.name]
        for kind, ref in op.args:
            dtype = self._arg_dtype(kind, ref)
            if dtype is not None and dtype.kind == "f":
                return _CTYPES[dtype.name]
        return "double"

    def _arg_dtype(self, kind: str, ref: Any) -> np.dtype | None:
        if kind == "in":
            return self.input_dtypes[ref]
        if kind == "tmp":
            return self.ops[ref].dtype
        return None

    def _arg(self, arg: tuple[str, Any], compute: str) -> str:
        kind, ref = arg
        if kind == "lit":
            return c_literal(ref, compute) if not isinstance(ref, bool) else str(int(ref))
        if kind == "in" and self.input_kinds[ref] == "number":
            return f"(({compute})s{ref})"  # a Python number: weak, as in NumPy
        return f"a{ref}" if kind == "in" else f"t{ref}"

    # -- building ------------------------------------------------------------------------------
    def _library_function(self) -> Any:
        if self._built:
            return self._function
        self._built = True
        self._after = None
        # what every call reads, fixed once the kernel is built (the passes that change a
        # kernel mark it unbuilt)
        self._extent = self.extent()
        self._out_shape = self.out_shape
        self._output_specs = [(self.ops[o].dtype, self.out_into.get(j))
                              for j, o in enumerate(self.outputs)]
        self._direct = None
        if self.device != "cpu" or not native.enabled():
            return None
        probe = self.c_source("NAME")
        name = "fused_" + hashlib.sha256(probe.encode()).hexdigest()[:16]
        library = native.load_generated(name, self.c_source(name), "compiler")
        if library is None:
            return None
        array_types = ([ctypes.c_double if k == "number" else ctypes.c_void_p
                        for k in self.input_kinds] + [ctypes.c_void_p] * len(self.outputs))
        # where the loop's arrays sit among the arguments after the row range (after cols;
        # after the product's 13 arguments), passed as the arrays themselves
        arrays = [j for j, t in enumerate(array_types) if t is ctypes.c_void_p]
        self._arrays_at = tuple(1 + j for j in arrays)
        self._after_arrays_at = OPERANDS + tuple(13 + j for j in arrays)
        fn = getattr(library, name)
        fn.argtypes = [ctypes.c_int64] * 3 + array_types
        fn.restype = None
        if self.after_product is not None:
            after = getattr(library, f"{name}_after_product")
            after.argtypes = ([ctypes.c_int64] * 2 + [ctypes.c_void_p] * 4
                              + [ctypes.c_int64] * 9 + array_types)
            after.restype = None
            self._after = after
        self._function = fn
        self._direct = self._direct_call(fn)
        return fn

    def _direct_call(self, fn: Any) -> Callable[[tuple[Any, ...]], list[Any] | None] | None:
        """For a small loop of array inputs and one output, the call of ``fn`` with nothing
        around it but the checks (the general path's bookkeeping cost about 2 us, as much as
        the loop over a few thousand elements): this thread, as ``native.run_rows`` would
        choose below its thresholds. None where the general path is needed."""
        rows, cols = self._extent
        if len(self.outputs) != 1 or "number" in self.input_kinds or \
                rows * cols >= min(native.MIN_POOL_ELEMENTS, native.MIN_PARALLEL_ELEMENTS):
            return None
        ((dtype, into),) = self._output_specs
        shape = self._out_shape
        address, ndarray = native.address, np.ndarray

        def call(args: tuple[Any, ...]) -> list[Any] | None:
            for a in args:
                if a.__class__ is not ndarray or not a.flags.c_contiguous:
                    return self._run_native(fn, args)  # copies, or None: not NumPy's
            out = args[into] if into is not None else None
            if out is None or not (out.flags.writeable and out.dtype == dtype
                                   and out.shape == shape):
                out = np.empty(shape, dtype)
            fn(0, rows, cols, *[address(a) for a in args], address(out))
            return [out]

        return call

    # -- running -------------------------------------------------------------------------------
    def __call__(self, *args: Any) -> Any:
        fn = self._function if self._built else self._library_function()
        if fn is None:
            outs = None
        elif self._direct is not None:
            outs = self._direct(args)
        else:
            outs = self._run_native(fn, args)
        if outs is None:
            outs = self._run_ops(args)
        return outs[0] if len(outs) == 1 else tuple(outs)

    def _run_native(self, fn: Any, args: tuple[Any, ...]) -> list[Any] | None:
        """The compiled loop over ``args``; None when one of them is not a NumPy array."""
        inputs = self._inputs(args)
        if inputs is None:
            return None
        outs = [self._output(j, args) for j in range(len(self.outputs))]
        rows, cols = self._extent
        native.run_rows_of_arrays(fn, self._arrays_at, rows, cols, cols, *inputs, *outs)
        return outs

    def run_after_product(self, product: Any, at: int, rest: tuple[Any, ...]) -> Any:
        """The product (a planned :class:`pullback._gemm.SingleProduct`) and this
        loop over it (its input ``at``; ``rest`` the loop's other inputs), share by share on
        the threads; ``NotImplemented`` where the loop's rows are not the product's."""
        extent = self._after_product_extent(product)
        if extent is None:
            return NotImplemented
        rows, n, scale, cols = extent
        out = product.out
        args = (*rest[:at], out.reshape(self.shape), *rest[at:])
        inputs = self._inputs(args)
        if inputs is None:
            return NotImplemented
        outs = [self._output(j, args) for j in range(len(self.outputs))]
        native.run_rows_of_arrays(self._after, self._after_arrays_at, rows,
                                  n * product.sizes[3], *product.arguments(), scale, cols,
                                  *inputs, *outs)
        return outs[0] if len(outs) == 1 else tuple(outs)

    def _after_product_extent(self, product: Any) -> tuple[int, int, int, int] | None:
        """``(rows, n, scale, cols)`` of this loop after ``product`` (``rows x n``): ``scale``
        loop rows per product row (1 when the loop runs over the product's rows, ``n`` for a
        flat loop over its elements) and the loop's ``cols``; ``None`` when the loop's rows are
        neither, or it has no after-product entry point."""
        if self._library_function() is None or self._after is None:
            return None
        rows, n = product.out.shape
        loop_rows, cols = self._extent
        if cols == n and loop_rows == rows:
            return rows, n, 1, cols
        if cols == 1 and loop_rows == rows * n:
            return rows, n, n, cols
        return None

    def launch_after_product(self, product: Any, at: int, x: Any, y: Any
                             ) -> Callable[[Any, Any, tuple[Any, ...]], Any] | None:
        """:meth:`run_after_product` for later products of operands laid out as ``x`` and ``y``
        are now (the caller checks that), with what such calls share worked out once: the
        plan's sizes, the loop's extent, where its outputs go. The launch returns
        ``NotImplemented`` for a strided or non-NumPy array among ``rest``. ``None`` where the
        plan reads copies of ``x`` or ``y``, the loop's rows are not the product's, or an
        output does not go into the product's buffer or a fresh array."""
        extent = self._after_product_extent(product)
        if extent is None:
            return None
        rows, n, scale, cols = extent
        out = product.out
        specs = self._output_specs
        if (native.address(product.x) != native.address(x)
                or native.address(product.y) != native.address(y)
                or self._out_shape != self.shape
                or any(k is not None and (k != at or dtype != out.dtype) for dtype, k in specs)):
            return None
        out_shape, dtype, shape = out.shape, out.dtype, self.shape
        gemm, sizes = product.gemm, product.sizes
        row_size = n * sizes[3]
        rest_kinds = self.input_kinds[:at] + self.input_kinds[at + 1:]
        after, arrays_at = self._after, self._after_arrays_at

        def launch(x: Any, y: Any, rest: tuple[Any, ...]) -> Any:
            inputs: list[Any] = []
            for a, kind in zip(rest, rest_kinds):
                if kind == "number":
                    inputs.append(float(a))
                elif a.__class__ is not np.ndarray or not a.flags.c_contiguous:
                    return NotImplemented
                else:
                    inputs.append(a)
            c = np.empty(out_shape, dtype)
            view = c.reshape(shape)  # the loop's input `at`, and the outputs written over it
            inputs.insert(at, view)
            outs = [view if k == at else np.empty(shape, d) for d, k in specs]
            native.run_rows_of_arrays(after, arrays_at, rows, row_size, gemm, x, y, c, *sizes,
                                      scale, cols, *inputs, *outs)
            return outs[0] if len(outs) == 1 else tuple(outs)

        return launch

    def _inputs(self, args: tuple[Any, ...]) -> list[Any] | None:
        """The loop's input arguments: runtime numbers as floats, arrays as C-contiguous NumPy
        arrays (strided ones copied; the C call reads their data addresses); None when an
        array is not a NumPy array."""
        inputs: list[Any] = []
        for a, kind in zip(args, self.input_kinds):
            if kind == "number":
                inputs.append(float(a))
            else:
                if a.__class__ is not np.ndarray:
                    return None
                inputs.append(a if a.flags.c_contiguous else np.ascontiguousarray(a))
        return inputs

    def extent(self) -> tuple[int, int]:
        """The ``(rows, cols)`` the loop runs over (one flat loop: ``(elements, 1)``)."""
        split = self.reduce_from if self.reduce_from is not None else self.split
        # math.prod: every call of the loop asks (np.prod took 4 us, a tenth of a small loop)
        if split is None:
            return math.prod(self.shape), 1
        return math.prod(self.shape[:split]), math.prod(self.shape[split:])

    def _output(self, j: int, args: tuple[Any, ...]) -> Any:
        """Output ``j``'s array: the input it overwrites when that one can take it."""
        dtype, k = self._output_specs[j]
        shape = self._out_shape
        if k is not None:
            a = args[k]
            if (a.flags.c_contiguous and a.flags.writeable and a.dtype == dtype
                    and a.shape == shape):
                return a
        return np.empty(shape, dtype)

    def _run_ops(self, args: tuple[Any, ...]) -> list[Any]:
        """The ops one by one with their own kernels (no compiler, or not NumPy arrays)."""
        if self._kernels is None:
            self._kernels = [get_op(op.op).kernel_for(self.device) for op in self.ops]
        temps: list[Any] = []
        for op, kernel in zip(self.ops, self._kernels):
            values = [args[ref] if kind == "in" else temps[ref] if kind == "tmp" else ref
                      for kind, ref in op.args]
            temps.append(kernel(*values, **op.attrs))
        outs = [temps[o] for o in self.outputs]
        if self.reduce_from is not None:
            axes = tuple(range(self.reduce_from, len(self.shape)))
            total = get_op("sum").kernel_for(self.device)(outs[0], axis=axes,
                                                           keepdims=self.keepdims)
            from pullback.backends import get_backend

            outs = [get_backend(self.device).xp.asarray(total)]
        return outs


def lower_fused(node: Any, device: str) -> Any:
    """The ``compiler.lower`` rule of ``compiler.fused_elementwise``: the kernel itself."""
    kernel: FusedKernel = node.attrs["kernel"]
    kernel.device = device
    return kernel
