"""Devices and the backend registry, and PyTorch's ``torch.backends`` switches.

The switches are submodules, as PyTorch's (``pullback.backends.cudnn.benchmark = True``,
``pullback.backends.cuda.matmul.allow_tf32``, ``import pullback.backends.mps``): each says which
of its flags change nothing in pullback and why.

A :class:`Backend` is the small contract a device type implements: an array namespace, whether
it is available, how many devices it has, synchronization, a seeded generator and host transfer.
The NumPy CPU backend is built in; every other backend arrives through a plugin's
``register_backends`` hook. :class:`Device` objects are interned, so dispatch compares them with
``is``.
"""

from __future__ import annotations

import contextlib
from typing import Any, ContextManager

import numpy as np

from ..errors import DeviceError, MissingPackageError, PullbackError

# Device types that a known pullback distribution provides, for the "pip install" hint.
_KNOWN_PROVIDERS = {"cuda": "pullback-cuda"}


class Backend:
    """Base class of a backend. Subclasses set ``name`` and override what differs.

    Attributes:
        name: the device type (``"cpu"``, ``"cuda"``, a third party's name).
        array_api: ``True`` when ``xp`` follows NumPy's API closely enough that every op's
            generic kernel works on it; such a backend needs no kernels of its own.
        dlpack_device_type: the DLPack device type code (1 = CPU, 2 = CUDA).
    """

    name: str = ""
    array_api: bool = True
    dlpack_device_type: int = 1

    @property
    def xp(self) -> Any:
        """The array namespace (NumPy-compatible module)."""
        raise NotImplementedError

    @property
    def array_type(self) -> type:
        """The concrete array class; kernel results of another class are converted to it."""
        raise NotImplementedError

    def is_available(self) -> bool:
        """Whether at least one device of this type can be used now."""
        return True

    def unavailable_reason(self) -> str | None:
        """Why the backend is unavailable (``None`` when it is available)."""
        return None

    def device_count(self) -> int:
        """How many devices of this type exist (0 when unavailable)."""
        return 1

    def synchronize(self, index: int = 0) -> None:
        """Wait until queued work on device ``index`` has finished."""

    def generator(self, index: int = 0) -> Any:
        """The seeded random generator of device ``index`` (NumPy ``Generator`` API)."""
        raise NotImplementedError

    def manual_seed(self, seed: int) -> None:
        """Reseed the generators of every device of this type."""
        raise NotImplementedError

    def get_rng_state(self) -> dict[str, Any]:
        """A JSON-serializable snapshot of the generators (for checkpoints)."""
        raise NotImplementedError

    def set_rng_state(self, state: dict[str, Any]) -> None:
        """Restore a snapshot taken by :meth:`get_rng_state`."""
        raise NotImplementedError

    def gemm_provider(self) -> str | None:
        """The library that computes this backend's matrix products (the CPU's: ``"mkl"`` or
        ``"numpy"``, see :mod:`pullback._gemm`), or ``None`` where the backend does not say."""
        return None

    def asarray(self, obj: Any, dtype: Any = None, index: int = 0) -> Any:
        """Make a backend array on device ``index`` from an array, scalar or nested list."""
        return self.xp.asarray(obj, dtype=dtype)

    def to_host(self, array: Any) -> np.ndarray:
        """Copy an array to a NumPy array."""
        return np.asarray(array)

    def from_host(self, array: np.ndarray, index: int = 0) -> Any:
        """Copy a NumPy array to device ``index``."""
        return self.asarray(array, index=index)

    def index_of(self, array: Any) -> int:
        """The device index an array lives on."""
        return 0

    def device_scope(self, index: int = 0) -> ContextManager[Any]:
        """A context in which arrays that ``xp`` makes land on device ``index`` (CuPy's
        ``cupy.cuda.Device(index)``); the default, for one-device backends, does nothing."""
        return contextlib.nullcontext()

    def memory_info(self, index: int = 0) -> dict[str, int] | None:
        """``{"free": bytes, "total": bytes, "used_by_pool": bytes}`` where known, else ``None``."""
        return None

    def adapt_kernel(self, op: Any, kernel: Any) -> Any:
        """Wrap a generic kernel built for this backend (e.g. to parallelize elementwise ops);
        the default keeps it as it is."""
        return kernel

    def from_dlpack(self, obj: Any) -> Any:
        """Import a DLPack capsule or producer without copying."""
        return self.xp.from_dlpack(obj)


_BACKENDS: dict[str, Backend] = {}
BACKEND_OWNERS: dict[str, str] = {}


def register_backend(backend: Backend, owner: str = "pullback") -> None:
    """Add a backend; two backends with one name is an error naming both distributions."""
    from ..errors import PluginError

    if not backend.name:
        raise PluginError(f"backend {backend!r} from {owner} has no name")
    existing = _BACKENDS.get(backend.name)
    if existing is not None and existing is not backend:
        raise PluginError(
            f"backend '{backend.name}' registered twice: by {BACKEND_OWNERS[backend.name]} "
            f"and by {owner}"
        )
    _BACKENDS[backend.name] = backend
    BACKEND_OWNERS[backend.name] = owner


def get_backend(name: str) -> Backend:
    """The backend registered under ``name``; the error says which package provides it."""
    backend = _BACKENDS.get(name)
    if backend is None:
        from ..plugins import load_plugins

        load_plugins()
        backend = _BACKENDS.get(name)
    if backend is None:
        provider = _KNOWN_PROVIDERS.get(name)
        if provider:
            raise _provider_error(name, provider)
        raise DeviceError(
            f"unknown device type '{name}' (registered: {', '.join(sorted(_BACKENDS))}); "
            f"other device types come from backend plugins, see `python -m pullback plugins`"
        )
    return backend


def _provider_error(kind: str, provider: str) -> PullbackError:
    """Why a device type of a known pullback distribution is missing: not installed, failed to
    load, or installed but not loaded (disabled, or a version without that backend)."""
    from importlib import metadata

    from .._install_hint import missing_distribution_message
    from ..plugins import failed

    for record in failed().values():
        if record.distribution == provider:
            return DeviceError(
                f"device type '{kind}' is provided by {provider}, which failed to load: "
                f"{record.error}"
            )
    try:
        version = metadata.version(provider)
    except metadata.PackageNotFoundError:
        return MissingPackageError(missing_distribution_message(f"device type '{kind}'", provider))
    return DeviceError(
        f"device type '{kind}' is provided by {provider}, which is installed ({version}) but "
        f"registered no '{kind}' backend (plugin disabled by PULLBACK_DISABLE_PLUGINS or "
        f"PULLBACK_PLUGINS, or a version without it); see `python -m pullback plugins`"
    )


def backends() -> dict[str, Backend]:
    """All registered backends by name."""
    from ..plugins import load_plugins

    load_plugins()
    return dict(_BACKENDS)


class Device:
    """A device: a backend name and an index (``Device("cpu")``, ``Device("cuda:1")``).

    Devices are interned: ``Device("cuda:0") is Device("cuda", 0)``. ``Device("cuda")`` means
    index 0. Creating a device checks that its backend is registered, not that it is available.
    """

    __slots__ = ("type", "index", "backend", "array_type", "__weakref__")
    _cache: dict[tuple[str, int | None], Device] = {}

    type: str
    index: int | None
    backend: Backend
    array_type: Any  # the backend's array class ("type" is shadowed by the attribute above)

    def __new__(cls, spec: str | Device = "cpu", index: int | None = None) -> Device:
        if isinstance(spec, Device):
            return spec
        if not isinstance(spec, str):
            raise DeviceError(f"a device is a string like 'cpu' or 'cuda:0', got {spec!r}")
        key = (spec, index)
        cached = cls._cache.get(key)
        if cached is not None:
            return cached
        kind, index = _split_spec(spec, index)
        backend = get_backend(kind)
        if kind == "cpu":
            if index not in (None, 0):
                raise DeviceError(f"the cpu backend has one device, got index {index}")
            index = None
        elif index is None:
            index = 0
        canonical = (kind, index)
        dev = cls._cache.get(canonical)
        if dev is None:
            dev = object.__new__(cls)
            dev.type, dev.index, dev.backend = kind, index, backend
            dev.array_type = backend.array_type
            cls._cache[canonical] = dev
        cls._cache[key] = dev
        return dev

    def __repr__(self) -> str:
        return f"device(type='{self.type}'" + (
            f", index={self.index})" if self.index is not None else ")"
        )

    def __str__(self) -> str:
        return self.type if self.index is None else f"{self.type}:{self.index}"

    def __eq__(self, other: object) -> bool:
        if isinstance(other, str):
            try:
                other = Device(other)
            except (DeviceError, MissingPackageError):
                return False
        return self is other

    def __hash__(self) -> int:
        return hash((self.type, self.index))

    def __reduce__(self) -> Any:
        from ..multiprocessing._reductions import spawning

        if spawning():  # an argument of a process being started: its spec, a string
            return Device, (str(self),)
        raise TypeError("pullback objects are not pickled; use pullback.save (safetensors)")


def _split_spec(spec: str, index: int | None) -> tuple[str, int | None]:
    """``"cuda:1"`` -> ``("cuda", 1)``; checks the index is a non-negative integer."""
    kind, _, idx_text = spec.partition(":")
    if idx_text:
        if index is not None:
            raise DeviceError(f"device '{spec}' given an index twice ({index})")
        if not idx_text.isdigit():
            raise DeviceError(f"bad device index in '{spec}' (expected e.g. 'cuda:0')")
        index = int(idx_text)
    if index is not None and (isinstance(index, bool) or not isinstance(index, int) or index < 0):
        raise DeviceError(f"device index must be a non-negative int, got {index!r} for '{kind}'")
    return kind, index


def devices() -> list[str]:
    """Names of every usable device, e.g. ``["cpu", "cuda:0", "cuda:1"]``."""
    names = []
    for name, backend in backends().items():
        if not backend.is_available():
            continue
        if name == "cpu":
            names.append("cpu")
        else:
            names.extend(f"{name}:{i}" for i in range(backend.device_count()))
    return names


def is_available(name: str) -> bool:
    """Whether a device type (``"cuda"``) or device (``"cuda:1"``) can be used now."""
    kind, index = _split_spec(name, None)
    backend = backends().get(kind)
    if backend is None or not backend.is_available():
        return False
    return index is None or index < backend.device_count()


def synchronize(dev: str | Device = "cpu") -> None:
    """Wait for queued work on a device (a no-op on the CPU)."""
    d = Device(dev)
    d.backend.synchronize(d.index or 0)


# torch.backends' submodules, for ported scripts (see each module)
from . import (  # noqa: E402, F401 - public names of this package
    cpu, cuda, cudnn, mha, mkl, mkldnn, mps, nnpack, openmp, opt_einsum,
)
