"""The built-in CPU backend: NumPy arrays, one seeded ``numpy.random.Generator``."""

from __future__ import annotations

from typing import Any

import numpy as np

from ._cpu_native import NATIVE_KERNELS
from ._cpu_parallel import (
    parallel_batched_matmul, parallel_elementwise, parallel_sum, parallel_sum_to,
)
from ._gemm import gemm_first, provider
from ._host_memory import tune_malloc
from .backends import Backend
from .native import native_first


# Sums whose row blocks add up (or stack up) to the whole: split over threads when large. Matrix
# products run the GEMM provider (MKL splits its products over the threads itself), else NumPy's
# with stacks of small products split over the threads.
_ROW_SPLITS = {"sum": parallel_sum, "sum_to": parallel_sum_to,
               "matmul": lambda kernel: gemm_first(parallel_batched_matmul(kernel))}


class CPUBackend(Backend):
    """NumPy on the host. ``array_api`` is true, so every op's generic kernel applies."""

    name = "cpu"
    dlpack_device_type = 1

    def __init__(self) -> None:
        self._generator = np.random.Generator(np.random.PCG64(0))
        tune_malloc()  # freed arrays stay in the process for reuse (see _host_memory)

    @property
    def xp(self) -> Any:
        return np

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

    def gemm_provider(self) -> str | None:
        return provider()

    def adapt_kernel(self, op: Any, kernel: Any) -> Any:
        # Large elementwise work and sums run on every core (NumPy's use one).
        if op.family == "elementwise":
            kernel = parallel_elementwise(kernel)
        else:
            kernel = _ROW_SPLITS.get(op.name, lambda k: k)(kernel)
        # Fused ops with a C kernel run it where it covers the inputs.
        native_kernel = NATIVE_KERNELS.get(op.name)
        return kernel if native_kernel is None else native_first(native_kernel, kernel)

