"""``ShapeProp``: run a GraphModule on example inputs and record, on every node, the shape,
dtype and ``requires_grad`` of the tensors it produced (torch.fx's names)."""

from __future__ import annotations

from typing import Any, NamedTuple

from pullback.tensor import Tensor

from ..interpreter import Interpreter
from ..node import Node, map_aggregate

__all__ = ["ShapeProp", "TensorMetadata"]


class TensorMetadata(NamedTuple):
    """What ShapeProp records of a tensor (``node.meta["tensor_meta"]``). pullback tensors
    are always dense and unquantized; ``stride`` is in elements, as torch's."""

    shape: tuple[int, ...]
    dtype: Any
    requires_grad: bool
    stride: tuple[int, ...]
    memory_format: Any
    is_quantized: bool
    qparams: dict[str, Any]


def _extract(tensor: Tensor) -> TensorMetadata:
    array = tensor.array
    itemsize = array.dtype.itemsize
    stride = tuple(s // itemsize for s in array.strides)
    return TensorMetadata(tuple(tensor.shape), tensor.dtype, tensor.requires_grad, stride,
                          None, False, {})


class ShapeProp(Interpreter):
    """Records ``node.meta["tensor_meta"]`` (a :class:`TensorMetadata`, or a structure of them
    for a node that returns several tensors) and ``node.meta["type"]`` for every node.

    Example:
        >>> import pullback
        >>> from pullback.fx import symbolic_trace
        >>> from pullback.fx.passes.shape_prop import ShapeProp
        >>> gm = symbolic_trace(pullback.nn.Linear(4, 3))
        >>> _ = ShapeProp(gm).propagate(pullback.randn(2, 4))
        >>> [(n.name, n.meta["tensor_meta"].shape) for n in gm.graph.nodes][-2:]
        [('linear', (2, 3)), ('output', (2, 3))]
    """

    def run_node(self, n: Node) -> Any:
        result = super().run_node(n)
        found = False

        def extract(value: Any) -> Any:
            nonlocal found
            if isinstance(value, Tensor):
                found = True
                return _extract(value)
            return value

        meta = map_aggregate(result, extract)
        if found:
            n.meta["tensor_meta"] = meta
        n.meta["type"] = type(result)
        return result

    def propagate(self, *args: Any) -> Any:
        """Run the module on ``args`` (recording as it goes) and return its result."""
        return self.run(*args)
