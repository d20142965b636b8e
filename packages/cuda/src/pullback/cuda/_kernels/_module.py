"""Compiled CUDA modules, one per (source, device), built with NVRTC through CuPy on first use.

A ``cupy.RawModule`` binds its functions to the context it was loaded in, so each GPU gets its
own; CuPy caches the compiled binary on disk, so a later process skips the compile.
"""

from __future__ import annotations

import threading
from typing import Any

from .._cupy import probe
from ._source import check_args, source

NVRTC_OPTIONS = ("--std=c++17",)

_modules: dict[tuple[str, int], Any] = {}
_functions: dict[tuple[str, str, int], Any] = {}
_checked: set[tuple[str, str]] = set()
_lock = threading.Lock()


def function(module: str, name: str) -> Any:
    """Kernel ``name`` of ``<module>.cu``, loaded on the current device (call it as
    ``f(grid, block, args)``)."""
    cupy: Any = probe().cupy  # present: kernels launch only on cuda tensors
    device = cupy.cuda.runtime.getDevice()
    fn = _functions.get((module, name, device))
    if fn is None:
        with _lock:
            mod = _modules.get((module, device))
            if mod is None:
                mod = _modules[(module, device)] = cupy.RawModule(code=source(module),
                                                                  options=NVRTC_OPTIONS)
            fn = _functions[(module, name, device)] = mod.get_function(name)
    return fn


def launch(module: str, name: str, grid: tuple[int, ...], block: tuple[int, ...],
           args: tuple[Any, ...]) -> None:
    """Launch kernel ``name`` of ``<module>.cu`` on the current device. The first launch of each
    kernel checks ``args`` against its C signature (:func:`._source.check_args`)."""
    if (module, name) not in _checked:
        check_args(module, name, args)
        _checked.add((module, name))
    function(module, name)(grid, block, args)
