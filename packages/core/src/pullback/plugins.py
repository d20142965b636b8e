"""Finding, loading and registering plugins.

Plugins are modules named by entry points in the ``pullback`` group. ``import pullback``
registers only the built-in plugin, so that it costs no more than core itself: a package's own
plugin is registered when the package is imported (``import pullback.nn``), and the entry-point
plugins all load on first need: a device type, op or rule that is not registered yet, the list
of plugins, passes or exporters. Each module is imported, its declared hook API checked, and its
registration hooks called with ``register`` callbacks that record which distribution provided
what. A plugin that fails to import or to register is reported with a warning naming the
distribution and the error, and everything else keeps working.

Environment variables (read when plugins load):

* ``PULLBACK_DISABLE_PLUGINS``: ``1``/``all`` loads no entry-point plugin; otherwise a comma
  separated list of plugin or distribution names to skip.
* ``PULLBACK_PLUGINS``: a comma separated allowlist; only those plugins load.

Built-in parts (the CPU backend and core's ops) register through the same hooks, always.
"""

from __future__ import annotations

import importlib
import os
import threading
import warnings
from dataclasses import dataclass, field
from importlib import metadata
from types import ModuleType
from typing import Any, Callable

import pluggy

from . import hookspecs
from .errors import PluginError

GRAPH_PASSES: dict[str, Callable[..., Any]] = {}
EXPORTERS: dict[str, Callable[..., Any]] = {}


@dataclass
class PluginRecord:
    """What one plugin is and what it registered."""

    name: str
    distribution: str
    version: str
    module: str
    registered: dict[str, list[str]] = field(default_factory=dict)
    error: str | None = None

    def add(self, kind: str, what: str) -> None:
        self.registered.setdefault(kind, []).append(what)


class PluginWarning(UserWarning):
    """A plugin could not be loaded; pullback goes on without it."""


_pm = pluggy.PluginManager(hookspecs.PROJECT)
_pm.add_hookspecs(hookspecs)
_records: dict[str, PluginRecord] = {}
_failed: dict[str, PluginRecord] = {}
_lock = threading.RLock()
_loaded = False  # set once loading has finished: other threads may then skip the lock
_loading = False  # set while this process loads: a re-entrant call from a plugin returns


def plugin_manager() -> pluggy.PluginManager:
    """The pluggy manager (for inspection; register plugins with :func:`register_plugin`)."""
    return _pm


def records() -> dict[str, PluginRecord]:
    """Loaded plugins by name (every installed plugin is loaded first)."""
    load_plugins()
    return dict(_records)


def failed() -> dict[str, PluginRecord]:
    """Plugins that failed to load, by name (``error`` says why)."""
    load_plugins()
    return dict(_failed)


def _check_api(module: Any, name: str, dist: str) -> None:
    declared = getattr(module, "pullback_hook_api", None)
    ours = hookspecs.HOOK_API_VERSION
    if declared is None:
        raise PluginError(
            f"plugin '{name}' ({dist}) does not declare pullback_hook_api; this core speaks hook "
            f"API {ours[0]}.{ours[1]}"
        )
    try:
        major, minor = (int(p) for p in str(declared).split(".")[:2])
    except ValueError:
        raise PluginError(f"plugin '{name}' ({dist}) declares a malformed pullback_hook_api "
                          f"{declared!r}") from None
    if major != ours[0] or minor > ours[1]:
        raise PluginError(
            f"plugin '{name}' ({dist}) was built for pullback hook API {declared}, but this core "
            f"provides {ours[0]}.{ours[1]}; install a version of {dist} built for this pullback"
        )


def _registrars(record: PluginRecord) -> dict[str, Callable[..., None]]:
    from .backends import register_backend
    from .registry import register_kernel, register_op, register_rule

    owner = record.distribution

    def backend(b: Any) -> None:
        register_backend(b, owner)
        record.add("backends", b.name)

    def op(o: Any) -> None:
        register_op(o, owner)
        record.add("ops", o.name)

    def kernel(op_name: str, backend_name: str, fn: Callable[..., Any]) -> None:
        register_kernel(op_name, backend_name, fn, owner)
        record.add("kernels", f"{op_name}[{backend_name}]")

    def rule(op_name: str, key: str, fn: Any) -> None:
        register_rule(op_name, key, fn, owner)
        record.add("rules", f"{op_name}:{key}")

    def graph_pass(name: str, fn: Callable[..., Any]) -> None:
        _register_unique(GRAPH_PASSES, "graph pass", name, fn, owner)
        record.add("graph_passes", name)

    def exporter(name: str, fn: Callable[..., Any]) -> None:
        _register_unique(EXPORTERS, "exporter", name, fn, owner)
        record.add("exporters", name)

    return {
        "register_backends": backend, "register_ops": op, "register_kernels": kernel,
        "register_rules": rule, "register_graph_passes": graph_pass,
        "register_exporters": exporter,
    }


_OWNERS: dict[tuple[str, str], str] = {}


def _register_unique(table: dict[str, Any], kind: str, name: str, fn: Any, owner: str) -> None:
    if name in table and table[name] is not fn:
        raise PluginError(f"{kind} '{name}' registered twice: by {_OWNERS[(kind, name)]} and by {owner}")
    table[name] = fn
    _OWNERS[(kind, name)] = owner


def register_plugin(module: ModuleType | Any, name: str | None = None,
                    distribution: str | None = None, version: str = "") -> PluginRecord:
    """Register a plugin object or module now and run its registration hooks.

    Registering the same object twice is a no-op (so a package may make sure its own plugin
    is registered on import even when entry-point loading is disabled).
    """
    with _lock:
        name = name or str(getattr(module, "__name__", repr(module)))
        for rec in _records.values():
            if _pm.get_plugin(rec.name) is module:
                return rec
        if name in _records:
            raise PluginError(f"a different plugin is already registered as '{name}'")
        dist = distribution or name
        record = PluginRecord(name=name, distribution=dist, version=version,
                              module=getattr(module, "__name__", type(module).__name__))
        _check_api(module, name, dist)
        _register_with_pluggy(module, name, dist)
        try:
            calls = _registrars(record)
            for hook_name in hookspecs.HOOK_NAMES:
                for impl in getattr(_pm.hook, hook_name).get_hookimpls():
                    if impl.plugin is module:
                        impl.function(register=calls[hook_name])
        except Exception:
            _undo(record)
            _pm.unregister(module)
            raise
        _records[name] = record
        return record


def _register_with_pluggy(module: Any, name: str, dist: str) -> None:
    """Register with pluggy, refusing hook implementations that match no hookspec (a typo such
    as ``register_backend`` would otherwise register nothing, silently)."""
    try:
        _pm.register(module, name=name)
    except pluggy.PluginValidationError as exc:
        raise PluginError(f"plugin '{name}' ({dist}) is invalid: {exc}") from None
    unknown = sorted(c.name for c in _pm.get_hookcallers(module) or [] if not c.has_spec())
    if unknown:
        _pm.unregister(module)
        raise PluginError(
            f"plugin '{name}' ({dist}) implements unknown hooks {', '.join(unknown)}; "
            f"the hooks are {', '.join(hookspecs.HOOK_NAMES)}"
        )


def unregister_plugin(name: str) -> None:
    """Remove a plugin and everything it registered (for tests and throw-away plugins)."""
    with _lock:
        record = _records.pop(name, None)
        if record is None:
            raise PluginError(f"no plugin registered as '{name}'")
        _undo(record)
        _pm.unregister(name=name)


def _undo(record: PluginRecord) -> None:
    from . import backends, registry

    for b in record.registered.get("backends", []):
        backends._BACKENDS.pop(b, None)
        backends.BACKEND_OWNERS.pop(b, None)
        for spec in [s for s, d in backends.Device._cache.items() if d.type == b]:
            del backends.Device._cache[spec]
        # Kernels built from generic factories on this backend's namespace are a cache: drop
        # them, or a later backend of the same name would run the old namespace's kernels.
        for declared in registry.OPS.values():
            if ("kernel:" + b, declared.name) not in registry.RULE_OWNERS:
                declared.kernels.pop(b, None)
    for o in record.registered.get("ops", []):
        registry.OPS.pop(o, None)
        registry.OP_OWNERS.pop(o, None)
    for k in record.registered.get("kernels", []):
        op_name, backend = k[:-1].split("[")
        op = registry.OPS.get(op_name)
        if op is not None:
            op.kernels.pop(backend, None)
        _drop_pending(registry._pending_kernels, op_name, backend, record.distribution)
        registry.RULE_OWNERS.pop(("kernel:" + backend, op_name), None)
    for r in record.registered.get("rules", []):
        op_name, key = r.split(":", 1)
        op = registry.OPS.get(op_name)
        if op is not None:
            op.rules.pop(key, None)
            if key == "grad":
                op._grad = None
        _drop_pending(registry._pending_rules, op_name, key, record.distribution)
        registry.RULE_OWNERS.pop((key, op_name), None)
    for p in record.registered.get("graph_passes", []):
        GRAPH_PASSES.pop(p, None)
    for e in record.registered.get("exporters", []):
        EXPORTERS.pop(e, None)


def _drop_pending(pending: dict[str, list[Any]], op_name: str, key: str, owner: str) -> None:
    """Forget a kernel or rule still waiting for its op, so that it is not attached later."""
    left = [p for p in pending.get(op_name, []) if not (p[0] == key and p[2] == owner)]
    if left:
        pending[op_name] = left
    else:
        pending.pop(op_name, None)


def _env_list(var: str) -> list[str] | None:
    value = os.environ.get(var)
    if value is None or not value.strip():
        return None
    return [v.strip() for v in value.split(",") if v.strip()]


def _wanted(name: str, dist: str) -> bool:
    disabled = _env_list("PULLBACK_DISABLE_PLUGINS")
    if disabled is not None:
        if any(d.lower() in ("1", "all", "true", "*") for d in disabled):
            return False
        if name in disabled or dist in disabled:
            return False
    allow = _env_list("PULLBACK_PLUGINS")
    if allow is not None and name not in allow and dist not in allow:
        return False
    return True


def register_builtin() -> None:
    """Register core's own plugin (the CPU backend and core's ops), once: ``import pullback``."""
    with _lock:
        if "pullback" not in _records:
            from . import _plugin

            register_plugin(_plugin, name="pullback", distribution="pullback",
                            version=_version("pullback"))


def plugins_loaded() -> bool:
    """Whether every entry-point plugin has been loaded (a cheap check for the look-ups that
    fall back to :func:`load_plugins` when something is not registered yet)."""
    return _loaded


def load_plugins() -> None:
    """Register the built-in plugin and every entry-point plugin (once; thread-safe)."""
    global _loaded, _loading
    if _loaded:
        return
    with _lock:
        # Another thread waits on the lock until loading is complete; the loading thread
        # itself re-enters (a plugin importing pullback.nn, say) and must not start over.
        if _loaded or _loading:
            return
        _loading = True
        try:
            register_builtin()
            for ep in sorted(metadata.entry_points(group=hookspecs.PROJECT),
                             key=lambda e: e.name):
                dist = ep.dist.name if ep.dist is not None else ep.name
                if not _wanted(ep.name, dist):
                    continue
                _load_entry_point(ep, dist)
        finally:
            _loading = False
            _loaded = True


def _load_entry_point(ep: Any, dist: str) -> None:
    version = ep.dist.version if ep.dist is not None else ""
    try:
        module = ep.load()
        register_plugin(module, name=ep.name, distribution=dist, version=version)
    except Exception as exc:  # a broken plugin must not take pullback down
        _failed[ep.name] = PluginRecord(name=ep.name, distribution=dist, version=version,
                                        module=ep.value, error=f"{type(exc).__name__}: {exc}")
        warnings.warn(
            f"pullback: plugin '{ep.name}' from {dist} {version} failed to load and was skipped: "
            f"{type(exc).__name__}: {exc}",
            PluginWarning,
            stacklevel=3,
        )


def ensure_registered(module_name: str, name: str, distribution: str) -> None:
    """Make sure a package's own plugin is registered (called by ``pullback.nn`` & co. on
    import, so they work even with entry-point loading disabled, and without loading the other
    plugins)."""
    register_builtin()
    if name in _records:
        return
    module = importlib.import_module(module_name)
    register_plugin(module, name=name, distribution=distribution, version=_version(distribution))


def _version(dist: str) -> str:
    try:
        return metadata.version(dist)
    except metadata.PackageNotFoundError:
        return ""


def graph_passes() -> dict[str, Callable[..., Any]]:
    """Registered graph passes by name."""
    load_plugins()
    return dict(GRAPH_PASSES)


def exporters() -> dict[str, Callable[..., Any]]:
    """Registered exporters by format name."""
    load_plugins()
    return dict(EXPORTERS)
