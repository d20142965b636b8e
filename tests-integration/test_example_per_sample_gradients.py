"""examples/per_sample_gradients.py --smoke: per-sample gradients equal a loop of backward
passes, and the forward-over-reverse Hessian-vector product equals reverse over reverse."""

from __future__ import annotations

from typing import Callable

import pytest
from example_runs import SmokeRun


def test_smoke_run(smoke_run: Callable[[str], SmokeRun]) -> None:
    pytest.importorskip("pullback.func", reason="the example needs pullback-vmap-dp")
    run = smoke_run("per_sample_gradients").succeeded()
    summary = run.summary()
    assert summary["batch"] == 32
    assert summary["max_abs_diff_vs_loop"] < 1e-4, summary
    assert summary["hvp_max_abs_diff_vs_reverse_over_reverse"] < 1e-4 * max(
        1.0, summary["hvp_max_abs"]), summary
    assert 0.0 <= summary["clipped_fraction"] <= 1.0
    rows = (run.out / "per_sample_norms.csv").read_text().splitlines()
    assert len(rows) == 33 and (run.out / "norms.png").is_file()
