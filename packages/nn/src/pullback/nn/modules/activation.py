"""Activation layers (thin wrappers over :mod:`pullback.nn.functional`, PyTorch's arguments;
``inplace`` is accepted and computes a new tensor)."""

from __future__ import annotations

from typing import Any

import pullback
from pullback.errors import ArgumentError
from pullback.tensor import Tensor

from .. import functional as F
from ..module import Module
from ..parameter import Parameter
from .attention import MultiheadAttention  # noqa: F401 (where torch.nn.modules.activation has it)


class _Inplace(Module):
    """A layer whose only option is PyTorch's ``inplace`` flag."""

    def __init__(self, inplace: bool = False) -> None:
        super().__init__()
        self.inplace = inplace

    def extra_repr(self) -> str:
        return "inplace=True" if self.inplace else ""


class ReLU(_Inplace):
    """``max(x, 0)``."""

    def forward(self, input: Tensor) -> Tensor:
        return F.relu(input)


class ReLU6(_Inplace):
    """``min(max(x, 0), 6)``."""

    def forward(self, input: Tensor) -> Tensor:
        return F.relu6(input)


class SELU(_Inplace):
    """Self-normalizing ``scale * elu(x, alpha)``."""

    def forward(self, input: Tensor) -> Tensor:
        return F.selu(input)


class SiLU(_Inplace):
    """``x * sigmoid(x)``."""

    def forward(self, input: Tensor) -> Tensor:
        return F.silu(input)


class Mish(_Inplace):
    """``x * tanh(softplus(x))``."""

    def forward(self, input: Tensor) -> Tensor:
        return F.mish(input)


class Hardsigmoid(_Inplace):
    """``relu6(x + 3) / 6``."""

    def forward(self, input: Tensor) -> Tensor:
        return F.hardsigmoid(input)


class Hardswish(_Inplace):
    """``x * relu6(x + 3) / 6``."""

    def forward(self, input: Tensor) -> Tensor:
        return F.hardswish(input)


class LeakyReLU(Module):
    """``x`` for x > 0, ``negative_slope * x`` otherwise."""

    def __init__(self, negative_slope: float = 0.01, inplace: bool = False) -> None:
        super().__init__()
        self.negative_slope, self.inplace = negative_slope, inplace

    def forward(self, input: Tensor) -> Tensor:
        return F.leaky_relu(input, self.negative_slope)

    def extra_repr(self) -> str:
        return f"negative_slope={self.negative_slope}"


class ELU(Module):
    """``x`` for x > 0, ``alpha (exp(x) - 1)`` otherwise."""

    def __init__(self, alpha: float = 1.0, inplace: bool = False) -> None:
        super().__init__()
        self.alpha, self.inplace = alpha, inplace

    def forward(self, input: Tensor) -> Tensor:
        return F.elu(input, self.alpha)

    def extra_repr(self) -> str:
        return f"alpha={self.alpha}"


class CELU(ELU):
    """``max(0, x) + min(0, alpha (exp(x / alpha) - 1))``."""

    def forward(self, input: Tensor) -> Tensor:
        return F.celu(input, self.alpha)


class Hardtanh(Module):
    """``x`` clipped to ``[min_val, max_val]``."""

    def __init__(self, min_val: float = -1.0, max_val: float = 1.0, inplace: bool = False,
                 min_value: float | None = None, max_value: float | None = None) -> None:
        super().__init__()
        # min_value/max_value: PyTorch's deprecated spellings
        self.min_val = min_val if min_value is None else min_value
        self.max_val = max_val if max_value is None else max_value
        self.inplace = inplace
        if self.max_val <= self.min_val:
            raise ValueError(f"Hardtanh: max_val ({self.max_val}) must exceed min_val "
                             f"({self.min_val})")

    def forward(self, input: Tensor) -> Tensor:
        return F.hardtanh(input, self.min_val, self.max_val)

    def extra_repr(self) -> str:
        return f"min_val={self.min_val}, max_val={self.max_val}"


class Threshold(Module):
    """``x`` where ``x > threshold``, ``value`` elsewhere."""

    def __init__(self, threshold: float, value: float, inplace: bool = False) -> None:
        super().__init__()
        self.threshold, self.value, self.inplace = threshold, value, inplace

    def forward(self, input: Tensor) -> Tensor:
        return F.threshold(input, self.threshold, self.value)

    def extra_repr(self) -> str:
        return f"threshold={self.threshold}, value={self.value}"


class RReLU(Module):
    """Randomized leaky ReLU: random negative slopes from U(lower, upper) in training, their
    mean in evaluation."""

    def __init__(self, lower: float = 1.0 / 8, upper: float = 1.0 / 3,
                 inplace: bool = False) -> None:
        super().__init__()
        self.lower, self.upper, self.inplace = lower, upper, inplace

    def forward(self, input: Tensor) -> Tensor:
        return F.rrelu(input, self.lower, self.upper, self.training)

    def extra_repr(self) -> str:
        return f"lower={self.lower}, upper={self.upper}"


class PReLU(Module):
    """``max(0, x) + a * min(0, x)`` with a learned slope ``a`` (one, or one per channel)."""

    def __init__(self, num_parameters: int = 1, init: float = 0.25, device: Any = None,
                 dtype: Any = None) -> None:
        super().__init__()
        self.num_parameters, self.init = num_parameters, init
        self.weight = Parameter(pullback.empty(num_parameters, device=device, dtype=dtype))
        self.reset_parameters()

    def reset_parameters(self) -> None:
        """Every slope set to ``init``."""
        from .. import init

        init.constant_(self.weight, self.init)

    def forward(self, input: Tensor) -> Tensor:
        return F.prelu(input, self.weight)

    def extra_repr(self) -> str:
        return f"num_parameters={self.num_parameters}"


class GELU(Module):
    """Gaussian error linear unit; ``approximate="tanh"`` for the tanh approximation."""

    def __init__(self, approximate: str = "none") -> None:
        # checked when built (PyTorch checks at the first call): a typo fails where it is made
        if approximate not in ("none", "tanh"):
            raise ArgumentError(f"GELU: approximate must be 'none' or 'tanh', got "
                                f"{approximate!r}")
        super().__init__()
        self.approximate = approximate

    def forward(self, input: Tensor) -> Tensor:
        return F.gelu(input, approximate=self.approximate)

    def extra_repr(self) -> str:
        return f"approximate={self.approximate!r}"


class Tanh(Module):
    """Hyperbolic tangent."""

    def forward(self, input: Tensor) -> Tensor:
        return F.tanh(input)


class Sigmoid(Module):
    """``1 / (1 + exp(-x))``."""

    def forward(self, input: Tensor) -> Tensor:
        return F.sigmoid(input)


class LogSigmoid(Module):
    """``log(sigmoid(x))``, stable."""

    def forward(self, input: Tensor) -> Tensor:
        return F.logsigmoid(input)


class Softsign(Module):
    """``x / (1 + |x|)``."""

    def forward(self, input: Tensor) -> Tensor:
        return F.softsign(input)


class Tanhshrink(Module):
    """``x - tanh(x)``."""

    def forward(self, input: Tensor) -> Tensor:
        return F.tanhshrink(input)


class Softplus(Module):
    """``log(1 + exp(beta x)) / beta``, linear above ``threshold``."""

    def __init__(self, beta: float = 1.0, threshold: float = 20.0) -> None:
        super().__init__()
        self.beta, self.threshold = beta, threshold

    def forward(self, input: Tensor) -> Tensor:
        return F.softplus(input, self.beta, self.threshold)

    def extra_repr(self) -> str:
        return f"beta={self.beta}, threshold={self.threshold}"


class Softshrink(Module):
    """``x - lambd`` above ``lambd``, ``x + lambd`` below ``-lambd``, 0 between."""

    def __init__(self, lambd: float = 0.5) -> None:
        super().__init__()
        self.lambd = lambd

    def forward(self, input: Tensor) -> Tensor:
        return F.softshrink(input, self.lambd)

    def extra_repr(self) -> str:
        return str(self.lambd)


class Hardshrink(Softshrink):
    """``x`` where ``|x| > lambd``, 0 elsewhere."""

    def forward(self, input: Tensor) -> Tensor:
        return F.hardshrink(input, self.lambd)


class GLU(Module):
    """Gated linear unit over the halves of ``dim``."""

    def __init__(self, dim: int = -1) -> None:
        super().__init__()
        self.dim = dim

    def forward(self, input: Tensor) -> Tensor:
        return F.glu(input, self.dim)

    def extra_repr(self) -> str:
        return f"dim={self.dim}"


class Softmax(Module):
    """Softmax along ``dim``."""

    def __init__(self, dim: int | None = None) -> None:
        super().__init__()
        self.dim = dim

    def forward(self, input: Tensor) -> Tensor:
        return F.softmax(input, self.dim)

    def extra_repr(self) -> str:
        return f"dim={self.dim}"


class Softmin(Softmax):
    """``softmax(-x)`` along ``dim``."""

    def forward(self, input: Tensor) -> Tensor:
        return F.softmin(input, self.dim)


class LogSoftmax(Softmax):
    """Log-softmax along ``dim``."""

    def forward(self, input: Tensor) -> Tensor:
        return F.log_softmax(input, self.dim)


class Softmax2d(Module):
    """Softmax over the channels of (N, C, H, W) or (C, H, W) at every position."""

    def forward(self, input: Tensor) -> Tensor:
        if input.ndim not in (3, 4):
            from pullback.errors import ShapeError

            raise ShapeError(f"Softmax2d: expected a 3-d or 4-d input, got shape "
                             f"{tuple(input.shape)}")
        return F.softmax(input, -3)
