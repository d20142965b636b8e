"""The Gaussian negative log-likelihood of distributional outputs."""

from __future__ import annotations

from typing import Any

from pullback import Tensor, nn
from pullback.nn import functional as F

from ._tensor import DistributionalTensor


class GaussianNLLLoss(nn.Module):
    """``torch.nn.GaussianNLLLoss``'s semantics (``eps`` clamping of the variance's value,
    ``full`` adding ``log(2 pi) / 2``, reductions), taking a :class:`DistributionalTensor`.

    ``loss(prediction, target)`` with a distributional prediction uses its mean and variance;
    ``loss(input, target, var)`` is PyTorch's form.

    Example:
        >>> import pullback
        >>> from pullback.pramana import DistributionalTensor, GaussianNLLLoss
        >>> pred = DistributionalTensor(pullback.zeros(3), pullback.ones(3))
        >>> round(GaussianNLLLoss()(pred, pullback.zeros(3)).item(), 6)
        0.0
    """

    def __init__(self, *, full: bool = False, eps: float = 1e-6, reduction: str = "mean") -> None:
        super().__init__()
        self.full, self.eps, self.reduction = full, eps, reduction

    def forward(self, input: Any, target: Tensor, var: Tensor | None = None) -> Tensor:
        if isinstance(input, DistributionalTensor):
            if var is not None:
                raise TypeError("GaussianNLLLoss: a DistributionalTensor carries its variance; "
                                "do not pass var as well")
            input, var = input.mean, input.var
        elif var is None:
            raise TypeError("GaussianNLLLoss: pass a DistributionalTensor, or (input, target, var)")
        return F.gaussian_nll_loss(input, target, var, full=self.full, eps=self.eps,
                                   reduction=self.reduction)
