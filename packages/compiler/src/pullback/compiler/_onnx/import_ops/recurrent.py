"""The recurrent operators ``LSTM``, ``GRU`` and ``RNN``: forward, reverse and bidirectional,
both layouts, ``sequence_lens`` (a sequence's state stops at its length, its outputs past it
are zeros), initial states, LSTM's peepholes and ``input_forget``, GRU's
``linear_before_reset``, ``clip`` and every activation ONNX names. The time loop runs
pullback's ops, so an imported recurrent model trains."""

from __future__ import annotations

from typing import Any, Callable

import numpy as np

import pullback as pb
import pullback.nn.functional as F
from pullback.tensor import Tensor

from . import NodeContext, converter, ints, optional

Activation = Callable[[Tensor], Tensor]


def _activation(name: str, alpha: float | None, beta: float | None) -> Activation:
    a = {"LeakyRelu": 0.01, "ThresholdedRelu": 1.0, "Elu": 1.0, "HardSigmoid": 0.2,
         "Affine": 1.0, "ScaledTanh": 1.0}.get(name, 0.0) if alpha is None else alpha
    b = {"HardSigmoid": 0.5, "ScaledTanh": 1.0}.get(name, 0.0) if beta is None else beta
    table: dict[str, Activation] = {
        "Sigmoid": pb.sigmoid, "Tanh": pb.tanh, "Relu": pb.relu,
        "LeakyRelu": lambda x: F.leaky_relu(x, a),
        "ThresholdedRelu": lambda x: pb.where(x > a, x, pb.zeros_like(x)),
        "ScaledTanh": lambda x: pb.tanh(x * b) * a,
        "HardSigmoid": lambda x: pb.clamp(x * a + b, 0.0, 1.0),
        "Elu": lambda x: F.elu(x, a), "Softsign": F.softsign,
        "Softplus": lambda x: pb.log1p(pb.exp(x)), "Affine": lambda x: x * a + b,
    }
    if name not in table:
        raise NotImplementedError(f"activation {name!r}")
    return table[name]


def _activations(attrs: dict[str, Any], defaults: list[str], directions: int
                 ) -> list[list[Activation]]:
    names = list(attrs.get("activations", defaults * directions))
    alphas = list(attrs.get("activation_alpha", []))
    betas = list(attrs.get("activation_beta", []))
    fns = [_activation(str(n), alphas[i] if i < len(alphas) else None,
                       betas[i] if i < len(betas) else None) for i, n in enumerate(names)]
    per = len(defaults)
    return [fns[d * per:(d + 1) * per] for d in range(directions)]


def _gates(x: Tensor, count: int) -> list[Tensor]:
    size = x.shape[-1] // count
    return [x.narrow(-1, i * size, size) for i in range(count)]


def _run(ins: list[Any], attrs: dict[str, Any], node: NodeContext, gates: int,
         defaults: list[str], cell: Callable[..., tuple[Tensor, Tensor | None]],
         with_cell: bool) -> list[Any]:
    x, w, r = ins[:3]
    bias, lengths, h0 = optional(ins, 3), optional(ins, 4), optional(ins, 5)
    c0 = optional(ins, 6) if with_cell else None
    peepholes = optional(ins, 7) if with_cell else None
    batch_first = int(attrs.get("layout", 0)) == 1
    if batch_first:  # (batch, seq, ...) to (seq, batch, ...)
        x = x.transpose(0, 1)
        h0 = h0.transpose(0, 1) if h0 is not None else None
        c0 = c0.transpose(0, 1) if c0 is not None else None
    steps, batch = x.shape[0], x.shape[1]
    hidden = int(attrs.get("hidden_size", r.shape[-1]))
    direction = str(attrs.get("direction", "forward"))
    directions = 2 if direction == "bidirectional" else 1
    activations = _activations(attrs, defaults, directions)
    clip = attrs.get("clip")
    valid = None
    if lengths is not None:
        valid = np.arange(steps)[:, None] < np.asarray(ints(lengths))[None, :]  # (seq, batch)
    outputs, last_h, last_c = [], [], []
    for d in range(directions):
        reverse = direction == "reverse" or d == 1
        w_d, r_d = w[d], r[d]
        b_d = bias[d] if bias is not None else None
        h = h0[d] if h0 is not None else pb.zeros((batch, hidden), dtype=x.dtype)
        c = (c0[d] if c0 is not None else pb.zeros((batch, hidden), dtype=x.dtype)) \
            if with_cell else None
        p_d = peepholes[d] if peepholes is not None else None
        projected = x @ w_d.transpose(0, 1)  # every step's input projection at once
        if b_d is not None:
            projected = projected + b_d[:gates * hidden]
        ys: list[Tensor | None] = [None] * steps
        for t in (range(steps - 1, -1, -1) if reverse else range(steps)):
            recurrent = h @ r_d.transpose(0, 1)
            if b_d is not None:
                recurrent = recurrent + b_d[gates * hidden:]
            new_h, new_c = cell(projected[t], recurrent, h, c, p_d, r_d, b_d, hidden,
                                activations[d], clip, attrs)
            if valid is not None:
                mask = pb.tensor(valid[t][:, None])
                new_h = pb.where(mask, new_h, h)
                if with_cell:
                    new_c = pb.where(mask, new_c, c)
                ys[t] = pb.where(mask, new_h, pb.zeros_like(new_h))
            else:
                ys[t] = new_h
            h, c = new_h, new_c
        outputs.append(pb.stack(ys, axis=0) if steps else
                       pb.zeros((0, batch, hidden), dtype=x.dtype))
        last_h.append(h)
        last_c.append(c)
    y = pb.stack(outputs, axis=1)  # (seq, directions, batch, hidden)
    y_h = pb.stack(last_h, axis=0)
    results = [y, y_h]
    if with_cell:
        results.append(pb.stack(last_c, axis=0))
    if batch_first:
        results = [y.permute(2, 0, 1, 3)] + [s.transpose(0, 1) for s in results[1:]]
    return results


def _clip(x: Tensor, clip: Any) -> Tensor:
    return x if clip is None else pb.clamp(x, -float(clip), float(clip))


def _lstm_cell(xw: Tensor, hr: Tensor, h: Tensor, c: Tensor, p: Tensor | None, r: Tensor,
               b: Tensor | None, hidden: int, act: list[Activation], clip: Any,
               attrs: dict[str, Any]) -> tuple[Tensor, Tensor]:
    f, g, out_act = act
    xi, xo, xf, xc = _gates(xw, 4)
    hi, ho, hf, hc = _gates(hr, 4)
    pi, po, pf = _gates(p, 3) if p is not None else (None, None, None)
    i_pre = xi + hi + (pi * c if pi is not None else 0)
    i = f(_clip(i_pre, clip))
    if attrs.get("input_forget", 0):
        forget = 1 - i
    else:
        forget = f(_clip(xf + hf + (pf * c if pf is not None else 0), clip))
    candidate = g(_clip(xc + hc, clip))
    new_c = forget * c + i * candidate
    o = f(_clip(xo + ho + (po * new_c if po is not None else 0), clip))
    return o * out_act(new_c), new_c


def _gru_cell(xw: Tensor, hr: Tensor, h: Tensor, c: Any, p: Any, r: Tensor,
              b: Tensor | None, hidden: int, act: list[Activation], clip: Any,
              attrs: dict[str, Any]) -> tuple[Tensor, None]:
    f, g = act
    xz, xr, xh = _gates(xw, 3)
    hz, hr_, hh = _gates(hr, 3)  # hh = H R_h^T + Rb_h
    z = f(_clip(xz + hz, clip))
    reset = f(_clip(xr + hr_, clip))
    if attrs.get("linear_before_reset", 0):
        candidate = g(_clip(xh + reset * hh, clip))
    else:  # the reset applies before the recurrent product
        r_h = r.narrow(0, 2 * hidden, hidden)
        candidate_pre = xh + (reset * h) @ r_h.transpose(0, 1)
        if b is not None:
            candidate_pre = candidate_pre + b[5 * hidden:6 * hidden]
        candidate = g(_clip(candidate_pre, clip))
    return (1 - z) * candidate + z * h, None


def _rnn_cell(xw: Tensor, hr: Tensor, h: Tensor, c: Any, p: Any, r: Tensor, b: Any,
              hidden: int, act: list[Activation], clip: Any, attrs: dict[str, Any]
              ) -> tuple[Tensor, None]:
    return act[0](_clip(xw + hr, clip)), None


@converter("LSTM")
def _lstm(ins: list[Any], attrs: dict[str, Any], node: NodeContext) -> list[Any]:
    return _run(ins, attrs, node, 4, ["Sigmoid", "Tanh", "Tanh"], _lstm_cell, True)


@converter("GRU")
def _gru(ins: list[Any], attrs: dict[str, Any], node: NodeContext) -> list[Any]:
    return _run(ins, attrs, node, 3, ["Sigmoid", "Tanh"], _gru_cell, False)


@converter("RNN")
def _rnn(ins: list[Any], attrs: dict[str, Any], node: NodeContext) -> list[Any]:
    return _run(ins, attrs, node, 1, ["Tanh"], _rnn_cell, False)
