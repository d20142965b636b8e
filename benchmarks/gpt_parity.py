"""GPT parity report: 50 AdamW steps of the same model in pullback and PyTorch, float64,
identical weights and batches. Writes the per-step loss residual to docs/parity.csv and plots
it to docs/parity.png; prints a JSON line with the worst figures.

Run: python benchmarks/gpt_parity.py
"""

from __future__ import annotations

import csv
import sys
from pathlib import Path

import numpy as np

import pullback as pb
from _common import emit, torch_or_exit
from pullback.gpt import GPT, GPTConfig

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "packages" / "gpt" / "tests"))

STEPS = 50
CONFIG = GPTConfig(vocab_size=65, block_size=64, n_layer=4, n_head=4, n_embd=128, bias=False)


def main() -> None:
    torch_or_exit()
    from torch_gpt import lockstep, relative

    pb.manual_seed(0)
    model = GPT(CONFIG).to(pb.float64)
    from pullback.gpt import CharDataset, CharTokenizer
    from pullback.gpt.data import tinyshakespeare

    rng = np.random.default_rng(0)
    corpus = tinyshakespeare().text
    ids = np.asarray(CharTokenizer.from_text(corpus).encode(corpus), dtype=np.uint16)
    data = CharDataset(ids)
    batches = [tuple(t.numpy() for t in data.batch("train", 12, 64, rng)) for _ in range(STEPS)]
    result = lockstep(model, batches)
    residuals = [relative(a, b) for a, b in zip(result["loss_pullback"], result["loss_torch"])]
    docs = ROOT / "docs"
    with (docs / "parity.csv").open("w", newline="") as f:
        writer = csv.writer(f)
        writer.writerow(["step", "loss_pullback", "loss_torch", "relative_residual"])
        for i, (a, b, r) in enumerate(zip(result["loss_pullback"], result["loss_torch"],
                                          residuals), 1):
            writer.writerow([i, repr(a), repr(b), repr(r)])
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(10, 4))
    steps = range(1, STEPS + 1)
    ax1.plot(steps, result["loss_pullback"], label="pullback")
    ax1.plot(steps, result["loss_torch"], "--", label="PyTorch")
    ax1.set_xlabel("AdamW step")
    ax1.set_ylabel("loss (nats)")
    ax1.legend()
    ax2.semilogy(steps, [max(r, 1e-18) for r in residuals], "o-", markersize=3)
    ax2.axhline(1e-12, color="red", linestyle=":", label="1e-12 bound")
    ax2.set_xlabel("AdamW step")
    ax2.set_ylabel("|loss_pb - loss_torch| / |loss_torch|")
    ax2.legend()
    fig.suptitle(f"GPT parity, float64, {CONFIG.n_layer} layers x {CONFIG.n_embd} wide")
    fig.tight_layout()
    fig.savefig(docs / "parity.png", dpi=110)
    emit(benchmark="gpt_parity", steps=STEPS, max_loss_residual=max(residuals),
         param_rtol=result["param_rtol"], max_param_abs_diff=result["max_param_abs_diff"],
         loss_first=result["loss_torch"][0], loss_last=result["loss_torch"][-1])


if __name__ == "__main__":
    main()
