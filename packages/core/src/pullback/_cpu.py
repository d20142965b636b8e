"""The built-in CPU backend: NumPy arrays, one seeded ``numpy.random.Generator``."""

from __future__ import annotations

import types
from typing import Any

import numpy as np

from ._cpu_parallel import parallel_elementwise, parallel_matmul, single_threaded_blas
from .device import Backend


def _numpy_namespace() -> types.ModuleType:
    """NumPy with a multi-threaded ``matmul``: the CPU backend's array namespace.

    Every generic kernel that calls ``xp.matmul`` (core's matmul, nn's linear, conv and
    attention...) gets the threaded product without knowing about it.
    """
    namespace = types.ModuleType("numpy", "NumPy, with pullback's multi-threaded matmul")
    namespace.__dict__.update({k: v for k, v in np.__dict__.items() if not k.startswith("__")})
    namespace.matmul = parallel_matmul
    return namespace


class CPUBackend(Backend):
    """NumPy on the host. ``array_api`` is true, so every op's generic kernel applies."""

    name = "cpu"
    dlpack_device_type = 1

    def __init__(self) -> None:
        self._generator = np.random.Generator(np.random.PCG64(0))
        self._xp = _numpy_namespace()
        single_threaded_blas()

    @property
    def xp(self) -> Any:
        return self._xp

    @property
    def array_type(self) -> type:
        return np.ndarray

    def generator(self, index: int = 0) -> np.random.Generator:
        return self._generator

    def manual_seed(self, seed: int) -> None:
        self._generator = np.random.Generator(np.random.PCG64(seed))

    def get_rng_state(self) -> dict[str, Any]:
        # PCG64's state is a dict of Python ints: JSON-serializable as it is.
        return {"bit_generator": self._generator.bit_generator.state}

    def set_rng_state(self, state: dict[str, Any]) -> None:
        bitgen = np.random.PCG64()
        bitgen.state = state["bit_generator"]
        self._generator = np.random.Generator(bitgen)

    def asarray(self, obj: Any, dtype: Any = None, index: int = 0) -> np.ndarray:
        return np.asarray(obj, dtype=dtype)

    def to_host(self, array: Any) -> np.ndarray:
        return np.asarray(array)

    def memory_info(self, index: int = 0) -> dict[str, int] | None:
        return None

    def adapt_kernel(self, op: Any, kernel: Any) -> Any:
        # Large elementwise work runs on every core (NumPy's ufuncs use one).
        if op.family == "elementwise":
            return parallel_elementwise(kernel)
        return kernel

