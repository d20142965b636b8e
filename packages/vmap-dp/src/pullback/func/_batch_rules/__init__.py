"""Batching rules (the ``"batch"`` key of the op registry) and how an op finds its rule.

A rule is ``rule(op, args, bdims, size, /, **attrs) -> (out, out_bdim)``: ``args`` are the op's
arguments one level below (whole batches), ``bdims`` says where each one's batch dim is
(``None`` for unbatched arguments, numbers, ``None``), ``size`` is the batch size. The result is
computed with ops of the level below, and ``out_bdim`` says where its batch dim is (a tuple of
them for multi-output ops). An op uses its own ``"batch"`` rule when it has one, else its
family's rule, else it is an error naming the op.
"""

from __future__ import annotations

from typing import Any, Callable

from pullback.registry import Op

from .._errors import missing_rule
from . import index, linalg, nn, ported, reduce, shape
from .elementwise import elementwise
from .fallback import VmapFallbackWarning, loop_fallback

BatchRule = Callable[..., tuple[Any, Any]]

# The family rules: every op of the family that has no rule of its own uses them.
FAMILY_RULES: dict[str, BatchRule] = {
    "elementwise": elementwise,
    "reduce": reduce.reduction,
}

# The per-op rules pullback.func registers through its plugin (core's ops and pullback-nn's).
OP_RULES: dict[str, BatchRule] = {
    **reduce.RULES, **shape.RULES, **index.RULES, **linalg.RULES, **nn.RULES, **ported.RULES,
}


def batch_rule(op: Op) -> BatchRule:
    """The batching rule of ``op``: its own, or its family's (a MissingRuleError otherwise)."""
    rule = op.rules.get("batch") or FAMILY_RULES.get(op.family)
    if rule is None:
        raise missing_rule(op.name, op.family, "batch", "vmap")
    return rule


def batch_rule_source(op: Op) -> str:
    """Where ``op``'s batching rule comes from, for the op table."""
    rule = op.rules.get("batch")
    if rule is loop_fallback:
        return "loop fallback"
    if rule is not None:
        return "own rule"
    if op.family in FAMILY_RULES:
        return f"family rule ({op.family})"
    return "missing"


__all__ = ["FAMILY_RULES", "OP_RULES", "VmapFallbackWarning", "batch_rule",
           "batch_rule_source", "loop_fallback"]
