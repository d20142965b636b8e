"""Array facts the debugger reports: a fast finiteness test and statistics for messages.

:func:`all_finite` runs on every op output while anomaly mode is on, so it is one reduction:
the sum of an array is finite exactly when no element is NaN or Inf, unless finite elements
overflow when added (then the elementwise test decides). Statistics are computed on the host,
only once something is wrong.
"""

from __future__ import annotations

import cmath
import math
from dataclasses import dataclass
from typing import Any

import numpy as np

# Dtype kinds that can hold NaN/Inf: float, complex, and ml_dtypes' bfloat16 ("V").
FLOAT_KINDS = frozenset("fcV")


def all_finite(array: Any) -> bool:
    """Whether every element of a backend array (NumPy, CuPy...) is finite.

    One summation pass (NaN and Inf survive a sum; an empty sum is 0); only when the sum itself
    is not finite is the elementwise test run, which tells real NaN/Inf from an overflowing sum
    of large finite values.
    """
    kind = array.dtype.kind
    if kind not in FLOAT_KINDS:
        return True
    # Half-precision sums are taken in float32: they would overflow (and warn) on ordinary data.
    total = array.sum(dtype="float32") if array.dtype.itemsize == 2 else array.sum()
    if (cmath.isfinite if kind == "c" else math.isfinite)(total):
        return True
    return bool(xp_of(array).isfinite(array).all())


def xp_of(array: Any) -> Any:
    """The array namespace of ``array`` (``numpy`` or the module that made it, e.g. CuPy)."""
    if isinstance(array, np.ndarray):
        return np
    import importlib

    return importlib.import_module(type(array).__module__.split(".")[0])


@dataclass(frozen=True)
class ArrayStats:
    """Shape, dtype and value statistics of one array (min/max over the finite elements)."""

    shape: tuple[int, ...]
    dtype: str
    nan: int
    posinf: int
    neginf: int
    finite_min: float | None
    finite_max: float | None

    @property
    def inf(self) -> int:
        """Number of +Inf and -Inf elements."""
        return self.posinf + self.neginf

    @property
    def finite(self) -> bool:
        return self.nan == 0 and self.inf == 0

    def __str__(self) -> str:
        head = f"shape {self.shape} {self.dtype}"
        if self.finite_min is not None:
            rng = f"min {self.finite_min:.4g}, max {self.finite_max:.4g}"
            rng = rng if self.finite else "finite " + rng
        else:
            rng = "no elements" if self.finite else "no finite element"
        if self.finite:
            return f"{head}, {rng}"
        infs = f"{self.inf} Inf" + (f" (+{self.posinf}/-{self.neginf})" if self.inf else "")
        return f"{head}, {self.nan} NaN, {infs}, {rng}"


def array_stats(array: Any, to_host: Any = None) -> ArrayStats:
    """Statistics of a backend array; ``to_host`` converts it to NumPy (the device's backend)."""
    host = np.asarray(to_host(array) if to_host is not None else array)
    shape = tuple(int(n) for n in host.shape)
    if host.dtype.kind not in FLOAT_KINDS:
        if host.size == 0 or host.dtype.kind not in "iub":
            return ArrayStats(shape, str(host.dtype), 0, 0, 0, None, None)
        return ArrayStats(shape, str(host.dtype), 0, 0, 0, float(host.min()), float(host.max()))
    if host.dtype.kind == "c":  # statistics of the magnitudes
        nan = int(np.isnan(host).sum())
        values = np.abs(host).astype(np.float64)
        posinf, neginf = int(np.isinf(host).sum()), 0
    else:
        values = host.astype(np.float64)
        nan = int(np.isnan(values).sum())
        posinf = int(np.isposinf(values).sum())
        neginf = int(np.isneginf(values).sum())
    finite = values[np.isfinite(values)]
    lo = float(finite.min()) if finite.size else None
    hi = float(finite.max()) if finite.size else None
    return ArrayStats(shape, str(host.dtype), nan, posinf, neginf, lo, hi)


def describe_value(value: Any, to_host: Any = None) -> str:
    """One line about an op argument: array statistics, or the repr of a Python scalar."""
    if hasattr(value, "shape") and hasattr(value, "dtype"):
        return str(array_stats(value, to_host))
    return f"scalar {value!r}"


def scalar_is_infinite(value: Any) -> bool:
    """Whether a Python number is +-Inf (a deliberate infinity, such as a -inf mask value)."""
    return isinstance(value, (float, complex)) and not math.isfinite(abs(value))
