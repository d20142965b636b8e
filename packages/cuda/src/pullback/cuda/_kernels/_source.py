"""The CUDA C++ sources shipped in this folder, as the compilers see them.

``#include "common.cuh"`` is replaced by the header's text, so NVRTC needs no include path and
CuPy's kernel cache (keyed by source text) never serves a kernel built from an older header; the
tests compile exactly this text with nvcc.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import numpy as np

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


_SCALARS = {"int": np.int32, "long long": np.int64, "unsigned long long": np.uint64,
            "float": np.float32}
_POINTEES = {"float": np.float32, "unsigned int": np.uint32}


def parameters(module: str, name: str) -> list[str]:
    """The C types of kernel ``name``'s parameters (``"float*"``, ``"int"``...), read from the
    source (for kernels stamped out by a macro, from the macro's definition)."""
    text = source(module).replace("\\\n", " ")
    found = re.search(r"\b" + name + r"\s*\(([^)]*)\)\s*\{", _DEFINE.sub("", source(module)))
    if found is None:
        macro = re.search(r"^(PB_\w+_KERNEL)\(" + name + ",", text, re.MULTILINE)
        if macro is None:
            raise KeyError(f"no kernel '{name}' in {module}.cu")
        body = re.search(r"#define " + macro.group(1) + r"\(.*?\bNAME\s*\(([^)]*)\)", text)
        assert body is not None, f"macro {macro.group(1)} has no NAME(...) signature"
        found = body
    kinds = []
    for param in found.group(1).split(","):
        words = param.replace("__restrict__", "").replace("const", "").split()
        declared = " ".join(words[:-1]).replace(" *", "*")  # drop the parameter's name
        kinds.append(declared)
    return kinds


def check_args(module: str, name: str, args: tuple[Any, ...]) -> None:
    """Raise ``TypeError`` unless ``args`` fit kernel ``name``'s parameters one for one: arrays
    for pointers (float32 for ``float*``...), NumPy scalars of the exact C width otherwise.
    CuPy passes whatever it is given, so a wrong width would be read as garbage."""
    kinds = parameters(module, name)
    if len(args) != len(kinds):
        raise TypeError(f"kernel {name}: {len(kinds)} parameters, {len(args)} arguments")
    for i, (kind, arg) in enumerate(zip(kinds, args)):
        if kind.endswith("*"):
            if not hasattr(arg, "shape") or isinstance(arg, np.generic):
                raise TypeError(f"kernel {name}: parameter {i} ({kind}) needs an array, "
                                f"got {type(arg).__name__}")
            pointee = _POINTEES.get(kind[:-1])
            if pointee is not None and arg.dtype != pointee:
                raise TypeError(f"kernel {name}: parameter {i} ({kind}) needs "
                                f"{np.dtype(pointee)}, got {arg.dtype}")
        elif not isinstance(arg, _SCALARS[kind]):
            raise TypeError(f"kernel {name}: parameter {i} ({kind}) needs "
                            f"numpy.{_SCALARS[kind].__name__}, got {type(arg).__name__}")
