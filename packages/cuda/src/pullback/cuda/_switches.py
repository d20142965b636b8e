"""Which hand-written kernels are on.

Each custom kernel can be switched off, to compare it with CuPy/cuBLAS or to rule it out when
hunting a bug. The environment variable ``PULLBACK_CUDA_KERNELS`` sets the starting state:
unset, ``1`` or ``all``: every kernel on; ``0`` or ``none``: every kernel off; a comma separated
list (``softmax,layer_norm``): only those on. :class:`use_custom_kernels` changes it at run time.
"""

from __future__ import annotations

import os
from typing import Iterable

KERNELS = ("matmul", "softmax", "layer_norm", "adamw")
"""The switchable kernels, by name."""

ENV_VAR = "PULLBACK_CUDA_KERNELS"


def parse(value: str | None) -> set[str]:
    """The kernels an ``PULLBACK_CUDA_KERNELS`` value turns on (unknown names are an error)."""
    if value is None or value.strip().lower() in ("", "1", "all", "true"):
        return set(KERNELS)
    if value.strip().lower() in ("0", "none", "false"):
        return set()
    names = {v.strip() for v in value.split(",") if v.strip()}
    unknown = names - set(KERNELS)
    if unknown:
        raise ValueError(f"{ENV_VAR}: unknown kernel(s) {', '.join(sorted(unknown))}; "
                         f"the kernels are {', '.join(KERNELS)} (or 1/all, 0/none)")
    return names


_on: set[str] = parse(os.environ.get(ENV_VAR))


def enabled(name: str) -> bool:
    """Whether the custom kernel ``name`` is on (read on every launch: keep it a set lookup)."""
    return name in _on


def custom_kernels_enabled() -> dict[str, bool]:
    """Every switchable kernel and whether it is on."""
    return {name: name in _on for name in KERNELS}


class use_custom_kernels:  # noqa: N801 - used like a function, as torch.set_grad_enabled
    """Turn custom kernels on or off; works as a call and as a context manager.

    ``use_custom_kernels(False)`` turns all of them off; ``use_custom_kernels(False, "matmul")``
    only the matmul (cuBLAS through CuPy then runs instead). Used with ``with``, the previous
    state comes back at the end of the block.

    Args:
        enabled: on or off.
        names: the kernels to switch (all of :data:`KERNELS` when none are given).
    """

    def __init__(self, enabled: bool = True, *names: str) -> None:
        global _on
        chosen: Iterable[str] = names or KERNELS
        unknown = set(chosen) - set(KERNELS)
        if unknown:
            raise ValueError(f"use_custom_kernels: unknown kernel(s) {', '.join(sorted(unknown))};"
                             f" the kernels are {', '.join(KERNELS)}")
        self._previous = set(_on)
        _on = _on | set(chosen) if enabled else _on - set(chosen)

    def __enter__(self) -> use_custom_kernels:
        return self

    def __exit__(self, *exc: object) -> None:
        global _on
        _on = self._previous
