"""Per-sample gradients and Hessian-vector products with pullback.func, on Fashion-MNIST.

    python examples/per_sample_gradients.py [--batch 256] [--steps 100] [--data DIR] [--out DIR]
    python examples/per_sample_gradients.py --smoke

Trains an MLP (784-128-10) for a few SGD steps, then on one batch: every sample's gradient
with vmap(grad(loss)) in one batched pass (checked against a per-sample loop of ordinary
backward passes), their norms and the clipped mean gradient of DP-SGD; and a Hessian-vector
product by forward over reverse, jvp(grad(loss)), checked against reverse over reverse. Writes
per_sample_norms.csv and norms.png to --out (default runs/per_sample_gradients/) and prints one
JSON line.
"""

from __future__ import annotations

import json
import os
import time

import numpy as np

import pullback as pb
import pullback.nn.functional as F
from pullback import nn, optim
from pullback.func import functional_call, grad, jvp, vmap

from _example import example_parser, output_dir
from _nn_example import FASHION_MNIST_HELP, fashion_mnist, write_csv


def main(argv: list[str] | None = None) -> dict[str, object]:
    parser = example_parser(__doc__, __file__, FASHION_MNIST_HELP)
    parser.add_argument("--batch", type=int, default=256)
    parser.add_argument("--steps", type=int, default=100)
    parser.add_argument("--clip", type=float, default=1.0, help="DP-SGD's per-sample clip norm")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    if args.smoke:
        args.batch, args.steps = 32, 10
    out = output_dir(args.out)
    images, labels = fashion_mnist(train=True, root=args.data)
    x_all, y_all = images.reshape(-1, 784), labels

    pb.manual_seed(args.seed)
    model = nn.Sequential(nn.Linear(784, 128), nn.ReLU(), nn.Linear(128, 10))
    opt = optim.SGD(model.parameters(), lr=0.1)
    rng = np.random.default_rng(args.seed)
    for _ in range(args.steps):  # a little training, so that the gradients are not those of init
        idx = pb.tensor(rng.integers(0, x_all.shape[0], 128))
        opt.zero_grad()
        F.cross_entropy(model(x_all[idx]), y_all[idx]).backward()
        opt.step()

    params = {k: v.detach() for k, v in model.named_parameters()}
    idx = pb.tensor(rng.integers(0, x_all.shape[0], args.batch))
    x, y = x_all[idx], y_all[idx]

    def loss(p: dict, xi: pb.Tensor, yi: pb.Tensor) -> pb.Tensor:
        """The loss of one sample (vmap adds the batch)."""
        return F.cross_entropy(functional_call(model, p, (xi.unsqueeze(0),)), yi.unsqueeze(0))

    # 1. Per-sample gradients: one batched forward and backward pass.
    start = time.perf_counter()
    per_sample = vmap(grad(loss), in_dims=(None, 0, 0))(params, x, y)
    seconds = time.perf_counter() - start
    worst = 0.0
    for i in range(min(4, args.batch)):  # the same as ordinary backward passes, sample by sample
        model.zero_grad()
        F.cross_entropy(model(x[i:i + 1]), y[i:i + 1]).backward()
        for k, p in model.named_parameters():
            worst = max(worst, float(np.abs(per_sample[k].numpy()[i] - p.grad.numpy()).max()))
    norms = pb.sqrt(sum((g.reshape(args.batch, -1) ** 2).sum(axis=1) for g in per_sample.values()))
    scale = pb.clamp(args.clip / (norms + 1e-12), max=1.0)  # DP-SGD: clip each sample's gradient
    clipped = {k: (g * scale.reshape((-1,) + (1,) * (g.ndim - 1))).mean(axis=0)
               for k, g in per_sample.items()}

    # 2. A Hessian-vector product, forward over reverse (no Hessian is formed).
    batch_loss = lambda p: vmap(loss, in_dims=(None, 0, 0))(p, x, y).mean()  # noqa: E731
    v = {k: pb.tensor(rng.standard_normal(p.shape).astype(np.float32)) for k, p in params.items()}
    _, hvp = jvp(grad(batch_loss), (params,), (v,))
    # The same product by reverse over reverse (the gradient of <grad, v>), an independent path.
    def grad_dot_v(p: dict) -> pb.Tensor:
        g = grad(batch_loss)(p)
        return sum((g[k] * v[k]).sum() for k in g)

    hvp_rr = grad(grad_dot_v)(params)
    rr_error = max(float(np.abs(hvp[k].numpy() - hvp_rr[k].numpy()).max()) for k in params)
    hvp_scale = max(float(np.abs(hvp[k].numpy()).max()) for k in params)

    norm_values = norms.numpy()
    write_csv(os.path.join(out, "per_sample_norms.csv"),
              [{"sample": i, "label": int(y[i].item()), "grad_norm": float(n)}
               for i, n in enumerate(norm_values)])
    _histogram(os.path.join(out, "norms.png"), norm_values, args.clip)
    summary = {
        "batch": args.batch, "per_sample_seconds": round(seconds, 4),
        "max_abs_diff_vs_loop": worst,
        "grad_norm_median": float(np.median(norm_values)),
        "clipped_fraction": float((norm_values > args.clip).mean()),
        "clipped_mean_grad_norm": float(np.sqrt(sum(float((g ** 2).sum().item())
                                                    for g in clipped.values()))),
        "hvp_max_abs": hvp_scale, "hvp_max_abs_diff_vs_reverse_over_reverse": rr_error,
    }
    print(json.dumps(summary))
    return summary


def _histogram(path: str, norms: np.ndarray, clip: float) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6, 4))
    ax.hist(norms, bins=30)
    ax.axvline(clip, color="red", linestyle="--", label=f"clip norm {clip}")
    ax.set_xlabel("per-sample gradient norm")
    ax.set_ylabel("samples")
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


if __name__ == "__main__":
    main()
