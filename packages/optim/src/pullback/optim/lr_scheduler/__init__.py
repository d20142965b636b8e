"""Learning-rate schedulers (``pullback.optim.lr_scheduler``, as ``torch.optim.lr_scheduler``).

Every scheduler is registered by name in :data:`SCHEDULERS`; each has ``step()``,
``get_last_lr()``, ``state_dict()`` and ``load_state_dict()``.
"""

from .base import SCHEDULERS, LRScheduler
from .composite import ChainedScheduler, SequentialLR
from .decay import CosineAnnealingLR, ExponentialLR, LambdaLR, LinearLR, MultiStepLR, StepLR
from .one_cycle import OneCycleLR
from .plateau import ReduceLROnPlateau
from .warmup import (DECAY_SHAPES, WarmupCosine, WarmupStableDecay, warmup_cosine,
                     warmup_stable_decay)

__all__ = [
    "DECAY_SHAPES", "SCHEDULERS", "ChainedScheduler", "CosineAnnealingLR", "ExponentialLR",
    "LRScheduler", "LambdaLR", "LinearLR", "MultiStepLR", "OneCycleLR", "ReduceLROnPlateau",
    "SequentialLR", "StepLR", "WarmupCosine", "WarmupStableDecay", "warmup_cosine",
    "warmup_stable_decay",
]
