"""Generic jvp rules: by linearity, and derived from an op's grad rule where that is exact.

* A linear op's tangent is the op applied to the tangents (integer inputs, numbers and None
  kept, missing float tangents zero): shape and indexing ops, sum, mean, cumsum, casts.
* A multilinear op (matmul, einsum, convolutions' adjoints) sums the op with one input
  replaced by its tangent at a time.
* An elementwise op's Jacobian is diagonal, so it equals its transpose: the grad rule applied
  to a tangent gives the tangent's image (``J t = J^T t``). One pass, no double backward.
* A reduction over groups (sum, prod, amax, logsumexp, norm over ``axis``): every input element
  feeds one output element, so the grad rule at a cotangent of ones gives each element's
  partial derivative, and the tangent is their sum with the tangent over each group.

The op table (docs/func.md) says which rule each op uses.
"""

from __future__ import annotations

from typing import Any, Callable

from pullback.dispatch import apply
from pullback.registry import Op
from pullback.tensor import Tensor

from .._errors import missing_rule

JvpRule = Callable[..., Any]
_FLOAT_KINDS = "fcV"


def _is_float(x: Any) -> bool:
    return isinstance(x, Tensor) and x.dtype.kind in _FLOAT_KINDS


def linear(op: Op) -> JvpRule:
    """The jvp rule of an op linear in its floating inputs."""

    def rule(F: Any, tangents: tuple[Any, ...], out: Any, *primals: Any, **attrs: Any) -> Any:
        args = [t if t is not None else (F.full(tuple(p.shape), 0.0, like=p) if _is_float(p)
                                         else p) for p, t in zip(primals, tangents)]
        return apply(op, *args, **attrs)

    rule.source = "linear (the op on the tangent)"  # type: ignore[attr-defined]
    return rule


def multilinear(op: Op) -> JvpRule:
    """The jvp rule of an op linear in each floating input separately (a product)."""

    def rule(F: Any, tangents: tuple[Any, ...], out: Any, *primals: Any, **attrs: Any) -> Any:
        total = None
        for i, t in enumerate(tangents):
            if t is None:
                continue
            part = apply(op, *primals[:i], t, *primals[i + 1:], **attrs)
            total = part if total is None else F.add(total, part)
        return total

    rule.source = "multilinear (the op with one input's tangent at a time)"  # type: ignore[attr-defined]
    return rule


def from_grad_diagonal(op: Op) -> JvpRule:
    """An elementwise op's jvp from its grad rule (its Jacobian is diagonal)."""
    grad = op._grad
    if grad is None:
        raise missing_rule(op.name, op.family, "jvp", "jvp")
    wants_needs = op._grad_wants_needs

    def rule(F: Any, tangents: tuple[Any, ...], out: Any, *primals: Any, **attrs: Any) -> Any:
        saved_out = out if op.save_output else None
        total = None
        n = len(primals)
        for i, t in enumerate(tangents):
            if t is None:
                continue
            kwargs = {**attrs, "needs": tuple(j == i for j in range(n))} if wants_needs else attrs
            part = grad(F, t, saved_out, *primals, **kwargs)[i]
            if part is not None:
                total = part if total is None else F.add(total, part)
        return total

    rule.source = "derived from the grad rule (diagonal Jacobian)"  # type: ignore[attr-defined]
    return rule


_REDUCTION_ATTRS = frozenset({"axis", "keepdims"})


def from_grad_reduction(op: Op) -> JvpRule:
    """A group reduction's jvp: partial derivatives from the grad rule at a cotangent of ones,
    summed with the tangent over each group."""
    grad = op._grad
    if grad is None:
        raise missing_rule(op.name, op.family, "jvp", "jvp")

    def rule(F: Any, tangents: tuple[Any, ...], out: Any, x: Any, **attrs: Any) -> Any:
        if set(attrs) - _REDUCTION_ATTRS:
            raise missing_rule(op.name, op.family, "jvp", "jvp")
        (t,) = tangents
        ones = F.full(tuple(out.shape), 1.0, like=out)
        partials = grad(F, ones, out if op.save_output else None, x, **attrs)[0]
        return F.sum(F.mul(t, partials), axis=attrs.get("axis"),
                     keepdims=attrs.get("keepdims", False))

    rule.source = "derived from the grad rule (group reduction)"  # type: ignore[attr-defined]
    return rule
