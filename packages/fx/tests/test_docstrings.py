"""The examples in pullback.fx's docstrings run and print what they say."""

from __future__ import annotations

import doctest
import importlib

import pytest

MODULES = ["graph", "graph_module", "_symbolic_trace", "interpreter", "subgraph_rewriter",
           "passes.shape_prop"]


@pytest.mark.parametrize("module", MODULES)
def test_docstring_examples(module: str) -> None:
    result = doctest.testmod(importlib.import_module(f"pullback.fx.{module}"),
                             optionflags=doctest.NORMALIZE_WHITESPACE)
    assert result.attempted > 0 and result.failed == 0
