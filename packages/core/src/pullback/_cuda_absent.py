"""``pullback.cuda`` when there is no CUDA device: PyTorch's answers for a machine without one.

Ported scripts ask ``torch.cuda.is_available()`` first, then call ``set_device``,
``is_bf16_supported()``, ``memory_allocated()``, ``manual_seed_all`` and the like; with no GPU
PyTorch answers some of them (False, 0, nothing to do) and refuses the others. This module gives
the same answers, and refuses the same calls with a
:class:`~pullback.errors.DeviceUnavailableError` (PyTorch's RuntimeError on a machine without a
GPU, and its AssertionError without a CUDA build), saying why there is no device.

It serves twice: the import finder of :mod:`pullback._install_hint` loads it under the name
``pullback.cuda`` when pullback-cuda is not installed (then any other name is the one-line
error naming the distribution), and pullback-cuda answers with its functions when it finds no
usable GPU.

One difference from PyTorch: ``set_device(0)`` raises the DeviceUnavailableError (a CUDA build
without a GPU raises RuntimeError; a CPU-only build fails with an AttributeError of a missing
binding, which ported code does not expect either).
"""

from __future__ import annotations

import sys
from collections import OrderedDict
from typing import Any, NoReturn

from pullback._install_hint import MissingSubpackageError, missing_distribution_message
from pullback.amp import _cuda_amp as amp  # torch.cuda.amp: autocast, GradScaler for "cuda"
from pullback.errors import DeviceUnavailableError

_DISTRIBUTION = "pullback-cuda"
if __name__ == "pullback.cuda":  # loaded in pullback-cuda's place: ``import pullback.cuda.amp``
    sys.modules.setdefault(f"{__name__}.amp", amp)


def unavailable_reason() -> str:
    """Why there is no CUDA device: pullback-cuda's reason when it is installed (no CuPy, no
    driver, no GPU), else the command that installs it."""
    from pullback.backends import backends

    backend = backends().get("cuda")
    if backend is not None:
        return str(backend.unavailable_reason() or "no CUDA device")
    return missing_distribution_message("pullback.cuda", _DISTRIBUTION)


def _unavailable(call: str) -> NoReturn:
    raise DeviceUnavailableError(f"pullback.cuda.{call} needs a CUDA device, and none is "
                                 f"available: {unavailable_reason()}")


# -- what PyTorch answers without a GPU ------------------------------------------------------------
def is_available() -> bool:
    """False: there is no usable CUDA device."""
    return False


def device_count() -> int:
    """0: there is no usable CUDA device."""
    return 0


def is_initialized() -> bool:
    """False: no CUDA context was created."""
    return False


def is_bf16_supported(including_emulation: bool = True) -> bool:
    """False: there is no device to compute in bfloat16."""
    return False


def is_tf32_supported() -> bool:
    """False: there is no device to compute in TF32."""
    return False


def get_arch_list() -> list[str]:
    """``[]``: no GPU architecture."""
    return []


def empty_cache() -> None:
    """Nothing to free."""


def memory_allocated(device: Any = None) -> int:
    """0 bytes."""
    return 0


def memory_reserved(device: Any = None) -> int:
    """0 bytes."""
    return 0


max_memory_allocated = memory_allocated
max_memory_reserved = memory_reserved


def memory_stats(device: Any = None) -> dict[str, Any]:
    """An empty ``OrderedDict``."""
    return OrderedDict()


def manual_seed(seed: int) -> None:
    """Ignored without a GPU, as PyTorch's ``torch.cuda.manual_seed``."""


manual_seed_all = manual_seed


def seed() -> None:
    """Ignored without a GPU."""


seed_all = seed


def get_rng_state_all() -> list[Any]:
    """``[]``: one state per device, and there is none."""
    return []


def set_rng_state(new_state: Any, device: Any = "cuda") -> None:
    """Ignored without a GPU (PyTorch defers it to a CUDA initialization that never comes)."""


def set_rng_state_all(new_states: Any) -> None:
    """Ignored without a GPU."""
    for state in new_states:
        set_rng_state(state)


def set_device(device: Any) -> None:
    """Make ``device`` current: a negative index is a no-op and a non-CUDA device a ValueError,
    as PyTorch's; any CUDA device raises, since there is none."""
    if device_index(device) >= 0:
        _unavailable("set_device")


def device_index(device: Any) -> int:
    """The index of a CUDA device given as an int, ``"cuda:1"`` or a Device (PyTorch's
    ``_get_device_index``, with its ValueError for another device type or no index)."""
    if isinstance(device, int) and not isinstance(device, bool):
        return device
    if isinstance(device, str) or hasattr(device, "type"):
        from pullback.backends import Device

        parsed = Device(device)
        if parsed.type != "cuda":
            raise ValueError(f"Expected a cuda device, but got: {parsed}")
        return int(parsed.index or 0)
    raise ValueError(f"Expected a torch.device with a specified index or an integer, but got:"
                     f"{device}")


def current_device() -> int:
    """Refused: there is no current CUDA device."""
    _unavailable("current_device")


def synchronize(device: Any = None) -> None:
    """Refused: there is no CUDA device to wait for."""
    _unavailable("synchronize")


def get_device_name(device: Any = None) -> str:
    """Refused: there is no CUDA device."""
    _unavailable("get_device_name")


def get_device_properties(device: Any = None) -> Any:
    """Refused: there is no CUDA device."""
    _unavailable("get_device_properties")


def get_device_capability(device: Any = None) -> tuple[int, int]:
    """Refused: there is no CUDA device."""
    _unavailable("get_device_capability")


def mem_get_info(device: Any = None) -> tuple[int, int]:
    """Refused: there is no CUDA device."""
    _unavailable("mem_get_info")


def init() -> None:
    """Refused: CUDA cannot be initialized."""
    _unavailable("init")


def initial_seed() -> int:
    """Refused: there is no CUDA generator."""
    _unavailable("initial_seed")


def get_rng_state(device: Any = "cuda") -> Any:
    """Refused: there is no CUDA generator."""
    _unavailable("get_rng_state")


def reset_peak_memory_stats(device: Any = None) -> None:
    """Refused: there is no CUDA device."""
    _unavailable("reset_peak_memory_stats")


reset_max_memory_allocated = reset_peak_memory_stats


class device:  # noqa: N801 - torch.cuda.device's name
    """``with torch.cuda.device(i):``: a negative index (PyTorch's "no device") is a no-op;
    entering any other refuses, since there is no device to switch to."""

    def __init__(self, device: Any) -> None:
        self.idx = device_index(device) if device is not None else -1

    def __enter__(self) -> None:
        if self.idx >= 0:
            _unavailable("device")

    def __exit__(self, *exc: object) -> None:
        return None


class device_of(device):  # noqa: N801 - torch.cuda.device_of's name
    """``with torch.cuda.device_of(tensor):``: a no-op for a tensor that is not on a GPU."""

    def __init__(self, obj: Any) -> None:
        super().__init__(obj.get_device() if getattr(obj, "is_cuda", False) else -1)


def __getattr__(name: str) -> Any:
    if name.startswith("_"):  # module protocol look-ups (__path__, ...) stay AttributeErrors
        raise AttributeError(name)
    raise MissingSubpackageError(missing_distribution_message(f"pullback.cuda.{name}",
                                                              _DISTRIBUTION))
