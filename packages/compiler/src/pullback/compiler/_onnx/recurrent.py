"""The ``"onnx"`` rule of ``nn.recurrent_layer`` (one layer and direction of an RNN, LSTM or
GRU, see :mod:`pullback.nn._ops.recurrent`): ONNX's ``RNN``, ``GRU`` or ``LSTM`` operator, as
``torch.onnx.export`` writes them.

The weights are reordered into ONNX's gate order (PyTorch's LSTM gates are i, f, g, o and
ONNX's i, o, f, c; PyTorch's GRU gates r, z, n and ONNX's z, r, h, with
``linear_before_reset=1``, PyTorch's formulation) and the biases concatenated, as
initializers. Packed sequences are not exported (packing reads the lengths' values, which the
tracer refuses).

The op's one output packs ``[h_t, c_t]`` for every step and the final state (``out[T]``).
ONNX's LSTM gives the hidden state of every step but only the final cell state, and has no
projection (``proj_size``). Where a reader of the output reads a cell state before the last
step, or the LSTM has a projection, the rule writes the steps out instead (the sequence length
is static; only the batch may vary); otherwise the rows of cell states that nothing reads hold
the final cell state.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .._ir import Node, Value
from .builder import OnnxBuilder
from .elementwise import OnnxRule

# ONNX's gate blocks, as indices of PyTorch's: LSTM i o f c <- i f g o, GRU z r h <- r z n
_GATE_ORDER = {"LSTM": [0, 3, 1, 2], "GRU": [1, 0, 2], "RNN_TANH": [0], "RNN_RELU": [0]}
_OPERATOR = {"LSTM": "LSTM", "GRU": "GRU", "RNN_TANH": "RNN", "RNN_RELU": "RNN"}


def _recurrent_layer(node: Node, b: OnnxBuilder) -> None:
    x, h0, c0, w_ih, w_hh, b_ih, b_hh, w_hr = node.inputs[:8]
    mode = node.attrs["mode"]
    for weight in (w_ih, w_hh, b_ih, b_hh, w_hr):
        if isinstance(weight, Value) and weight not in b.graph.constants:
            raise b.fail("weights computed from the model's inputs (ONNX's recurrent "
                         "operators take them reordered, as initializers)")
    if node.attrs.get("lengths") is not None:
        # (packing reads the lengths' values: the tracer refuses it before this rule runs)
        raise b.fail("packed sequences (per-sequence lengths) are not exported")
    if w_hr is not None or (mode == "LSTM" and _reads_cell_states(node, b)):
        _unrolled_lstm(node, b)
        return
    _operator(node, b, mode)


def _reordered(b: OnnxBuilder, v: Any, mode: str) -> np.ndarray | None:
    """A weight or bias (gate blocks along its first axis) in ONNX's gate order."""
    if v is None:
        return None
    array = np.asarray(b.graph.constants[v])
    blocks = np.split(array, len(_GATE_ORDER[mode]), axis=0)
    return np.concatenate([blocks[k] for k in _GATE_ORDER[mode]], axis=0)


def _operator(node: Node, b: OnnxBuilder, mode: str) -> None:
    x, h0, c0, w_ih, w_hh, b_ih, b_hh = node.inputs[:7]
    hidden = w_hh.shape[1]
    steps = x.shape[0]
    stem = b.graph.constant_names.get(w_ih, "weight_ih")

    def hint(kind: str) -> str:  # lstm.weight_ih_l0 -> lstm.W_l0, as ONNX names the inputs
        return stem.replace("weight_ih", kind)

    weights = [b.initializer(_reordered(b, w, mode)[None], hint(kind))
               for w, kind in ((w_ih, "W"), (w_hh, "R"))]
    if b_ih is not None or b_hh is not None:
        biases = [_reordered(b, v, mode) if v is not None else
                  np.zeros(w_hh.shape[0], w_hh.dtype) for v in (b_ih, b_hh)]
        weights.append(b.initializer(np.concatenate(biases)[None], hint("B")))
    else:
        weights.append("")
    weights.append("")  # sequence_lens: every sequence runs the whole length
    states = [b.emit("Unsqueeze", [b.name(s), b.ints([0], "axes")])
              for s in ((h0, c0) if mode == "LSTM" else (h0,))]
    attrs: dict[str, Any] = {"hidden_size": int(hidden),
                             "direction": "reverse" if node.attrs.get("reverse") else "forward"}
    if mode.startswith("RNN"):
        attrs["activations"] = ["Relu" if mode == "RNN_RELU" else "Tanh"]
    if mode == "GRU":
        attrs["linear_before_reset"] = 1
    outputs = [b.fresh("rnn_y"), b.fresh("rnn_h")] + ([b.fresh("rnn_c")] if mode == "LSTM"
                                                       else [])
    b.emit(_OPERATOR[mode], [b.name(x)] + weights + states, outputs, **attrs)
    every_h = b.emit("Squeeze", [outputs[0], b.ints([1], "axes")])  # (T, B, H)
    hs = b.emit("Concat", [every_h, outputs[1]], axis=0)  # (T + 1, B, H)
    if mode != "LSTM":
        b.emit("Identity", [hs], [b.output(node.output)])
        return
    cs = b.emit("Expand", [outputs[2], b.ints([steps + 1, 1, 1])])  # read at out[T] only
    b.emit("Concat", [hs, cs], [b.output(node.output)], axis=-1)


def _reads_cell_states(node: Node, b: OnnxBuilder) -> bool:
    """Whether anything reads ``out[t, :, H:]`` for a step ``t`` before the last (what every
    reader reads is found by applying its index to a mask of the output)."""
    out = node.output
    if out in b.graph.outputs:
        return True
    width = node.inputs[1].shape[-1]
    read = np.zeros(out.shape, bool)
    for reader in b.graph.nodes:
        if out not in reader.input_values():
            continue
        if reader.op != "getitem" or reader.inputs[0] is not out:
            return True
        read[reader.attrs["key"]] = True
    return bool(read[:-1, :, width:].any())


def _unrolled_lstm(node: Node, b: OnnxBuilder) -> None:
    """The LSTM's steps written out: one input projection, then per step the gates, the cell
    state and the hidden state (projected with ``w_hr``)."""
    x, h0, c0, w_ih, w_hh, b_ih, b_hh, w_hr = node.inputs[:8]
    hidden = w_hh.shape[0] // 4

    def transposed(v: Value) -> str:
        return b.initializer(np.ascontiguousarray(np.asarray(b.graph.constants[v]).T),
                             b.graph.constant_names.get(v, f"c{v.id}") + ".T")

    projection = b.emit("MatMul", [b.name(x), transposed(w_ih)])  # (T, B, 4H)
    bias = [np.asarray(b.graph.constants[v]) for v in (b_ih, b_hh) if v is not None]
    if bias:
        projection = b.emit("Add", [projection, b.constant(sum(bias), "lstm_bias")])
    w_hh_t, w_hr_t = transposed(w_hh), (transposed(w_hr) if w_hr is not None else None)
    split = b.ints([hidden] * 4, "split")
    h, c = b.name(h0), b.name(c0)
    rows: dict[int, str] = {}
    steps = x.shape[0]
    order = range(steps - 1, -1, -1) if node.attrs.get("reverse") else range(steps)
    for t in order:
        pre = b.emit("Gather", [projection, b.constant(np.asarray(t, np.int64), "step")],
                     axis=0)
        gates = b.emit("Add", [pre, b.emit("MatMul", [h, w_hh_t])])
        names = [b.fresh(f"lstm_gate{t}_{k}") for k in range(4)]
        b.emit("Split", [gates, split], names, axis=-1)
        i, f, o = (b.emit("Sigmoid", [names[k]]) for k in (0, 1, 3))
        g = b.emit("Tanh", [names[2]])
        c = b.emit("Add", [b.emit("Mul", [f, c]), b.emit("Mul", [i, g])])
        h = b.emit("Mul", [o, b.emit("Tanh", [c])])
        if w_hr_t is not None:
            h = b.emit("MatMul", [h, w_hr_t])
        rows[t] = b.emit("Unsqueeze", [b.emit("Concat", [h, c], axis=-1), b.ints([0], "axes")])
    final = b.emit("Unsqueeze", [b.emit("Concat", [h, c], axis=-1), b.ints([0], "axes")])
    b.emit("Concat", [rows[t] for t in range(steps)] + [final], [b.output(node.output)], axis=0)


RECURRENT_RULES: dict[str, OnnxRule] = {"nn.recurrent_layer": _recurrent_layer}
