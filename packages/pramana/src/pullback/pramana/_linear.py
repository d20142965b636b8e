"""Affine layers on distributional tensors: Linear and Conv2d, with deterministic or Gaussian
weights.

Deterministic weights ``W`` map independent inputs ``x ~ N(m, v)`` to ``y = W x + b`` with mean
``W m + b`` and variance ``W^2 v`` (the variance goes through the squared weights). Gaussian
weights ``W ~ N(M, S)`` independent of ``x`` add ``S (m^2 + v)`` to the variance (the moments of
a product of independent variables), as in deterministic variational inference (Wu et al. 2019).
"""

from __future__ import annotations

from typing import Any

import pullback
from pullback import Tensor, nn

from . import functional as PF
from ._module import DistributionalModule
from ._tensor import DistributionalTensor

WEIGHT_DISTRIBUTIONS = ("deterministic", "gaussian")


class _GaussianWeights:
    """The log-variance parameters and KL term shared by the Bayesian Linear and Conv2d."""

    weight: nn.Parameter
    bias: nn.Parameter | None

    def _init_distribution(self, weight_distribution: str, prior_var: float,
                           init_log_var: float) -> None:
        if weight_distribution not in WEIGHT_DISTRIBUTIONS:
            raise ValueError(f"{type(self).__name__}: weight_distribution must be one of "
                             f"{WEIGHT_DISTRIBUTIONS}, got {weight_distribution!r}")
        if prior_var <= 0:
            raise ValueError(f"{type(self).__name__}: prior_var must be positive, got {prior_var}")
        self.weight_distribution, self.prior_var = weight_distribution, float(prior_var)
        if weight_distribution == "gaussian":
            like = self.weight
            self.weight_log_var = nn.Parameter(pullback.full(tuple(like.shape), init_log_var,
                                                             dtype=like.dtype, device=like.device))
            if self.bias is not None:
                self.bias_log_var = nn.Parameter(pullback.full(tuple(self.bias.shape), init_log_var,
                                                               dtype=like.dtype,
                                                               device=like.device))
            else:
                self.register_parameter("bias_log_var", None)

    @property
    def is_bayesian(self) -> bool:
        return self.weight_distribution == "gaussian"

    def kl(self) -> Tensor:
        """KL(q(W) || N(0, prior_var)) summed over the weights (and bias); zero when the weights
        are deterministic."""
        if not self.is_bayesian:
            return pullback.zeros((), dtype=self.weight.dtype, device=self.weight.device)
        total = PF.gaussian_kl(self.weight, self.weight_log_var, self.prior_var)
        if self.bias is not None:
            total = total + PF.gaussian_kl(self.bias, self.bias_log_var, self.prior_var)
        return total


class DistributionalLinear(DistributionalModule, nn.Linear, _GaussianWeights):
    """``nn.Linear`` on a :class:`DistributionalTensor`: mean and variance in one pass.

    Args:
        in_features, out_features, bias, device, dtype: as :class:`pullback.nn.Linear` (same
            parameters, initialization and state_dict keys).
        weight_distribution: ``"deterministic"`` (the default; the variance of the input goes
            through the squared weights) or ``"gaussian"`` (a Bayesian layer: ``weight`` and
            ``bias`` are the posterior means, ``weight_log_var``/``bias_log_var`` their
            log-variances, and :meth:`kl` the KL term against ``N(0, prior_var)``).
        prior_var: the prior variance of Gaussian weights.
        init_log_var: the initial log-variance of Gaussian weights.
    """

    def __init__(self, in_features: int, out_features: int, bias: bool = True, *,
                 weight_distribution: str = "deterministic", prior_var: float = 1.0,
                 init_log_var: float = -10.0, device: Any = None, dtype: Any = None) -> None:
        super().__init__(in_features, out_features, bias, device=device, dtype=dtype)
        self._init_distribution(weight_distribution, prior_var, init_log_var)

    def forward(self, input: Any) -> DistributionalTensor:
        if not self.is_bayesian:
            return PF.linear(input, self.weight, self.bias)
        return PF.bayesian_linear(input, self.weight, self.weight_log_var, self.bias,
                                  self.bias_log_var)

    def extra_repr(self) -> str:
        return super().extra_repr() + f", weight_distribution={self.weight_distribution!r}"


class DistributionalConv2d(DistributionalModule, nn.Conv2d, _GaussianWeights):
    """``nn.Conv2d`` on a :class:`DistributionalTensor` (zero padding only: padded entries are
    the constant 0). Arguments as :class:`pullback.nn.Conv2d`, plus ``weight_distribution``,
    ``prior_var`` and ``init_log_var`` as :class:`DistributionalLinear`."""

    def __init__(self, in_channels: int, out_channels: int, kernel_size: Any, stride: Any = 1,
                 padding: Any = 0, dilation: Any = 1, groups: int = 1, bias: bool = True, *,
                 weight_distribution: str = "deterministic", prior_var: float = 1.0,
                 init_log_var: float = -10.0, device: Any = None, dtype: Any = None) -> None:
        super().__init__(in_channels, out_channels, kernel_size, stride, padding, dilation, groups,
                         bias, device=device, dtype=dtype)
        self._init_distribution(weight_distribution, prior_var, init_log_var)

    def forward(self, input: Any) -> DistributionalTensor:
        geometry = (self.stride, self.padding, self.dilation, self.groups)
        if not self.is_bayesian:
            return PF.conv2d(input, self.weight, self.bias, *geometry)
        return PF.bayesian_conv2d(input, self.weight, self.weight_log_var, self.bias,
                                  self.bias_log_var, *geometry)

    def extra_repr(self) -> str:
        return super().extra_repr() + f", weight_distribution={self.weight_distribution!r}"
