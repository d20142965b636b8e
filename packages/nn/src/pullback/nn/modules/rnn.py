"""Recurrent layers with PyTorch's constructors, parameters and semantics: ``RNN`` (tanh or
ReLU), ``LSTM`` (with ``proj_size``) and ``GRU``, over several layers and both directions, on
padded or packed sequences; and the single-step cells ``RNNCell``, ``LSTMCell``, ``GRUCell``.

Each layer and direction runs as one ``nn.recurrent_layer`` op over the whole sequence (see
:mod:`pullback.nn._ops.recurrent`); a cell is the same op over one step.
"""

from __future__ import annotations

import math
import numbers
import warnings
from typing import Any

import pullback
from pullback.dispatch import apply
from pullback.errors import ArgumentError, DTypeError, ShapeError
from pullback.tensor import Tensor

from .. import functional as F
from .. import init
from .._ops.recurrent import RECURRENT_LAYER
from .._ops.recurrent_cells import CELLS
from ..module import Module
from ..parameter import Parameter
from ..utils.rnn import PackedSequence, lengths_from_batch_sizes, pack_time_major, \
    unpack_time_major

_WEIGHT_NAMES = ("weight_ih", "weight_hh", "bias_ih", "bias_hh", "weight_hr")


def _check_sizes(where: str, **sizes: Any) -> None:
    for name, value in sizes.items():
        if not isinstance(value, int) or isinstance(value, bool):
            raise TypeError(f"{where}: {name} should be of type int, got: "
                            f"{type(value).__name__}")
        if value <= 0:
            raise ValueError(f"{where}: {name} must be greater than zero, got {value}")


class RNNBase(Module):
    """The multi-layer recurrent network behind ``RNN``, ``LSTM`` and ``GRU`` (PyTorch's
    ``nn.RNNBase``); ``mode`` is ``"LSTM"``, ``"GRU"``, ``"RNN_TANH"`` or ``"RNN_RELU"``.

    Parameters are named as in PyTorch (``weight_ih_l0``, ``bias_hh_l1_reverse``,
    ``weight_hr_l0`` with a projection...), so a PyTorch state dict loads as is. All start
    from U(-1/sqrt(hidden_size), 1/sqrt(hidden_size)).
    """

    def __init__(self, mode: str, input_size: int, hidden_size: int, num_layers: int = 1,
                 bias: bool = True, batch_first: bool = False, dropout: float = 0.0,
                 bidirectional: bool = False, proj_size: int = 0, device: Any = None,
                 dtype: Any = None) -> None:
        super().__init__()
        where = type(self).__name__
        if mode not in CELLS:
            raise ValueError(f"{where}: unrecognized RNN mode {mode!r} (one of {sorted(CELLS)})")
        if (not isinstance(dropout, numbers.Number) or isinstance(dropout, bool)
                or not 0 <= dropout <= 1):
            raise ValueError(f"{where}: dropout should be a number in range [0, 1] representing "
                             f"the probability of an element being zeroed, got {dropout!r}")
        if dropout > 0 and num_layers == 1:
            warnings.warn(f"{where}: dropout option adds dropout after all but last recurrent "
                          f"layer, so non-zero dropout expects num_layers greater than 1, but "
                          f"got dropout={dropout} and num_layers={num_layers}", stacklevel=2)
        for name, flag in (("bias", bias), ("batch_first", batch_first)):
            if not isinstance(flag, bool):
                raise TypeError(f"{where}: {name} should be of type bool, got: "
                                f"{type(flag).__name__}")
        _check_sizes(where, input_size=input_size, hidden_size=hidden_size,
                     num_layers=num_layers)
        if proj_size < 0:
            raise ValueError(f"{where}: proj_size should be a positive integer or zero to "
                             "disable projections")
        if proj_size >= hidden_size:
            raise ValueError(f"{where}: proj_size has to be smaller than hidden_size")
        if proj_size and mode != "LSTM":
            raise ValueError("proj_size argument is only supported for LSTM, not RNN or GRU")
        self.mode = mode
        self.input_size, self.hidden_size, self.num_layers = input_size, hidden_size, num_layers
        self.bias, self.batch_first, self.dropout = bias, batch_first, float(dropout)
        self.bidirectional, self.proj_size = bidirectional, proj_size
        gate_size = CELLS[mode].gates * hidden_size
        state_size = proj_size or hidden_size
        directions = 2 if bidirectional else 1
        kw = {"device": device, "dtype": dtype}
        self._flat_weights_names: list[str] = []
        self._all_weights: list[list[str]] = []
        for layer in range(num_layers):
            layer_input = input_size if layer == 0 else state_size * directions
            for direction in range(directions):
                shapes = {"weight_ih": (gate_size, layer_input),
                          "weight_hh": (gate_size, state_size)}
                if bias:
                    shapes.update(bias_ih=(gate_size,), bias_hh=(gate_size,))
                if proj_size:
                    shapes["weight_hr"] = (proj_size, hidden_size)
                suffix = f"_l{layer}" + ("_reverse" if direction else "")
                names = [name + suffix for name in shapes]
                for name, shape in zip(names, shapes.values()):
                    setattr(self, name, Parameter(pullback.empty(*shape, **kw)))
                self._flat_weights_names.extend(names)
                self._all_weights.append(names)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        """Every parameter from U(-1/sqrt(hidden_size), 1/sqrt(hidden_size)) (PyTorch's)."""
        bound = 1.0 / math.sqrt(self.hidden_size)
        for weight in self.parameters():
            init.uniform_(weight, -bound, bound)

    def flatten_parameters(self) -> None:
        """Does nothing: PyTorch packs the weights into one buffer for cuDNN here; the weights
        are always usable as they are in pullback."""

    @property
    def all_weights(self) -> list[list[Parameter]]:
        """The parameters per layer and direction, in PyTorch's order."""
        return [[getattr(self, name) for name in names] for names in self._all_weights]

    @property
    def _flat_weights(self) -> list[Parameter]:
        return [getattr(self, name) for name in self._flat_weights_names]

    def _weights(self, index: int) -> list[Any]:
        """(w_ih, w_hh, b_ih, b_hh, w_hr) of one layer and direction (None where absent)."""
        named = {name.split("_l")[0]: getattr(self, name) for name in self._all_weights[index]}
        return [named.get(kind) for kind in _WEIGHT_NAMES]

    def forward(self, input: Tensor | PackedSequence, hx: Any = None) -> tuple[Any, Any]:
        """Run the layers over ``input``: (T, B, input_size) ((B, T, ...) with
        ``batch_first``), (T, input_size) unbatched, or a :class:`PackedSequence`.

        ``hx`` is the initial state, (num_layers * directions, B, H) (an ``(h_0, c_0)`` pair
        for LSTM), zeros by default. Returns ``(output, h_n)`` (``(output, (h_n, c_n))`` for
        LSTM); ``output`` is packed when ``input`` was.
        """
        where = type(self).__name__
        is_lstm = self.mode == "LSTM"
        packed = isinstance(input, PackedSequence)
        batched = True
        lengths = None
        if packed:
            data, batch_sizes, sorted_indices, unsorted_indices = input
            lengths = lengths_from_batch_sizes(batch_sizes)
            x = unpack_time_major(data, batch_sizes)
        else:
            if input.ndim not in (2, 3):
                raise ShapeError(f"{where}: expected input to be 2D or 3D, got {input.ndim}D "
                                 f"(shape {tuple(input.shape)})")
            batched = input.ndim == 3
            x = input if batched else input.unsqueeze(1)
            if batched and self.batch_first:
                x = x.transpose(0, 1)
            sorted_indices = unsorted_indices = None
        if x.shape[-1] != self.input_size:
            raise ShapeError(f"{where}: input.size(-1) must be equal to input_size. Expected "
                             f"{self.input_size}, got {x.shape[-1]}")
        weight_dtype = self._flat_weights[0].dtype
        if x.dtype != weight_dtype:
            raise DTypeError(f"{where}: input dtype ({x.dtype}) does not match weight dtype "
                             f"({weight_dtype}); convert the input or the model with .to()")
        h0, c0 = self._initial_state(hx, x, batched, sorted_indices)
        output, h_n, c_n = self._run_layers(x, h0, c0, lengths)
        if packed:
            output = PackedSequence(pack_time_major(output, batch_sizes), batch_sizes,
                                    sorted_indices, unsorted_indices)
            if unsorted_indices is not None:
                h_n = pullback.index_select(h_n, 1, unsorted_indices)
                c_n = None if c_n is None else pullback.index_select(c_n, 1, unsorted_indices)
        elif not batched:
            output, h_n = output[:, 0], h_n[:, 0]
            c_n = None if c_n is None else c_n[:, 0]
        elif self.batch_first:
            output = output.transpose(0, 1)
        return output, ((h_n, c_n) if is_lstm else h_n)

    def _initial_state(self, hx: Any, x: Tensor, batched: bool,
                       sorted_indices: Tensor | None) -> tuple[Tensor, Tensor | None]:
        """(h_0, c_0) as (layers * directions, B, width), checked, in the sorted batch order."""
        where = type(self).__name__
        is_lstm = self.mode == "LSTM"
        layers = self.num_layers * (2 if self.bidirectional else 1)
        batch = x.shape[1]
        shapes = [(layers, batch, self.proj_size or self.hidden_size)]
        if is_lstm:
            shapes.append((layers, batch, self.hidden_size))
        if hx is None:
            states = [pullback.zeros(*s, dtype=x.dtype, device=x.device) for s in shapes]
        else:
            states = list(hx) if is_lstm else [hx]
            if len(states) != len(shapes):
                wanted = "an (h_0, c_0) pair" if is_lstm else "a tensor"
                raise ArgumentError(f"{where}: hx should be {wanted}")
            expected_ndim = 3 if batched else 2
            for s in states:
                if s.ndim != expected_ndim:
                    raise ShapeError(f"{where}: for {'batched 3-D' if batched else 'unbatched 2-D'}"
                                     f" input, hx should also be {expected_ndim}-D but got "
                                     f"{s.ndim}-D tensor")
            if not batched:
                states = [s.unsqueeze(1) for s in states]
            if sorted_indices is not None:
                states = [pullback.index_select(s, 1, sorted_indices) for s in states]
            for s, shape in zip(states, shapes):
                if tuple(s.shape) != shape:
                    raise ShapeError(f"{where}: expected hidden size {shape}, got "
                                     f"{list(s.shape)}")
        return states[0], (states[1] if is_lstm else None)

    def _run_layers(self, x: Tensor, h0: Tensor, c0: Tensor | None,
                    lengths: tuple[int, ...] | None) -> tuple[Tensor, Tensor, Tensor | None]:
        steps = x.shape[0]
        width = self.proj_size or self.hidden_size
        directions = 2 if self.bidirectional else 1
        finals_h, finals_c = [], []
        layer_input = x
        for layer in range(self.num_layers):
            outputs = []
            for direction in range(directions):
                index = layer * directions + direction
                out = apply(RECURRENT_LAYER, layer_input, h0[index],
                            None if c0 is None else c0[index], *self._weights(index),
                            mode=self.mode, reverse=bool(direction), lengths=lengths)
                outputs.append(out[:steps, :, :width])
                finals_h.append(out[steps, :, :width])
                if c0 is not None:
                    finals_c.append(out[steps, :, width:])
            layer_input = outputs[0] if directions == 1 else pullback.cat(outputs, axis=-1)
            if self.dropout and self.training and layer < self.num_layers - 1:
                layer_input = F.dropout(layer_input, self.dropout, True)
        h_n = pullback.stack(finals_h, axis=0)
        c_n = pullback.stack(finals_c, axis=0) if finals_c else None
        return layer_input, h_n, c_n

    def extra_repr(self) -> str:
        s = f"{self.input_size}, {self.hidden_size}"
        if self.proj_size:
            s += f", proj_size={self.proj_size}"
        if self.num_layers != 1:
            s += f", num_layers={self.num_layers}"
        for name, default in (("bias", True), ("batch_first", False), ("dropout", 0.0),
                              ("bidirectional", False)):
            if getattr(self, name) != default:
                s += f", {name}={getattr(self, name)}"
        return s


class RNN(RNNBase):
    """Elman RNN, ``h_t = tanh(x_t W_ih^T + b_ih + h_{t-1} W_hh^T + b_hh)`` (or ReLU).

    Args (PyTorch's, in its order): ``input_size``, ``hidden_size``, ``num_layers=1``,
    ``nonlinearity="tanh"``, ``bias=True``, ``batch_first=False``, ``dropout=0.0``,
    ``bidirectional=False``, ``device``, ``dtype``.

    Example:
        >>> import pullback
        >>> from pullback import nn
        >>> rnn = nn.RNN(4, 8, num_layers=2)
        >>> output, h_n = rnn(pullback.randn(5, 3, 4))
        >>> output.shape, h_n.shape
        ((5, 3, 8), (2, 3, 8))
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        if "proj_size" in kwargs:
            raise ValueError("proj_size argument is only supported for LSTM, not RNN or GRU")
        if len(args) > 3:
            nonlinearity = args[3]
            args = args[:3] + args[4:]
        else:
            nonlinearity = kwargs.pop("nonlinearity", "tanh")
        modes = {"tanh": "RNN_TANH", "relu": "RNN_RELU"}
        if nonlinearity not in modes:
            raise ValueError(f"Unknown nonlinearity '{nonlinearity}'. Select from 'tanh' or "
                             "'relu'.")
        super().__init__(modes[nonlinearity], *args, **kwargs)
        self.nonlinearity = nonlinearity


class LSTM(RNNBase):
    """Long short-term memory (gates i, f, g, o as PyTorch), optionally with a projection of
    the hidden state to ``proj_size`` (Sak et al. 2014).

    Args (PyTorch's): ``input_size``, ``hidden_size``, ``num_layers=1``, ``bias=True``,
    ``batch_first=False``, ``dropout=0.0``, ``bidirectional=False``, ``proj_size=0``,
    ``device``, ``dtype``. ``forward(input, (h_0, c_0))`` returns
    ``(output, (h_n, c_n))``.

    Example:
        >>> import pullback
        >>> from pullback import nn
        >>> lstm = nn.LSTM(4, 8, batch_first=True, bidirectional=True)
        >>> output, (h_n, c_n) = lstm(pullback.randn(3, 5, 4))
        >>> output.shape, h_n.shape, c_n.shape
        ((3, 5, 16), (2, 3, 8), (2, 3, 8))
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__("LSTM", *args, **kwargs)


class GRU(RNNBase):
    """Gated recurrent unit (gates r, z, n as PyTorch: the reset gate multiplies the hidden
    projection including its bias).

    Args (PyTorch's): ``input_size``, ``hidden_size``, ``num_layers=1``, ``bias=True``,
    ``batch_first=False``, ``dropout=0.0``, ``bidirectional=False``, ``device``, ``dtype``.
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        if "proj_size" in kwargs:
            raise ValueError("proj_size argument is only supported for LSTM, not RNN or GRU")
        super().__init__("GRU", *args, **kwargs)


from .rnn_cells import GRUCell, LSTMCell, RNNCell, RNNCellBase  # noqa: E402 - PyTorch's path

__all__ = ["GRU", "GRUCell", "LSTM", "LSTMCell", "RNN", "RNNBase", "RNNCell", "RNNCellBase"]
