"""Intermediate features of a model, taken with pullback.fx as torchvision's
``create_feature_extractor`` does: the model traced, its output replaced by the values asked
for, everything after them dropped.

Values are asked for by where they come from in the model: ``"layer1"`` is what the submodule
``layer1`` returns (a leaf layer's call, or the last value computed inside a traced-through
module), ``"layer2.0.conv1"`` a layer deep inside. ``create_feature_extractor(model,
{"layer1": "low", "layer2": "high"})`` returns a GraphModule whose forward returns
``{"low": ..., "high": ...}`` and computes nothing that those do not need (the classifier head is
gone from its graph). The script checks the features against forward hooks on the original
model, bit for bit, on scikit-learn's digits, and reports how much of the graph was dropped.

    python examples/fx_feature_extractor.py [--out DIR] [--smoke]

Writes results.json and the extractor's generated code (extractor_forward.py) to --out (default
runs/fx_feature_extractor/); the last line printed is the same JSON.
"""

from __future__ import annotations

import json
import os
from typing import Any, Callable

import numpy as np

import pullback
from pullback import nn
from pullback.fx import Graph, GraphModule, Tracer

from _example import example_parser, output_dir


class NodePathTracer(Tracer):
    """A Tracer that remembers, for every module called during the trace, the node holding
    what the call returned, under the module's dotted path."""

    def __init__(self) -> None:
        super().__init__()
        self.module_outputs: dict[str, Any] = {}

    def call_module(self, m: nn.Module, forward: Callable[..., Any], args: tuple[Any, ...],
                    kwargs: dict[str, Any]) -> Any:
        result = super().call_module(m, forward, args, kwargs)
        node = getattr(result, "node", None)
        if node is not None:
            self.module_outputs[self.path_of_module(m)] = node
        return result


def create_feature_extractor(model: nn.Module, return_nodes: dict[str, str]) -> GraphModule:
    """A GraphModule computing ``{name: value of path for path, name in return_nodes}``."""
    tracer = NodePathTracer()
    graph: Graph = tracer.trace(model)
    missing = sorted(set(return_nodes) - set(tracer.module_outputs))
    if missing:
        raise ValueError(f"create_feature_extractor: no module called {missing}; the model's "
                         f"are {sorted(tracer.module_outputs)}")
    output = next(n for n in graph.nodes if n.op == "output")
    output.args = ({name: tracer.module_outputs[path] for path, name in return_nodes.items()},)
    graph.eliminate_dead_code()
    graph.lint()
    return GraphModule(tracer.root, graph, f"{type(model).__name__}FeatureExtractor")


class Block(nn.Module):
    def __init__(self, channels_in: int, channels_out: int) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(channels_in, channels_out, 3, padding=1)
        self.conv2 = nn.Conv2d(channels_out, channels_out, 3, padding=1)
        self.skip = nn.Conv2d(channels_in, channels_out, 1)

    def forward(self, x: pullback.Tensor) -> pullback.Tensor:
        return pullback.relu(self.conv2(pullback.relu(self.conv1(x))) + self.skip(x))


class Net(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.stem = nn.Conv2d(1, 8, 3, padding=1)
        self.layer1 = nn.Sequential(Block(8, 8), nn.MaxPool2d(2))
        self.layer2 = nn.Sequential(Block(8, 16), Block(16, 16))
        self.head = nn.Sequential(nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(16, 10))

    def forward(self, x: pullback.Tensor) -> pullback.Tensor:
        return self.head(self.layer2(self.layer1(pullback.relu(self.stem(x)))))


def hooked_features(model: nn.Module, paths: list[str], x: pullback.Tensor
                    ) -> dict[str, pullback.Tensor]:
    """What each submodule at ``paths`` returned in one ordinary forward (forward hooks)."""
    seen: dict[str, pullback.Tensor] = {}
    handles = [model.get_submodule(p).register_forward_hook(
        lambda module, args, out, p=p: seen.__setitem__(p, out)) for p in paths]
    model(x)
    for handle in handles:
        handle.remove()
    return seen


def main() -> None:
    parser = example_parser(__doc__, __file__)
    args = parser.parse_args()
    out = output_dir(args.out)
    from sklearn.datasets import load_digits

    pullback.manual_seed(0)
    count = 32 if args.smoke else 512
    x = pullback.tensor(load_digits().images[:count, None] / 16.0, dtype=pullback.float64)
    model = Net().double().eval()
    return_nodes = {"stem": "stem", "layer1": "low", "layer2.0.conv1": "mid", "layer2": "high"}
    extractor = create_feature_extractor(model, return_nodes)
    with pullback.no_grad():
        features = extractor(x)
        hooked = hooked_features(model, list(return_nodes), x)
    equal = {name: bool(np.array_equal(features[name].numpy(), hooked[path].numpy()))
             for path, name in return_nodes.items()}
    full = create_feature_extractor(model, {"head": "logits"})
    summary = {
        "features": {name: list(features[name].shape) for name in features},
        "equal_to_hooks": equal,
        "graph_nodes": len(extractor.graph.nodes),
        "graph_nodes_of_whole_model": len(full.graph.nodes),
        "head_in_extractor": any(str(n.target).startswith("head")
                                 for n in extractor.graph.nodes) or hasattr(extractor, "head"),
    }
    with open(os.path.join(out, "extractor_forward.py"), "w") as f:
        f.write(extractor.code)
    with open(os.path.join(out, "results.json"), "w") as f:
        json.dump(summary, f, indent=2)
    print(extractor.code)
    print(json.dumps(summary))


if __name__ == "__main__":
    main()
