"""Single-step recurrent cells (PyTorch's ``RNNCell``, ``LSTMCell``, ``GRUCell``): the caller
runs the time loop. Each call is one ``nn.recurrent_layer`` op over a sequence of one step."""

from __future__ import annotations

import math
from typing import Any

import pullback
from pullback.dispatch import apply
from pullback.errors import ShapeError
from pullback.tensor import Tensor

from .. import init
from .._ops.recurrent import RECURRENT_LAYER
from ..module import Module
from ..parameter import Parameter


class RNNCellBase(Module):
    """Parameters ``weight_ih`` (chunks*H, I), ``weight_hh`` (chunks*H, H), ``bias_ih``,
    ``bias_hh`` (chunks*H,), all from U(-1/sqrt(H), 1/sqrt(H)), as PyTorch."""

    mode: str

    def __init__(self, input_size: int, hidden_size: int, bias: bool, num_chunks: int,
                 device: Any = None, dtype: Any = None) -> None:
        super().__init__()
        self.input_size, self.hidden_size, self.bias = input_size, hidden_size, bias
        kw = {"device": device, "dtype": dtype}
        self.weight_ih = Parameter(pullback.empty(num_chunks * hidden_size, input_size, **kw))
        self.weight_hh = Parameter(pullback.empty(num_chunks * hidden_size, hidden_size, **kw))
        if bias:
            self.bias_ih = Parameter(pullback.empty(num_chunks * hidden_size, **kw))
            self.bias_hh = Parameter(pullback.empty(num_chunks * hidden_size, **kw))
        else:
            self.register_parameter("bias_ih", None)
            self.register_parameter("bias_hh", None)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        """U(-1/sqrt(hidden_size), 1/sqrt(hidden_size)) for every parameter."""
        bound = 1.0 / math.sqrt(self.hidden_size) if self.hidden_size > 0 else 0.0
        for weight in self.parameters():
            init.uniform_(weight, -bound, bound)

    def _step(self, input: Tensor, states: list[Tensor | None]) -> list[Tensor]:
        """One step from ``states`` (h, and c for LSTM; None means zeros), batched or not."""
        where = type(self).__name__
        if input.ndim not in (1, 2):
            raise ShapeError(f"{where}: expected input to be 1D or 2D, got {input.ndim}D instead")
        batched = input.ndim == 2
        x = input if batched else input.unsqueeze(0)
        if x.shape[-1] != self.input_size:
            raise ShapeError(f"{where}: input has {x.shape[-1]} features, expected "
                             f"input_size={self.input_size}")
        full = []
        for s in states:
            if s is None:
                s = pullback.zeros(x.shape[0], self.hidden_size, dtype=x.dtype, device=x.device)
            elif s.ndim != input.ndim:
                raise ShapeError(f"{where}: expected hidden to be {input.ndim}D like the input, "
                                 f"got {s.ndim}D")
            elif not batched:
                s = s.unsqueeze(0)
            full.append(s)
        h, c = full[0], (full[1] if len(full) > 1 else None)
        out = apply(RECURRENT_LAYER, x.unsqueeze(0), h, c, self.weight_ih, self.weight_hh,
                    self.bias_ih, self.bias_hh, None, mode=self.mode)
        width = self.hidden_size
        new = [out[1, :, :width]] + ([out[1, :, width:]] if c is not None else [])
        return new if batched else [s[0] for s in new]

    def extra_repr(self) -> str:
        s = f"{self.input_size}, {self.hidden_size}"
        if self.bias is not True:
            s += f", bias={self.bias}"
        if getattr(self, "nonlinearity", "tanh") != "tanh":
            s += f", nonlinearity={self.nonlinearity}"
        return s


class RNNCell(RNNCellBase):
    """``h' = tanh(x W_ih^T + b_ih + h W_hh^T + b_hh)`` (``nonlinearity="relu"``: ReLU)."""

    def __init__(self, input_size: int, hidden_size: int, bias: bool = True,
                 nonlinearity: str = "tanh", device: Any = None, dtype: Any = None) -> None:
        if nonlinearity not in ("tanh", "relu"):
            raise ValueError(f"Unknown nonlinearity: {nonlinearity}")
        super().__init__(input_size, hidden_size, bias, num_chunks=1, device=device,
                         dtype=dtype)
        self.nonlinearity = nonlinearity
        self.mode = "RNN_TANH" if nonlinearity == "tanh" else "RNN_RELU"

    def forward(self, input: Tensor, hx: Tensor | None = None) -> Tensor:
        return self._step(input, [hx])[0]


class LSTMCell(RNNCellBase):
    """One LSTM step: ``forward(input, (h, c))`` returns ``(h', c')``."""

    mode = "LSTM"

    def __init__(self, input_size: int, hidden_size: int, bias: bool = True,
                 device: Any = None, dtype: Any = None) -> None:
        super().__init__(input_size, hidden_size, bias, num_chunks=4, device=device,
                         dtype=dtype)

    def forward(self, input: Tensor,
                hx: tuple[Tensor, Tensor] | None = None) -> tuple[Tensor, Tensor]:
        h, c = self._step(input, [None, None] if hx is None else list(hx))
        return h, c


class GRUCell(RNNCellBase):
    """One GRU step: ``forward(input, h)`` returns ``h'``."""

    mode = "GRU"

    def __init__(self, input_size: int, hidden_size: int, bias: bool = True,
                 device: Any = None, dtype: Any = None) -> None:
        super().__init__(input_size, hidden_size, bias, num_chunks=3, device=device,
                         dtype=dtype)

    def forward(self, input: Tensor, hx: Tensor | None = None) -> Tensor:
        return self._step(input, [hx])[0]
