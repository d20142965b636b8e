"""jvp rules of core's ops that no family rule covers (or that a family covers inexactly), and of
pullback.func's own ``func.outer``."""

from __future__ import annotations

from typing import Any

from pullback.registry import get_op

from .._outer import OUTER
from ._derived import linear, multilinear


def _pad(F: Any, tangents: Any, out: Any, x: Any, *, widths: Any, value: float = 0.0) -> Any:
    """pad is affine: the constant it pads with has no tangent."""
    return F.pad(tangents[0], widths=widths, value=0.0)


def rules() -> dict[str, Any]:
    """name -> jvp rule for core's ops."""
    out: dict[str, Any] = {"pad": _pad}
    for name in ("sum", "mean", "cumsum", "sum_to", "cast", "copy", "swapaxes"):
        out[name] = linear(get_op(name))
    for name in ("matmul", "einsum"):
        out[name] = multilinear(get_op(name))
    out[OUTER.name] = multilinear(OUTER)
    return out
