"""``Module``: the base class of every layer (PyTorch's ``nn.Module`` API).

A module owns parameters, buffers and submodules, all registered by assigning attributes. It
walks them (``parameters()``, ``named_modules()``...), moves them (``to``), switches modes
(``train``/``eval``), runs hooks around ``forward`` and saves/restores them as a state dict.
"""

from __future__ import annotations

import copy
from collections import OrderedDict
from typing import Any, Callable, Iterator, NamedTuple

import numpy as np

import pullback
from pullback.errors import CheckpointError
from pullback.tensor import Tensor
from pullback.utils.hooks import RemovableHandle

from .parameter import Buffer, Parameter


class IncompatibleKeys(NamedTuple):
    """What ``load_state_dict(strict=False)`` could not match."""

    missing_keys: list[str]
    unexpected_keys: list[str]


_hook_ids = iter(range(1 << 62))


class Module:
    """Base class of layers and models: subclass it, assign layers in ``__init__``, write
    ``forward``.

    Example:
        >>> import pullback
        >>> from pullback import nn
        >>> class MLP(nn.Module):
        ...     def __init__(self):
        ...         super().__init__()
        ...         self.fc1 = nn.Linear(4, 8)
        ...         self.fc2 = nn.Linear(8, 2)
        ...     def forward(self, x):
        ...         return self.fc2(self.fc1(x).relu())
        >>> model = MLP()
        >>> model(pullback.randn(3, 4)).shape
        (3, 2)
        >>> [name for name, _ in model.named_parameters()]
        ['fc1.weight', 'fc1.bias', 'fc2.weight', 'fc2.bias']
    """

    training: bool

    def __init__(self) -> None:
        # Written through object.__setattr__: our own __setattr__ reads these dicts.
        object.__setattr__(self, "training", True)
        object.__setattr__(self, "_parameters", OrderedDict())
        object.__setattr__(self, "_buffers", OrderedDict())
        object.__setattr__(self, "_non_persistent", set())
        object.__setattr__(self, "_modules", OrderedDict())
        object.__setattr__(self, "_forward_pre_hooks", OrderedDict())
        object.__setattr__(self, "_forward_hooks", OrderedDict())

    def forward(self, *args: Any, **kwargs: Any) -> Any:
        """The computation; every subclass defines it."""
        raise NotImplementedError(f"{type(self).__name__} has no forward() method")

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        d = self.__dict__
        post = d.get("_forward_hooks")
        if post is None:
            raise AttributeError(
                f"{type(self).__name__}.__init__ did not call super().__init__()"
            )
        pre = d["_forward_pre_hooks"]
        if not pre and not post:  # no hooks: the per-call cost of a layer in batch-1 inference
            return self.forward(*args, **kwargs)
        for hook in list(pre.values()):
            result = hook(self, args)
            if result is not None:
                args = result if isinstance(result, tuple) else (result,)
        out = self.forward(*args, **kwargs)
        for hook in list(post.values()):
            result = hook(self, args, out)
            if result is not None:
                out = result
        return out

    # -- registration ----------------------------------------------------------------------
    # PyTorch's rules, check for check: assigning a Parameter, a Module or a Buffer registers
    # it; re-assigning a registered name replaces the entry where it stands (the order of
    # children(), named_*() and state_dict() is kept); a name registered as one kind and
    # assigned another kind moves to the new table; None keeps a registered slot.
    def __setattr__(self, name: str, value: Any) -> None:
        d = self.__dict__
        params = d.get("_parameters")
        if isinstance(value, Parameter):
            if params is None:
                raise _before_init(self, "parameters")
            _remove(name, d, d["_buffers"], d["_modules"], d["_non_persistent"])
            self.register_parameter(name, value)
        elif params is not None and name in params:
            if value is not None:
                raise TypeError(f"cannot assign '{_typename(value)}' as parameter '{name}' of "
                                f"{type(self).__name__} (a Parameter or None expected)")
            self.register_parameter(name, value)
        elif isinstance(value, Module):
            if "_modules" not in d:
                raise _before_init(self, "module")
            _remove(name, d, d["_parameters"], d["_buffers"], d["_non_persistent"])
            d["_modules"][name] = value
        elif name in d.get("_modules", ()):
            if value is not None:
                raise TypeError(f"cannot assign '{_typename(value)}' as child module '{name}' "
                                f"of {type(self).__name__} (a Module or None expected)")
            d["_modules"][name] = value
        elif isinstance(value, Buffer) or name in d.get("_buffers", ()):
            if value is not None and not isinstance(value, Tensor):
                raise TypeError(f"cannot assign '{_typename(value)}' as buffer '{name}' of "
                                f"{type(self).__name__} (a Buffer, a Tensor or None expected)")
            persistent = value.persistent if isinstance(value, Buffer) else \
                name not in d["_non_persistent"]
            self.register_buffer(name, value, persistent)
        else:
            object.__setattr__(self, name, value)

    def __getattr__(self, name: str) -> Any:
        d = self.__dict__
        # parameters first, without a loop: a layer's forward reads its weight and bias here
        # on every call (a tenth of a batch-1 linear layer's Python)
        params = d.get("_parameters")
        if params is not None and name in params:
            return params[name]
        for table in ("_buffers", "_modules"):
            entries = d.get(table)
            if entries is not None and name in entries:
                return entries[name]
        raise AttributeError(f"'{type(self).__name__}' object has no attribute '{name}'")

    def __delattr__(self, name: str) -> None:
        d = self.__dict__
        for table in ("_parameters", "_buffers", "_modules"):
            if name in d[table]:
                del d[table][name]
                d["_non_persistent"].discard(name)
                return
        object.__delattr__(self, name)

    def __dir__(self) -> list[str]:
        names = set(super().__dir__())
        for table in (self._parameters, self._buffers, self._modules):
            names.update(table)
        return sorted(names)

    def register_parameter(self, name: str, param: Parameter | None) -> None:
        """Register ``param`` (or ``None``, an absent optional parameter) under ``name``; a
        parameter already registered there is replaced in its place."""
        if "_parameters" not in self.__dict__:
            raise _before_init(self, "parameter")
        _check_name(self, "parameter", name, self._parameters)
        if param is not None and not isinstance(param, Parameter):
            raise TypeError(f"cannot assign '{_typename(param)}' object to parameter '{name}' "
                            "(a Parameter or None required)")
        self._parameters[name] = param

    def register_buffer(self, name: str, tensor: Tensor | None, persistent: bool = True) -> None:
        """Register a tensor that is state but not a parameter (running statistics...); a
        buffer already registered there is replaced in its place.

        Non-persistent buffers move with ``to()`` but stay out of ``state_dict()``.
        """
        if "_buffers" not in self.__dict__:
            raise _before_init(self, "buffer")
        _check_name(self, "buffer", name, self._buffers)
        if tensor is not None and not isinstance(tensor, Tensor):
            raise TypeError(f"cannot assign '{_typename(tensor)}' object to buffer '{name}' "
                            "(a Tensor or None required)")
        self._buffers[name] = tensor
        if persistent:
            self._non_persistent.discard(name)
        else:
            self._non_persistent.add(name)

    def add_module(self, name: str, module: Module | None) -> None:
        """Register a submodule under ``name`` (a submodule already there is replaced in its
        place)."""
        if module is not None and not isinstance(module, Module):
            raise TypeError(f"{_typename(module)} is not a Module subclass")
        _check_name(self, "module", name, self._modules)
        self._modules[name] = module

    register_module = add_module

    def get_submodule(self, target: str) -> Module:
        """The submodule at a dotted path (``"encoder.layers.0"``); ``""`` is self."""
        module = self
        if not target:
            return module
        for part in target.split("."):
            child = module._modules.get(part)
            if child is None:
                raise AttributeError(f"{type(module).__name__} has no submodule '{part}' "
                                     f"(looking up '{target}')")
            module = child
        return module

    def get_parameter(self, target: str) -> Parameter:
        """The parameter at a dotted path (``"fc1.weight"``)."""
        owner, _, name = target.rpartition(".")
        param = self.get_submodule(owner)._parameters.get(name)
        if param is None:
            raise AttributeError(f"no parameter '{target}' in {type(self).__name__}")
        return param

    # -- walking ---------------------------------------------------------------------------
    def named_modules(self, memo: set[int] | None = None, prefix: str = "",
                      remove_duplicate: bool = True) -> Iterator[tuple[str, Module]]:
        """``(dotted name, module)`` for self and every descendant, each module once."""
        if memo is None:
            memo = set()
        if remove_duplicate:
            if id(self) in memo:
                return
            memo.add(id(self))
        yield prefix, self
        for name, child in self._modules.items():
            if child is not None:
                yield from child.named_modules(memo, f"{prefix}.{name}" if prefix else name,
                                               remove_duplicate)

    def modules(self) -> Iterator[Module]:
        """Self and every descendant module."""
        for _, m in self.named_modules():
            yield m

    def named_children(self) -> Iterator[tuple[str, Module]]:
        """Direct submodules with their names."""
        seen: set[int] = set()
        for name, child in self._modules.items():
            if child is not None and id(child) not in seen:
                seen.add(id(child))
                yield name, child

    def children(self) -> Iterator[Module]:
        """Direct submodules."""
        for _, child in self.named_children():
            yield child

    def _named_members(self, table: str, prefix: str, recurse: bool,
                       remove_duplicate: bool) -> Iterator[tuple[str, Any]]:
        seen: set[int] = set()
        modules = self.named_modules(prefix=prefix, remove_duplicate=remove_duplicate) \
            if recurse else [(prefix, self)]
        for mod_prefix, module in modules:
            for name, value in getattr(module, table).items():
                if value is None or (remove_duplicate and id(value) in seen):
                    continue
                seen.add(id(value))
                yield (f"{mod_prefix}.{name}" if mod_prefix else name), value

    def named_parameters(self, prefix: str = "", recurse: bool = True,
                         remove_duplicate: bool = True) -> Iterator[tuple[str, Parameter]]:
        """``(dotted name, parameter)``; a parameter shared by two layers appears once."""
        return self._named_members("_parameters", prefix, recurse, remove_duplicate)

    def parameters(self, recurse: bool = True) -> Iterator[Parameter]:
        """Every parameter (each once, even when shared)."""
        for _, p in self.named_parameters(recurse=recurse):
            yield p

    def named_buffers(self, prefix: str = "", recurse: bool = True,
                      remove_duplicate: bool = True) -> Iterator[tuple[str, Tensor]]:
        """``(dotted name, buffer)`` for every buffer."""
        return self._named_members("_buffers", prefix, recurse, remove_duplicate)

    def buffers(self, recurse: bool = True) -> Iterator[Tensor]:
        """Every buffer."""
        for _, b in self.named_buffers(recurse=recurse):
            yield b

    # -- modes and gradients -----------------------------------------------------------------
    def train(self, mode: bool = True) -> Module:
        """Training mode (dropout active, batch norm uses batch statistics); returns self."""
        if not isinstance(mode, bool):
            raise TypeError(f"train(mode): mode must be a bool, got {type(mode).__name__}")
        for m in self.modules():
            object.__setattr__(m, "training", mode)
        return self

    def eval(self) -> Module:
        """Evaluation mode: ``train(False)``."""
        return self.train(False)

    def requires_grad_(self, requires_grad: bool = True) -> Module:
        """Set ``requires_grad`` on every parameter (freeze with ``False``); returns self."""
        for p in self.parameters():
            p.requires_grad = requires_grad
        return self

    def zero_grad(self, set_to_none: bool = True) -> None:
        """Reset the gradients of every parameter (to ``None`` by default, as in PyTorch)."""
        for p in self.parameters():
            if p.grad is None:
                continue
            if set_to_none:
                p.grad = None
            else:
                p.grad = pullback.zeros_like(p.grad)

    # -- moving ------------------------------------------------------------------------------
    def to(self, *args: Any, **kwargs: Any) -> Module:
        """Move and/or cast parameters and buffers: ``to(device)``, ``to(dtype)``, both.

        Parameters stay the same objects (their data is replaced), so references held elsewhere
        (an optimizer, weight tying) stay valid. Only floating-point tensors change dtype.
        """
        def convert(t: Tensor) -> Tensor:
            if t.dtype.kind in "fV" or not _casts_dtype(args, kwargs):
                return t.to(*args, **kwargs)
            return t.to(*[a for a in args if not _is_dtype(a)], device=kwargs.get("device"))

        with pullback.no_grad():
            for p in self.parameters():
                moved = convert(p)
                if moved is not p:
                    p.data = moved
                if p.grad is not None:
                    p.grad = convert(p.grad)
            for m in self.modules():
                for name, b in m._buffers.items():
                    if b is not None:
                        m._buffers[name] = convert(b)
        return self

    def cpu(self) -> Module:
        """Move to the CPU."""
        return self.to("cpu")

    def cuda(self, index: int = 0) -> Module:
        """Move to ``cuda:index`` (needs pullback-cuda)."""
        return self.to(f"cuda:{index}")

    def float(self) -> Module:
        """Cast floating-point parameters and buffers to float32."""
        return self.to(np.float32)

    def double(self) -> Module:
        """Cast floating-point parameters and buffers to float64."""
        return self.to(np.float64)

    def half(self) -> Module:
        """Cast floating-point parameters and buffers to float16."""
        return self.to(np.float16)

    def bfloat16(self) -> Module:
        """Cast floating-point parameters and buffers to bfloat16."""
        return self.to(pullback.bfloat16)

    def apply(self, fn: Callable[[Module], Any]) -> Module:
        """Call ``fn`` on every submodule (children first) and on self; returns self."""
        for child in self.children():
            child.apply(fn)
        fn(self)
        return self

    # -- hooks -------------------------------------------------------------------------------
    def register_forward_pre_hook(self, hook: Callable[..., Any]) -> RemovableHandle:
        """``hook(module, args)`` runs before ``forward``; returning a value replaces ``args``."""
        key = next(_hook_ids)
        self._forward_pre_hooks[key] = hook
        return RemovableHandle(self._forward_pre_hooks, key)

    def register_forward_hook(self, hook: Callable[..., Any]) -> RemovableHandle:
        """``hook(module, args, output)`` runs after ``forward``; returning a value replaces
        the output."""
        key = next(_hook_ids)
        self._forward_hooks[key] = hook
        return RemovableHandle(self._forward_hooks, key)

    # -- state dict --------------------------------------------------------------------------
    def state_dict(self, destination: dict[str, Any] | None = None, prefix: str = "",
                   keep_vars: bool = False) -> dict[str, Tensor]:
        """Parameters and persistent buffers by dotted name (an ``OrderedDict``).

        The tensors share memory with the module's; without ``keep_vars`` they are detached.
        A parameter shared by two layers appears under both names (as in PyTorch).
        """
        out: dict[str, Tensor] = OrderedDict() if destination is None else destination
        for mod_prefix, module in self.named_modules(prefix=prefix.rstrip("."),
                                                     remove_duplicate=False):
            base = f"{mod_prefix}." if mod_prefix else ""
            for name, p in module._parameters.items():
                if p is not None:
                    out[base + name] = p if keep_vars else p.detach()
            for name, b in module._buffers.items():
                if b is not None and name not in module._non_persistent:
                    out[base + name] = b if keep_vars else b.detach()
        return out

    def load_state_dict(self, state_dict: dict[str, Any], strict: bool = True) -> IncompatibleKeys:
        """Copy values into the parameters and buffers (in place: the objects stay the same).

        Values may be Tensors of another dtype or device, or NumPy arrays; they are cast and
        moved to each parameter's dtype and device. A value whose shape differs is always an
        error; missing and unexpected keys are errors when ``strict``. One
        :class:`~pullback.errors.CheckpointError` lists every problem.

        Returns:
            ``IncompatibleKeys(missing_keys, unexpected_keys)``.
        """
        own = self.state_dict(keep_vars=True)
        missing = [k for k in own if k not in state_dict]
        unexpected = [k for k in state_dict if k not in own]
        mismatched = []
        for key, target in own.items():
            if key in state_dict:
                shape = tuple(np.shape(state_dict[key]))
                if shape != tuple(target.shape):
                    mismatched.append(f"{key}: checkpoint has shape {shape}, the model "
                                      f"{tuple(target.shape)}")
        problems = []
        if strict and missing:
            problems.append("missing keys: " + ", ".join(missing))
        if strict and unexpected:
            problems.append("unexpected keys: " + ", ".join(unexpected))
        if mismatched:
            problems.append("shape mismatch for " + "; ".join(mismatched))
        if problems:
            raise CheckpointError(f"error(s) loading state_dict into {type(self).__name__}: "
                                  + " | ".join(problems))
        with pullback.no_grad():
            for key, target in own.items():
                if key in state_dict:
                    value = state_dict[key]
                    if not isinstance(value, Tensor):
                        value = pullback.tensor(np.asarray(value), dtype=target.dtype,
                                                device=target.device)
                    target.copy_(value.to(target.device, target.dtype))
        return IncompatibleKeys(missing, unexpected)

    # -- printing --------------------------------------------------------------------------
    def extra_repr(self) -> str:
        """The text inside this module's parentheses in ``repr`` (override in layers)."""
        return ""

    def __repr__(self) -> str:
        lines = []
        extra = self.extra_repr()
        if extra:
            lines.extend(extra.split("\n"))
        for name, child in self._modules.items():
            body = repr(child).replace("\n", "\n  ")
            lines.append(f"({name}): {body}")
        name = type(self).__name__
        if not lines:
            return f"{name}()"
        if len(lines) == 1 and not self._modules:
            return f"{name}({lines[0]})"
        return f"{name}(\n  " + "\n  ".join(lines) + "\n)"

    def __deepcopy__(self, memo: dict[int, Any]) -> Module:
        """``copy.deepcopy(module)``: new parameters, buffers and submodules with the same values
        (``.grad`` included); a parameter shared inside the module stays shared in the copy.

        Modules are not pickled (see ``__reduce_ex__``), so the copy is made here: the buffers,
        plain Tensors, are copied first, then the attributes go through ``copy.deepcopy``.
        """
        new = type(self).__new__(type(self))
        memo[id(self)] = new
        for buffer in self._buffers.values():
            if buffer is not None:
                copy.deepcopy(buffer, memo)
        new.__dict__.update(copy.deepcopy(self.__dict__, memo))
        return new

    @classmethod
    def _validate_loaded_state(cls, state: dict[str, Any], where: str) -> None:
        """Check the attributes ``pullback.load`` is about to give a Module it rebuilt from a
        file (without ``__init__``): every registry ``Module.__init__`` makes is there, of its
        type, and holds what it registers. ``where`` names the file and the module.

        Raises:
            CheckpointError: naming the attribute and what it holds instead.
        """
        reference = Module.__new__(Module)
        Module.__init__(reference)
        for name, default in vars(reference).items():
            if name not in state:
                raise CheckpointError(f"{where}: the Module attribute '{name}' is missing")
            if type(state[name]) is not type(default):
                raise CheckpointError(f"{where}: the Module attribute '{name}' is a "
                                      f"{type(state[name]).__name__}, not a "
                                      f"{type(default).__name__}")
        for registry, kind in (("_parameters", Parameter), ("_buffers", Tensor),
                               ("_modules", Module)):
            for key, value in state[registry].items():
                if not isinstance(key, str) or not (value is None or isinstance(value, kind)):
                    raise CheckpointError(
                        f"{where}: {registry}[{key!r}] is a {type(value).__name__}, not a "
                        f"{kind.__name__} or None")
        for name in vars(reference):
            if name.endswith("_hooks") and not all(callable(h) for h in state[name].values()):
                raise CheckpointError(f"{where}: {name} holds something that is not callable")

    def share_memory(self) -> Module:
        """Move every parameter, buffer and existing gradient into shared memory (see
        ``Tensor.share_memory_``), as PyTorch, so that processes started afterwards update
        this module's numbers (a Hogwild! trainer); returns ``self``."""
        for t in [*self.parameters(), *self.buffers()]:
            t.share_memory_()
            if t.grad is not None:
                t.grad.share_memory_()
        return self

    def __reduce_ex__(self, protocol: Any) -> Any:
        from pullback.multiprocessing import _reductions

        if _reductions.spawning():  # an argument of a process being started: sent as data
            return _reductions.reduce_module(self)
        raise TypeError("pullback modules are not pickled; save them with pullback.save "
                        "(or pass them to a process of pullback.multiprocessing)")


def _check_name(module: Module, kind: str, name: Any, table: dict[str, Any]) -> None:
    """PyTorch's checks of a name to register (and its exception classes)."""
    if not isinstance(name, str):
        raise TypeError(f"{kind} name should be a string. Got {_typename(name)}")
    if "." in name:
        raise KeyError(f'{kind} name can\'t contain ".", got: {name}')
    if name == "":
        raise KeyError(f'{kind} name can\'t be empty string ""')
    if name not in table and hasattr(module, name):
        raise KeyError(f"attribute '{name}' already exists")


def _before_init(module: Module, what: str) -> AttributeError:
    return AttributeError(f"cannot assign {what} before Module.__init__() call (call "
                          f"super().__init__() first in {type(module).__name__}.__init__)")


def _remove(name: str, *tables: Any) -> None:
    """Drop ``name`` from each dict or set (an assignment moving it to another table)."""
    for table in tables:
        if isinstance(table, set):
            table.discard(name)
        else:
            table.pop(name, None)


def _typename(value: Any) -> str:
    cls = type(value)
    return cls.__qualname__ if cls.__module__ == "builtins" else f"{cls.__module__}.{cls.__qualname__}"


def _is_dtype(a: Any) -> bool:
    from pullback.backends import Device

    if isinstance(a, (Device, Tensor)):
        return False
    if isinstance(a, str):
        return a in ("float16", "half", "float32", "float", "float64", "double", "bfloat16",
                     "int8", "int16", "int32", "int64", "long", "uint8", "bool")
    return True


def _casts_dtype(args: tuple[Any, ...], kwargs: dict[str, Any]) -> bool:
    return kwargs.get("dtype") is not None or any(_is_dtype(a) for a in args)
