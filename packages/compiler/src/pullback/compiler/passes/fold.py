"""Folding per-channel affine arithmetic into the convolution or linear layer before it.

An inference graph of ``Conv2d`` then ``BatchNorm2d`` in eval mode computes
``(conv(x) - mean) * rsqrt(var + eps) * gamma + beta``; once the weights are constants (an
exported graph) and constant folding has computed ``rsqrt(var + eps)``, each step is an add, a
subtract, a multiply or a divide of the convolution's output by a constant that varies along the
channel axis only. Such a step is folded into the convolution's weight and bias (``W * s``,
``b * s + c``), and the chain disappears: batch norm costs nothing at inference. The same holds
for ``Linear`` then ``BatchNorm1d`` (constants varying along the last axis).

Folding reorders float arithmetic (``(W x) s`` becomes ``(W s) x``), so results move by a few
ulp: the pass is not exact. It applies only when the product's output is read by that one step
alone and the step neither broadcasts nor promotes.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .._ir import Graph, Node, Value, resolve
from ._registry import graph_pass

# the product ops and the axis of their output that indexes the weight's first axis
_CHANNEL_AXIS = {"nn.conv2d": 1, "nn.conv3d": 1, "nn.linear": -1}
_STEPS = ("add", "sub", "mul", "div")


def _per_channel(graph: Graph, operand: Any, out: Value, axis: int) -> np.ndarray | None:
    """``operand`` as a vector along ``axis`` of ``out`` (length 1 or the channel count), when
    it is a constant or a number that varies along that axis only; else None."""
    if isinstance(operand, (int, float)) and not isinstance(operand, bool):
        return np.asarray([operand], dtype=out.dtype)
    if operand.__class__ is not Value or operand not in graph.constants:
        return None
    array = np.asarray(graph.constants[operand])
    if array.dtype != out.dtype or array.ndim > out.ndim:
        return None
    padded = (1,) * (out.ndim - array.ndim) + array.shape
    channel = axis % out.ndim
    if any(s != 1 for k, s in enumerate(padded) if k != channel):
        return None
    if padded[channel] not in (1, out.shape[channel]):
        return None
    return array.reshape(-1)


def _fold(graph: Graph, product: Node, step: Node, vector: np.ndarray, product_first: bool
          ) -> bool:
    """Rewrite ``product``'s weight and bias so that its output is ``step``'s; False when the
    step cannot be folded (``c / conv``)."""
    weight_value, bias_value = product.inputs[1], product.inputs[2] if len(product.inputs) > 2 \
        else None
    weight = np.asarray(graph.constants[weight_value])
    channels = weight.shape[0]
    vector = np.broadcast_to(vector, (channels,))
    bias = (np.zeros(channels, weight.dtype) if bias_value is None
            else np.asarray(graph.constants[bias_value]))
    column = (channels,) + (1,) * (weight.ndim - 1)
    if step.op == "mul":
        weight, bias = weight * vector.reshape(column), bias * vector
    elif step.op == "div" and product_first:
        weight, bias = weight / vector.reshape(column), bias / vector
    elif step.op == "add":
        bias = bias + vector
    elif step.op == "sub":
        weight, bias = (weight, bias - vector) if product_first else (-weight, vector - bias)
    else:
        return False
    inputs = list(product.inputs)
    inputs[1] = graph.add_constant(weight.astype(weight_value.dtype, copy=False))
    new_bias = graph.add_constant(bias.astype(weight_value.dtype, copy=False))
    names = graph.constant_names
    if weight_value in names:
        names[inputs[1]] = names[weight_value]
        names[new_bias] = names.get(bias_value, names[weight_value] + ".bias")
    if len(inputs) > 2:
        inputs[2] = new_bias
    else:
        inputs.append(new_bias)
    product.inputs = tuple(inputs)
    return True


@graph_pass("fold_batch_norm", exact=False)
def fold_batch_norm(graph: Graph) -> Graph:
    """Fold per-channel constant add/sub/mul/div steps after ``conv``/``linear`` (batch norm in
    eval mode) into the product's weight and bias."""
    results = set(graph.result_values())
    readers: dict[Value, int] = {}
    for node in graph.nodes:
        for v in dict.fromkeys(node.input_values()):
            readers[v] = readers.get(v, 0) + 1
    mapping: dict[Value, Value] = {}
    kept = []
    for node in graph.nodes:
        node.inputs = tuple(resolve(a, mapping) for a in node.inputs)
        if node.op in _STEPS and len(node.inputs) == 2 and not node.attrs:
            folded = _try_fold(graph, node, readers, results)
            if folded is not None:
                mapping[node.output] = folded
                readers[folded] = readers.get(node.output, 0)
                continue
        kept.append(node)
    graph.nodes = kept
    graph.substitute(mapping)
    return graph


def _try_fold(graph: Graph, step: Node, readers: dict[Value, int], results: set[Value]
              ) -> Value | None:
    for position, x in enumerate(step.inputs):
        if x.__class__ is not Value or x.producer is None:
            continue
        product = x.producer
        axis = _CHANNEL_AXIS.get(product.op)
        if (axis is None or len(product.outputs) != 1 or readers.get(x, 0) != 1 or x in results
                or step.output.shape != x.shape or step.output.dtype != x.dtype):
            continue
        if any(w.__class__ is not Value or w not in graph.constants
               for w in product.inputs[1:] if w is not None):
            continue
        vector = _per_channel(graph, step.inputs[1 - position], x, axis)
        if vector is None:
            continue
        if _fold(graph, product, step, vector, product_first=position == 0):
            return x
    return None
