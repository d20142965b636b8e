"""examples/reversible_deep_mlp.py --smoke: a 20-block reversible MLP learns Fashion-MNIST, and
its training step holds a fraction of the activations of the same blocks run ordinarily."""

from __future__ import annotations

from typing import Callable

import pytest
from example_runs import SmokeRun


def test_smoke_run_learns_in_a_fraction_of_the_memory(smoke_run: Callable[[str], SmokeRun]) -> None:
    pytest.importorskip("pullback.avyaya", reason="the example needs pullback-avyaya")
    run = smoke_run("reversible_deep_mlp").succeeded()
    summary = run.summary()
    assert summary["blocks"] == 20 and summary["steps"] == 30
    assert summary["test_accuracy"] > 0.5, summary  # chance is 10 %
    assert summary["activation_mib_reversible"] * 5 < summary["activation_mib_ordinary"], summary
    assert (run.out / "metrics.csv").is_file() and (run.out / "curves.png").is_file()
