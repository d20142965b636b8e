"""``pullback.Generator``: a seedable random generator object, as ``torch.Generator``.

Every ``generator=`` argument of pullback (``randn``, ``randint``, ``randperm``, the DataLoader,
``random_split``) takes a NumPy ``Generator``; this is one, with PyTorch's seeding methods on
top, so that ``random_split(ds, [0.8, 0.2], generator=torch.Generator().manual_seed(42))``
ports unchanged. It draws from PCG64, as the CPU backend's own generator.
"""

from __future__ import annotations

import secrets
from typing import Any

import numpy as np


class Generator(np.random.Generator):
    """A PCG64 NumPy generator with ``manual_seed``/``seed``/``initial_seed``/``get_state``/
    ``set_state``.

    Args:
        device: only ``"cpu"``: the generators of other devices are their backends'.

    Example:
        >>> import pullback
        >>> g = pullback.Generator().manual_seed(42)
        >>> a = pullback.randperm(5, generator=g)
        >>> bool((a == pullback.randperm(5, generator=g.manual_seed(42))).all())
        True
    """

    def __init__(self, device: Any = "cpu") -> None:
        from .backends import Device

        kind = device.type if isinstance(device, Device) else str(device).split(":")[0]
        if kind != "cpu":
            raise ValueError(f"Generator: only 'cpu' generators exist here, got {device!r}")
        self.device = Device("cpu")
        self._initial_seed = 67280421310721  # PyTorch's default seed of a new Generator
        super().__init__(np.random.PCG64(self._initial_seed))

    def manual_seed(self, seed: int) -> Generator:
        """Restart from ``seed``; returns the generator (so ``Generator().manual_seed(0)``)."""
        self._initial_seed = int(seed)
        self.bit_generator.state = np.random.PCG64(self._initial_seed).state
        return self

    def seed(self) -> int:
        """Restart from a fresh non-deterministic seed and return it."""
        seed = secrets.randbits(63)
        self.manual_seed(seed)
        return seed

    def initial_seed(self) -> int:
        """The seed of the last ``manual_seed``/``seed``."""
        return self._initial_seed

    def get_state(self) -> dict[str, Any]:
        """The bit generator's state (a JSON-serializable dict)."""
        return dict(self.bit_generator.state)

    def set_state(self, state: dict[str, Any]) -> Generator:
        """Restore a state from :meth:`get_state`."""
        self.bit_generator.state = state
        return self
