"""Compiling an export and calling it from Python (tests, benchmarks, the example).

The flags are the strictest the issue of this exporter names: ``-std=c99 -O2 -Wall -Wextra
-Werror -pedantic``, with ``-fopenmp`` on request and the sanitizers of
``PULLBACK_NATIVE_SANITIZE`` (as :mod:`pullback.native` builds its own kernels; the process
must then have the sanitizer's runtime preloaded, see :func:`pullback.testing.isolation.
sanitizer_environment`).
"""

from __future__ import annotations

import atexit
import ctypes
import hashlib
import os
import shutil
import subprocess
import tempfile
from pathlib import Path
from typing import Any, Sequence

import numpy as np

from pullback._files import move_into_place, write_atomic

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


def run_compiler_into(arguments: Sequence[str], target: Path, what: str) -> Path:
    """Run the compiler with ``-o`` a fresh name in a private temporary folder beside
    ``target``, then rename the result over ``target``: a linker opens its output following
    links, so it never writes where a link planted at ``target`` points (see
    :mod:`pullback._files`)."""
    scratch = tempfile.mkdtemp(prefix=".build-", dir=target.parent)
    try:
        built = Path(scratch) / target.name
        run_compiler([*arguments, "-o", str(built)], what)
        move_into_place(built, target)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    return target


def build_shared(source: Path, target: Path, flags: Sequence[str] = STRICT_FLAGS,
                 openmp: bool = False, sanitize: str | None = None) -> Path:
    """Compile ``source`` into the shared library ``target``."""
    cc = compiler()
    if cc is None:
        raise RuntimeError("no C compiler: set $CC or install gcc")
    arguments = [cc, *flags, *(["-fopenmp"] if openmp else []), *sanitizer_flags(sanitize),
                 "-fPIC", "-shared", str(source), "-lm"]
    return run_compiler_into(arguments, target, f"compiling {source.name}")


_loaded_copies: list[Path] = []  # this process's folder of libraries as loaded (see below)


def load_library(path: Path) -> ctypes.CDLL:
    """``path`` loaded with ctypes, as it is now.

    The dynamic loader keeps one library per path: a library rebuilt at the same path (another
    model exported to the same folder and name) would load as the one already loaded, and
    compute the old model's outputs. So a private copy named by a hash of the file's bytes is
    loaded instead (in a 0700 folder of this process, removed at exit): the same bytes share
    one copy, other bytes are another library."""
    data = path.read_bytes()
    if not _loaded_copies:
        folder = Path(tempfile.mkdtemp(prefix="pullback-export-"))
        atexit.register(shutil.rmtree, folder, ignore_errors=True)
        _loaded_copies.append(folder)
    copy = _loaded_copies[0] / f"{path.stem}-{hashlib.sha256(data).hexdigest()[:16]}.so"
    if not copy.exists():
        write_atomic(copy, data, sync=False)
    return ctypes.CDLL(str(copy))


class CLibrary:
    """An exported model loaded with ctypes: ``library(*arrays)`` returns its outputs.

    Args:
        path: the shared library.
        name: the export's entry-point name (``name_multi`` is called).
        inputs, outputs: ``(shape, dtype)`` of each.

    Attributes:
        function: the ctypes function ``name_multi``, taking each input's and then each
            output's data address (C-contiguous arrays of the shapes and dtypes above).
    """

    def __init__(self, path: Path, name: str, inputs: list[tuple[tuple[int, ...], np.dtype]],
                 outputs: list[tuple[tuple[int, ...], np.dtype]]) -> None:
        self.path = path
        self._library = load_library(path)
        # name_multi(inputs..., outputs...), each a data address
        self.function = getattr(self._library, f"{name}_multi")
        self.function.argtypes = [ctypes.c_void_p] * (len(inputs) + len(outputs))
        self.function.restype = None
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
        self.function(*[a.ctypes.data for a in held + outs])
        return outs
