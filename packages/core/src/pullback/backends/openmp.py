"""``torch.backends.openmp``: pullback's CPU kernels split work over their own thread pool
(``pullback.set_num_threads``), not OpenMP's."""

from __future__ import annotations


def is_available() -> bool:
    """False: no OpenMP."""
    return False
