"""Frozen inference programs: ``compile(model, freeze=True)``.

An inference call of a Module in eval mode (no gradient wanted: under ``no_grad`` or
``inference_mode``) runs as one native C function, the code :func:`pullback.compiler.export_c`
writes for the model, with the weights frozen into it (as ``torch.jit.freeze`` freezes them),
compiled for this machine (``-O3 -march=native``, ISO C: no FMA contraction) and called once
through ctypes. At batch 1 that one call replaces a Python call per op: the batch-1 MLP and
CNN of ``benchmarks/compiler_onnx_import.py`` run within 1.5x of onnxruntime this way, where the
compiled Python program takes 2-5x.

What freezing changes: the C sums in its own order (a register-blocked loop nest, not the GEMM
provider's products), so the outputs agree with eager's to float32 rounding (about 1e-7
relative), not bit for bit as the Python program's do. The weights are read when the program is
built; every call checks that each frozen parameter and buffer is still the same array at the
same version (in-place ops, optimizer steps and ``load_state_dict`` bump the version) and
rebuilds when one changed. A write straight into ``tensor.array`` that bypasses
:func:`pullback.optim.mark_modified` is not seen.

Anything else (gradients wanted, a module in training mode, keyword arguments, arguments that
are not CPU Tensors, a model with an op the C writer lacks or more than
``MAX_FROZEN_WEIGHT_BYTES`` of weights, no C compiler) returns ``NotImplemented``, and the
caller runs the compiled Python program; a model that cannot be frozen is said once, with the
reason.
"""

from __future__ import annotations

import atexit
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

import numpy as np

from pullback import native
from pullback.dispatch import state
from pullback.tensor import Tensor

from ._pytree import unflatten
from .errors import CompileError

# ISO C (no contraction of a * b + c into an FMA, as pullback's own kernels) for this CPU
FROZEN_FLAGS = ("-std=c99", "-O3", "-march=native", "-fno-math-errno")
# The weights become C source text (about 12 bytes per float) that the C compiler parses: an
# 0.8 MB MLP compiles in 1.5 s, so a model above this many bytes of weights is not frozen.
MAX_FROZEN_WEIGHT_BYTES = 16 << 20

_folder: list[Path] = []  # this process's private folder of generated sources


def _scratch() -> Path:
    """A 0700 folder of this process for the generated C, removed at exit."""
    if not _folder:
        folder = Path(tempfile.mkdtemp(prefix="pullback-frozen-"))
        atexit.register(shutil.rmtree, folder, ignore_errors=True)
        _folder.append(folder)
    return _folder[0]


@dataclass(eq=False)
class FrozenProgram:
    """One input signature's C function and what it froze."""

    function: Callable[..., None]
    positions: list[int]  # the argument each C input reads
    outputs: list[tuple[tuple[int, ...], np.dtype]]
    tree: Any  # the structure of the model's result
    frozen: list[tuple[Tensor, Any, int]]  # (tensor, its array, its version) when built

    def current(self) -> bool:
        """Whether every frozen tensor is still the array, at the version, it was built from."""
        for t, array, version in self.frozen:
            if t.array is not array or t._version[0] != version:
                return False
        return True

    def run(self, args: tuple[Tensor, ...]) -> Any:
        inputs = [np.ascontiguousarray(args[i].array) for i in self.positions]
        results = [np.empty(shape, dtype) for shape, dtype in self.outputs]
        self.function(*[native.address(a) for a in inputs], *[native.address(r) for r in results])
        device = args[0].device
        if self.tree == ("tensor",):
            return Tensor._wrap(results[0], device)
        return unflatten(self.tree, [Tensor._wrap(r, device) for r in results])


class FrozenPrograms:
    """A compiled Module's frozen programs, one per input signature (shapes and dtypes).

    Args:
        module: the Module (anything else is never frozen).
        cache_limit: how many signatures to build programs for.
        say: logs a line (the compiled function's ``trace_log``).
        warn_once: warns once per kind of refusal.
    """

    def __init__(self, module: Any, cache_limit: int, say: Callable[[str], None],
                 warn_once: Callable[[str, Warning], None]) -> None:
        self._module = module
        self._modules = list(module.modules()) if hasattr(module, "modules") else None
        self._cache_limit = cache_limit
        self._say, self._warn_once = say, warn_once
        self._programs: dict[Any, FrozenProgram | None] = {}
        self.builds = 0

    def __call__(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        """The model's result from its frozen program, or ``NotImplemented``."""
        modules = self._modules
        if modules is None or kwargs or not args or state.grad_enabled:
            return NotImplemented
        for m in modules:
            if m.training:
                return NotImplemented
        key = []
        for a in args:
            if a.__class__ is not Tensor or a.device.type != "cpu":
                return NotImplemented
            key.append((a.array.shape, a.array.dtype))
        signature = tuple(key)
        program = self._programs.get(signature, False)
        if program is None:  # this signature could not be frozen
            return NotImplemented
        if program is False or not program.current():
            program = self._build(signature, args, program is not False)
            if program is None:
                return NotImplemented
        return program.run(args)

    def _build(self, signature: Any, args: tuple[Tensor, ...], stale: bool) -> FrozenProgram | None:
        from . import _export
        from ._c99 import export_c

        if not stale and len(self._programs) >= self._cache_limit:
            return None
        name = getattr(type(self._module), "__name__", "model")
        self._say(f"freezing {name} ({'a frozen weight changed' if stale else 'new inputs'}: "
                  f"{', '.join(str(tuple(shape)) for shape, _ in signature)})")
        try:
            graph = _export.trace_inference(self._module, list(args))
            frozen = [(ph.source, ph.source.array, ph.source._version[0])
                      for ph in graph.placeholders
                      if ph.kind != "input" and isinstance(ph.source, Tensor)]
            weight_bytes = sum(array.nbytes for _, array, _ in frozen)
            if weight_bytes > MAX_FROZEN_WEIGHT_BYTES:
                raise CompileError(f"its {weight_bytes / 2**20:.1f} MiB of weights are more than "
                                   f"{MAX_FROZEN_WEIGHT_BYTES >> 20} MiB of C source can hold "
                                   "for a compile of reasonable time")
            export = export_c(graph, None, _scratch(), name=f"frozen_{id(self):x}_{self.builds}")
            library = export.load(flags=FROZEN_FLAGS)
        except (CompileError, RuntimeError, OSError) as exc:
            self._programs[signature] = None
            self._warn_once("freeze", RuntimeWarning(
                f"compile(freeze=True): {name} runs its compiled Python program for these "
                f"inputs; it cannot be frozen into C: {exc}"))
            return None
        self.builds += 1
        program = FrozenProgram(library.function,
                                [ph.position for ph in export.graph.placeholders],
                                export.outputs, graph.output_tree, frozen)
        self._programs[signature] = program
        return program
