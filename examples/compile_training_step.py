"""Train the char-level GPT on TinyShakespeare with a compiled training step.

The whole step (forward, cross-entropy, backward and the AdamW update) is traced once by
``pullback.compiler.compile`` and replayed as one optimized graph: fused C loops, no per-op
Python dispatch. The script first runs a few steps twice, eagerly and compiled, from the same
weights, and shows that the losses agree; then it trains compiled and prints the time per step
of both and the speed-up.

    python examples/compile_training_step.py [--steps 300] [--data DIR] [--out DIR] [--smoke]

--data is TinyShakespeare's folder or input.txt (default: $PULLBACK_DATA, else
~/.cache/pullback). Writes metrics.csv (step, loss, milliseconds) to --out (default
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
from pullback.gpt import GPT, CharDataset, GPTConfig, tinyshakespeare_path
from pullback.gpt.tokenizer import CharTokenizer

from _example import data_set, example_parser, output_dir

CHECK_STEPS = 5  # steps run both ways from the same weights


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


def timed(step, batches) -> tuple[list[float], float]:
    """Losses of ``step`` on ``batches`` and its median wall time per step, in ms."""
    losses, times = [], []
    for x, y in batches:
        start = time.perf_counter()
        losses.append(step(x, y).item())
        times.append(time.perf_counter() - start)
    return losses, float(np.median(times)) * 1e3


def main(argv: list[str] | None = None) -> None:
    parser = example_parser(__doc__, __file__, data_help="TinyShakespeare's folder or input.txt "
                            "(default: $PULLBACK_DATA, else ~/.cache/pullback)")
    parser.add_argument("--steps", type=int, default=300)
    args = parser.parse_args(argv)
    out = Path(output_dir(args.out))
    with data_set():
        text = tinyshakespeare_path(download=False, root=args.data).read_text()
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
    first = [compiled(*b).item() for b in batches[:CHECK_STEPS]]  # traces, then replays
    compile_s = time.perf_counter() - start
    reference, eager_ms = timed(eager, batches[:CHECK_STEPS])
    agreement = max(abs(a - b) / abs(b) for a, b in zip(first, reference))
    print(f"first {CHECK_STEPS} steps, compiled vs eager: largest relative loss difference "
          f"{agreement:.2e} ({compiled.traces} traces, {compile_s:.1f} s including them)")
    losses, compiled_ms = timed(compiled, batches[CHECK_STEPS:])
    graph = compiled.entries[-1]
    print(f"graph: {len(graph.traced_graph.nodes)} traced nodes -> {len(graph.graph.nodes)} "
          "after the passes")
    for i in range(0, len(losses), max(len(losses) // 5, 1)):
        print(f"step {CHECK_STEPS + i:4d}  loss {losses[i]:.4f}")
    print(f"time per step: eager {eager_ms:.1f} ms, compiled {compiled_ms:.1f} ms, "
          f"speed-up {eager_ms / compiled_ms:.2f}x")
    with open(out / "metrics.csv", "w", newline="") as f:
        writer = csv.writer(f)
        writer.writerow(["step", "loss", "compiled_ms_median", "eager_ms_median"])
        for i, loss in enumerate(first + losses):
            writer.writerow([i, f"{loss:.6f}", f"{compiled_ms:.3f}", f"{eager_ms:.3f}"])
    print(f"wrote {out / 'metrics.csv'}")


if __name__ == "__main__":
    main()
