"""jvp rules (the ``"jvp"`` key of the op registry) and how an op finds its rule.

A rule is ``rule(F, tangents, out, *primals, **attrs) -> tangent``: ``F`` is the op namespace
over Tensors (as in grad rules), ``tangents`` has one entry per input (``None`` where the input
has no tangent: integers, numbers, constants), ``out`` is the op's output. The tangent may have
a shape that broadcasts to the output's. An op uses its own ``"jvp"`` rule when it has one,
else its family's, else it is an error naming the op. Ops registered ``differentiable=False``
carry no tangent (their derivative is zero wherever it exists), as they carry no gradient.
"""

from __future__ import annotations

from typing import Any, Callable

from pullback.registry import Op

from .._errors import missing_rule
from . import core, nn, ported
from ._derived import from_grad_diagonal, from_grad_reduction, linear

JvpRule = Callable[..., Any]

# Family rules: built for each op on first use (they close over the op).
FAMILY_RULES: dict[str, Callable[[Op], JvpRule]] = {
    "elementwise": from_grad_diagonal,
    "reduce": from_grad_reduction,
    "shape": linear,
    "index": linear,
}

FAMILY_SOURCES = {
    "elementwise": "derived from the grad rule (diagonal Jacobian)",
    "reduce": "derived from the grad rule (group reduction)",
    "shape": "linear (the op on the tangent)",
    "index": "linear (the op on the tangent)",
}

_family_cache: dict[str, JvpRule] = {}


def op_rules() -> dict[str, JvpRule]:
    """The per-op jvp rules pullback.func registers through its plugin."""
    return {**core.rules(), **nn.RULES, **ported.RULES}


def jvp_rule(op: Op) -> JvpRule:
    """The jvp rule of ``op``: its own, or its family's (a MissingRuleError otherwise)."""
    rule = op.rules.get("jvp")
    if rule is not None:
        return rule
    rule = _family_cache.get(op.name)
    if rule is None:
        make = FAMILY_RULES.get(op.family)
        if make is None:
            raise missing_rule(op.name, op.family, "jvp", "jvp")
        rule = _family_cache[op.name] = make(op)
    return rule


def jvp_rule_source(op: Op) -> str:
    """Where ``op``'s jvp rule comes from, for the op table."""
    if not op.differentiable:
        return "none (not differentiable: no tangent)"
    rule = op.rules.get("jvp")
    if rule is not None:
        return getattr(rule, "source", "own rule")
    return FAMILY_SOURCES.get(op.family, "missing")


__all__ = ["FAMILY_RULES", "jvp_rule", "jvp_rule_source", "op_rules"]
