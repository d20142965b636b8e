"""GraphModule through pullback.save / pullback.load (whole objects, no pickle): the graph is
stored as data and ``forward`` regenerated on load; files that try to make the graph reach
beyond the model are refused, naming the node."""

from __future__ import annotations

import copy
import json
import math
from pathlib import Path
from typing import Any, Callable, Iterator

import numpy as np
import pytest

import pullback
from pullback import nn
from pullback.errors import CheckpointError
from pullback.fx import GraphModule, symbolic_trace
from pullback.serialization import UnsafeGlobalError, add_safe_globals, clear_safe_globals


class Model(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.lin = nn.Linear(3, 4)
        self.blocks = nn.Sequential(nn.ReLU(), nn.Linear(4, 2))
        self.register_buffer("scale", pullback.full((2,), 0.5))

    def forward(self, x):
        y = pullback.tanh(self.blocks(self.lin(x))) * self.scale + pullback.ones(2)
        return {"y": y[:, 0:1], "rest": (y.sum(dim=1), pullback.float64, math.inf, ...)}


@pytest.fixture
def allowed() -> Iterator[None]:
    add_safe_globals([GraphModule])
    yield
    clear_safe_globals()


@pytest.fixture
def path(tmp_path: Path) -> Path:
    return tmp_path / "gm.safetensors"


def same_outputs(a: Any, b: Any) -> bool:
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(same_outputs(a[k], b[k]) for k in a)
    if isinstance(a, (tuple, list)):
        return len(a) == len(b) and all(same_outputs(x, y) for x, y in zip(a, b))
    if isinstance(a, pullback.Tensor):
        return np.array_equal(a.detach().numpy(), b.detach().numpy())
    return a is b or a == b


def test_a_traced_model_round_trips(path: Path, allowed: None) -> None:
    gm = symbolic_trace(Model())
    pullback.save(gm, path)
    loaded = pullback.load(path)
    assert isinstance(loaded, GraphModule) and type(loaded).__name__ == "Model"
    assert type(loaded) is not type(gm) and loaded.code == gm.code
    assert str(loaded.graph) == str(gm.graph)
    x = pullback.randn(5, 3)
    assert same_outputs(gm(x), loaded(x))
    assert list(loaded.state_dict()) == list(gm.state_dict())
    twin = copy.deepcopy(loaded)
    assert same_outputs(twin(x), gm(x))


def test_an_edited_graph_round_trips(path: Path, allowed: None) -> None:
    gm = symbolic_trace(Model())
    for node in gm.graph.nodes:
        if node.op == "call_module" and node.target == "blocks.0":
            node.target = "act"
    gm.add_submodule("act", nn.Tanh())
    gm.recompile()
    pullback.save(gm, path)
    loaded = pullback.load(path)
    assert "self.act(lin)" in loaded.code and isinstance(loaded.act, nn.Tanh)
    x = pullback.randn(2, 3)
    assert same_outputs(gm(x), loaded(x))


def test_the_file_holds_the_graph_as_data_not_code(path: Path) -> None:
    pullback.save(symbolic_trace(Model()), path)
    text = json.dumps(structure(path))
    assert "def forward" not in text and '"_code"' not in text
    assert '"function": "pullback.tanh"' in text and '"function": "operator.mul"' in text


def test_weights_only_refuses_a_graph_module_until_it_is_allowed(path: Path) -> None:
    pullback.save(symbolic_trace(Model()), path)
    with pytest.raises(UnsafeGlobalError, match="GraphModule"):
        pullback.load(path)
    assert isinstance(pullback.load(path, weights_only=False), GraphModule)


def scaled(x):
    return x * 3


pullback.fx.wrap("scaled")


class UsesWrapped(nn.Module):
    def forward(self, x):
        return scaled(x) + 1


def test_a_wrapped_function_needs_the_allow_list(path: Path, allowed: None) -> None:
    gm = symbolic_trace(UsesWrapped())
    pullback.save(gm, path)
    with pytest.raises(UnsafeGlobalError, match="scaled"):
        pullback.load(path)
    add_safe_globals([scaled, UsesWrapped])
    loaded = pullback.load(path)
    assert loaded(pullback.tensor([1.0])).tolist() == [4.0]


# -- files from strangers --------------------------------------------------------------------
def structure(path: Path) -> dict[str, Any]:
    from safetensors import safe_open

    with safe_open(str(path), "np") as f:
        return json.loads(f.metadata()["pullback.structure"])


def rewrite(path: Path, change: Callable[[list[dict[str, Any]]], None]) -> None:
    """Save a traced Model to ``path`` with its node list changed by ``change``."""
    from safetensors import safe_open
    from safetensors.numpy import save_file

    pullback.save(symbolic_trace(Model()), path)
    with safe_open(str(path), "np") as f:
        metadata = f.metadata()
        tensors = {k: f.get_tensor(k) for k in f.keys()}
    tree = json.loads(metadata["pullback.structure"])
    change(tree["state"]["_graph_data"]["nodes"])
    metadata["pullback.structure"] = json.dumps(tree)
    save_file(tensors, str(path), metadata=metadata)


def node(nodes: list[dict[str, Any]], name: str) -> dict[str, Any]:
    return next(n for n in nodes if n["name"] == name)


CRAFTED = {
    "dunder method": (lambda ns: node(ns, "sum_1").update(target="__class__"),
                      "method '__class__' may not be called"),
    "eval": (lambda ns: node(ns, "tanh").update(target={"function": "eval"}), "eval"),
    "pullback.save": (lambda ns: node(ns, "tanh").update(target={"function": "pullback.save"}),
                      "pullback.save"),
    "a layer's allowed helper": (lambda ns: node(ns, "tanh").update(
        target={"function": "pullback._ops._declare.declare"}), "pullback._ops._declare.declare"),
    "os.system": (lambda ns: node(ns, "tanh").update(target={"function": "os.system"}),
                  "os.system"),
    "operator.attrgetter": (
        lambda ns: node(ns, "tanh").update(target={"function": "operator.attrgetter"}),
        "operator.attrgetter"),
    "code in a name": (lambda ns: node(ns, "mul").update(name="x = 1; import os"),
                       "is not an identifier"),
    "code in a parameter": (lambda ns: node(ns, "x").update(target="x):\n import os\n#"),
                            "is not an identifier"),
    "private getattr": (lambda ns: node(ns, "sum_1").update(
        op="call_function", target={"function": "getattr"},
        args={"tuple": [{"node": "add"}, "__globals__"]}), "getattr of a name starting"),
    "unregistered attribute": (lambda ns: node(ns, "scale").update(target="_forward_hooks"),
                               "not a registered submodule"),
    "quote in a path": (lambda ns: node(ns, "lin").update(target='lin")(x) or ("'),
                        "malformed path"),
    "a later node": (lambda ns: node(ns, "lin").update(args={"tuple": [{"node": "mul"}]}),
                     "which no earlier node defines"),
    "unknown tag": (lambda ns: node(ns, "lin").update(args={"tuple": [{"pickle": "..."}]}),
                    "malformed argument"),
    "method on a constant": (lambda ns: node(ns, "sum_1").update(
        args={"tuple": ["{0.__class__}"]}, target="format"), "a method is called on a value"),
}


@pytest.mark.parametrize("case", sorted(CRAFTED))
def test_a_crafted_graph_is_refused_naming_the_node(case: str, path: Path,
                                                   allowed: None) -> None:
    change, message = CRAFTED[case]
    rewrite(path, change)
    with pytest.raises(CheckpointError, match=message.replace("(", r"\(").replace(")", r"\)")):
        pullback.load(path)
