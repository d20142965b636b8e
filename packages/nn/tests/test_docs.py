"""docs/nn.md's layer list is generated from the package (pullback.nn._docs): it must be what
the package holds now, so that the page cannot drift from the code."""

from __future__ import annotations

import pathlib

import pytest

from pullback.nn import _docs

PAGE = pathlib.Path(__file__).resolve().parents[3] / "docs" / "nn.md"


@pytest.mark.skipif(not PAGE.exists(), reason="docs/nn.md is in the repository, not the package")
def test_the_generated_layer_list_is_up_to_date():
    text = PAGE.read_text(encoding="utf-8")
    assert _docs.update(text) == text, "run: python -m pullback.nn._docs docs/nn.md"


def test_every_layer_has_a_row_with_its_constructor():
    from pullback import nn
    from pullback.nn import modules

    rendered = _docs.render()
    for name in modules.__all__:
        assert f"| `{name}` | `{_docs.constructor(getattr(nn, name))}` |" in rendered, name
    assert "`weight_norm`" in rendered and "`embedding_bag`" in rendered


def test_a_page_without_markers_is_refused():
    with pytest.raises(ValueError, match="no generated part"):
        _docs.update("# a page\\n")
