"""pytest runs in importlib mode (see the workspace pyproject.toml), which does not put a test
folder on sys.path; the optim tests share a helper module, so put this folder there. The
fixture below is shared by the tests against PyTorch."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Iterator

import pytest

sys.path.insert(0, str(Path(__file__).parent))


@pytest.fixture
def torch_float64() -> Iterator[None]:
    """PyTorch's default dtype float64 for one test: torch keeps scalar optimizer state
    (NAdam's mu_product, ASGD's eta and mu, steps) in the default dtype."""
    torch = pytest.importorskip("torch")
    previous = torch.get_default_dtype()
    torch.set_default_dtype(torch.float64)
    yield
    torch.set_default_dtype(previous)
