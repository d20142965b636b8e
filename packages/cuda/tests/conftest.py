"""Fixtures of pullback-cuda's tests.

Tests marked ``cuda`` need a GPU; the repository's conftest skips them, with the backend's
reason, where there is none. Everything else runs on any machine (the nvcc tests need nvcc).
"""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))  # philox_reference, the NumPy oracle


@pytest.fixture(scope="session")
def nvcc() -> str:
    """The nvcc executable (the CUDA sources are compiled with it on machines without a GPU)."""
    path = shutil.which("nvcc") or ("/usr/local/cuda/bin/nvcc"
                                    if Path("/usr/local/cuda/bin/nvcc").exists() else None)
    if path is None:
        pytest.skip("nvcc is not installed (CUDA toolkit): the CUDA sources cannot be compiled")
    return path


@pytest.fixture
def cupy():
    """CuPy, for tests marked ``cuda`` (a GPU is there when they run)."""
    import cupy

    return cupy
