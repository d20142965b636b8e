"""Cost of anomaly mode on a GPT-like training step, next to PyTorch's detect_anomaly.

The project's GPT benchmark model (vocab 65, block 64, width 128, 4 heads, 4 layers, batch 32):
token + position embeddings, 4 pre-norm transformer blocks (causal self-attention, GELU MLP
of width 512, no dropout), a final LayerNorm, a linear head and cross-entropy; one AdamW step.
The same model in pullback.nn and torch.nn, same weights. For each framework the step is timed
with and without anomaly detection (interleaved blocks, fastest block of each), and the
slowdown factors are compared. Target: pullback's factor below PyTorch's.

Run: python benchmarks/debug_anomaly.py [--repeats N]
"""

from __future__ import annotations

import argparse
import json
import time
import warnings
from typing import Any, Callable

import numpy as np

import pullback as pb
from pullback.debug import detect_anomaly

VOCAB, BLOCK, WIDTH, HEADS, LAYERS, BATCH = 65, 64, 128, 4, 4, 32


def torch_or_exit() -> Any:
    try:
        import torch
    except ImportError:
        print(json.dumps({"skipped": "torch is not installed (pip install torch==2.13.0)"}))
        raise SystemExit(0) from None
    torch.set_num_threads(2)
    return torch


def build_torch(torch: Any) -> Any:
    nn = torch.nn

    class GPT(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.tok = nn.Embedding(VOCAB, WIDTH)
            self.pos = nn.Embedding(BLOCK, WIDTH)
            self.blocks = nn.ModuleList(
                nn.TransformerEncoderLayer(WIDTH, HEADS, 4 * WIDTH, dropout=0.0, activation="gelu",
                                           batch_first=True, norm_first=True)
                for _ in range(LAYERS))
            self.norm = nn.LayerNorm(WIDTH)
            self.head = nn.Linear(WIDTH, VOCAB)
            self.register_buffer("causal", torch.triu(torch.ones(BLOCK, BLOCK, dtype=torch.bool), 1))

        def forward(self, idx: Any) -> Any:
            x = self.tok(idx) + self.pos(torch.arange(idx.shape[1]))
            for block in self.blocks:
                x = block(x, src_mask=self.causal)
            return self.head(self.norm(x))

    return GPT()


def build_pullback(torch_model: Any) -> Any:
    from pullback import nn

    class GPT(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.tok = nn.Embedding(VOCAB, WIDTH)
            self.pos = nn.Embedding(BLOCK, WIDTH)
            self.blocks = nn.ModuleList(
                nn.TransformerBlock(WIDTH, HEADS, 4 * WIDTH, dropout=0.0, activation="gelu")
                for _ in range(LAYERS))
            self.norm = nn.LayerNorm(WIDTH)
            self.head = nn.Linear(WIDTH, VOCAB)

        def forward(self, idx: Any) -> Any:
            x = self.tok(idx) + self.pos(pb.arange(idx.shape[1]))
            for block in self.blocks:
                x = block(x, is_causal=True)
            return self.head(self.norm(x))

    model = GPT()
    state = {k: v.detach().numpy() for k, v in torch_model.state_dict().items() if k != "causal"}
    model.load_state_dict(state)
    return model


def interleaved_best(steps: dict[str, Callable[[], Any]], repeats: int, block: int) -> dict[str, float]:
    """Seconds per step of each callable: fastest block, blocks interleaved so that a busy
    machine slows every variant alike."""
    for step in steps.values():
        step()
        step()
    best = {name: float("inf") for name in steps}
    for _ in range(repeats):
        for name, step in steps.items():
            start = time.perf_counter()
            for _ in range(block):
                step()
            best[name] = min(best[name], (time.perf_counter() - start) / block)
    return best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--block", type=int, default=3)
    args = parser.parse_args()
    torch = torch_or_exit()
    import pullback.optim as pb_optim

    torch.manual_seed(0)
    t_model = build_torch(torch)
    p_model = build_pullback(t_model)
    rng = np.random.default_rng(0)
    idx = rng.integers(0, VOCAB, (BATCH, BLOCK)).astype(np.int64)
    targets = rng.integers(0, VOCAB, (BATCH, BLOCK)).astype(np.int64)
    t_idx, t_targets = torch.from_numpy(idx), torch.from_numpy(targets)
    p_idx, p_targets = pb.tensor(idx), pb.tensor(targets)
    # A tiny lr: the weights (and so the work) stay the same step after step.
    t_opt = torch.optim.AdamW(t_model.parameters(), lr=1e-6)
    p_opt = pb_optim.AdamW(p_model.parameters(), lr=1e-6)
    F = torch.nn.functional
    from pullback.nn import functional as PF

    def torch_step() -> float:
        t_opt.zero_grad()
        loss = F.cross_entropy(t_model(t_idx).reshape(-1, VOCAB), t_targets.reshape(-1))
        loss.backward()
        t_opt.step()
        return loss.item()

    def pb_step() -> float:
        p_opt.zero_grad()
        loss = PF.cross_entropy(p_model(p_idx).reshape(-1, VOCAB), p_targets.reshape(-1))
        loss.backward()
        p_opt.step()
        return loss.item()

    def torch_anomaly() -> float:
        with torch.autograd.detect_anomaly():
            return torch_step()

    def pb_anomaly() -> float:
        with detect_anomaly():
            return pb_step()

    loss_pb, loss_torch = pb_step(), torch_step()
    assert abs(loss_pb - loss_torch) < 1e-3, (loss_pb, loss_torch)  # the same model
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # torch warns on entering anomaly mode
        best = interleaved_best({"pullback": pb_step, "pullback_anomaly": pb_anomaly,
                                 "torch": torch_step, "torch_anomaly": torch_anomaly},
                                args.repeats, args.block)
    config = {"vocab": VOCAB, "block": BLOCK, "width": WIDTH, "heads": HEADS, "layers": LAYERS,
              "batch": BATCH}
    pb_factor = best["pullback_anomaly"] / best["pullback"]
    torch_factor = best["torch_anomaly"] / best["torch"]
    for name, plain, checked, factor in (
            ("pullback", best["pullback"], best["pullback_anomaly"], pb_factor),
            ("torch", best["torch"], best["torch_anomaly"], torch_factor)):
        print(json.dumps({"benchmark": "anomaly_mode_gpt_step", "framework": name,
                          "step_ms": round(plain * 1e3, 2),
                          "anomaly_step_ms": round(checked * 1e3, 2),
                          "slowdown": round(factor, 3), **config}), flush=True)
    print(json.dumps({"benchmark": "anomaly_mode_slowdown_vs_torch",
                      "pullback_slowdown": round(pb_factor, 3),
                      "torch_slowdown": round(torch_factor, 3),
                      "ratio": round(pb_factor / torch_factor, 3),
                      "target": "pullback_slowdown < torch_slowdown",
                      "meets_target": pb_factor < torch_factor}), flush=True)


if __name__ == "__main__":
    main()
