"""The ops the compiler's passes create. They are ordinary registry ops (registered through the
plugin hook), so that a graph with fused nodes runs, prints and exports like any other; their
attributes carry the compiled kernels, and each lowers itself (``"compiler.lower"``)."""

from __future__ import annotations

from typing import Any

from pullback.registry import Op


def _call_kernel(xp: Any) -> Any:
    def run(*args: Any, kernel: Any) -> Any:
        return kernel(*args)

    return run


FUSED_ELEMENTWISE = Op("compiler.fused_elementwise", _call_kernel, differentiable=False,
                       family="elementwise",
                       doc="elementwise ops (and a trailing sum) fused into one generated loop")

COMPILER_OPS = (FUSED_ELEMENTWISE,)
