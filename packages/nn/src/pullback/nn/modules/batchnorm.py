"""``torch.nn.modules.batchnorm``'s path: the batch norms (defined in ``normalization``)."""

from .normalization import BatchNorm1d, BatchNorm2d, BatchNorm3d

__all__ = ["BatchNorm1d", "BatchNorm2d", "BatchNorm3d"]
