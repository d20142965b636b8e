"""Replacing every addition with a bitwise and, after pytorch/examples' fx/replace_op.py
(rewritten, same API use)."""

import operator

import torch
from torch.fx import symbolic_trace


class ThreeAdds(torch.nn.Module):
    def forward(self, x, y):
        return x + y, torch.add(x, y), x.add(y)


traced = symbolic_trace(ThreeAdds())
patterns = {operator.add, torch.add, "add"}
for n in traced.graph.nodes:
    if any(n.target == pattern for pattern in patterns):
        with traced.graph.inserting_after(n):
            new_node = traced.graph.call_function(torch.bitwise_and, n.args, n.kwargs)
            n.replace_all_uses_with(new_node)
        traced.graph.erase_node(n)
traced.recompile()
print(traced.code)
x, y = torch.tensor([6, 3, 12]), torch.tensor([5, 1, 10])
print([t.tolist() for t in traced(x, y)])
