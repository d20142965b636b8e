"""DistributionalTensor: a diagonal Gaussian carried as two Tensors, its mean and variance.

Arithmetic follows the moment algebra of *independent* variables. Two distributional operands
are assumed independent of each other, and the entries of one tensor are assumed uncorrelated
(the variance is diagonal). Both assumptions are exact for a single layer fed independent
inputs; after a layer mixes its inputs (``x @ W``) the outputs are correlated, and combining
such outputs again (``y + y``, or the next layer) ignores that correlation. docs/pramana.md
says where this breaks and by how much it was measured.
"""

from __future__ import annotations

import builtins
from typing import Any

import pullback
from pullback import Tensor
from pullback.errors import DTypeError, ShapeError

_NUMBERS = (builtins.int, builtins.float)


class DistributionalTensor:
    """A tensor of independent Gaussian variables, ``N(mean, var)`` elementwise.

    Args:
        mean: the expected values E[X] (a Tensor, or anything :func:`pullback.tensor` takes).
        var: the variances Var[X], same shape as ``mean``, non-negative; default zeros (a point
            mass, i.e. a deterministic input).
        check: verify that ``var`` is non-negative (one reduction; the library's own results
            skip it, since they are non-negative by construction).

    Example:
        >>> import pullback
        >>> from pullback.pramana import DistributionalTensor
        >>> x = DistributionalTensor(pullback.tensor([1.0, 2.0]), pullback.tensor([0.5, 0.5]))
        >>> y = 3.0 * x + 1.0
        >>> y.mean.tolist(), y.var.tolist()
        ([4.0, 7.0], [4.5, 4.5])
    """

    __slots__ = ("mean", "var")
    __array_priority__ = 2000  # ndarray op DistributionalTensor defers to our reflected ops

    def __init__(self, mean: Any, var: Any = None, *, check: bool = True) -> None:
        mean = mean if isinstance(mean, Tensor) else pullback.tensor(mean)
        if var is None:
            var = pullback.zeros_like(mean)
        elif not isinstance(var, Tensor):
            var = pullback.tensor(var, dtype=mean.dtype, device=mean.device)
        if tuple(mean.shape) != tuple(var.shape):
            raise ShapeError(f"DistributionalTensor: mean of shape {tuple(mean.shape)} and var of "
                             f"shape {tuple(var.shape)} differ")
        if mean.dtype.kind != "f" or var.dtype != mean.dtype:
            raise DTypeError(f"DistributionalTensor: mean and var need one floating dtype, got "
                             f"{mean.dtype} and {var.dtype}")
        if mean.device != var.device:
            raise pullback.DeviceError(f"DistributionalTensor: mean on {mean.device}, var on "
                                       f"{var.device}")
        if check and var.numel() and bool((var.detach() < 0).any()):
            low = float(var.detach().min())
            raise ValueError(f"DistributionalTensor: var must be non-negative, got a minimum "
                             f"of {low:g}")
        self.mean, self.var = mean, var

    @classmethod
    def _new(cls, mean: Tensor, var: Tensor) -> DistributionalTensor:
        """Wrap results that are consistent by construction (no checks)."""
        out = cls.__new__(cls)
        out.mean, out.var = mean, var
        return out

    # -- metadata -----------------------------------------------------------------------------
    @property
    def shape(self) -> tuple[int, ...]:
        """The shape of both streams."""
        return tuple(self.mean.shape)

    @property
    def ndim(self) -> int:
        return self.mean.ndim

    @property
    def dtype(self) -> Any:
        return self.mean.dtype

    @property
    def device(self) -> Any:
        return self.mean.device

    @property
    def std(self) -> Tensor:
        """The standard deviations."""
        return pullback.sqrt(self.var)

    def __repr__(self) -> str:
        return f"DistributionalTensor(mean={self.mean!r}, var={self.var!r})"

    def __len__(self) -> int:
        return len(self.mean)

    # -- conversions ----------------------------------------------------------------------------
    def detach(self) -> DistributionalTensor:
        """Both streams detached from the graph."""
        return DistributionalTensor._new(self.mean.detach(), self.var.detach())

    def to(self, *args: Any, **kwargs: Any) -> DistributionalTensor:
        """Both streams moved/cast as :meth:`pullback.Tensor.to`."""
        return DistributionalTensor._new(self.mean.to(*args, **kwargs),
                                         self.var.to(*args, **kwargs))

    def sample(self, num_samples: int, generator: Any = None) -> Tensor:
        """``num_samples`` draws, stacked on a new leading axis (for Monte Carlo checks)."""
        noise = pullback.randn(num_samples, *self.shape, dtype=self.dtype, device=self.device,
                               generator=generator)
        return self.mean + noise * self.std

    # -- shape ops: applied to both streams --------------------------------------------------------
    def _both(self, name: str, *args: Any, **kwargs: Any) -> DistributionalTensor:
        return DistributionalTensor._new(getattr(self.mean, name)(*args, **kwargs),
                                         getattr(self.var, name)(*args, **kwargs))

    def reshape(self, *shape: Any) -> DistributionalTensor:
        return self._both("reshape", *shape)

    def flatten(self, start_dim: int = 0, end_dim: int = -1) -> DistributionalTensor:
        return self._both("flatten", start_dim, end_dim)

    def permute(self, *dims: Any) -> DistributionalTensor:
        return self._both("permute", *dims)

    def transpose(self, dim0: int, dim1: int) -> DistributionalTensor:
        return self._both("transpose", dim0, dim1)

    def unsqueeze(self, dim: int) -> DistributionalTensor:
        return self._both("unsqueeze", dim)

    def squeeze(self, *dim: Any) -> DistributionalTensor:
        return self._both("squeeze", *dim)

    def __getitem__(self, key: Any) -> DistributionalTensor:
        return DistributionalTensor._new(self.mean[key], self.var[key])

    def sum(self, dim: Any = None, keepdim: bool = False) -> DistributionalTensor:
        """The sum of independent variables: means and variances add."""
        return self._both("sum", dim, keepdim=keepdim)

    def mean_over(self, dim: Any = None, keepdim: bool = False) -> DistributionalTensor:
        """The average over ``dim`` (independent entries: the variance shrinks by n^2)."""
        total = self.sum(dim, keepdim=keepdim)
        count = self.mean.numel() // max(total.mean.numel(), 1)
        return total * (1.0 / count)

    # -- arithmetic ------------------------------------------------------------------------------
    def __neg__(self) -> DistributionalTensor:
        return DistributionalTensor._new(-self.mean, self.var)

    def __pos__(self) -> DistributionalTensor:
        return self

    def __add__(self, other: Any) -> DistributionalTensor:
        if isinstance(other, DistributionalTensor):
            return DistributionalTensor._new(self.mean + other.mean, self.var + other.var)
        # A constant shifts the mean; the variance is broadcast to the result's shape.
        mean = self.mean + _constant(other, self)
        return DistributionalTensor._new(mean, _broadcast(self.var, mean))

    __radd__ = __add__

    def __sub__(self, other: Any) -> DistributionalTensor:
        if isinstance(other, DistributionalTensor):
            return DistributionalTensor._new(self.mean - other.mean, self.var + other.var)
        return self + (-_constant(other, self))

    def __rsub__(self, other: Any) -> DistributionalTensor:
        return (-self) + other

    def __mul__(self, other: Any) -> DistributionalTensor:
        if isinstance(other, DistributionalTensor):
            # Independent X, Y: E[XY] = mx my and Var[XY] = mx^2 vy + my^2 vx + vx vy.
            mx, my, vx, vy = self.mean, other.mean, self.var, other.var
            return DistributionalTensor._new(mx * my, mx * mx * vy + my * my * vx + vx * vy)
        c = _constant(other, self)
        return DistributionalTensor._new(self.mean * c, self.var * (c * c))

    __rmul__ = __mul__

    def __truediv__(self, other: Any) -> DistributionalTensor:
        if isinstance(other, DistributionalTensor):
            raise TypeError("DistributionalTensor: division by a distributional tensor has no "
                            "closed-form moments (the ratio of Gaussians has none); divide by a "
                            "constant, or multiply by a moment-matched reciprocal")
        return self * (1.0 / _constant(other, self))

    def __matmul__(self, weight: Any) -> DistributionalTensor:
        """``X @ W`` with deterministic ``W``: mean ``E[X] @ W``, variance ``Var[X] @ W^2``."""
        if isinstance(weight, DistributionalTensor):
            raise TypeError("DistributionalTensor @ DistributionalTensor is not supported: use "
                            "DistributionalLinear(weight_distribution='gaussian') for random "
                            "weights")
        w = _constant(weight, self)
        return DistributionalTensor._new(self.mean @ w, self.var @ (w * w))

    def __rmatmul__(self, weight: Any) -> DistributionalTensor:
        w = _constant(weight, self)
        return DistributionalTensor._new(w @ self.mean, (w * w) @ self.var)


def _constant(value: Any, like: DistributionalTensor) -> Any:
    """A deterministic operand: Python numbers stay numbers, the rest becomes a Tensor."""
    if isinstance(value, (Tensor, *_NUMBERS)):
        return value
    return pullback.tensor(value, dtype=like.dtype, device=like.device)


def _broadcast(var: Tensor, like: Tensor) -> Tensor:
    return var if tuple(var.shape) == tuple(like.shape) else pullback.broadcast_to(var, like.shape)


def as_distributional(x: Any) -> DistributionalTensor:
    """``x`` itself if distributional, else a point mass at ``x`` (zero variance)."""
    return x if isinstance(x, DistributionalTensor) else DistributionalTensor(x)
