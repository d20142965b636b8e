"""``Parameter``: a Tensor that a Module registers as a learnable weight."""

from __future__ import annotations

from typing import Any

from pullback.errors import AutogradError
from pullback.tensor import Tensor


def copy_leaf(tensor: Tensor, memo: dict[int, Any]) -> Tensor:
    """A deep copy of a leaf tensor (its memory, ``requires_grad`` and ``.grad``), recorded in
    ``memo`` so that a tensor reached twice is copied once (shared weights stay shared).

    Raises:
        AutogradError: for a non-leaf tensor (PyTorch refuses them too: a copy cannot carry
            its graph).
    """
    done = memo.get(id(tensor))
    if done is not None:
        return done
    if not tensor.is_leaf:
        raise AutogradError("copy.deepcopy: only leaf tensors can be deep-copied (this one is "
                            "the output of an op); copy tensor.detach() instead")
    cls = type(tensor)
    new = cls.__new__(cls)
    new._init_leaf(tensor.array.copy(), tensor.device, tensor.requires_grad)
    memo[id(tensor)] = new
    if tensor.grad is not None:
        new.grad = copy_leaf(tensor.grad, memo)
    return new


class Parameter(Tensor):
    """A leaf Tensor that requires grad (by default) and that :class:`Module` registers.

    ``Parameter(t)`` shares ``t``'s memory, as in PyTorch. Only floating-point tensors can
    require grad.

    Example:
        >>> import pullback
        >>> from pullback.nn import Parameter
        >>> w = Parameter(pullback.zeros(2, 3))
        >>> w.requires_grad, w.is_leaf
        (True, True)
    """

    __slots__ = ()

    def __init__(self, data: Any = None, requires_grad: bool = True) -> None:
        from pullback.creation import _array_from, empty

        if data is None:
            data = empty(0)
        array, device = _array_from(data, None, None, copy=False)  # a Tensor's array is shared
        self._init_leaf(array, device, requires_grad)

    def __deepcopy__(self, memo: dict[int, Any]) -> Parameter:
        return copy_leaf(self, memo)  # type: ignore[return-value]

    def __repr__(self) -> str:
        return "Parameter containing:\n" + super().__repr__()
