"""``import_onnx``: an ONNX model as a pullback Module that runs and trains.

The model's float initializers become Parameters (trainable, in ``state_dict`` under their
ONNX names with ``.`` and other characters a Module name cannot hold replaced), its other
initializers (integers, batch norm's running statistics) and ``Constant`` nodes constant
Tensors. ``forward`` runs the nodes in order with
pullback's ops (:mod:`.import_ops`): autograd records them as any eager forward, so
``loss.backward()`` and an optimizer step work, and :func:`pullback.compiler.compile` can
capture it. Every operator is checked when the model is imported: an unsupported one is an
:class:`~pullback.compiler.OnnxImportError` naming it, its node and the model's opset.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import numpy as np

import pullback as pb
from pullback.tensor import Tensor

from .._export import distinct
from ..errors import OnnxImportError


def _load(model: Any) -> Any:
    from . import _onnx

    onnx = _onnx()

    if isinstance(model, (str, Path)):
        return onnx.load(str(model))
    if isinstance(model, onnx.ModelProto):
        return model
    raise TypeError(f"import_onnx: expected a path or an onnx.ModelProto, got "
                    f"{type(model).__name__}")


def _attributes(node: Any) -> dict[str, Any]:
    from onnx import helper

    values = {}
    for a in node.attribute:
        value = helper.get_attribute_value(a)
        values[a.name] = value.decode() if isinstance(value, bytes) else value
    return values


def import_onnx(model: Any) -> Any:
    """Load an ONNX model as a pullback Module.

    Args:
        model: a path to an ``.onnx`` file or an ``onnx.ModelProto``.

    Returns:
        An ``nn.Module`` whose ``forward(*inputs)`` takes the graph's inputs (Tensors or
        arrays, in the graph's order) and returns its output, or a tuple when there are
        several. Its float initializers are Parameters: it trains.

    Raises:
        OnnxImportError: an operator outside the default domain or without a pullback form
            (the message names the operator, the node and the opset).
        ImportError: the ``onnx`` package is not installed.

    Example:
        >>> net = pc.import_onnx("mlp.onnx")  # doctest: +SKIP
        >>> net(pb.randn(8, 4)).sum().backward()  # doctest: +SKIP
    """
    import pullback.nn as nn

    from .import_ops import FIXED_INPUTS, IMPORT_OPS

    proto = _load(model)
    opset = next((o.version for o in proto.opset_import if o.domain in ("", "ai.onnx")), 1)
    graph = proto.graph
    for node in graph.node:
        if node.domain not in ("", "ai.onnx") or (node.op_type not in IMPORT_OPS
                                                  and node.op_type != "Constant"):
            raise OnnxImportError(
                f"import_onnx: operator {node.op_type!r} (domain {node.domain or 'ai.onnx'!r}, "
                f"opset {opset}, node {node.name!r}) has no pullback form; supported: "
                f"{', '.join(sorted(IMPORT_OPS))}, Constant")

    class OnnxModule(nn.Module):
        """An imported ONNX graph (see :func:`pullback.compiler.import_onnx`)."""

        def __init__(self) -> None:
            super().__init__()
            from onnx import numpy_helper

            self.opset = opset
            self._slots: dict[str, str] = {}
            self._constants: dict[str, Tensor] = {}
            used: set[str] = set()
            fixed = {n.input[i] for n in graph.node for i in FIXED_INPUTS.get(n.op_type, ())
                     if i < len(n.input)}
            for init in graph.initializer:
                array = np.array(numpy_helper.to_array(init))
                if array.dtype.kind == "f" and init.name not in fixed:
                    slot = _slot(init.name, used)
                    self.register_parameter(slot, nn.Parameter(pb.tensor(array)))
                    self._slots[init.name] = slot
                else:
                    self._constants[init.name] = pb.tensor(array)
            for node in graph.node:
                if node.op_type == "Constant":
                    value = numpy_helper.to_array(_attributes(node)["value"])
                    self._constants[node.output[0]] = pb.tensor(np.array(value))
            known = set(self._slots) | set(self._constants)
            self.input_names = [i.name for i in graph.input if i.name not in known]
            self.output_names = [o.name for o in graph.output]
            self._nodes = [(n.op_type, list(n.input), list(n.output), _attributes(n), n.name)
                           for n in graph.node if n.op_type != "Constant"]

        def forward(self, *inputs: Any) -> Any:
            if len(inputs) != len(self.input_names):
                raise TypeError(f"the ONNX model takes {len(self.input_names)} inputs "
                                f"({', '.join(self.input_names)}), got {len(inputs)}")
            env: dict[str, Any] = dict(self._constants)
            env.update({name: getattr(self, slot) for name, slot in self._slots.items()})
            for name, x in zip(self.input_names, inputs):
                env[name] = x if isinstance(x, Tensor) else pb.tensor(np.asarray(x))
            for op_type, ins, outs, attrs, node_name in self._nodes:
                args = [env[n] if n else None for n in ins]
                try:
                    if op_type == "Split":
                        from .import_ops import _split

                        results = _split(args, attrs, self.opset, outputs=len(outs))
                    else:
                        results = IMPORT_OPS[op_type](args, attrs, self.opset)
                except NotImplementedError as exc:
                    raise OnnxImportError(f"import_onnx: {op_type} (opset {self.opset}, node "
                                          f"{node_name!r}): {exc} is not supported") from None
                for name, value in zip(outs, results):
                    if name:
                        env[name] = value
            results = [env[name] for name in self.output_names]
            return results[0] if len(results) == 1 else tuple(results)

    return OnnxModule()


def _slot(name: str, used: set[str]) -> str:
    """A Module attribute name for an initializer (``0.weight`` -> ``p_0_weight``), distinct."""
    base = re.sub(r"\W", "_", name) or "initializer"
    if base[0].isdigit():
        base = "p_" + base
    return distinct(base, used)
