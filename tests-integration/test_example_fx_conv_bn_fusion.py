"""examples/fx_conv_bn_fusion.py --smoke: every batch norm folded into its convolution by a
pullback.fx pass, and the fused model computes what the unfused one does (float64)."""

from __future__ import annotations

from typing import Callable

import pytest
from example_runs import SmokeRun


def test_the_fused_model_matches_the_unfused_one(smoke_run: Callable[[str], SmokeRun]) -> None:
    pytest.importorskip("pullback.fx", reason="the example needs pullback-fx")
    pytest.importorskip("sklearn", reason="the example reads scikit-learn's digits")
    run = smoke_run("fx_conv_bn_fusion").succeeded()
    summary = run.summary()
    assert summary["batch_norms_before"] == 5 and summary["batch_norms_after"] == 0, summary
    # float64: folding reorders a few roundings, nothing more
    assert summary["max_abs_difference"] < 1e-12 * max(1.0, summary["max_abs_logit"]), summary
    assert summary["same_predictions"], summary
    code = (run.out / "fused_forward.py").read_text()
    assert "def forward(self, x):" in code and "bn" not in code
