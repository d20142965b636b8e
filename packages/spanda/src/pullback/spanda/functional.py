"""Functional neurons: state in, state out, nothing kept (the modules in
:mod:`pullback.spanda` call these).

One step::

    spk, mem = spanda.functional.lif(x, mem, beta=0.9)

All steps at once (``inputs`` time first, ``(T, B, ...)``), one ``spanda.leaky`` node and one
``spanda.spike`` node for the whole sequence::

    spk_seq, mem_seq = spanda.functional.lif_sequence(inputs, beta=0.9)

``mem`` is what snnTorch's ``Leaky`` returns: with ``reset_delay=True`` (its default) the
membrane before its reset, which is applied at the next step; with ``reset_delay=False`` the
membrane after the reset of the same step.
"""

from __future__ import annotations

from typing import Any

from pullback.dispatch import apply
from pullback.tensor import Tensor

from . import surrogate as _surrogates
from ._checks import check_decay, check_reset, check_sequence, check_state, check_threshold
from ._dynamics import fire, fire_synaptic, reset_form
from ._ops.spike import SPIKE

__all__ = ["lif", "lif_sequence", "spike", "synaptic", "synaptic_sequence"]


def spike(mem: Tensor, threshold: Any = 1.0, surrogate: Any = None) -> Tensor:
    """Spikes ``H(mem - threshold)`` (1 where ``mem > threshold``), with ``surrogate``'s
    derivative in backward (for ``mem`` and for a learnable ``threshold``).

    Args:
        mem: membrane potentials, any shape.
        threshold: a number or a Tensor broadcastable to ``mem``.
        surrogate: a :class:`~pullback.spanda.surrogate.Surrogate`, a registered name or ``None``
            (arctan, ``alpha=2``).
    """
    return apply(SPIKE, mem, threshold, surrogate=_surrogates.get(surrogate))


def _check_options(where: str, beta: Any, threshold: Any, reset_mechanism: str) -> None:
    # Tensors are checked where they are made (the neuron modules); numbers here.
    if isinstance(beta, (int, float)):
        check_decay(where, "beta", beta)
    if isinstance(threshold, (int, float)):
        check_threshold(where, threshold)
    check_reset(where, reset_mechanism)


def lif(input: Tensor, mem: Tensor | None = None, *, beta: Any, threshold: Any = 1.0,
        reset_mechanism: str = "subtract", surrogate: Any = None, reset_delay: bool = True,
        detach_reset: bool = True) -> tuple[Tensor, Tensor]:
    """One step of leaky integrate-and-fire neurons (snnTorch's ``Leaky``).

    Args:
        input: the input current of this step, ``(B, ...)``.
        mem: the membrane from the previous step (``None``: zeros).
        beta: membrane decay in [0, 1] (a number or a Tensor broadcastable to ``input``).
        threshold: firing threshold (positive).
        reset_mechanism: ``"subtract"`` (the threshold), ``"zero"`` or ``"none"``.
        surrogate: the spike's surrogate gradient (default arctan).
        reset_delay: ``True`` (snnTorch's default): a spike's reset is applied at the next step,
            so ``mem`` is returned before it; ``False``: reset within the step.
        detach_reset: the reset carries no gradient (snnTorch's delayed reset); ``False`` lets
            the surrogate gradient through it (snnTorch's ``reset_delay=False``).

    Returns:
        ``(spk, mem)``, both shaped as ``input``.
    """
    _check_options("lif", beta, threshold, reset_mechanism)
    check_state("lif", "mem", mem, tuple(input.shape))
    return fire(input, mem, beta, threshold, reset_form(reset_mechanism, reset_delay),
                detach_reset, surrogate, sequence=False)


def lif_sequence(inputs: Tensor, mem: Tensor | None = None, *, beta: Any, threshold: Any = 1.0,
                 reset_mechanism: str = "subtract", surrogate: Any = None,
                 reset_delay: bool = True, detach_reset: bool = True) -> tuple[Tensor, Tensor]:
    """:func:`lif` over every step of ``inputs`` ``(T, B, ...)`` in two graph nodes.

    Returns:
        ``(spikes, membrane)``, both ``(T, B, ...)``; ``membrane[-1]`` is the state to continue
        from.
    """
    _check_options("lif_sequence", beta, threshold, reset_mechanism)
    check_sequence("lif_sequence", inputs)
    check_state("lif_sequence", "mem", mem, tuple(inputs.shape[1:]))
    return fire(inputs, mem, beta, threshold, reset_form(reset_mechanism, reset_delay),
                detach_reset, surrogate, sequence=True)


def _synaptic(where: str, inputs: Tensor, syn: Any, mem: Any, alpha: Any, beta: Any,
              threshold: Any, reset_mechanism: str, surrogate: Any, reset_delay: bool,
              detach_reset: bool, sequence: bool) -> tuple[Tensor, Tensor, Tensor]:
    _check_options(where, beta, threshold, reset_mechanism)
    if isinstance(alpha, (int, float)):
        check_decay(where, "alpha", alpha)
    step_shape = tuple(inputs.shape[1:] if sequence else inputs.shape)
    check_state(where, "syn", syn, step_shape)
    check_state(where, "mem", mem, step_shape)
    return fire_synaptic(inputs, syn, mem, alpha, beta, threshold,
                         reset_form(reset_mechanism, reset_delay, zero_resets_input=True),
                         detach_reset, surrogate, sequence)


def synaptic(input: Tensor, syn: Tensor | None = None, mem: Tensor | None = None, *, alpha: Any,
             beta: Any, threshold: Any = 1.0, reset_mechanism: str = "subtract",
             surrogate: Any = None, reset_delay: bool = True,
             detach_reset: bool = True) -> tuple[Tensor, Tensor, Tensor]:
    """One step of second-order (current-based) LIF neurons (snnTorch's ``Synaptic``):
    ``syn = alpha syn + input``, then the membrane integrates ``syn`` as :func:`lif` does
    (a delayed zero reset clears the whole new membrane, as snnTorch's ``Synaptic`` does).

    Returns:
        ``(spk, syn, mem)``.
    """
    return _synaptic("synaptic", input, syn, mem, alpha, beta, threshold, reset_mechanism,
                     surrogate, reset_delay, detach_reset, sequence=False)


def synaptic_sequence(inputs: Tensor, syn: Tensor | None = None, mem: Tensor | None = None, *,
                      alpha: Any, beta: Any, threshold: Any = 1.0,
                      reset_mechanism: str = "subtract", surrogate: Any = None,
                      reset_delay: bool = True,
                      detach_reset: bool = True) -> tuple[Tensor, Tensor, Tensor]:
    """:func:`synaptic` over every step of ``inputs`` ``(T, B, ...)`` in three graph nodes.

    Returns:
        ``(spikes, syn, membrane)``, each ``(T, B, ...)``.
    """
    check_sequence("synaptic_sequence", inputs)
    return _synaptic("synaptic_sequence", inputs, syn, mem, alpha, beta, threshold,
                     reset_mechanism, surrogate, reset_delay, detach_reset, sequence=True)
