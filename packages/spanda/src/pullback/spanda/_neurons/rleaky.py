"""``RLeaky``: LIF neurons that feed their own spikes back (snnTorch's ``RLeaky``)."""

from __future__ import annotations

from typing import Any

import pullback
from pullback import nn
from pullback.tensor import Tensor

from .._checks import check_decay
from .._dynamics import fire, reset_form
from .base import SpikingNeuron


class RLeaky(SpikingNeuron):
    """Recurrent LIF neurons: the input of a step is ``x_t + recurrent(spk_{t-1})``.

    The feedback is all-to-all, a ``Linear(linear_features, linear_features)`` (with bias, as in
    snnTorch) or a same-padded ``Conv2d(conv2d_channels, conv2d_channels, kernel_size)``, or,
    with ``all_to_all=False``, one-to-one: ``V * spk_{t-1}``. The first step sees
    ``recurrent(0)`` (the bias), as in snnTorch. A delayed zero reset clears the whole new
    membrane (feedback included), as snnTorch's ``RLeaky`` does.

    Being recurrent in its spikes, it runs step by step even in :meth:`run` (two fused ops and
    the feedback per step).

    Args:
        beta: membrane decay in [0, 1].
        V: the one-to-one feedback weight (a number or one per neuron), for ``all_to_all=False``.
        all_to_all: dense (Linear or Conv2d) feedback instead of one-to-one.
        linear_features: the layer width, for Linear feedback.
        conv2d_channels, kernel_size: for Conv2d feedback.
        threshold, reset_mechanism, surrogate, reset_delay, detach_reset: as :class:`LIF`.
        learn_beta, learn_threshold: make them Parameters.
        learn_recurrent: train the feedback weights (default, as snnTorch).

    A call returns ``(spk, mem)``; the state is ``(spk, mem)``.
    """

    state_names = ("spk", "mem")

    def __init__(self, beta: Any, V: Any = 1.0, all_to_all: bool = True,  # noqa: N803
                 linear_features: int | None = None, conv2d_channels: int | None = None,
                 kernel_size: int | None = None, threshold: Any = 1.0, *,
                 reset_mechanism: str = "subtract", surrogate: Any = None,
                 learn_beta: bool = False, learn_threshold: bool = False,
                 learn_recurrent: bool = True, reset_delay: bool = True,
                 detach_reset: bool = True) -> None:
        super().__init__(threshold, surrogate, reset_mechanism, reset_delay, detach_reset,
                         learn_threshold)
        check_decay("RLeaky", "beta", beta)
        self._keep("beta", beta, learn_beta)
        self._form = reset_form(self.reset_mechanism, self.reset_delay, zero_resets_input=True)
        self.all_to_all = bool(all_to_all)
        if self.all_to_all:
            self.recurrent = _dense_feedback(linear_features, conv2d_channels, kernel_size)
            self.recurrent.requires_grad_(learn_recurrent)
        else:
            if linear_features or conv2d_channels or kernel_size:
                raise ValueError("RLeaky: with all_to_all=False the feedback is V * spk; "
                                 "linear_features, conv2d_channels and kernel_size do not apply")
            self._keep("V", V, learn_recurrent)

    def _feedback(self, spk: Tensor) -> Tensor:
        return self.recurrent(spk) if self.all_to_all else spk * self.V

    def _step(self, input: Tensor, spk: Any, mem: Any) -> tuple[Tensor, Tensor]:
        if spk is None:
            spk = pullback.zeros_like(input)
        return fire(input + self._feedback(spk), mem, self.beta, self.threshold, self._form,
                    self.detach_reset, self.surrogate, sequence=False)

    def _run(self, inputs: Tensor, spk: Any, mem: Any) -> tuple[Tensor, Tensor]:
        spikes, membranes = [], []
        for t in range(inputs.shape[0]):
            spk, mem = self._step(inputs[t], spk, mem)
            spikes.append(spk)
            membranes.append(mem)
        return pullback.stack(spikes), pullback.stack(membranes)

    def _state_of(self, outputs: tuple[Tensor, ...]) -> tuple[Tensor, ...]:
        return outputs  # the spikes are state too (they feed the next step)


def _dense_feedback(linear_features: int | None, conv2d_channels: int | None,
                    kernel_size: int | None) -> nn.Module:
    if linear_features and (conv2d_channels or kernel_size):
        raise ValueError("RLeaky: give linear_features (Linear feedback) or conv2d_channels and "
                         "kernel_size (Conv2d feedback), not both")
    if linear_features:
        return nn.Linear(linear_features, linear_features)
    if conv2d_channels and kernel_size:
        return nn.Conv2d(conv2d_channels, conv2d_channels, kernel_size, padding=kernel_size // 2)
    raise ValueError("RLeaky: all_to_all=True needs linear_features, or conv2d_channels and "
                     f"kernel_size (got linear_features={linear_features}, "
                     f"conv2d_channels={conv2d_channels}, kernel_size={kernel_size})")
