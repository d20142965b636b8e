"""The ported corpus: every program, where it comes from, how to run it (a small configuration
for the tests, a larger one for docs/porting.md) and how its metrics are compared.

Tolerances: each metric has a floor, absolute (accuracies, errors, rewards) or relative to
torch's value (losses, and counts such as batches to converge). The floors are set from
torch's own run-to-run noise: the spread (max - min) of torch's metric over six seeds in the
small configuration, measured with ``compare.py --noise`` (docs/porting/noise.jsonl), times
1.5 and rounded up. A comparison with several seeds also widens the tolerance to torch's spread
in that run.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

HERE = Path(__file__).resolve().parent


@dataclass(frozen=True)
class Step:
    """One command of a program: a script (relative to ported/), its arguments in the small
    and the full configuration, and how it takes a seed ("{}" is replaced; None: no seed)."""

    script: str
    smoke: tuple[str, ...] = ()
    full: tuple[str, ...] = ()
    seed: str | None = "--seed={}"


@dataclass(frozen=True)
class Program:
    """A program of the corpus and the metrics its last step prints (a JSON line)."""

    name: str
    kind: str
    origin: str
    steps: tuple[Step, ...]
    absolute: dict[str, float] = field(default_factory=dict)
    relative: dict[str, float] = field(default_factory=dict)
    needs: tuple[str, ...] = ("sklearn",)  # modules both runs import (skipped without them)

    @property
    def floors(self) -> dict[str, tuple[str, float]]:
        """metric -> ("abs" or "rel", floor)."""
        return {**{m: ("abs", f) for m, f in self.absolute.items()},
                **{m: ("rel", f) for m, f in self.relative.items()}}


EXAMPLES = "https://github.com/pytorch/examples/tree/main/"

PROGRAMS: list[Program] = [
    # -- written for this repository (earlier rounds) -------------------------------------------
    Program("mlp_digits", "vision", "house", (Step(
        "mlp_digits.py", ("--epochs", "3", "--workers", "2"), ("--workers", "2"), "--seed={}"),),
        absolute={"test_accuracy": 0.14}, relative={"test_loss": 0.22}),
    Program("cnn_digits", "vision", "house", (Step("cnn_digits.py", ("--epochs", "2")),),
            absolute={"test_accuracy": 0.027}, relative={"test_loss": 0.33}),
    Program("vae_digits", "generative", "house", (Step("vae_digits.py", ("--epochs", "3")),),
            relative={"test_loss": 0.0093}),
    Program("lstm_lm", "language", "house", (Step(
        "lstm_lm.py", ("--steps", "30", "--chars", "30000")),), relative={"val_loss": 0.06},
        needs=()),
    # -- reproductions of open-source programs ---------------------------------------------------
    Program("mnist", "vision", EXAMPLES + "mnist", (Step(
        "mnist.py", ("--epochs", "1", "--train-size", "384", "--test-batch-size", "297"),
        ("--epochs", "3")),), absolute={"test_accuracy": 0.28}, relative={"test_loss": 0.55}),
    Program("mnist_hogwild", "vision", EXAMPLES + "mnist_hogwild", (Step(
        "mnist_hogwild/main.py", ("--epochs", "1", "--train-size", "512", "--lr", "0.05"),
        ("--epochs", "4", "--lr", "0.05")),),
        absolute={"test_accuracy": 0.39}, relative={"test_loss": 0.096}),
    Program("mnist_rnn", "vision", EXAMPLES + "mnist_rnn", (Step(
        "mnist_rnn.py", ("--epochs", "2", "--train-size", "768", "--lr", "1.0"),
        ("--epochs", "4", "--lr", "1.0")),),
        absolute={"test_accuracy": 0.25}, relative={"test_loss": 0.033}),
    Program("mnist_forward_forward", "vision", EXAMPLES + "mnist_forward_forward", (Step(
        "mnist_forward_forward.py", ("--epochs", "200", "--train-size", "500", "--hidden", "200"),
        ("--epochs", "500", "--hidden", "500")),),
        absolute={"train_error": 0.28, "test_error": 0.24}),
    Program("siamese_network", "vision", EXAMPLES + "siamese_network", (Step(
        "siamese_network.py", ("--epochs", "2", "--train-size", "512"), ("--epochs", "3")),),
        absolute={"test_accuracy": 0.22}, relative={"test_loss": 0.096}),
    Program("super_resolution", "vision", EXAMPLES + "super_resolution", (
        Step("super_resolution/main.py",
             ("--nEpochs", "1", "--train-size", "256", "--batchSize", "32", "--lr", "0.001"),
             ("--nEpochs", "3", "--lr", "0.001")),
        Step("super_resolution/super_resolve.py", ("--model", "model_epoch_1.pth"),
             ("--model", "model_epoch_3.pth"), None)),
        absolute={"test_psnr": 2.9, "image_psnr": 3.8}, relative={"train_loss": 0.74}),
    Program("dcgan", "generative", EXAMPLES + "dcgan", (Step(
        "dcgan.py", ("--ngf", "8", "--ndf", "8", "--nz", "16", "--batchSize", "32", "--niter",
                     "1", "--max-iters", "10"),
        ("--ngf", "16", "--ndf", "16", "--nz", "32", "--niter", "2")),),
        absolute={"d_x": 0.049, "d_g_z": 0.094}, relative={"loss_d": 0.38, "loss_g": 0.26}),
    Program("vae", "generative", EXAMPLES + "vae", (Step(
        "vae.py", ("--epochs", "1", "--train-size", "512"), ("--epochs", "5")),),
        relative={"train_loss": 0.0088, "test_loss": 0.028}),
    Program("word_language_model", "language", EXAMPLES + "word_language_model", (Step(
        "word_language_model/main.py",
        ("--epochs", "2", "--emsize", "32", "--nhid", "32", "--max-batches", "20"),
        ("--epochs", "4", "--emsize", "64", "--nhid", "64")),),
        relative={"val_loss": 0.03, "test_loss": 0.026}),
    Program("word_language_model_transformer", "language", EXAMPLES + "word_language_model", (
        Step("word_language_model/main.py",
             ("--model", "Transformer", "--lr", "5", "--epochs", "2", "--emsize", "32", "--nhid",
              "32", "--max-batches", "20"),
             ("--model", "Transformer", "--lr", "5", "--epochs", "4", "--emsize", "64",
              "--nhid", "64")),),
        relative={"val_loss": 0.074, "test_loss": 0.13}),
    Program("time_sequence_prediction", "time series", EXAMPLES + "time_sequence_prediction", (
        Step("time_sequence_prediction/generate_sine_wave.py", ("--length", "60"),
             ("--length", "200"), None),
        Step("time_sequence_prediction/train.py", ("--steps", "1", "--future", "20"),
             ("--steps", "4", "--future", "100"))),
        relative={"train_loss": 0.12, "test_loss": 1.6}, absolute={"prediction_std": 0.39},
        needs=()),
    Program("regression", "regression", EXAMPLES + "regression", (Step("regression.py"),),
            relative={"batches": 1.8}, absolute={"coefficient_error": 0.084}, needs=()),
    Program("reinforce", "reinforcement learning", EXAMPLES + "reinforcement_learning", (Step(
        "reinforce.py", ("--episodes", "40"), ("--episodes", "150")),),
        absolute={"mean_reward": 49, "running_reward": 54}, needs=("gymnasium",)),
    Program("actor_critic", "reinforcement learning", EXAMPLES + "reinforcement_learning", (
        Step("actor_critic.py", ("--episodes", "40"), ("--episodes", "150")),),
        absolute={"mean_reward": 90, "running_reward": 130}, needs=("gymnasium",)),
    Program("gcn", "graph", EXAMPLES + "gcn", (Step(
        "gcn.py", ("--epochs", "50"), ("--epochs", "200")),),
        absolute={"test_accuracy": 0.061}, relative={"test_loss": 0.76}, needs=()),
    Program("gat", "graph", EXAMPLES + "gat", (Step(
        "gat.py", ("--epochs", "20", "--hidden-dim", "16", "--num-heads", "4"),
        ("--epochs", "100", "--hidden-dim", "32", "--num-heads", "4")),),
        absolute={"test_accuracy": 0.06}, relative={"test_loss": 0.024}, needs=()),
    Program("nanogpt", "language", "https://github.com/karpathy/nanoGPT", (
        Step("nanogpt/prepare.py", seed=None),
        Step("nanogpt/train.py", (
            "--device=cpu", "--compile=False", "--eval_iters=5", "--eval_interval=30",
            "--log_interval=10", "--block_size=32", "--batch_size=8", "--n_layer=2",
            "--n_head=2", "--n_embd=64", "--max_iters=30", "--lr_decay_iters=30",
            "--warmup_iters=5", "--dropout=0.0", "--gradient_accumulation_steps=1",
            "--learning_rate=1e-3"),
            ("--device=cpu", "--compile=False", "--eval_iters=20", "--eval_interval=250",
             "--log_interval=50", "--block_size=64", "--batch_size=12", "--n_layer=4",
             "--n_head=4", "--n_embd=128", "--max_iters=250", "--lr_decay_iters=250",
             "--warmup_iters=20", "--dropout=0.0", "--gradient_accumulation_steps=1",
             "--learning_rate=1e-3")),
        Step("nanogpt/sample.py", ("--device=cpu", "--num_samples=2", "--max_new_tokens=50"),
             ("--device=cpu", "--num_samples=4", "--max_new_tokens=200"))),
        relative={"train_loss": 0.058, "val_loss": 0.058},
        absolute={"letters_or_spaces": 0.2, "drawn": 0.0}, needs=()),
    Program("mingpt", "language", "https://github.com/karpathy/minGPT", (Step(
        "mingpt/chargpt.py",
        ("--model.model_type=gpt-nano", "--data.block_size=32", "--trainer.batch_size=16",
         "--trainer.max_iters=40", "--trainer.num_workers=0", "--system.sample_chars=20"),
        ("--model.model_type=gpt-micro", "--data.block_size=64", "--trainer.batch_size=32",
         "--trainer.max_iters=300", "--trainer.num_workers=2", "--system.sample_chars=100"),
        "--system.seed={}"),), relative={"train_loss": 0.022}, needs=()),
    Program("char_transformer", "language", "https://github.com/karpathy/ng-video-lecture", (
        Step("char_transformer.py",
             ("--batch_size=16", "--block_size=32", "--max_iters=60", "--eval_interval=1000",
              "--eval_iters=10", "--n_embd=64", "--n_head=4", "--n_layer=2",
              "--generate_chars=50"),
             ("--batch_size=32", "--block_size=64", "--max_iters=400", "--eval_interval=200",
              "--eval_iters=20", "--n_embd=96", "--n_head=4", "--n_layer=3", "--dropout=0.1",
              "--generate_chars=200")),),
        relative={"train_loss": 0.049, "val_loss": 0.031}),
    Program("char_rnn_classification", "language",
            "https://pytorch.org/tutorials/intermediate/char_rnn_classification_tutorial.html",
            (Step("char_rnn_classification.py", ("--epochs", "10", "--per-language", "60"),
                  ("--epochs", "20"), "--seed={}"),),
            absolute={"test_accuracy": 0.2}, relative={"train_loss": 0.76}, needs=()),
]

BY_NAME = {p.name: p for p in PROGRAMS}
