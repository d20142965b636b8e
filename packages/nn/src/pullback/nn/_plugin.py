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


@hookimpl
def register_rules(register: Callable[[str, str, Any], None]) -> None:
    # nn's records of the op database (pullback.testing.opdb.extension_records), loaded only
    # when something asks for them: a zero-argument function per op.
    def records_of(op_name: str) -> Callable[[], tuple[Any, ...]]:
        def records() -> tuple[Any, ...]:
            from ._opdb import RECORDS

            return tuple(r for r in RECORDS if r.ops[0] == op_name)

        return records

    for op_name in ("nn.softmax", "nn.log_softmax", "nn.layer_norm", "nn.conv2d",
                    "nn.conv2d_input_grad", "nn.max_pool2d", "nn.avg_pool2d", "nn.conv3d",
                    "nn.conv3d_input_grad", "nn.max_pool3d", "nn.avg_pool3d", "nn.im2col",
                    "nn.col2im",
                    "nn.scaled_dot_product_attention"):
        register(op_name, "opdb", records_of(op_name))
