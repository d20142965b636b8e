"""Building a graph from Proxies around raw nodes, with no tracing, after pytorch/examples'
fx/proxy_based_graph_creation.py (rewritten, same API use)."""

import torch
from torch.fx import Graph, GraphModule, Proxy

graph = Graph()
tracer = torch.fx.proxy.GraphAppendingTracer(graph)
x = Proxy(graph.placeholder("x"), tracer)
y = Proxy(graph.placeholder("y"), tracer)
a = torch.cat([x, y])
b = torch.tanh(a)
c = torch.neg(b)
z = torch.add(b, c)
graph.output(c.node)
module = GraphModule(torch.nn.Module(), graph)
print(module.code)
result = module(torch.tensor([0.5, 1.0]), torch.tensor([-2.0]))
print([round(v, 5) for v in result.tolist()])
