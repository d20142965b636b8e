"""200 compiled training steps give the losses of 200 eager steps: float64 to 1e-12 and
float32 to 1e-5 relative (the tiny GPT of the battery and the MLP; the benchmark's GPT is
checked by benchmarks/compiler_correctness.py)."""

from __future__ import annotations

import numpy as np
import pytest

import pullback.optim as optim
from compiler_battery import gpt, gpt_batch, mlp, mlp_batch, training_step
from pullback.compiler import compile

STEPS = 200
TOLERANCE = {"float64": 1e-12, "float32": 1e-5}


def _losses(make_model, make_batch, dtype, compiled):
    model = make_model(dtype)
    step = training_step(model, optim.AdamW(model.parameters(), lr=3e-3, weight_decay=0.1))
    if compiled:
        step = compile(step, fullgraph=True)
    batches = [make_batch(seed=s % 7) for s in range(STEPS)]
    losses = [step(*batch).item() for batch in batches]
    return np.array(losses), step


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("name", ["mlp", "gpt"])
def test_200_compiled_steps_give_the_eager_losses(name, dtype):
    make_model, make_batch = (mlp, lambda seed: mlp_batch(dtype, seed)) if name == "mlp" else \
        (gpt, lambda seed: gpt_batch(seed))
    eager, _ = _losses(make_model, make_batch, dtype, compiled=False)
    got, step = _losses(make_model, make_batch, dtype, compiled=True)
    assert step.traces == 2  # the first call, then grads and optimizer state exist
    np.testing.assert_allclose(got, eager, rtol=TOLERANCE[dtype], atol=0)
    assert eager[-1] < eager[0]  # it did learn
