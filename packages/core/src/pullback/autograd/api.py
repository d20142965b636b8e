"""``pullback.autograd.grad`` and ``pullback.autograd.backward``."""

from __future__ import annotations

from typing import Any, Sequence

from ..errors import AutogradError
from ..tensor import Tensor
from .engine import run_backward


def _as_list(x: Any) -> list[Any]:
    if isinstance(x, Tensor):
        return [x]
    return list(x)


def grad(
    outputs: Tensor | Sequence[Tensor],
    inputs: Tensor | Sequence[Tensor],
    grad_outputs: Any = None,
    retain_graph: bool | None = None,
    create_graph: bool = False,
    allow_unused: bool = False,
) -> tuple[Tensor | None, ...]:
    """Gradients of ``outputs`` with respect to ``inputs``, without touching any ``.grad``.

    Args:
        outputs: tensors to differentiate.
        inputs: tensors (leaves or not) to differentiate with respect to.
        grad_outputs: d(loss)/d(output) per output; ``None`` for one-element outputs.
        retain_graph: keep the graph (defaults to ``create_graph``).
        create_graph: make the result differentiable (higher-order derivatives).
        allow_unused: return ``None`` for inputs the outputs do not depend on, instead of
            raising.
    """
    outs = _as_list(outputs)
    ins = _as_list(inputs)
    if grad_outputs is None:
        gouts: list[Any] = [None] * len(outs)
    else:
        gouts = _as_list(grad_outputs) if not isinstance(grad_outputs, Tensor) else [grad_outputs]
    if len(gouts) != len(outs):
        raise AutogradError(f"grad: {len(outs)} outputs but {len(gouts)} grad_outputs")
    result = run_backward(
        outs, gouts, retain_graph=create_graph if retain_graph is None else retain_graph,
        create_graph=create_graph, inputs=ins, accumulate=False,
    )
    assert result is not None
    if not allow_unused:
        for i, g in enumerate(result):
            if g is None:
                raise AutogradError(
                    f"grad: input {i} (shape {tuple(ins[i].shape)}) was not used to compute the "
                    "outputs; pass allow_unused=True if this is expected"
                )
    return tuple(result)


def backward(
    tensors: Tensor | Sequence[Tensor],
    grad_tensors: Any = None,
    retain_graph: bool | None = None,
    create_graph: bool = False,
    inputs: Sequence[Tensor] | None = None,
) -> None:
    """Accumulate gradients of several outputs into the leaves' ``.grad`` in one pass."""
    outs = _as_list(tensors)
    gouts = [None] * len(outs) if grad_tensors is None else _as_list(grad_tensors)
    run_backward(outs, gouts, retain_graph=create_graph if retain_graph is None else retain_graph,
                 create_graph=create_graph, inputs=inputs)
