"""``pullback.nn.init``: fill parameters in place (PyTorch's ``torch.nn.init``).

Every function works under ``no_grad``, draws from the device's seeded generator (or
``generator=``, a NumPy ``Generator``) and returns the tensor it filled.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

import pullback
from pullback.errors import ShapeError
from pullback.tensor import Tensor

_LINEAR_GAINS = ("linear", "conv1d", "conv2d", "conv3d", "conv_transpose1d",
                 "conv_transpose2d", "conv_transpose3d", "sigmoid")


def calculate_gain(nonlinearity: str, param: float | None = None) -> float:
    """The recommended gain for a nonlinearity (PyTorch's table).

    linear/conv/sigmoid: 1; tanh: 5/3; relu: sqrt(2); leaky_relu: sqrt(2 / (1 + slope^2))
    (slope ``param``, 0.01 by default); selu: 3/4.
    """
    if nonlinearity in _LINEAR_GAINS:
        return 1.0
    if nonlinearity == "tanh":
        return 5.0 / 3
    if nonlinearity == "relu":
        return math.sqrt(2.0)
    if nonlinearity == "leaky_relu":
        if param is None:
            slope = 0.01
        elif isinstance(param, (int, float)) and not isinstance(param, bool):
            slope = float(param)
        else:
            raise ValueError(f"calculate_gain: negative_slope {param!r} is not a number")
        return math.sqrt(2.0 / (1 + slope ** 2))
    if nonlinearity == "selu":
        return 3.0 / 4
    raise ValueError(f"calculate_gain: unsupported nonlinearity {nonlinearity!r}")


def _calculate_fan_in_and_fan_out(tensor: Tensor) -> tuple[int, int]:
    """Fans of a weight (out, in, *kernel): in * receptive field and out * receptive field."""
    if tensor.ndim < 2:
        raise ShapeError(f"init: fan in and fan out need a tensor with at least 2 dims, got "
                         f"shape {tuple(tensor.shape)}")
    receptive = math.prod(tensor.shape[2:])
    return tensor.shape[1] * receptive, tensor.shape[0] * receptive


def _fan(tensor: Tensor, mode: str) -> int:
    if mode not in ("fan_in", "fan_out"):
        raise ValueError(f"init: mode must be 'fan_in' or 'fan_out', got {mode!r}")
    fan_in, fan_out = _calculate_fan_in_and_fan_out(tensor)
    return fan_in if mode == "fan_in" else fan_out


def _fill(tensor: Tensor, values: Any) -> Tensor:
    with pullback.no_grad():
        tensor.copy_(pullback.tensor(values, dtype=tensor.dtype, device=tensor.device))
    return tensor


def _draw(tensor: Tensor, generator: Any, method: str, *args: float,
          size: tuple[int, ...], dtype: Any = None) -> Any:
    """``generator.<method>(*args, size)`` as an array of the tensor's backend (the device's
    own generator by default), so that the arithmetic that follows runs where the tensor is.
    The samples are cast to ``dtype`` (default: the tensor's float type, else float64)."""
    dev = tensor.device
    gen = generator if generator is not None else dev.backend.generator(dev.index or 0)
    values = getattr(gen, method)(*args, size=size)
    return dev.backend.asarray(values, dtype=dtype or _sample_dtype(tensor), index=dev.index or 0)


def _sample_dtype(tensor: Tensor) -> Any:
    return tensor.dtype if tensor.dtype in (np.float32, np.float64) else np.float64


def uniform_(tensor: Tensor, a: float = 0.0, b: float = 1.0, generator: Any = None) -> Tensor:
    """Fill with samples from U(a, b)."""
    return _fill(tensor, _draw(tensor, generator, "uniform", a, b, size=tuple(tensor.shape)))


def normal_(tensor: Tensor, mean: float = 0.0, std: float = 1.0, generator: Any = None) -> Tensor:
    """Fill with samples from N(mean, std^2)."""
    return _fill(tensor, _draw(tensor, generator, "normal", mean, std, size=tuple(tensor.shape)))


def trunc_normal_(tensor: Tensor, mean: float = 0.0, std: float = 1.0, a: float = -2.0,
                  b: float = 2.0, generator: Any = None) -> Tensor:
    """Fill with N(mean, std^2) samples restricted to [a, b] (resampling what falls outside)."""
    xp = tensor.device.backend.xp
    n = int(np.prod(tensor.shape))
    out = xp.empty(0, dtype=_sample_dtype(tensor))
    while out.size < n:
        draw = _draw(tensor, generator, "normal", mean, std, size=(max(2 * (n - out.size), 16),))
        out = xp.concatenate([out, draw[(draw >= a) & (draw <= b)]])
    return _fill(tensor, out[:n].reshape(tuple(tensor.shape)))


def constant_(tensor: Tensor, val: float) -> Tensor:
    """Fill with ``val``."""
    with pullback.no_grad():
        tensor.fill_(val)
    return tensor


def zeros_(tensor: Tensor) -> Tensor:
    """Fill with 0."""
    return constant_(tensor, 0.0)


def ones_(tensor: Tensor) -> Tensor:
    """Fill with 1."""
    return constant_(tensor, 1.0)


def eye_(tensor: Tensor) -> Tensor:
    """Fill a 2-d tensor with the identity."""
    if tensor.ndim != 2:
        raise ShapeError(f"eye_: expected a 2-d tensor, got shape {tuple(tensor.shape)}")
    return _fill(tensor, np.eye(tensor.shape[0], tensor.shape[1]))


def xavier_uniform_(tensor: Tensor, gain: float = 1.0, generator: Any = None) -> Tensor:
    """U(-a, a) with ``a = gain * sqrt(6 / (fan_in + fan_out))`` (Glorot & Bengio)."""
    fan_in, fan_out = _calculate_fan_in_and_fan_out(tensor)
    bound = gain * math.sqrt(6.0 / float(fan_in + fan_out))
    return uniform_(tensor, -bound, bound, generator)


def xavier_normal_(tensor: Tensor, gain: float = 1.0, generator: Any = None) -> Tensor:
    """N(0, std^2) with ``std = gain * sqrt(2 / (fan_in + fan_out))``."""
    fan_in, fan_out = _calculate_fan_in_and_fan_out(tensor)
    return normal_(tensor, 0.0, gain * math.sqrt(2.0 / float(fan_in + fan_out)), generator)


def kaiming_uniform_(tensor: Tensor, a: float = 0.0, mode: str = "fan_in",
                     nonlinearity: str = "leaky_relu", generator: Any = None) -> Tensor:
    """U(-b, b) with ``b = gain * sqrt(3 / fan)`` (He et al.); ``a`` is the leaky slope."""
    std = calculate_gain(nonlinearity, a) / math.sqrt(_fan(tensor, mode))
    bound = math.sqrt(3.0) * std
    return uniform_(tensor, -bound, bound, generator)


def kaiming_normal_(tensor: Tensor, a: float = 0.0, mode: str = "fan_in",
                    nonlinearity: str = "leaky_relu", generator: Any = None) -> Tensor:
    """N(0, std^2) with ``std = gain / sqrt(fan)``."""
    std = calculate_gain(nonlinearity, a) / math.sqrt(_fan(tensor, mode))
    return normal_(tensor, 0.0, std, generator)


def orthogonal_(tensor: Tensor, gain: float = 1.0, generator: Any = None) -> Tensor:
    """A (semi-)orthogonal matrix (rows flattened from the trailing axes), times ``gain``.

    QR of a Gaussian matrix with the signs of R's diagonal folded into Q, so that Q is drawn
    uniformly (Saxe et al.; PyTorch's method).
    """
    if tensor.ndim < 2:
        raise ShapeError(f"orthogonal_: expected at least 2 dims, got shape {tuple(tensor.shape)}")
    rows = tensor.shape[0]
    cols = tensor.numel() // rows if rows else 0
    xp = tensor.device.backend.xp
    # the QR in float64, as the samples come: Q is orthogonal to float64 precision before the cast
    flat = _draw(tensor, generator, "normal", 0.0, 1.0, size=(rows, cols), dtype=np.float64)
    if rows < cols:
        flat = flat.T
    q, r = xp.linalg.qr(flat)
    q = q * xp.sign(xp.diag(r))
    if rows < cols:
        q = q.T
    return _fill(tensor, (gain * q).reshape(tuple(tensor.shape)))


def dirac_(tensor: Tensor, groups: int = 1) -> Tensor:
    """Fill a 3-, 4- or 5-d convolution weight with the Dirac delta: each of the first
    ``min(out/groups, in)`` output channels of every group passes its input channel through
    (a 1 at the kernel's centre), so the convolution starts as the identity."""
    if tensor.ndim not in (3, 4, 5):
        raise ShapeError(f"dirac_: expected a 3-, 4- or 5-d tensor, got shape "
                         f"{tuple(tensor.shape)}")
    if groups < 1 or tensor.shape[0] % groups:
        raise ValueError(f"dirac_: dim 0 ({tensor.shape[0]}) must be divisible by groups "
                         f"({groups})")
    per_group = tensor.shape[0] // groups
    values = np.zeros(tuple(tensor.shape))
    centre = tuple(size // 2 for size in tensor.shape[2:])
    for g in range(groups):
        for d in range(min(per_group, tensor.shape[1])):
            values[(g * per_group + d, d) + centre] = 1.0
    return _fill(tensor, values)


def sparse_(tensor: Tensor, sparsity: float, std: float = 0.01, generator: Any = None) -> Tensor:
    """Fill a 2-d tensor with N(0, std^2) samples and zero ``ceil(sparsity * rows)`` randomly
    chosen entries of each column (Martens, 2010)."""
    if tensor.ndim != 2:
        raise ShapeError(f"sparse_: expected a 2-d tensor, got shape {tuple(tensor.shape)}")
    rows, cols = tensor.shape
    zeros_per_column = int(math.ceil(sparsity * rows))
    xp = tensor.device.backend.xp
    values = _draw(tensor, generator, "normal", 0.0, std, size=(rows, cols))
    # one uniform key per entry, sorted down each column: a random permutation of its rows
    keys = _draw(tensor, generator, "random", size=(rows, cols), dtype=np.float64)
    dropped = xp.argsort(keys, axis=0)[:zeros_per_column]
    values[dropped, xp.arange(cols)[None, :]] = 0
    return _fill(tensor, values)


def _deprecated(new: Any) -> Any:
    """PyTorch's old names without the trailing underscore: the same function, with its
    FutureWarning."""
    import functools
    import warnings

    old = new.__name__[:-1]

    @functools.wraps(new)
    def fill(*args: Any, **kwargs: Any) -> Tensor:
        warnings.warn(f"`nn.init.{old}` is now deprecated in favor of `nn.init.{new.__name__}`.",
                      FutureWarning, stacklevel=2)
        return new(*args, **kwargs)

    fill.__name__ = fill.__qualname__ = old
    return fill


uniform = _deprecated(uniform_)
normal = _deprecated(normal_)
constant = _deprecated(constant_)
eye = _deprecated(eye_)
dirac = _deprecated(dirac_)
xavier_uniform = _deprecated(xavier_uniform_)
xavier_normal = _deprecated(xavier_normal_)
kaiming_uniform = _deprecated(kaiming_uniform_)
kaiming_normal = _deprecated(kaiming_normal_)
orthogonal = _deprecated(orthogonal_)
sparse = _deprecated(sparse_)

__all__ = [
    "calculate_gain", "constant", "constant_", "dirac", "dirac_", "eye", "eye_",
    "kaiming_normal", "kaiming_normal_", "kaiming_uniform", "kaiming_uniform_", "normal",
    "normal_", "ones_", "orthogonal", "orthogonal_", "sparse", "sparse_", "trunc_normal_",
    "uniform", "uniform_", "xavier_normal", "xavier_normal_", "xavier_uniform",
    "xavier_uniform_", "zeros_",
]
