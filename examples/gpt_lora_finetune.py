"""LoRA fine-tuning of a trained char-level GPT on a different text.

Loads a checkpoint written by ``pullback-gpt train``, freezes it, injects low-rank adapters into
the attention and MLP projections, and trains only those on a new text. Reports the trainable
fraction, the new text's validation loss before and after, the loss on the original corpus
(what the adapters cost there), and checks that merging the adapters changes nothing.

    pullback-gpt train --schedule wsd                  # about 2.5 min; writes runs/gpt
    python examples/gpt_lora_finetune.py [--checkpoint runs/gpt] [--text FILE] [--data DIR]
        [--out DIR] [--smoke]

--text is the new text (default: the GPL-3 licence text Debian ships), --data TinyShakespeare's
folder or input.txt (default: the copy embedded in pullback-gpt). --smoke trains a tiny base
model itself (no --checkpoint needed) and fine-tunes it for a few steps. Writes metrics.csv,
loss.png and adapters.safetensors to --out (default runs/gpt_lora_finetune/). The losses printed
are estimates from random batches (``pullback-gpt eval --full`` gives a checkpoint's exact one).
"""

from __future__ import annotations

import csv
import math
from dataclasses import replace
from pathlib import Path

import numpy as np
from tqdm.auto import tqdm

import pullback as pb
import pullback.nn as nn
import pullback.optim as optim
from pullback.errors import CheckpointError
from pullback.gpt import GPT, PRESETS, CharDataset, load_checkpoint, tinyshakespeare
from pullback.gpt.train import estimate_label, estimate_loss, plot_metrics, train

from _example import data_set, example_parser, missing_data


def encode_known(tokenizer, text: str) -> tuple[np.ndarray, float]:
    """Token ids of the characters the tokenizer knows, and the fraction dropped."""
    known = set(tokenizer.chars)
    kept = "".join(c for c in text if c in known)
    return np.asarray(tokenizer.encode(kept), dtype=np.uint16), 1 - len(kept) / max(len(text), 1)


def train_tiny_base(text: str, out: Path) -> Path:
    """--smoke's base model: two narrow layers, a few steps."""
    nano = PRESETS["nano-cpu"]
    cfg = nano.with_overrides(model=replace(nano.model, n_layer=2, n_embd=32, n_head=2),
                              steps=30, warmup=3, eval_interval=30, eval_iters=2)
    train(cfg, text, out, quiet=True)
    return out


def main(argv: list[str] | None = None) -> None:
    parser = example_parser(__doc__, __file__, data_help="TinyShakespeare's folder or input.txt "
                            "(default: the copy embedded in pullback-gpt)")
    parser.add_argument("--checkpoint", default=None, metavar="DIR",
                        help="a run of pullback-gpt train (default: runs/gpt; with --smoke, a "
                             "tiny model trained first)")
    parser.add_argument("--text", default="/usr/share/common-licenses/GPL-3", metavar="FILE",
                        help="the new text (default: /usr/share/common-licenses/GPL-3)")
    parser.add_argument("--steps", type=int, default=400)
    parser.add_argument("--rank", type=int, default=8)
    parser.add_argument("--alpha", type=float, default=16.0)
    parser.add_argument("--lr", type=float, default=3e-3)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    out = Path(args.out)
    with data_set():
        base_text = tinyshakespeare(root=args.data).text
        new_text = Path(args.text).read_text(encoding="utf-8")
    out.mkdir(parents=True, exist_ok=True)
    eval_iters = 20
    if args.smoke:
        args.steps, eval_iters = 20, 2
        if args.checkpoint is None:
            args.checkpoint = str(train_tiny_base(base_text, out / "base"))
    checkpoint = args.checkpoint or "runs/gpt"
    try:
        ckpt = load_checkpoint(checkpoint)
    except CheckpointError as exc:
        missing_data(f"{exc}; train one with `pullback-gpt train --schedule wsd` (about 2.5 "
                     "minutes, it writes runs/gpt) or pass --checkpoint DIR")
    cfg = ckpt.train_config.with_overrides(eval_iters=eval_iters, seed=args.seed)
    model = GPT(ckpt.model_config)
    model.load_state_dict(ckpt.model_state)
    tokenizer = ckpt.tokenizer
    ids, dropped = encode_known(tokenizer, new_text)
    new_data = CharDataset(ids)
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
    estimate = estimate_label(cfg.eval_iters)
    print(f"new text val loss ({estimate}): {before_new:.4f} -> {after_new:.4f} nats")
    print(f"original corpus val loss ({estimate}): {before_base:.4f} -> {after_base:.4f} nats")
    print(f"merged adapters: new text val loss {merged_new:.4f} (unmerged {after_new:.4f}; the "
          "same batches)")
    size = (out / "adapters.safetensors").stat().st_size
    print(f"adapters saved: {out / 'adapters.safetensors'} ({size / 1024:.0f} KiB)")


if __name__ == "__main__":
    main()
