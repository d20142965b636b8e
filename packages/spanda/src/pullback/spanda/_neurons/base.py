"""``SpikingNeuron``: what every neuron module shares (threshold, surrogate, reset options and
the state kept between calls)."""

from __future__ import annotations

from typing import Any, ClassVar

import pullback
from pullback.nn import Module, Parameter
from pullback.tensor import Tensor

from .. import surrogate as _surrogates
from .._checks import check_reset, check_sequence, check_state, check_threshold


class SpikingNeuron(Module):
    """Base class of the neuron modules.

    A neuron is called one step at a time, ``neuron(input, *state)``, or on a whole time-major
    sequence, ``neuron.run(inputs, *state)``. Pass the state explicitly (it is returned and not
    kept), or leave it out: the neuron then starts from zeros, keeps its state between calls and
    :meth:`reset_state` starts it over (snnTorch's ``reset_mem``). A kept state whose shape does
    not match the input (a smaller last batch) starts over from zeros, as in snnTorch.

    Subclasses name their state (``state_names``) and implement :meth:`_step` and
    :meth:`_run`.

    Args:
        threshold: firing threshold, positive (a number, or a Tensor with one per neuron).
        surrogate: the spike's surrogate gradient (object, registered name, or ``None``: arctan).
        reset_mechanism: ``"subtract"``, ``"zero"`` or ``"none"``.
        reset_delay: ``True`` (snnTorch's default): the reset of a spike is applied at the next
            step and the returned membrane is the one before it; ``False``: within the step.
        detach_reset: whether the reset carries no gradient (see :mod:`pullback.spanda`).
        learn_threshold: make the threshold a Parameter.
    """

    state_names: ClassVar[tuple[str, ...]] = ()

    def __init__(self, threshold: Any, surrogate: Any, reset_mechanism: str, reset_delay: bool,
                 detach_reset: bool, learn_threshold: bool) -> None:
        super().__init__()
        where = type(self).__name__
        check_threshold(where, threshold)
        self.reset_mechanism = check_reset(where, reset_mechanism)
        self.reset_delay = bool(reset_delay)
        self.detach_reset = bool(detach_reset)
        self.surrogate = _surrogates.get(surrogate)
        self._keep("threshold", threshold, learn_threshold)
        self.state: tuple[Any, ...] | None = None

    def _keep(self, name: str, value: Any, learn: bool) -> None:
        """Store a neuron constant as a Parameter (``learn``) or a buffer (moves with ``to``).

        Numbers take the default dtype; arrays and Tensors keep a floating dtype of their own
        (``torch.as_tensor``'s rule, which snnTorch uses).
        """
        t = value.detach().clone() if isinstance(value, Tensor) else pullback.tensor(value)
        if t.dtype.kind != "f":
            t = t.to(pullback.get_default_dtype())
        if learn:
            setattr(self, name, Parameter(t))
        else:
            self.register_buffer(name, t)

    # -- state ------------------------------------------------------------------------------
    def reset_state(self) -> None:
        """Forget the kept state: the next call starts from zeros."""
        self.state = None

    def detach_state(self) -> None:
        """Cut the kept state from the graph (truncated BPTT: gradients stop here)."""
        if self.state is not None:
            self.state = tuple(s.detach() if isinstance(s, Tensor) else s for s in self.state)

    def _initial(self, state: tuple[Any, ...], step_shape: tuple[int, ...],
                 where: str) -> tuple[tuple[Any, ...], bool]:
        """The state to start from and whether it was given (else the kept one is used)."""
        n = len(self.state_names)
        if len(state) > n:
            raise TypeError(f"{where}: takes the input and at most {n} state tensors "
                            f"({', '.join(self.state_names)}), got {len(state)}")
        if state:
            state = state + (None,) * (n - len(state))
            for name, s in zip(self.state_names, state):
                check_state(where, name, s, step_shape)
            return state, True
        kept = self.state
        if kept is None or any(isinstance(s, Tensor) and tuple(s.shape) != step_shape
                               for s in kept):
            kept = (None,) * n
        return kept, False

    # -- calls ------------------------------------------------------------------------------
    def forward(self, input: Tensor, *state: Any) -> tuple[Tensor, ...]:
        """One time step: ``(spk, *new_state)`` (see the subclass for the order)."""
        start, given = self._initial(state, tuple(input.shape), type(self).__name__)
        outputs = self._step(input, *start)
        if not given:
            self.state = self._state_of(outputs)
        return outputs

    def run(self, inputs: Tensor, *state: Any) -> tuple[Tensor, ...]:
        """Every step of ``inputs`` ``(T, B, ...)``: the step outputs with a leading time axis.

        The state rules are those of a call; the last step's state is what is kept.
        """
        where = f"{type(self).__name__}.run"
        check_sequence(where, inputs)
        start, given = self._initial(state, tuple(inputs.shape[1:]), where)
        traces = self._run(inputs, *start)
        if not given:
            self.state = self._state_of(tuple(t[-1] for t in traces))
        return traces

    def _state_of(self, outputs: tuple[Tensor, ...]) -> tuple[Tensor, ...]:
        """The state carried to the next step, from one step's outputs (all but the spikes)."""
        return outputs[1:]

    def _step(self, input: Tensor, *state: Any) -> tuple[Tensor, ...]:
        raise NotImplementedError

    def _run(self, inputs: Tensor, *state: Any) -> tuple[Tensor, ...]:
        raise NotImplementedError

    def extra_repr(self) -> str:
        return (f"reset_mechanism={self.reset_mechanism!r}, reset_delay={self.reset_delay}, "
                f"surrogate={self.surrogate!r}")
