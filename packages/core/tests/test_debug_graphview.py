"""Graph views on known graphs: the ASCII tree (shared nodes once, names, grad norms) and DOT."""

from __future__ import annotations

import re
import shutil

import numpy as np
import pytest

import pullback as pb
from pullback.autograd import Function
from pullback.debug import to_dot, visualize
from pullback.debug.graphview import format_graph


def test_known_small_graph_exact_text(capsys):
    x = pb.tensor([1.0, 2.0], requires_grad=True)
    c = pb.tensor([3.0, 4.0])
    loss = ((x * c) + 1.0).sum()
    text = visualize(loss, names={"x": x, "c": c})
    assert capsys.readouterr().out == text + "\n"  # printed and returned
    assert text.splitlines() == [
        "graph of () float32: 3 ops, 1 leaves requiring grad, 1 constant tensors",
        "[1] sum -> () float32",
        "└── [2] add -> (2,) float32",
        "    ├── [3] mul -> (2,) float32",
        "    │   ├── x: leaf (2,) float32 requires_grad",
        "    │   └── c: constant (2,) float32 (no grad)",
        "    └── scalar 1.0",
    ]


def test_shared_subgraph_is_printed_once_then_referenced():
    x = pb.tensor([0.5, -0.5], requires_grad=True)
    h = x.tanh()
    y = (h * h + h.exp()).sum()
    lines = format_graph(y).splitlines()
    full = [ln for ln in lines if re.search(r"\[\d+\] tanh -> ", ln)]
    refs = [ln for ln in lines if "tanh (shown above)" in ln]
    assert len(full) == 1 and len(refs) == 2
    number = re.search(r"\[(\d+)\] tanh", full[0]).group(1)
    assert all(f"[{number}] tanh (shown above)" in ln for ln in refs)
    assert lines.index(full[0]) < min(lines.index(r) for r in refs)
    # x is expanded once, under the single full tanh entry
    assert sum("leaf (2,) float32" in ln for ln in lines) == 1


def test_grad_norms_after_backward_with_retained_graph():
    rng = np.random.default_rng(0)
    w = pb.tensor(rng.normal(size=(3, 2)).astype(np.float32), requires_grad=True)
    x = pb.tensor(rng.normal(size=(2,)).astype(np.float32), requires_grad=True)
    h = (w @ x).tanh()
    h.retain_grad()
    loss = (h * h).sum()
    loss.backward(retain_graph=True)
    text = format_graph(loss, names={"w": w, "x": x})
    w_norm = float(np.linalg.norm(w.grad.numpy()))
    h_norm = float(np.linalg.norm(h.grad.numpy()))
    assert f"w: leaf (3, 2) float32 requires_grad  |grad|={w_norm:.4g}" in text
    assert re.search(rf"tanh -> \(3,\) float32  \|grad\|={h_norm:.4g}", text)


def test_graph_released_by_backward_is_said():
    x = pb.tensor([1.0, 2.0], requires_grad=True)
    y = (x * 2.0).sum()
    y.backward()
    text = format_graph(y)
    assert "graph released by backward (pass retain_graph=True" in text


def test_names_from_a_model_and_constants_made_by_ops():
    class Model:
        def __init__(self):
            self.w = pb.ones(2, requires_grad=True)

        def named_parameters(self):
            yield "layer.weight", self.w

    model = Model()
    detached = (pb.ones(2, requires_grad=True) * 3.0).detach()
    text = format_graph((model.w * detached).sum(), names=model)
    assert "layer.weight: leaf (2,) float32 requires_grad" in text
    assert "constant (2,) float32 (no grad)" in text
    with pytest.raises(TypeError, match="names must be a mapping"):
        format_graph(model.w, names=[model.w])


class _Split(Function):
    @staticmethod
    def forward(ctx, x):
        return x * 2.0, x * 3.0

    @staticmethod
    def backward(ctx, ga, gb):
        return ga * 2.0 + gb * 3.0


def test_function_nodes_and_their_outputs():
    x = pb.tensor([1.0, 2.0], requires_grad=True)
    a, b = _Split.apply(x)
    text = format_graph((a * b).sum())
    assert re.search(r"\[\d+\] Function _Split output 0 -> \(2,\) float32", text)
    assert re.search(r"\[\d+\] _Split output 1 \(shown above\)", text)


def test_thirty_node_graph_fits_a_terminal():
    rng = np.random.default_rng(1)
    x = pb.tensor(rng.normal(size=(4, 8)).astype(np.float32))
    params = {}
    h = x
    for i in range(6):  # 6 layers of matmul, add, tanh, residual add, mul: 5 ops each
        w = pb.tensor(rng.normal(size=(8, 8)).astype(np.float32) * 0.3, requires_grad=True)
        b = pb.zeros(8, requires_grad=True)
        params[f"w{i}"], params[f"b{i}"] = w, b
        h = (h + (h @ w + b).tanh()) * 0.5
    loss = h.mean()
    lines = format_graph(loss, names=params).splitlines()
    op_lines = [ln for ln in lines if re.search(r"\[\d+\] \w+ -> ", ln)]
    assert len(op_lines) == 6 * 5 + 1
    assert max(len(ln) for ln in lines) <= 120
    assert sum("(shown above)" in ln for ln in lines) == 5  # each hidden h is read twice


def test_deep_chain_needs_no_recursion():
    x = pb.tensor([1.0], requires_grad=True)
    y = x
    for _ in range(1500):  # deeper than Python's recursion limit
        y = y * 1.0
    text = format_graph(y, max_depth=10)
    assert "max_depth=10 reached" in text
    # summary, 1500 ops with their scalar operand each, the leaf
    assert len(format_graph(y).splitlines()) == 1 + 1500 * 2 + 1


def _dot_parts(source: str) -> tuple[dict[str, str], list[tuple[str, str]]]:
    nodes = dict(re.findall(r"^  (\w+) \[label=\"((?:[^\"\\]|\\.)*)\"", source, re.M))
    edges = re.findall(r"^  (\w+) -> (\w+)", source, re.M)
    return nodes, edges


def test_dot_text_of_a_known_graph():
    x = pb.tensor([1.0, 2.0], requires_grad=True)
    w = pb.tensor([0.5, 0.5], requires_grad=True)
    h = x * w
    loss = (h + h.exp()).sum()
    source = to_dot(loss, names={"x": x, "w": w})
    assert source.startswith("digraph pullback {") and source.rstrip().endswith("}")
    nodes, edges = _dot_parts(source)
    labels = {nid: label.split("\\n")[0] for nid, label in nodes.items()}
    by_label = {}
    for nid, label in labels.items():
        by_label.setdefault(re.sub(r"^\[\d+\] ", "", label), []).append(nid)
    assert sorted(by_label) == ["add", "exp", "mul", "output () float32", "sum", "w", "x"]
    assert all(len(v) == 1 for v in by_label.values())  # shared mul drawn once
    (mul,), (exp,), (add,), (sum_,) = by_label["mul"], by_label["exp"], by_label["add"], by_label["sum"]
    expected = {(by_label["x"][0], mul), (by_label["w"][0], mul), (mul, add), (mul, exp),
                (exp, add), (add, sum_), (sum_, "out")}
    assert set(edges) == expected and len(edges) == len(expected)


def test_dot_file_and_rendering(tmp_path):
    x = pb.tensor([1.0, 2.0], requires_grad=True)
    loss = (x * x).sum()
    dot_file = tmp_path / "g.dot"
    source = to_dot(loss, dot_file)
    assert dot_file.read_text() == source
    if shutil.which("dot") is None:
        pytest.skip("Graphviz 'dot' is not installed: rendering not checked")
    svg = tmp_path / "g.svg"
    to_dot(loss, svg)
    assert (tmp_path / "g.dot").read_text() == source
    assert "<svg" in svg.read_text()


def test_dot_without_graphviz_warns_and_keeps_the_source(tmp_path, monkeypatch):
    monkeypatch.setattr(shutil, "which", lambda name: None)
    x = pb.tensor([1.0], requires_grad=True)
    with pytest.warns(RuntimeWarning, match="Graphviz 'dot' is not on the PATH"):
        source = to_dot(x * 2.0, tmp_path / "g.png")
    assert (tmp_path / "g.dot").read_text() == source
    assert not (tmp_path / "g.png").exists()
