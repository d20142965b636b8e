"""Networks to use as a coupling's ``f`` and ``g``."""

from __future__ import annotations

import math
from typing import Callable

import pullback as pb
import pullback.nn as nn


def residual_mlp(features: int, hidden: int | None = None, depth: int = 1,
                 activation: Callable[[], nn.Module] = nn.ReLU) -> nn.Sequential:
    """``Linear -> activation -> Linear`` from ``features`` to ``features``, whose last layer
    starts scaled by ``1/sqrt(2 * depth)`` (GPT-2's scaling of residual branches).

    A stack of ``depth`` additive couplings adds ``2 * depth`` branch outputs to its stream;
    scaled so, the stream stays of the input's size at initialization and the stack stays
    invertible to rounding at any depth (with PyTorch's default initialization it grows
    geometrically, and so does the reconstruction error: docs/avyaya.md has both).

    Args:
        features: the size of the half the network maps (input and output).
        hidden: the hidden width (default: ``features``).
        depth: the number of blocks in the stack.
        activation: a factory of the activation module.
    """
    net = nn.Sequential(nn.Linear(features, hidden or features), activation(),
                        nn.Linear(hidden or features, features))
    with pb.no_grad():
        for p in net[2].parameters():
            p.mul_(1.0 / math.sqrt(2 * depth))
    return net
