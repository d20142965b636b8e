"""symbolic_trace, Tracer, Proxy and wrap: the same programs traced by torch.fx and pullback.fx
give the same generated code; what cannot be traced fails with torch's words and the user's
line; tracing leaves nothing changed behind it."""

from __future__ import annotations

import gc
import math
import operator
from pathlib import Path
from typing import Any, Callable

import numpy as np
import pytest
from fx_oracle import PULLBACK, both, same_code

import pullback
import pullback.nn.functional as F
from pullback import nn
from pullback.fx import GraphModule, Proxy, TraceError, Tracer, symbolic_trace
from pullback.fx.proxy import GraphAppendingTracer

THIS_FILE = Path(__file__).name


# -- programs, each written once for both frameworks -----------------------------------------
def operators(t: Any) -> Any:
    class Operators(t.nn.Module):
        def forward(self, x, y):
            a = (x + 1) * 2 - y / 3
            b = -a @ y.transpose(0, 1)
            c = b[0, 1:] ** 2 // 1 % 5
            return c, x > y, ~(x < 0)

    return Operators()


def methods_and_functions(t: Any) -> Any:
    class MethodsAndFunctions(t.nn.Module):
        def forward(self, x):
            flat = x.view(x.size(0), -1)
            both = t.lib.cat([flat, t.lib.relu(flat)], dim=1)
            return t.F.relu(both.sum(dim=1, keepdim=True), inplace=False) + t.lib.tanh(both)

    return MethodsAndFunctions()


def submodules(t: Any) -> Any:
    class Submodules(t.nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = t.nn.Linear(4, 3)
            self.seq = t.nn.Sequential(t.nn.ReLU(), t.nn.Linear(3, 2))
            self.scale = t.nn.Parameter(t.lib.ones(2))
            self.register_buffer("shift", t.lib.zeros(2))

        def forward(self, x):
            return self.seq(self.lin(x)) * self.scale + self.shift + self.lin.weight.sum()

    return Submodules()


def unpacking_and_structures(t: Any) -> Any:
    class Structures(t.nn.Module):
        def forward(self, x, scale=2.0, *, offset=None):
            first, second = x.chunk(2, dim=1)
            return {"sum": first + second, "pair": (first * scale, [second])}

    return Structures()


def reserved_names(t: Any) -> Any:
    class Reserved(t.nn.Module):
        def forward(self, input, float, max):
            a, b = input.chunk(2)
            return a + float, b.max(), max * 2

    return Reserved()


def constants(t: Any) -> Any:
    class Constants(t.nn.Module):
        def forward(self, x):
            return x + t.lib.ones(3) * math.pi

    return Constants()


PROGRAMS = [operators, methods_and_functions, submodules, unpacking_and_structures,
            reserved_names, constants]


@pytest.mark.parametrize("program", PROGRAMS, ids=lambda p: p.__name__)
def test_the_generated_code_is_torchs(program: Callable[[Any], Any]) -> None:
    torch_side, ours = both()
    same_code(torch_side.fx.symbolic_trace(program(torch_side)).code,
              symbolic_trace(program(ours)).code)


def test_the_graphs_print_as_torchs() -> None:
    torch_side, ours = both()
    theirs = str(torch_side.fx.symbolic_trace(submodules(torch_side)).graph)
    assert str(symbolic_trace(submodules(ours)).graph) == \
        theirs.replace("<built-in function add>", "operator.add") \
              .replace("<built-in function mul>", "operator.mul")


def test_print_tabular_is_torchs_table(capsys: pytest.CaptureFixture[str]) -> None:
    pytest.importorskip("tabulate", reason="torch's print_tabular needs tabulate")
    torch_side, ours = both()

    def program(t: Any) -> Any:  # no call_function: torch shows those by their repr
        class Table(t.nn.Module):
            def __init__(self):
                super().__init__()
                self.lin = t.nn.Linear(2, 2)

            def forward(self, x):
                return self.lin(x).sum(dim=1, keepdim=True), self.lin.weight

        return Table()

    torch_side.fx.symbolic_trace(program(torch_side)).graph.print_tabular()
    theirs = capsys.readouterr().out
    symbolic_trace(program(ours)).graph.print_tabular()
    assert capsys.readouterr().out == theirs


@pytest.mark.parametrize("program", PROGRAMS, ids=lambda p: p.__name__)
def test_the_graph_module_computes_what_the_module_does(program: Callable[[Any], Any]) -> None:
    module = program(PULLBACK).double()
    gm = symbolic_trace(module)
    rng = np.random.default_rng(0)
    shapes = {operators: [(3, 3), (3, 3)], reserved_names: [(4, 4), (2, 4), (4, 4)],
              constants: [(3,)]}.get(program, [(4, 4)])
    args = [pullback.tensor(rng.standard_normal(shape)) for shape in shapes]
    expected, actual = _leaves(module(*args)), _leaves(gm(*args))
    assert len(expected) == len(actual)
    for e, a in zip(expected, actual):
        assert np.array_equal(e.detach().numpy(), a.detach().numpy())


def _leaves(value: Any) -> list[Any]:
    if isinstance(value, dict):
        return [leaf for v in value.values() for leaf in _leaves(v)]
    if isinstance(value, (tuple, list)):
        return [leaf for v in value for leaf in _leaves(v)]
    return [value]


# -- what cannot be traced -------------------------------------------------------------------
def branches(x):
    if x.sum() > 0:
        return x
    return -x


def takes_len(x):
    return x * len(x)


def iterates(x):
    total = 0
    for row in x:
        total = total + row
    return total


@pytest.mark.parametrize("fn, error, line", [
    (branches, TraceError, "if x.sum() > 0:"),
    (takes_len, RuntimeError, "return x * len(x)"),
    (iterates, TraceError, "for row in x:"),
])
def test_untraceable_code_fails_with_torchs_words_and_the_users_line(fn, error, line) -> None:
    torch_side, _ = both()
    with pytest.raises(Exception) as theirs:
        torch_side.fx.symbolic_trace(fn)
    with pytest.raises(error) as ours:
        symbolic_trace(fn)
    assert type(ours.value).__name__ == type(theirs.value).__name__
    message = str(ours.value)
    first_sentence = str(theirs.value).split(". ")[0].replace("torch", "pullback")
    assert message.startswith(first_sentence)
    assert THIS_FILE in message and line in message


def test_tuple_unpacking_of_a_proxy_records_getitems() -> None:
    def split(x):
        a, b, c = x.chunk(3)
        return c, b, a

    gm = symbolic_trace(split)
    assert [n.target for n in gm.graph.nodes if n.op == "call_function"] == \
        [operator.getitem] * 3
    x = pullback.arange(6.0)
    assert [t.tolist() for t in gm(x)] == [[4.0, 5.0], [2.0, 3.0], [0.0, 1.0]]


def test_other_uses_of_a_proxy_are_refused_clearly() -> None:
    with pytest.raises(TraceError, match="dict key"):
        symbolic_trace(lambda x: pullback.add(x, {x: 1}))
    with pytest.raises(NotImplementedError, match="argument of type"):
        symbolic_trace(lambda x: pullback.add(x, object()))
    with pytest.raises(TraceError, match="cannot be copied"):
        symbolic_trace(lambda x: __import__("copy").deepcopy(x))


def test_a_module_made_inside_forward_cannot_be_called_by_generated_code() -> None:
    class MakesALayer(nn.Module):
        def forward(self, x):
            return nn.ReLU()(x)

    with pytest.raises(NameError, match="not installed as a submodule"):
        symbolic_trace(MakesALayer())


# -- concrete_args, wrap, autowrap -----------------------------------------------------------
def test_concrete_args_fix_a_branch_and_the_generated_forward_checks_it() -> None:
    def maybe_negate(x, negate):
        return -x if negate else x

    gm = symbolic_trace(maybe_negate, concrete_args={"negate": True})
    x = pullback.tensor([1.0, -2.0])
    assert gm(x).tolist() == [-1.0, 2.0] and gm(x, True).tolist() == [-1.0, 2.0]
    with pytest.raises(ValueError, match="negate has been specialized to have value True"):
        gm(x, False)
    with pytest.raises(TypeError, match="does not take"):
        symbolic_trace(maybe_negate, concrete_args={"nope": 1})


def test_wrap_keeps_a_free_function_as_a_call() -> None:
    import fx_wrapped

    gm = symbolic_trace(fx_wrapped.UsesWrapped())
    targets = [n.target for n in gm.graph.nodes if n.op == "call_function"]
    assert fx_wrapped.normalize in targets and len in targets
    assert 'pullback.fx.wrap("fx_wrapped_normalize")' in gm.code
    x = pullback.tensor([[3.0, 4.0]])
    assert gm(x).tolist() == fx_wrapped.UsesWrapped()(x).tolist()
    assert fx_wrapped.normalize.__module__ == "fx_wrapped"  # put back after the trace
    assert symbolic_trace(gm).code == gm.code  # traced again, the wrapped calls stay calls


def test_wrap_must_be_called_at_module_scope() -> None:
    with pytest.raises(NotImplementedError, match="top level of a module"):
        pullback.fx.wrap("len")


def test_autowrap_records_math_functions_imported_by_name() -> None:
    import fx_wrapped

    gm = symbolic_trace(fx_wrapped.uses_sqrt)
    assert [n.target for n in gm.graph.nodes if n.op == "call_function"] == [math.sqrt]
    assert "math.sqrt(x)" in gm.code and gm(16.0) == 4.0


def test_functions_imported_by_name_are_recorded_too() -> None:
    import fx_wrapped

    gm = symbolic_trace(fx_wrapped.uses_imported_relu)
    assert "pullback.relu(x)" in gm.code and fx_wrapped.relu is pullback.relu


# -- the tracer's hooks ------------------------------------------------------------------------
class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(3, 3)
        self.act = nn.ReLU()

    def forward(self, x):
        return self.act(self.lin(x)) + x


def test_is_leaf_module_and_path_of_module() -> None:
    model = nn.Sequential(Block(), Block())
    ops = [(n.op, n.target) for n in symbolic_trace(model).graph.nodes]
    assert ("call_module", "0.lin") in ops and ("call_module", "1.act") in ops

    class EverythingALeaf(Tracer):
        def is_leaf_module(self, m, qualname):
            return True

    graph = EverythingALeaf().trace(model)
    assert [n.target for n in graph.nodes if n.op == "call_module"] == ["0", "1"]

    class ThroughReLU(Tracer):
        def is_leaf_module(self, m, qualname):
            return not isinstance(m, nn.ReLU) and super().is_leaf_module(m, qualname)

    graph = ThroughReLU().trace(Block())
    assert [n.target for n in graph.nodes if n.op == "call_function"] == \
        [F.relu, operator.add]


def test_create_node_and_create_proxy_see_every_node() -> None:
    seen = []

    class Recording(Tracer):
        def create_node(self, kind, target, args, kwargs, name=None, type_expr=None):
            node = super().create_node(kind, target, args, kwargs, name, type_expr)
            seen.append(node.op)
            return node

    graph = Recording().trace(Block())
    assert seen == [n.op for n in graph.nodes]


def test_stack_traces_point_at_the_users_line() -> None:
    tracer = Tracer()
    tracer.record_stack_traces = True
    graph = tracer.trace(Block())
    add = next(n for n in graph.nodes if n.target is operator.add)
    assert THIS_FILE in add.stack_trace and "return self.act(self.lin(x)) + x" in add.stack_trace


def test_hooks_of_traced_through_modules_run_while_tracing() -> None:
    block = Block()
    block.register_forward_hook(lambda module, args, out: out * 2)
    gm = symbolic_trace(nn.Sequential(block))
    assert any(n.target is operator.mul for n in gm.graph.nodes)


# -- nothing left behind ---------------------------------------------------------------------
def test_the_functions_are_put_back_after_a_trace_even_a_failed_one() -> None:
    relu, call = pullback.relu, nn.Module.__call__
    with pytest.raises(TraceError):
        symbolic_trace(branches)
    symbolic_trace(Block())
    assert pullback.relu is relu and nn.Module.__call__ is call
    assert F.linear.__class__.__name__ == "function"


def test_a_graph_appending_tracer_records_function_calls_while_it_lives() -> None:
    graph = pullback.fx.Graph()
    tracer = GraphAppendingTracer(graph)
    x = Proxy(graph.placeholder("x"), tracer)
    y = pullback.tanh(pullback.cat([x, x]))
    assert isinstance(y, Proxy) and pullback.tanh == pullback.tanh.__wrapped__
    graph.output(y.node)
    gm = GraphModule(nn.Module(), graph)
    del tracer, x, y
    gc.collect()
    assert type(pullback.tanh).__name__ == "function"  # the stand-ins are gone
    assert gm(pullback.tensor([0.0, 1.0])).tolist() == \
        pullback.tanh(pullback.tensor([0.0, 1.0, 0.0, 1.0])).tolist()


def test_symbolic_trace_of_a_function_uses_an_empty_root() -> None:
    gm = symbolic_trace(lambda x, y: pullback.maximum(x, y) * 2)
    assert not list(gm.children()) and type(gm).__name__ == "<lambda>"
    assert gm(pullback.tensor([1.0]), pullback.tensor([3.0])).tolist() == [6.0]


def test_varargs_are_refused_with_the_reason() -> None:
    with pytest.raises(NotImplementedError, match=r"\*args"):
        symbolic_trace(lambda *args: args[0])
