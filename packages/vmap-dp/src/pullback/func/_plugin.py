"""pullback.func's plugin: its one op (``func.outer``, the stacked outer products of per-sample
weight gradients), the ``"batch"`` (vmap) and ``"jvp"`` (forward mode) rules of core's
ops and of pullback-nn's fused ops, and the ``"vjp"`` rules of the few fused ops whose grad
rule needs pullback's own tape (see :mod:`._reference`), registered by op name through the
public hook. Rules for ops that are not registered yet (pullback-nn not installed, or loaded
later) wait in the registry.

Family rules (one rule for every elementwise op, say) are not registered per op: an op without
a rule of its own uses its family's (see :mod:`pullback.func._batch_rules`).
"""

from __future__ import annotations

from typing import Any, Callable

from pullback.hookspecs import hookimpl

pullback_hook_api = "1.0"


@hookimpl
def register_ops(register: Callable[[Any], None]) -> None:
    from ._outer import OUTER

    register(OUTER)


@hookimpl
def register_rules(register: Callable[[str, str, Any], None]) -> None:
    from ._batch_rules import OP_RULES
    from ._jvp_rules import op_rules
    from ._reference import VJP_RULES

    for name, rule in OP_RULES.items():
        register(name, "batch", rule)
    for name, rule in op_rules().items():
        register(name, "jvp", rule)
    for name, rule in VJP_RULES.items():
        register(name, "vjp", rule)
