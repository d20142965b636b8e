"""``Parameter``: a Tensor that a Module registers as a learnable weight."""

from __future__ import annotations

from typing import Any

from pullback.tensor import Tensor


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

    def __repr__(self) -> str:
        return "Parameter containing:\n" + super().__repr__()
