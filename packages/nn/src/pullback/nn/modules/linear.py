"""Linear layers: ``Linear``, ``NonDynamicallyQuantizableLinear`` and ``Bilinear`` (PyTorch's
initialization)."""

from __future__ import annotations

import math
from typing import Any

import pullback
from pullback.tensor import Tensor

from .. import functional as F
from .. import init
from ..module import Module
from ..parameter import Parameter
from .shape import Identity  # noqa: F401 (where torch.nn.modules.linear has it)


def _factory(device: Any, dtype: Any) -> dict[str, Any]:
    return {"device": device, "dtype": dtype}


class Linear(Module):
    """``y = x W^T + b`` with ``W`` of shape (out_features, in_features).

    Initialization (PyTorch's): ``W`` and ``b`` from U(-1/sqrt(in), 1/sqrt(in)).
    """

    def __init__(self, in_features: int, out_features: int, bias: bool = True,
                 device: Any = None, dtype: Any = None) -> None:
        super().__init__()
        self.in_features = in_features
        self.out_features = out_features
        kw = _factory(device, dtype)
        self.weight = Parameter(pullback.empty(out_features, in_features, **kw))
        if bias:
            self.bias = Parameter(pullback.empty(out_features, **kw))
        else:
            self.register_parameter("bias", None)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        """PyTorch's default: kaiming_uniform(a=sqrt(5)) for W, i.e. U(+-1/sqrt(fan_in))."""
        init.kaiming_uniform_(self.weight, a=math.sqrt(5))
        if self.bias is not None:
            bound = 1 / math.sqrt(self.in_features) if self.in_features > 0 else 0
            init.uniform_(self.bias, -bound, bound)

    def forward(self, input: Tensor) -> Tensor:
        return F.linear(input, self.weight, self.bias)

    def extra_repr(self) -> str:
        return (f"in_features={self.in_features}, out_features={self.out_features}, "
                f"bias={self.bias is not None}")


class NonDynamicallyQuantizableLinear(Linear):
    """A ``Linear`` under PyTorch's name for ``MultiheadAttention.out_proj`` (PyTorch keeps it
    out of dynamic quantization; here it is only the class name that programs and whole-model
    files refer to, e.g. in ``torch.serialization.safe_globals([...])``)."""


class Bilinear(Module):
    """``y = x1^T A x2 + b`` with ``A`` of shape (out, in1, in2)."""

    def __init__(self, in1_features: int, in2_features: int, out_features: int,
                 bias: bool = True, device: Any = None, dtype: Any = None) -> None:
        super().__init__()
        self.in1_features, self.in2_features = in1_features, in2_features
        self.out_features = out_features
        kw = _factory(device, dtype)
        self.weight = Parameter(pullback.empty(out_features, in1_features, in2_features, **kw))
        if bias:
            self.bias = Parameter(pullback.empty(out_features, **kw))
        else:
            self.register_parameter("bias", None)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        """U(+-1/sqrt(in1_features)) for weight and bias (PyTorch's default)."""
        bound = 1 / math.sqrt(self.weight.shape[1])
        init.uniform_(self.weight, -bound, bound)
        if self.bias is not None:
            init.uniform_(self.bias, -bound, bound)

    def forward(self, input1: Tensor, input2: Tensor) -> Tensor:
        return F.bilinear(input1, input2, self.weight, self.bias)

    def extra_repr(self) -> str:
        return (f"in1_features={self.in1_features}, in2_features={self.in2_features}, "
                f"out_features={self.out_features}, bias={self.bias is not None}")
