"""jvp rules of pullback-nn's fused ops, registered by name (the ops are looked up when the
rule runs, so pullback.func does not import pullback.nn)."""

from __future__ import annotations

from typing import Any

from pullback.dispatch import apply
from pullback.registry import get_op


def _nn(name: str) -> Any:
    op = get_op(name)
    return lambda *args, **attrs: apply(op, *args, **attrs)


def _sum_tangents(F: Any, *parts: Any) -> Any:
    total = None
    for p in parts:
        if p is not None:
            total = p if total is None else F.add(total, p)
    return total


def _linear(F: Any, tangents: Any, out: Any, x: Any, w: Any, b: Any) -> Any:
    tx, tw, tb = tangents
    op = _nn("nn.linear")
    return _sum_tangents(F, op(tx, w, None) if tx is not None else None,
                         op(x, tw, None) if tw is not None else None, tb)


def _conv2d(F: Any, tangents: Any, out: Any, x: Any, w: Any, b: Any, **geometry: Any) -> Any:
    tx, tw, tb = tangents
    op = _nn("nn.conv2d")
    bias = F.reshape(tb, shape=(1, -1, 1, 1)) if tb is not None else None
    return _sum_tangents(F, op(tx, w, None, **geometry) if tx is not None else None,
                         op(x, tw, None, **geometry) if tw is not None else None, bias)


def _multilinear(name: str) -> Any:
    def rule(F: Any, tangents: Any, out: Any, *primals: Any, **attrs: Any) -> Any:
        op = _nn(name)
        return _sum_tangents(F, *[op(*primals[:i], t, *primals[i + 1:], **attrs)
                                  if t is not None else None for i, t in enumerate(tangents)])

    return rule


def _linear_in_first(name: str) -> Any:
    """Ops linear in their first input whose other inputs only locate values (max pooling's
    backward and select: ``x`` and the pooled maxima are piecewise constant)."""

    def rule(F: Any, tangents: Any, out: Any, first: Any, *rest: Any, **attrs: Any) -> Any:
        if tangents[0] is None:
            return None
        return _nn(name)(tangents[0], *rest, **attrs)

    return rule


def _max_pool2d(F: Any, tangents: Any, out: Any, x: Any, **geometry: Any) -> Any:
    return _nn("nn.max_pool2d_select")(tangents[0], x, out, **geometry)


def _avg_pool2d(F: Any, tangents: Any, out: Any, x: Any, **attrs: Any) -> Any:
    return _nn("nn.avg_pool2d")(tangents[0], **attrs)


def _avg_pool2d_grad(F: Any, tangents: Any, out: Any, g: Any, **attrs: Any) -> Any:
    return _nn("nn.avg_pool2d_grad")(tangents[0], **attrs)


def _softmax(F: Any, tangents: Any, out: Any, x: Any, *, axis: int) -> Any:
    t = tangents[0]
    return out * (t - F.sum(t * out, axis=axis, keepdims=True))


def _log_softmax(F: Any, tangents: Any, out: Any, x: Any, *, axis: int) -> Any:
    t = tangents[0]
    return t - F.sum(F.exp(out) * t, axis=axis, keepdims=True)


def _cross_entropy(F: Any, tangents: Any, out: Any, logits: Any, target: Any, *,
                   ignore_index: int) -> Any:
    t = tangents[0]
    probs = F.exp(_nn("nn.log_softmax")(logits, axis=1))
    valid = F.not_equal(target, ignore_index)
    safe = F.reshape(F.where(valid, target, 0), shape=(-1, 1))
    picked = F.reshape(F.gather(t, safe, axis=1), shape=(-1,))
    return F.where(valid, F.sum(probs * t, axis=1) - picked, 0.0)


def _layer_norm(F: Any, tangents: Any, out: Any, x: Any, w: Any, b: Any, *,
                normalized_ndim: int, eps: float) -> Any:
    tx, tw, tb = tangents
    axes = tuple(range(x.ndim - normalized_ndim, x.ndim))
    mean = F.mean(x, axis=axes, keepdims=True)
    centered = x - mean
    rstd = F.rsqrt(F.mean(centered * centered, axis=axes, keepdims=True) + eps)
    xhat = centered * rstd
    parts = []
    if tx is not None:
        dc = tx - F.mean(tx, axis=axes, keepdims=True)
        dxhat = rstd * (dc - xhat * F.mean(dc * xhat, axis=axes, keepdims=True))
        parts.append(dxhat * w if w is not None else dxhat)
    if tw is not None:
        parts.append(xhat * tw)
    parts.append(tb)
    return _sum_tangents(F, *parts)


def _attention(F: Any, tangents: Any, out: Any, q: Any, k: Any, v: Any, bias: Any, keep: Any,
               *, scale: float, causal: bool) -> Any:
    from pullback.nn._ops.attention import _attention_weights  # the rule runs with nn loaded

    tq, tk, tv, tbias, _ = tangents
    weights = _attention_weights(F, q, k, bias, scale, causal)
    used = weights * keep if keep is not None else weights
    parts = []
    if tq is not None:
        parts.append(F.matmul(tq, F.swapaxes(k, a=-1, b=-2)) * scale)
    if tk is not None:
        parts.append(F.matmul(q, F.swapaxes(tk, a=-1, b=-2)) * scale)
    parts.append(tbias)
    t_scores = _sum_tangents(F, *parts)
    result = []
    if t_scores is not None:
        # masked positions have weight 0, so their tangent is 0 too
        t_weights = weights * (t_scores - F.sum(t_scores * weights, axis=-1, keepdims=True))
        result.append(F.matmul(t_weights * keep if keep is not None else t_weights, v))
    if tv is not None:
        result.append(F.matmul(used, tv))
    return _sum_tangents(F, *result)


RULES = {
    "nn.linear": _linear, "nn.conv2d": _conv2d,
    "nn.conv2d_input_grad": _multilinear("nn.conv2d_input_grad"),
    "nn.conv2d_weight_grad": _multilinear("nn.conv2d_weight_grad"),
    "nn.max_pool2d": _max_pool2d,
    "nn.max_pool2d_backward": _linear_in_first("nn.max_pool2d_backward"),
    "nn.max_pool2d_select": _linear_in_first("nn.max_pool2d_select"),
    "nn.avg_pool2d": _avg_pool2d, "nn.avg_pool2d_grad": _avg_pool2d_grad,
    "nn.softmax": _softmax, "nn.log_softmax": _log_softmax, "nn.cross_entropy": _cross_entropy,
    "nn.layer_norm": _layer_norm, "nn.scaled_dot_product_attention": _attention,
}
