"""examples/compile_training_step.py --smoke: the compiled GPT step gives the eager losses and
the script reports both step times and the speed-up."""

from __future__ import annotations

import re
from typing import Callable

import pytest
from example_runs import SmokeRun


def test_smoke_run_agrees_with_eager_and_reports_the_speed_up(
        smoke_run: Callable[[str], SmokeRun]) -> None:
    pytest.importorskip("pullback.compiler", reason="the example needs pullback-compiler")
    run = smoke_run("compile_training_step").succeeded()
    difference = float(re.search(r"largest relative loss difference (\S+)", run.result.stdout)[1])
    assert difference <= 1e-5, run.result.stdout
    assert re.search(r"speed-up \d+\.\d+x", run.result.stdout), run.result.stdout
    rows = (run.out / "metrics.csv").read_text().splitlines()
    assert rows[0].startswith("step,loss") and len(rows) == 21  # header and 20 steps
