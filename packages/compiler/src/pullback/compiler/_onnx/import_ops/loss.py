"""The loss operators: ``NegativeLogLikelihoodLoss`` and ``SoftmaxCrossEntropyLoss``, with
class weights, ``ignore_index`` and the three reductions (``mean`` divides by the summed
weights of the targets that count, as ONNX says)."""

from __future__ import annotations

from typing import Any

import numpy as np

import pullback as pb
import pullback.nn.functional as F
from pullback.tensor import Tensor

from . import NodeContext, converter, optional, text


def nll(log_prob: Tensor, target: Tensor, weight: Tensor | None, attrs: dict[str, Any]
        ) -> Tensor:
    target = target.to(np.int64)
    ignore = attrs.get("ignore_index")
    counts = pb.ones(tuple(target.shape), dtype=log_prob.dtype)
    safe = target
    if ignore is not None:  # the ignored targets pick class 0 and weigh nothing
        keep = target != int(ignore)
        safe = pb.where(keep, target, pb.zeros_like(target))
        counts = keep.to(log_prob.dtype)
    picked = pb.take_along_axis(log_prob, safe.unsqueeze(1), 1).squeeze(1)
    if weight is not None:
        counts = counts * weight[safe]
    loss = -picked * counts
    reduction = text(attrs.get("reduction", "mean"))
    if reduction == "none":
        return loss
    if reduction == "sum":
        return loss.sum()
    return loss.sum() / counts.sum()


@converter("NegativeLogLikelihoodLoss")
def _nll_loss(ins: list[Any], attrs: dict[str, Any], node: NodeContext) -> list[Any]:
    return [nll(ins[0], ins[1], optional(ins, 2), attrs)]


@converter("SoftmaxCrossEntropyLoss")
def _softmax_cross_entropy(ins: list[Any], attrs: dict[str, Any], node: NodeContext
                           ) -> list[Any]:
    log_prob = F.log_softmax(ins[0], dim=1)
    return [nll(log_prob, ins[1], optional(ins, 2), attrs), log_prob]
