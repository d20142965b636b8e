"""Learning-rate schedulers (``pullback.optim.lr_scheduler``, as ``torch.optim.lr_scheduler``).

Every scheduler is registered by name in :data:`SCHEDULERS`; each has ``step()``,
``get_last_lr()``, ``state_dict()`` and ``load_state_dict()``.
"""

from .base import SCHEDULERS, LRScheduler
from .composite import ChainedScheduler, SequentialLR
from .decay import CosineAnnealingLR, ExponentialLR, LambdaLR, LinearLR, MultiStepLR, StepLR
from .one_cycle import OneCycleLR
from .plateau import ReduceLROnPlateau
from .warmup import WarmupCosine, warmup_cosine

__all__ = [
    "SCHEDULERS", "ChainedScheduler", "CosineAnnealingLR", "ExponentialLR", "LRScheduler",
    "LambdaLR", "LinearLR", "MultiStepLR", "OneCycleLR", "ReduceLROnPlateau", "SequentialLR",
    "StepLR", "WarmupCosine", "warmup_cosine",
]
