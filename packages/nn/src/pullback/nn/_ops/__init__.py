"""The fused ops pullback.nn adds to the op registry (registered by :mod:`pullback.nn._plugin`).

Each op is declared next to its forward kernel and its grad rule. Grad rules are written with
``F`` ops only, so ``create_graph=True`` gives exact higher-order derivatives; where a fast
first-order path reuses values the forward saved (``aux=True`` kernels, the ``saved=`` keyword),
the pure-``F`` formulation is used whenever ``F.differentiable`` is true.
"""

from __future__ import annotations

from .attention import SDPA, SDPA_BACKWARD
from .conv import (
    CONV2D, CONV2D_INPUT_GRAD, CONV2D_WEIGHT_GRAD, CONV3D, CONV3D_INPUT_GRAD, CONV3D_WEIGHT_GRAD,
)
from .cross_entropy import CROSS_ENTROPY, CROSS_ENTROPY_BACKWARD
from .linear import LINEAR
from .norm import LAYER_NORM, LAYER_NORM_BACKWARD
from .pool import (
    AVG_POOL2D, AVG_POOL2D_GRAD, AVG_POOL3D, AVG_POOL3D_GRAD, MAX_POOL2D, MAX_POOL2D_BACKWARD,
    MAX_POOL2D_INDICES, MAX_POOL2D_SELECT, MAX_POOL3D, MAX_POOL3D_BACKWARD, MAX_POOL3D_INDICES,
    MAX_POOL3D_SELECT,
)
from .recurrent import RECURRENT_LAYER, RECURRENT_LAYER_BACKWARD
from .softmax import LOG_SOFTMAX, LOG_SOFTMAX_BACKWARD, SOFTMAX, SOFTMAX_BACKWARD
from .unfold import COL2IM, IM2COL

NN_OPS = (
    LINEAR, CONV2D, CONV2D_INPUT_GRAD, CONV2D_WEIGHT_GRAD, CONV3D, CONV3D_INPUT_GRAD,
    CONV3D_WEIGHT_GRAD, MAX_POOL2D, MAX_POOL2D_BACKWARD, MAX_POOL2D_SELECT, MAX_POOL2D_INDICES,
    MAX_POOL3D, MAX_POOL3D_BACKWARD, MAX_POOL3D_SELECT, MAX_POOL3D_INDICES, AVG_POOL2D,
    AVG_POOL2D_GRAD, AVG_POOL3D, AVG_POOL3D_GRAD, SOFTMAX, SOFTMAX_BACKWARD, LOG_SOFTMAX,
    LOG_SOFTMAX_BACKWARD, LAYER_NORM, LAYER_NORM_BACKWARD, SDPA, SDPA_BACKWARD,
    CROSS_ENTROPY, CROSS_ENTROPY_BACKWARD, IM2COL, COL2IM,
    RECURRENT_LAYER, RECURRENT_LAYER_BACKWARD,
)

__all__ = ["NN_OPS"]
