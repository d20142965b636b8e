"""Training checkpoints: everything needed to continue a run exactly.

A checkpoint is a folder ``<out>/checkpoints/step-NNNNNNN/`` holding ``model.safetensors``,
``optimizer.safetensors`` and ``state.json`` (configs, tokenizer, step, scheduler, random
states, metrics). It is written under a temporary name and renamed into place, then
``<out>/checkpoints/LATEST`` is replaced atomically: a crash never leaves a half-written
checkpoint where a reader looks.
"""

from __future__ import annotations

import json
import os
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pullback as pb
from pullback.errors import CheckpointError

from .config import GPTConfig, TrainConfig
from .tokenizer import CharTokenizer

LATEST = "LATEST"
KEEP = 2  # checkpoints kept on disk (the newest ones)


@dataclass
class Checkpoint:
    """A loaded checkpoint (tensors on the CPU)."""

    path: Path
    model_state: dict[str, Any]
    optimizer_state: dict[str, Any] | None
    state: dict[str, Any]

    @property
    def model_config(self) -> GPTConfig:
        return GPTConfig.from_dict(self.state["model_config"])

    @property
    def train_config(self) -> TrainConfig | None:
        data = self.state.get("train_config")
        return TrainConfig.from_dict(data) if data else None

    @property
    def tokenizer(self) -> CharTokenizer:
        return CharTokenizer.from_dict(self.state["tokenizer"])

    @property
    def step(self) -> int:
        return int(self.state.get("step", 0))


def save_checkpoint(out_dir: str | Path, model: Any, tokenizer: CharTokenizer,
                    state: dict[str, Any], optimizer: Any = None) -> Path:
    """Write a checkpoint of ``model`` (+ optimizer) with the JSON ``state``; returns its folder."""
    root = Path(out_dir) / "checkpoints"
    root.mkdir(parents=True, exist_ok=True)
    step = int(state.get("step", 0))
    final = root / f"step-{step:07d}"
    tmp = root / f".step-{step:07d}.tmp"
    if tmp.exists():
        shutil.rmtree(tmp)
    tmp.mkdir()
    pb.save(model.state_dict(), tmp / "model.safetensors")
    if optimizer is not None:
        pb.save(optimizer.state_dict(), tmp / "optimizer.safetensors")
    full_state = dict(state, model_config=model.config.to_dict(), tokenizer=tokenizer.to_dict())
    (tmp / "state.json").write_text(json.dumps(full_state, indent=1))
    if final.exists():
        shutil.rmtree(final)
    os.replace(tmp, final)
    latest_tmp = root / (LATEST + ".tmp")
    latest_tmp.write_text(final.name)
    os.replace(latest_tmp, root / LATEST)
    _prune(root, keep=KEEP)
    return final


def _prune(root: Path, keep: int) -> None:
    steps = sorted(p for p in root.iterdir() if p.is_dir() and p.name.startswith("step-"))
    for old in steps[:-keep]:
        shutil.rmtree(old, ignore_errors=True)


def resolve(path: str | Path) -> Path:
    """The checkpoint folder named by ``path``: a run folder (its latest checkpoint), a
    ``checkpoints`` folder, or a ``step-N`` folder itself."""
    p = Path(path)
    for root in (p / "checkpoints", p):
        marker = root / LATEST
        if marker.is_file():
            return root / marker.read_text().strip()
    if (p / "state.json").is_file():
        return p
    raise CheckpointError(f"no checkpoint found at {p} (expected a run folder written by "
                          "`pullback-gpt train --out`, or a checkpoint folder)")


def load_checkpoint(path: str | Path) -> Checkpoint:
    """Read the checkpoint named by ``path`` (see :func:`resolve`)."""
    folder = resolve(path)
    state_file = folder / "state.json"
    try:
        state = json.loads(state_file.read_text())
    except (OSError, json.JSONDecodeError) as exc:
        raise CheckpointError(f"cannot read {state_file}: {exc}") from None
    for key in ("model_config", "tokenizer"):
        if key not in state:
            raise CheckpointError(f"{state_file} has no '{key}' entry")
    model_state = pb.load(folder / "model.safetensors")
    opt_file = folder / "optimizer.safetensors"
    optimizer_state = pb.load(opt_file) if opt_file.exists() else None
    return Checkpoint(folder, model_state, optimizer_state, state)
