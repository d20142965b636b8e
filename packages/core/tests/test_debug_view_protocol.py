"""visualize/to_dot accept graph objects that draw themselves (``__pullback_view__``)."""

from __future__ import annotations

import pytest

from pullback.debug import to_dot, visualize


class Drawn:
    def __pullback_view__(self, kind):
        return {"text": "graph g {\n  %0 = relu(%1)\n}", "dot": "digraph g {}\n"}[kind]


def test_a_graph_object_prints_its_own_text(capsys):
    assert visualize(Drawn()) == "graph g {\n  %0 = relu(%1)\n}"
    assert "relu" in capsys.readouterr().out


def test_a_graph_object_gives_its_own_dot(tmp_path):
    assert to_dot(Drawn()) == "digraph g {}\n"
    to_dot(Drawn(), tmp_path / "g.dot")
    assert (tmp_path / "g.dot").read_text() == "digraph g {}\n"


def test_other_objects_are_still_refused():
    with pytest.raises(TypeError, match="expected a Tensor"):
        visualize(object())
    with pytest.raises(TypeError, match="expected a Tensor"):
        to_dot(3)
