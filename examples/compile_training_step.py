"""Train the char-level GPT on TinyShakespeare with a compiled training step.

The whole step (forward, cross-entropy, backward and the AdamW update) is traced once by
``pullback.compiler.compile`` and replayed as one optimized graph: fused C loops, no per-op
Python dispatch. Two twins train from the same weights on the same batches, one eager and one
compiled, their steps alternating (so that a busy machine slows both alike); the script prints
how far their losses drift apart, the median time per step of each and the speed-up.

    python examples/compile_training_step.py [--steps 300] [--data DIR] [--out DIR] [--smoke]

--data is TinyShakespeare's folder or input.txt (default: the copy embedded in
pullback-gpt). Writes metrics.csv (step, both losses, milliseconds) to --out (default
runs/compile_training_step/). The timings are wall clock on whatever else the machine runs.
"""

from __future__ import annotations

import csv
import time
from pathlib import Path

import numpy as np

import pullback as pb
import pullback.compiler as pc
import pullback.optim as optim
from pullback.gpt import GPT, CharDataset, GPTConfig, tinyshakespeare
from pullback.gpt.tokenizer import CharTokenizer

from _example import data_set, example_parser, output_dir

CHECK_STEPS = 5  # the compiled twin traces in its first steps: left out of its timing


def make_step(config: GPTConfig):
    """A fresh model (seeded: twins start equal), its AdamW, and the training step."""
    pb.manual_seed(0)
    model = GPT(config)
    opt = optim.AdamW(model.parameters(), lr=1e-3, weight_decay=0.1)

    def step(x, y):
        _, loss = model(x, y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        return loss

    return step


def train_both(eager, compiled, batches) -> tuple[list[float], list[float], float, float]:
    """Losses of both twins, step by step alternating, and their median wall time per step
    (ms; the compiled one's first steps, which trace, left out)."""
    losses: tuple[list[float], list[float]] = ([], [])
    times: tuple[list[float], list[float]] = ([], [])
    for x, y in batches:
        for side, step in enumerate((eager, compiled)):
            start = time.perf_counter()
            losses[side].append(step(x, y).item())
            times[side].append(time.perf_counter() - start)
    eager_ms = float(np.median(times[0])) * 1e3
    compiled_ms = float(np.median(times[1][CHECK_STEPS:])) * 1e3
    return losses[0], losses[1], eager_ms, compiled_ms


def main(argv: list[str] | None = None) -> None:
    parser = example_parser(__doc__, __file__, data_help="TinyShakespeare's folder or input.txt "
                            "(default: the copy embedded in pullback-gpt)")
    parser.add_argument("--steps", type=int, default=300)
    args = parser.parse_args(argv)
    out = Path(output_dir(args.out))
    with data_set():
        text = tinyshakespeare(root=args.data).text
    tokenizer = CharTokenizer.from_text(text)
    data = CharDataset(np.asarray(tokenizer.encode(text), dtype=np.uint16))
    if args.smoke:
        config = GPTConfig(vocab_size=len(tokenizer.chars), block_size=32, n_layer=2, n_head=2,
                           n_embd=32, dropout=0.0, bias=False)
        steps, batch_size = 20, 8
    else:
        config = GPTConfig(vocab_size=len(tokenizer.chars), block_size=64, n_layer=4, n_head=4,
                           n_embd=128, dropout=0.0, bias=False)
        steps, batch_size = args.steps, 32
    rng = np.random.default_rng(0)
    batches = [data.batch("train", batch_size, config.block_size, rng) for _ in range(steps)]

    eager = make_step(config)
    compiled = pc.compile(make_step(config), fullgraph=True)
    start = time.perf_counter()
    reference, losses, eager_ms, compiled_ms = train_both(eager, compiled, batches)
    total_s = time.perf_counter() - start
    drift = [abs(a - b) / abs(b) for a, b in zip(losses, reference)]
    print(f"compiled vs eager: largest relative loss difference {max(drift):.2e} over {steps} "
          f"steps (first {CHECK_STEPS}: {max(drift[:CHECK_STEPS]):.2e}; {compiled.traces} "
          f"traces; {total_s:.1f} s for both twins)")
    graph = compiled.entries[-1]
    print(f"graph: {len(graph.traced_graph.nodes)} traced nodes -> {len(graph.graph.nodes)} "
          "after the passes")
    for i in range(0, steps, max(steps // 5, 1)):
        print(f"step {i:4d}  loss eager {reference[i]:.4f}  compiled {losses[i]:.4f}")
    print(f"time per step: eager {eager_ms:.1f} ms, compiled {compiled_ms:.1f} ms, "
          f"speed-up {eager_ms / compiled_ms:.2f}x")
    with open(out / "metrics.csv", "w", newline="") as f:
        writer = csv.writer(f)
        writer.writerow(["step", "loss", "eager_loss", "compiled_ms_median", "eager_ms_median"])
        for i, (loss, ref) in enumerate(zip(losses, reference)):
            writer.writerow([i, f"{loss:.6f}", f"{ref:.6f}", f"{compiled_ms:.3f}",
                             f"{eager_ms:.3f}"])
    print(f"wrote {out / 'metrics.csv'}")


if __name__ == "__main__":
    main()
