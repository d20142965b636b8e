"""pullback-cuda's plugin: the ``cuda`` backend, and cuda kernels for existing ops.

It registers on every machine: where CuPy or a GPU is missing the backend reports itself
unavailable (with the reason) and the kernels are never called.
"""

from __future__ import annotations

from typing import Any, Callable

from pullback.hookspecs import hookimpl

pullback_hook_api = "1.0"


@hookimpl
def register_backends(register: Callable[[Any], None]) -> None:
    from ._backend import CUDABackend

    register(CUDABackend())


@hookimpl
def register_kernels(register: Callable[[str, str, Callable[..., Any]], None]) -> None:
    from ._kernels import OP_KERNELS, CustomKernel

    for op_name, switch, run in OP_KERNELS:
        register(op_name, "cuda", CustomKernel(op_name, switch, run))
