"""What a Tensor says about its device, as PyTorch's ``Tensor.is_cuda``, ``is_cpu``,
``get_device()``, ``pin_memory()`` and friends (a base class of :class:`~pullback.Tensor`).

PyTorch's tensors answer for device types pullback has no backend for (``is_xpu``, ``is_mps``,
``is_meta``...) and for layouts it has not (``is_sparse``, ``is_quantized``...): a pullback
tensor is on a device some backend registered, always dense, never quantized.
"""

from __future__ import annotations

from typing import Any

from .errors import DeviceUnavailableError

def _on(device_type: str) -> property:
    def query(self: Any) -> bool:
        return bool(self.device.type == device_type)

    query.__doc__ = f"Whether the tensor is on a ``{device_type}`` device."
    return property(query)


def _never(what: str) -> property:
    def query(self: Any) -> bool:
        return False

    query.__doc__ = f"False: pullback's tensors are never {what}."
    return property(query)


class DeviceQueries:
    """``is_cuda``, ``is_cpu``, ... and the other questions PyTorch's tensors answer about
    where and how they are stored."""

    __slots__ = ()

    is_cpu = _on("cpu")
    is_cuda = _on("cuda")
    is_xpu = _on("xpu")
    is_mps = _on("mps")
    is_meta = _on("meta")
    is_ipu = _on("ipu")
    is_vulkan = _on("vulkan")
    is_mtia = _on("mtia")
    is_maia = _on("maia")
    is_hpu = _on("hpu")
    is_sparse = _never("sparse")
    is_sparse_csr = _never("sparse (CSR)")
    is_quantized = _never("quantized")
    is_mkldnn = _never("MKL-DNN tensors")
    is_nested = _never("nested")

    def get_device(self) -> int:
        """The device index, ``-1`` for the CPU (``torch.Tensor.get_device``)."""
        device = self.device  # type: ignore[attr-defined]
        return -1 if device.type == "cpu" else int(device.index or 0)

    def is_pinned(self) -> bool:
        """False: pullback has no page-locked host memory."""
        return False

    def pin_memory(self) -> Any:
        """A copy in host memory for faster transfers to an accelerator.

        As PyTorch's, it needs an accelerator: without one (no backend other than the CPU is
        available) it raises :class:`~pullback.errors.DeviceUnavailableError`. With one, the
        copy is ordinary host memory (pullback allocates no page-locked memory), so
        ``is_pinned()`` stays False.
        """
        from .accelerator import is_available

        device = self.device  # type: ignore[attr-defined]
        if not is_available():
            raise DeviceUnavailableError("pin_memory: pinned memory needs an accelerator, and "
                                         "none is available")
        if device.type != "cpu":
            raise DeviceUnavailableError(f"pin_memory: cannot pin a tensor on {device}: only "
                                         "CPU tensors can be pinned")
        return self.clone()  # type: ignore[attr-defined]
