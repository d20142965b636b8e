"""pullback-compiler's plugin: its graph passes, its fused ops and the rules it adds to ops (C
expressions of elementwise ops, how fused ops lower, how the C99 and ONNX exporters write each
op) and its two exporters, all through the public hooks."""

from __future__ import annotations

from typing import Any, Callable

from pullback.hookspecs import hookimpl

pullback_hook_api = "1.0"


@hookimpl
def register_ops(register: Callable[[Any], None]) -> None:
    from ._ops import COMPILER_OPS

    for op in COMPILER_OPS:
        register(op)


@hookimpl
def register_rules(register: Callable[[str, str, Any], None]) -> None:
    from ._c99.emitter import C99_RULE
    from ._c99.rules import C99_RULES
    from ._c_rules import C_SCALAR_RULES
    from ._executor import LOWER_RULE
    from ._fused import lower_fused
    from ._onnx import ONNX_RULES
    from ._onnx.builder import ONNX_RULE
    from ._static_kernels import STATIC_LOWERINGS
    from .passes.epilogue import lower_epilogue

    for op_name, rule in C_SCALAR_RULES.items():
        register(op_name, "c_scalar", rule)
    for op_name, rule in C99_RULES.items():
        register(op_name, C99_RULE, rule)
    for op_name, rule in ONNX_RULES.items():
        register(op_name, ONNX_RULE, rule)
    register("compiler.fused_elementwise", LOWER_RULE, lower_fused)
    register("compiler.matmul_epilogue", LOWER_RULE, lower_epilogue)
    for op_name, lowering in STATIC_LOWERINGS.items():
        register(op_name, LOWER_RULE, lowering)


@hookimpl
def register_graph_passes(register: Callable[[str, Callable[..., Any]], None]) -> None:
    from .passes._registry import PASSES

    for name, graph_pass in PASSES.items():
        register(name, graph_pass)


@hookimpl
def register_exporters(register: Callable[[str, Callable[..., Any]], None]) -> None:
    from ._c99 import export_c
    from ._onnx import export_onnx

    register("c99", export_c)
    register("onnx", export_onnx)
