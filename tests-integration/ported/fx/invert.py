"""Inverting a function by walking its graph backwards, after pytorch/examples' fx/invert.py
(rewritten, same API use)."""

import torch
import torch.fx as fx

inverse_of = {}
for f, g in [(torch.sin, torch.arcsin), (torch.cos, torch.arccos), (torch.tan, torch.arctan),
             (torch.exp, torch.log)]:
    inverse_of[f] = g
    inverse_of[g] = f


def invert(model):
    traced = fx.symbolic_trace(model)
    graph = fx.Graph()
    env = {}
    for node in reversed(traced.graph.nodes):
        if node.op == "call_function":
            new_node = graph.call_function(inverse_of[node.target], (env[node.name],))
            env[node.args[0].name] = new_node
        elif node.op == "output":
            new_node = graph.placeholder(node.name)
            env[node.args[0].name] = new_node
        elif node.op == "placeholder":
            graph.output(env[node.name])
        else:
            raise RuntimeError("Not implemented")
    graph.lint()
    return fx.GraphModule(traced, graph)


def f(x):
    return torch.exp(torch.tan(x))


inverted = invert(f)
print(inverted.code)
values = f(inverted(torch.arange(5) + 1))
print([round(v, 4) for v in values.tolist()])
