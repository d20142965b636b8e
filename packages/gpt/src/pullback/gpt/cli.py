"""``pullback-gpt`` / ``python -m pullback.gpt``: train, sample, eval."""

from __future__ import annotations

import argparse
import math
import sys
from pathlib import Path
from typing import Sequence

import numpy as np

import pullback as pb

from .checkpoint import load_checkpoint
from .config import PRESETS, SCHEDULES
from .data import CharDataset, CorpusNotFoundError, tinyshakespeare_path
from .model import GPT


def _read_corpus(path: str | None) -> str:
    source = Path(path) if path else tinyshakespeare_path()
    try:
        return source.read_text(encoding="utf-8")
    except OSError as exc:
        raise SystemExit(f"pullback-gpt: cannot read {source}: {exc}") from None


def _cmd_train(args: argparse.Namespace) -> int:
    from .train import train

    try:
        cfg = PRESETS[args.config].with_overrides(
            steps=args.steps, batch_size=args.batch_size, lr=args.lr, warmup=args.warmup,
            seed=args.seed, eval_interval=args.eval_interval, eval_iters=args.eval_iters,
            checkpoint_interval=args.checkpoint_interval, schedule=args.schedule,
            decay_steps=args.decay_steps,
        )
    except ValueError as exc:
        raise SystemExit(f"pullback-gpt train: {exc}") from None
    if args.lr is not None and args.min_lr is None:
        cfg = cfg.with_overrides(min_lr=args.lr / 10)
    elif args.min_lr is not None:
        cfg = cfg.with_overrides(min_lr=args.min_lr)
    text = _read_corpus(args.data)
    result = train(cfg, text, args.out, device=args.device, resume=args.resume, quiet=args.quiet)
    status = "interrupted" if result.interrupted else "finished"
    print(f"{status} at step {result.steps} in {result.elapsed_s:.1f} s; "
          f"val loss {result.final_val_loss}; outputs in {result.out_dir}")
    return 130 if result.interrupted else 0


def _load_model(checkpoint: str, device: str) -> tuple[GPT, object]:
    ckpt = load_checkpoint(checkpoint)
    model = GPT(ckpt.model_config)
    model.load_state_dict(ckpt.model_state)
    model.to(device)
    model.eval()
    return model, ckpt


def _cmd_sample(args: argparse.Namespace) -> int:
    model, ckpt = _load_model(args.checkpoint, args.device)
    tokenizer = ckpt.tokenizer
    prompt = args.prompt if args.prompt else "\n"
    idx = pb.tensor([tokenizer.encode(prompt)], device=args.device)
    rng = np.random.default_rng(args.seed)
    for i in range(args.num_samples):
        out = model.generate(idx, args.max_new_tokens, temperature=args.temperature,
                             top_k=args.top_k, generator=rng)
        if i:
            print("-" * 40)
        print(tokenizer.decode(out[0].tolist()))
    return 0


def _cmd_eval(args: argparse.Namespace) -> int:
    from .train import estimate_loss, split_loss

    model, ckpt = _load_model(args.checkpoint, args.device)
    text = _read_corpus(args.data)
    data = CharDataset(np.asarray(ckpt.tokenizer.encode(text), dtype=np.uint16))
    if args.full:
        val = split_loss(model, data, "val", pb.Device(args.device))
        windows = len(data.windows("val", model.config.block_size)[0])
        print(f"val loss {val:.4f} nats = {val / math.log(2):.4f} bits/char (the whole val "
              f"split: {windows} windows of {model.config.block_size} tokens)")
        return 0
    cfg = ckpt.train_config
    if cfg is None:
        raise SystemExit("pullback-gpt eval: the checkpoint has no training configuration")
    cfg = cfg.with_overrides(eval_iters=args.eval_iters, batch_size=args.batch_size)
    losses = estimate_loss(model, data, cfg, ckpt.step, pb.Device(args.device))
    print(f"val loss {losses['val']:.4f} nats = {losses['val'] / math.log(2):.4f} bits/char "
          f"(train loss {losses['train']:.4f}; {cfg.eval_iters} batches of "
          f"{cfg.batch_size}x{cfg.model.block_size} tokens per split)")
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="pullback-gpt",
                                     description="A character-level GPT trained on pullback.")
    sub = parser.add_subparsers(dest="command", required=True)

    t = sub.add_parser("train", help="train a model (TinyShakespeare unless --data is given)")
    t.add_argument("--data", help="a UTF-8 text file (default: TinyShakespeare)")
    t.add_argument("--config", choices=sorted(PRESETS), default="nano-cpu")
    t.add_argument("--steps", type=int)
    t.add_argument("--batch-size", type=int)
    t.add_argument("--lr", type=float)
    t.add_argument("--min-lr", type=float)
    t.add_argument("--warmup", type=int)
    t.add_argument("--schedule", choices=SCHEDULES,
                   help="learning-rate decay after the warmup: cosine (nanoGPT's, the default) or "
                        "wsd (held at --lr, then a linear decay over the last --decay-steps)")
    t.add_argument("--decay-steps", type=int, help="wsd's decay length (default: steps / 5)")
    t.add_argument("--eval-interval", type=int)
    t.add_argument("--eval-iters", type=int)
    t.add_argument("--checkpoint-interval", type=int)
    t.add_argument("--device", default="cpu")
    t.add_argument("--out", default="runs/gpt")
    t.add_argument("--resume", action="store_true", help="continue the run in --out exactly")
    t.add_argument("--seed", type=int)
    t.add_argument("--quiet", action="store_true", help="no progress bar")
    t.set_defaults(func=_cmd_train)

    s = sub.add_parser("sample", help="generate text from a checkpoint")
    s.add_argument("--checkpoint", required=True, help="a run folder or checkpoint folder")
    s.add_argument("--prompt", default="")
    s.add_argument("--max-new-tokens", type=int, default=500)
    s.add_argument("--temperature", type=float, default=0.8)
    s.add_argument("--top-k", type=int, default=None)
    s.add_argument("--num-samples", type=int, default=1)
    s.add_argument("--seed", type=int, default=1337)
    s.add_argument("--device", default="cpu")
    s.set_defaults(func=_cmd_sample)

    e = sub.add_parser("eval", help="validation loss and bits/char of a checkpoint")
    e.add_argument("--checkpoint", required=True)
    e.add_argument("--data", help="the text the model was trained on (default: TinyShakespeare)")
    e.add_argument("--eval-iters", type=int, default=200)
    e.add_argument("--full", action="store_true",
                   help="the loss over the whole val split, every token once (not sampled)")
    e.add_argument("--batch-size", type=int, default=None)
    e.add_argument("--device", default="cpu")
    e.set_defaults(func=_cmd_eval)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return int(args.func(args))
    except CorpusNotFoundError as exc:
        print(f"pullback-gpt: {exc}", file=sys.stderr)
        return 2
