"""Moment-propagating activation, pooling, dropout and variance-floor layers.

Closed forms where they exist (ReLU, LeakyReLU: exact for a Gaussian input; average pooling and
dropout: exact; max pooling: Clark's approximation), the delta method for smooth activations
(tanh, sigmoid, GELU, SiLU, softplus). The formulas are in :mod:`pullback.pramana.functional`.
"""

from __future__ import annotations

from typing import Any

from . import functional as PF
from ._module import DistributionalModule
from ._smooth import METHODS, SMOOTH
from ._tensor import DistributionalTensor


class DistributionalReLU(DistributionalModule):
    """ReLU of a Gaussian: the rectified Gaussian's exact mean and variance
    (for N(0, 1): mean 1/sqrt(2 pi) = 0.398942, variance 1/2 - 1/(2 pi) = 0.340845)."""

    def forward(self, input: Any) -> DistributionalTensor:
        return PF.relu(input)


class DistributionalLeakyReLU(DistributionalModule):
    """LeakyReLU of a Gaussian (exact): ``slope*x + (1 - slope)*relu(x)``."""

    def __init__(self, negative_slope: float = 0.01) -> None:
        super().__init__()
        self.negative_slope = float(negative_slope)

    def forward(self, input: Any) -> DistributionalTensor:
        return PF.leaky_relu(input, self.negative_slope)

    def extra_repr(self) -> str:
        return f"negative_slope={self.negative_slope}"


class DistributionalSmooth(DistributionalModule):
    """A smooth activation of a Gaussian: arguments as :func:`pullback.pramana.functional.smooth`
    (``name``, ``method="delta"|"quadrature"``, ``second_order``, ``nodes``)."""

    def __init__(self, name: str, method: str = "quadrature", *, second_order: bool = True,
                 nodes: int = 8) -> None:
        super().__init__()
        if name not in SMOOTH:
            raise ValueError(f"DistributionalSmooth: no moment rule for {name!r} "
                             f"(known: {', '.join(sorted(SMOOTH))})")
        if method not in METHODS:
            raise ValueError(f"DistributionalSmooth: method must be one of {METHODS}, "
                             f"got {method!r}")
        self.name, self.method, self.second_order, self.nodes = name, method, second_order, nodes

    def forward(self, input: Any) -> DistributionalTensor:
        return PF.smooth(self.name, input, self.method, second_order=self.second_order,
                         nodes=self.nodes)

    def extra_repr(self) -> str:
        return f"{self.name!r}, method={self.method!r}"


class DistributionalMaxPool2d(DistributionalModule):
    """Max pooling by Clark's approximation (no padding or dilation)."""

    def __init__(self, kernel_size: Any, stride: Any = None) -> None:
        super().__init__()
        self.kernel_size, self.stride = kernel_size, stride

    def forward(self, input: Any) -> DistributionalTensor:
        return PF.max_pool2d(input, self.kernel_size, self.stride)

    def extra_repr(self) -> str:
        return f"kernel_size={self.kernel_size}, stride={self.stride}"


class DistributionalAvgPool2d(DistributionalModule):
    """Average pooling (exact), arguments as :class:`pullback.nn.AvgPool2d`."""

    def __init__(self, kernel_size: Any, stride: Any = None, padding: Any = 0,
                 ceil_mode: bool = False, count_include_pad: bool = True,
                 divisor_override: int | None = None) -> None:
        super().__init__()
        self.kernel_size, self.stride, self.padding = kernel_size, stride, padding
        self.ceil_mode, self.count_include_pad = ceil_mode, count_include_pad
        self.divisor_override = divisor_override

    def forward(self, input: Any) -> DistributionalTensor:
        return PF.avg_pool2d(input, self.kernel_size, self.stride, self.padding, self.ceil_mode,
                             self.count_include_pad, self.divisor_override)


class DistributionalDropout(DistributionalModule):
    """Dropout as variance injection (the analytic counterpart of MC dropout); applied in
    training and evaluation alike, since that is what makes it an uncertainty estimate."""

    def __init__(self, p: float = 0.5) -> None:
        super().__init__()
        if not 0.0 <= p < 1.0:
            raise ValueError(f"DistributionalDropout: p must be in [0, 1), got {p}")
        self.p = float(p)

    def forward(self, input: Any) -> DistributionalTensor:
        return PF.dropout(input, self.p)

    def extra_repr(self) -> str:
        return f"p={self.p}"


class VarianceFloor(DistributionalModule):
    """Clamp the variance at ``floor`` (keeps later divisions and logs finite, and stops the
    variance collapsing to exact zeros after saturating activations)."""

    def __init__(self, floor: float = 1e-6) -> None:
        super().__init__()
        if floor < 0:
            raise ValueError(f"VarianceFloor: floor must be non-negative, got {floor}")
        self.floor = float(floor)

    def forward(self, input: Any) -> DistributionalTensor:
        return PF.variance_floor(input, self.floor)

    def extra_repr(self) -> str:
        return f"floor={self.floor}"
