"""The ``"c99"`` rule of each op the C99 exporter writes, registered through the plugin hook
``register_rules`` (a third-party op exports by registering its own). An elementwise op needs
none: its ``"c_scalar"`` rule is enough. A movement op (see :mod:`.layout`) is written from its
own kernel."""

from __future__ import annotations

from typing import Callable

from pullback.registry import OPS

from .._ir import Node
from ..errors import ExportError
from .elementwise import elementwise_rule, fused_rule
from .emitter import C99_RULE, KernelBuilder, where
from .layout import MOVEMENT_OPS, cat_rule, movement_rule, reduce_rule, take_rule
from .linalg import epilogue_rule, linear_rule, matmul_rule
from .normalize import attention_rule, layer_norm_rule, softmax_rule
from .conv import conv2d_rule
from .window import avg_pool2d_rule, max_pool2d_rule

C99Rule = Callable[[Node, KernelBuilder], None]

C99_RULES: dict[str, C99Rule] = {
    "compiler.fused_elementwise": fused_rule,
    "compiler.matmul_epilogue": epilogue_rule,
    "nn.linear": linear_rule,
    "matmul": matmul_rule,
    "nn.conv2d": conv2d_rule,
    "nn.max_pool2d": max_pool2d_rule,
    "nn.avg_pool2d": avg_pool2d_rule,
    "nn.layer_norm": layer_norm_rule,
    "nn.softmax": softmax_rule,
    "nn.log_softmax": softmax_rule,
    "nn.scaled_dot_product_attention": attention_rule,
    "cat": cat_rule,
    "stack": cat_rule,
    "take": take_rule,
    "sum": reduce_rule,
    "mean": reduce_rule,
    "amax": reduce_rule,
    "amin": reduce_rule,
    **{name: movement_rule for name in MOVEMENT_OPS},
}


def c99_rule(node: Node) -> C99Rule:
    """The rule that writes ``node``'s kernel; an ExportError naming the op when none does."""
    op = OPS.get(node.op)
    if op is not None and C99_RULE in op.rules:
        return op.rules[C99_RULE]
    if op is not None and "c_scalar" in op.rules:
        return elementwise_rule
    supported = sorted(n for n, o in OPS.items() if C99_RULE in o.rules or "c_scalar" in o.rules)
    raise ExportError(f"export_c: op {node.op!r} has no C99 rule{where(node)}; the exporter "
                      f"writes {', '.join(supported)} (an op's plugin can add one: "
                      f"register_rules(op, 'c99', rule))")
