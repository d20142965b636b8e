"""``torch.nn.modules.container``'s path: the containers (defined in ``pullback.nn.containers``)."""

from ..containers import ModuleDict, ModuleList, Sequential

__all__ = ["ModuleDict", "ModuleList", "Sequential"]
