"""Training checkpoints: everything needed to continue a run exactly.

A checkpoint is a folder ``<out>/checkpoints/step-NNNNNNN/`` holding ``model.safetensors``,
``optimizer.safetensors`` and ``state.json`` (configs, tokenizer, step, scheduler, random
states, metrics). It is written under a temporary name and renamed into place, then
``<out>/checkpoints/LATEST`` is replaced atomically: a crash never leaves a half-written
checkpoint where a reader looks. Old checkpoints are pruned the same way round: renamed out of
sight first, then deleted, so that a crash mid-prune never leaves a half step folder.

A run folder may come from someone else (docs/security.md): nothing is written through a link
planted in it (:mod:`pullback._files`), ``LATEST`` must name a step folder beside it, the files
of a checkpoint are regular files in its folder (not links out of it), and ``state.json`` is
checked entry by entry when it is read, before anything is allocated from it: a wrong type, a
configuration that does not match the weights or would not fit in memory is one
:class:`CheckpointError` naming the file and the entry.
"""

from __future__ import annotations

import json
import os
import shutil
import stat
from dataclasses import dataclass
from numbers import Real
from pathlib import Path
from typing import Any

import numpy as np

import pullback as pb
from pullback._files import make_folder, read_regular, remove_entry, write_atomic
from pullback.errors import CheckpointError

from .config import GPTConfig, TrainConfig
from .tokenizer import CharTokenizer

LATEST = "LATEST"
KEEP = 2  # checkpoints kept on disk (the newest ones)
STEP_PREFIX = "step-"
PRUNED_PREFIX = ".pruned-"  # a step folder being deleted: out of sight of every reader
STATE_LIMIT = 64 * 2**20  # bytes of a state.json (a few KB in practice)
TIED_HEAD = "lm_head.weight"


@dataclass
class Checkpoint:
    """A loaded checkpoint (tensors on the CPU), checked by :func:`load_checkpoint`."""

    path: Path
    model_state: dict[str, Any]
    optimizer_state: dict[str, Any] | None
    state: dict[str, Any]
    model_config: GPTConfig
    train_config: TrainConfig | None
    tokenizer: CharTokenizer

    @property
    def step(self) -> int:
        return int(self.state.get("step", 0))


def save_checkpoint(out_dir: str | Path, model: Any, tokenizer: CharTokenizer,
                    state: dict[str, Any], optimizer: Any = None) -> Path:
    """Write a checkpoint of ``model`` (+ optimizer) with the JSON ``state``; returns its folder."""
    root = make_folder(Path(out_dir) / "checkpoints", parents=True)
    step = int(state.get("step", 0))
    final = root / f"{STEP_PREFIX}{step:07d}"
    tmp = root / f".{STEP_PREFIX}{step:07d}.tmp"
    remove_entry(tmp)
    tmp.mkdir()
    pb.save(model.state_dict(), tmp / "model.safetensors")
    if optimizer is not None:
        pb.save(optimizer.state_dict(), tmp / "optimizer.safetensors")
    full_state = dict(state, model_config=model.config.to_dict(), tokenizer=tokenizer.to_dict())
    write_atomic(tmp / "state.json", json.dumps(full_state, indent=1))
    remove_entry(final)
    os.replace(tmp, final)
    write_atomic(root / LATEST, final.name)
    _prune(root, keep=KEEP)
    return final


def _prune(root: Path, keep: int) -> None:
    """Delete all but the ``keep`` newest step folders: each is first renamed out of sight
    (``.pruned-step-N``), then deleted, so that a crash (SIGKILL) mid-delete leaves no step
    folder with some of its files; what a killed prune left is deleted here too."""
    steps = []
    for entry in os.scandir(root):
        if entry.name.startswith(PRUNED_PREFIX):
            remove_entry(entry.path)
        elif entry.name.startswith(STEP_PREFIX) and entry.is_dir(follow_symlinks=False):
            steps.append(entry.name)
    for name in sorted(steps)[:-keep]:
        hidden = root / (PRUNED_PREFIX + name)
        os.replace(root / name, hidden)
        shutil.rmtree(hidden, ignore_errors=True)


def resolve(path: str | Path) -> Path:
    """The checkpoint folder named by ``path``: a run folder (its latest checkpoint), a
    ``checkpoints`` folder, or a ``step-N`` folder itself.

    Raises:
        CheckpointError: there is no checkpoint there, or ``LATEST`` does not name a step
            folder beside it (a path, ``..``, a link: it is never followed out of its folder).
    """
    p = Path(path)
    for root in (p / "checkpoints", p):
        marker = root / LATEST
        if os.path.lexists(marker):
            return _latest(root, marker)
    if (p / "state.json").is_file():
        return p
    raise CheckpointError(f"no checkpoint found at {p} (expected a run folder written by "
                          "`pullback-gpt train --out`, or a checkpoint folder)")


def _latest(root: Path, marker: Path) -> Path:
    """The step folder the ``LATEST`` file ``marker`` names, which must be a folder (not a
    link) in ``root``."""
    raw = read_regular(marker, CheckpointError, "checkpoint marker", 4096, follow_links=False)
    try:
        name = raw.decode("utf-8").strip()
    except UnicodeDecodeError:
        name = ""
    if not name or name in (".", "..") or "/" in name or "\\" in name or "\0" in name:
        raise CheckpointError(f"{marker} must hold the name of a checkpoint folder beside it, "
                              f"not {raw[:80]!r}: a marker never points out of its folder")
    folder = root / name
    try:
        mode = os.lstat(folder).st_mode
    except FileNotFoundError:
        raise CheckpointError(f"{marker} names {name!r}, which is not in {root}") from None
    if not stat.S_ISDIR(mode):
        raise CheckpointError(f"{marker} names {folder}, which is not a folder (a link or a "
                              "file): a marker never points out of its folder")
    return folder


def load_checkpoint(path: str | Path) -> Checkpoint:
    """Read and check the checkpoint named by ``path`` (see :func:`resolve`).

    Raises:
        CheckpointError: a missing or malformed file, an entry of ``state.json`` of the wrong
            type, a configuration that does not match ``model.safetensors`` or needs more
            memory than this machine has; the message names the file and the entry.
    """
    folder = resolve(path)
    state_file = folder / "state.json"
    state = _read_state(state_file)
    model_state = pb.load(_member(folder, "model.safetensors"))
    opt_file = folder / "optimizer.safetensors"
    optimizer_state = pb.load(_member(folder, opt_file.name)) if os.path.lexists(opt_file) \
        else None
    model_config, train_config, tokenizer = _check_state(state, state_file, model_state)
    return Checkpoint(folder, model_state, optimizer_state, state, model_config, train_config,
                      tokenizer)


def _member(folder: Path, name: str) -> Path:
    """``folder / name``, which must be a file of the folder itself, not a link out of it
    (:func:`pullback.load` then refuses anything but a regular file)."""
    path = folder / name
    if os.path.islink(path):
        raise CheckpointError(f"{path} is a symbolic link; a checkpoint's files are read from "
                              "its own folder only")
    return path


def _read_state(state_file: Path) -> dict[str, Any]:
    try:
        raw = read_regular(state_file, CheckpointError, "checkpoint state", STATE_LIMIT,
                           follow_links=False)
    except OSError as exc:
        raise CheckpointError(f"cannot read {state_file}: {exc.strerror or exc}") from None
    try:
        state = json.loads(raw)
    except (ValueError, RecursionError) as exc:
        raise CheckpointError(f"{state_file} is not valid JSON ({exc})") from None
    if not isinstance(state, dict):
        raise CheckpointError(f"{state_file} must hold a JSON object, not "
                              f"{type(state).__name__}")
    return state


def _check_state(state: dict[str, Any], state_file: Path, model_state: dict[str, Any]
                 ) -> tuple[GPTConfig, TrainConfig | None, CharTokenizer]:
    """The configurations and tokenizer of ``state``, each entry checked (see
    :func:`load_checkpoint`)."""
    def fail(entry: str, why: str) -> CheckpointError:
        return CheckpointError(f"{state_file}: '{entry}' {why}")

    for key in ("model_config", "tokenizer"):
        if key not in state:
            raise CheckpointError(f"{state_file} has no '{key}' entry")
    model_config = _parse(GPTConfig.from_dict, state["model_config"], fail, "model_config")
    train_data = state.get("train_config")
    train_config = _parse(TrainConfig.from_dict, train_data, fail, "train_config") \
        if train_data else None
    tokenizer = _parse(CharTokenizer.from_dict, state["tokenizer"], fail, "tokenizer")
    if tokenizer.vocab_size != model_config.vocab_size:
        raise fail("tokenizer", f"has {tokenizer.vocab_size} characters, the model_config's "
                                f"vocab_size is {model_config.vocab_size}")
    # the LM head is the token embedding (tied), listed again in a state dict
    stored = sum(int(np.prod(t.shape)) for key, t in model_state.items()
                 if isinstance(t, pb.Tensor) and key != TIED_HEAD)
    if stored != model_config.parameter_count:
        raise fail("model_config", f"describes a model of {model_config.parameter_count:,} "
                                   f"parameters; model.safetensors holds {stored:,}")
    if train_config is not None:
        if train_config.model != model_config:
            raise fail("train_config", "has a model configuration other than 'model_config'")
        problem = train_config.memory_problem()
        if problem is not None:
            raise fail("train_config", f"cannot be resumed here: {problem}")
    step = state.get("step", 0)
    if type(step) is not int or step < 0:
        raise fail("step", f"must be a non-negative integer, got {step!r}")
    for key in ("scheduler", "data_rng", "device_rng", "metrics"):
        if key in state and not isinstance(state[key], dict):
            raise fail(key, f"must be a JSON object, got {type(state[key]).__name__}")
    for key, value in state.get("metrics", {}).items():
        if value is not None and (isinstance(value, bool) or not isinstance(value, Real)):
            raise fail(f"metrics.{key}", f"must be a number or null, got {value!r}")
    elapsed = state.get("elapsed_s", 0.0)
    if isinstance(elapsed, bool) or not isinstance(elapsed, Real) or not elapsed >= 0:
        raise fail("elapsed_s", f"must be a non-negative number, got {elapsed!r}")
    for key, rng_state in _data_rng_states(state, fail):
        try:
            np.random.default_rng().bit_generator.state = rng_state
        except (TypeError, ValueError, KeyError, AttributeError, OverflowError) as exc:
            raise fail(key, f"is not a NumPy generator state ({type(exc).__name__}: "
                            f"{exc})") from None
    return model_config, train_config, tokenizer


def _data_rng_states(state: dict[str, Any], fail: Any) -> list[tuple[str, Any]]:
    """The data streams' generator states of ``state``, with the entry each came from."""
    found = [("data_rng", state["data_rng"])] if "data_rng" in state else []
    ranks = state.get("data_rng_ranks")
    if ranks is not None:
        if not isinstance(ranks, list):
            raise fail("data_rng_ranks", f"must be a list, got {type(ranks).__name__}")
        found += [(f"data_rng_ranks[{i}]", r) for i, r in enumerate(ranks)]
    return found


def _parse(build: Any, data: Any, fail: Any, entry: str) -> Any:
    """``build(data)``, its TypeError or ValueError as a CheckpointError naming ``entry``."""
    try:
        return build(data)
    except (TypeError, ValueError, KeyError, AttributeError) as exc:
        raise fail(entry, f"is not valid: {exc}") from None
