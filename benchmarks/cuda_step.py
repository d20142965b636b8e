"""A GPT training step on the GPU: pullback.nn on ``cuda`` against PyTorch eager CUDA.

The same character-level GPT in both (token and position embeddings, pre-norm transformer
blocks with causal self-attention and a GELU MLP, final LayerNorm, linear head), with the same
weights (copied from the PyTorch model, whose parameter names pullback.nn's TransformerBlock
shares), the same batch, cross-entropy and AdamW. One step is zero_grad + forward + backward +
optimizer step, timed between device synchronizations (median of the timed steps after
warm-up). pullback runs with its custom CUDA kernels on and off. The first-step losses are
printed for both (they must agree: same weights, same batch).

Default: the shakespeare configuration (6 layers, width 384, 6 heads, block 256, batch 64,
vocabulary 65); target: pullback at most 1.5x PyTorch's time. ``--amp`` runs both under float16
autocast with a GradScaler. ``--device cpu`` with a small configuration is a smoke test.

Run: python benchmarks/cuda_step.py [--out DIR] [--amp] [--steps 10]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import time
from pathlib import Path
from typing import Any, Callable

os.environ.setdefault("CUPY_TF32", "0")  # float32 matmuls in float32 on both sides

import numpy as np  # noqa: E402

import pullback as pb  # noqa: E402
from _common import emit, torch_or_exit  # noqa: E402

TARGET_RATIO = 1.5


def build_torch(torch: Any, cfg: argparse.Namespace) -> Any:
    nn = torch.nn

    class GPT(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.tok = nn.Embedding(cfg.vocab, cfg.width)
            self.pos = nn.Embedding(cfg.block, cfg.width)
            self.blocks = nn.ModuleList(
                nn.TransformerEncoderLayer(cfg.width, cfg.heads, 4 * cfg.width, dropout=0.0,
                                           activation="gelu", batch_first=True, norm_first=True)
                for _ in range(cfg.layers))
            self.ln_f = nn.LayerNorm(cfg.width)
            self.head = nn.Linear(cfg.width, cfg.vocab)
            self.register_buffer("mask", nn.Transformer.generate_square_subsequent_mask(cfg.block))

        def forward(self, idx: Any) -> Any:
            t = idx.shape[1]
            x = self.tok(idx) + self.pos(torch.arange(t, device=idx.device))
            for block in self.blocks:
                x = block(x, src_mask=self.mask[:t, :t], is_causal=True)
            return self.head(self.ln_f(x))

    return GPT()


def build_pullback(cfg: argparse.Namespace) -> Any:
    from pullback import nn

    class GPT(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.tok = nn.Embedding(cfg.vocab, cfg.width)
            self.pos = nn.Embedding(cfg.block, cfg.width)
            self.blocks = nn.ModuleList(
                nn.TransformerBlock(cfg.width, cfg.heads, 4 * cfg.width, dropout=0.0,
                                    activation="gelu", batch_first=True)
                for _ in range(cfg.layers))
            self.ln_f = nn.LayerNorm(cfg.width)
            self.head = nn.Linear(cfg.width, cfg.vocab)

        def forward(self, idx: Any) -> Any:
            t = idx.shape[1]
            x = self.tok(idx) + self.pos(pb.arange(t, device=idx.device))
            for block in self.blocks:
                x = block(x, is_causal=True)
            return self.head(self.ln_f(x))

    return GPT()


def pullback_step(cfg: argparse.Namespace, weights: dict[str, Any],
                  idx_np: np.ndarray) -> Callable[[], float]:
    """One training step of a fresh pullback GPT holding ``weights``, as a function."""
    from pullback import nn, optim
    from pullback.amp import GradScaler, autocast

    model = build_pullback(cfg)
    model.load_state_dict(weights)
    model.to(cfg.device)
    idx = pb.tensor(idx_np, device=cfg.device)
    opt = optim.AdamW(model.parameters(), lr=3e-4)
    device_type = cfg.device.split(":")[0]
    scaler = GradScaler(device_type, enabled=cfg.amp)

    def step() -> float:
        opt.zero_grad()
        with autocast(device_type, pb.float16, enabled=cfg.amp):
            logits = model(idx[:, :-1])
            loss = nn.functional.cross_entropy(logits.reshape(-1, cfg.vocab),
                                               idx[:, 1:].reshape(-1))
        scaler.scale(loss).backward()
        scaler.step(opt)
        scaler.update()
        return float(loss.item())

    return step


def step_time(step: Callable[[], float], sync: Callable[[], None], warmup: int,
              steps: int) -> tuple[float, float]:
    """(median seconds per step, loss of the first step)."""
    first = step()
    sync()
    for _ in range(warmup - 1):
        step()
    times = []
    for _ in range(steps):
        sync()
        start = time.perf_counter()
        step()
        sync()
        times.append(time.perf_counter() - start)
    return statistics.median(times), first


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="cuda")
    parser.add_argument("--layers", type=int, default=6)
    parser.add_argument("--width", type=int, default=384)
    parser.add_argument("--heads", type=int, default=6)
    parser.add_argument("--block", type=int, default=256)
    parser.add_argument("--batch", type=int, default=64)
    parser.add_argument("--vocab", type=int, default=65)
    parser.add_argument("--steps", type=int, default=10)
    parser.add_argument("--warmup", type=int, default=3)
    parser.add_argument("--amp", action="store_true", help="float16 autocast + GradScaler")
    parser.add_argument("--out", type=Path, help="append the JSON lines to DIR/step.jsonl")
    cfg = parser.parse_args()
    torch = torch_or_exit()
    import pullback.cuda

    on_gpu = cfg.device.startswith("cuda")
    if on_gpu and not (pullback.cuda.is_available() and torch.cuda.is_available()):
        emit(benchmark="cuda_step", skipped=pullback.cuda.unavailable_reason()
             or "this PyTorch has no CUDA")
        return
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.manual_seed(0)
    reference = build_torch(torch, cfg).to(cfg.device)
    rng = np.random.default_rng(0)
    idx_np = rng.integers(0, cfg.vocab, size=(cfg.batch, cfg.block + 1))
    weights = {k: v.detach().cpu().numpy().copy() for k, v in reference.state_dict().items()
               if k != "mask"}

    def torch_sync() -> None:
        if on_gpu:
            torch.cuda.synchronize()

    t_idx = torch.tensor(idx_np, device=cfg.device)
    t_opt = torch.optim.AdamW(reference.parameters(), lr=3e-4)
    t_scaler = torch.amp.GradScaler(enabled=cfg.amp and on_gpu)

    def torch_step() -> float:
        t_opt.zero_grad(set_to_none=True)
        with torch.autocast(device_type="cuda" if on_gpu else "cpu", dtype=torch.float16,
                            enabled=cfg.amp):
            logits = reference(t_idx[:, :-1])
            loss = torch.nn.functional.cross_entropy(logits.reshape(-1, cfg.vocab).float(),
                                                     t_idx[:, 1:].reshape(-1))
        t_scaler.scale(loss).backward()
        t_scaler.step(t_opt)
        t_scaler.update()
        return float(loss.detach())

    t_time, t_loss = step_time(torch_step, torch_sync, cfg.warmup, cfg.steps)
    records = []
    base = dict(benchmark="cuda_step", device=cfg.device, amp=cfg.amp, layers=cfg.layers,
                width=cfg.width, heads=cfg.heads, block=cfg.block, batch=cfg.batch)
    for custom in (True, False):
        with pullback.cuda.use_custom_kernels(custom):
            p_time, p_loss = step_time(pullback_step(cfg, weights, idx_np),
                                       lambda: pb.synchronize(cfg.device), cfg.warmup, cfg.steps)
        record = dict(base, custom_kernels=custom, pullback_ms=p_time * 1e3,
                      torch_ms=t_time * 1e3, ratio=p_time / t_time, target=TARGET_RATIO,
                      meets_target=p_time / t_time <= TARGET_RATIO, first_loss_pullback=p_loss,
                      first_loss_torch=t_loss)
        emit(**record)
        records.append(record)
    if cfg.out is not None:
        cfg.out.mkdir(parents=True, exist_ok=True)
        with open(cfg.out / "step.jsonl", "a") as f:
            f.writelines(json.dumps(r) + "\n" for r in records)


if __name__ == "__main__":
    main()
