"""``ReversibleBlock``: RevNet's additive coupling (Gomez et al. 2017)."""

from __future__ import annotations

import pullback as pb
import pullback.nn as nn
from pullback import Tensor

from ._coupling import Coupling, ParamGrads, leaf, vjp
from ._rng import NetCall, plain_call


class ReversibleBlock(Coupling):
    """Additive coupling: ``(x1, x2) -> (y1, y2)`` with ``y1 = x1 + f(x2)`` and
    ``y2 = x2 + g(y1)``, inverted exactly by ``x2 = y2 - g(y1)``, ``x1 = y1 - f(x2)``.

    ``f`` and ``g`` can be any modules that keep the shape of their half (an MLP, a
    convolution with padding, attention). Used on its own the block is an ordinary module that
    stores its activations; inside a :class:`ReversibleSequential` it stores none.

    Args:
        f: the network applied to the second half and added to the first.
        g: the network applied to the new first half and added to the second.
        split_dim: the axis split into two halves (features: ``-1``; channels: ``1``).

    Example:
        >>> import pullback as pb
        >>> from pullback import nn
        >>> from pullback.avyaya import ReversibleBlock
        >>> block = ReversibleBlock(nn.Linear(4, 4), nn.Linear(4, 4))
        >>> x = pb.randn(2, 8)
        >>> float((block.inverse(block(x)) - x).abs().max()) < 1e-5
        True
    """

    def __init__(self, f: nn.Module, g: nn.Module, split_dim: int = -1) -> None:
        super().__init__(split_dim)
        self._check_nets(f=f, g=g)
        self.f = f
        self.g = g

    def forward(self, x: Tensor) -> Tensor:
        return self._couple(x, plain_call)[0]

    def _couple(self, x: Tensor, call: NetCall) -> tuple[Tensor, None]:
        x1, x2 = self._halves(x)
        y1 = x1 + self._net("f", x2, call)
        y2 = x2 + self._net("g", y1, call)
        return self._merge(y1, y2), None

    def _uncouple(self, y: Tensor, call: NetCall) -> Tensor:
        y1, y2 = self._halves(y)
        x2 = y2 - self._net("g", y1, call)
        x1 = y1 - self._net("f", x2, call)
        return self._merge(x1, x2)

    def _pullback(self, y: Tensor, grad_y: Tensor, grad_log_det: Tensor | None,
                  call: NetCall) -> tuple[Tensor, Tensor, ParamGrads]:
        # RevNet's backward (Gomez et al., algorithm 1): one evaluation of g and one of f
        # both rebuild the input and give the local graphs to pull the gradient through.
        y1, y2 = self._halves(y)
        dy1, dy2 = self._halves(grad_y)
        with pb.enable_grad():
            z1 = leaf(y1)
            g_out = self._net("g", z1, call)
        dz1, g_grads = vjp([g_out], [dy2], z1, [self.g])
        dz1 = dy1 if dz1 is None else dy1 + dz1  # d(loss)/d(y1) through both of its uses
        x2 = y2 - g_out.detach()
        with pb.enable_grad():
            z2 = leaf(x2)
            f_out = self._net("f", z2, call)
        dx2, f_grads = vjp([f_out], [dz1], z2, [self.f])
        dx2 = dy2 if dx2 is None else dy2 + dx2
        x1 = y1 - f_out.detach()
        return self._merge(x1, x2), self._merge(dz1, dx2), f_grads + g_grads
