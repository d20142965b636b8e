"""Exception types. Each message names what was wrong: the op, shapes, dtypes, devices or file.

Every class also derives from the built-in exception PyTorch raises in the same situation, so
``except RuntimeError:`` or ``except IndexError:`` in code ported from PyTorch still catches it:

=========================  ==========================================  ==========================
class                      situation                                   also a
=========================  ==========================================  ==========================
ShapeError                 shapes that do not fit an op                ValueError, RuntimeError
AxisError                  a dim outside the tensor's range            ShapeError, IndexError
DTypeError                 dtypes that cannot be combined or cast      TypeError, RuntimeError
UnsupportedDTypeError      an op that has no kernel for a dtype        DTypeError,
                                                                       NotImplementedError
NonNumericDataError        tensor data that is not numbers (strings)   DTypeError, ValueError
ArgumentError              an argument value an op does not accept     ValueError, RuntimeError
CheckpointError            a damaged checkpoint, a state dict that     ValueError, RuntimeError
                           does not fit
ArgumentTypeError          an argument that is no Tensor, number or    TypeError
                           array (a list, a string, another object)
UnsupportedError           a mode or feature that is not implemented   ArgumentError,
                                                                       NotImplementedError
IndexOutOfRangeError       an index outside the axis it indexes        IndexError, RuntimeError
IndexDTypeError            an index tensor that is not integer or bool DTypeError, IndexError
IndexShapeError            an index tensor of a shape the op refuses   ShapeError, IndexError
DivisionByZeroError        integer division by zero                    ZeroDivisionError,
                                                                       RuntimeError
DeviceError                tensors on different or unknown devices     RuntimeError
DeviceUnavailableError     a device type with no usable device         DeviceError,
                           (``cuda`` without a GPU)                    AssertionError
AutogradError              misuse of autograd                          RuntimeError
=========================  ==========================================  ==========================
"""

from __future__ import annotations


class PullbackError(Exception):
    """Base class of every error pullback raises on purpose."""


class ShapeError(PullbackError, ValueError, RuntimeError):
    """Shapes that do not fit an op (broadcasting, matmul, reshape...).

    A ValueError (as NumPy raises) and a RuntimeError (as PyTorch raises).
    """


class AxisError(ShapeError, IndexError):
    """A dim (axis) outside the range of the tensor's dims: an IndexError, as in PyTorch
    ("Dimension out of range") and NumPy (``numpy.exceptions.AxisError``)."""


class DTypeError(PullbackError, TypeError, RuntimeError):
    """A dtype an op cannot take, or two dtypes that cannot be combined or cast (PyTorch raises
    RuntimeError there, e.g. "result type Float can't be cast to the desired output type Int")."""


class UnsupportedDTypeError(DTypeError, NotImplementedError):
    """An op that is not implemented for a dtype (bitwise ops on floats, shifts of floats): a
    NotImplementedError, as PyTorch's "not implemented for 'Float'"."""


class NonNumericDataError(DTypeError, ValueError):
    """Data for a tensor that is not numbers or booleans (strings, bytes, dates): a DTypeError,
    and the ValueError PyTorch raises for strings ("too many dimensions 'str'")."""


class ArgumentError(PullbackError, ValueError, RuntimeError):
    """An argument value an op does not accept (a rounding mode, an approximation name, a
    negative size...): a ValueError, and the RuntimeError PyTorch raises."""


class ArgumentTypeError(PullbackError, TypeError):
    """An argument of a type no op takes (a list, a string, an unrelated object): PyTorch's
    TypeError ("argument 'other' must be Tensor, not list")."""


class UnsupportedError(ArgumentError, NotImplementedError):
    """A mode or feature that is not implemented (an unknown padding mode): PyTorch's
    NotImplementedError."""


class DeviceError(PullbackError, RuntimeError):
    """Tensors on different devices, or a device that is unknown or unavailable."""


class DeviceUnavailableError(DeviceError, AssertionError):
    """A device type with no usable device here (``cuda`` without a GPU or without
    pullback-cuda): the RuntimeError a CUDA build of PyTorch raises on a machine without a GPU,
    and the AssertionError of a CPU-only build ("Torch not compiled with CUDA enabled")."""


class IndexOutOfRangeError(PullbackError, IndexError, RuntimeError):
    """An index outside the size of the axis it indexes (PyTorch raises IndexError from
    ``x[i]`` and RuntimeError from gather, scatter and one_hot: this is both)."""


class IndexDTypeError(DTypeError, IndexError):
    """An index tensor that is neither integer nor bool (PyTorch: IndexError)."""


class IndexShapeError(ShapeError, IndexError):
    """An index tensor of a shape the op refuses (``index_select`` wants a vector)."""


class AutogradError(PullbackError, RuntimeError):
    """Misuse of autograd: a freed graph, a modified saved tensor, a non-scalar root..."""


class RegistryError(PullbackError, LookupError):
    """An op, rule, kernel, backend or plugin that is missing or registered twice."""


class PluginError(PullbackError, RuntimeError):
    """A plugin that cannot be loaded (incompatible hook API, duplicate registration)."""


class MissingPackageError(PullbackError, ImportError):
    """An optional pullback distribution is not installed."""


class CheckpointError(PullbackError, ValueError, RuntimeError):
    """A checkpoint file that is truncated, malformed or holds something unexpected, or a state
    dict that does not fit a module (PyTorch raises RuntimeError for both)."""


class AnomalyError(PullbackError, RuntimeError):
    """Anomaly mode found a NaN or Inf: names the op, forward or backward, the inputs'
    statistics and the line of user code that created the op."""


class DivisionByZeroError(PullbackError, ZeroDivisionError, RuntimeError):
    """Integer division or remainder by zero (floating division gives inf or NaN instead)."""
