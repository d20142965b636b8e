"""``torch.backends.cudnn`` and ``torch.backends.mps`` as ported scripts use them
(``torch.backends.cudnn.benchmark = True``, ``if torch.backends.mps.is_available():``), under
:mod:`pullback.backends`. pullback runs no cuDNN autotuner and has no Metal backend of its own:
the switches are accepted and change nothing; ``mps.is_available()`` asks the device registry
(a plugin may add an ``mps`` device type)."""

from __future__ import annotations


class CudnnFlags:
    """``benchmark``, ``deterministic``, ``enabled``, ``allow_tf32``: settable, without effect
    (pullback's kernels are deterministic and pick no algorithm by timing)."""

    def __init__(self) -> None:
        self.benchmark = False
        self.deterministic = False
        self.enabled = True
        self.allow_tf32 = True

    @staticmethod
    def is_available() -> bool:
        """False: pullback does not use cuDNN."""
        return False


class MpsQueries:
    """``is_available()`` and ``is_built()`` of an ``mps`` device type."""

    @staticmethod
    def is_available() -> bool:
        """Whether a backend plugin registered a usable ``mps`` device type."""
        from .backends import is_available

        return is_available("mps") if "mps" in _registered() else False

    @staticmethod
    def is_built() -> bool:
        """Whether a backend plugin registered an ``mps`` device type."""
        return "mps" in _registered()


def _registered() -> set[str]:
    from .backends import backends

    return set(backends())


cudnn = CudnnFlags()
mps = MpsQueries()
