"""Custom tracers, after pytorch/examples' fx/custom_tracer.py (rewritten, same API use): a
Tracer that traces through ReLU modules (is_leaf_module), and one that tags every node it
makes (create_node)."""

import torch
from torch.fx import Graph, GraphModule, Node, Tracer, symbolic_trace


class WithRelu(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.relu = torch.nn.ReLU()

    def forward(self, x):
        return self.relu(x)


default_traced: GraphModule = symbolic_trace(WithRelu())
default_traced.graph.print_tabular()


class ThroughReluTracer(Tracer):
    def is_leaf_module(self, m, qualname):
        if isinstance(m, torch.nn.ReLU):
            return False
        return super().is_leaf_module(m, qualname)


lowered: Graph = ThroughReluTracer().trace(WithRelu())
print([(n.op, n.name) for n in lowered.nodes])


class Adds(torch.nn.Module):
    def forward(self, a, b):
        return a + b


class TaggingTracer(Tracer):
    def create_node(self, kind, target, args, kwargs, name=None, type_expr=None) -> Node:
        node = super().create_node(kind, target, args, kwargs, name)
        node.tag = "foo"
        return node


tagged: Graph = TaggingTracer().trace(Adds())
print(all(getattr(n, "tag", None) == "foo" for n in tagged.nodes))
print(GraphModule(Adds(), tagged)(torch.tensor([1.0, 2.0]), torch.tensor([3.0, 4.0])).tolist())
