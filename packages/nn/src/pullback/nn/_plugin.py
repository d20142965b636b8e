"""pullback.nn's plugin: registers the fused ops (conv, pooling, softmax, layer norm, attention,
cross-entropy, linear) in core's op table through the public hook."""

from __future__ import annotations

from typing import Any, Callable

from pullback.hookspecs import hookimpl

pullback_hook_api = "1.0"


@hookimpl
def register_ops(register: Callable[[Any], None]) -> None:
    from ._ops import NN_OPS

    for op in NN_OPS:
        register(op)
