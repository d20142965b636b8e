"""Finding CuPy and a GPU, without creating a CUDA context.

Importing CuPy touches no GPU. Counting devices calls ``cudaGetDeviceCount``, which loads the
driver but creates no context, so asking whether ``cuda`` is available costs no GPU memory and
works on machines without a driver (it then says why). The answer is cached: the device list of
a process does not change.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from types import ModuleType

INSTALL_HINT = (
    "pip install 'pullback-cuda[cuda12]' (CUDA 12 drivers) or 'pullback-cuda[cuda13]' "
    "(CUDA 13 drivers)"
)


@dataclass(frozen=True)
class Probe:
    """What a look for CuPy and GPUs found."""

    cupy: ModuleType | None
    device_count: int
    reason: str | None  # why cuda is unavailable; None when it is available


_lock = threading.Lock()
_probe: Probe | None = None


def probe() -> Probe:
    """Import CuPy and count the GPUs, once per process."""
    global _probe
    if _probe is None:
        with _lock:
            if _probe is None:
                _probe = _look()
    return _probe


def _look() -> Probe:
    try:
        import cupy
    except ImportError as exc:
        reason = (f"CuPy is not installed: {INSTALL_HINT}" if exc.name == "cupy"
                  else f"CuPy failed to import ({exc}); reinstall it: {INSTALL_HINT}")
        return Probe(None, 0, reason)
    except Exception as exc:  # a broken CuPy install must not take pullback down
        return Probe(None, 0, f"CuPy failed to import: {type(exc).__name__}: {exc}")
    try:
        count = int(cupy.cuda.runtime.getDeviceCount())
    except Exception as exc:  # CUDARuntimeError: no driver, driver too old, no device
        return Probe(cupy, 0, f"no usable CUDA device: {exc} ({_versions(cupy)})")
    if count == 0:
        return Probe(cupy, 0, f"CUDA reports no device ({_versions(cupy)})")
    return Probe(cupy, count, None)


def _versions(cupy: ModuleType) -> str:
    try:
        runtime = cupy.cuda.runtime.runtimeGetVersion()
        cuda = f"CUDA runtime {runtime // 1000}.{runtime % 1000 // 10}"
    except Exception:  # pragma: no cover - the runtime library itself is missing
        cuda = "CUDA runtime unknown"
    return f"CuPy {cupy.__version__}, {cuda}"


def reset_for_tests(result: Probe | None = None) -> None:
    """Forget (or replace) the cached probe; only tests call this."""
    global _probe
    with _lock:
        _probe = result
