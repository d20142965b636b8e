"""XOR: the smallest problem a linear model cannot solve, learned by a 2-8-1 tanh network.

    python examples/xor.py [--steps 2000] [--seed 0] [--out DIR] [--smoke]

Writes loss.csv and loss.png to --out (default runs/xor/), prints the four predictions and one
JSON line.
"""

from __future__ import annotations

import json
import os

from tqdm import trange

import pullback as pb
from pullback import nn, optim

from _example import example_parser, output_dir
from _nn_example import plot, write_csv


def main(argv: list[str] | None = None) -> dict[str, object]:
    parser = example_parser(__doc__, __file__)
    parser.add_argument("--steps", type=int, default=2000)
    parser.add_argument("--lr", type=float, default=0.5)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    if args.smoke:
        args.steps = 200
    out = output_dir(args.out)

    pb.manual_seed(args.seed)
    x = pb.tensor([[0.0, 0.0], [0.0, 1.0], [1.0, 0.0], [1.0, 1.0]])
    y = pb.tensor([[0.0], [1.0], [1.0], [0.0]])
    model = nn.Sequential(nn.Linear(2, 8), nn.Tanh(), nn.Linear(8, 1))
    optimizer = optim.SGD(model.parameters(), lr=args.lr, momentum=0.9)
    loss_fn = nn.BCEWithLogitsLoss()
    rows = []
    for step in trange(1, args.steps + 1, desc="xor"):
        loss = loss_fn(model(x), y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        rows.append({"step": step, "loss": loss.item()})

    with pb.no_grad():
        probs = model(x).sigmoid().numpy().ravel()
    for inputs, p in zip(x.tolist(), probs):
        print(f"xor{tuple(int(v) for v in inputs)} -> {p:.4f}")
    write_csv(os.path.join(out, "loss.csv"), rows)
    plot(os.path.join(out, "loss.png"), [r["step"] for r in rows],
         {"BCE loss": [r["loss"] for r in rows]}, "step", "XOR, 2-8-1 tanh (pullback)", log_y=True)
    correct = bool(((probs > 0.5) == (y.numpy().ravel() > 0.5)).all())
    summary = {"final_loss": rows[-1]["loss"], "probabilities": [round(float(p), 4) for p in probs],
               "all_correct": correct, "out": out}
    print(json.dumps(summary))
    return summary


if __name__ == "__main__":
    main()
