"""``Synaptic``: second-order (current-based) LIF neurons (snnTorch's ``Synaptic``)."""

from __future__ import annotations

from typing import Any

from pullback.tensor import Tensor

from .._checks import check_decay
from .._dynamics import fire_synaptic, reset_form
from .base import SpikingNeuron


class Synaptic(SpikingNeuron):
    """A synaptic current that decays with ``alpha`` feeds a LIF membrane that decays with
    ``beta``: ``syn_t = alpha syn_{t-1} + x_t``, then :class:`LIF`'s membrane with input
    ``syn_t``.

    One difference from :class:`LIF`, kept from snnTorch: a delayed zero reset clears the whole
    new membrane, ``mem_t = (1 - s_{t-1}) (beta mem_{t-1} + syn_t)``, this step's current
    included.

    Args:
        alpha: synaptic current decay in [0, 1].
        beta: membrane decay in [0, 1].
        threshold, reset_mechanism, surrogate, reset_delay, detach_reset: as :class:`LIF`.
        learn_alpha, learn_beta, learn_threshold: make them Parameters.

    A call returns ``(spk, syn, mem)``; the state is ``(syn, mem)``.
    """

    state_names = ("syn", "mem")

    def __init__(self, alpha: Any, beta: Any, threshold: Any = 1.0, *,
                 reset_mechanism: str = "subtract", surrogate: Any = None,
                 learn_alpha: bool = False, learn_beta: bool = False,
                 learn_threshold: bool = False, reset_delay: bool = True,
                 detach_reset: bool = True) -> None:
        super().__init__(threshold, surrogate, reset_mechanism, reset_delay, detach_reset,
                         learn_threshold)
        check_decay("Synaptic", "alpha", alpha)
        check_decay("Synaptic", "beta", beta)
        self._keep("alpha", alpha, learn_alpha)
        self._keep("beta", beta, learn_beta)
        self._form = reset_form(self.reset_mechanism, self.reset_delay, zero_resets_input=True)

    def _fire(self, inputs: Tensor, syn: Any, mem: Any, sequence: bool) -> tuple[Tensor, ...]:
        return fire_synaptic(inputs, syn, mem, self.alpha, self.beta, self.threshold,
                             self._form, self.detach_reset, self.surrogate, sequence)

    def _step(self, input: Tensor, syn: Any, mem: Any) -> tuple[Tensor, ...]:
        return self._fire(input, syn, mem, sequence=False)

    def _run(self, inputs: Tensor, syn: Any, mem: Any) -> tuple[Tensor, ...]:
        return self._fire(inputs, syn, mem, sequence=True)
