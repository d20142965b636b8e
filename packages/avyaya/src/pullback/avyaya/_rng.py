"""Replaying the random numbers that f and g drew in forward, so that dropout inside a block
draws the same masks when the block is rebuilt in backward."""

from __future__ import annotations

from typing import Any, Callable

from pullback import Tensor

# How a coupling calls one of its nets: call(key, net, input) -> output. The plain call is
# net(input); the stack's calls record or replay the generator around it.
NetCall = Callable[[str, Callable[[Tensor], Tensor], Tensor], Tensor]


def plain_call(key: str, net: Callable[[Tensor], Tensor], z: Tensor) -> Tensor:
    """Call ``net`` as it is (a coupling used on its own, or an inverse)."""
    return net(z)


class RngTape:
    """The generator's state before each net call of a forward pass that drew random numbers.

    Calls that draw nothing (no dropout, or evaluation mode) leave no snapshot, so a
    deterministic stack keeps nothing per block and its memory stays flat in depth. Snapshots
    stay until the tape is dropped, so a backward with ``retain_graph=True`` can run again.
    """

    def __init__(self, backend: Any) -> None:
        self.backend = backend
        self._states: dict[tuple[int, str], Any] = {}

    def recorder(self, block: int) -> NetCall:
        """The net call of block ``block`` in forward: run, and keep the state if it moved."""

        def record(key: str, net: Callable[[Tensor], Tensor], z: Tensor) -> Tensor:
            before = self.backend.get_rng_state()
            out = net(z)
            if self.backend.get_rng_state() != before:
                self._states[(block, key)] = before
            return out

        return record

    def replayer(self, block: int) -> NetCall:
        """The net call of block ``block`` in backward: restore the state it saw in forward."""

        def replay(key: str, net: Callable[[Tensor], Tensor], z: Tensor) -> Tensor:
            state = self._states.get((block, key))
            if state is not None:
                self.backend.set_rng_state(state)
            return net(z)

        return replay
