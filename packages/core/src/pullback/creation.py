"""Creating tensors: from data, constants, ranges, random numbers, DLPack."""

from __future__ import annotations

import builtins
from typing import Any, Sequence

import numpy as np

from .backends import Device, backends
from .dtypes import get_default_dtype, is_floating, to_dtype
from .errors import ArgumentError, DTypeError, NonNumericDataError
from .dispatch import draw_random as _draw_random
from .dispatch import state as _dispatch_state
from .tensor import Tensor, default_device


def _device(device: Any) -> Device:
    return default_device() if device is None else Device(device)


def _infer_dtype(host: np.ndarray, from_python: bool) -> np.dtype:
    """PyTorch's inference: Python floats become the default dtype, ints int64."""
    if from_python and host.dtype == np.float64:
        return get_default_dtype()
    if from_python and host.dtype.kind in "iu":
        return np.dtype(np.int64)
    return host.dtype


def _array_from(data: Any, dtype: Any, device: Any, copy: bool = True) -> tuple[Any, Device]:
    """Backend array and device for ``data`` (a Tensor, array, DLPack producer or nested list)."""
    if isinstance(data, Tensor):
        dev = data.device if device is None else Device(device)
        t = data.to(dev) if dev is not data.device else data
        arr = t.array
        if dtype is not None:
            arr = arr.astype(to_dtype(dtype), copy=copy)
        elif copy:
            arr = arr.copy()
        return arr, dev
    if not isinstance(data, (np.ndarray, np.generic)) and hasattr(data, "__dlpack_device__"):
        t = from_dlpack(data)
        return _array_from(t, dtype, device, copy)
    from_python = not isinstance(data, (np.ndarray, np.generic))
    if from_python and _holds_tensors(data):
        data = [_host(x) for x in data]
    host = np.array(data, copy=True) if copy and not from_python else np.asarray(data)
    if host.dtype == object:
        raise DTypeError(f"tensor(): cannot make a tensor from {type(data).__name__} of mixed types")
    _check_numeric("tensor()", host)
    dt = to_dtype(dtype) if dtype is not None else _infer_dtype(host, from_python)
    dev = _device(device)
    if host.dtype != dt:
        host = host.astype(dt)
    if dev.type == "cpu":
        return host, dev
    return dev.backend.from_host(host, dev.index or 0), dev


def _check_numeric(where: str, host: np.ndarray) -> None:
    """Tensors hold numbers and booleans: strings, bytes, dates and records are refused (NumPy
    would make a string array, or parse "1.5" into a float when a dtype is given)."""
    if host.dtype.kind not in "biufc" and not is_floating(host.dtype):
        raise NonNumericDataError(f"{where}: cannot make a tensor of dtype {host.dtype} (from "
                         f"{host.reshape(-1)[:3].tolist()!r}...); tensors hold numbers and "
                         "booleans")


def _holds_tensors(data: Any) -> bool:
    return isinstance(data, (list, tuple)) and builtins.any(isinstance(x, Tensor) for x in data)


def _host(x: Any) -> Any:
    if isinstance(x, Tensor):
        return x.device.backend.to_host(x.array)
    if isinstance(x, (list, tuple)):
        return [_host(v) for v in x]
    return x


def tensor(data: Any, dtype: Any = None, device: Any = None,
           requires_grad: bool = False) -> Tensor:
    """A new tensor holding a copy of ``data`` (Python floats become float32, ints int64)."""
    if isinstance(data, Tensor):
        import warnings

        warnings.warn("To copy construct from a tensor, it is recommended to use "
                      "sourceTensor.detach().clone() or sourceTensor.detach().clone()"
                      ".requires_grad_(True), rather than torch.tensor(sourceTensor).",
                      UserWarning, stacklevel=2)
    arr, dev = _array_from(data, dtype, device, copy=True)
    t = Tensor._wrap(arr, dev)
    if requires_grad:
        t.requires_grad = True
    return t


def as_tensor(data: Any, dtype: Any = None, device: Any = None) -> Tensor:
    """Like :func:`tensor`, but shares memory with ``data`` when it can."""
    if isinstance(data, Tensor) and dtype is None and (device is None or Device(device) is data.device):
        return data
    arr, dev = _array_from(data, dtype, device, copy=False)
    return Tensor._wrap(arr, dev)


def from_numpy(array: np.ndarray) -> Tensor:
    """A CPU tensor sharing memory with a NumPy array."""
    if not isinstance(array, np.ndarray):
        raise TypeError(f"from_numpy expects a numpy.ndarray, got {type(array).__name__}")
    _check_numeric("from_numpy()", array)
    return Tensor._wrap(array, default_device())


def from_dlpack(obj: Any) -> Tensor:
    """Import any DLPack producer (NumPy, CuPy, PyTorch, JAX arrays) without copying."""
    if isinstance(obj, Tensor):
        return obj
    dev_type, dev_index = obj.__dlpack_device__()
    for backend in backends().values():
        if backend.dlpack_device_type == dev_type and backend.is_available():
            arr = backend.from_dlpack(obj)
            name = backend.name if backend.name == "cpu" else f"{backend.name}:{int(dev_index)}"
            return Tensor._wrap(arr, Device(name))
    raise DTypeError(f"from_dlpack: no available backend for DLPack device type {dev_type}")


def _shape(shape: Sequence[Any], size: Any = None) -> tuple[int, ...]:
    """The shape from ``f(2, 3)``, ``f((2, 3))`` or PyTorch's keyword ``f(size=(2, 3))``."""
    if size is not None:
        if shape:
            raise TypeError("pass the shape as sizes or as size=, not both")
        shape = (size,)
    if len(shape) == 1 and isinstance(shape[0], (tuple, list)):
        shape = tuple(shape[0])
    sizes = tuple(int(s) for s in shape)
    if builtins.any(s < 0 for s in sizes):
        raise ArgumentError(f"Trying to create tensor with negative dimension: {sizes}")
    return sizes


def _make(fill: Any, shape: tuple[int, ...], dtype: Any, device: Any, requires_grad: bool) -> Tensor:
    dev = _device(device)
    dt = to_dtype(dtype)
    with dev.backend.device_scope(dev.index or 0):
        t = Tensor._wrap(fill(dev.backend.xp, shape, dt), dev)
    if requires_grad:
        t.requires_grad = True
    return t


def zeros(*shape: Any, size: Any = None, dtype: Any = None, device: Any = None,
          requires_grad: bool = False) -> Tensor:
    """A tensor of zeros."""
    return _make(lambda xp, s, d: xp.zeros(s, dtype=d), _shape(shape, size), dtype, device,
                 requires_grad)


def ones(*shape: Any, size: Any = None, dtype: Any = None, device: Any = None,
         requires_grad: bool = False) -> Tensor:
    """A tensor of ones."""
    return _make(lambda xp, s, d: xp.ones(s, dtype=d), _shape(shape, size), dtype, device,
                 requires_grad)


def empty(*shape: Any, size: Any = None, dtype: Any = None, device: Any = None,
          requires_grad: bool = False) -> Tensor:
    """An uninitialized tensor."""
    return _make(lambda xp, s, d: xp.empty(s, dtype=d), _shape(shape, size), dtype, device,
                 requires_grad)


def full(shape: Any, fill_value: Any, dtype: Any = None, device: Any = None,
         requires_grad: bool = False) -> Tensor:
    """A tensor filled with ``fill_value`` (dtype inferred from it when not given)."""
    if dtype is None:
        dtype = _scalar_dtype(fill_value)
    shape = (shape,) if isinstance(shape, int) else tuple(shape)
    return _make(lambda xp, s, d: xp.full(s, fill_value, dtype=d), shape, dtype, device,
                 requires_grad)


def _scalar_dtype(value: Any) -> np.dtype:
    if isinstance(value, bool):
        return np.dtype(bool)
    if isinstance(value, int):
        return np.dtype(np.int64)
    return get_default_dtype()


def _like(fn: Any, x: Tensor, dtype: Any, device: Any, requires_grad: bool, *args: Any) -> Tensor:
    return fn(*args, dtype=x.dtype if dtype is None else dtype,
              device=x.device if device is None else device, requires_grad=requires_grad)


def zeros_like(x: Tensor, dtype: Any = None, device: Any = None, requires_grad: bool = False) -> Tensor:
    """Zeros with ``x``'s shape, dtype and device."""
    return _like(zeros, x, dtype, device, requires_grad, tuple(x.shape))


def ones_like(x: Tensor, dtype: Any = None, device: Any = None, requires_grad: bool = False) -> Tensor:
    """Ones with ``x``'s shape, dtype and device."""
    return _like(ones, x, dtype, device, requires_grad, tuple(x.shape))


def empty_like(x: Tensor, dtype: Any = None, device: Any = None, requires_grad: bool = False) -> Tensor:
    """Uninitialized, with ``x``'s shape, dtype and device."""
    return _like(empty, x, dtype, device, requires_grad, tuple(x.shape))


def full_like(x: Tensor, fill_value: Any, dtype: Any = None, device: Any = None,
              requires_grad: bool = False) -> Tensor:
    """``fill_value`` everywhere, with ``x``'s shape, dtype and device."""
    return _like(full, x, dtype, device, requires_grad, tuple(x.shape), fill_value)


def arange(start: Any, end: Any = None, step: Any = 1, dtype: Any = None, device: Any = None,
           requires_grad: bool = False) -> Tensor:
    """Values from ``start`` (inclusive) to ``end`` (exclusive) by ``step``."""
    if end is None:
        start, end = 0, start
    if step == 0:
        raise ArgumentError(f"arange: step must be nonzero, got arange({start}, {end}, {step})")
    if (end - start) * step < 0:
        raise ArgumentError(f"arange: the bounds ({start}, {end}) and the sign of step {step} "
                            "are inconsistent (PyTorch refuses them; NumPy returns nothing)")
    if dtype is None:
        ints = builtins.all(isinstance(v, (int, np.integer)) for v in (start, end, step))
        dtype = np.int64 if ints else get_default_dtype()
    dev = _device(device)
    with dev.backend.device_scope(dev.index or 0):
        t = Tensor._wrap(dev.backend.xp.arange(start, end, step, dtype=to_dtype(dtype)), dev)
    if requires_grad:
        t.requires_grad = True
    return t


def linspace(start: float, end: float, steps: int, dtype: Any = None, device: Any = None,
             requires_grad: bool = False) -> Tensor:
    """``steps`` evenly spaced values from ``start`` to ``end`` inclusive (integer dtypes
    truncate toward zero, as in PyTorch; NumPy rounds down)."""
    if not isinstance(steps, (int, np.integer)) or isinstance(steps, bool):
        raise DTypeError(f"linspace(): argument 'steps' must be int, not {type(steps).__name__}")
    if steps < 0:
        raise ArgumentError(f"linspace(): number of steps must be non-negative, got {steps}")
    dev = _device(device)
    dt = to_dtype(dtype)
    xp = dev.backend.xp
    with dev.backend.device_scope(dev.index or 0):
        if dt.kind in "iub":
            arr = xp.trunc(xp.linspace(start, end, steps, dtype=xp.float64)).astype(dt)
        else:
            arr = xp.linspace(start, end, steps, dtype=dt)
    t = Tensor._wrap(arr, dev)
    if requires_grad:
        t.requires_grad = True
    return t


def eye(n: int, m: int | None = None, dtype: Any = None, device: Any = None,
        requires_grad: bool = False) -> Tensor:
    """The identity matrix (``n`` x ``m``)."""
    return _make(lambda xp, s, d: xp.eye(n, m, dtype=d), (n, m or n), dtype, device, requires_grad)


# -- random numbers ---------------------------------------------------------------------------

def manual_seed(seed: int) -> None:
    """Seed the generators of every available backend (reproducible per backend)."""
    for backend in backends().values():
        if backend.is_available():
            backend.manual_seed(int(seed))


def _random(sample: Any, shape: tuple[int, ...], dtype: Any, device: Any,
            requires_grad: bool, generator: Any = None) -> Tensor:
    dev = _device(device)
    dt = to_dtype(dtype)
    if not is_floating(dt):
        raise DTypeError(f"random floats need a floating dtype, got {dt}")
    gen = generator if generator is not None else dev.backend.generator(dev.index or 0)
    # NumPy's generators sample float32/float64 only; other float dtypes are cast.
    sample_dt = dt if dt in (np.float32, np.float64) else np.dtype(np.float32)

    def draw(size: tuple[int, ...]) -> Tensor:
        arr = sample(gen, size, sample_dt)
        return Tensor._wrap(arr if arr.dtype == dt else arr.astype(dt), dev)

    t = _draw_random(draw, shape) if _dispatch_state.modes else draw(shape)
    if requires_grad:
        t.requires_grad = True
    return t


def rand(*shape: Any, size: Any = None, dtype: Any = None, device: Any = None,
         requires_grad: bool = False, generator: Any = None) -> Tensor:
    """Uniform samples in [0, 1)."""
    return _random(lambda g, s, d: g.random(s, dtype=d), _shape(shape, size), dtype, device,
                   requires_grad, generator)


def randn(*shape: Any, size: Any = None, dtype: Any = None, device: Any = None,
          requires_grad: bool = False, generator: Any = None) -> Tensor:
    """Standard normal samples."""
    return _random(lambda g, s, d: g.standard_normal(s, dtype=d), _shape(shape, size), dtype,
                   device, requires_grad, generator)


def normal(mean: float = 0.0, std: float = 1.0, size: Any = (), dtype: Any = None,
           device: Any = None, requires_grad: bool = False, generator: Any = None) -> Tensor:
    """Samples from N(mean, std^2)."""
    size = (size,) if isinstance(size, int) else tuple(size)
    return _random(lambda g, s, d: g.standard_normal(s, dtype=d) * d.type(std) + d.type(mean),
                   size, dtype, device, requires_grad, generator)


def uniform(low: float = 0.0, high: float = 1.0, size: Any = (), dtype: Any = None,
            device: Any = None, requires_grad: bool = False, generator: Any = None) -> Tensor:
    """Samples from U(low, high)."""
    size = (size,) if isinstance(size, int) else tuple(size)
    return _random(lambda g, s, d: g.random(s, dtype=d) * d.type(high - low) + d.type(low),
                   size, dtype, device, requires_grad, generator)


def randint(low: int, high: Any = None, size: Any = (), dtype: Any = None,
            device: Any = None, generator: Any = None) -> Tensor:
    """Integers in [low, high), with PyTorch's signatures: ``randint(low, high, size)``,
    ``randint(high, size)`` and ``randint(high, size=size)``."""
    if high is not None and not isinstance(high, (int, np.integer)):
        high, size = None, high  # randint(high, size): the second argument is the shape
    if high is None:
        low, high = 0, low
    if low >= high:
        raise ArgumentError(f"randint: low must be less than high, got low={low} >= high={high}")
    dev = _device(device)
    gen = generator if generator is not None else dev.backend.generator(dev.index or 0)
    size = (size,) if isinstance(size, int) else tuple(size)
    dt = to_dtype(dtype) if dtype is not None else np.dtype(np.int64)

    def draw(shape: tuple[int, ...]) -> Tensor:
        return Tensor._wrap(gen.integers(low, high, size=shape, dtype=dt), dev)

    return _draw_random(draw, size) if _dispatch_state.modes else draw(size)


def randperm(n: int, device: Any = None, generator: Any = None) -> Tensor:
    """A random permutation of ``0..n-1`` (int64)."""
    dev = _device(device)
    gen = generator if generator is not None else dev.backend.generator(dev.index or 0)
    return Tensor._wrap(gen.permutation(n).astype(np.int64), dev)
