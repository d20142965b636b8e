"""The allow-list of classes and functions that :func:`pullback.load` may rebuild from a file,
under PyTorch's names (``torch.serialization.add_safe_globals`` and friends).

A file names a class by its module and qualified name (``__main__.Net``,
``pullback.nn.modules.linear.Linear``). With ``weights_only=True`` (the default) a name is
resolved only through this table: the class objects the user allowed, and pullback.nn's own
layers (with the functions layers hold, such as an activation), allowed by default. Nothing is
imported because a file named it, and no name outside the table is looked up.

With ``weights_only=False`` (PyTorch's "I trust this file") a name is also looked up among the
modules this process has already imported, still without importing anything: pullback runs no
code from the file either way, and never calls the rebuilt class's ``__init__``.
"""

from __future__ import annotations

import importlib
import pkgutil
import sys
import threading
import types
from typing import Any, Iterable

from .errors import CheckpointError

_lock = threading.Lock()
_user_allowed: dict[str, Any] = {}
_default_allowed: dict[str, Any] | None = None


class UnsafeGlobalError(CheckpointError):
    """A file names a class or function that ``weights_only`` loading may not rebuild (it is
    not in the allow-list); the message names it and the line of code that would allow it."""


def global_name(obj: Any) -> str:
    """The name a file gives a class or function: its module and qualified name (the module
    ``__mp_main__`` of a spawned process is the parent's ``__main__``)."""
    module = getattr(obj, "__module__", None) or "builtins"
    if module == "__mp_main__":
        module = "__main__"
    return f"{module}.{obj.__qualname__}"


def add_safe_globals(safe_globals: Iterable[Any]) -> None:
    """Allow ``weights_only`` loading to rebuild these classes (and refer to these functions),
    as ``torch.serialization.add_safe_globals``.

    Each entry is a class or function, or a ``(object, "module.Name")`` pair naming it as the
    file does (for a class that moved since the file was written).

    Example:
        >>> import pullback
        >>> from pullback import nn
        >>> class Net(nn.Module):
        ...     pass
        >>> pullback.serialization.add_safe_globals([Net])
        >>> Net in pullback.serialization.get_safe_globals()
        True
        >>> pullback.serialization.clear_safe_globals()
    """
    entries = {}
    for entry in safe_globals:
        if isinstance(entry, tuple):
            if len(entry) != 2 or not isinstance(entry[1], str):
                raise TypeError("add_safe_globals: a tuple entry is (object, 'module.Name'), "
                                f"got {entry!r}")
            entries[entry[1]] = entry[0]
        elif callable(entry):
            entries[global_name(entry)] = entry
        else:
            raise TypeError(f"add_safe_globals: {entry!r} is not a class or function")
    with _lock:
        _user_allowed.update(entries)


def get_safe_globals() -> list[Any]:
    """The classes and functions the user allowed (pullback.nn's, allowed by default, are not
    listed, as PyTorch lists only what was added)."""
    with _lock:
        return list(dict.fromkeys(_user_allowed.values()))


def clear_safe_globals() -> None:
    """Forget every class and function the user allowed."""
    with _lock:
        _user_allowed.clear()


class safe_globals:  # noqa: N801 - PyTorch's name
    """A context manager that allows these classes and functions inside its block, as
    ``torch.serialization.safe_globals``::

        with pullback.serialization.safe_globals([Net]):
            model = pullback.load("model.pt")
    """

    def __init__(self, safe_globals: Iterable[Any]) -> None:
        self.safe_globals = list(safe_globals)

    def __enter__(self) -> None:
        with _lock:
            self._saved = dict(_user_allowed)
        add_safe_globals(self.safe_globals)

    def __exit__(self, *exc_info: Any) -> None:
        with _lock:
            _user_allowed.clear()
            _user_allowed.update(self._saved)


def resolve(name: str, weights_only: bool, file: str) -> Any:
    """The class or function a file names, or :class:`UnsafeGlobalError` (weights-only and not
    allowed) or :class:`CheckpointError` (not found in this process)."""
    if not isinstance(name, str):
        raise CheckpointError(f"load({file!r}): malformed class name {name!r} in the pullback "
                              "metadata")
    with _lock:
        found = _user_allowed.get(name)
    if found is None:
        found = _defaults().get(name)
    if found is not None:
        return found
    if weights_only:
        raise UnsafeGlobalError(refusal_message(name, file))
    found = _imported(name)
    if found is None:
        raise CheckpointError(
            f"load({file!r}): {name} is not defined in this process; import the module that "
            "defines it before loading (pullback never imports a module a file names)")
    return found


def refusal_message(name: str, file: str) -> str:
    """PyTorch's words for a refused global, with the line that would allow it."""
    return (
        f"load({file!r}): Weights only load failed. Unsupported global: GLOBAL {name} was not "
        "an allowed global by default. Please use "
        f"`torch.serialization.add_safe_globals([{name}])` or the "
        f"`torch.serialization.safe_globals([{name}])` context manager to allowlist this "
        "global if you trust this class/function (torch is pullback here). Loading with "
        "weights_only=False also rebuilds classes already imported in this process; in "
        "pullback neither way runs code from the file."
    )


def _imported(name: str) -> Any:
    """``module.Qual.Name`` among the modules already imported (no import, no ``getattr``
    hooks: a module's ``__getattr__`` could import or run code), or None."""
    parts = name.split(".")
    for split in range(len(parts) - 1, 0, -1):
        module = sys.modules.get(".".join(parts[:split]))
        if module is None:
            continue
        obj: Any = module
        for part in parts[split:]:
            namespace = getattr(obj, "__dict__", None)
            if not isinstance(namespace, (dict, types.MappingProxyType)) or part not in namespace:
                return None
            obj = namespace[part]
        if isinstance(obj, type) or isinstance(obj, (types.FunctionType,
                                                     types.BuiltinFunctionType)):
            return obj
        return None
    return None


def _defaults() -> dict[str, Any]:
    """pullback.nn's layers and Parameter, the functions of pullback.nn.functional and of
    core's ops, and the classes a pullback.nn module lists in its ``_SAFE_GLOBALS`` (what layers
    hold as attributes: activations, hooks), by the names files give them; empty without
    pullback-nn. Built once, on the first load that needs it."""
    global _default_allowed
    if _default_allowed is not None:
        return _default_allowed
    table: dict[str, Any] = {}
    try:
        nn = importlib.import_module("pullback.nn")
    except ImportError:
        nn = None
    if nn is not None:
        for info in pkgutil.walk_packages(nn.__path__, "pullback.nn.", onerror=lambda _: None):
            if info.name.rsplit(".", 1)[-1] in ("_plugin", "_docs") \
                    or info.name.startswith("pullback.nn.data"):
                continue  # the plugin, the docs and the data sets hold no layers
            try:
                importlib.import_module(info.name)
            except ImportError:
                continue  # a part that needs an optional dependency: its layers stay out
        allowed_bases = (nn.Module, nn.Parameter)
        for module_name, module in list(sys.modules.items()):
            if module is None or not module_name.startswith(("pullback.nn.", "pullback._ops")):
                continue
            holds_functions = module_name.startswith(("pullback.nn.functional", "pullback._ops"))
            for obj in getattr(module, "_SAFE_GLOBALS", ()):  # other classes layers hold
                table[global_name(obj)] = obj
            for obj in list(vars(module).values()):
                if getattr(obj, "__module__", None) != module_name:
                    continue  # re-exported: it is listed under the module that defines it
                if isinstance(obj, type) and issubclass(obj, allowed_bases):
                    table[global_name(obj)] = obj
                elif holds_functions and isinstance(obj, types.FunctionType):
                    table[global_name(obj)] = obj
    _default_allowed = table
    return table
