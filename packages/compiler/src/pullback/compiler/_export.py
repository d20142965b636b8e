"""What the exporters start from: an inference graph whose only placeholders are its inputs.

A Module (or function) is traced in eval mode without gradients, as ``torch.onnx.export`` and
ExecuTorch take a model: batch norm uses its running statistics and dropout is off. Parameters,
buffers and captured tensors become constants (frozen at export), and the export pipeline folds
what depends on them alone (batch norm's scale, the slices of a fused q/k/v weight, position
embeddings of a fixed length) and batch norm itself into the convolutions and linear layers.
"""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np

import pullback as pb
from pullback.tensor import Tensor

from ._capture import trace
from ._ir import Graph, Node
from .errors import ExportError
from .passes import optimize

# Exact rewrites and folding first (batch norm's chain must be constants to fold it), then the
# cleanup; the C99 exporter adds fusion.
EXPORT_PIPELINE: tuple[str, ...] = ("algebraic", "constant_fold", "fold_batch_norm", "cse",
                                    "dce")
_FROZEN_KINDS = ("param", "buffer", "captured")


def where(node: Node) -> str:
    """`` (at file:line in function)`` for messages, when the node knows its source."""
    source = node.meta.get("source")
    if not source:
        return ""
    file, line, function = source
    return f" (at {file}:{line} in {function})"


def distinct(base: str, used: set[str]) -> str:
    """``base``, or ``base_2``, ``base_3``... the first not in ``used`` (then added to it)."""
    name, n = base, 1
    while name in used:
        n += 1
        name = f"{base}_{n}"
    used.add(name)
    return name


def as_inputs(example_inputs: Any) -> tuple[Tensor, ...]:
    """Example inputs as a tuple of Tensors (one Tensor, an array, or a sequence of them)."""
    if isinstance(example_inputs, (Tensor, np.ndarray)):
        example_inputs = (example_inputs,)
    return tuple(x if isinstance(x, Tensor) else pb.tensor(np.asarray(x)) for x in example_inputs)


def trace_inference(model: Any, example_inputs: Sequence[Tensor]) -> Graph:
    """Trace ``model(*example_inputs)`` in eval mode under ``no_grad`` (the training flags are
    restored afterwards)."""
    modes = [(m, m.training) for m in model.modules()] if hasattr(model, "modules") else []
    if hasattr(model, "eval"):
        model.eval()
    try:
        with pb.no_grad():
            return trace(model, *example_inputs)
    finally:
        for module, training in modes:
            module.training = training


def freeze(graph: Graph) -> Graph:
    """A copy of ``graph`` whose parameters, buffers and captured tensors are constants (their
    values now); refused when the graph writes into anything or has other placeholders."""
    if graph.mutations or graph.grads:
        written = [ph.name for ph, _ in graph.mutations] + [ph.name + ".grad"
                                                            for ph, _ in graph.grads]
        raise ExportError(f"graph {graph.name!r} writes into {', '.join(written)}: an exported "
                          "graph must be pure inference (trace the model in eval mode, "
                          "without backward or optimizer steps)")
    frozen = graph.copy()
    kept = []
    for ph in frozen.placeholders:
        if ph.kind == "input":
            kept.append(ph)
        elif ph.kind in _FROZEN_KINDS:
            source = ph.source.array if isinstance(ph.source, Tensor) else ph.source
            frozen.constants[ph.value] = np.array(source, copy=True)
            frozen.constant_names[ph.value] = ph.name
        else:
            raise ExportError(f"graph {graph.name!r} reads a {ph.kind} placeholder "
                              f"({ph.name}): only inputs, parameters and buffers can be exported")
    frozen.placeholders = kept
    return frozen


def inference_graph(model_or_graph: Any, example_inputs: Any,
                    passes: Sequence[str] = EXPORT_PIPELINE) -> Graph:
    """The frozen, optimized inference graph of a Module, a function or a traced Graph."""
    if isinstance(model_or_graph, Graph):
        graph = model_or_graph
    else:
        graph = trace_inference(model_or_graph, as_inputs(example_inputs))
    optimized, _ = optimize(freeze(graph), list(passes))
    return optimized
