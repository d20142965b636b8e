"""Wrapping a traced graph's output in an activation chosen at run time, after
pytorch/examples' fx/wrap_output_dynamically.py (rewritten, same API use)."""

from enum import Enum, auto

import torch
from torch.fx import GraphModule, Proxy, symbolic_trace


class Concat(torch.nn.Module):
    def forward(self, x, y):
        return torch.cat([x, y])


traced = symbolic_trace(Concat())


class Activation(Enum):
    RELU = auto()
    LEAKY_RELU = auto()
    PRELU = auto()


activations = {
    Activation.RELU: torch.nn.ReLU(),
    Activation.LEAKY_RELU: torch.nn.LeakyReLU(),
    Activation.PRELU: torch.nn.PReLU(),
}


def wrap_in_activation(m: GraphModule, which: Activation) -> None:
    output_node = next(n for n in reversed(m.graph.nodes) if n.op == "output")
    assert len(output_node.all_input_nodes) == 1
    wrap_node = output_node.all_input_nodes[0]
    wrap_proxy = Proxy(wrap_node)
    activation_traced = symbolic_trace(activations[which])
    with m.graph.inserting_after(wrap_node):
        new_output = activation_traced(wrap_proxy)
        output_node.args = (new_output.node,)
    m.recompile()


x, y = torch.tensor([[-1.0, 2.0]]), torch.tensor([[3.0, -4.0]])
original = traced(x, y)
wrap_in_activation(traced, Activation.LEAKY_RELU)
print(traced(x, y).tolist())
print(traced(x, y).tolist() == torch.nn.LeakyReLU()(original).tolist())
