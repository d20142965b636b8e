"""``Normal``: a Gaussian with a mean and a standard deviation."""

from __future__ import annotations

import math
from typing import Any

from .. import _ops
from ..creation import as_tensor, randn
from ..tensor import Tensor
from .distribution import Distribution


class Normal(Distribution):
    """PyTorch's ``Normal(loc, scale)``; ``rsample`` is differentiable (``loc + eps * scale``),
    ``sample`` is not."""

    def __init__(self, loc: Any, scale: Any, validate_args: bool | None = None) -> None:
        self.loc, self.scale = _ops.broadcast_tensors(as_tensor(loc), as_tensor(scale))
        if not self.loc.dtype.kind == "f":
            self.loc, self.scale = self.loc.float(), self.scale.float()
        super().__init__(self.loc.shape)

    def rsample(self, sample_shape: Any = ()) -> Tensor:
        eps = randn(*self._extended_shape(sample_shape), dtype=self.loc.dtype)
        return self.loc + eps * self.scale

    def sample(self, sample_shape: Any = ()) -> Tensor:
        from ..autograd import no_grad

        with no_grad():
            return self.rsample(sample_shape).detach()

    def log_prob(self, value: Any) -> Tensor:
        value = as_tensor(value, dtype=self.loc.dtype)
        return (-((value - self.loc) ** 2) / (2 * self.scale ** 2) - _ops.log(self.scale)
                - math.log(math.sqrt(2 * math.pi)))

    def entropy(self) -> Tensor:
        return 0.5 + 0.5 * math.log(2 * math.pi) + _ops.log(self.scale)

    @property
    def mean(self) -> Tensor:
        return self.loc

    @property
    def stddev(self) -> Tensor:
        return self.scale

    @property
    def variance(self) -> Tensor:
        return self.scale ** 2
