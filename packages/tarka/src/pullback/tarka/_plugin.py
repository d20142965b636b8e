"""Plugin of pullback-tarka: registers its fused ops (the stable connectives of product logic and
LTN's p-mean quantifiers, ``pullback.tarka._ops``) in core's op table through the public hook.
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
