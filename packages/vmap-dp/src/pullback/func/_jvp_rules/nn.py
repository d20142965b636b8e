"""jvp rules of pullback-nn's fused ops, registered by name (the ops are looked up when the
rule runs, so pullback.func does not import pullback.nn)."""

from __future__ import annotations

from typing import Any

from pullback.dispatch import apply
from pullback.registry import get_op

from .._reference import NN_REFERENCES, jvp_via_reference


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


def _conv(name: str) -> Any:
    """The jvp of a convolution (``nn.conv2d``, ``nn.conv3d``): bilinear in input and weight."""

    def rule(F: Any, tangents: Any, out: Any, x: Any, w: Any, b: Any, **geometry: Any) -> Any:
        tx, tw, tb = tangents
        op = _nn(name)
        bias = (F.reshape(tb, shape=(1, -1) + (1,) * (x.ndim - 2)) if tb is not None
                else None)
        return _sum_tangents(F, op(tx, w, None, **geometry) if tx is not None else None,
                             op(x, tw, None, **geometry) if tw is not None else None, bias)

    return rule


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


def _max_pool(name: str) -> Any:
    def rule(F: Any, tangents: Any, out: Any, x: Any, **geometry: Any) -> Any:
        return _nn(f"{name}_select")(tangents[0], x, out, **geometry)

    return rule


def _linear_op(name: str) -> Any:
    """The jvp of an op linear in its only tensor input (average pooling and its adjoint)."""

    def rule(F: Any, tangents: Any, out: Any, x: Any, **attrs: Any) -> Any:
        return _nn(name)(tangents[0], **attrs)

    return rule


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


def _window_rules(rank: int) -> dict[str, Any]:
    conv, max_pool, avg_pool = (f"nn.conv{rank}d", f"nn.max_pool{rank}d",
                                f"nn.avg_pool{rank}d")
    return {
        conv: _conv(conv),
        f"{conv}_input_grad": _multilinear(f"{conv}_input_grad"),
        f"{conv}_weight_grad": _multilinear(f"{conv}_weight_grad"),
        max_pool: _max_pool(max_pool),
        f"{max_pool}_backward": _linear_in_first(f"{max_pool}_backward"),
        f"{max_pool}_select": _linear_in_first(f"{max_pool}_select"),
        avg_pool: _linear_op(avg_pool), f"{avg_pool}_grad": _linear_op(f"{avg_pool}_grad"),
    }


RULES = {
    "nn.linear": _linear, **_window_rules(2), **_window_rules(3),
    "nn.im2col": _linear_op("nn.im2col"), "nn.col2im": _linear_op("nn.col2im"),
    "nn.softmax": _softmax, "nn.log_softmax": _log_softmax, "nn.cross_entropy": _cross_entropy,
    "nn.layer_norm": _layer_norm, "nn.scaled_dot_product_attention": _attention,
    **{name: jvp_via_reference(name, get) for name, get in NN_REFERENCES.items()},
}
