"""Fold each batch norm into the convolution before it, with pullback.fx: one pass over the
traced graph, the fused model checked against the unfused one.

In evaluation mode a batch norm is an affine map per channel, so a convolution followed by one
is a single convolution with rescaled weights and a shifted bias: ``W' = W * g / sqrt(v + e)``,
``b' = (b - m) * g / sqrt(v + e) + beta``. The pass finds every ``call_module`` node of a
BatchNorm2d whose only input is a Conv2d's node that nothing else reads, puts the fused
convolution in the conv's place, makes the batch norm's readers read it, erases the batch
norm and regenerates ``forward``. The model (a small ResNet-style CNN: convolutions with batch
norm in Sequentials and in residual blocks) gets batch-norm statistics from a few training-mode
passes over scikit-learn's digits, then the script compares the two models in float64 and
times them.

    python examples/fx_conv_bn_fusion.py [--batches 20] [--out DIR] [--smoke]

Writes results.json (and the fused model's generated code, fused_forward.py) to --out (default
runs/fx_conv_bn_fusion/); the last line printed is the same JSON.
"""

from __future__ import annotations

import copy
import json
import os
import time

import numpy as np

import pullback
from pullback import nn
from pullback.fx import GraphModule, symbolic_trace

from _example import example_parser, output_dir


class Block(nn.Module):
    """conv-bn-relu, conv-bn, plus the input: a residual block."""

    def __init__(self, channels: int) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(channels, channels, 3, padding=1)
        self.bn1 = nn.BatchNorm2d(channels)
        self.conv2 = nn.Conv2d(channels, channels, 3, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(channels)

    def forward(self, x: pullback.Tensor) -> pullback.Tensor:
        y = pullback.relu(self.bn1(self.conv1(x)))
        return pullback.relu(self.bn2(self.conv2(y)) + x)


def small_cnn() -> nn.Module:
    return nn.Sequential(nn.Conv2d(1, 16, 3, padding=1), nn.BatchNorm2d(16), nn.ReLU(),
                         Block(16), nn.MaxPool2d(2), Block(16), nn.AdaptiveAvgPool2d(1),
                         nn.Flatten(), nn.Linear(16, 10))


def fuse_conv_bn_weights(conv: nn.Conv2d, bn: nn.BatchNorm2d) -> nn.Conv2d:
    """A copy of ``conv`` computing ``bn(conv(x))`` of the evaluation-mode batch norm."""
    fused = copy.deepcopy(conv)
    scale = bn.weight.detach() / pullback.sqrt(bn.running_var + bn.eps)
    bias = conv.bias.detach() if conv.bias is not None else pullback.zeros_like(bn.running_mean)
    with pullback.no_grad():
        fused.weight = nn.Parameter(conv.weight.detach() * scale.reshape(-1, 1, 1, 1))
        fused.bias = nn.Parameter((bias - bn.running_mean) * scale + bn.bias.detach())
    return fused


def fuse(model: nn.Module) -> GraphModule:
    """``model`` (in evaluation mode) traced, with every Conv2d -> BatchNorm2d pair folded into
    one Conv2d. The model itself is not changed."""
    gm = symbolic_trace(copy.deepcopy(model).eval())
    modules = dict(gm.named_modules())
    for node in list(gm.graph.nodes):
        if node.op != "call_module" or not isinstance(modules[node.target], nn.BatchNorm2d):
            continue
        conv_node = node.args[0]
        if (getattr(conv_node, "op", None) != "call_module"
                or not isinstance(modules[conv_node.target], nn.Conv2d)
                or len(conv_node.users) != 1):
            continue
        fused = fuse_conv_bn_weights(modules[conv_node.target], modules[node.target])
        owner, _, name = conv_node.target.rpartition(".")
        setattr(gm.get_submodule(owner), name, fused)
        node.replace_all_uses_with(conv_node)
        gm.graph.erase_node(node)
    gm.graph.lint()
    gm.delete_all_unused_submodules()
    gm.recompile()
    return gm


def digits(n: int) -> pullback.Tensor:
    from sklearn.datasets import load_digits

    images = load_digits().images[:n] / 16.0
    return pullback.tensor(images[:, None], dtype=pullback.float64)


def per_call_ms(fn, x: pullback.Tensor, repeats: int) -> float:
    fn(x)
    started = time.perf_counter()
    for _ in range(repeats):
        fn(x)
    return (time.perf_counter() - started) / repeats * 1000


def main() -> None:
    parser = example_parser(__doc__, __file__)
    parser.add_argument("--batches", type=int, default=20,
                        help="training-mode passes that set the batch-norm statistics")
    args = parser.parse_args()
    out = output_dir(args.out)
    batches, repeats = (3, 3) if args.smoke else (args.batches, 20)
    pullback.manual_seed(0)
    model = small_cnn().double()
    images = digits(64 * batches)
    with pullback.no_grad():
        model.train()
        for i in range(batches):  # running mean and variance from real images
            model(images[i * 64:(i + 1) * 64])
        for m in model.modules():  # and a non-trivial affine part
            if isinstance(m, nn.BatchNorm2d):
                m.weight.copy_(pullback.rand(m.num_features, dtype=pullback.float64) + 0.5)
                m.bias.copy_(pullback.randn(m.num_features, dtype=pullback.float64) * 0.1)
    model.eval()
    fused = fuse(model)
    x = images[:64]
    with pullback.no_grad():
        reference, result = model(x), fused(x)
        unfused_ms, fused_ms = per_call_ms(model, x, repeats), per_call_ms(fused, x, repeats)
    difference = float(np.abs(reference.numpy() - result.numpy()).max())
    summary = {
        "batch_norms_before": sum(isinstance(m, nn.BatchNorm2d) for m in model.modules()),
        "batch_norms_after": sum(isinstance(m, nn.BatchNorm2d) for m in fused.modules()),
        "graph_nodes": len(fused.graph.nodes),
        "max_abs_difference": difference,
        "max_abs_logit": float(np.abs(reference.numpy()).max()),
        "same_predictions": bool((reference.numpy().argmax(1) == result.numpy().argmax(1)).all()),
        "unfused_ms": round(unfused_ms, 3), "fused_ms": round(fused_ms, 3),
    }
    with open(os.path.join(out, "fused_forward.py"), "w") as f:
        f.write(fused.code)
    with open(os.path.join(out, "results.json"), "w") as f:
        json.dump(summary, f, indent=2)
    print(fused.code)
    print(json.dumps(summary))


if __name__ == "__main__":
    main()
