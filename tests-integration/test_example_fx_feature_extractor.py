"""examples/fx_feature_extractor.py --smoke: the features taken with pullback.fx are the ones
forward hooks see on the original model, bit for bit, and the head is not computed."""

from __future__ import annotations

from typing import Callable

import pytest
from example_runs import SmokeRun


def test_the_features_are_the_hooked_ones(smoke_run: Callable[[str], SmokeRun]) -> None:
    pytest.importorskip("pullback.fx", reason="the example needs pullback-fx")
    pytest.importorskip("sklearn", reason="the example reads scikit-learn's digits")
    run = smoke_run("fx_feature_extractor").succeeded()
    summary = run.summary()
    assert summary["equal_to_hooks"] == {"stem": True, "low": True, "mid": True, "high": True}
    assert summary["features"]["high"] == [32, 16, 4, 4], summary
    assert not summary["head_in_extractor"], summary
    assert summary["graph_nodes"] < summary["graph_nodes_of_whole_model"], summary
    assert "return {'stem': stem" in (run.out / "extractor_forward.py").read_text()
