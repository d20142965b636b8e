"""The subgraph rewriter, after pytorch/examples' fx/subgraph_rewriter_basic_use.py
(rewritten, same API use)."""

import torch
from torch.fx import replace_pattern, symbolic_trace


class TwoCats(torch.nn.Module):
    def forward(self, x, w1, w2):
        val1 = torch.neg(w1)
        m1 = torch.cat([val1, w2]).sum()
        val2 = torch.neg(w1)
        m2 = torch.cat([val2, w2]).sum()
        return x + torch.max(m1) + torch.max(m2)


traced = symbolic_trace(TwoCats())


def pattern(a1, a2):
    val1 = torch.neg(a1)
    return torch.cat([val1, a2]).sum()


def replacement(w1, w2):
    return torch.stack([w1, w2])


matches = replace_pattern(traced, pattern, replacement)
print(len(matches))
print(traced.code)
x, w1, w2 = torch.tensor([1.0, 2.0]), torch.tensor([3.0, -4.0]), torch.tensor([0.5, 6.0])
print(traced(x, w1, w2).tolist())
