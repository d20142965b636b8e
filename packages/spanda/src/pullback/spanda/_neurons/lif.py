"""``LIF``: leaky integrate-and-fire neurons (snnTorch's ``Leaky``)."""

from __future__ import annotations

from typing import Any

from pullback.tensor import Tensor

from .._checks import check_decay
from .._dynamics import fire, reset_form
from .base import SpikingNeuron


class LIF(SpikingNeuron):
    """Leaky integrate-and-fire neurons: ``mem = beta * mem + input - reset``, a spike where
    ``mem > threshold``.

    With the default ``reset_delay=True`` the returned membrane is the one the spike was read
    from, and its reset comes at the next step (snnTorch's ``Leaky``, exactly)::

        subtract: mem_t = beta mem_{t-1} + x_t - threshold s_{t-1}
        zero:     mem_t = beta (1 - s_{t-1}) mem_{t-1} + x_t
        none:     mem_t = beta mem_{t-1} + x_t          s_t = H(mem_t - threshold)

    With ``reset_delay=False`` the reset is applied in the same step and the returned membrane
    is after it (``mem_t = u_t - threshold s_t``, or ``u_t (1 - s_t)``, with
    ``u_t = beta mem_{t-1} + x_t``).

    Args:
        beta: membrane decay in [0, 1]: a number, or a Tensor with one per neuron. Clamped to
            [0, 1] in forward when learnt (as snnTorch does).
        threshold: firing threshold, positive.
        reset_mechanism: ``"subtract"`` (default), ``"zero"`` or ``"none"``.
        surrogate: the spike's surrogate gradient (default arctan, ``alpha=2``).
        learn_beta, learn_threshold: make them Parameters.
        reset_delay, detach_reset: see :class:`SpikingNeuron`.

    Example:
        >>> import pullback
        >>> from pullback import spanda
        >>> lif = spanda.LIF(beta=0.9, surrogate=spanda.surrogate.fast_sigmoid(slope=25))
        >>> x = pullback.full((2, 3), 0.6)
        >>> spk, mem = lif(x)                  # state kept inside (starts from zeros)
        >>> spk, mem = lif(x, mem)             # or passed explicitly
        >>> spk.tolist(), round(mem[0, 0].item(), 4)
        ([[1.0, 1.0, 1.0], [1.0, 1.0, 1.0]], 1.14)
    """

    state_names = ("mem",)

    def __init__(self, beta: Any, threshold: Any = 1.0, *, reset_mechanism: str = "subtract",
                 surrogate: Any = None, learn_beta: bool = False, learn_threshold: bool = False,
                 reset_delay: bool = True, detach_reset: bool = True) -> None:
        super().__init__(threshold, surrogate, reset_mechanism, reset_delay, detach_reset,
                         learn_threshold)
        check_decay("LIF", "beta", beta)
        self._keep("beta", beta, learn_beta)
        self._form = reset_form(self.reset_mechanism, self.reset_delay)

    def _step(self, input: Tensor, mem: Any) -> tuple[Tensor, Tensor]:
        return fire(input, mem, self.beta, self.threshold, self._form, self.detach_reset,
                    self.surrogate, sequence=False)

    def _run(self, inputs: Tensor, mem: Any) -> tuple[Tensor, Tensor]:
        return fire(inputs, mem, self.beta, self.threshold, self._form, self.detach_reset,
                    self.surrogate, sequence=True)
