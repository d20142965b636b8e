"""Symbolic tracing: run a module's ``forward`` (or a function) on Proxies and keep the Graph
of what it did (torch.fx's ``symbolic_trace``, ``Tracer`` and ``wrap``).

While a trace runs, ``Module.__call__`` goes through :meth:`Tracer.call_module` (leaf modules
become ``call_module`` nodes, the others are traced through), and the functions that
:func:`wrap` named, the ``autowrap`` ones and pullback's public functions imported by name into
the traced code's module become stand-ins that record their calls. Everything is put back when
the trace ends, however it ends.
"""

from __future__ import annotations

import builtins
import inspect
import math
import sys
from types import ModuleType
from typing import Any, Callable

from pullback.nn import Module, Sequential
from pullback.tensor import Tensor

from . import _interception
from ._names import public_functions
from .graph import Graph
from .node import Argument, has_side_effect
from .proxy import ParameterProxy, Proxy, TracerBase

__all__ = ["Tracer", "symbolic_trace", "wrap"]

# (globals of a module, name) pairs that wrap() named: recorded as call sites when traced.
_wrapped: dict[tuple[int, str], dict[str, Any]] = {}
# Module's own methods, taken before any trace replaces them (a trace inside a trace must
# route module calls through its own tracer, not the outer one's stand-in).
_MODULE_CALL = Module.__call__
_MODULE_GETATTR = Module.__getattr__


def wrap(fn_or_name: str | Callable[..., Any]) -> str | Callable[..., Any]:
    """Keep calls of a free function of this module as ``call_function`` nodes instead of
    tracing into it; call it at module scope, with the function or its name::

        def normalize(x):
            return x / x.norm()  # whatever it does is not traced

        pullback.fx.wrap("normalize")

    ``wrap("len")`` records ``len(proxy)`` calls in this module as nodes.

    Returns:
        ``fn_or_name`` (so it works as a decorator).
    """
    name = fn_or_name if isinstance(fn_or_name, str) else getattr(fn_or_name, "__name__", None)
    if not isinstance(name, str):
        raise TypeError(f"wrap: expected a function or its name, got {fn_or_name!r}")
    caller = sys._getframe(1)
    if caller.f_code.co_name != "<module>":
        raise NotImplementedError("wrap must be called at the top level of a module")
    _wrapped[(id(caller.f_globals), name)] = caller.f_globals
    return fn_or_name


def is_wrapped(fn: Any) -> bool:
    """Whether ``fn`` is a function that :func:`wrap` named."""
    return any(table.get(name, getattr(builtins, name, None)) is fn
               for (_, name), table in _wrapped.items())


@has_side_effect
def assert_specialized(value: Any, expected: Any, name: str) -> None:
    """The guard of a ``concrete_args`` value: the traced graph holds for that value only."""
    if value is not expected and value != expected:
        raise ValueError(f"{name} has been specialized to have value {expected!r} but got "
                         f"another value ({value!r})")


class _Patcher:
    """Sets names in dicts and objects for the duration of a trace, then restores them."""

    def __init__(self) -> None:
        self._undo: list[Callable[[], None]] = []

    def patch_dict(self, table: dict[str, Any], name: str, value: Any) -> None:
        missing = name not in table
        before = table.get(name)
        table[name] = value
        self._undo.append(lambda: table.pop(name, None) if missing
                          else table.__setitem__(name, before))

    def patch_attribute(self, owner: Any, name: str, value: Any) -> None:
        before = owner.__dict__[name]
        setattr(owner, name, value)
        self._undo.append(lambda: setattr(owner, name, before))

    def restore(self) -> None:
        while self._undo:
            self._undo.pop()()


class Tracer(TracerBase):
    """Records a module's ``forward`` (or a function) into a :class:`~pullback.fx.Graph`.

    Subclass it to change what is recorded: :meth:`is_leaf_module` (which modules stay calls),
    :meth:`call_module`, :meth:`create_proxy`/:meth:`create_node` (tag or reroute nodes),
    :meth:`create_arg` (what values may be arguments), :meth:`trace`.

    Args:
        autowrap_modules: modules whose functions, imported by name into the traced code's
            module, are recorded as calls (``math`` by default: ``from math import sqrt``).
        autowrap_functions: more functions recorded that way.
        param_shapes_constant: parameters and buffers read in ``forward`` give Proxies whose
            ``shape``, ``size()``, ``dim()`` and ``numel()`` are the real values (Python may
            branch on them); by default those are recorded too.
    """

    def __init__(self, autowrap_modules: tuple[ModuleType, ...] = (math,),
                 autowrap_functions: tuple[Callable[..., Any], ...] = (),
                 param_shapes_constant: bool = False) -> None:
        self._autowrap = {value for module in autowrap_modules
                          for name, value in vars(module).items()
                          if not name.startswith("_") and callable(value)}
        self._autowrap.update(autowrap_functions)
        self.param_shapes_constant = param_shapes_constant
        self.graph = Graph(tracer_cls=type(self))
        self.root = Module()
        self.submodule_paths: dict[Module, str] = {}
        self.tensor_attrs: dict[int, str] = {}

    # -- what becomes a node -------------------------------------------------------------
    def is_leaf_module(self, m: Module, module_qualified_name: str) -> bool:
        """Whether ``m`` is recorded as one ``call_module`` node (True) or traced through.
        pullback.nn's layers are leaves, except ``Sequential`` (as torch.nn's in torch)."""
        return type(m).__module__.startswith("pullback.nn") and not isinstance(m, Sequential)

    def path_of_module(self, mod: Module) -> str:
        """The dotted path of submodule ``mod`` in the root (``"layer1.0.conv1"``).

        Raises:
            NameError: ``mod`` is not a submodule of the root (made inside ``forward``?).
        """
        path = self.submodule_paths.get(mod)
        if path is None:
            raise NameError(f"module {type(mod).__name__} is not installed as a submodule of "
                            "the traced module (modules made inside forward cannot be called "
                            "by the generated code)")
        return path

    def call_module(self, m: Module, forward: Callable[..., Any], args: tuple[Any, ...],
                    kwargs: dict[str, Any]) -> Any:
        """A module called during the trace: a ``call_module`` node for a leaf, else its
        ``forward`` traced through (``forward`` runs the module's hooks too)."""
        path = self.path_of_module(m)
        if not self.is_leaf_module(m, path):
            return forward(*args, **kwargs)
        return self.create_proxy("call_module", path, args, kwargs)

    def getattr(self, attr: str, attr_val: Any, parameter_proxy_cache: dict[str, Any]) -> Any:
        """What reading ``module.<attr>`` gives while tracing (``attr_val`` is the real value):
        for a parameter or buffer of the root, the Proxy of a ``get_attr`` node (one per path
        and trace), so that what forward computes from it stays in the graph; anything else
        as it is."""
        if not isinstance(attr_val, Tensor):
            return attr_val
        path = self.tensor_attrs.get(id(attr_val))
        if path is None:
            return attr_val
        proxy = parameter_proxy_cache.get(path)
        if proxy is None:
            factory = (lambda node: ParameterProxy(self, node, path, attr_val)) \
                if self.param_shapes_constant else None
            proxy = self.create_proxy("get_attr", path, (), {}, proxy_factory_fn=factory)
            parameter_proxy_cache[path] = proxy
        return proxy

    def create_arg(self, a: Any) -> Argument:
        """As :meth:`TracerBase.create_arg`, plus: a parameter, buffer or tensor attribute of
        the root becomes a ``get_attr`` node of its path; a submodule, its path as a
        ``get_attr``; another Tensor a constant attribute ``_tensor_constant<N>`` of the root
        (read with ``get_attr``)."""
        if isinstance(a, Tensor):
            path = self.tensor_attrs.get(id(a))
            if path is None:
                path = self._new_constant(a)
            return self.create_node("get_attr", path, (), {})
        if isinstance(a, Module):
            return self.create_node("get_attr", self.path_of_module(a), (), {})
        return super().create_arg(a)

    def _new_constant(self, tensor: Tensor) -> str:
        number = 0
        while hasattr(self.root, f"_tensor_constant{number}"):
            number += 1
        path = f"_tensor_constant{number}"
        # As in torch: the constant becomes a plain attribute of the root, where GraphModule
        # finds it and copies it.
        object.__setattr__(self.root, path, tensor)
        self.tensor_attrs[id(tensor)] = path
        return path

    # -- tracing -------------------------------------------------------------------------
    def trace(self, root: Module | Callable[..., Any],
              concrete_args: dict[str, Any] | None = None) -> Graph:
        """Run ``root``'s forward (or the function ``root``) on Proxies and return the Graph.

        Args:
            root: a Module or a function.
            concrete_args: arguments to fix instead of tracing (``{"training": False}``):
                Python sees their values, the generated forward keeps the parameter (with that
                value as default) and checks that calls pass the same value.

        Raises:
            TraceError: the code did something with a traced value that cannot be recorded.
        """
        if isinstance(root, Module):
            self.root = root
            fn = type(root).forward
        else:
            self.root = Module()
            fn = root
        self.graph = Graph(tracer_cls=type(self))
        self.submodule_paths = {m: name for name, m in self.root.named_modules()}
        self.tensor_attrs = tensor_paths(self.root)
        patcher = _Patcher()
        _interception.tracer_started()
        try:
            args, kwargs = self._placeholders(fn, isinstance(root, Module), concrete_args or {})
            self._patch(patcher, fn)
            result = fn(*args, **kwargs)
            self.create_node("output", "output", (self.create_arg(result),), {},
                             type_expr=getattr(fn, "__annotations__", {}).get("return"))
        finally:
            patcher.restore()
            _interception.tracer_finished()
        return self.graph

    def _placeholders(self, fn: Callable[..., Any], is_method: bool,
                      concrete_args: dict[str, Any]) -> tuple[list[Any], dict[str, Any]]:
        """The arguments to call ``fn`` with: a placeholder Proxy per parameter (the concrete
        value for those in ``concrete_args``), positional and keyword-only ones apart."""
        parameters = list(inspect.signature(fn).parameters.values())
        if is_method:
            parameters = parameters[1:]
        unknown = set(concrete_args) - {p.name for p in parameters}
        if unknown:
            raise TypeError(f"concrete_args names {sorted(unknown)}, which "
                            f"{getattr(fn, '__qualname__', fn)} does not take")
        args: list[Any] = [self.root] if is_method else []
        kwargs: dict[str, Any] = {}
        for p in parameters:
            if p.kind in (inspect.Parameter.VAR_POSITIONAL, inspect.Parameter.VAR_KEYWORD):
                star = "*" if p.kind is inspect.Parameter.VAR_POSITIONAL else "**"
                raise NotImplementedError(
                    f"symbolic tracing of {getattr(fn, '__qualname__', fn)}({star}{p.name}): "
                    "the number of arguments is not known; name them in the signature")
            if p.name in concrete_args:
                value = concrete_args[p.name]
                node = self.create_node("placeholder", p.name, (value,), {})
                if value is None or isinstance(value, (bool, int, float, str)):
                    self.create_node("call_function", assert_specialized,
                                     (node, value, p.name), {}, name="_assert")
            else:
                default = () if p.default is inspect.Parameter.empty else (p.default,)
                value = self.create_proxy("placeholder", p.name, default, {})
            if p.kind is inspect.Parameter.KEYWORD_ONLY:
                kwargs[p.name] = value
            else:
                args.append(value)
        return args, kwargs

    def _patch(self, patcher: _Patcher, fn: Callable[..., Any]) -> None:
        """Put the stand-ins in place for the duration of the trace."""
        for (_, name), table in list(_wrapped.items()):
            function = table.get(name, getattr(builtins, name, None))
            if function is not None:
                patcher.patch_dict(table, name, _interception.stand_in(function))
        patched: set[int] = set()  # the globals dicts already given their stand-ins
        self._autowrap_globals(patcher, getattr(fn, "__globals__", {}), patched)
        tracer = self

        def module_call(mod: Module, *args: Any, **kwargs: Any) -> Any:
            def forward(*args: Any, **kwargs: Any) -> Any:
                return _MODULE_CALL(mod, *args, **kwargs)

            forward_globals = getattr(type(mod).forward, "__globals__", None)
            if forward_globals is not None:
                tracer._autowrap_globals(patcher, forward_globals, patched)
            return tracer.call_module(mod, forward, args, kwargs)

        patcher.patch_attribute(Module, "__call__", module_call)
        parameter_proxies: dict[str, Proxy] = {}

        def module_getattr(mod: Module, attr: str) -> Any:
            return tracer.getattr(attr, _MODULE_GETATTR(mod, attr), parameter_proxies)

        patcher.patch_attribute(Module, "__getattr__", module_getattr)

    def _autowrap_globals(self, patcher: _Patcher, table: dict[str, Any],
                          patched: set[int]) -> None:
        """Stand-ins for the autowrap functions and pullback's public functions that the
        module of traced code imported under its own names."""
        if id(table) in patched:
            return
        patched.add(id(table))
        public = public_functions()
        for name, value in list(table.items()):
            if name.startswith("__"):
                continue
            try:
                wanted = value in self._autowrap or value in public
            except TypeError:  # unhashable
                continue
            if wanted and callable(value):
                patcher.patch_dict(table, name, _interception.stand_in(value))


def tensor_paths(root: Module) -> dict[int, str]:
    """id of every tensor the root holds (parameters, buffers, tensor attributes) -> path."""
    paths: dict[int, str] = {}
    for prefix, module in root.named_modules():
        base = f"{prefix}." if prefix else ""
        for table in (module._parameters, module._buffers, vars(module)):
            for name, value in table.items():
                if isinstance(value, Tensor):
                    paths.setdefault(id(value), base + name)
    return paths


def symbolic_trace(root: Module | Callable[..., Any],
                   concrete_args: dict[str, Any] | None = None) -> Any:
    """Trace ``root`` (a Module or a function) and return a
    :class:`~pullback.fx.GraphModule` that computes the same thing from generated Python.

    Example:
        >>> import pullback
        >>> from pullback import nn
        >>> from pullback.fx import symbolic_trace
        >>> class Net(nn.Module):
        ...     def __init__(self):
        ...         super().__init__()
        ...         self.fc = nn.Linear(4, 2)
        ...     def forward(self, x):
        ...         return pullback.relu(self.fc(x)) + 1
        >>> print(symbolic_trace(Net()).code.strip())
        def forward(self, x):
            fc = self.fc(x);  x = None
            relu = pullback.relu(fc);  fc = None
            add = relu + 1;  relu = None
            return add

    Args:
        root: what to trace.
        concrete_args: arguments to fix to a value instead of tracing (see :meth:`Tracer.trace`).
    """
    from .graph_module import GraphModule

    tracer = Tracer()
    graph = tracer.trace(root, concrete_args)
    name = type(root).__name__ if isinstance(root, Module) else getattr(root, "__name__",
                                                                       "function")
    return GraphModule(tracer.root, graph, name)
