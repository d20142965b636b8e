"""``pullback.cuda`` when pullback-cuda is not installed.

Ported scripts ask ``torch.cuda.is_available()`` before anything else and pick the CPU when it
says False; that question must not need the GPU package. This module answers it (and
``device_count()``, ``manual_seed``, which PyTorch also allows without a GPU); anything else is
the one-line error naming the distribution to install. The import finder in
:mod:`pullback._install_hint` loads it under the name ``pullback.cuda``.
"""

from __future__ import annotations

from typing import Any

from pullback._install_hint import MissingSubpackageError, missing_distribution_message

_DISTRIBUTION = "pullback-cuda"


def is_available() -> bool:
    """False: there is no ``cuda`` backend without pullback-cuda."""
    return False


def device_count() -> int:
    """0: there is no ``cuda`` backend without pullback-cuda."""
    return 0


def unavailable_reason() -> str:
    """The distribution that provides ``cuda`` and how to install it."""
    return missing_distribution_message("pullback.cuda", _DISTRIBUTION)


def manual_seed(seed: int) -> None:
    """Ignored without a GPU, as PyTorch's ``torch.cuda.manual_seed``."""


manual_seed_all = manual_seed


def __getattr__(name: str) -> Any:
    if name.startswith("_"):  # module protocol look-ups (__path__, ...) stay AttributeErrors
        raise AttributeError(name)
    raise MissingSubpackageError(missing_distribution_message(f"pullback.cuda.{name}",
                                                              _DISTRIBUTION))
