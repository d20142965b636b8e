"""The glass box on a small model: graph views, telemetry, anomaly mode, gradient explanations.

    python examples/glass_box_debugging.py [--out DIR] [--smoke]

Needs pullback-nn; a few seconds on a CPU (--smoke runs the same, it is already small). Writes
graph.txt (the ASCII view), graph.dot, graph.svg (when Graphviz's ``dot`` is installed) and
trace.json to --out (default runs/glass_box_debugging/).
"""

from __future__ import annotations

import math
import shutil
from pathlib import Path

import numpy as np

import pullback as pb
import pullback.debug as debug
from pullback import nn
from pullback.errors import AnomalyError
from pullback.nn import functional as F

from _example import example_parser, output_dir


def section(title: str) -> None:
    print(f"\n=== {title} " + "=" * max(0, 72 - len(title)))


class MLP(nn.Module):
    def __init__(self, widths: list[int]) -> None:
        super().__init__()
        self.layers = nn.ModuleList(nn.Linear(a, b) for a, b in zip(widths, widths[1:]))

    def forward(self, x: pb.Tensor) -> pb.Tensor:
        for layer in self.layers[:-1]:
            x = F.relu(layer(x))
        return self.layers[-1](x)


def main(argv: list[str] | None = None) -> None:
    args = example_parser(__doc__, __file__).parse_args(argv)
    out_dir = Path(output_dir(args.out))
    pb.manual_seed(0)
    rng = np.random.default_rng(0)
    x = pb.tensor(rng.normal(size=(64, 16)).astype(np.float32))
    y = pb.tensor(rng.integers(0, 4, 64))
    model = MLP([16, 32, 4])

    section("1. The graph behind a loss (visualize, to_dot)")
    loss = F.cross_entropy(model(x), y)
    ascii_view = debug.visualize(loss, names=model)
    (out_dir / "graph.txt").write_text(ascii_view + "\n", encoding="utf-8")
    if shutil.which("dot"):  # Graphviz renders the DOT source to an SVG
        debug.to_dot(loss, out_dir / "graph.svg", names=model)
        print(f"Graphviz: {out_dir / 'graph.svg'} (source {out_dir / 'graph.dot'})")
    else:  # without Graphviz the ASCII view above is the picture; the DOT source is kept
        debug.to_dot(loss, out_dir / "graph.dot", names=model)
        print(f"Graphviz is not installed (apt-get install graphviz renders it): the ASCII view "
              f"above is in {out_dir / 'graph.txt'}, the DOT source in {out_dir / 'graph.dot'}")

    section("2. Telemetry of one training step (profile)")
    with debug.profile() as prof:
        with debug.record_function("train_step"):
            loss = F.cross_entropy(model(x), y)
            loss.backward()
    print(prof.table(row_limit=12))
    prof.export_chrome_trace(out_dir / "trace.json")
    print(f"Chrome trace -> {out_dir / 'trace.json'} (open in ui.perfetto.dev)")

    section("3. Anomaly mode: where does the NaN come from?")
    with debug.detect_anomaly(), np.errstate(invalid="ignore"):  # (NumPy's own warning off)
        logits = model(x)
        try:
            # A hand-written "log-likelihood" with a planted bug: log of raw logits.
            logits.log().mean()
        except AnomalyError as err:
            print(f"AnomalyError: {err}")
    # A regularizer that keeps the first layer near its starting point: |w - w0|. At the start
    # w == w0, and the gradient of a norm at 0 is 0/0.
    w0 = model.layers[0].weight.detach().clone()
    try:
        with debug.detect_anomaly(), np.errstate(divide="ignore"):
            drift = (model.layers[0].weight - w0).square().sum().sqrt()
            (F.cross_entropy(model(x), y) + 0.1 * drift).backward()
    except AnomalyError as err:
        print(f"\nAnomalyError: {err}")

    section("4. Explaining gradients (watch + explain_gradients)")
    deep = nn.Sequential(*[m for _ in range(8) for m in (nn.Linear(16, 16), nn.Sigmoid())],
                         nn.Linear(16, 4))
    with pb.no_grad():  # the classic mistake: a deep stack of sigmoids
        for layer in deep:
            if isinstance(layer, nn.Linear):
                layer.weight.copy_(pb.randn(*layer.weight.shape) / math.sqrt(16))
    with debug.watch(deep) as w:
        F.cross_entropy(deep(x), y).backward()
    print(w.explain(lr=0.1))

    dead = nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 4))
    with pb.no_grad():
        dead[0].bias.fill_(-8.0)  # planted: every unit of the first layer starts dead
    with debug.watch(dead) as w:
        F.cross_entropy(dead(x), y).backward()
    print()
    print(w.explain(lr=0.1))


if __name__ == "__main__":
    main()
