"""Batching rules of pullback-nn's fused ops, registered by op name (pullback.func does not
import pullback.nn: a rule for an op that is not registered yet waits in the registry).

Images ``(N, C, *spatial)`` (2-d and 3-d) fold the batch into ``N`` while the weights are
shared; per-sample weights (the weight gradient of a per-sample gradient, or vmap over models)
become a grouped convolution with ``groups * B`` groups, the trick functorch uses, so that every
case is one kernel call.
"""

from __future__ import annotations

from typing import Any

from pullback.dispatch import apply
from pullback.registry import Op, get_op
from pullback.tensor import Tensor

from .._reference import NN_REFERENCES, batch_via_reference
from .fallback import loop_fallback
from ._util import (
    align_front, front, logical_ndim, materialize, move_dim, pad_after_batch, reshape, shift_axis,
)


def _op(name: str) -> Op:
    return get_op(name)


def _fold(x: Tensor, bdim: Any, size: int) -> Tensor:
    """(B, N, ...) -> (B*N, ...) (unbatched inputs are broadcast to the batch first)."""
    x = materialize(x, bdim, size)
    return reshape(x, (size * x.shape[1],) + tuple(x.shape[2:]))


def _unfold(y: Tensor, size: int) -> tuple[Tensor, int]:
    return reshape(y, (size, y.shape[0] // size) + tuple(y.shape[1:])), 0


def _images(op: Op, args: Any, bdims: Any, size: int, /, **attrs: Any) -> Any:
    """Pooling and its backward ops: every tensor argument is an image batch."""
    folded = [_fold(a, b, size) if isinstance(a, Tensor) else a for a, b in zip(args, bdims)]
    if "input_shape" in attrs:
        shape = attrs["input_shape"]
        attrs["input_shape"] = (size * shape[0],) + tuple(shape[1:])
    return _unfold(apply(op, *folded, **attrs), size)


def _grouped(x: Tensor, bdim: Any, size: int) -> Tensor:
    """(B, N, C, *spatial) -> (N, B*C, *spatial): each sample's channels form groups of their
    own."""
    x = materialize(x, bdim, size)
    x = move_dim(x, 0, 1)
    return reshape(x, (x.shape[0], size * x.shape[2]) + tuple(x.shape[3:]))


def _stacked(w: Any, bdim: Any, size: int) -> Any:
    """(B, O, ...) -> (B*O, ...): per-sample weights (or biases) one after the other."""
    if w is None:
        return None
    w = materialize(w, bdim, size)
    return reshape(w, (size * w.shape[1],) + tuple(w.shape[2:]))


def _from_grouped(y: Tensor, size: int) -> tuple[Tensor, int]:
    """(N, B*O, *spatial) -> (N, B, O, *spatial), batch dim 1."""
    return reshape(y, (y.shape[0], size, y.shape[1] // size) + tuple(y.shape[2:])), 1


def _conv(op: Op, args: Any, bdims: Any, size: int, /, *, groups: int, **geometry: Any) -> Any:
    x, w, b = args
    bx, bw, bb = bdims
    if bw is None and bb is None:
        return _unfold(apply(op, _fold(x, bx, size), w, b, groups=groups, **geometry), size)
    y = apply(op, _grouped(x, bx, size), _stacked(w, bw, size), _stacked(b, bb, size),
              groups=groups * size, **geometry)
    return _from_grouped(y, size)


def _conv_input_grad(op: Op, args: Any, bdims: Any, size: int, /, *, input_shape: Any,
                     groups: int, **geometry: Any) -> Any:
    g, w = args
    bg, bw = bdims
    n, c = input_shape[:2]
    if bw is None:
        y = apply(op, _fold(g, bg, size), w, input_shape=(size * n,) + tuple(input_shape[1:]),
                  groups=groups, **geometry)
        return _unfold(y, size)
    y = apply(op, _grouped(g, bg, size), _stacked(w, bw, size),
              input_shape=(n, size * c) + tuple(input_shape[2:]), groups=groups * size,
              **geometry)
    return _from_grouped(y, size)


def _conv_weight_grad(op: Op, args: Any, bdims: Any, size: int, /, *, weight_shape: Any,
                      groups: int, **geometry: Any) -> Any:
    x, g = args
    bx, bg = bdims
    dw = apply(op, _grouped(x, bx, size), _grouped(g, bg, size),
               weight_shape=(size * weight_shape[0],) + tuple(weight_shape[1:]),
               groups=groups * size, **geometry)
    return reshape(dw, (size,) + tuple(weight_shape)), 0


def _linear(op: Op, args: Any, bdims: Any, size: int, /) -> Any:
    x, w, b = args
    bx, bw, bb = bdims
    if bw is None and bb is None:
        return apply(op, front(x, bx), w, b), 0
    if bw is None:
        y = apply(op, front(x, bx) if bx is not None else x, w, None)
        by = 0 if bx is not None else None
    else:
        # Per-sample weights: one batched GEMM (B, rows, in) @ (B, in, out).
        x3 = materialize(x, bx, size)
        lead = tuple(x3.shape[1:-1])
        x3 = reshape(x3, (size, -1, x3.shape[-1]))
        wt = move_dim(front(w, bw), 1, 2)
        y = reshape(apply(_op("matmul"), x3, wt), (size,) + lead + (w.shape[-2],))
        by = 0
    if b is None:
        return y, by
    if by is None:
        y = materialize(y, None, size)
    bias = pad_after_batch(materialize(b, bb, size), y.ndim - 1)
    return apply(_op("add"), y, bias), 0


def _along_axis(op: Op, args: Any, bdims: Any, size: int, /, axis: int) -> Any:
    """softmax, log_softmax and their backward ops: along one axis of each sample."""
    batched = [a for a, b in zip(args, bdims) if b is not None]
    n = batched[0].ndim - 1
    xs = [materialize(a, b, size) for a, b in zip(args, bdims)]
    return apply(op, *xs, axis=shift_axis(axis, n)), 0


def _layer_norm(op: Op, args: Any, bdims: Any, size: int, /, *, normalized_ndim: int,
                eps: float) -> Any:
    x, w, b = args
    bx, bw, bb = bdims
    if bw is None and bb is None:
        return apply(op, front(x, bx), w, b, normalized_ndim=normalized_ndim, eps=eps), 0
    x = materialize(x, bx, size)
    y = apply(op, x, None, None, normalized_ndim=normalized_ndim, eps=eps)
    rank = x.ndim - 1
    if w is not None:
        y = apply(_op("mul"), y, w if bw is None else pad_after_batch(front(w, bw), rank))
    if b is not None:
        y = apply(_op("add"), y, b if bb is None else pad_after_batch(front(b, bb), rank))
    return y, 0


def _attention(op: Op, args: Any, bdims: Any, size: int, /, **attrs: Any) -> Any:
    """The kernel broadcasts every operand's leading dims: line the batch up in front."""
    return apply(op, *align_front(args, bdims), **attrs), 0


def _attention_backward(op: Op, args: Any, bdims: Any, size: int, /, **attrs: Any) -> Any:
    """As the forward: the kernel broadcasts every operand's leading dims. A gradient that no
    batched operand reaches (gv from unbatched g and weights) comes back without the batch."""
    batched = 1 + max(logical_ndim(a, b) for a, b in zip(args, bdims))
    grads = apply(op, *align_front(args, bdims), **attrs)
    return grads, tuple(0 if g.ndim == batched else None for g in grads)


def _cross_entropy(op: Op, args: Any, bdims: Any, size: int, /, ignore_index: int) -> Any:
    logits, target = args
    bl, bt = bdims
    out = apply(op, _fold(logits, bl, size), _fold(target, bt, size), ignore_index=ignore_index)
    return reshape(out, (size, -1)), 0


def _cross_entropy_backward(op: Op, args: Any, bdims: Any, size: int, /,
                            ignore_index: int) -> Any:
    """Rows are independent: every operand's batch joins its rows, one kernel call."""
    g, logits, target, stats = (_fold(a, b, size) for a, b in zip(args, bdims))
    return _unfold(apply(op, g, logits, target, stats, ignore_index=ignore_index), size)


_recurrent_via_reference = batch_via_reference("nn.recurrent_layer",
                                               NN_REFERENCES["nn.recurrent_layer"])


def _recurrent_layer(op: Op, args: Any, bdims: Any, size: int, /, *, mode: str,
                     reverse: bool = False, lengths: tuple[int, ...] | None = None) -> Any:
    """Shared weights: the batch joins the layer's own batch (dim 1 of ``x``, dim 0 of the
    states), one kernel call. Per-sample weights: vmap of the step-by-step reference."""
    attrs = {"mode": mode, "reverse": reverse}
    if any(b is not None for b in bdims[3:]):
        return _recurrent_via_reference(op, args, bdims, size, lengths=lengths, **attrs)
    x, h0, c0 = args[:3]
    x = move_dim(materialize(x, bdims[0], size), 0, 1)  # (T, V, B, I)
    x = reshape(x, (x.shape[0], size * x.shape[2], x.shape[3]))
    c0 = None if c0 is None else _fold(c0, bdims[2], size)
    joined = None if lengths is None else tuple(lengths) * size  # sample v's rows come v-th
    out = apply(op, x, _fold(h0, bdims[1], size), c0, *args[3:], lengths=joined, **attrs)
    return reshape(out, (out.shape[0], size, out.shape[1] // size, out.shape[2])), 1


def _window_rules(rank: int) -> dict[str, Any]:
    conv, max_pool, avg_pool = (f"nn.conv{rank}d", f"nn.max_pool{rank}d",
                                f"nn.avg_pool{rank}d")
    return {
        conv: _conv, f"{conv}_input_grad": _conv_input_grad,
        f"{conv}_weight_grad": _conv_weight_grad,
        **{f"{max_pool}{part}": _images for part in ("", "_backward", "_select", "_indices")},
        avg_pool: _images, f"{avg_pool}_grad": _images,
    }


RULES = {
    **_window_rules(2), **_window_rules(3), "nn.im2col": _images, "nn.col2im": _images,
    "nn.linear": _linear,
    "nn.softmax": _along_axis, "nn.log_softmax": _along_axis,
    "nn.softmax_backward": _along_axis, "nn.log_softmax_backward": _along_axis,
    "nn.layer_norm": _layer_norm,
    "nn.scaled_dot_product_attention": _attention, "nn.cross_entropy": _cross_entropy,
    "nn.scaled_dot_product_attention_backward": _attention_backward,
    "nn.cross_entropy_backward": _cross_entropy_backward,
    # First-order backward only (core's raw-array backward, which never runs on batched
    # tensors; the transforms differentiate layer_norm through its grad rule's F ops).
    "nn.layer_norm_backward": loop_fallback,
    "nn.recurrent_layer": _recurrent_layer,
    # First-order backward only, on raw arrays with the forward's saved buffers: the transforms
    # never reach it (their reverse pass uses nn.recurrent_layer's "vjp" rule).
    "nn.recurrent_layer_backward": loop_fallback,
}
