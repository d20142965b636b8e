"""``AffineCoupling``: RealNVP's affine coupling (Dinh et al. 2017), with its log-determinant."""

from __future__ import annotations

import pullback as pb
import pullback.nn as nn
from pullback import Tensor
from pullback.errors import ShapeError

from ._coupling import Coupling, ParamGrads, leaf, vjp
from ._rng import NetCall, plain_call

CONDITIONS = ("first", "second")


class AffineCoupling(Coupling):
    """Affine coupling: one half ``a`` passes through unchanged and conditions the other,
    ``b -> b * exp(scale_net(a)) + shift_net(a)``.

    ``forward`` returns ``(y, log_det)``: ``log_det`` is ``log |det dy/dx|`` per sample (the sum
    of ``scale_net(a)`` over every axis but the first), so the block also serves normalizing
    flows. ``scale_net`` gives the log of the scale; bound it (a ``tanh``) if it can grow large.
    Alternate ``condition_on`` between stacked blocks so that both halves get transformed.

    Args:
        scale_net: log-scale network, from half ``a`` to the shape of half ``b``.
        shift_net: shift network, from half ``a`` to the shape of half ``b``.
        split_dim: the axis split into two halves (not the first axis, which holds samples).
        condition_on: ``"first"`` (the first half passes through) or ``"second"``.

    Example:
        >>> import pullback as pb
        >>> from pullback import nn
        >>> from pullback.avyaya import AffineCoupling
        >>> block = AffineCoupling(nn.Sequential(nn.Linear(2, 2), nn.Tanh()), nn.Linear(2, 2))
        >>> y, log_det = block(pb.randn(5, 4))
        >>> tuple(y.shape), tuple(log_det.shape)
        ((5, 4), (5,))
    """

    def __init__(self, scale_net: nn.Module, shift_net: nn.Module, split_dim: int = -1,
                 condition_on: str = "first") -> None:
        super().__init__(split_dim)
        self._check_nets(scale_net=scale_net, shift_net=shift_net)
        if condition_on not in CONDITIONS:
            raise ValueError(f"AffineCoupling: condition_on must be one of {CONDITIONS}, "
                             f"got {condition_on!r}")
        self.scale_net = scale_net
        self.shift_net = shift_net
        self.condition_on = condition_on

    def forward(self, x: Tensor) -> tuple[Tensor, Tensor]:
        y, log_det = self._couple(x, plain_call)
        return y, log_det

    def _split(self, x: Tensor) -> tuple[Tensor, Tensor]:
        """(the conditioning half, the transformed half)."""
        if self._axis(x) == 0:
            raise ShapeError(f"AffineCoupling: split_dim {self.split_dim} is the sample axis of "
                             f"the input (shape {tuple(x.shape)}); log_det is per sample, so "
                             "split another axis")
        first, second = self._halves(x)
        return (first, second) if self.condition_on == "first" else (second, first)

    def _join(self, a: Tensor, b: Tensor) -> Tensor:
        return self._merge(a, b) if self.condition_on == "first" else self._merge(b, a)

    def _couple(self, x: Tensor, call: NetCall) -> tuple[Tensor, Tensor]:
        a, b = self._split(x)
        log_scale = self._net("scale_net", a, call)
        shift = self._net("shift_net", a, call)
        return self._join(a, b * log_scale.exp() + shift), per_sample_sum(log_scale)

    def _uncouple(self, y: Tensor, call: NetCall) -> Tensor:
        a, b = self._split(y)
        log_scale = self._net("scale_net", a, call)
        shift = self._net("shift_net", a, call)
        return self._join(a, (b - shift) / log_scale.exp())

    def _pullback(self, y: Tensor, grad_y: Tensor, grad_log_det: Tensor | None,
                  call: NetCall) -> tuple[Tensor, Tensor, ParamGrads]:
        a, yb = self._split(y)
        da, dyb = self._split(grad_y)
        with pb.enable_grad():
            z = leaf(a)
            log_scale = self._net("scale_net", z, call)
            shift = self._net("shift_net", z, call)
        scale = log_scale.detach().exp()
        scaled = yb - shift.detach()  # b * exp(s): the input half, before the shift
        # d(loss)/d(log_scale): through b * exp(s), and through log_det = sum(s) per sample.
        d_log_scale = dyb * scaled
        if grad_log_det is not None:
            d_log_scale = d_log_scale + grad_log_det.reshape(
                (-1,) + (1,) * (len(y.shape) - 1))
        dz, pairs = vjp([log_scale, shift], [d_log_scale, dyb], z,
                        [self.scale_net, self.shift_net])
        da = da if dz is None else da + dz
        return self._join(a, scaled / scale), self._join(da, dyb * scale), pairs


def per_sample_sum(t: Tensor) -> Tensor:
    """The sum over every axis but the first: one value per sample."""
    return t.reshape(t.shape[0], -1).sum(axis=1)
