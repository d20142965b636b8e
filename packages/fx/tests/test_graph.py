"""Graph and Node: building, editing and checking graphs by hand (torch.fx's API), compared with
torch.fx where both print something."""

from __future__ import annotations

import copy
import operator

import pytest
from fx_oracle import both, same_code

import pullback
from pullback import nn
from pullback.fx import Graph, GraphModule, Node, has_side_effect, map_arg
from pullback.fx.immutable_collections import immutable_dict, immutable_list
from pullback.fx.node import map_aggregate


def chain() -> tuple[Graph, Node, Node, Node, Node]:
    """x -> relu -> add(relu, 1) -> output."""
    graph = Graph()
    x = graph.placeholder("x")
    relu = graph.call_function(pullback.relu, (x,))
    add = graph.call_function(operator.add, (relu, 1))
    out = graph.output(add)
    return graph, x, relu, add, out


def test_a_graph_built_by_hand_prints_and_runs_as_torchs() -> None:
    torch_side, ours = both()
    codes = []
    for t in (torch_side, ours):
        graph = t.fx.Graph()
        x = graph.placeholder("x")
        w = graph.placeholder("w", default_value=2.0)
        cat = graph.call_function(t.lib.cat, ([x, x],), {"dim": 0})
        s = graph.call_method("sum", (cat,), {"dim": 0})
        graph.output((graph.call_function(operator.mul, (s, w)), cat))
        codes.append((str(graph), t.fx.GraphModule(t.nn.Module(), graph).code))
    (their_graph, their_code), (our_graph, our_code) = codes
    same_code(their_code, our_code)
    assert our_graph == their_graph.replace("torch.cat", "pullback.cat") \
        .replace("<built-in function mul>", "operator.mul")
    gm = GraphModule(nn.Module(), graph)
    result, cat = gm(pullback.tensor([1.0, 2.0]))
    assert result.tolist() == 12.0 and cat.tolist() == [1.0, 2.0, 1.0, 2.0]


def test_users_and_inputs_follow_every_edit() -> None:
    graph, x, relu, add, out = chain()
    assert relu.users == {add: None} and add.all_input_nodes == [relu]
    assert isinstance(add.args, tuple) and add.args[0] is relu
    add.args = (x, relu)
    assert set(x.users) == {relu, add} and add.all_input_nodes == [x, relu]
    add.update_arg(1, 5)
    assert relu.users == {} and add.args == (x, 5)
    add.update_kwarg("alpha", relu)
    assert relu.users == {add: None} and add.kwargs == {"alpha": relu}
    add.replace_input_with(relu, x)
    assert add.kwargs == {"alpha": x} and not relu.users
    graph.lint()


def test_arguments_cannot_be_changed_in_place() -> None:
    graph = Graph()
    x = graph.placeholder("x")
    cat = graph.call_function(pullback.cat, ([x, x],), {"dim": 0})
    assert isinstance(cat.args[0], immutable_list) and isinstance(cat.kwargs, immutable_dict)
    with pytest.raises(TypeError, match="read-only"):
        cat.args[0].append(x)
    with pytest.raises(TypeError, match="read-only"):
        cat.kwargs["dim"] = 1
    assert list(x.users) == [cat]
    copied = copy.deepcopy(immutable_list([1, [2]]))  # copying rebuilds, never appends
    assert copied == [1, [2]] and type(copied) is immutable_list


def test_replace_all_uses_with_returns_the_users_it_changed() -> None:
    graph, x, relu, add, out = chain()
    sigmoid = graph.call_function(pullback.sigmoid, (x,))
    relu.prepend(sigmoid)
    changed = relu.replace_all_uses_with(sigmoid)
    assert changed == [add] and add.args[0] is sigmoid and not relu.users
    graph.erase_node(relu)
    graph.lint()
    kept = sigmoid.replace_all_uses_with(x, delete_user_cb=lambda user: user is not add)
    assert kept == [] and add.args[0] is sigmoid
    assert [n.name for n in graph.nodes] == ["x", "sigmoid", "add", "output"]


def test_inserting_before_and_after() -> None:
    graph, x, relu, add, out = chain()
    with graph.inserting_before(add):
        neg = graph.call_function(pullback.neg, (relu,))
    with graph.inserting_after(x):
        # pullback.fx puts each new node after the previous one (torch puts each right after
        # x, in reverse order of creation)
        a = graph.call_function(pullback.exp, (x,))
        b = graph.call_function(pullback.log, (a,))
    assert list(graph.nodes) == [x, a, b, relu, neg, add, out]
    with graph.inserting_before(None):
        first = graph.placeholder("y")
    assert next(iter(graph.nodes)) is first
    graph.lint()


def test_erase_node_refuses_a_node_still_in_use_and_iteration_survives_erasing() -> None:
    graph, x, relu, add, out = chain()
    with pytest.raises(RuntimeError, match="still had 1 users"):
        graph.erase_node(relu)
    for node in graph.nodes:  # erase while iterating, as passes do
        if node is add:
            out.args = (relu,)
            graph.erase_node(node)
    assert [n.name for n in graph.nodes] == ["x", "relu", "output"] and len(graph.nodes) == 3
    with pytest.raises(RuntimeError, match="already erased"):
        graph.erase_node(add)


def test_eliminate_dead_code_keeps_side_effects() -> None:
    graph = Graph()
    x = graph.placeholder("x")
    unused = graph.call_function(pullback.exp, (x,))
    graph.call_function(pullback.log, (unused,))
    graph.call_method("add_", (x, 1))
    graph.call_function(operator.setitem, (x, 0, 1.0))

    @has_side_effect
    def log_value(value):
        return None

    graph.call_function(log_value, (x,))
    graph.output(x)
    assert graph.eliminate_dead_code()
    assert [n.target for n in graph.nodes if n.op != "placeholder"] == \
        ["add_", operator.setitem, log_value, "output"]
    assert not graph.eliminate_dead_code()


def test_lint_finds_what_is_broken() -> None:
    graph, x, relu, add, out = chain()
    x.prepend(add)  # add now comes before what it reads
    with pytest.raises(RuntimeError, match="reads 'relu' before it is defined"):
        graph.lint()
    root = nn.Module()
    root.lin = nn.Linear(2, 2)
    graph = Graph(owning_module=root)
    out = graph.output(graph.call_module("lin", (graph.placeholder("x"),)))
    graph.lint()
    with graph.inserting_before(out):
        graph.get_attr("lin.nope")
    with pytest.raises(RuntimeError, match="'lin.nope', which the owning module does not have"):
        graph.lint()


def test_nodes_from_another_graph_are_refused() -> None:
    first, x, *_ = chain()
    other = Graph()
    with pytest.raises(ValueError, match="another graph"):
        other.call_function(pullback.relu, (x,))


def test_node_copy_graph_copy_and_deepcopy() -> None:
    graph, x, relu, add, out = chain()
    relu.meta["note"] = "kept"
    copied = Graph()
    y = copied.placeholder("y")
    result = copied.graph_copy(graph, {x: y})
    copied.output(result)
    assert [n.name for n in copied.nodes] == ["y", "relu", "add", "output"]
    assert next(n for n in copied.nodes if n.name == "relu").meta == {"note": "kept"}
    deep = copy.deepcopy(graph)
    assert str(deep) == str(graph) and all(n.graph is deep for n in deep.nodes)
    deep.lint()


def test_map_arg_and_map_aggregate_walk_nested_arguments() -> None:
    graph, x, relu, add, out = chain()
    nested = ((x, [relu, 3]), {"k": slice(x, None, 2)})
    assert map_arg(nested, lambda n: n.name) == (("x", ["relu", 3]), {"k": slice("x", None, 2)})
    assert map_aggregate((1, [2, {"a": 3}]), lambda v: v * 10) == (10, [20, {"a": 30}])


def test_find_nodes_and_names() -> None:
    graph = Graph()
    x = graph.placeholder("x")
    first = graph.call_function(operator.add, (x, 1))
    second = graph.call_function(operator.add, (first, 1))
    max_node = graph.call_function(pullback.max, (second,))
    graph.output(max_node)
    assert [first.name, second.name, max_node.name] == ["add", "add_1", "max_1"]
    assert graph.find_nodes(op="call_function", target=operator.add) == [first, second]
    assert first.format_node() == \
        "%add : [num_users=1] = call_function[target=operator.add](args = (%x, 1), kwargs = {})"
