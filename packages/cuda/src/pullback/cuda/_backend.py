"""The ``cuda`` backend: CuPy arrays on NVIDIA GPUs, ``Device("cuda:N")``.

CuPy follows NumPy's API, so every op's generic kernel runs on it as it is (``array_api`` is
true); :mod:`pullback.cuda._kernels` adds hand-written kernels for a few hot ops. Nothing here
touches the GPU until an array is made: the backend registers and answers ``is_available`` on a
machine without a GPU or without CuPy, and then says why in :meth:`unavailable_reason`.
"""

from __future__ import annotations

from typing import Any, Callable, ContextManager

import numpy as np

from pullback.backends import Backend
from pullback.errors import DeviceError, DeviceUnavailableError

from ._cupy import probe
from ._random import PhiloxGenerator


class _NoArray:
    """Stands for ``cupy.ndarray`` where CuPy is not importable: no array is ever of it."""


class CUDABackend(Backend):
    """CuPy on NVIDIA GPUs; one seeded Philox generator per device."""

    name = "cuda"
    dlpack_device_type = 2  # kDLCUDA

    def __init__(self) -> None:
        self._seed = 0
        self._generators: dict[int, PhiloxGenerator] = {}

    # -- CuPy and the devices -------------------------------------------------------------------
    def _cupy(self) -> Any:
        found = probe()
        if found.reason is not None:
            raise DeviceUnavailableError(f"device type 'cuda' is unavailable: {found.reason}")
        return found.cupy

    @property
    def xp(self) -> Any:
        return self._cupy()

    @property
    def array_type(self) -> type:
        cupy = probe().cupy
        return cupy.ndarray if cupy is not None else _NoArray

    def is_available(self) -> bool:
        return probe().reason is None

    def unavailable_reason(self) -> str | None:
        return probe().reason

    def device_count(self) -> int:
        return probe().device_count

    def _check_index(self, index: int) -> Any:
        cupy = self._cupy()
        count = probe().device_count
        if not 0 <= index < count:
            raise DeviceError(f"cuda:{index} does not exist: this machine has {count} CUDA "
                              f"device(s) (cuda:0 .. cuda:{count - 1})")
        return cupy

    def device_scope(self, index: int = 0) -> ContextManager[Any]:
        return self._check_index(index).cuda.Device(index)

    def synchronize(self, index: int = 0) -> None:
        self._check_index(index).cuda.Device(index).synchronize()

    def memory_info(self, index: int = 0) -> dict[str, int] | None:
        cupy = self._check_index(index)
        with cupy.cuda.Device(index):
            free, total = cupy.cuda.runtime.memGetInfo()
            pool = cupy.get_default_memory_pool()
            return {"free": int(free), "total": int(total), "used_by_pool": int(pool.used_bytes()),
                    "held_by_pool": int(pool.total_bytes())}

    # -- random numbers -------------------------------------------------------------------------
    def generator(self, index: int = 0) -> PhiloxGenerator:
        gen = self._generators.get(index)
        if gen is None:
            cupy = self._check_index(index)
            from ._kernels.philox import philox_blocks

            gen = PhiloxGenerator(cupy, philox_blocks, self._seed,
                                  scope=lambda: cupy.cuda.Device(index))
            self._generators[index] = gen
        return gen

    def manual_seed(self, seed: int) -> None:
        # Generators are made on first use, so dropping them reseeds every device at offset 0.
        self._seed = int(seed)
        self._generators.clear()

    def get_rng_state(self) -> dict[str, Any]:
        return {"seed": self._seed,
                "generators": {str(i): g.get_state() for i, g in sorted(self._generators.items())}}

    def set_rng_state(self, state: dict[str, Any]) -> None:
        self.manual_seed(int(state["seed"]))
        for index, gen_state in state.get("generators", {}).items():
            self.generator(int(index)).set_state(gen_state)

    # -- arrays and transfers -------------------------------------------------------------------
    def asarray(self, obj: Any, dtype: Any = None, index: int = 0) -> Any:
        cupy = self._check_index(index)
        with cupy.cuda.Device(index):
            return cupy.asarray(obj, dtype=dtype)

    def to_host(self, array: Any) -> np.ndarray:
        return self._cupy().asnumpy(array)

    def from_host(self, array: np.ndarray, index: int = 0) -> Any:
        return self.asarray(array, index=index)

    def index_of(self, array: Any) -> int:
        return int(array.device.id)

    def from_dlpack(self, obj: Any) -> Any:
        return self._cupy().from_dlpack(obj)

    def adapt_kernel(self, op: Any, kernel: Any) -> Any:
        # One GPU: CuPy's current device is always it. Several: run each kernel on the device
        # of its first array (CuPy allocates outputs and launches on the *current* device).
        if self.device_count() <= 1:
            return kernel
        return on_input_device(self._cupy(), kernel)


def on_input_device(cupy: Any, kernel: Callable[..., Any]) -> Callable[..., Any]:
    """Wrap ``kernel`` so that it runs with its first CuPy array's device current."""
    ndarray = cupy.ndarray
    get_device = cupy.cuda.runtime.getDevice
    scope = cupy.cuda.Device

    def run(*arrays: Any, **attrs: Any) -> Any:
        for a in arrays:
            if isinstance(a, ndarray):
                index = a.device.id
                if index != get_device():
                    with scope(index):
                        return kernel(*arrays, **attrs)
                break
        return kernel(*arrays, **attrs)

    run.__wrapped__ = kernel  # type: ignore[attr-defined]
    return run

