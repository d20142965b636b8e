"""The matrix product nn's kernels call: on NumPy, core's CPU ``matmul`` kernel, which runs the
process's GEMM provider (MKL or NumPy, :mod:`pullback._gemm`) and splits stacks of small
products over the threads; so a layer's products are the bits of a ``matmul`` op on the same
operands, eager or compiled."""

from __future__ import annotations

from typing import Any

import numpy as np

from pullback.registry import get_op


def matmul_for(xp: Any) -> Any:
    """``matmul(x, y)`` for kernels of the backend whose namespace is ``xp``."""
    return get_op("matmul").kernel_for("cpu") if xp is np else xp.matmul
