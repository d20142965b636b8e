"""``pullback.cuda.amp``: PyTorch's ``torch.cuda.amp`` spellings of :mod:`pullback.amp`
(``autocast(enabled, dtype)``, ``GradScaler(init_scale, ...)``), deprecated there as in
PyTorch; use ``pullback.amp.autocast("cuda", ...)`` and ``pullback.amp.GradScaler("cuda")``."""

from pullback.amp._cuda_amp import GradScaler, autocast

__all__ = ["GradScaler", "autocast"]
