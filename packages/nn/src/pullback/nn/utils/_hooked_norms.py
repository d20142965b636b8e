"""PyTorch's older, hook-based ``torch.nn.utils.weight_norm`` and ``spectral_norm``, which
many scripts and checkpoints still use: the parameters ``weight_g``/``weight_v`` (weight norm)
or ``weight_orig`` with the buffers ``weight_u``/``weight_v`` (spectral norm), and ``weight``
recomputed from them by a forward pre-hook before every call. New code should prefer
:mod:`.parametrizations`, as PyTorch says (``weight_norm`` warns, as it does there)."""

from __future__ import annotations

import warnings
from typing import Any

import pullback
from pullback.tensor import Tensor

from .. import functional as F
from ..module import Module
from ..parameter import Parameter
from .parametrizations import _norm_except_dim


def _find_hook(module: Module, kind: type, name: str) -> tuple[Any, Any]:
    for key, hook in module._forward_pre_hooks.items():
        if isinstance(hook, kind) and hook.name == name:
            return key, hook
    raise ValueError(f"{kind.__name__[1:]} of '{name}' not found in {type(module).__name__}")


class _WeightNormHook:
    """Recomputes ``weight = g * v / ||v||`` from ``<name>_g`` and ``<name>_v``."""

    def __init__(self, name: str, dim: int) -> None:
        self.name, self.dim = name, dim

    def compute(self, module: Module) -> Tensor:
        g, v = getattr(module, self.name + "_g"), getattr(module, self.name + "_v")
        return v * (g / _norm_except_dim(v, self.dim))

    def __call__(self, module: Module, inputs: Any) -> None:
        setattr(module, self.name, self.compute(module))


def weight_norm(module: Module, name: str = "weight", dim: int | None = 0) -> Module:
    """Split ``module.<name>`` into a magnitude ``<name>_g`` (one per slice along ``dim``; one
    in all for ``dim=None``) and a direction ``<name>_v``, and recompute it before each forward
    (Salimans and Kingma, 2016)."""
    warnings.warn("torch.nn.utils.weight_norm is deprecated in favor of "
                  "torch.nn.utils.parametrizations.weight_norm.", FutureWarning, stacklevel=2)
    dim = -1 if dim is None else dim
    weight = getattr(module, name)
    hook = _WeightNormHook(name, dim)
    del module._parameters[name]
    module.register_parameter(name + "_g", Parameter(_norm_except_dim(weight, dim).detach()))
    module.register_parameter(name + "_v", Parameter(weight.detach()))
    setattr(module, name, hook.compute(module))
    module.register_forward_pre_hook(hook)
    return module


def remove_weight_norm(module: Module, name: str = "weight") -> Module:
    """Undo :func:`weight_norm`: ``<name>`` is a parameter again, holding the current weight."""
    key, hook = _find_hook(module, _WeightNormHook, name)
    with pullback.no_grad():
        weight = hook.compute(module)
    del module._forward_pre_hooks[key]
    del module._parameters[name + "_g"], module._parameters[name + "_v"]
    delattr(module, name)
    module.register_parameter(name, Parameter(weight.detach()))
    return module


class _SpectralNormHook:
    """Recomputes ``weight = weight_orig / sigma`` (power iteration on ``<name>_u``/``_v`` in
    training; the vectors frozen in evaluation)."""

    def __init__(self, name: str, n_power_iterations: int, dim: int, eps: float) -> None:
        if n_power_iterations <= 0:
            raise ValueError(f"spectral_norm: n_power_iterations must be positive, got "
                             f"{n_power_iterations}")
        self.name, self.n_power_iterations, self.dim, self.eps = name, n_power_iterations, dim, eps

    def matrix(self, weight: Tensor) -> Tensor:
        if self.dim != 0:
            weight = weight.permute(self.dim, *(a for a in range(weight.ndim) if a != self.dim))
        return weight.reshape(weight.shape[0], -1)

    def compute(self, module: Module, power_iteration: bool) -> Tensor:
        weight = getattr(module, self.name + "_orig")
        u, v = getattr(module, self.name + "_u"), getattr(module, self.name + "_v")
        matrix = self.matrix(weight)
        if power_iteration:
            with pullback.no_grad():
                plain = matrix.detach()
                for _ in range(self.n_power_iterations):  # v first, then u (PyTorch's order)
                    v.copy_(F.normalize(plain.mT @ u, dim=0, eps=self.eps))
                    u.copy_(F.normalize(plain @ v, dim=0, eps=self.eps))
            u, v = u.clone(), v.clone()
        sigma = (u * (matrix @ v)).sum()
        return weight / sigma

    def __call__(self, module: Module, inputs: Any) -> None:
        setattr(module, self.name, self.compute(module, power_iteration=module.training))


def spectral_norm(module: Module, name: str = "weight", n_power_iterations: int = 1,
                  eps: float = 1e-12, dim: int | None = None) -> Module:
    """Divide ``module.<name>`` by its spectral norm before each forward: the parameter becomes
    ``<name>_orig``, the power iteration's vectors the buffers ``<name>_u`` and ``<name>_v``;
    ``dim`` defaults to 1 for transposed convolutions, 0 otherwise (Miyato et al., 2018)."""
    from ..modules.conv import ConvTranspose1d, ConvTranspose2d, ConvTranspose3d

    if dim is None:
        transposed = isinstance(module, (ConvTranspose1d, ConvTranspose2d, ConvTranspose3d))
        dim = 1 if transposed else 0
    weight = getattr(module, name)
    hook = _SpectralNormHook(name, n_power_iterations, dim % weight.ndim, eps)
    h, w = hook.matrix(weight.detach()).shape
    kw = {"dtype": weight.dtype, "device": weight.device}
    del module._parameters[name]
    module.register_parameter(name + "_orig", weight)
    setattr(module, name, weight.detach())
    module.register_buffer(name + "_u", F.normalize(pullback.randn(h, **kw), dim=0, eps=eps))
    module.register_buffer(name + "_v", F.normalize(pullback.randn(w, **kw), dim=0, eps=eps))
    module.register_forward_pre_hook(hook)
    return module


def remove_spectral_norm(module: Module, name: str = "weight") -> Module:
    """Undo :func:`spectral_norm`: ``<name>`` is a parameter again, the normalized weight."""
    key, hook = _find_hook(module, _SpectralNormHook, name)
    with pullback.no_grad():
        weight = hook.compute(module, power_iteration=False)
    del module._forward_pre_hooks[key]
    del module._parameters[name + "_orig"]
    del module._buffers[name + "_u"], module._buffers[name + "_v"]
    delattr(module, name)
    module.register_parameter(name, Parameter(weight.detach()))
    return module


__all__ = ["remove_spectral_norm", "remove_weight_norm", "spectral_norm", "weight_norm"]


# Modules hold these hooks in their _forward_pre_hooks: pullback.load may rebuild them from a
# whole-model file (pullback._safe_globals collects every pullback.nn module's _SAFE_GLOBALS).
_SAFE_GLOBALS = (_WeightNormHook, _SpectralNormHook)
