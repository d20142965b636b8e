"""Inlining a module call into a traced graph with Proxies, after pytorch/examples'
fx/inline_function.py (rewritten, same API use)."""

import torch
from torch.fx import Proxy, symbolic_trace
from torch.fx.node import map_arg


class ReluPlusOne(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.relu = torch.nn.ReLU()

    def forward(self, x):
        return self.relu(x) + 1.0


traced = symbolic_trace(ReluPlusOne())
x = torch.tensor([-2.0, -0.5, 0.0, 1.5])
before = traced(x).tolist()

tracer = torch.fx.proxy.GraphAppendingTracer(traced.graph)
for node in traced.graph.nodes:
    if (node.op, node.target) == ("call_module", "relu"):
        with traced.graph.inserting_before(node):
            proxy_args = map_arg(node.args, lambda n: Proxy(n, tracer))
            proxy_kwargs = map_arg(node.kwargs, lambda n: Proxy(n, tracer))
            output = traced.relu(*proxy_args, **proxy_kwargs)
            node.replace_all_uses_with(output.node)
            traced.graph.erase_node(node)
traced.recompile()
traced.graph.lint()
print([n.op for n in traced.graph.nodes])
print(before == traced(x).tolist(), traced(x).tolist())
