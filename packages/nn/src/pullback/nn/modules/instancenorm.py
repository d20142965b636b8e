"""``torch.nn.modules.instancenorm``'s path: the instance norms (defined in ``normalization``)."""

from .normalization import InstanceNorm1d, InstanceNorm2d, InstanceNorm3d

__all__ = ["InstanceNorm1d", "InstanceNorm2d", "InstanceNorm3d"]
