"""``torch.backends.mkl``: pullback's kernels do not call MKL (pullback-compiler's optional MKL
products aside, see ``pullback.compiler.gemm_provider``)."""

from __future__ import annotations

from typing import Any

VERBOSE_OFF = 0
VERBOSE_ON = 1


def is_available() -> bool:
    """False: core's kernels are NumPy's and pullback's own C."""
    return False


class verbose:  # noqa: N801 - torch.backends.mkl.verbose's name
    """``with verbose(level):``: accepted, prints nothing."""

    def __init__(self, enable: int) -> None:
        self.enable = enable

    def __enter__(self) -> verbose:
        return self

    def __exit__(self, *exc: Any) -> None:
        return None
