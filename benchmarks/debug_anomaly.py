"""Cost of anomaly mode on a GPT-like training step, next to PyTorch's detect_anomaly.

The project's GPT benchmark model (vocab 65, block 64, width 128, 4 heads, 4 layers, batch 32):
token + position embeddings, 4 pre-norm transformer blocks (causal self-attention, GELU MLP
of width 512, no dropout), a final LayerNorm, a linear head and cross-entropy; one AdamW step.
The same model in pullback.nn and torch.nn, same weights. For each framework the step is timed
with and without anomaly detection (interleaved blocks, fastest block of each), and the
slowdown factors are compared. Target: pullback's factor below PyTorch's.

A second line measures the worst case, where per-op overhead is everything: a chain of 1,000
ops on 8-element tensors, forward and backward (the core overhead benchmark's chain).

Run: python benchmarks/debug_anomaly.py [--clock wall|cpu] [--repeats N] [--block N]

``--clock cpu`` runs both frameworks on one thread (BLAS, PyTorch and pullback's elementwise
threads) and times the process's CPU time instead of the wall clock: on a machine shared with
other jobs, the wall clock of a step swings by 2x from run to run, while the CPU time a
single-threaded step needs barely moves. The slowdown factors compare a framework with itself.
"""

from __future__ import annotations

import argparse
import json
import os
import time
import warnings
from typing import Any, Callable

_THREAD_VARIABLES = ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS",
                     "PULLBACK_NUM_THREADS")


def _parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    parser.add_argument("--clock", choices=("wall", "cpu"), default="wall")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--block", type=int, default=3)
    return parser.parse_args()


ARGS = _parse_args()
if ARGS.clock == "cpu":  # must be set before NumPy (and its BLAS) is imported
    for variable in _THREAD_VARIABLES:
        os.environ[variable] = "1"

import numpy as np  # noqa: E402

import pullback as pb  # noqa: E402
from pullback.debug import detect_anomaly  # noqa: E402

CLOCK = time.process_time if ARGS.clock == "cpu" else time.perf_counter
THREADS = 1 if ARGS.clock == "cpu" else 2

VOCAB, BLOCK, WIDTH, HEADS, LAYERS, BATCH = 65, 64, 128, 4, 4, 32


def torch_or_exit() -> Any:
    try:
        import torch
    except ImportError:
        print(json.dumps({"skipped": "torch is not installed (pip install torch==2.13.0)"}))
        raise SystemExit(0) from None
    torch.set_num_threads(THREADS)
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
            start = CLOCK()
            for _ in range(block):
                step()
            best[name] = min(best[name], (CLOCK() - start) / block)
    return best


def op_chain(x: Any, w: Any) -> Any:
    for _ in range(250):
        x = x * w
        x = x + w
        x = x.tanh()
        x = x - 0.5
    return x.sum()


def emit_pair(name: str, best: dict[str, float], **extra: Any) -> None:
    """One JSON line per framework (plain and anomaly times, slowdown), then the comparison."""
    factors = {}
    for framework in ("pullback", "torch"):
        plain, checked = best[framework], best[framework + "_anomaly"]
        factors[framework] = checked / plain
        print(json.dumps({"benchmark": name, "framework": framework,
                          "step_ms": round(plain * 1e3, 3),
                          "anomaly_step_ms": round(checked * 1e3, 3),
                          "slowdown": round(factors[framework], 3), "clock": ARGS.clock,
                          "threads": THREADS, **extra,
                          # the machine's state: a loaded machine makes every figure noisy
                          "load_avg_1m": round(os.getloadavg()[0], 2)}), flush=True)
    print(json.dumps({"benchmark": name + "_vs_torch",
                      "pullback_slowdown": round(factors["pullback"], 3),
                      "torch_slowdown": round(factors["torch"], 3),
                      "ratio": round(factors["pullback"] / factors["torch"], 3),
                      "target": "pullback_slowdown < torch_slowdown",
                      "meets_target": factors["pullback"] < factors["torch"]}), flush=True)


def chain_benchmark(torch: Any) -> None:
    x0 = np.random.default_rng(0).standard_normal(8).astype(np.float32)

    def pb_chain() -> None:
        x, w = pb.tensor(x0, requires_grad=True), pb.tensor(x0, requires_grad=True)
        op_chain(x, w).backward()

    def torch_chain() -> None:
        x, w = torch.tensor(x0, requires_grad=True), torch.tensor(x0, requires_grad=True)
        op_chain(x, w).backward()

    def pb_chain_anomaly() -> None:
        with detect_anomaly():
            pb_chain()

    def torch_chain_anomaly() -> None:
        with torch.autograd.detect_anomaly():
            torch_chain()

    best = interleaved_best({"pullback": pb_chain, "pullback_anomaly": pb_chain_anomaly,
                             "torch": torch_chain, "torch_anomaly": torch_chain_anomaly},
                            repeats=7, block=3)
    emit_pair("anomaly_mode_op_chain", best, ops=1000, elements=8)


def main() -> None:
    args = ARGS
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
    if abs(loss_pb - loss_torch) > 1e-3:
        raise SystemExit(f"the two models differ: loss {loss_pb} (pullback) vs {loss_torch}")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # torch warns each time anomaly mode is entered
        best = interleaved_best({"pullback": pb_step, "pullback_anomaly": pb_anomaly,
                                 "torch": torch_step, "torch_anomaly": torch_anomaly},
                                args.repeats, args.block)
        emit_pair("anomaly_mode_gpt_step", best, vocab=VOCAB, block=BLOCK, width=WIDTH,
                  heads=HEADS, layers=LAYERS, batch=BATCH)
        chain_benchmark(torch)


if __name__ == "__main__":
    main()
