"""pullback.spanda's plugin: registers the spike and leaky-membrane ops in core's op table, and
their function-transform rules (``"batch"`` for vmap, ``"jvp"`` for forward mode, read by
pullback.func when it is installed), through the public hooks."""

from __future__ import annotations

from typing import Any, Callable

from pullback.hookspecs import hookimpl

pullback_hook_api = "1.0"


@hookimpl
def register_ops(register: Callable[[Any], None]) -> None:
    from ._ops import SPANDA_OPS

    for op in SPANDA_OPS:
        register(op)


@hookimpl
def register_rules(register: Callable[[str, str, Any], None]) -> None:
    from ._ops.transform_rules import RULES

    for (op_name, key), rule in RULES.items():
        register(op_name, key, rule)
