"""The nano-cpu GPT recipe trained in PyTorch on the same data, for comparison with
``pullback-gpt train --config nano-cpu``: same initial weights (copied from pullback's model
for the seed), same batches (pullback's sampler and seed), same AdamW groups, warmup + cosine
schedule and clipping, same evaluation batches. Prints JSON lines with the evaluations.

At the end it also prints the loss over the whole val split (``pullback-gpt eval --full``).
``--set NAME=VALUE`` changes one training setting (a TrainConfig field, or ``bias``), to try a
change of recipe in PyTorch quickly; ``--threads 1`` lets two runs share a 2-core machine.

Run: python benchmarks/gpt_train_reference.py [--seed 1337] [--steps 2000]
     [--schedule cosine|wsd] [--set grad_clip=0 ...] [--threads N]
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import replace
from pathlib import Path

import numpy as np

import pullback as pb
import pullback.optim as optim
from _common import emit, torch_or_exit
from pullback.gpt import GPT, PRESETS, CharDataset, CharTokenizer, tinyshakespeare
from pullback.gpt.config import SCHEDULES
from pullback.gpt.train import make_scheduler

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "packages" / "gpt" / "tests"))


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--seed", type=int, default=PRESETS["nano-cpu"].seed)
    parser.add_argument("--steps", type=int, default=PRESETS["nano-cpu"].steps)
    parser.add_argument("--schedule", choices=SCHEDULES, default="cosine")
    parser.add_argument("--set", action="append", default=[], metavar="NAME=VALUE",
                        help="a TrainConfig field (weight_decay, grad_clip, beta2, warmup, ...) "
                             "or bias=1")
    parser.add_argument("--threads", type=int, default=None, help="torch threads (default 2)")
    args = parser.parse_args()
    torch = torch_or_exit()
    if args.threads:
        torch.set_num_threads(args.threads)
    from torch_gpt import torch_twin

    cfg = PRESETS["nano-cpu"].with_overrides(seed=args.seed, steps=args.steps,
                                             schedule=args.schedule)
    changes = dict(item.split("=", 1) for item in args.set)
    if changes.pop("bias", "0") == "1":
        cfg = replace(cfg, model=replace(cfg.model, bias=True))
    cfg = replace(cfg, **{k: json.loads(v) for k, v in changes.items()})  # numbers
    text = tinyshakespeare().text
    tokenizer = CharTokenizer.from_text(text)
    data = CharDataset(np.asarray(tokenizer.encode(text), dtype=np.uint16))
    pb.manual_seed(cfg.seed)  # the same initial weights as `pullback-gpt train --seed`
    model = torch_twin(GPT(cfg.model))
    decay = [p for p in model.parameters() if p.dim() >= 2]
    no_decay = [p for p in model.parameters() if p.dim() < 2]
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": cfg.weight_decay},
                             {"params": no_decay, "weight_decay": 0.0}],
                            lr=cfg.lr, betas=(cfg.beta1, cfg.beta2))

    # the factors of pullback's schedule (tested against PyTorch's own schedulers in optim)
    pb_param = pb.zeros(1, requires_grad=True)
    factors = make_scheduler(optim.SGD([pb_param], lr=cfg.lr), cfg).lr_lambdas[0]
    sched = torch.optim.lr_scheduler.LambdaLR(opt, factors)
    rng = np.random.default_rng(cfg.seed)

    def evaluate(step: int) -> dict[str, float]:
        model.eval()
        out = {}
        with torch.no_grad():
            for split in ("train", "val"):
                eval_rng = np.random.default_rng([cfg.seed, step, split == "val"])
                losses = []
                for _ in range(cfg.eval_iters):
                    x, y = data.batch(split, cfg.batch_size, cfg.model.block_size, eval_rng)
                    losses.append(model(torch.from_numpy(x.numpy()),
                                        torch.from_numpy(y.numpy())).item())
                out[split] = float(np.mean(losses))
        model.train()
        return out

    for step in range(cfg.steps):
        if step % cfg.eval_interval == 0 and step:
            emit(run="torch_reference", seed=cfg.seed, step=step, **evaluate(step))
        x, y = data.batch("train", cfg.batch_size, cfg.model.block_size, rng)
        loss = model(torch.from_numpy(x.numpy()), torch.from_numpy(y.numpy()))
        opt.zero_grad(set_to_none=True)
        loss.backward()
        if cfg.grad_clip > 0:
            torch.nn.utils.clip_grad_norm_(model.parameters(), cfg.grad_clip)
        opt.step()
        sched.step()
    x, y = data.windows("val", cfg.model.block_size)
    with torch.no_grad():
        model.eval()
        total = sum(model(torch.from_numpy(x[i:i + 256]), torch.from_numpy(y[i:i + 256])).item()
                    * len(x[i:i + 256]) for i in range(0, len(x), 256))
    emit(run="torch_reference", seed=cfg.seed, step=cfg.steps, schedule=cfg.schedule,
         changes=args.set, val_full=total / len(x), **evaluate(cfg.steps))


if __name__ == "__main__":
    main()
