"""Lock-step training against the same model in PyTorch (float64, identical weights/batches)."""

from __future__ import annotations

import numpy as np
import pytest

import pullback as pb
from pullback.gpt import GPT, GPTConfig

torch = pytest.importorskip("torch")

from torch_gpt import lockstep, relative  # noqa: E402

STEPS = 50


@pytest.mark.parametrize("bias", [False, True], ids=["no-bias", "bias"])
def test_fifty_adamw_steps_track_pytorch(bias):
    pb.manual_seed(0)
    model = GPT(GPTConfig(vocab_size=65, block_size=32, n_layer=2, n_head=4, n_embd=32,
                          bias=bias)).to(pb.float64)
    rng = np.random.default_rng(0)
    inputs = [rng.integers(0, 65, (4, 32)) for _ in range(STEPS)]
    batches = [(x, (7 * x + 3) % 65) for x in inputs]  # a learnable next-token rule
    result = lockstep(model, batches)
    worst_loss = max(relative(a, b) for a, b in zip(result["loss_pullback"], result["loss_torch"]))
    assert worst_loss <= 1e-12, worst_loss
    assert result["param_rtol"] <= 1e-10, result["param_rtol"]
    # The run really trained: the loss moved.
    assert result["loss_torch"][-1] < result["loss_torch"][0] - 0.1
