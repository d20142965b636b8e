"""``torch.cuda``'s common calls (``current_device``, ``set_device``, ``get_device_name``,
``is_bf16_supported``, ``memory_allocated``, ``empty_cache``...), answered with CuPy when a
GPU is usable and, when none is, with PyTorch's answers for a machine without one
(:mod:`pullback._cuda_absent`, the same module that stands in for this package when it is not
installed).

pullback's ``"cuda"`` is ``cuda:0``: ``set_device(i)`` for another GPU is refused (address it
as ``"cuda:i"``). CuPy's memory pool keeps no peak: ``max_memory_allocated`` and
``reset_peak_memory_stats`` are refused on a GPU.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pullback._cuda_absent as _absent
from pullback.errors import UnsupportedError

from ._cupy import probe


def _cupy() -> Any:
    return probe().cupy if probe().reason is None else None


def _index(device: Any) -> int:
    return 0 if device is None else _absent.device_index(device)


@dataclass(frozen=True)
class DeviceProperties:
    """What ``get_device_properties`` tells (PyTorch's field names)."""

    name: str
    major: int
    minor: int
    total_memory: int
    multi_processor_count: int


def current_device() -> int:
    """The current device's index (0: pullback's ``"cuda"`` is ``cuda:0``)."""
    cupy = _cupy()
    return _absent.current_device() if cupy is None else int(cupy.cuda.runtime.getDevice())


def set_device(device: Any) -> None:
    """Make ``device`` current: ``cuda:0`` (a negative index is a no-op, as PyTorch's)."""
    if _cupy() is None:
        return _absent.set_device(device)
    index = _absent.device_index(device)
    if index > 0:
        raise UnsupportedError(f"set_device({device!r}): pullback's 'cuda' is cuda:0; address "
                               f"this GPU as 'cuda:{index}'")
    return None


def get_device_properties(device: Any = None) -> DeviceProperties:
    """Name, compute capability, memory and multiprocessors of a GPU."""
    cupy = _cupy()
    if cupy is None:
        return _absent.get_device_properties(device)
    props = cupy.cuda.runtime.getDeviceProperties(_index(device))
    name = props["name"]
    return DeviceProperties(name.decode() if isinstance(name, bytes) else str(name),
                            int(props["major"]), int(props["minor"]),
                            int(props["totalGlobalMem"]), int(props["multiProcessorCount"]))


def get_device_name(device: Any = None) -> str:
    """The GPU's name."""
    if _cupy() is None:
        return _absent.get_device_name(device)
    return get_device_properties(device).name


def get_device_capability(device: Any = None) -> tuple[int, int]:
    """The GPU's compute capability ``(major, minor)``."""
    if _cupy() is None:
        return _absent.get_device_capability(device)
    props = get_device_properties(device)
    return props.major, props.minor


def is_bf16_supported(including_emulation: bool = True) -> bool:
    """Whether the GPU computes in bfloat16 (compute capability 8.0 and up)."""
    return _cupy() is not None and get_device_capability()[0] >= 8


def is_tf32_supported() -> bool:
    """Whether the GPU has TF32 tensor cores (compute capability 8.0 and up)."""
    return is_bf16_supported()


def is_initialized() -> bool:
    """Whether a GPU is usable (CuPy creates its context on first use)."""
    return _cupy() is not None


def init() -> None:
    """Nothing to do with a GPU (CuPy initializes on first use); refused without one."""
    if _cupy() is None:
        _absent.init()


def _pool() -> Any:
    cupy = _cupy()
    return None if cupy is None else cupy.get_default_memory_pool()


def memory_allocated(device: Any = None) -> int:
    """Bytes of GPU memory held by tensors (CuPy's pool in use)."""
    pool = _pool()
    return 0 if pool is None else int(pool.used_bytes())


def memory_reserved(device: Any = None) -> int:
    """Bytes of GPU memory the pool holds (in use or cached)."""
    pool = _pool()
    return 0 if pool is None else int(pool.total_bytes())


def max_memory_allocated(device: Any = None) -> int:
    """0 without a GPU; refused on one (CuPy's pool keeps no peak)."""
    if _cupy() is None:
        return 0
    raise UnsupportedError("max_memory_allocated: CuPy's memory pool keeps no peak; use "
                           "memory_allocated() or pullback.cuda.memory_info()")


max_memory_reserved = max_memory_allocated


def reset_peak_memory_stats(device: Any = None) -> None:
    """Refused: without a GPU as PyTorch, with one since CuPy's pool keeps no peak."""
    if _cupy() is None:
        _absent.reset_peak_memory_stats(device)
    raise UnsupportedError("reset_peak_memory_stats: CuPy's memory pool keeps no peak")


def empty_cache() -> None:
    """Give the pool's cached blocks back to the driver."""
    pool = _pool()
    if pool is not None:
        pool.free_all_blocks()


def mem_get_info(device: Any = None) -> tuple[int, int]:
    """``(free, total)`` bytes of the GPU."""
    cupy = _cupy()
    if cupy is None:
        return _absent.mem_get_info(device)
    with cupy.cuda.Device(_index(device)):
        free, total = cupy.cuda.runtime.memGetInfo()
    return int(free), int(total)


class device(_absent.device):  # noqa: N801 - torch.cuda.device's name
    """``with torch.cuda.device(i):``: ``cuda:i`` current inside the block."""

    def __enter__(self) -> None:
        cupy = _cupy()
        if cupy is None or self.idx < 0:
            return super().__enter__()
        self._scope = cupy.cuda.Device(self.idx)
        self._scope.__enter__()
        return None

    def __exit__(self, *exc: object) -> None:
        scope = self.__dict__.pop("_scope", None)
        if scope is not None:
            scope.__exit__(*exc)


class device_of(device):  # noqa: N801 - torch.cuda.device_of's name
    """``with torch.cuda.device_of(tensor):``: the tensor's GPU current inside the block."""

    def __init__(self, obj: Any) -> None:
        super().__init__(obj.get_device() if getattr(obj, "is_cuda", False) else -1)


# answered as without a GPU whether or not there is one (no per-device state to report)
memory_stats = _absent.memory_stats
get_arch_list = _absent.get_arch_list
