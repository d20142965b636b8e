"""``pullback.nn.utils.parametrize`` (PyTorch's ``torch.nn.utils.parametrize``): a module's
parameter or buffer computed by a chain of modules from stored originals.

``register_parametrization(module, "weight", P)`` moves ``module.weight`` to
``module.parametrizations.weight.original`` (or ``original0``, ``original1``... when ``P``'s
``right_inverse`` returns several tensors) and makes ``module.weight`` a property computing
``P(original)`` at each access, so gradients reach the originals. The module's class is swapped
for a subclass holding that property (``Parametrized<Class>``), as PyTorch does, and the
``state_dict`` keys are PyTorch's, so parametrized checkpoints load either way.
"""

from __future__ import annotations

import contextlib
from typing import Any, Iterator

import pullback
from pullback.tensor import Tensor

from ..containers import ModuleDict, ModuleList
from ..module import Module
from ..parameter import Parameter

# Inside ``cached()``: the value of each parametrized tensor, computed once per context.
_cache_depth = 0
_cache: dict[tuple[int, str], Tensor] = {}


@contextlib.contextmanager
def cached() -> Iterator[None]:
    """Within the context, each parametrized tensor is computed once and reused (for a tensor
    used many times in one forward, such as an RNN's weights)."""
    global _cache_depth
    _cache_depth += 1
    try:
        yield
    finally:
        _cache_depth -= 1
        if not _cache_depth:
            _cache.clear()


def _store(target: Module, name: str, value: Tensor, requires_grad: bool | None) -> None:
    """``value`` as parameter ``name`` of ``target`` (a buffer when ``requires_grad`` is None)."""
    if requires_grad is None:
        target.register_buffer(name, value)
    else:
        target.register_parameter(name, Parameter(value, requires_grad=requires_grad))


class ParametrizationList(ModuleList):
    """The chain of parametrizations of one tensor, holding the originals it is computed from.

    Calling it returns the parametrized tensor; :meth:`right_inverse` sets the originals from
    a value of the tensor (the right inverses applied in reverse order).
    """

    def __init__(self, modules: list[Module], original: Tensor, unsafe: bool = False) -> None:
        super().__init__(modules)
        self.unsafe = unsafe
        requires_grad = original.requires_grad if isinstance(original, Parameter) else None
        with pullback.no_grad():
            new = original.detach()
            for module in reversed(list(self)):
                if hasattr(module, "right_inverse"):
                    new = module.right_inverse(new)
        self.is_tensor = isinstance(new, Tensor)
        self.ntensors = 1 if self.is_tensor else len(new)
        if self.is_tensor:
            if tuple(new.shape) == tuple(original.shape) and new.dtype == original.dtype:
                with pullback.no_grad():
                    original.copy_(new)  # the same Parameter: optimizers holding it keep it
                new = original
            if isinstance(new, Parameter):
                self.register_parameter("original", new)
            else:
                _store(self, "original", new, requires_grad)
        else:
            for i, tensor in enumerate(new):
                _store(self, f"original{i}", tensor.detach(), requires_grad)

    def originals(self) -> list[Tensor]:
        """The stored tensors the chain starts from."""
        if self.is_tensor:
            return [self.original]
        return [getattr(self, f"original{i}") for i in range(self.ntensors)]

    def right_inverse(self, value: Tensor) -> None:
        """Set the originals so that the chain returns ``value`` (for ``module.weight = x``)."""
        with pullback.no_grad():
            for module in reversed(list(self)):
                if hasattr(module, "right_inverse"):
                    value = module.right_inverse(value)
                elif not self.unsafe:
                    raise RuntimeError(f"parametrization {type(module).__name__} does not "
                                       "implement right_inverse")
            values = [value] if self.is_tensor else list(value)
            if len(values) != self.ntensors:
                raise ValueError(f"right_inverse returned {len(values)} tensors; the "
                                 f"parametrization holds {self.ntensors}")
            for original, new in zip(self.originals(), values):
                original.copy_(new)

    def forward(self) -> Tensor:  # type: ignore[override]
        modules = list(self)
        x = modules[0](*self.originals())
        for module in modules[1:]:
            x = module(x)
        return x


def _parametrized_property(name: str) -> property:
    def get(module: Module) -> Tensor:
        chain = module.parametrizations[name]
        if not _cache_depth:
            return chain()
        key = (id(module), name)
        if key not in _cache:
            _cache[key] = chain()
        return _cache[key]

    def set_(module: Module, value: Tensor) -> None:
        module.parametrizations[name].right_inverse(value)

    return property(get, set_, doc=f"``{name}`` computed by its parametrizations")


def is_parametrized(module: Module, tensor_name: str | None = None) -> bool:
    """Whether ``module`` has parametrizations (for ``tensor_name``, when given)."""
    chains = module.__dict__.get("_modules", {}).get("parametrizations")
    if not isinstance(chains, ModuleDict):
        return False
    return len(chains) > 0 if tensor_name is None else tensor_name in chains


def type_before_parametrizations(module: Module) -> type:
    """The class ``module`` had before its first parametrization."""
    return type(module).__bases__[0] if is_parametrized(module) else type(module)


def register_parametrization(module: Module, tensor_name: str, parametrization: Module, *,
                             unsafe: bool = False) -> Module:
    """Make ``module.<tensor_name>`` the output of ``parametrization`` (appended to the chain
    when the tensor is parametrized already).

    The first parametrization of a tensor stores ``parametrization.right_inverse(tensor)``
    (the tensor itself without a ``right_inverse``) as the originals. Unless ``unsafe``, the
    parametrized value must keep the tensor's shape and dtype.
    """
    parametrization.train(module.training)
    if is_parametrized(module, tensor_name):
        chain = module.parametrizations[tensor_name]
        if not unsafe:
            before = getattr(module, tensor_name)
            _check_same_kind(tensor_name, before, parametrization(before))
        chain.append(parametrization)
        chain.unsafe |= unsafe
        return module
    if tensor_name not in module._parameters and tensor_name not in module._buffers:
        raise ValueError(f"register_parametrization: module {type(module).__name__} has no "
                         f"parameter, buffer or parametrized tensor named {tensor_name!r}")
    original = getattr(module, tensor_name)
    chain = ParametrizationList([parametrization], original, unsafe=unsafe)
    if not unsafe:
        _check_same_kind(tensor_name, original, chain())
    delattr(module, tensor_name)
    if not is_parametrized(module):
        cls = type(module)
        module.__class__ = type(f"Parametrized{cls.__name__}", (cls,), {})
        module.parametrizations = ModuleDict()
    setattr(type(module), tensor_name, _parametrized_property(tensor_name))
    module.parametrizations[tensor_name] = chain
    return module


def _check_same_kind(name: str, before: Tensor, after: Any) -> None:
    if not isinstance(after, Tensor) or tuple(after.shape) != tuple(before.shape) or \
            after.dtype != before.dtype:
        got = (f"shape {tuple(after.shape)}, dtype {after.dtype}" if isinstance(after, Tensor)
               else type(after).__name__)
        raise ValueError(f"register_parametrization: the parametrization of {name!r} must "
                         f"keep its shape {tuple(before.shape)} and dtype {before.dtype} "
                         f"(got {got}); pass unsafe=True to allow it")


def remove_parametrizations(module: Module, tensor_name: str,
                            leave_parametrized: bool = True) -> Module:
    """Undo the parametrizations of ``tensor_name``: the tensor becomes a plain parameter (or
    buffer) again, holding its parametrized value (``leave_parametrized``) or the original."""
    if not is_parametrized(module, tensor_name):
        raise ValueError(f"remove_parametrizations: module {type(module).__name__} has no "
                         f"parametrization on {tensor_name!r}")
    chain = module.parametrizations[tensor_name]
    if chain.is_tensor:
        value = chain.original
        if leave_parametrized:
            with pullback.no_grad():
                value.copy_(getattr(module, tensor_name))
    elif leave_parametrized:
        with pullback.no_grad():
            tensor = getattr(module, tensor_name)
        wants_grad = any(o.requires_grad for o in chain.originals())
        value = Parameter(tensor, requires_grad=wants_grad) if wants_grad else tensor
    else:
        raise ValueError("remove_parametrizations: a tensor parametrized by several originals "
                         "cannot be left unparametrized (leave_parametrized=False)")
    delattr(type(module), tensor_name)
    del module.parametrizations[tensor_name]
    if isinstance(value, Parameter):
        module.register_parameter(tensor_name, value)
    else:
        module.register_buffer(tensor_name, value)
    if not is_parametrized(module):
        delattr(module, "parametrizations")
        module.__class__ = type(module).__bases__[0]
    return module


__all__ = ["ParametrizationList", "cached", "is_parametrized", "register_parametrization",
           "remove_parametrizations", "type_before_parametrizations"]
