"""``pullback-gpt`` / ``python -m pullback.gpt``: train, sample, eval.

A user's mistake (a text too short for the model, an existing run folder, a checkpoint that is
not there, a device that is not installed) ends as one line on stderr with exit status 2;
``--debug`` or ``PULLBACK_DEBUG=1`` shows the traceback (see :mod:`pullback.cli`).
"""

from __future__ import annotations

import argparse
import math
import os
import sys
from itertools import count
from pathlib import Path
from typing import Callable, Sequence

import numpy as np

import pullback as pb
from pullback._files import remove_entry
from pullback.cli import ArgumentParser, UsageError, add_debug_option, run_command
from pullback.errors import CheckpointError, PullbackError

from .checkpoint import load_checkpoint, resolve
from .config import PRESETS, SCHEDULES, TrainConfig
from .data import CharDataset, CorpusNotFoundError, corpus_from_file, tinyshakespeare
from .model import GPT
from .parallel import DataParallelError, launched_rank

PROG = "pullback-gpt"
DEFAULT_CONFIG = "nano-cpu"
DEFAULT_OUT = "runs/gpt"
# What train writes into its --out folder (what --overwrite removes, and nothing else).
RUN_OUTPUTS = ("checkpoints", "metrics.csv", "loss.png")


def _read_corpus(path: str | None) -> tuple[str, str]:
    """The training text and where it came from: ``--data FILE``, else TinyShakespeare."""
    try:
        corpus = corpus_from_file(path) if path else tinyshakespeare()
    except CorpusNotFoundError as exc:
        raise UsageError(str(exc)) from None
    return corpus.text, corpus.source


def _check_length(text: str, source: str, block_size: int) -> None:
    """A text must hold one window plus its target in each split (the last 10 % is val)."""
    if not text:
        raise UsageError(f"{source} is empty")
    if not _long_enough(len(text), block_size):
        needed = next(n for n in count(block_size) if _long_enough(n, block_size))
        raise UsageError(f"{source} has {len(text)} characters, too few for a context of "
                         f"{block_size}: the last 10 % (the val split) needs at least "
                         f"{block_size + 1}, so the text at least {needed}")


def _long_enough(characters: int, block_size: int) -> bool:
    try:  # the dataset's own split rule, on a stand-in text of that length
        CharDataset(np.zeros(characters, dtype=np.uint16)).check_block_size(block_size)
    except ValueError:
        return False
    return True


def _device(name: str) -> pb.Device:
    """``--device``, refused before anything is written when it cannot run here."""
    try:
        device = pb.Device(name)
    except PullbackError as exc:
        raise UsageError(f"--device {name}: {exc}") from None
    if not device.backend.is_available():
        raise UsageError(f"--device {name}: {device.backend.unavailable_reason()}")
    return device


def _train_config(args: argparse.Namespace) -> TrainConfig:
    preset = PRESETS[args.config]
    steps = args.steps if args.steps is not None else preset.steps
    warmup = args.warmup
    if warmup is None and 1 <= steps <= preset.warmup:
        # Keep the preset's shape: its warmup is the same share of a shorter run.
        warmup = steps * preset.warmup // preset.steps
        print(f"{PROG} train: --steps {steps} is not longer than {args.config}'s warmup of "
              f"{preset.warmup} steps; warmup scaled down to {warmup} (give --warmup to choose)",
              file=sys.stderr)
    min_lr = args.min_lr if args.min_lr is not None else (
        args.lr / 10 if args.lr is not None else None)
    try:
        cfg = preset.with_overrides(
            steps=steps, batch_size=args.batch_size, lr=args.lr, min_lr=min_lr, warmup=warmup,
            seed=args.seed, eval_interval=args.eval_interval, eval_iters=args.eval_iters,
            checkpoint_interval=args.checkpoint_interval, schedule=args.schedule,
            decay_steps=args.decay_steps,
        )
    except (ValueError, TypeError) as exc:
        raise UsageError(str(exc)) from None
    cfg = cfg.with_model(reversible=True) if args.reversible else cfg
    problem = cfg.memory_problem()
    if problem is not None:
        raise UsageError(problem)
    return cfg


def _prepare_out(args: argparse.Namespace) -> None:
    """Refuse to write over a run, unless --resume continues it or --overwrite replaces it."""
    out = Path(args.out)
    if args.resume:
        if args.overwrite:
            raise UsageError("--resume continues the run in --out, --overwrite "
                             "replaces it; give one of them")
        try:
            resolve(out)
        except CheckpointError:
            raise UsageError(f"--resume: no checkpoint in {out} to continue; run "
                             "without --resume to start a run there") from None
        return
    existing = _run_outputs(out)
    if existing and not args.overwrite:
        try:
            resolve(out)
            resume = "continue it with --resume, "
        except CheckpointError:  # a run killed before its first checkpoint
            resume = "it has no checkpoint to resume; "
        raise UsageError(f"{out} already holds a run ({', '.join(existing)}); {resume}start "
                         f"another with --out NEW_FOLDER, or replace it with --overwrite")


def _run_outputs(out: Path) -> list[str]:
    return [name for name in RUN_OUTPUTS if os.path.lexists(out / name)]


def _remove_previous_run(args: argparse.Namespace) -> None:
    """--overwrite: remove what an earlier run wrote (stale checkpoints would otherwise be
    pruned by name against the new run's); anything else in the folder stays, and a link
    among them is removed, never what it points to."""
    out = Path(args.out)
    for name in _run_outputs(out):
        remove_entry(out / name)


def _cmd_train(args: argparse.Namespace) -> int:
    from .train import estimate_label, train

    _prepare_out(args)
    # A resumed run keeps its saved configuration (train reads it from the checkpoint).
    cfg = load_checkpoint(args.out).train_config if args.resume else _train_config(args)
    if cfg is None:
        raise UsageError(f"--resume: the checkpoint in {args.out} has no training "
                         "configuration (state.json's 'train_config'); it cannot be resumed")
    device = _device(args.device)
    text, source = _read_corpus(args.data)
    _check_length(text, source, cfg.model.block_size)
    if not args.resume and launched_rank() == 0:  # in a data-parallel run, rank 0 only
        _remove_previous_run(args)
    try:
        result = train(cfg, text, args.out, device=str(device), resume=args.resume,
                       quiet=args.quiet)
    except DataParallelError as exc:
        raise UsageError(str(exc)) from None
    if not result.is_main:
        return 0
    status = "interrupted" if result.interrupted else "finished"
    val = ("not evaluated" if result.final_val_loss is None else
           f"{result.final_val_loss:.4f} nats ({estimate_label(cfg.eval_iters)}; the exact "
           f"loss: {PROG} eval --checkpoint {args.out} --full)")
    print(f"{status} at step {result.steps} in {result.elapsed_s:.1f} s; val loss {val}; "
          f"outputs in {result.out_dir}")
    return 130 if result.interrupted else 0


def _load_model(checkpoint: str, device: str) -> tuple[GPT, object]:
    try:
        resolve(checkpoint)
    except CheckpointError as exc:
        raise UsageError(f"--checkpoint: {exc}") from None
    ckpt = load_checkpoint(checkpoint)
    model = GPT(ckpt.model_config)
    model.load_state_dict(ckpt.model_state)
    model.to(_device(device))
    model.eval()
    return model, ckpt


def _cmd_sample(args: argparse.Namespace) -> int:
    model, ckpt = _load_model(args.checkpoint, args.device)
    tokenizer = ckpt.tokenizer
    prompt = args.prompt if args.prompt else "\n"
    unknown = sorted(set(prompt) - set(tokenizer.chars))
    if unknown:
        raise UsageError(f"--prompt has characters the model never saw: {unknown}")
    idx = pb.tensor([tokenizer.encode(prompt)], device=args.device)
    rng = np.random.default_rng(args.seed)
    for i in range(args.num_samples):
        out = model.generate(idx, args.max_new_tokens, temperature=args.temperature,
                             top_k=args.top_k, generator=rng)
        if i:
            print("-" * 40)
        print(_whole_lines(tokenizer.decode(out[0].tolist()), len(prompt)))
    return 0


def _whole_lines(text: str, prompt_length: int) -> str:
    """The sample up to its last line break, so that it never ends mid-word; one without a line
    break is printed whole, with a note that --max-new-tokens cut it."""
    end = text.rfind("\n", prompt_length)
    if end >= 0:
        return text[:end]
    print(f"({PROG} sample: no line break in the sample; it is cut at --max-new-tokens)",
          file=sys.stderr)
    return text


def _cmd_eval(args: argparse.Namespace) -> int:
    from .train import estimate_label, estimate_loss, split_loss

    model, ckpt = _load_model(args.checkpoint, args.device)
    text, _ = _read_corpus(args.data)
    data = CharDataset(np.asarray(ckpt.tokenizer.encode(text), dtype=np.uint16))
    if args.full:
        val = split_loss(model, data, "val", pb.Device(args.device))
        windows = len(data.windows("val", model.config.block_size)[0])
        print(f"val loss {val:.4f} nats = {val / math.log(2):.4f} bits/char (the whole val "
              f"split: {windows} windows of {model.config.block_size} tokens)")
        return 0
    cfg = ckpt.train_config
    if cfg is None:
        raise UsageError("the checkpoint has no training configuration; use --full")
    cfg = cfg.with_overrides(eval_iters=args.eval_iters, batch_size=args.batch_size)
    losses = estimate_loss(model, data, cfg, ckpt.step, pb.Device(args.device))
    print(f"val loss {losses['val']:.4f} nats = {losses['val'] / math.log(2):.4f} bits/char "
          f"({estimate_label(cfg.eval_iters)}: {cfg.eval_iters} batches of "
          f"{cfg.batch_size}x{cfg.model.block_size} tokens per split; --full for the exact "
          f"loss); train loss {losses['train']:.4f}")
    return 0


def _from_preset(field: str) -> str:
    """A help text's default for a setting that each preset fixes."""
    values = ", ".join(f"{name} {getattr(cfg, field)}" for name, cfg in PRESETS.items())
    return f"default: the --config preset's ({values})"


def _add_train_parser(sub: argparse._SubParsersAction) -> None:
    t = sub.add_parser(
        "train", help="train a model (TinyShakespeare unless --data is given)",
        description="Train a char-level GPT. The presets are nanoGPT's recipes with its cosine "
                    "schedule; --schedule wsd reaches a lower loss on nano-cpu (1.84-1.85 "
                    "nats against 1.90, docs/gpt.md) and is what `nox -s demo` runs.")
    t.add_argument("--data", metavar="FILE",
                   help="a UTF-8 text file to train on (default: TinyShakespeare: the copy "
                        "embedded in pullback-gpt, unless $PULLBACK_DATA or ~/.cache/pullback "
                        "holds one)")
    t.add_argument("--config", choices=sorted(PRESETS), default=DEFAULT_CONFIG,
                   help=f"model size and recipe (default: {DEFAULT_CONFIG}, nanoGPT's CPU "
                        "configuration: 4 layers, width 128, about 2.5 min on 2 cores)")
    t.add_argument("--reversible", action="store_true",
                   help="reversible blocks (pullback-avyaya): the same model and parameters, "
                        "activation memory that does not grow with the number of layers, "
                        "1.5-1.8x the step time (docs/avyaya.md)")
    t.add_argument("--steps", type=int, help=f"optimizer steps; {_from_preset('steps')}")
    t.add_argument("--batch-size", type=int,
                   help=f"sequences per step; {_from_preset('batch_size')}")
    t.add_argument("--lr", type=float, help=f"peak learning rate; {_from_preset('lr')}")
    t.add_argument("--min-lr", type=float,
                   help="learning rate at the last step (default: --lr / 10 when --lr is "
                        "given, else the preset's 1e-4)")
    t.add_argument("--warmup", type=int,
                   help=f"linear warmup steps; {_from_preset('warmup')}, scaled down to the "
                        "preset's share of the run when --steps is not longer")
    t.add_argument("--schedule", choices=SCHEDULES,
                   help="learning-rate decay after the warmup (default: cosine, nanoGPT's): "
                        "cosine down to --min-lr, or wsd (held at --lr, then a linear decay "
                        "over the last --decay-steps)")
    t.add_argument("--decay-steps", type=int,
                   help="the length of wsd's decay (default: a fifth of --steps)")
    t.add_argument("--eval-interval", type=int,
                   help=f"steps between loss estimates; {_from_preset('eval_interval')}")
    t.add_argument("--eval-iters", type=int,
                   help=f"batches per loss estimate; {_from_preset('eval_iters')}")
    t.add_argument("--checkpoint-interval", type=int,
                   help=f"steps between checkpoints; {_from_preset('checkpoint_interval')}")
    t.add_argument("--seed", type=int, help=f"random seed; {_from_preset('seed')}")
    t.add_argument("--device", default="cpu", help="cpu or cuda (default: cpu)")
    t.add_argument("--out", default=DEFAULT_OUT, metavar="DIR",
                   help=f"the run folder: metrics.csv, loss.png, checkpoints/ (default: "
                        f"{DEFAULT_OUT})")
    t.add_argument("--resume", action="store_true",
                   help="continue the run in --out exactly, with its saved configuration "
                        "(the other training options are not read)")
    t.add_argument("--overwrite", action="store_true",
                   help="replace the run already in --out (refused without it)")
    t.add_argument("--quiet", action="store_true", help="no progress bar")
    add_debug_option(t)
    t.set_defaults(func=_cmd_train)


def _checkpoint_command(sub: argparse._SubParsersAction, name: str, description: str,
                        command: Callable[[argparse.Namespace], int]) -> argparse.ArgumentParser:
    """A subcommand that reads a checkpoint: --checkpoint, --device and --debug."""
    parser = sub.add_parser(name, help=description)
    parser.add_argument("--checkpoint", required=True, metavar="DIR",
                        help="a run folder (its latest checkpoint) or a checkpoint folder")
    parser.add_argument("--device", default="cpu", help="cpu or cuda (default: cpu)")
    add_debug_option(parser)
    parser.set_defaults(func=command)
    return parser


def build_parser() -> argparse.ArgumentParser:
    parser = ArgumentParser(prog=PROG, description="A character-level GPT trained on pullback.")
    add_debug_option(parser)
    sub = parser.add_subparsers(dest="command", required=True)
    _add_train_parser(sub)

    s = _checkpoint_command(sub, "sample", "generate text from a checkpoint", _cmd_sample)
    s.add_argument("--prompt", default="", help="text to continue (default: a line break)")
    s.add_argument("--max-new-tokens", type=int, default=500,
                   help="characters to generate; the sample ends at the last line break "
                        "before this (default: 500)")
    s.add_argument("--temperature", type=float, default=0.8,
                   help="below 1 sharper, above 1 more random (default: 0.8)")
    s.add_argument("--top-k", type=int, default=None,
                   help="sample among the k likeliest characters only (default: all)")
    s.add_argument("--num-samples", type=int, default=1, help="samples to print (default: 1)")
    s.add_argument("--seed", type=int, default=1337, help="random seed (default: 1337)")

    e = _checkpoint_command(sub, "eval", "validation loss and bits/char of a checkpoint",
                            _cmd_eval)
    e.add_argument("--data", metavar="FILE",
                   help="the text the model was trained on (default: TinyShakespeare)")
    e.add_argument("--full", action="store_true",
                   help="the exact loss over the whole val split, every token once, instead "
                        "of an estimate from random batches")
    e.add_argument("--eval-iters", type=int, default=200,
                   help="batches per split for the estimate (default: 200)")
    e.add_argument("--batch-size", type=int, default=None,
                   help="sequences per batch (default: the run's)")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    return run_command(lambda: int(args.func(args)), f"{PROG} {args.command}",
                       getattr(args, "debug", False))
