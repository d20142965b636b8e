"""pullback.pramana: distributional tensors, with mean and variance propagated in one pass.

A :class:`DistributionalTensor` carries a diagonal Gaussian, ``N(mean, var)``. Layers map it
through closed-form moments (affine layers, ReLU, LeakyReLU, average pooling, dropout: exact for
independent Gaussian inputs), Clark's approximation (max pooling) or the delta method (smooth
activations). :func:`propagate` does the same through an ordinary ``pullback.nn`` model.

Example:
    >>> import pullback
    >>> from pullback import nn, pramana
    >>> model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 1))
    >>> x = pramana.DistributionalTensor(pullback.zeros(2, 4), pullback.full((2, 4), 0.1))
    >>> y = pramana.propagate(model, x)
    >>> y.mean.shape, y.var.shape
    ((2, 1), (2, 1))
"""

from . import functional
from .__about__ import __version__
from ._activations import (
    DistributionalAvgPool2d, DistributionalDropout, DistributionalLeakyReLU,
    DistributionalMaxPool2d, DistributionalReLU, DistributionalSmooth, VarianceFloor,
)
from ._linear import DistributionalConv2d, DistributionalLinear
from ._loss import GaussianNLLLoss
from ._module import DistributionalModule
from ._monte_carlo import SampledMoments, monte_carlo
from ._propagate import MomentPropagation, moment_rule, propagate, register_moment_rule
from ._smooth import register_smooth
from ._tensor import DistributionalTensor, as_distributional

__all__ = [
    "DistributionalAvgPool2d", "DistributionalConv2d", "DistributionalDropout",
    "DistributionalLeakyReLU", "DistributionalLinear", "DistributionalMaxPool2d",
    "DistributionalModule", "DistributionalReLU", "DistributionalSmooth", "DistributionalTensor",
    "GaussianNLLLoss", "MomentPropagation", "SampledMoments", "VarianceFloor", "__version__",
    "as_distributional", "functional", "moment_rule", "monte_carlo", "propagate",
    "register_moment_rule", "register_smooth",
]
