"""Compiling an export and calling it from Python (tests, benchmarks, the example).

The flags are the strictest the issue of this exporter names: ``-std=c99 -O2 -Wall -Wextra
-Werror -pedantic``, with ``-fopenmp`` on request and the sanitizers of
``PULLBACK_NATIVE_SANITIZE`` (as :mod:`pullback.native` builds its own kernels; the process
must then have the sanitizer's runtime preloaded, see :func:`pullback.testing.isolation.
sanitizer_environment`).
"""

from __future__ import annotations

import ctypes
import os
import shutil
import subprocess
from pathlib import Path
from typing import Any, Sequence

import numpy as np

STRICT_FLAGS = ("-std=c99", "-O2", "-Wall", "-Wextra", "-Werror", "-pedantic")


def compiler() -> str | None:
    """The host C compiler (``$CC``, default ``cc``), or None when there is none."""
    name = os.environ.get("CC", "cc")
    return name if shutil.which(name) else None


def sanitizer_flags(sanitize: str | None) -> list[str]:
    """``-fsanitize=...`` flags for ``sanitize`` (default: ``$PULLBACK_NATIVE_SANITIZE``)."""
    if sanitize is None:
        sanitize = os.environ.get("PULLBACK_NATIVE_SANITIZE", "").strip()
    if not sanitize:
        return []
    return [f"-fsanitize={sanitize}", "-fno-sanitize-recover=all", "-fno-omit-frame-pointer",
            "-g"]


def run_compiler(arguments: Sequence[str], what: str) -> None:
    """Run the compiler; a RuntimeError with its diagnostics when it fails."""
    done = subprocess.run(list(arguments), capture_output=True, text=True, timeout=600)
    if done.returncode != 0:
        raise RuntimeError(f"{what} failed ({' '.join(arguments)}):\n{done.stderr[-4000:]}")


def build_shared(source: Path, target: Path, flags: Sequence[str] = STRICT_FLAGS,
                 openmp: bool = False, sanitize: str | None = None) -> Path:
    """Compile ``source`` into the shared library ``target``."""
    cc = compiler()
    if cc is None:
        raise RuntimeError("no C compiler: set $CC or install gcc")
    arguments = [cc, *flags, *(["-fopenmp"] if openmp else []), *sanitizer_flags(sanitize),
                 "-fPIC", "-shared", str(source), "-o", str(target), "-lm"]
    run_compiler(arguments, f"compiling {source.name}")
    return target


class CLibrary:
    """An exported model loaded with ctypes: ``library(*arrays)`` returns its outputs.

    Args:
        path: the shared library.
        name: the export's entry-point name (``name_multi`` is called).
        inputs, outputs: ``(shape, dtype)`` of each.
    """

    def __init__(self, path: Path, name: str, inputs: list[tuple[tuple[int, ...], np.dtype]],
                 outputs: list[tuple[tuple[int, ...], np.dtype]]) -> None:
        self.path = path
        self._library = ctypes.CDLL(str(path))
        self._function = getattr(self._library, f"{name}_multi")
        self._function.argtypes = [ctypes.c_void_p] * (len(inputs) + len(outputs))
        self._function.restype = None
        self.inputs, self.outputs = inputs, outputs

    def __call__(self, *arrays: Any) -> list[np.ndarray]:
        if len(arrays) != len(self.inputs):
            raise TypeError(f"expected {len(self.inputs)} inputs, got {len(arrays)}")
        held = []
        for i, (a, (shape, dtype)) in enumerate(zip(arrays, self.inputs)):
            a = np.ascontiguousarray(getattr(a, "array", a), dtype=dtype)
            if a.shape != shape:
                raise ValueError(f"input {i} has shape {a.shape}; the export takes {shape}")
            held.append(a)
        outs = [np.empty(shape, dtype) for shape, dtype in self.outputs]
        self._function(*[a.ctypes.data for a in held + outs])
        return outs
