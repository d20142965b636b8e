"""``pullback.nn.utils.parametrizations`` (PyTorch's): ``weight_norm`` and ``spectral_norm``
as parametrizations (:mod:`.parametrize`), with PyTorch's state-dict keys
(``parametrizations.weight.original0``/``original1``; ``parametrizations.weight.original`` and
the power iteration's ``parametrizations.weight.0._u``/``_v``)."""

from __future__ import annotations

import pullback
from pullback.tensor import Tensor

from .. import functional as F
from ..module import Module
from .parametrize import register_parametrization


def _norm_except_dim(v: Tensor, dim: int) -> Tensor:
    """The 2-norm over every axis but ``dim`` (kept, size 1); over all of ``v`` for dim -1
    (PyTorch's ``norm_except_dim``)."""
    if dim == -1:
        return pullback.norm(v)
    axes = tuple(a for a in range(v.ndim) if a != dim)
    return pullback.norm(v, axis=axes, keepdims=True)


class _WeightNorm(Module):
    """``weight = g * v / ||v||`` with the norm over every axis but ``dim`` (Salimans and
    Kingma, 2016)."""

    def __init__(self, dim: int | None = 0) -> None:
        super().__init__()
        self.dim = -1 if dim is None else dim

    def forward(self, weight_g: Tensor, weight_v: Tensor) -> Tensor:
        return weight_v * (weight_g / _norm_except_dim(weight_v, self.dim))

    def right_inverse(self, weight: Tensor) -> tuple[Tensor, Tensor]:
        return _norm_except_dim(weight, self.dim), weight


def weight_norm(module: Module, name: str = "weight", dim: int | None = 0) -> Module:
    """Reparametrize ``module.<name>`` as a magnitude ``original0`` (g, one per slice along
    ``dim``; one in all for ``dim=None``) times a direction ``original1`` (v)."""
    if dim is not None and dim != -1:
        dim %= getattr(module, name).ndim
    return register_parametrization(module, name, _WeightNorm(dim), unsafe=True)


class _SpectralNorm(Module):
    """``weight / sigma``, ``sigma`` the largest singular value of the weight seen as a
    (size along ``dim``, rest) matrix, estimated by power iteration (Miyato et al., 2018): the
    vectors ``_u``, ``_v`` are buffers refined by ``n_power_iterations`` steps at each forward
    in training (15 at creation), and frozen in evaluation."""

    def __init__(self, weight: Tensor, n_power_iterations: int = 1, dim: int = 0,
                 eps: float = 1e-12) -> None:
        super().__init__()
        ndim = weight.ndim
        if not -ndim <= dim < max(ndim, 1):
            raise IndexError(f"spectral_norm: dim {dim} is out of range for a {ndim}-d weight")
        if n_power_iterations <= 0:
            raise ValueError(f"spectral_norm: n_power_iterations must be positive, got "
                             f"{n_power_iterations}")
        self.dim = dim % max(ndim, 1)
        self.eps, self.n_power_iterations = eps, n_power_iterations
        if ndim > 1:
            matrix = self._matrix(weight.detach())
            h, w = matrix.shape
            kw = {"dtype": weight.dtype, "device": weight.device}
            self.register_buffer("_u", F.normalize(pullback.randn(h, **kw), dim=0, eps=eps))
            self.register_buffer("_v", F.normalize(pullback.randn(w, **kw), dim=0, eps=eps))
            self._power_method(matrix, 15)

    def _matrix(self, weight: Tensor) -> Tensor:
        if self.dim != 0:
            weight = weight.permute(self.dim, *(a for a in range(weight.ndim) if a != self.dim))
        return weight.reshape(weight.shape[0], -1)

    def _power_method(self, matrix: Tensor, iterations: int) -> None:
        with pullback.no_grad():
            for _ in range(iterations):
                self._u.copy_(F.normalize(matrix @ self._v, dim=0, eps=self.eps))
                self._v.copy_(F.normalize(matrix.mT @ self._u, dim=0, eps=self.eps))

    def forward(self, weight: Tensor) -> Tensor:
        if weight.ndim == 1:
            return F.normalize(weight, dim=0, eps=self.eps)
        matrix = self._matrix(weight)
        if self.training:
            self._power_method(matrix.detach(), self.n_power_iterations)
        u, v = self._u.clone(), self._v.clone()
        sigma = (u * (matrix @ v)).sum()
        return weight / sigma

    def right_inverse(self, value: Tensor) -> Tensor:
        return value


def spectral_norm(module: Module, name: str = "weight", n_power_iterations: int = 1,
                  eps: float = 1e-12, dim: int | None = None) -> Module:
    """Divide ``module.<name>`` by its spectral norm (largest singular value), estimated by
    power iteration; ``dim`` defaults to 1 for transposed convolutions (their output axis),
    0 otherwise."""
    from ..modules.conv import ConvTranspose1d, ConvTranspose2d, ConvTranspose3d

    weight = getattr(module, name)
    if dim is None:
        transposed = isinstance(module, (ConvTranspose1d, ConvTranspose2d, ConvTranspose3d))
        dim = 1 if transposed else 0
    return register_parametrization(module, name,
                                    _SpectralNorm(weight, n_power_iterations, dim, eps))


__all__ = ["spectral_norm", "weight_norm"]
