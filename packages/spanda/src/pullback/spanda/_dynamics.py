"""The neuron dynamics on top of the two ops, shared by :mod:`.functional` and the neuron modules:
which ``spanda.leaky`` recurrence a neuron's options mean, and the spikes and membrane it gives."""

from __future__ import annotations

from typing import Any

from pullback.dispatch import apply
from pullback.tensor import Tensor

from . import surrogate as _surrogates
from ._ops.leaky import IMMEDIATE_FORMS, LEAKY
from ._ops.spike import SPIKE


def reset_form(reset_mechanism: str, reset_delay: bool, zero_resets_input: bool = False) -> str:
    """The ``spanda.leaky`` recurrence for a neuron's reset options (see :mod:`._ops.leaky`).

    ``zero_resets_input``: snnTorch's ``Synaptic`` and ``RLeaky`` zero the whole new membrane
    on a delayed zero reset (the step's input included); its ``Leaky`` zeroes only the decayed
    old membrane. Immediate resets are the same for all three.
    """
    if reset_mechanism == "none":
        return "none"
    if not reset_delay:
        return reset_mechanism + "_immediate"
    if reset_mechanism == "zero" and zero_resets_input:
        return "zero_input"
    return reset_mechanism


def fire(current: Tensor, mem: Any, beta: Any, threshold: Any, form: str, detach_reset: bool,
         surrogate: Any, sequence: bool) -> tuple[Tensor, Tensor]:
    """Spikes and membrane of ``current`` (one step, or all with ``sequence=True``) for the
    recurrence ``form``: ``(spikes, mem)`` as the neurons return them."""
    surrogate = _surrogates.get(surrogate)
    u = apply(LEAKY, current, 0.0 if mem is None else mem, beta, threshold, reset=form,
              detach_reset=detach_reset, surrogate=surrogate, sequence=sequence)
    spk = apply(SPIKE, u, threshold, surrogate=surrogate)
    if form not in IMMEDIATE_FORMS:
        return spk, u
    # The immediate reset, applied to what the op returned (the membrane spikes are read from).
    reset = spk.detach() if detach_reset else spk
    if form == "subtract_immediate":
        return spk, u - reset * threshold
    return spk, u * (1.0 - reset)


def fire_synaptic(inputs: Tensor, syn: Any, mem: Any, alpha: Any, beta: Any, threshold: Any,
                  form: str, detach_reset: bool, surrogate: Any,
                  sequence: bool) -> tuple[Tensor, Tensor, Tensor]:
    """``(spikes, syn, mem)`` of second-order neurons: the synaptic current is a leaky integrator
    without threshold or reset, and the membrane integrates it as :func:`fire` does."""
    current = apply(LEAKY, inputs, 0.0 if syn is None else syn, alpha, 0.0, reset="none",
                    detach_reset=True, surrogate=_surrogates.DEFAULT, sequence=sequence)
    spk, new_mem = fire(current, mem, beta, threshold, form, detach_reset, surrogate, sequence)
    return spk, current, new_mem
