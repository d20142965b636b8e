"""``torch.backends.mps``: pullback has no Metal backend of its own; a plugin may register an
``mps`` device type, and these answer from the device registry."""

from __future__ import annotations


def is_built() -> bool:
    """Whether a backend plugin registered an ``mps`` device type."""
    from . import backends

    return "mps" in backends()


def is_available() -> bool:
    """Whether a registered ``mps`` device type is usable here."""
    from . import is_available as usable

    return is_built() and usable("mps")
