"""Exception types. Each message names what was wrong: the op, shapes, dtypes, devices or file."""

from __future__ import annotations


class PullbackError(Exception):
    """Base class of every error pullback raises on purpose."""


class ShapeError(PullbackError, ValueError):
    """Shapes that do not fit an op (broadcasting, matmul, reshape...)."""


class DTypeError(PullbackError, TypeError):
    """A dtype an op cannot take, or two dtypes that cannot be combined."""


class DeviceError(PullbackError, RuntimeError):
    """Tensors on different devices, or a device that is unknown or unavailable."""


class IndexOutOfRangeError(PullbackError, IndexError):
    """An index outside the size of the axis it indexes."""


class AutogradError(PullbackError, RuntimeError):
    """Misuse of autograd: a freed graph, a modified saved tensor, a non-scalar root..."""


class RegistryError(PullbackError, LookupError):
    """An op, rule, kernel, backend or plugin that is missing or registered twice."""


class PluginError(PullbackError, RuntimeError):
    """A plugin that cannot be loaded (incompatible hook API, duplicate registration)."""


class MissingPackageError(PullbackError, ImportError):
    """An optional pullback distribution is not installed."""


class CheckpointError(PullbackError, ValueError):
    """A checkpoint file that is truncated, malformed or holds something unexpected."""


class AnomalyError(PullbackError, RuntimeError):
    """Anomaly mode found a NaN or Inf: names the op, forward or backward, the inputs'
    statistics and the line of user code that created the op."""
