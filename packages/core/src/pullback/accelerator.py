"""``pullback.accelerator``: the device-agnostic questions ported code asks, as
``torch.accelerator``.

An accelerator is any device type a backend plugin adds (``cuda`` from pullback-cuda, a third
party's); the CPU is not one. With none installed, ``is_available()`` is False and
``current_accelerator()`` is ``None``, so ``device = pullback.accelerator.current_accelerator()
or "cpu"`` runs anywhere.

Example:
    >>> import pullback
    >>> device = pullback.accelerator.current_accelerator(check_available=True) or "cpu"
    >>> pullback.zeros(2, device=device).shape
    (2,)
"""

from __future__ import annotations

from .backends import Backend, Device, backends


def _registered() -> list[Backend]:
    """The accelerator backends installed (registered by plugins), in registration order."""
    return [backend for name, backend in backends().items() if name != "cpu"]


def _current() -> Backend | None:
    """The first usable accelerator, else the first installed one, else ``None``."""
    installed = _registered()
    usable = [backend for backend in installed if backend.is_available()]
    choices = usable or installed
    return choices[0] if choices else None


def is_available() -> bool:
    """Whether an accelerator device can be used now."""
    return any(backend.is_available() for backend in _registered())


def current_accelerator(check_available: bool = False) -> Device | None:
    """The accelerator's device type (``Device("cuda")``), or ``None`` when no backend plugin
    adds one.

    Args:
        check_available: also return ``None`` when the accelerator is installed but unusable
            here (no GPU, no driver); by default, as PyTorch, an installed one is returned.
    """
    backend = _current()
    if backend is None or (check_available and not backend.is_available()):
        return None
    return Device(backend.name)


def device_count() -> int:
    """The number of usable devices of the current accelerator (0 without one)."""
    backend = _current()
    return int(backend.device_count()) if backend is not None and backend.is_available() else 0


def synchronize(device: str | Device | None = None) -> None:
    """Wait for the work queued on ``device`` (by default the current accelerator's device 0);
    a no-op without an accelerator."""
    if device is None:
        backend = _current()
        if backend is None or not backend.is_available():
            return
        device = Device(backend.name)
    device = Device(device)
    device.backend.synchronize(device.index or 0)
