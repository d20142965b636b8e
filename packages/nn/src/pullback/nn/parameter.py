"""``Parameter`` and ``Buffer``: Tensors that a Module registers when they are assigned as
attributes (a learnable weight; state that is not learned)."""

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


class Buffer(Tensor):
    """A Tensor that a Module registers as a buffer when it is assigned as an attribute
    (``torch.nn.Buffer``); a plain Tensor assigned to a new name stays a plain attribute.

    ``Buffer(t)`` shares ``t``'s memory (and version counter) and keeps its ``requires_grad``;
    ``persistent=False`` keeps it out of ``state_dict()``.

    Example:
        >>> import pullback
        >>> from pullback import nn
        >>> m = nn.Module()
        >>> m.steps = nn.Buffer(pullback.zeros(()), persistent=False)
        >>> [name for name, _ in m.named_buffers()], list(m.state_dict())
        (['steps'], [])
    """

    __slots__ = ("persistent",)

    def __init__(self, data: Any = None, *, persistent: bool = True) -> None:
        from pullback.creation import _array_from, empty

        if data is None:
            data = empty(0)
        array, device = _array_from(data, None, None, copy=False)
        self._init_leaf(array, device, isinstance(data, Tensor) and data.requires_grad)
        if isinstance(data, Tensor):
            self._version = data._version  # a view of the same memory, as detach() gives
        self.persistent = persistent
