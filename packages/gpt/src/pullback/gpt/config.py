"""Model and training configurations, with the named presets of the CLI."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field, fields, replace
from typing import Any


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
        if self.n_embd % self.n_head:
            raise ValueError(f"n_embd ({self.n_embd}) must be divisible by n_head ({self.n_head})")
        for name in ("vocab_size", "block_size", "n_layer", "n_head", "n_embd"):
            if getattr(self, name) <= 0:
                raise ValueError(f"{name} must be positive, got {getattr(self, name)}")
        if not 0.0 <= self.dropout < 1.0:
            raise ValueError(f"dropout must be in [0, 1), got {self.dropout}")

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> GPTConfig:
        known = {f.name for f in fields(cls)}
        return cls(**{k: v for k, v in data.items() if k in known})


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
        data = dict(data)
        model = GPTConfig.from_dict(data.pop("model"))
        known = {f.name for f in fields(cls)}
        return cls(model=model, **{k: v for k, v in data.items() if k in known})

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
