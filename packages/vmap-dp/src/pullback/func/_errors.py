"""Errors of the function transforms: each message names the transform and, where an op is the
cause, the op."""

from __future__ import annotations

from pullback.errors import PullbackError, RegistryError


class FuncError(PullbackError, RuntimeError):
    """Misuse of a transform: a batched tensor read as data, a tensor that escaped its
    transform, an in-place write that cannot be batched, inconsistent ``in_dims``..."""


class VmapError(FuncError):
    """Something :func:`pullback.func.vmap` cannot batch (the message says what and why)."""


class MissingRuleError(FuncError, RegistryError):
    """An op that has no rule for a transform (``"batch"`` for vmap, ``"jvp"`` for forward mode).

    The message names the op, its family and how to register the rule.
    """


def missing_rule(op_name: str, family: str, key: str, transform: str) -> MissingRuleError:
    """The error for an op without a ``key`` rule, naming it and the hook that adds one."""
    return MissingRuleError(
        f"{transform}: op '{op_name}' (family '{family}') has no '{key}' rule; a plugin adds "
        f"one with register_rules: register('{op_name}', '{key}', rule) (see docs/func.md)"
    )
