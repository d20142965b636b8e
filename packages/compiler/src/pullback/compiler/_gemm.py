"""Compiled programs' matrix products: core's GEMM provider (:mod:`pullback._gemm`), the library
that eager's products run on (MKL where the ``mkl`` wheel is installed, else NumPy's; chosen once
per process by ``$PULLBACK_GEMM``), so that a compiled program's results are eager's.

A program's ``matmul`` and ``nn.linear`` nodes run the ops' CPU kernels, which are the
provider's products. What the compiler adds on MKL is the ``compiler.matmul_epilogue`` node: one
product with the elementwise loop that follows it run block by block while the block is still in
the cache (:meth:`pullback.compiler._fused.FusedKernel.run_after_product`). Each block is one
``cblas_?gemm`` call on two or more of the product's rows, which gives the bits of the whole
product (see :mod:`pullback._gemm`): the fused loop reads what eager's product would have made.
"""

from __future__ import annotations

from typing import Any, Callable

import numpy as np

from pullback import _gemm

GEMMS = ("auto", "mkl", "numpy")


def provider(gemm: str | None = "auto") -> str:
    """The library that compiled programs (and eager ops) run matrix products with: ``"mkl"``
    or ``"numpy"``. ``gemm`` is ``"auto"`` (or ``None``): this process's provider; naming one
    checks that it is the process's (it is chosen once per process, by ``$PULLBACK_GEMM``, so
    that compiled results stay eager's)."""
    if gemm is None:
        gemm = "auto"
    if gemm not in GEMMS:
        raise ValueError(f"compile: gemm must be one of {', '.join(GEMMS)}, got {gemm!r}")
    if gemm == "mkl" and _gemm.requested() == "auto" and _gemm.mkl() is None:
        raise ImportError("compile(gemm='mkl'): MKL was not found; pip install mkl (or set "
                          "$PULLBACK_MKL to libmkl_rt's path)")
    chosen = _gemm.provider()
    if gemm not in ("auto", chosen):
        raise ValueError(f"compile(gemm={gemm!r}): this process's matrix products run on "
                         f"{chosen}, eager and compiled alike (so that compiled results are "
                         f"eager's); set PULLBACK_GEMM={gemm} before the first product")
    return chosen


def faster_products(device: str) -> Callable[[Any, Callable[..., Any]], Callable[..., Any]]:
    """A ``wrap`` for :func:`pullback.compiler.lower` that runs ``compiler.matmul_epilogue``
    nodes as one MKL product with their loop run block by block (CPU, MKL the provider), and
    leaves every other kernel as it is."""
    on_mkl = device == "cpu" and _gemm.mkl() is not None

    def wrap(node: Any, kernel: Callable[..., Any]) -> Callable[..., Any]:
        if on_mkl and node.op == "compiler.matmul_epilogue":
            return _epilogue(node, device)
        return kernel

    return wrap


def _epilogue(node: Any, device: str) -> Callable[..., Any]:
    """A ``compiler.matmul_epilogue`` node on MKL: one product (2-D, or a stack of rows times
    one matrix) with its loop run block by block after it (:meth:`FusedKernel.run_after_product`);
    anything else, the product (the op's kernel; a linear layer's lowered one) and then the loop
    over all of it."""
    from .passes.epilogue import lower_epilogue

    product_op = node.attrs["product"]
    unfused = lower_epilogue(node, device)
    kernel, at = node.attrs["kernel"], node.attrs["at"]
    n_args = node.attrs["n_product_args"]
    linear = product_op == "nn.linear"
    # (the operands' layout when this node last planned its product, the launch planned for
    # it), one tuple read at once: a program's node sees one layout every step, and its Python
    # (planning the product, checking the loop's arrays) ran after kernels that had pushed it
    # out of the caches, about 20 us a call.
    planned: list[Any] = [None]

    def run(*args: Any) -> Any:
        x, y = args[0], args[1]
        layout = _gemm.operand_layout(x, y)
        known = planned[0]
        if (known is not None and layout == known[0]
                and not (linear and args[2] is not None)):
            result = known[1](x, y, args[n_args:])
            if result is not NotImplemented:
                return result
        if linear:
            if args[2] is not None or y.__class__ is not np.ndarray:
                return unfused(*args)  # the bias was left out of the loop
            y = y.T
        single = _gemm.single_product(x, y)
        if single is None:
            return unfused(*args)
        result = kernel.run_after_product(single, at, args[n_args:])
        if result is NotImplemented:
            return unfused(*args)
        launch = None if layout is None else kernel.launch_after_product(single, at, x, y)
        planned[0] = None if launch is None else (layout, launch)
        return result

    return run
