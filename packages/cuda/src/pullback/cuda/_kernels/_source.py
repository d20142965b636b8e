"""The CUDA C++ sources shipped in this folder, as the compilers see them.

``#include "common.cuh"`` is replaced by the header's text, so NVRTC needs no include path and
CuPy's kernel cache (keyed by source text) never serves a kernel built from an older header; the
tests compile exactly this text with nvcc.
"""

from __future__ import annotations

import re
from pathlib import Path

KERNEL_DIR = Path(__file__).parent
MODULES = ("matmul", "softmax", "layer_norm", "adamw", "philox")
"""Every ``.cu`` file of the package, by module name."""

_INCLUDE = re.compile(r'^#include "(\w+\.cuh)"\s*$', re.MULTILINE)
_ENTRY = re.compile(r'extern "C" __global__ void(?: __launch_bounds__\([^)]*\))?\s+(\w+)\s*\(')
_MACRO_ENTRY = re.compile(r"^PB_\w+_KERNEL\((\w+),", re.MULTILINE)
_DEFINE = re.compile(r"^#define(?:.*\\\n)*.*$", re.MULTILINE)  # a macro with its continuations


def source(module: str) -> str:
    """The full text of ``<module>.cu`` with its local headers pasted in."""
    if module not in MODULES:
        raise KeyError(f"no CUDA module '{module}' (modules: {', '.join(MODULES)})")
    text = (KERNEL_DIR / f"{module}.cu").read_text()
    return _INCLUDE.sub(lambda m: (KERNEL_DIR / m.group(1)).read_text(), text)


def entry_points(module: str) -> list[str]:
    """Names of the ``extern "C"`` kernels that ``<module>.cu`` defines (written out, or through
    its ``PB_..._KERNEL(name, ...)`` macro)."""
    text = _DEFINE.sub("", source(module))
    return _ENTRY.findall(text) + _MACRO_ENTRY.findall(text)
