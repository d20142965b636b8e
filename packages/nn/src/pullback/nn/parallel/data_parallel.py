"""``DataParallel`` and ``data_parallel``: PyTorch's single-process multi-GPU wrapper, as it
behaves where there are no GPUs to spread over: the wrapped module runs once, on its inputs as
they are. Ported scripts wrap their model in it unconditionally (``model =
nn.DataParallel(model)``) and then address ``model.module`` and state dicts keyed
``"module.<name>"``; both work as in PyTorch.

pullback does not replicate a module over several GPUs in one process (use
``DistributedDataParallel`` with one process per GPU): with an accelerator the module also runs
once, on the device its parameters are on.
"""

from __future__ import annotations

from typing import Any

from ..module import Module


def _devices() -> list[int]:
    from pullback import accelerator

    return list(range(accelerator.device_count())) if accelerator.is_available() else []


class DataParallel(Module):
    """Wrap ``module``; calling the wrapper calls it (see the module docstring).

    Args:
        module: the module to run.
        device_ids, output_device, dim: PyTorch's arguments, recorded (``device_ids`` is
            ``[]`` without an accelerator, as PyTorch's without GPUs).
    """

    def __init__(self, module: Module, device_ids: list[Any] | None = None,
                 output_device: Any = None, dim: int = 0) -> None:
        super().__init__()
        self.module = module
        available = _devices()
        self.device_ids = [] if not available else list(device_ids or available)
        self.output_device = output_device if output_device is not None or not \
            self.device_ids else self.device_ids[0]
        self.dim = dim

    def forward(self, *inputs: Any, **kwargs: Any) -> Any:
        return self.module(*inputs, **kwargs)


def data_parallel(module: Module, inputs: Any, device_ids: list[Any] | None = None,
                  output_device: Any = None, dim: int = 0,
                  module_kwargs: dict[str, Any] | None = None) -> Any:
    """``module(*inputs, **module_kwargs)`` on the accelerator the module is on (PyTorch's
    functional form of :class:`DataParallel`); ``inputs`` may be one input. As PyTorch's, it
    refuses to run without an accelerator (:class:`DataParallel` runs anywhere)."""
    if not _devices():
        from pullback.errors import DeviceUnavailableError

        raise DeviceUnavailableError("data_parallel: device type could not be determined (no "
                                     "accelerator is available; call the module itself)")
    if not isinstance(inputs, tuple):
        inputs = (inputs,)
    return module(*inputs, **(module_kwargs or {}))
