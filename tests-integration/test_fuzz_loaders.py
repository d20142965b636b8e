"""The loaders' fuzz (``tools/fuzz_loaders.py``, docs/security.md), short: a few dozen drawn
mutations of each loader's input, each in a child process with a time limit, end as a load that
works or one typed error; never an untyped exception, a crash, a hang or a write outside the
run folder. The full run (2,000 mutations each) is the script itself."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

pytest.importorskip("pullback.gpt")
pytest.importorskip("pullback.optim")

TOOL = Path(__file__).resolve().parents[1] / "tools" / "fuzz_loaders.py"


@pytest.fixture(scope="module")
def fuzz_loaders():
    spec = importlib.util.spec_from_file_location("fuzz_loaders", TOOL)
    module = importlib.util.module_from_spec(spec)
    sys.modules["fuzz_loaders"] = module
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize("loader", ["checkpoint", "optimizer", "run"])
def test_no_mutation_ends_untyped_crashed_hung_or_writing_outside(fuzz_loaders, loader):
    result = fuzz_loaders.fuzz(loader, count=60, seed=20261206)
    assert result["mutations"] == 60
    assert result["accepted"] + result["refused"] == 60, result["failures"][:3]
    # the mutations reach past the first check: some loads succeed, most are refused
    assert result["refused"] > 0 and result["accepted"] > 0, result
