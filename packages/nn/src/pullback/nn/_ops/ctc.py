"""Connectionist temporal classification (Graves et al., 2006) in log space, vectorized over
the batch: the forward (alpha) and backward (beta) recursions over the extended label sequence
``blank, l1, blank, l2, ..., blank``, one step per frame, on raw arrays of any NumPy-compatible
namespace ``xp``.

``alpha[t, n, s]`` is the log-probability of emitting the first ``s + 1`` extended labels in
frames ``0..t`` (frame ``t`` emitting label ``s``); ``beta[t, n, s]`` that of emitting labels
``s..`` in frames ``t..T_n - 1``. Both include frame ``t``'s emission, so for every frame
``alpha + beta - emission`` summed over ``s`` is the sequence's log-likelihood, and the gradient
of ``-log p`` with respect to ``log_probs[t, n, c]`` is ``-exp(logsumexp_{s: l'_s = c}(alpha +
beta) - log_probs[t, n, c] - log p)`` for ``t < T_n`` (0 after the sequence ends).
"""

from __future__ import annotations

from typing import Any


def extended_labels(xp: Any, targets: Any, blank: int) -> Any:
    """(N, 2S + 1) labels with a blank before, between and after the targets (N, S)."""
    n, s = targets.shape
    out = xp.full((n, 2 * s + 1), blank, dtype=xp.int64)
    out[:, 1::2] = targets
    return out


def _logsumexp(xp: Any, *terms: Any) -> Any:
    stacked = xp.stack(terms)
    top = xp.max(stacked, axis=0)
    safe = xp.where(xp.isfinite(top), top, 0)
    with xp.errstate(divide="ignore"):
        return xp.log(xp.sum(xp.exp(stacked - safe), axis=0)) + safe


def _shift(xp: Any, a: Any, by: int, fill: float) -> Any:
    """``a`` moved ``by`` places along the last axis (towards higher ``s`` when positive)."""
    out = xp.full_like(a, fill)
    if by > 0:
        out[..., by:] = a[..., :-by]
    else:
        out[..., :by] = a[..., -by:]
    return out


def forward_backward(xp: Any, log_probs: Any, targets: Any, input_lengths: Any,
                     target_lengths: Any, blank: int) -> tuple[Any, Any, Any, Any]:
    """``(nll, log_alpha, log_beta, labels)`` of log-probabilities (T, N, C), padded targets
    (N, S) and the lengths (N,): ``nll[n] = -log p(targets[n] | log_probs[:T_n, n])``."""
    t_max, n, _ = log_probs.shape
    labels = extended_labels(xp, targets, blank)
    width = labels.shape[1]
    emit = xp.take_along_axis(log_probs, xp.broadcast_to(labels[None], (t_max, n, width)),
                              axis=2)
    s = xp.arange(width)
    valid = s[None, :] < 2 * target_lengths[:, None] + 1
    # a label may be reached from two places back when it is not blank and differs from it
    skip = xp.zeros((n, width), dtype=bool)
    skip[:, 2:] = (labels[:, 2:] != blank) & (labels[:, 2:] != labels[:, :-2])
    neg_inf = -xp.inf

    alpha = xp.full((t_max, n, width), neg_inf, dtype=log_probs.dtype)
    first = (s[None, :] < 2) & valid & (input_lengths[:, None] > 0)
    alpha[0] = xp.where(first, emit[0], neg_inf)
    for t in range(1, t_max):
        prev = alpha[t - 1]
        reach = _logsumexp(xp, prev, _shift(xp, prev, 1, neg_inf),
                           xp.where(skip, _shift(xp, prev, 2, neg_inf), neg_inf))
        step = xp.where(valid, reach + emit[t], neg_inf)
        alpha[t] = xp.where((t < input_lengths)[:, None], step, prev)

    last = xp.maximum(input_lengths - 1, 0)
    end = alpha[last, xp.arange(n)]  # (N, width) at each sequence's last frame
    final = 2 * target_lengths
    tail = xp.take_along_axis(end, final[:, None], axis=1)[:, 0]
    before = xp.take_along_axis(end, xp.maximum(final - 1, 0)[:, None], axis=1)[:, 0]
    before = xp.where(target_lengths > 0, before, neg_inf)
    nll = -_logsumexp(xp, tail, before)
    nll = xp.where(input_lengths > 0, nll, xp.where(target_lengths > 0, xp.inf, 0.0))

    # A blank target may end on its last label or on the blank after it.
    ends = valid & (s[None, :] >= final[:, None] - 1)
    beta = xp.full((t_max, n, width), neg_inf, dtype=log_probs.dtype)
    skip_back = _shift(xp, skip, -2, False)  # from s, s + 2 is reachable
    for t in range(t_max - 1, -1, -1):
        is_last = (t == input_lengths - 1)[:, None]
        inside = (t < input_lengths - 1)[:, None]
        if t + 1 < t_max:
            nxt = beta[t + 1]
            reach = _logsumexp(xp, nxt, _shift(xp, nxt, -1, neg_inf),
                               xp.where(skip_back, _shift(xp, nxt, -2, neg_inf), neg_inf))
        else:
            reach = xp.full((n, width), neg_inf, dtype=log_probs.dtype)
        value = xp.where(is_last, xp.where(ends, emit[t], neg_inf),
                         xp.where(inside & valid, reach + emit[t], neg_inf))
        beta[t] = value
    return nll, alpha, beta, labels


def log_probs_grad(xp: Any, log_probs: Any, nll: Any, alpha: Any, beta: Any, labels: Any,
                   input_lengths: Any, grad_nll: Any) -> Any:
    """The gradient (T, N, C) of ``sum_n grad_nll[n] * nll[n]`` with respect to the
    log-probabilities (0 where ``nll`` is infinite: no alignment exists)."""
    t_max, n, c = log_probs.shape
    ab = alpha + beta  # (T, N, width)
    top = xp.max(ab, axis=2, keepdims=True)
    top = xp.where(xp.isfinite(top), top, 0)
    onehot = (labels[:, :, None] == xp.arange(c)[None, None, :]).astype(log_probs.dtype)
    per_class = xp.einsum("tns,nsc->tnc", xp.exp(ab - top), onehot)
    with xp.errstate(divide="ignore", over="ignore", invalid="ignore"):
        log_class = xp.log(per_class) + top
        grad = -xp.exp(log_class + nll[None, :, None] - log_probs)
    inside = (xp.arange(t_max)[:, None] < input_lengths[None, :])[:, :, None]
    finite = xp.isfinite(nll)[None, :, None]
    grad = xp.where(inside & finite & xp.isfinite(grad), grad, 0.0)
    return grad * grad_nll[None, :, None]
