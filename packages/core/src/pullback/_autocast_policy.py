"""Which ops run in which precision under ``autocast``, per device type, and the stack of
active ``autocast`` blocks (a module with no heavy imports: core's and nn's functions use
:func:`autocast_function` at definition time).

A policy names ops as the registry does (``"matmul"``, ``"nn.linear"``), which the dispatch
mode of :mod:`pullback.amp.autocast_mode` casts, and public functions built from several ops
(``"mse_loss"``, ``"addmm"``), which :func:`autocast_function` casts at their entry: the
function then runs with autocast off, on inputs cast to its precision, as PyTorch's
``custom_fwd(cast_inputs=...)``. The lists are PyTorch's (its "Autocast Op Reference"), cut to
what pullback has, and checked against torch in core's ``tests/test_amp_torch.py``.
"""

from __future__ import annotations

import functools
import threading
from dataclasses import dataclass
from typing import Any, Callable, TypeVar

F = TypeVar("F", bound=Callable[..., Any])


@dataclass(frozen=True)
class Policy:
    """What one device type's autocast casts."""

    lower: frozenset[str]  # run in the autocast dtype (float16 or bfloat16)
    float32: frozenset[str]  # float16/bfloat16 inputs are cast up to float32

    def precision(self, name: str, mode: Any = None) -> str | None:
        """``"lower"``, ``"float32"`` or None (the op runs on what it gets). An entry
        ``"op:mode"`` is for the op with that ``mode`` attribute only (PyTorch casts LSTM
        layers but not GRU ones, reflection padding but not constant padding)."""
        for key in ((f"{name}:{mode}", name) if isinstance(mode, str) else (name,)):
            if key in self.lower:
                return "lower"
            if key in self.float32:
                return "float32"
        return None


_LOSSES = frozenset({
    "mse_loss", "l1_loss", "smooth_l1_loss", "huber_loss", "nll_loss", "cross_entropy",
    "nn.cross_entropy", "kl_div", "binary_cross_entropy", "binary_cross_entropy_with_logits",
    "margin_ranking_loss", "hinge_embedding_loss", "soft_margin_loss", "poisson_nll_loss",
    "cosine_embedding_loss", "multi_margin_loss", "multilabel_margin_loss",
    "triplet_margin_loss", "ctc_loss",
})

# The products and convolutions both device lists run in low precision (PyTorch's CPU list
# lowers only the LSTM among the recurrent layers, its CUDA list all of them).
_PRODUCTS = frozenset({
    "matmul", "einsum", "nn.linear", "nn.conv2d", "nn.conv3d", "nn.scaled_dot_product_attention",
    "addmm", "baddbmm", "addbmm", "conv_transpose1d", "conv_transpose2d", "conv_transpose3d",
    "prelu",
})

POLICIES: dict[str, Policy] = {
    # PyTorch's CPU lists: products, convolutions, attention and LSTM layers in bfloat16
    # (or float16); losses, linear algebra, prod, cdist, quantile, 3-d pooling and reflection /
    # replication padding in float32; the rest (softmax, layer norm, sums) as they come.
    "cpu": Policy(
        lower=_PRODUCTS | {"nn.recurrent_layer:LSTM"},
        float32=_LOSSES | frozenset({
            "prod", "cdist", "quantile", "nanquantile", "trace", "cholesky", "inv", "solve",
            "qr", "svd", "eigh", "det", "logabsdet", "slogdet_sign", "matrix_exp",
            "nn.avg_pool3d", "nn.max_pool3d", "max_unpool2d", "max_unpool3d",
            "adaptive_avg_pool3d", "adaptive_max_pool3d", "pad:reflect", "pad:replicate",
            "grid_sample",
        }),
    ),
    # PyTorch's CUDA lists (the one for other accelerators too): products and convolutions
    # in float16; pointwise transcendental functions, reductions, norms, softmax and losses
    # in float32.
    "cuda": Policy(
        lower=_PRODUCTS | {"nn.recurrent_layer"},
        float32=_LOSSES | frozenset({
            "sum", "mean", "prod", "cumsum", "cumprod", "logsumexp", "norm2", "exp", "expm1",
            "log", "log1p", "log2", "log10", "pow", "rsqrt", "reciprocal", "softplus", "acos",
            "asin", "cosh", "sinh", "tan", "nn.softmax", "nn.log_softmax", "nn.layer_norm",
            "group_norm", "cdist", "cosine_similarity", "normalize",
        }),
    ),
}


class _Blocks(threading.local):
    def __init__(self) -> None:
        self.blocks: list[Any] = []  # the entered autocast blocks, innermost last


active = _Blocks()


def innermost(device_type: str) -> Any:
    """The innermost entered ``autocast`` block for ``device_type`` (None outside any)."""
    for block in reversed(active.blocks):
        if block.device_type == device_type:
            return block
    return None


def policy_for(device_type: str) -> Policy:
    """The device type's policy (a device type PyTorch has no list for gets CUDA's)."""
    return POLICIES.get(device_type, POLICIES["cuda"])


def autocast_function(name: str) -> Callable[[F], F]:
    """Decorator: under an enabled ``autocast`` whose policy lists ``name``, the function runs
    on its floating inputs cast to that precision, with autocast off inside (what PyTorch's
    kernel for the whole op does). Outside autocast it costs one attribute look-up."""

    def wrap(fn: F) -> F:
        @functools.wraps(fn)
        def run(*args: Any, **kwargs: Any) -> Any:
            if not active.blocks:
                return fn(*args, **kwargs)
            from .amp.autocast_mode import cast_call

            return cast_call(name, fn, args, kwargs)

        return run  # type: ignore[return-value]

    return wrap
