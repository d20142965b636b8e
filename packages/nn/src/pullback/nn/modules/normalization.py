"""Normalization layers: ``BatchNorm1d``/``2d``/``3d``, ``LayerNorm``, ``RMSNorm``,
``GroupNorm``, ``InstanceNorm1d``/``2d``/``3d``, ``LocalResponseNorm`` (PyTorch's parameters,
buffers and defaults)."""

from __future__ import annotations

from typing import Any, Sequence

import pullback
from pullback.tensor import Tensor

from .. import functional as F
from .. import init
from .._checks import expect_ndim
from ..module import Module
from ..parameter import Parameter

# PyTorch's names at this path (the batch and instance norms are reached through
# .batchnorm and .instancenorm, as in PyTorch)
__all__ = ["GroupNorm", "LayerNorm", "LocalResponseNorm", "RMSNorm"]


def _affine(module: Module, shape: tuple[int, ...], weight: bool, bias: bool, device: Any,
            dtype: Any) -> None:
    kw = {"device": device, "dtype": dtype}
    if weight:
        module.weight = Parameter(pullback.ones(*shape, **kw))
    else:
        module.register_parameter("weight", None)
    if bias:
        module.bias = Parameter(pullback.zeros(*shape, **kw))
    else:
        module.register_parameter("bias", None)


def _per_channel_state(module: Module, num_features: int, eps: float, momentum: float | None,
                       affine: bool, track_running_stats: bool, bias: bool, device: Any,
                       dtype: Any) -> None:
    """The options, affine parameters and running-statistics buffers (PyTorch's names) that
    batch and instance norms share."""
    module.num_features, module.eps, module.momentum = num_features, eps, momentum
    module.affine, module.track_running_stats = affine, track_running_stats
    _affine(module, (num_features,), affine, affine and bias, device, dtype)
    kw = {"device": device, "dtype": dtype}
    tracked = {"running_mean": pullback.zeros(num_features, **kw),
               "running_var": pullback.ones(num_features, **kw),
               "num_batches_tracked": pullback.zeros((), dtype="int64", device=device)}
    for name, value in tracked.items():
        module.register_buffer(name, value if track_running_stats else None)


class _BatchNorm(Module):
    _ndims: tuple[int, ...] = ()

    def __init__(self, num_features: int, eps: float = 1e-5, momentum: float | None = 0.1,
                 affine: bool = True, track_running_stats: bool = True, device: Any = None,
                 dtype: Any = None, *, bias: bool = True) -> None:
        super().__init__()
        _per_channel_state(self, num_features, eps, momentum, affine, track_running_stats, bias,
                           device, dtype)

    def reset_running_stats(self) -> None:
        """Running mean 0, running variance 1, no batch seen."""
        if self.track_running_stats:
            init.zeros_(self.running_mean)
            init.ones_(self.running_var)
            self.num_batches_tracked.zero_()

    def forward(self, input: Tensor) -> Tensor:
        name = type(self).__name__
        expect_ndim(name, input, self._ndims)
        if input.shape[1] != self.num_features:
            from pullback.errors import ShapeError

            raise ShapeError(f"{name}: expected {self.num_features} channels (axis 1), got input "
                             f"of shape {tuple(input.shape)}")
        momentum = 0.0 if self.momentum is None else self.momentum
        if self.training and self.track_running_stats:
            with pullback.no_grad():
                self.num_batches_tracked.add_(1)
            if self.momentum is None:  # cumulative moving average
                momentum = 1.0 / float(self.num_batches_tracked.item())
        use_batch = self.training or not self.track_running_stats
        return F.batch_norm(
            input,
            self.running_mean if not self.training or self.track_running_stats else None,
            self.running_var if not self.training or self.track_running_stats else None,
            self.weight, self.bias, use_batch, momentum, self.eps,
        )

    def extra_repr(self) -> str:
        return (f"{self.num_features}, eps={self.eps}, momentum={self.momentum}, "
                f"affine={self.affine}, track_running_stats={self.track_running_stats}")


class BatchNorm1d(_BatchNorm):
    """Batch normalization of (N, C) or (N, C, L) per channel."""

    _ndims = (2, 3)


class BatchNorm2d(_BatchNorm):
    """Batch normalization of (N, C, H, W) per channel."""

    _ndims = (4,)


class LayerNorm(Module):
    """Normalize over the trailing ``normalized_shape`` axes (the fused ``nn.layer_norm``)."""

    def __init__(self, normalized_shape: Sequence[int] | int, eps: float = 1e-5,
                 elementwise_affine: bool = True, bias: bool = True, device: Any = None,
                 dtype: Any = None) -> None:
        super().__init__()
        shape = (normalized_shape,) if isinstance(normalized_shape, int) else tuple(normalized_shape)
        self.normalized_shape, self.eps = shape, eps
        self.elementwise_affine = elementwise_affine
        _affine(self, shape, elementwise_affine, elementwise_affine and bias, device, dtype)

    def forward(self, input: Tensor) -> Tensor:
        return F.layer_norm(input, self.normalized_shape, self.weight, self.bias, self.eps)

    def extra_repr(self) -> str:
        return (f"{self.normalized_shape}, eps={self.eps}, "
                f"elementwise_affine={self.elementwise_affine}")


class RMSNorm(Module):
    """``x / sqrt(mean(x^2) + eps) * weight`` over the trailing axes (``eps=None``: the
    dtype's machine epsilon)."""

    def __init__(self, normalized_shape: Sequence[int] | int, eps: float | None = None,
                 elementwise_affine: bool = True, device: Any = None, dtype: Any = None) -> None:
        super().__init__()
        shape = (normalized_shape,) if isinstance(normalized_shape, int) else tuple(normalized_shape)
        self.normalized_shape, self.eps = shape, eps
        self.elementwise_affine = elementwise_affine
        _affine(self, shape, elementwise_affine, False, device, dtype)

    def forward(self, input: Tensor) -> Tensor:
        return F.rms_norm(input, self.normalized_shape, self.weight, self.eps)

    def extra_repr(self) -> str:
        return (f"{self.normalized_shape}, eps={self.eps}, "
                f"elementwise_affine={self.elementwise_affine}")


class GroupNorm(Module):
    """Normalize (N, C, *) over groups of channels, then a per-channel affine map."""

    def __init__(self, num_groups: int, num_channels: int, eps: float = 1e-5, affine: bool = True,
                 device: Any = None, dtype: Any = None, *, bias: bool = True) -> None:
        super().__init__()
        if num_channels % num_groups:
            raise ValueError(f"GroupNorm: num_groups ({num_groups}) must divide num_channels "
                             f"({num_channels})")
        self.num_groups, self.num_channels, self.eps, self.affine = (num_groups, num_channels,
                                                                     eps, affine)
        _affine(self, (num_channels,), affine, affine and bias, device, dtype)

    def forward(self, input: Tensor) -> Tensor:
        return F.group_norm(input, self.num_groups, self.weight, self.bias, self.eps)

    def extra_repr(self) -> str:
        return f"{self.num_groups}, {self.num_channels}, eps={self.eps}, affine={self.affine}"


class BatchNorm3d(_BatchNorm):
    """Batch normalization of (N, C, D, H, W) per channel."""

    _ndims = (5,)


class _InstanceNorm(Module):
    """Instance normalization (PyTorch's defaults: no affine map, no running statistics)."""

    _ndims = 3  # the batched input's dims

    def __init__(self, num_features: int, eps: float = 1e-5, momentum: float | None = 0.1,
                 affine: bool = False, track_running_stats: bool = False, device: Any = None,
                 dtype: Any = None, *, bias: bool = True) -> None:
        super().__init__()
        _per_channel_state(self, num_features, eps, momentum, affine, track_running_stats, bias,
                           device, dtype)

    def forward(self, input: Tensor) -> Tensor:
        name = type(self).__name__
        expect_ndim(name, input, (self._ndims - 1, self._ndims))
        if input.ndim == self._ndims - 1:  # one unbatched sample
            return self.forward(input.unsqueeze(0))[0]
        if self.affine and input.shape[1] != self.num_features:
            from pullback.errors import ShapeError

            raise ShapeError(f"{name}: expected {self.num_features} channels (axis 1), got input "
                             f"of shape {tuple(input.shape)}")
        use_input_stats = self.training or not self.track_running_stats
        return F.instance_norm(input, self.running_mean, self.running_var, self.weight,
                               self.bias, use_input_stats,
                               0.0 if self.momentum is None else self.momentum, self.eps)

    def extra_repr(self) -> str:
        return (f"{self.num_features}, eps={self.eps}, momentum={self.momentum}, "
                f"affine={self.affine}, track_running_stats={self.track_running_stats}")


class InstanceNorm1d(_InstanceNorm):
    """Instance normalization of (N, C, L) or (C, L)."""

    _ndims = 3


class InstanceNorm2d(_InstanceNorm):
    """Instance normalization of (N, C, H, W) or (C, H, W)."""

    _ndims = 4


class InstanceNorm3d(_InstanceNorm):
    """Instance normalization of (N, C, D, H, W) or (C, D, H, W)."""

    _ndims = 5


class LocalResponseNorm(Module):
    """Normalize each channel by its ``size`` neighbouring channels' mean square."""

    def __init__(self, size: int, alpha: float = 1e-4, beta: float = 0.75, k: float = 1.0) -> None:
        super().__init__()
        self.size, self.alpha, self.beta, self.k = size, alpha, beta, k

    def forward(self, input: Tensor) -> Tensor:
        return F.local_response_norm(input, self.size, self.alpha, self.beta, self.k)

    def extra_repr(self) -> str:
        return f"{self.size}, alpha={self.alpha}, beta={self.beta}, k={self.k}"
