"""pullback.spanda's plugin: registers the spike and leaky-membrane ops in core's op table through
the public hook."""

from __future__ import annotations

from typing import Any, Callable

from pullback.hookspecs import hookimpl

pullback_hook_api = "1.0"


@hookimpl
def register_ops(register: Callable[[Any], None]) -> None:
    from ._ops import SPANDA_OPS

    for op in SPANDA_OPS:
        register(op)
