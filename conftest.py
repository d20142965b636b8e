"""Repository-wide pytest setup.

Tests marked ``cuda`` need a usable CUDA device; where there is none they are skipped with the
reason (no CUDA backend registered, or the backend's own ``unavailable_reason``).
"""

from __future__ import annotations

import pytest


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    cuda_items = [item for item in items if item.get_closest_marker("cuda")]
    if not cuda_items:
        return
    reason = _why_no_cuda()
    if reason is None:
        return
    for item in cuda_items:
        item.add_marker(pytest.mark.skip(reason=f"needs a CUDA device: {reason}"))


def _why_no_cuda() -> str | None:
    """``None`` when a CUDA device is usable, else why not."""
    from pullback import backends

    backend = backends.backends().get("cuda")
    if backend is None:
        return "no 'cuda' backend is registered (pip install pullback-cuda)"
    if not backend.is_available():
        return backend.unavailable_reason() or "the cuda backend reports no usable device"
    return None
