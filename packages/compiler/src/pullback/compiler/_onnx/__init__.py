"""``export_onnx``: a model as an ONNX file, written through the ``onnx`` package and checked by
``onnx.checker`` before it is saved.

The model goes through the same inference pipeline as :func:`pullback.compiler.export_c`
(traced in eval mode without gradients, weights frozen, batch norm folded into the
convolutions); each node is written by its op's ``"onnx"`` rule (:mod:`.elementwise`,
:mod:`.layout`, :mod:`.indexing`, :mod:`.nn`, :mod:`.recurrent`, :mod:`.windows`; a
third-party op exports by registering its own rule through ``register_rules``). See
:mod:`.builder` for how the batch axis is made symbolic.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Sequence

import numpy as np

from pullback.registry import OPS

from .._export import as_inputs, inference_graph, where
from .._ir import Graph, Node
from ..errors import ExportError
from .builder import BATCH, ONNX_RULE, BatchAxes, OnnxBuilder
from .elementwise import ELEMENTWISE_RULES
from .indexing import INDEXING_RULES
from .layout import LAYOUT_RULES
from .nn import NN_RULES
from .recurrent import RECURRENT_RULES
from .windows import WINDOW_RULES

ONNX_RULES = {**ELEMENTWISE_RULES, **LAYOUT_RULES, **INDEXING_RULES, **NN_RULES,
              **RECURRENT_RULES, **WINDOW_RULES}
DEFAULT_OPSET = 17  # LayerNormalization's; what torch.onnx.export writes by default
SUPPORTED_OPSETS = range(17, 22)


def _onnx() -> Any:
    try:
        import onnx
    except ImportError:
        raise ImportError("ONNX export and import need the onnx package: pip install "
                          "'pullback-compiler[onnx]' (or pip install onnx)") from None
    return onnx


def _one_more(x: Any) -> Any:
    """The input with its first row repeated once more (the batch size plus one)."""
    import pullback as pb

    array = x.numpy()
    if array.ndim == 0:
        raise ExportError("export_onnx: dynamic_batch needs inputs with a batch axis (a 0-d "
                          "input has none); export with dynamic_batch=False")
    return pb.tensor(np.concatenate([array, array[:1]]))


def _rule(node: Node) -> Any:
    op = OPS.get(node.op)
    if op is not None and ONNX_RULE in op.rules:
        return op.rules[ONNX_RULE]
    supported = sorted(n for n, o in OPS.items() if ONNX_RULE in o.rules)
    raise ExportError(f"export_onnx: op {node.op!r} has no ONNX rule{where(node)}; the exporter "
                      f"writes {', '.join(supported)} (an op's plugin can add one: "
                      f"register_rules(op, 'onnx', rule))")


def _names(given: Sequence[str] | None, count: int, stem: str) -> list[str]:
    if given is not None:
        if len(given) != count or len(set(given)) != count:
            raise ExportError(f"export_onnx: {len(given)} {stem} names for {count} {stem}s "
                              "(they must be distinct)")
        return list(given)
    return [stem] if count == 1 else [f"{stem}{i}" for i in range(count)]


def export_onnx(module_or_graph: Any, example_inputs: Any, path: str | Path, *,
                opset: int = DEFAULT_OPSET, dynamic_batch: bool = True,
                input_names: Sequence[str] | None = None,
                output_names: Sequence[str] | None = None) -> Any:
    """Write a model as ONNX.

    The model is traced in eval mode without gradients on ``example_inputs``, its weights
    become initializers (named after their parameters), batch norm is folded into the
    convolutions and linear layers, and each op is written in standard ONNX operators of
    ``opset`` (no custom domain). The model passes ``onnx.checker.check_model(full_check=True)``
    before it is saved.

    Args:
        module_or_graph: a Module, a function, or a Graph from :func:`pullback.compiler.trace`
            (traced without gradients; a Graph has static shapes, so pass
            ``dynamic_batch=False``).
        example_inputs: a Tensor or a tuple of them (ignored for a Graph).
        path: the ``.onnx`` file to write (its folder is made if missing).
        opset: the ONNX opset, 17 to 21.
        dynamic_batch: make the first axis of the inputs (and of the outputs that follow it)
            the symbolic size ``batch``. The model is traced a second time at one more row to
            find which sizes follow the batch; a model whose structure depends on the batch
            size is refused.
        input_names, output_names: the graph's input and output names (default ``input`` /
            ``output``, or ``input0``, ``input1``... when there are several).

    Returns:
        The ``onnx.ModelProto`` that was saved.

    Raises:
        ExportError: an op without an ONNX rule (the message names it and the user's line),
            a graph that is not inference, sizes that follow the batch where ONNX cannot say so.
        ImportError: the ``onnx`` package is not installed.

    Example:
        >>> import pullback as pb, pullback.nn as nn, pullback.compiler as pc
        >>> model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 2))
        >>> proto = pc.export_onnx(model, pb.randn(1, 4), "mlp.onnx")  # doctest: +SKIP
    """
    onnx = _onnx()
    if opset not in SUPPORTED_OPSETS:
        raise ExportError(f"export_onnx: opset {opset} (supported: {SUPPORTED_OPSETS.start} to "
                          f"{SUPPORTED_OPSETS.stop - 1})")
    if isinstance(module_or_graph, Graph):
        if dynamic_batch:
            raise ExportError("export_onnx: a traced Graph has static shapes (its batch size "
                              "cannot be found without tracing again); pass dynamic_batch=False "
                              "or the model itself")
        graph, other = inference_graph(module_or_graph, None), None
    else:
        inputs = as_inputs(example_inputs)
        graph = inference_graph(module_or_graph, inputs)
        other = inference_graph(module_or_graph, tuple(_one_more(x) for x in inputs)) \
            if dynamic_batch else None
    model = _build(onnx, graph, BatchAxes(graph, other), opset,
                   _names(input_names, len(graph.placeholders), "input"),
                   _names(output_names, len(graph.outputs), "output"))
    onnx.checker.check_model(model, full_check=True)
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    onnx.save(model, str(target))
    return model


def _build(onnx: Any, graph: Graph, batch: BatchAxes, opset: int, input_names: list[str],
           output_names: list[str]) -> Any:
    from onnx import helper

    builder = OnnxBuilder(graph, batch, opset)
    for ph, name in zip(graph.placeholders, input_names):
        builder.bind(ph.value, name)
    aliases = []  # outputs that are not a node's own result get an Identity
    for v, name in zip(graph.outputs, output_names):
        if v is None:
            raise ExportError("export_onnx: the model returns None among its outputs")
        if v.producer is not None and v not in builder.names and v not in graph.constants:
            builder.bind(v, name)
        else:
            aliases.append((v, name))
    builder.used.update(output_names)
    for node in graph.nodes:
        builder.node = node
        _rule(node)(node, builder)
    builder.node = None
    for v, name in aliases:
        builder.emit("Identity", [builder.name(v)], [name])

    def info(v: Any, name: str) -> Any:
        dims = [BATCH if d in batch.of(v) else s for d, s in enumerate(v.shape)]
        return helper.make_tensor_value_info(name, builder.onnx_type(v.dtype), dims)

    onnx_graph = helper.make_graph(
        builder.nodes, graph.name or "pullback",
        [info(ph.value, n) for ph, n in zip(graph.placeholders, input_names)],
        [info(v, n) for v, n in zip(graph.outputs, output_names)],
        initializer=builder.initializers)
    opsets = [helper.make_opsetid("", opset)]
    model = helper.make_model(onnx_graph, opset_imports=opsets, producer_name="pullback",
                              ir_version=helper.find_min_ir_version_for(opsets))
    return model
