"""The ``refcpu`` backend: NumPy arrays on a separate device type, with counted kernel calls."""

from __future__ import annotations

from collections import Counter
from typing import Any, Callable

import numpy as np

from pullback.backends import Backend

_CALLS: Counter[str] = Counter()


def kernel_calls() -> dict[str, int]:
    """How many times each op's kernel ran on ``refcpu`` (forward and backward) so far."""
    return dict(_CALLS)


def reset_kernel_calls() -> None:
    """Start counting from zero."""
    _CALLS.clear()


def counted(op_name: str, kernel: Callable[..., Any]) -> Callable[..., Any]:
    """``kernel``, counting its calls under ``op_name``."""

    def run(*args: Any, **kwargs: Any) -> Any:
        _CALLS[op_name] += 1
        return kernel(*args, **kwargs)

    return run


class RefCPUBackend(Backend):
    """Two ``refcpu`` devices holding NumPy arrays.

    ``array_api`` is true: NumPy is the array namespace, so pullback builds every op's kernel
    from the op's generic factory; :meth:`adapt_kernel` wraps each one to count its calls.
    Each device has its own seeded generator.
    """

    name = "refcpu"
    array_api = True
    dlpack_device_type = 1  # host memory, like NumPy's
    DEVICES = 2

    def __init__(self) -> None:
        self.manual_seed(0)

    @property
    def xp(self) -> Any:
        return np

    @property
    def array_type(self) -> type:
        return np.ndarray

    def device_count(self) -> int:
        return self.DEVICES

    def adapt_kernel(self, op: Any, kernel: Callable[..., Any]) -> Callable[..., Any]:
        return counted(op.name, kernel)

    def generator(self, index: int = 0) -> np.random.Generator:
        return self._generators[index]

    def manual_seed(self, seed: int) -> None:
        # One stream per device, all derived from the seed (as CUDA seeds each GPU).
        self._generators = [np.random.Generator(np.random.PCG64([seed, i]))
                            for i in range(self.DEVICES)]

    def get_rng_state(self) -> dict[str, Any]:
        return {"devices": [g.bit_generator.state for g in self._generators]}

    def set_rng_state(self, state: dict[str, Any]) -> None:
        generators = []
        for device_state in state["devices"]:
            bit_generator = np.random.PCG64()
            bit_generator.state = device_state
            generators.append(np.random.Generator(bit_generator))
        self._generators = generators

    def asarray(self, obj: Any, dtype: Any = None, index: int = 0) -> np.ndarray:
        return np.asarray(obj, dtype=dtype)

    def to_host(self, array: Any) -> np.ndarray:
        return np.asarray(array)
