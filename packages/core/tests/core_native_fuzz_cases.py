"""One fuzz case of a core native kernel's entry point (``pullback/_cpu_native.py``: GELU, its
derivative, ReLU's derivative, the leading-axis sum, an embedding's gradient) against the op's
NumPy kernel, run in a worker process by ``test_native_fuzz.py`` (a crash is a failing case, not
a dead pytest).

A case is a JSON dict: ``entry`` names the entry point; shapes, dtypes, layouts, a seed for the
values and whether to mix in NaN, infinities and +-1e38. :func:`run_case` returns ``None`` when
the native result (or ``NotImplemented``) agrees with the NumPy kernel, else what was wrong.
"""

from __future__ import annotations

from typing import Any

import numpy as np

import pullback as pb
from pullback import _cpu_native
from pullback.testing.layouts import fuzz_values, laid_out


def _array(case: dict[str, Any], which: str, seed_offset: int) -> np.ndarray:
    values = fuzz_values(tuple(case[f"{which}_shape"]), case["dtype"], case["seed"] + seed_offset,
                         case["special"])
    return laid_out(values, case[f"{which}_layout"])


def run_case(case: dict[str, Any]) -> str | None:
    """Run one case (see the module's docstring)."""
    entry = case["entry"]
    x = _array(case, "x", 0)
    if entry == "sum_leading_axis":
        return _sum_case(x, case)
    if entry == "take_scatter_add":
        return _rows_by_index_case(x, case)
    args: tuple[Any, ...] = (x,) if entry == "gelu" else (_array(case, "g", 1), x)
    attrs = {} if entry == "relu_backward" else {"approximate": case["approximate"]}
    with np.errstate(all="ignore"):
        try:
            got = getattr(_cpu_native, entry)(*args, **attrs)
        except Exception as exc:  # noqa: BLE001 - an entry point never raises: it covers or not
            return f"native raised {type(exc).__name__}: {exc}"
        if got is NotImplemented:
            return None
        if any(a.shape != x.shape for a in args) or x.dtype != np.float32:
            return f"native ran on shapes {[a.shape for a in args]} {x.dtype} it does not cover"
        want = pb.get_op(entry).generic(np)(*args, **attrs)
    if got.shape != want.shape or got.dtype != want.dtype:
        return f"native gave {got.shape} {got.dtype}, NumPy {want.shape} {want.dtype}"
    # Both are float32 approximations: relative error, plus an absolute one scaled by the
    # factor in front (g for the derivatives, 1 + |x| for GELU, whose negative tail cancels).
    scale = np.abs(args[0]).astype(np.float64) if len(args) == 2 else 1.0 + np.abs(x)
    with np.errstate(all="ignore"):
        a, b = got.astype(np.float64), want.astype(np.float64)
        close = np.abs(a - b) <= 1e-5 * np.abs(b) + 2e-6 * scale
        same = close | (a == b) | (np.isnan(a) & np.isnan(b))
    if not same.all():
        where = tuple(np.argwhere(~same)[0])
        return (f"native and NumPy differ at {where}: {a[where]!r} against {b[where]!r} "
                f"(x {x[where]!r})")
    return None


def _sum_case(x: np.ndarray, case: dict[str, Any]) -> str | None:
    """The leading-axis sum must be NumPy's bitwise (same additions in the same order)."""
    attrs = {"axis": case["axis"], "keepdims": case["keepdims"]}
    with np.errstate(all="ignore"):
        try:
            got = _cpu_native.sum_leading_axis(x, **attrs)
        except Exception as exc:  # noqa: BLE001 - an entry point never raises: it covers or not
            return f"native raised {type(exc).__name__}: {exc}"
        if got is NotImplemented:
            return None
        if x.dtype != np.float32 or not x.flags.c_contiguous:
            return f"native ran on a {x.dtype} array (contiguous: {x.flags.c_contiguous})"
        want = np.sum(x, **attrs)
    if got.shape != want.shape or got.dtype != want.dtype:
        return f"native gave {got.shape} {got.dtype}, NumPy {want.shape} {want.dtype}"
    same = (got == want) | (np.isnan(got) & np.isnan(want))
    same &= np.signbit(got) == np.signbit(want)
    if not same.all():
        where = tuple(np.argwhere(~same)[0])
        return f"native and NumPy differ at {where}: {got[where]!r} against {want[where]!r}"
    return None


def _rows_by_index_case(g: np.ndarray, case: dict[str, Any]) -> str | None:
    """take's gradient against the NumPy kernel: both pairwise sums, so equal to float32
    rounding of the bucket's sum of magnitudes; NaN wherever a bucket holds one. Buckets whose
    magnitudes reach float32's range may overflow in one order and not the other: not compared.
    Indices (over one or two leading axes of ``g``, some negative, some out of range) come from
    the case's seed."""
    if g.ndim == 0:
        return None
    rng = np.random.default_rng(case["seed"])
    rows = int(rng.integers(1, 9))
    lead = g.shape[:int(rng.integers(1, min(g.ndim, 2) + 1))]
    spread = rows + 1 if rng.random() < 0.2 else rows  # now and then one out of range
    idx = rng.integers(-spread, spread, lead)
    shape = (rows,) + g.shape[len(lead):]
    with np.errstate(all="ignore"):
        try:
            got = _cpu_native.take_scatter_add(g, idx, axis=0, shape=shape)
        except Exception as exc:  # noqa: BLE001 - an entry point never raises: it covers or not
            return f"native raised {type(exc).__name__}: {exc}"
        if got is NotImplemented:
            return None
        if g.dtype != np.float32 or idx.min() < -rows or idx.max() >= rows:
            return f"native ran on {g.dtype} rows with indices {idx.min()}..{idx.max()} of {rows}"
        want = pb.get_op("take_scatter_add").generic(np)(g, idx, axis=0, shape=shape)
        magnitude = np.zeros(shape)
        np.add.at(magnitude, (idx,), np.abs(g.astype(np.float64)))
    if got.shape != want.shape or got.dtype != want.dtype:
        return f"native gave {got.shape} {got.dtype}, NumPy {want.shape} {want.dtype}"
    a, b = got.astype(np.float64), want.astype(np.float64)
    nan = np.isnan(magnitude)
    compared = ~nan & (magnitude < 1e38)
    wrong = (nan & ~(np.isnan(a) & np.isnan(b))) | (
        compared & ~(np.abs(a - b) <= 1e-6 * magnitude))
    if wrong.any():
        where = tuple(np.argwhere(wrong)[0])
        return f"native and NumPy differ at {where}: {got[where]!r} against {want[where]!r}"
    return None
