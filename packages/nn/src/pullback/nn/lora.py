"""LoRA: low-rank adapters for linear layers (Hu et al., 2021).

``LoRALinear`` is a :class:`~pullback.nn.Linear` whose output gains ``(alpha / r) * B A x`` with
``A`` (r, in) and ``B`` (out, r); ``B`` starts at zero, so an injected model computes exactly what
it did before. It keeps the original ``weight`` and ``bias`` objects and names, so the model's
state-dict keys for them do not change and the base checkpoint still loads.

Example:
    >>> from pullback import nn
    >>> model = nn.Sequential(nn.Linear(8, 8), nn.ReLU(), nn.Linear(8, 2))
    >>> model = nn.inject_lora(model, target_modules=["0", "2"], r=2, alpha=4)
    >>> sorted(nn.lora_state_dict(model))
    ['0.lora_A', '0.lora_B', '2.lora_A', '2.lora_B']
"""

from __future__ import annotations

import math
from typing import Any, Iterable

import pullback
from pullback.tensor import Tensor

from . import functional as F
from . import init
from .module import Module
from .modules.dropout import Dropout
from .modules.linear import Linear
from .modules.shape import Identity
from .parameter import Parameter


class LoRALinear(Linear):
    """A linear layer plus a trainable low-rank update ``(alpha / r) * B @ A``.

    Args:
        in_features, out_features, bias: as for :class:`Linear`.
        r: rank of the update.
        alpha: scaling numerator (the update is scaled by ``alpha / r``).
        dropout: dropout on the adapter's input (training only).
    """

    def __init__(self, in_features: int, out_features: int, r: int = 8, alpha: float = 16.0,
                 dropout: float = 0.0, bias: bool = True, device: object = None,
                 dtype: object = None) -> None:
        super().__init__(in_features, out_features, bias=bias, device=device, dtype=dtype)
        self._init_adapter(r, alpha, dropout)

    def _init_adapter(self, r: int, alpha: float, dropout: float) -> None:
        if r < 1:
            raise ValueError(f"LoRALinear: rank r must be at least 1, got {r}")
        self.r, self.alpha, self.scaling = r, alpha, alpha / r
        kw: dict[str, Any] = {"device": self.weight.device, "dtype": self.weight.dtype}
        self.lora_A = Parameter(pullback.empty(r, self.in_features, **kw))
        self.lora_B = Parameter(pullback.zeros(self.out_features, r, **kw))
        # A as a Linear layer's weight (PyTorch/peft), B zero: the update starts at exactly 0.
        init.kaiming_uniform_(self.lora_A, a=math.sqrt(5))
        self.lora_dropout = Dropout(dropout) if dropout > 0 else Identity()
        self.merged = False

    @classmethod
    def from_linear(cls, linear: Linear, r: int = 8, alpha: float = 16.0,
                    dropout: float = 0.0) -> LoRALinear:
        """Wrap an existing layer: its ``weight`` and ``bias`` objects are reused (frozen)."""
        layer = cls.__new__(cls)
        Module.__init__(layer)
        layer.in_features, layer.out_features = linear.in_features, linear.out_features
        layer.weight = linear.weight
        if linear.bias is not None:
            layer.bias = linear.bias
        else:
            layer.register_parameter("bias", None)
        layer.train(linear.training)
        layer._init_adapter(r, alpha, dropout)
        layer.weight.requires_grad = False
        if layer.bias is not None:
            layer.bias.requires_grad = False
        return layer

    def delta_weight(self) -> Tensor:
        """The update ``(alpha / r) * B @ A`` (same shape as ``weight``)."""
        return (self.lora_B @ self.lora_A) * self.scaling

    def merge(self) -> None:
        """Fold the update into ``weight`` (inference without the extra matmuls)."""
        if not self.merged:
            with pullback.no_grad():
                self.weight.add_(self.delta_weight())
            self.merged = True

    def unmerge(self) -> None:
        """Take the update back out of ``weight``."""
        if self.merged:
            with pullback.no_grad():
                self.weight.sub_(self.delta_weight())
            self.merged = False

    def forward(self, input: Tensor) -> Tensor:
        out = F.linear(input, self.weight, self.bias)
        if self.merged:
            return out
        low_rank = F.linear(F.linear(self.lora_dropout(input), self.lora_A), self.lora_B)
        return out + low_rank * self.scaling

    def extra_repr(self) -> str:
        return super().extra_repr() + f", r={self.r}, alpha={self.alpha}, merged={self.merged}"


def _matches(name: str, targets: Iterable[str]) -> bool:
    return any(name == t or name.endswith("." + t) for t in targets)


def inject_lora(model: Module, target_modules: Iterable[str], r: int = 8, alpha: float = 16.0,
                dropout: float = 0.0) -> Module:
    """Replace the ``Linear`` layers named in ``target_modules`` with :class:`LoRALinear`.

    A name matches a layer whose dotted name equals it or ends with ``"." + name`` (``"fc1"``
    matches ``"encoder.fc1"``). Every parameter of the model is frozen except the adapters.
    Returns the model (changed in place).
    """
    targets = list(target_modules)
    found = [name for name, m in model.named_modules()
             if name and isinstance(m, Linear) and not isinstance(m, LoRALinear)
             and _matches(name, targets)]
    if not found:
        linears = [n for n, m in model.named_modules() if isinstance(m, Linear)]
        raise ValueError(f"inject_lora: no Linear layer matches {targets} (Linear layers: "
                         f"{linears})")
    for p in model.parameters():
        p.requires_grad = False
    for name in found:
        parent_name, _, child = name.rpartition(".")
        parent = model.get_submodule(parent_name)
        setattr(parent, child, LoRALinear.from_linear(getattr(parent, child), r, alpha, dropout))
    return model


def _lora_layers(model: Module) -> list[LoRALinear]:
    return [m for m in model.modules() if isinstance(m, LoRALinear)]


def merge_lora(model: Module) -> Module:
    """Merge every adapter into its base weight; returns the model."""
    for layer in _lora_layers(model):
        layer.merge()
    return model


def unmerge_lora(model: Module) -> Module:
    """Undo :func:`merge_lora`; returns the model."""
    for layer in _lora_layers(model):
        layer.unmerge()
    return model


def lora_state_dict(model: Module) -> dict[str, Tensor]:
    """Only the adapter tensors (``*.lora_A``, ``*.lora_B``); load them back with
    ``model.load_state_dict(sd, strict=False)``."""
    return {k: v for k, v in model.state_dict().items()
            if k.endswith(".lora_A") or k.endswith(".lora_B")}
