"""How a Proxy passed to ``pullback.relu`` (or ``F.linear``, ``pullback.cat``...) becomes a
``call_function`` node.

PyTorch routes such calls through ``__torch_function__``, a check made in C on every call of
every function. pullback has no such protocol: adding one would put a scan of the arguments on
the path of every op, which pullback keeps to a few dictionary look-ups. Instead, while a tracer
is active (a :class:`~pullback.fx.Tracer` inside ``trace``, or a live
:class:`~pullback.fx.proxy.GraphAppendingTracer`), the public functions of
:data:`~pullback.fx._names.NAMESPACES` are replaced by stand-ins that record a node when a
Proxy is among their arguments and call the function otherwise. When the last tracer is done,
the functions are put back: with no tracer, nothing is changed and nothing is slower.

A stand-in compares and hashes equal to its function, so ``node.target == pullback.add`` holds
whichever of the two the name gave; nodes always record the function itself. Where user code
sees a target while the stand-ins are in place (a Tracer's ``create_proxy``/``create_node``, a
Transformer's ``call_function``), a public function is shown as its stand-in, so that
``target is pullback.relu`` holds there too, and calling it on Proxies records it, as
``torch.relu(proxy)`` does in torch.fx. Other functions (those :func:`~pullback.fx.wrap` named)
are shown as themselves: calling one on Proxies traces into it (inlining it).
"""

from __future__ import annotations

import functools
import importlib
import threading
from typing import Any, Callable

from ._names import NAMESPACES, public_functions

_lock = threading.Lock()
_active_tracers = 0
_stand_ins: dict[Callable[..., Any], _StandIn] = {}


class _StandIn:
    """Calls ``function``, or records it when a Proxy is among the arguments."""

    def __init__(self, function: Callable[..., Any]) -> None:
        functools.update_wrapper(self, function)
        self.function = function

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        proxy = find_proxy((args, kwargs))
        if proxy is None:
            return self.function(*args, **kwargs)
        return proxy.tracer.create_proxy("call_function", presented(self.function), args,
                                         kwargs)

    def __eq__(self, other: object) -> bool:
        return original(other) is self.function

    def __hash__(self) -> int:
        return hash(self.function)

    def __repr__(self) -> str:
        return repr(self.function)


def original(fn: Any) -> Any:
    """The function behind a stand-in (anything else as it is)."""
    return fn.function if isinstance(fn, _StandIn) else fn


def presented(target: Any) -> Any:
    """The target as user code should see it now: the stand-in of a public function while the
    stand-ins are in place, anything else as it is."""
    if _active_tracers and callable(target) and not isinstance(target, _StandIn):
        try:
            if target in public_functions():
                return stand_in(target)
        except TypeError:  # unhashable
            pass
    return target


def stand_in(function: Callable[..., Any]) -> _StandIn:
    """The one stand-in of ``function``."""
    found = _stand_ins.get(function)
    if found is None:
        found = _stand_ins[function] = _StandIn(function)
    return found


def find_proxy(a: Any) -> Any:
    """The first Proxy inside ``a`` (tuples, lists, dicts, slices), or None."""
    from .proxy import Proxy

    if isinstance(a, Proxy):
        return a
    if isinstance(a, (tuple, list)):
        items: Any = a
    elif isinstance(a, dict):
        items = a.values()
    elif isinstance(a, slice):
        items = (a.start, a.stop, a.step)
    else:
        return None
    for item in items:
        found = find_proxy(item)
        if found is not None:
            return found
    return None


def tracer_started() -> None:
    """A tracer became active: the first one puts the stand-ins in place."""
    global _active_tracers
    with _lock:
        _active_tracers += 1
        if _active_tracers == 1:
            _swap(to_stand_ins=True)


def tracer_finished() -> None:
    """A tracer is done: the last one puts the functions back."""
    global _active_tracers
    with _lock:
        _active_tracers -= 1
        if _active_tracers == 0:
            _swap(to_stand_ins=False)


def _swap(to_stand_ins: bool) -> None:
    functions = public_functions()
    for namespace in NAMESPACES:
        module = importlib.import_module(namespace)
        for name, value in list(vars(module).items()):
            function = original(value)
            if not name.startswith("_") and callable(function) and function in functions:
                setattr(module, name, stand_in(function) if to_stand_ins else function)
