"""LoRA fine-tuning of a trained char-level GPT on a different text.

Loads a checkpoint written by ``pullback-gpt train``, freezes it, injects low-rank adapters into
the attention and MLP projections, and trains only those on a new text. Reports the trainable
fraction, the new text's validation loss before and after, the loss on the original corpus
(what the adapters cost there), and checks that merging the adapters changes nothing.

    pullback-gpt train --config nano-cpu --out runs/gpt-nano
    python examples/gpt_lora_finetune.py --checkpoint runs/gpt-nano \
        --text /usr/share/common-licenses/GPL-3 --out runs/gpt-lora
"""

from __future__ import annotations

import argparse
import csv
import math
from pathlib import Path

import numpy as np
from tqdm.auto import tqdm

import pullback as pb
import pullback.nn as nn
import pullback.optim as optim
from pullback.gpt import GPT, CharDataset, load_checkpoint, tinyshakespeare_path
from pullback.gpt.train import estimate_loss, plot_metrics


def encode_known(tokenizer, text: str) -> tuple[np.ndarray, float]:
    """Token ids of the characters the tokenizer knows, and the fraction dropped."""
    known = set(tokenizer.chars)
    kept = "".join(c for c in text if c in known)
    return np.asarray(tokenizer.encode(kept), dtype=np.uint16), 1 - len(kept) / max(len(text), 1)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--checkpoint", required=True)
    parser.add_argument("--text", default="/usr/share/common-licenses/GPL-3")
    parser.add_argument("--out", default="runs/gpt-lora")
    parser.add_argument("--steps", type=int, default=400)
    parser.add_argument("--rank", type=int, default=8)
    parser.add_argument("--alpha", type=float, default=16.0)
    parser.add_argument("--lr", type=float, default=3e-3)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)

    ckpt = load_checkpoint(args.checkpoint)
    cfg = ckpt.train_config.with_overrides(eval_iters=20, seed=args.seed)
    model = GPT(ckpt.model_config)
    model.load_state_dict(ckpt.model_state)
    tokenizer = ckpt.tokenizer
    ids, dropped = encode_known(tokenizer, Path(args.text).read_text(encoding="utf-8"))
    new_data = CharDataset(ids)
    base_text = tinyshakespeare_path().read_text()
    base_data = CharDataset(np.asarray(tokenizer.encode(base_text), dtype=np.uint16))
    device = pb.Device("cpu")

    before = estimate_loss(model, new_data, cfg, 0, device)
    before_new = before["val"]
    before_base = estimate_loss(model, base_data, cfg, 0, device)["val"]

    nn.inject_lora(model, ["c_attn", "c_proj", "c_fc"], r=args.rank, alpha=args.alpha)
    trainable = [p for p in model.parameters() if p.requires_grad]
    n_trainable = sum(p.numel() for p in trainable)
    n_total = sum(p.numel() for p in model.parameters())
    opt = optim.AdamW(trainable, lr=args.lr, weight_decay=0.0)
    rng = np.random.default_rng(args.seed)
    pb.manual_seed(args.seed)

    log_path = out / "metrics.csv"
    with log_path.open("w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=["step", "loss", "lr", "train_loss", "val_loss",
                                               "val_bits_per_char", "tokens_per_s", "elapsed_s"])
        writer.writeheader()
        writer.writerow({"step": 0, "train_loss": f"{before['train']:.6f}",
                         "val_loss": f"{before_new:.6f}"})
        model.train()
        for step in tqdm(range(1, args.steps + 1), desc="LoRA"):
            x, y = new_data.batch("train", cfg.batch_size, cfg.model.block_size, rng, device)
            _, loss = model(x, y)
            opt.zero_grad()
            loss.backward()
            opt.step()
            writer.writerow({"step": step, "loss": f"{loss.item():.6f}", "lr": args.lr})
        losses = estimate_loss(model, new_data, cfg, args.steps, device)
        writer.writerow({"step": args.steps, "train_loss": f"{losses['train']:.6f}",
                         "val_loss": f"{losses['val']:.6f}",
                         "val_bits_per_char": f"{losses['val'] / math.log(2):.6f}"})
    after_new = losses["val"]
    after_base = estimate_loss(model, base_data, cfg, 0, device)["val"]
    adapters = nn.lora_state_dict(model)
    pb.save(adapters, out / "adapters.safetensors")
    nn.merge_lora(model)
    merged_new = estimate_loss(model, new_data, cfg, args.steps, device)["val"]
    plot_metrics(log_path, out / "loss.png")

    print(f"text: {args.text} ({len(ids):,} tokens; {dropped:.1%} of characters outside the "
          "model's alphabet dropped)")
    print(f"trainable parameters: {n_trainable:,} of {n_total:,} ({n_trainable / n_total:.2%})")
    print(f"new text val loss: {before_new:.4f} -> {after_new:.4f} nats")
    print(f"original corpus val loss: {before_base:.4f} -> {after_base:.4f} nats")
    print(f"merged adapters: new text val loss {merged_new:.4f} (unmerged {after_new:.4f})")
    size = (out / "adapters.safetensors").stat().st_size
    print(f"adapters saved: {out / 'adapters.safetensors'} ({size / 1024:.0f} KiB)")


if __name__ == "__main__":
    main()
