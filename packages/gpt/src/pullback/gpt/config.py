"""Model and training configurations, with the named presets of the CLI."""

from __future__ import annotations

import os
from dataclasses import asdict, dataclass, field, fields, replace
from numbers import Real
from typing import Any


def _require(config: Any, kinds: dict[str, tuple[type, ...]]) -> None:
    """Raise TypeError unless each named field of ``config`` has one of its ``kinds`` (a bool
    is not taken for a number, as JSON keeps them apart)."""
    for name, accepted in kinds.items():
        value = getattr(config, name)
        if (isinstance(value, bool) and bool not in accepted) or not isinstance(value, accepted):
            names = " or ".join("None" if k is type(None) else k.__name__ for k in accepted)
            raise TypeError(f"{type(config).__name__}.{name} must be {names}, got "
                            f"{type(value).__name__} {value!r}")


def _from_dict(cls: type, data: Any) -> dict[str, Any]:
    """The entries of ``data`` that are fields of ``cls`` (others, from newer versions, are
    ignored); TypeError when ``data`` is not a dict."""
    if not isinstance(data, dict):
        raise TypeError(f"a {cls.__name__} is read from a dict, got {type(data).__name__}")
    known = {f.name for f in fields(cls)}
    return {k: v for k, v in data.items() if k in known}


@dataclass(frozen=True)
class GPTConfig:
    """Shape of the model.

    Attributes:
        vocab_size: number of tokens (characters).
        block_size: longest context the model sees.
        n_layer: transformer blocks.
        n_head: attention heads per block.
        n_embd: width of the residual stream (divisible by ``n_head``).
        dropout: dropout probability (embeddings, attention, residual branches).
        bias: biases in Linear and LayerNorm layers (GPT-2 has them; nanoGPT's char model not).
        reversible: reversible blocks (pullback-avyaya; attention and MLP as the two halves of
            an additive coupling over a duplicated stream): the same parameters, activation
            memory that does not grow with ``n_layer``, one more forward pass of every layer
            per step (1.5-1.8x the step time as measured in docs/avyaya.md).
    """

    vocab_size: int = 65
    block_size: int = 64
    n_layer: int = 4
    n_head: int = 4
    n_embd: int = 128
    dropout: float = 0.0
    bias: bool = False
    reversible: bool = False

    def __post_init__(self) -> None:
        _require(self, {"vocab_size": (int,), "block_size": (int,), "n_layer": (int,),
                        "n_head": (int,), "n_embd": (int,), "dropout": (Real,),
                        "bias": (bool,), "reversible": (bool,)})
        if self.n_embd % self.n_head:
            raise ValueError(f"n_embd ({self.n_embd}) must be divisible by n_head ({self.n_head})")
        for name in ("vocab_size", "block_size", "n_layer", "n_head", "n_embd"):
            if getattr(self, name) <= 0:
                raise ValueError(f"{name} must be positive, got {getattr(self, name)}")
        if not 0.0 <= self.dropout < 1.0:
            raise ValueError(f"dropout must be in [0, 1), got {self.dropout}")

    @property
    def parameter_count(self) -> int:
        """The number of parameters of a GPT of this shape (the tied LM head once), computed
        without building it: each block holds 12 n_embd^2 weights in its linear layers and
        two LayerNorm weights (plus 11 n_embd biases with ``bias``)."""
        e = self.n_embd
        per_block = 12 * e * e + 2 * e + (11 * e if self.bias else 0)
        final_norm = 2 * e if self.bias else e
        return (self.vocab_size + self.block_size) * e + self.n_layer * per_block + final_norm

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> GPTConfig:
        """The configuration :meth:`to_dict` wrote (TypeError or ValueError when ``data`` does
        not describe a valid one)."""
        return cls(**_from_dict(cls, data))


SCHEDULES = ("cosine", "wsd")


@dataclass(frozen=True)
class TrainConfig:
    """How to train (nanoGPT's names and defaults for the char-level Shakespeare model)."""

    model: GPTConfig = field(default_factory=GPTConfig)
    batch_size: int = 12
    steps: int = 2000
    lr: float = 1e-3
    min_lr: float = 1e-4
    warmup: int = 100
    schedule: str = "cosine"  # "cosine" (nanoGPT's) or "wsd" (warmup, stable, decay)
    decay_steps: int | None = None  # the length of wsd's decay; None: a fifth of the steps
    weight_decay: float = 0.1
    beta1: float = 0.9
    beta2: float = 0.99
    grad_clip: float = 1.0
    eval_interval: int = 250
    eval_iters: int = 20
    checkpoint_interval: int = 500
    seed: int = 1337

    def __post_init__(self) -> None:
        if not isinstance(self.model, GPTConfig):
            raise TypeError(f"TrainConfig.model must be a GPTConfig, got {type(self.model).__name__}")
        _require(self, {"batch_size": (int,), "steps": (int,), "lr": (Real,), "min_lr": (Real,),
                        "warmup": (int,), "schedule": (str,), "decay_steps": (int, type(None)),
                        "weight_decay": (Real,), "beta1": (Real,), "beta2": (Real,),
                        "grad_clip": (Real,), "eval_interval": (int,), "eval_iters": (int,),
                        "checkpoint_interval": (int,), "seed": (int,)})
        if self.schedule not in SCHEDULES:
            raise ValueError(f"schedule must be one of {SCHEDULES}, got {self.schedule!r}")
        if self.decay_steps is not None and self.schedule != "wsd":
            raise ValueError(f"decay_steps ({self.decay_steps}) applies to the wsd schedule only, "
                             f"not to {self.schedule!r}")
        for name in ("steps", "batch_size", "eval_interval", "eval_iters", "checkpoint_interval"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be at least 1, got {getattr(self, name)}")
        if not 0 <= self.warmup < self.steps:
            raise ValueError(f"warmup ({self.warmup}) must be at least 0 and shorter than the "
                             f"run's {self.steps} steps")
        if not self.lr > 0 or not 0 <= self.min_lr <= self.lr:
            raise ValueError(f"need 0 <= min_lr <= lr and lr > 0, got lr {self.lr}, "
                             f"min_lr {self.min_lr}")
        if self.schedule == "wsd" and not 1 <= self.decay_length <= self.steps - self.warmup:
            raise ValueError(f"wsd's decay ({self.decay_length} steps) must fit after the "
                             f"warmup: between 1 and steps - warmup = {self.steps - self.warmup}")

    @property
    def decay_length(self) -> int:
        """wsd's decay length: ``decay_steps``, by default a fifth of the run."""
        return self.decay_steps if self.decay_steps is not None else max(1, self.steps // 5)

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["model"] = self.model.to_dict()
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> TrainConfig:
        """The configuration :meth:`to_dict` wrote (TypeError or ValueError when ``data`` does
        not describe a valid one)."""
        values = _from_dict(cls, data)
        if "model" not in values:
            raise ValueError("a TrainConfig needs its 'model' entry")
        return cls(**{**values, "model": GPTConfig.from_dict(values["model"])})

    def estimated_memory(self) -> int:
        """An upper estimate of the bytes one training step takes: parameters, gradients and
        AdamW's two moments (4 float32 copies), and the activations kept for backward
        (Korthikanti et al. 2022: 34 n_embd + 5 n_head block_size values per token and layer,
        without flash attention; float32; plus the logits and their gradient)."""
        m = self.model
        tokens = self.batch_size * m.block_size
        per_token = m.n_layer * (34 * m.n_embd + 5 * m.n_head * m.block_size) + 4 * m.vocab_size
        return 16 * m.parameter_count + 4 * tokens * per_token

    def memory_problem(self) -> str | None:
        """Why a step of this configuration cannot run on this machine (its estimate is more
        than the machine's memory), or None. Checked before anything is allocated, so that a
        configuration read from a file fails in one line, not in the allocator."""
        needed = self.estimated_memory()
        try:
            physical = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
        except (AttributeError, ValueError, OSError):  # a system that does not say
            return None
        if needed <= physical:
            return None
        return (f"a training step of this configuration needs about {needed / 2**30:.1f} GiB "
                f"(batch_size {self.batch_size}, block_size {self.model.block_size}, n_layer "
                f"{self.model.n_layer}, n_embd {self.model.n_embd}), more than this machine's "
                f"{physical / 2**30:.1f} GiB")

    def with_model(self, **overrides: Any) -> TrainConfig:
        """A copy whose model configuration has the given fields replaced."""
        return replace(self, model=replace(self.model, **overrides))

    def with_overrides(self, **overrides: Any) -> TrainConfig:
        """A copy with the given fields replaced (``None`` values are ignored)."""
        return replace(self, **{k: v for k, v in overrides.items() if v is not None})


PRESETS: dict[str, TrainConfig] = {
    # nanoGPT's CPU recipe for shakespeare_char (its README reports val loss 1.88 in PyTorch).
    "nano-cpu": TrainConfig(
        model=GPTConfig(block_size=64, n_layer=4, n_head=4, n_embd=128, dropout=0.0),
        batch_size=12, steps=2000, lr=1e-3, min_lr=1e-4, warmup=100,
    ),
    # A longer CPU run: deeper and wider, longer context (about 2 hours on 2 cores).
    "small": TrainConfig(
        model=GPTConfig(block_size=128, n_layer=6, n_head=6, n_embd=192, dropout=0.1),
        batch_size=32, steps=4000, lr=1e-3, min_lr=1e-4, warmup=200, eval_interval=250,
        checkpoint_interval=250,
    ),
    # nanoGPT's GPU configuration for shakespeare_char.
    "shakespeare": TrainConfig(
        model=GPTConfig(block_size=256, n_layer=6, n_head=6, n_embd=384, dropout=0.2),
        batch_size=64, steps=5000, lr=1e-3, min_lr=1e-4, warmup=100, eval_interval=250,
        eval_iters=200,
    ),
}
