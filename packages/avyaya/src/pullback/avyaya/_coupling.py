"""``Coupling``: what every invertible block of a :class:`ReversibleSequential` provides.

A coupling splits its input into two halves along ``split_dim``, transforms one half with
networks of the other, and can undo that exactly. Besides ``forward`` and ``inverse`` it
implements ``_pullback``: given its output and the gradient of the loss with respect to that
output, rebuild its input and return the gradient with respect to the input and to its
parameters. That is what lets the stack keep no activations.
"""

from __future__ import annotations

from typing import Iterable, Sequence

import pullback as pb
import pullback.nn as nn
from pullback import Tensor
from pullback.errors import ShapeError

from ._rng import NetCall, plain_call

ParamGrads = list[tuple[nn.Parameter, Tensor]]


class Coupling(nn.Module):
    """Base class of invertible two-half blocks (see the module docstring).

    Subclasses implement ``_couple(x, call) -> (y, log_det or None)``, ``_uncouple(y, call)
    -> x`` and ``_pullback(y, grad_y, grad_log_det, call) -> (x, grad_x, param_grads)``, calling
    their networks only through :meth:`_net` so that shapes are checked and random numbers are
    replayed in backward.

    Args:
        split_dim: the axis split into two equal halves (its size must be even).
    """

    def __init__(self, split_dim: int = -1) -> None:
        super().__init__()
        self.split_dim = split_dim

    def _check_nets(self, **nets: object) -> None:
        """Raise TypeError, when the block is built, for a network that is not a Module (it
        would fail only at the first forward, far from the mistake)."""
        for name, net in nets.items():
            if not isinstance(net, nn.Module):
                raise TypeError(f"{type(self).__name__}: {name} must be an nn.Module (a network "
                                f"that keeps the shape of its half), got "
                                f"{type(net).__name__} {net!r}")

    def inverse(self, y: Tensor) -> Tensor:
        """The input that gives ``y`` (exact up to rounding)."""
        return self._uncouple(y, plain_call)

    def _axis(self, x: Tensor) -> int:
        ndim = len(x.shape)
        if not -ndim <= self.split_dim < ndim:
            raise ShapeError(f"{type(self).__name__}: split_dim {self.split_dim} is out of range "
                             f"for an input of shape {tuple(x.shape)}")
        return self.split_dim % ndim

    def _halves(self, x: Tensor) -> tuple[Tensor, Tensor]:
        axis = self._axis(x)
        size = x.shape[axis]
        if size % 2:
            raise ShapeError(
                f"{type(self).__name__}: split_dim {self.split_dim} of the input (shape "
                f"{tuple(x.shape)}) has odd size {size}; a coupling splits it into two equal "
                "halves"
            )
        first, second = pb.split(x, size // 2, axis=axis)
        return first, second

    def _merge(self, first: Tensor, second: Tensor) -> Tensor:
        return pb.cat([first, second], axis=self._axis(first))

    def _net(self, name: str, z: Tensor, call: NetCall) -> Tensor:
        """``self.<name>(z)`` through ``call``, checked to keep the shape of its half."""
        out = call(name, getattr(self, name), z)
        if not isinstance(out, Tensor) or tuple(out.shape) != tuple(z.shape):
            got = tuple(out.shape) if isinstance(out, Tensor) else type(out).__name__
            raise ShapeError(
                f"{type(self).__name__}: {name} maps its half of shape {tuple(z.shape)} to "
                f"{got}; the networks of a coupling must keep the shape of their input"
            )
        return out

    # The contract of subclasses (see the class docstring).
    def _couple(self, x: Tensor, call: NetCall) -> tuple[Tensor, Tensor | None]:
        raise NotImplementedError

    def _uncouple(self, y: Tensor, call: NetCall) -> Tensor:
        raise NotImplementedError

    def _pullback(self, y: Tensor, grad_y: Tensor, grad_log_det: Tensor | None,
                  call: NetCall) -> tuple[Tensor, Tensor, ParamGrads]:
        raise NotImplementedError


def leaf(t: Tensor) -> Tensor:
    """``t`` detached, as a leaf that requires grad (the start of one net's local graph)."""
    return t.detach().requires_grad_(True)


def vjp(outputs: Sequence[Tensor], grads: Sequence[Tensor | None], z: Tensor,
        nets: Iterable[nn.Module]) -> tuple[Tensor | None, ParamGrads]:
    """Pull ``grads`` back through ``outputs`` (computed from the leaf ``z`` by ``nets``).

    Returns the gradient with respect to ``z`` (``None`` when nothing depends on it) and one
    ``(parameter, gradient)`` pair per trainable parameter of ``nets`` that was reached.
    """
    params = list({id(p): p for net in nets for p in net.parameters() if p.requires_grad}.values())
    pairs = [(o, g) for o, g in zip(outputs, grads) if g is not None and o.requires_grad]
    if not pairs:
        return None, []
    got = pb.autograd.grad([o for o, _ in pairs], [z, *params], [g for _, g in pairs],
                           allow_unused=True)
    return got[0], [(p, g) for p, g in zip(params, got[1:]) if g is not None]
