"""The training loop: AdamW with warmup + cosine decay, gradient clipping, periodic evaluation,
checkpoints (every K steps, at the end, on Ctrl-C), a CSV log and a PNG loss curve."""

from __future__ import annotations

import csv
import io
import math
import os
import shutil
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

import numpy as np

import pullback as pb
import pullback.optim as optim
from pullback._files import (check_replaceable, make_folder, open_append, open_regular,
                              write_atomic)
from pullback.backends import Device
from pullback.errors import CheckpointError

from .checkpoint import Checkpoint, load_checkpoint, save_checkpoint
from .config import TrainConfig
from .data import CharDataset
from .model import GPT
from .parallel import data_parallel
from .tokenizer import CharTokenizer

LOG_NAME, PLOT_NAME = "metrics.csv", "loss.png"
CSV_FIELDS = ("step", "loss", "lr", "train_loss", "val_loss", "val_bits_per_char",
              "tokens_per_s", "elapsed_s")


@dataclass
class TrainResult:
    """What a run produced."""

    out_dir: Path
    steps: int
    final_val_loss: float | None
    final_train_loss: float | None
    elapsed_s: float  # wall time of the whole run, every resumed segment included
    interrupted: bool = False
    is_main: bool = True  # False on the other ranks of a data-parallel run


def make_optimizer(model: GPT, cfg: TrainConfig) -> Any:
    """AdamW with weight decay on matrices only (embeddings and linear weights), as nanoGPT."""
    decay = [p for p in model.parameters() if p.ndim >= 2]
    no_decay = [p for p in model.parameters() if p.ndim < 2]
    groups = [{"params": decay, "weight_decay": cfg.weight_decay},
              {"params": no_decay, "weight_decay": 0.0}]
    return optim.AdamW(groups, lr=cfg.lr, betas=(cfg.beta1, cfg.beta2))


def make_scheduler(optimizer: Any, cfg: TrainConfig) -> Any:
    """Linear warmup to ``lr``, then down to ``min_lr`` at the last step: along a cosine
    (nanoGPT's schedule), or for ``wsd`` held at ``lr`` until a linear decay over the last
    ``decay_steps`` (a fifth of the run by default)."""
    if cfg.schedule == "wsd":
        return optim.lr_scheduler.warmup_stable_decay(
            optimizer, warmup_steps=cfg.warmup, total_steps=cfg.steps,
            decay_steps=cfg.decay_length,
            min_lr=cfg.min_lr)
    return optim.lr_scheduler.warmup_cosine(optimizer, warmup_steps=cfg.warmup,
                                            total_steps=cfg.steps, min_lr=cfg.min_lr)


def estimate_label(eval_iters: int) -> str:
    """What a loss from :func:`estimate_loss` is, for every line that prints one: a sample of
    ``eval_iters`` random batches, not the exact loss of ``pullback-gpt eval --full``."""
    return f"{eval_iters}-batch estimate"


@pb.no_grad()
def estimate_loss(model: GPT, data: CharDataset, cfg: TrainConfig, step: int,
                  device: Device) -> dict[str, float]:
    """Mean loss over ``eval_iters`` batches of each split (its own seeded generator, so that
    evaluation never disturbs the training stream)."""
    was_training = model.training
    model.eval()
    out = {}
    for split in ("train", "val"):
        rng = np.random.default_rng([cfg.seed, step, split == "val"])
        losses = []
        for _ in range(cfg.eval_iters):
            x, y = data.batch(split, cfg.batch_size, cfg.model.block_size, rng, device)
            _, loss = model(x, y)
            losses.append(loss.item())
        out[split] = float(np.mean(losses))
    model.train(was_training)
    return out


@pb.no_grad()
def split_loss(model: GPT, data: CharDataset, split: str, device: Device,
               batch_size: int = 256) -> float:
    """The mean loss per token over the whole ``split``, read as consecutive windows of the
    model's block size: exact and deterministic, where :func:`estimate_loss` samples."""
    was_training = model.training
    model.eval()
    x, y = data.windows(split, model.config.block_size)
    total = 0.0
    for start in range(0, len(x), batch_size):
        xb, yb = x[start:start + batch_size], y[start:start + batch_size]
        _, loss = model(pb.tensor(xb, device=device), pb.tensor(yb, device=device))
        total += loss.item() * len(xb)  # each batch's loss is a mean over its windows
    model.train(was_training)
    return total / len(x)


def _progress(total: int, initial: int, disable: bool) -> Any:
    from tqdm.auto import tqdm

    return tqdm(total=total, initial=initial, disable=disable, unit="step", dynamic_ncols=True)


class _Log:
    """Appends rows to ``metrics.csv``, kept across resumes.

    A resumed run first drops the rows logged after its checkpoint's step: a run that was killed
    (not interrupted with Ctrl-C) logged steps whose checkpoint was never written, and the resumed
    run logs those steps again. The log is rewritten atomically (a crash keeps the old one), and
    never through a link planted in the run folder.
    """

    def __init__(self, path: Path, resume_step: int | None) -> None:
        self.path = path
        kept = _read_log(path, resume_step) if resume_step is not None else []
        self.evaluated_steps = {int(r["step"]) for r in kept if r["val_loss"]}
        self.last_elapsed_s = float(kept[-1]["elapsed_s"]) if kept else 0.0
        text = io.StringIO(newline="")
        writer = csv.DictWriter(text, fieldnames=CSV_FIELDS)
        writer.writeheader()
        writer.writerows(kept)
        write_atomic(path, text.getvalue())
        self.file = open_append(path)
        self.writer = csv.DictWriter(self.file, fieldnames=CSV_FIELDS)

    def row(self, **values: Any) -> None:
        self.writer.writerow({k: values.get(k, "") for k in CSV_FIELDS})
        self.file.flush()

    def close(self) -> None:
        self.file.close()


def _read_log(path: Path, resume_step: int) -> list[dict[str, str]]:
    """The rows of the log ``path`` up to ``resume_step`` (none when there is no log); a log
    that is not a regular file of the run folder, or not the CSV this module writes, is a
    CheckpointError naming it."""
    try:
        f = open_regular(path, CheckpointError, "training log", follow_links=False)
    except FileNotFoundError:
        return []
    # the text wrapper is closed with the file (left to the collector, it warned, and closing
    # it there would close whatever file had its descriptor by then)
    with f, io.TextIOWrapper(f, encoding="utf-8", newline="") as text:
        try:
            rows = list(csv.DictReader(text))
            kept = [{k: r[k] for k in CSV_FIELDS} for r in rows if int(r["step"]) <= resume_step]
            for r in kept:
                float(r["elapsed_s"])
        except (KeyError, ValueError, TypeError, UnicodeDecodeError, csv.Error) as exc:
            raise CheckpointError(f"{path} is not a training log written by pullback-gpt "
                                  f"({type(exc).__name__}: {exc})") from None
    return kept


def train(cfg: TrainConfig, text: str, out_dir: str | Path, device: str = "cpu",
          resume: bool = False, quiet: bool = False,
          on_step: Callable[[int, float], None] | None = None) -> TrainResult:
    """Train a GPT on ``text`` (or continue the run in ``out_dir`` with ``resume``).

    ``out_dir`` is created once the text, the configuration and the device have been checked;
    a run that fails before its first step removes the folder it created. Started by a launcher
    on several processes (``mpiexec -n K``), it trains data-parallel (:mod:`.parallel`).
    """
    out = Path(out_dir)
    dev = Device(device)
    par = data_parallel()
    main = par is None or par.is_main
    if main:
        check_run_folder(out)
    start_step = 0
    ckpt = None
    if resume:
        ckpt = load_checkpoint(out)
        cfg = ckpt.train_config or cfg
        tokenizer = ckpt.tokenizer
        start_step = ckpt.step
    else:
        tokenizer = CharTokenizer.from_text(text)
    if cfg.model.vocab_size != tokenizer.vocab_size:
        from dataclasses import replace

        cfg = replace(cfg, model=replace(cfg.model, vocab_size=tokenizer.vocab_size))
    data = CharDataset(np.asarray(tokenizer.encode(text), dtype=np.uint16))
    data.check_block_size(cfg.model.block_size)

    local_batch = cfg.batch_size if par is None else par.local_batch(cfg.batch_size)

    pb.manual_seed(cfg.seed)
    model = GPT(cfg.model).to(dev)
    optimizer = make_optimizer(model, cfg)
    scheduler = make_scheduler(optimizer, cfg)
    # Rank 0 draws the single-process stream; each other rank a stream of its own.
    rng = np.random.default_rng(cfg.seed if main else [cfg.seed, par.rank])
    if ckpt is not None:
        restore_run(ckpt, model, optimizer, scheduler, dev)
        _restore_data_rng(rng, ckpt.state, par, cfg.seed, start_step)
    train_model = model if par is None else par.wrap(model)

    def checkpoint(step: int, metrics: dict[str, Any], collective: bool = True) -> Path | None:
        # The other ranks' data streams are gathered so that a resume on the same number of
        # processes continues each one; every rank must then reach the same checkpoints.
        ranks_rng = (par.gather(rng.bit_generator.state) if par is not None and collective
                     else None)
        path = None
        if main:
            state = {
                "step": step, "train_config": cfg.to_dict(), "scheduler": scheduler.state_dict(),
                "data_rng": rng.bit_generator.state, "device_rng": dev.backend.get_rng_state(),
                "metrics": metrics, "elapsed_s": time.perf_counter() - t0,
            }
            if ranks_rng is not None:
                state["data_rng_ranks"] = ranks_rng
            path = save_checkpoint(out, model, tokenizer, state, optimizer)
        if par is not None and collective:
            par.barrier()
        return path

    created = not out.exists()
    if main:
        out.mkdir(parents=True, exist_ok=True)
    log = _Log(out / LOG_NAME, start_step if resume else None) if main else _NoLog()
    tokens_per_step = cfg.batch_size * cfg.model.block_size
    bar = _progress(cfg.steps, start_step, quiet or not main)
    model.train()
    # elapsed_s counts the wall time of every segment of a resumed run; the log's last kept row
    # can be later than the checkpoint (the evaluation that follows it)
    prior_s = max(ckpt.state.get("elapsed_s", 0.0), log.last_elapsed_s) if ckpt else 0.0
    t0 = time.perf_counter() - prior_s
    last = {"train": None, "val": None}
    step = start_step
    interrupted = False
    try:
        while step < cfg.steps:
            # a Ctrl-C checkpoint is written before that step's evaluation: a resume runs it
            if (main and step % cfg.eval_interval == 0 and step > 0
                    and step not in log.evaluated_steps):
                last = _evaluate(model, data, cfg, step, dev, log, bar, t0)
            tick = time.perf_counter()
            x, y = data.batch("train", local_batch, cfg.model.block_size, rng, dev)
            _, loss = train_model(x, y)
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            if cfg.grad_clip > 0:
                optim.clip_grad_norm_(model.parameters(), cfg.grad_clip)
            optimizer.step()
            lr = scheduler.get_last_lr()[0]
            scheduler.step()
            step += 1
            loss_value = loss.item() if par is None else par.mean(loss.item())
            rate = tokens_per_step / max(time.perf_counter() - tick, 1e-9)
            log.row(step=step, loss=f"{loss_value:.6f}", lr=f"{lr:.6g}", tokens_per_s=f"{rate:.0f}",
                    elapsed_s=f"{time.perf_counter() - t0:.2f}")
            bar.set_postfix(loss=f"{loss_value:.4f}", tok_s=f"{rate:,.0f}", lr=f"{lr:.2e}")
            bar.update(1)
            if on_step is not None:
                on_step(step, loss_value)
            if step % cfg.checkpoint_interval == 0 and step < cfg.steps:
                checkpoint(step, last)
    except KeyboardInterrupt:
        interrupted = True
        # Ranks are interrupted at different points: rank 0 saves alone, with no collective.
        path = checkpoint(step, last, collective=False)
        if main:
            bar.write(f"interrupted at step {step}: checkpoint saved to {path}")
    except BaseException:
        bar.close()
        log.close()  # what was logged stays readable; the log file is not left open
        if main and created and step == start_step:  # nothing was trained: leave nothing behind
            shutil.rmtree(out, ignore_errors=True)
        raise
    if not interrupted:
        if main:
            last = _evaluate(model, data, cfg, step, dev, log, bar, t0)
        checkpoint(step, last)
    bar.close()
    log.close()
    elapsed = time.perf_counter() - t0
    if main:
        plot_metrics(out / LOG_NAME, out / PLOT_NAME)
    return TrainResult(out, step, last["val"], last["train"], elapsed, interrupted, main)


def check_run_folder(out: Path) -> None:
    """Refuse, before any work, a run folder where something other than what training writes
    was planted at the names it writes (a link, a FIFO: see :mod:`pullback._files`)."""
    for name in (LOG_NAME, PLOT_NAME):
        check_replaceable(out / name)
    checkpoints = out / "checkpoints"
    if os.path.lexists(checkpoints):
        make_folder(checkpoints)  # an existing one must be a real folder


RESUME_ENTRIES = ("train_config", "scheduler", "data_rng", "device_rng")


def restore_run(ckpt: Checkpoint, model: GPT, optimizer: Any, scheduler: Any,
                device: Device) -> None:
    """Put the model, optimizer, scheduler and the device's generator where the checkpoint
    left them (the data stream: :func:`_restore_data_rng`). Everything a resumed step reads is
    checked here: an entry that is missing or does not fit is a CheckpointError naming the
    checkpoint, never an error at the next step."""
    where = ckpt.path / "state.json"
    for key in RESUME_ENTRIES:
        if key not in ckpt.state:
            raise CheckpointError(f"{where} has no '{key}' entry: the run cannot be resumed")
    if ckpt.optimizer_state is None:
        raise CheckpointError(f"{ckpt.path} has no optimizer.safetensors: the run cannot be "
                              "resumed")
    model.load_state_dict(ckpt.model_state)
    optimizer.load_state_dict(ckpt.optimizer_state)
    scheduler.load_state_dict(ckpt.state["scheduler"])
    saved = device.backend.get_rng_state()
    try:
        device.backend.set_rng_state(ckpt.state["device_rng"])
    except (TypeError, ValueError, KeyError, AttributeError, OverflowError) as exc:
        device.backend.set_rng_state(saved)
        raise CheckpointError(f"{where}: 'device_rng' is not a generator state of "
                              f"{device.type} ({type(exc).__name__}: {exc})") from None


def _restore_data_rng(rng: np.random.Generator, state: dict[str, Any], par: Any, seed: int,
                      step: int) -> None:
    """Continue the data stream of a checkpoint: rank 0's (the single-process stream), or each
    rank's when it was written by as many ranks; a different number of ranks reseeds the other
    ranks' streams from (seed, rank, step)."""
    if par is None or par.is_main:
        rng.bit_generator.state = state["data_rng"]
        return
    ranks = state.get("data_rng_ranks")
    if ranks is not None and len(ranks) == par.size:
        rng.bit_generator.state = ranks[par.rank]
    else:
        rng.bit_generator.state = np.random.default_rng([seed, par.rank, step]).bit_generator.state


class _NoLog:
    """The log of a rank other than 0: it writes nothing."""

    evaluated_steps: set[int] = set()
    last_elapsed_s = 0.0

    def row(self, **values: Any) -> None:
        pass

    def close(self) -> None:
        pass


def _evaluate(model: GPT, data: CharDataset, cfg: TrainConfig, step: int, dev: Device,
              log: _Log, bar: Any, t0: float) -> dict[str, Any]:
    losses = estimate_loss(model, data, cfg, step, dev)
    bpc = losses["val"] / math.log(2)
    log.row(step=step, train_loss=f"{losses['train']:.6f}", val_loss=f"{losses['val']:.6f}",
            val_bits_per_char=f"{bpc:.6f}", elapsed_s=f"{time.perf_counter() - t0:.2f}")
    bar.write(f"step {step}: train loss {losses['train']:.4f}, val loss {losses['val']:.4f} "
              f"nats = {bpc:.4f} bits/char ({estimate_label(cfg.eval_iters)})")
    return losses


def plot_metrics(csv_path: Path, png_path: Path) -> None:
    """Training loss per step and evaluated train/val loss, as a PNG."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    steps, losses, eval_steps, train_eval, val_eval = [], [], [], [], []
    with csv_path.open() as f:
        for row in csv.DictReader(f):
            if row["loss"]:
                steps.append(int(row["step"]))
                losses.append(float(row["loss"]))
            if row["val_loss"]:
                eval_steps.append(int(row["step"]))
                train_eval.append(float(row["train_loss"]))
                val_eval.append(float(row["val_loss"]))
    fig, ax = plt.subplots(figsize=(8, 4.5))
    if losses:
        ax.plot(steps, losses, color="0.75", linewidth=0.8, label="batch loss")
    if eval_steps:
        ax.plot(eval_steps, train_eval, "o-", label="train loss (eval)")
        ax.plot(eval_steps, val_eval, "o-", label="val loss (eval)")
    ax.set_xlabel("step")
    ax.set_ylabel("cross-entropy (nats)")
    ax.grid(alpha=0.3)
    ax.legend()
    fig.tight_layout()
    image = io.BytesIO()
    fig.savefig(image, format="png", dpi=120)
    plt.close(fig)
    write_atomic(png_path, image.getvalue(), sync=False)
