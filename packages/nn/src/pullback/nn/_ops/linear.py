"""``nn.linear``: ``x @ w.T + b`` as one op (one kernel call and one graph node instead of three,
which is most of the per-layer overhead of a small MLP)."""

from __future__ import annotations

import math
from typing import Any

from pullback.promotion import SAME
from pullback.registry import Op

from ._matmul import matmul_for


def _linear_kernel(xp: Any) -> Any:
    matmul = matmul_for(xp)

    def linear(x: Any, w: Any, b: Any) -> Any:
        if x.ndim == 2:
            y = matmul(x, w.T)
        else:  # leading dims folded into rows: one GEMM (NumPy loops over a stack of
            # matrices, measured 20-40x slower for (32, 64, 128) inputs)
            y = matmul(x.reshape(-1, x.shape[-1]), w.T).reshape(x.shape[:-1] + (w.shape[0],))
        if b is not None:
            y += b
        # ml_dtypes' bfloat16 matmul returns float32; give back the input's dtype.
        return y if y.dtype == x.dtype else y.astype(x.dtype)

    return linear


# As PyTorch, x, w and b must share one dtype (no silent float64 GEMM).
LINEAR = Op("nn.linear", _linear_kernel, promotion=SAME, doc="x @ w.T + b (b optional)")


@LINEAR.def_grad
def _linear_grad(F: Any, g: Any, out: Any, x: Any, w: Any, b: Any, needs: Any) -> Any:
    out_features, in_features = w.shape
    rows = math.prod(g.shape) // out_features if out_features else 0
    g2 = F.reshape(g, shape=(rows, out_features))
    gx = F.matmul(g, w) if needs[0] else None
    gw = None
    if needs[1]:
        x2 = F.reshape(x, shape=(rows, in_features))
        gw = F.matmul(F.swapaxes(g2, a=0, b=1), x2)
    gb = F.sum(g2, axis=0) if needs[2] else None
    return gx, gw, gb
