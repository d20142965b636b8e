"""The ops the compiler's passes create. They are ordinary registry ops (registered through the
plugin hook), so that a graph with fused nodes runs, prints and exports like any other; their
attributes carry the compiled kernels, and each lowers itself (``"compiler.lower"``)."""

from __future__ import annotations

import functools
from typing import Any

import numpy as np

from pullback.registry import Op, get_op


@functools.lru_cache(maxsize=None)
def _generic_kernel(user: str, name: str, xp: Any) -> Any:
    """Op ``name``'s kernel on ``xp`` for the compiler op ``user``, built on first use (a call
    of ``user`` runs it; building it at each call cost more than a small kernel's work)."""
    make = get_op(name).generic
    if make is None:
        raise NotImplementedError(f"{user}: '{name}' has no generic kernel")
    return make(xp)


def _call_kernel(xp: Any) -> Any:
    def run(*args: Any, kernel: Any) -> Any:
        return kernel(*args)

    return run


FUSED_ELEMENTWISE = Op("compiler.fused_elementwise", _call_kernel, differentiable=False,
                       family="elementwise",
                       doc="elementwise ops (and a trailing sum) fused into one generated loop")

def _scatter_slices_kernel(xp: Any) -> Any:
    def scatter_slices(*grads: Any, keys: tuple[Any, ...], shape: tuple[int, ...]) -> Any:
        if xp is np:
            from ._native_slices import scatter_columns

            out = scatter_columns(grads, keys, tuple(shape))
            if out is not NotImplemented:
                return out
        out = xp.empty(shape, dtype=grads[0].dtype)
        for g, key in zip(grads, keys):
            xp.add(g, 0.0, out=out[key])  # the slices tile the buffer; + 0.0 as the sums did
        return out

    return scatter_slices


SCATTER_SLICES = Op("compiler.scatter_slices", _scatter_slices_kernel, differentiable=False,
                    family="index",
                    doc="a buffer made of gradients written at slices that tile one axis")

def _epilogue_kernel(xp: Any) -> Any:
    def matmul_epilogue(*args: Any, product: str, product_attrs: dict[str, Any],
                        n_product_args: int, at: int, kernel: Any) -> Any:
        y = _generic_kernel("compiler.matmul_epilogue", product, xp)(*args[:n_product_args],
                                                                     **product_attrs)
        rest = args[n_product_args:]
        return kernel(*rest[:at], y, *rest[at:])

    return matmul_epilogue


MATMUL_EPILOGUE = Op("compiler.matmul_epilogue", _epilogue_kernel, differentiable=False,
                     family="linalg",
                     doc="a product (linear, matmul) and its elementwise loop in its buffer")


def _attention_backward_packed_kernel(xp: Any) -> Any:
    def attention_backward_packed(g: Any, q: Any, k: Any, v: Any, weights: Any, *, scale: float,
                                  causal: bool, starts: tuple[int, int, int],
                                  shape: tuple[int, ...]) -> Any:
        backward = _generic_kernel("compiler.attention_backward_packed",
                                   "nn.scaled_dot_product_attention_backward", xp)
        out = xp.empty(shape, dtype=q.dtype)
        heads = []
        for start, operand in zip(starts, (q, k, v)):
            batch, count, length, dim = operand.shape
            # columns start.. of (B, T, W) as (B, H, T, D): a view (the last axis splits)
            heads.append(out[..., start:start + count * dim].reshape(batch, length, count, dim)
                         .swapaxes(1, 2))
        backward(g, q, k, v, weights, scale=scale, causal=causal, out=tuple(heads))
        return out

    return attention_backward_packed


ATTENTION_BACKWARD_PACKED = Op(
    "compiler.attention_backward_packed", _attention_backward_packed_kernel,
    differentiable=False, family="index",
    doc="attention's (gq, gk, gv) written into the column blocks of one packed QKV gradient")



def _layer_norm_backward_add_kernel(xp: Any) -> Any:
    def layer_norm_backward_add(g: Any, x: Any, w: Any, mean: Any, rstd: Any, add: Any, *,
                                normalized_ndim: int, param_grads: bool = True) -> Any:
        backward = _generic_kernel("compiler.layer_norm_backward_add", "nn.layer_norm_backward",
                                   xp)
        return backward(g, x, w, mean, rstd, normalized_ndim=normalized_ndim,
                        param_grads=param_grads, add=add)

    return layer_norm_backward_add


LAYER_NORM_BACKWARD_ADD = Op(
    "compiler.layer_norm_backward_add", _layer_norm_backward_add_kernel, differentiable=False,
    family="reduce",
    doc="(add + gx, gw, gb): layer norm's backward with a residual gradient added to gx")


def _gelu_slope_kernel(xp: Any) -> Any:
    from pullback.registry import get_op

    gelu_backward = get_op("gelu_backward").generic(xp)

    def gelu_slope(x: Any, approximate: str = "none") -> Any:
        # gelu_backward's own slope: 1 * slope is exactly slope
        return gelu_backward(xp.ones_like(x), x, approximate=approximate)

    return gelu_slope


GELU_SLOPE = Op("compiler.gelu_slope", _gelu_slope_kernel, differentiable=False,
                family="elementwise",
                doc="gelu'(x), kept from the forward so that GELU's backward is one product")

COMPILER_OPS = (FUSED_ELEMENTWISE, SCATTER_SLICES, MATMUL_EPILOGUE, ATTENTION_BACKWARD_PACKED,
                LAYER_NORM_BACKWARD_ADD, GELU_SLOPE)
