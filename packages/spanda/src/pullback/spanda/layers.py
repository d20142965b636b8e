"""Layers and models over time: every input and output is time-major, ``(T, B, ...)``.

A spiking layer is a synapse (``nn.Linear``, ``nn.Conv2d``) whose currents drive a neuron. The
synapse has no memory, so it runs once over all ``T * B`` rows (one GEMM, not ``T``); the
neuron runs its whole sequence in two fused ops (see :mod:`pullback.spanda.functional`). The
layer-by-layer order gives exactly what a step-by-step loop through the network gives, as long
as no connection goes back in time inside the model (a neuron's own recurrence, ``RLeaky``, is
fine: it loops inside the neuron).
"""

from __future__ import annotations

from typing import Any

import pullback
from pullback import nn
from pullback.nn import Module
from pullback.tensor import Tensor

from ._checks import check_sequence
from ._neurons import LIF, SpikingNeuron

__all__ = ["SpikingConv2d", "SpikingLinear", "SpikingSequential", "detach_states", "per_step",
           "reset_states"]

# Layers whose output at a step depends on that step's input only, deterministically: on an input
# that is the same at every step they run once (see per_step).
_TIME_INVARIANT = (nn.Linear, nn.Conv2d, nn.Flatten)


def _constant_in_time(x: Tensor) -> bool:
    """Whether every step of ``x`` is the same memory (``encode.direct``'s broadcast view)."""
    strides = getattr(x.array, "strides", None)
    return x.shape[0] > 1 and strides is not None and strides[0] == 0


def per_step(module: Module, inputs: Tensor) -> Tensor:
    """``module`` applied to every step of ``inputs`` ``(T, B, ...)``, time folded into the batch.

    A time-invariant layer (Linear, Conv2d, Flatten) given an input that is constant in time (a
    broadcast view, as :func:`pullback.spanda.encode.direct` returns) runs on one step and its
    output is broadcast: the same values, ``T`` times less work.
    """
    steps, batch = inputs.shape[0], inputs.shape[1]
    if isinstance(module, _TIME_INVARIANT) and _constant_in_time(inputs):
        out = module(inputs[0])
        return out.unsqueeze(0).broadcast_to((steps,) + tuple(out.shape))
    if isinstance(module, nn.Linear):  # folds leading dims itself (one GEMM)
        return module(inputs)
    out = module(inputs.reshape((steps * batch,) + tuple(inputs.shape[2:])))
    return out.reshape((steps, batch) + tuple(out.shape[1:]))


def reset_states(model: Module) -> None:
    """Start every neuron in ``model`` over from zeros (snnTorch's ``utils.reset``)."""
    for m in model.modules():
        if isinstance(m, SpikingNeuron):
            m.reset_state()


def detach_states(model: Module) -> None:
    """Cut every neuron's kept state in ``model`` from the graph (truncated BPTT)."""
    for m in model.modules():
        if isinstance(m, SpikingNeuron):
            m.detach_state()


class _SpikingLayer(Module):
    """A synapse (``self.synapse``) driving a neuron (``self.neuron``), over all time steps."""

    synapse: Module
    neuron: SpikingNeuron

    def forward(self, inputs: Tensor, return_membrane: bool = False) -> Any:
        """Spikes ``(T, B, ...)`` of ``inputs`` ``(T, B, ...)``; with ``return_membrane``,
        ``(spikes, membrane)``. The neuron keeps its state between calls (see
        :func:`reset_states`)."""
        check_sequence(type(self).__name__, inputs)
        traces = self.neuron.run(per_step(self.synapse, inputs))
        return (traces[0], traces[-1]) if return_membrane else traces[0]


class SpikingLinear(_SpikingLayer):
    """``nn.Linear`` currents into spiking neurons.

    Args:
        in_features, out_features, bias, device, dtype: as ``nn.Linear``.
        neuron: the neurons (default ``LIF(beta=0.9)``).

    Example:
        >>> import pullback
        >>> from pullback import spanda
        >>> layer = spanda.SpikingLinear(784, 100, spanda.LIF(beta=0.95))
        >>> layer(pullback.rand(25, 8, 784)).shape
        (25, 8, 100)
    """

    def __init__(self, in_features: int, out_features: int, neuron: SpikingNeuron | None = None,
                 bias: bool = True, device: Any = None, dtype: Any = None) -> None:
        super().__init__()
        self.synapse = nn.Linear(in_features, out_features, bias=bias, device=device, dtype=dtype)
        self.neuron = _neuron(type(self).__name__, neuron)


def _neuron(layer: str, neuron: Any) -> SpikingNeuron:
    """The layer's neurons: ``neuron``, which must be a SpikingNeuron, or ``LIF(beta=0.9)``."""
    if neuron is None:
        return LIF(beta=0.9)
    if not isinstance(neuron, SpikingNeuron):
        raise TypeError(f"{layer}: neuron must be a SpikingNeuron (e.g. spanda.LIF(beta=0.9)), "
                        f"got {type(neuron).__name__} {neuron!r}")
    return neuron


class SpikingConv2d(_SpikingLayer):
    """``nn.Conv2d`` currents into spiking neurons; inputs ``(T, B, C, H, W)``.

    Args:
        in_channels, out_channels, kernel_size, stride, padding, bias: as ``nn.Conv2d``.
        neuron: the neurons (default ``LIF(beta=0.9)``).
    """

    def __init__(self, in_channels: int, out_channels: int, kernel_size: Any, stride: Any = 1,
                 padding: Any = 0, neuron: SpikingNeuron | None = None, bias: bool = True,
                 device: Any = None, dtype: Any = None) -> None:
        super().__init__()
        self.synapse = nn.Conv2d(in_channels, out_channels, kernel_size, stride=stride,
                                 padding=padding, bias=bias, device=device, dtype=dtype)
        self.neuron = _neuron(type(self).__name__, neuron)


class SpikingSequential(nn.Sequential):
    """Layers run over ``T`` time steps: spiking layers, bare neurons (fed the previous layer's
    output as current, snnTorch's ``nn.Sequential(nn.Linear(...), snn.Leaky(...))`` style) and
    any per-step module (``nn.Flatten``, ``nn.MaxPool2d``, ``nn.Dropout``..., applied to each
    step).

    Example:
        >>> import pullback
        >>> from pullback import nn, spanda
        >>> model = spanda.SpikingSequential(
        ...     nn.Flatten(), spanda.SpikingLinear(784, 100, spanda.LIF(0.95)),
        ...     nn.Linear(100, 10), spanda.LIF(0.95))
        >>> x = spanda.encode.direct(pullback.rand(8, 1, 28, 28), num_steps=25)
        >>> model(x, num_steps=25).shape
        (25, 8, 10)
    """

    def forward(self, inputs: Tensor, num_steps: int | None = None, *, tbptt: int | None = None,
                return_membrane: bool = False) -> Any:
        """Run every layer over all time steps, each neuron starting from zeros.

        Args:
            inputs: ``(T, B, ...)``, time first (see :mod:`pullback.spanda.encode`).
            num_steps: ``T``; when given it must be the length of the time axis.
            tbptt: truncated BPTT: gradients flow through at most this many steps of neuron
                state (the state is detached between windows of ``tbptt`` steps; outputs are
                unchanged). ``None``: through all steps.
            return_membrane: also return the last neuron's membrane ``(T, B, ...)``.

        Returns:
            The last layer's output ``(T, B, ...)`` (spikes for a spiking last layer), or
            ``(output, membrane)``.
        """
        steps = check_sequence("SpikingSequential", inputs, num_steps)
        window = steps if tbptt is None else _window(tbptt)
        if return_membrane and not isinstance(self[len(self) - 1], (SpikingNeuron, _SpikingLayer)):
            raise ValueError("SpikingSequential: return_membrane needs a neuron or a spiking layer "
                             f"last, got {type(self[len(self) - 1]).__name__}")
        reset_states(self)
        outputs, membranes = [], []
        for start in range(0, steps, window):
            if start:
                detach_states(self)
            out, mem = self._run(inputs if window >= steps else inputs[start:start + window],
                                 return_membrane)
            outputs.append(out)
            membranes.append(mem)
        output = outputs[0] if len(outputs) == 1 else pullback.cat(outputs, axis=0)
        if not return_membrane:
            return output
        return output, membranes[0] if len(membranes) == 1 else pullback.cat(membranes, axis=0)

    def _run(self, x: Tensor, return_membrane: bool) -> tuple[Tensor, Tensor | None]:
        mem = None
        last = len(self) - 1
        for i, module in enumerate(self):
            if isinstance(module, SpikingNeuron):
                traces = module.run(x)
                x, mem = traces[0], traces[-1]
            elif isinstance(module, _SpikingLayer):
                if i == last and return_membrane:
                    x, mem = module(x, return_membrane=True)
                else:
                    x = module(x)
            else:
                x = per_step(module, x)
        return x, mem

    def reset_state(self) -> None:
        """Start every neuron over from zeros (each forward does it first)."""
        reset_states(self)


def _window(tbptt: Any) -> int:
    if not isinstance(tbptt, int) or isinstance(tbptt, bool) or tbptt < 1:
        raise ValueError(f"SpikingSequential: tbptt must be a positive int (steps per window) or "
                         f"None, got {tbptt!r}")
    return tbptt
