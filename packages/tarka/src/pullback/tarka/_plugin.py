"""Plugin of pullback-tarka: registers its fused ops (the stable connectives of product logic and
LTN's p-mean quantifiers, ``pullback.tarka._ops``) in core's op table, and their forward-mode
(``"jvp"``) rules, through the public hooks.
Everything else in tarka (the other connectives and aggregators, the semantic loss) composes
core ops."""

from __future__ import annotations

from typing import Any, Callable

from pullback.hookspecs import hookimpl

pullback_hook_api = "1.0"


@hookimpl
def register_ops(register: Callable[[Any], None]) -> None:
    from ._ops import TARKA_OPS

    for op in TARKA_OPS:
        register(op)


@hookimpl
def register_rules(register: Callable[[str, str, Any], None]) -> None:
    # forward mode (pullback.func's jvp, jacfwd) through the fused ops
    from ._ops import JVP_RULES

    for op_name, rule in JVP_RULES.items():
        register(op_name, "jvp", rule)
