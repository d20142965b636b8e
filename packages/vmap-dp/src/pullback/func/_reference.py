"""Transform rules of a fused op through its *reference*: the same function written with
registered ops (which have rules of their own).

Some fused ops are one kernel for speed on pullback's own tape, and their grad rule relies on
that tape (``nn.recurrent_layer`` replays its time loop with Tensor ops and differentiates the
replay with ``pullback.autograd.grad``, which the transforms' wrapper tensors do not reach). For
such an op, a transform runs the op's reference instead, under a nested transform of the same
kind one level down: vmap of the reference (every op of it batched by its own rule, no loop over
the samples), jvp of it (real forward mode through its ops), vjp of it (the reverse pass of its
ops). Each nested transform is opened inside the rule, so the enclosing levels batch or
differentiate the reference's ops as they do any others.
"""

from __future__ import annotations

from typing import Any, Callable

Reference = Callable[..., Any]


def _substitute(reference: Reference, primals: tuple[Any, ...], where: list[int],
                attrs: dict[str, Any]) -> Callable[..., Any]:
    """``reference`` as a function of the inputs at ``where`` (the others fixed)."""

    def f(*chosen: Any) -> Any:
        args = list(primals)
        for i, value in zip(where, chosen):
            args[i] = value
        return reference(*args, **attrs)

    return f


def batch_via_reference(op_name: str, get_reference: Callable[[], Reference]) -> Any:
    """A batching rule: vmap of the reference over the batched arguments (batch dim 0 out)."""

    def rule(op: Any, args: tuple[Any, ...], bdims: tuple[Any, ...], size: int, /,
             **attrs: Any) -> tuple[Any, int]:
        from ._vmap import vmap

        where = [i for i, b in enumerate(bdims) if b is not None]
        f = _substitute(get_reference(), args, where, attrs)
        return vmap(f, in_dims=tuple(bdims[i] for i in where))(*[args[i] for i in where]), 0

    rule.__name__ = f"batch_{op_name.replace('.', '_')}_via_reference"
    return rule


def jvp_via_reference(op_name: str, get_reference: Callable[[], Reference]) -> Any:
    """A jvp rule: forward mode through the reference's ops (its primal is computed again)."""

    def rule(F: Any, tangents: tuple[Any, ...], out: Any, *primals: Any, **attrs: Any) -> Any:
        from ._jvp import jvp

        where = [i for i, t in enumerate(tangents) if t is not None]
        if not where:
            return None
        f = _substitute(get_reference(), primals, where, attrs)
        return jvp(f, tuple(primals[i] for i in where), tuple(tangents[i] for i in where))[1]

    rule.source = f"forward mode through {op_name}'s reference (ops with rules)"  # type: ignore[attr-defined]
    return rule


def vjp_via_reference(op_name: str, get_reference: Callable[[], Reference]) -> Any:
    """A vjp rule (the transforms' replacement of the op's grad rule, same signature): the
    reverse pass of the reference's ops."""

    def rule(F: Any, g: Any, out: Any, *primals: Any, needs: tuple[bool, ...] | None = None,
             **attrs: Any) -> tuple[Any, ...]:
        from ._vjp import vjp

        if needs is None:
            needs = tuple(p is not None for p in primals)
        where = [i for i, need in enumerate(needs) if need and primals[i] is not None]
        f = _substitute(get_reference(), primals, where, attrs)
        _, vjp_fn = vjp(f, *[primals[i] for i in where])
        grads: list[Any] = [None] * len(primals)
        for i, gi in zip(where, vjp_fn(g)):
            grads[i] = gi
        return tuple(grads)

    rule.__name__ = f"vjp_{op_name.replace('.', '_')}_via_reference"
    return rule


def _recurrent_layer() -> Reference:
    from pullback.nn._ops.recurrent import reference_recurrent_layer  # runs with nn loaded

    return reference_recurrent_layer


# pullback-nn's fused ops that the transforms run through their reference (by op name; looked
# up when a rule runs, so pullback.func does not import pullback.nn).
NN_REFERENCES: dict[str, Callable[[], Reference]] = {"nn.recurrent_layer": _recurrent_layer}

# The ``"vjp"`` rules: used by the transforms' reverse pass in place of the op's grad rule.
VJP_RULES = {name: vjp_via_reference(name, get) for name, get in NN_REFERENCES.items()}
