"""Counting what a spiking network does: spikes, silent neuron-steps and synaptic operations per
layer, next to the multiply-accumulates of the same-size dense ANN.

    with spanda.activity.record(model) as layers:
        model(inputs, num_steps=25)
    for layer in layers:
        print(layer.name, layer.sparsity, layer.synaptic_ops, layer.ann_macs)

A synaptic operation is one weight applied to one arriving input: an input spike into a Linear
layer of ``n`` outputs costs ``n`` accumulates, and a silent input costs nothing (event-driven
hardware; pullback itself computes dense products). Inputs that are not spikes (a direct
current into the first layer) cost multiply-accumulates instead, every one counted, as for
the ANN; an input that is the same at every step (``encode.direct``) is counted once, since a
layer can compute it once (pullback's layers do).
"""

from __future__ import annotations

import math
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, Iterator

import pullback
from pullback.nn import Module
from pullback.nn import functional as F
from pullback.tensor import Tensor

from .layers import SpikingConv2d, SpikingLinear, _constant_in_time

__all__ = ["LayerActivity", "Totals", "record", "totals"]


@dataclass
class LayerActivity:
    """What one spiking layer did, summed over every call while recording.

    Attributes:
        name: the layer's name in the model.
        neurons: neurons per sample (output features, or channels x height x width).
        neuron_steps: neuron updates: samples x steps x neurons.
        spikes: spikes the layer emitted.
        input_events: non-zero inputs that arrived.
        binary_input: whether every input was 0 or 1 (spikes).
        synaptic_ops: for spikes, accumulates where they arrived (``fan_out`` each); for other
            inputs, the multiply-accumulates of a dense evaluation (once for a constant input).
        dense_ops: multiply-accumulates of the same layer with every input counted, zeros
            included (a dense, not event-driven, evaluation of the same SNN); a constant input
            is counted once here too, so that ``dense_ops / synaptic_ops`` is what skipping
            silent inputs saves, nothing else.
        ann_macs: multiply-accumulates of the same layer in a same-size ANN: one pass per sample.
    """

    name: str
    neurons: int = 0
    neuron_steps: int = 0
    spikes: int = 0
    input_events: int = 0
    binary_input: bool = True
    synaptic_ops: int = 0
    dense_ops: int = 0
    ann_macs: int = 0

    @property
    def sparsity(self) -> float:
        """Share of silent neuron-steps (no spike)."""
        return 1.0 - self.spikes / self.neuron_steps if self.neuron_steps else math.nan

    @property
    def firing_rate(self) -> float:
        """Spikes per neuron-step."""
        return self.spikes / self.neuron_steps if self.neuron_steps else math.nan

    def as_dict(self) -> dict[str, Any]:
        """The counts and the derived rates, for CSV rows and JSON lines."""
        row = {k: getattr(self, k) for k in self.__dataclass_fields__}
        row.update(sparsity=self.sparsity, firing_rate=self.firing_rate)
        return row


def _count(x: Tensor) -> int:
    return int((x != 0).sum().item())


def _linear_counts(layer: SpikingLinear, inputs: Tensor,
                   binary: bool) -> tuple[int, int, int]:
    """``(synaptic ops, dense ops, ANN MACs)``; inputs ``(T, B, ..., in)``."""
    fan_out, fan_in = layer.synapse.out_features, layer.synapse.in_features
    per_row = fan_in * fan_out
    dense = math.prod(inputs.shape[1 if _constant_in_time(inputs) else 0:-1]) * per_row
    ops = _count(inputs) * fan_out if binary else dense
    return ops, dense, math.prod(inputs.shape[1:-1]) * per_row


def _conv_counts(layer: SpikingConv2d, inputs: Tensor, binary: bool) -> tuple[int, int, int]:
    """Convolution: an arriving spike reaches each output position whose window covers it, in
    every output channel; the windows are counted exactly (borders, stride, padding) by
    convolving the input's non-zero mask with a kernel of ones."""
    conv = layer.synapse
    once = _constant_in_time(inputs)
    folded = (inputs[:1] if once else inputs).reshape((-1,) + tuple(inputs.shape[2:]))
    mask = (folded != 0).to(folded.dtype)
    kh, kw = conv.weight.shape[2], conv.weight.shape[3]
    ones = pullback.ones(1, conv.in_channels, kh, kw, dtype=folded.dtype)
    covered = F.conv2d(mask, ones, stride=conv.stride, padding=conv.padding,
                       dilation=conv.dilation)
    # MACs per sample and step: output positions x output channels x window (groups=1)
    per_sample = covered.shape[2] * covered.shape[3] * conv.out_channels * conv.in_channels * kh * kw
    dense = folded.shape[0] * per_sample
    ops = int(covered.sum().item()) * conv.out_channels if binary else dense
    return ops, dense, inputs.shape[1] * per_sample


@contextmanager
def record(model: Module) -> Iterator[list[LayerActivity]]:
    """Count the activity of every :class:`SpikingLinear` and :class:`SpikingConv2d` in
    ``model`` while the block runs (forward hooks; no gradient is recorded for the counts).

    Yields:
        One :class:`LayerActivity` per spiking layer, in model order, filled as calls happen.
    """
    layers = [(name, m) for name, m in model.named_modules()
              if isinstance(m, (SpikingLinear, SpikingConv2d))]
    stats = [LayerActivity(name or type(m).__name__) for name, m in layers]
    handles = []

    def hook_for(stat: LayerActivity) -> Any:
        def hook(module: Any, args: tuple[Any, ...], out: Any) -> None:
            inputs, spikes = args[0], (out[0] if isinstance(out, tuple) else out)
            with pullback.no_grad():
                inputs, spikes = inputs.detach(), spikes.detach()
                binary = bool(((inputs == 0) | (inputs == 1)).all().item())
                counts = (_linear_counts if isinstance(module, SpikingLinear) else _conv_counts)(
                    module, inputs, binary)
                stat.synaptic_ops += counts[0]
                stat.dense_ops += counts[1]
                stat.ann_macs += counts[2]
                stat.input_events += _count(inputs)
                stat.binary_input = stat.binary_input and binary
                stat.neurons = math.prod(spikes.shape[2:])
                stat.neuron_steps += math.prod(spikes.shape)
                stat.spikes += _count(spikes)
        return hook

    for (_, module), stat in zip(layers, stats):
        handles.append(module.register_forward_hook(hook_for(stat)))
    try:
        yield stats
    finally:
        for handle in handles:
            handle.remove()


@dataclass
class Totals:
    """Sums over layers (see :func:`totals`)."""

    neuron_steps: int = 0
    spikes: int = 0
    accumulates: int = 0
    multiply_accumulates: int = 0
    dense_ops: int = 0
    ann_macs: int = 0
    layers: list[str] = field(default_factory=list)

    @property
    def sparsity(self) -> float:
        """Share of silent neuron-steps over the whole network."""
        return 1.0 - self.spikes / self.neuron_steps if self.neuron_steps else math.nan


def totals(layers: list[LayerActivity]) -> Totals:
    """Network totals: spike-driven accumulates and real-valued multiply-accumulates apart."""
    t = Totals()
    for layer in layers:
        t.layers.append(layer.name)
        t.neuron_steps += layer.neuron_steps
        t.spikes += layer.spikes
        if layer.binary_input:
            t.accumulates += layer.synaptic_ops
        else:
            t.multiply_accumulates += layer.synaptic_ops
        t.dense_ops += layer.dense_ops
        t.ann_macs += layer.ann_macs
    return t
