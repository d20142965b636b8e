"""Gradient checkpointing: trade compute for memory by recomputing a segment in backward."""

from __future__ import annotations

from typing import Any, Callable

from ..errors import AutogradError
from ..tensor import Tensor
from .function import Function, FunctionCtx


def _rng_states() -> dict[str, Any]:
    from ..backends import backends

    return {name: b.get_rng_state() for name, b in backends().items() if b.is_available()}


def _set_rng_states(states: dict[str, Any]) -> None:
    from ..backends import backends

    for name, b in backends().items():
        if name in states:
            b.set_rng_state(states[name])


class _Checkpoint(Function):
    @staticmethod
    def forward(ctx: FunctionCtx, fn: Callable[..., Any], *args: Any) -> Any:
        ctx.fn = fn
        ctx.rng = _rng_states()  # dropout inside fn must draw the same masks when recomputed
        ctx.save_for_backward(*[a for a in args if isinstance(a, Tensor)])
        ctx.args = [None if isinstance(a, Tensor) else a for a in args]
        return fn(*args)

    @staticmethod
    def backward(ctx: FunctionCtx, *grads: Any) -> Any:
        from ..dispatch import state
        from .engine import run_backward

        if state.grad_enabled:
            raise AutogradError("checkpoint does not support create_graph=True")
        saved = iter(ctx.saved_tensors)
        inputs = []
        for a in ctx.args:
            if a is None:
                t = next(saved)
                assert t is not None  # forward saved exactly the Tensor arguments
                inputs.append(t.detach().requires_grad_(t.requires_grad))
            else:
                inputs.append(a)
        now = _rng_states()
        _set_rng_states(ctx.rng)
        state.grad_enabled = True
        try:
            outputs = ctx.fn(*inputs)
        finally:
            state.grad_enabled = False
            _set_rng_states(now)
        outs = [outputs] if isinstance(outputs, Tensor) else list(outputs)
        pairs = [(o, g) for o, g in zip(outs, grads) if isinstance(o, Tensor) and o.requires_grad]
        if pairs:
            # Accumulates into parameters used inside fn (like PyTorch's reentrant checkpoint)
            # and into the detached inputs, whose gradients are returned below.
            run_backward([o for o, _ in pairs], [g for _, g in pairs], retain_graph=False,
                         create_graph=False)
        return (None,) + tuple(
            x.grad if isinstance(x, Tensor) and x.requires_grad else None for x in inputs
        )


def checkpoint(fn: Callable[..., Any], *args: Any) -> Any:
    """Run ``fn(*args)`` without keeping its intermediate activations; recompute them in
    backward. Random ops inside ``fn`` replay the same numbers. Use with ``backward()``
    (gradients of parameters used inside ``fn`` are accumulated into their ``.grad``)."""
    return _Checkpoint.apply(fn, *args)
