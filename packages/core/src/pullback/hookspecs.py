"""The plugin hooks of pullback: the one place where the plugin API is defined.

Every hook is a *registration* hook, called once when a plugin loads (never on the per-op hot
path). Each receives a ``register`` callback; the plugin calls it once per thing it provides.
The loader records which distribution registered what (for ``python -m pullback plugins`` and
for errors about duplicates).

A plugin module declares the hook API it was built against::

    pullback_hook_api = "1.0"

A plugin built for another major version, or for a newer minor version than this core, is
refused with a message that says so.
"""

from __future__ import annotations

from typing import Any, Callable

import pluggy

PROJECT = "pullback"
HOOK_API_VERSION = (1, 0)

hookspec = pluggy.HookspecMarker(PROJECT)
hookimpl = pluggy.HookimplMarker(PROJECT)


@hookspec
def register_backends(register: Callable[[Any], None]) -> None:
    """Register device backends.

    :param register: call ``register(backend)`` with a :class:`pullback.backends.Backend`
        instance for each backend (its ``name`` is the device type, e.g. ``"cuda"``).
    :return: nothing; results are not collected.

    Two backends with one name are an error that names both distributions.
    """


@hookspec
def register_ops(register: Callable[[Any], None]) -> None:
    """Declare new ops in the op registry.

    :param register: call ``register(op)`` with a :class:`pullback.registry.Op` (forward
        kernels and grad rule attached) for each op.
    :return: nothing; results are not collected.

    Two ops with one name are an error that names both distributions.
    """


@hookspec
def register_kernels(register: Callable[[str, str, Callable[..., Any]], None]) -> None:
    """Add backend kernels to existing ops (or to ops another plugin declares later).

    :param register: call ``register(op_name, backend_name, kernel)``; the kernel takes the
        op's input arrays positionally and its attributes as keywords, and returns an array.
    :return: nothing; results are not collected.

    A kernel registered for an (op, backend) pair that already has one from another
    distribution is an error naming both.
    """


@hookspec
def register_rules(register: Callable[[str, str, Any], None]) -> None:
    """Attach transform rules to ops: ``"batch"`` (vmap), ``"c99"``, ``"onnx"``, ...

    :param register: call ``register(op_name, rule_key, rule)``; the rule's signature is the
        contract of whoever reads ``rule_key``.
    :return: nothing; results are not collected.
    """


@hookspec
def register_graph_passes(register: Callable[[str, Callable[..., Any]], None]) -> None:
    """Register graph optimization passes (used by the compiler).

    :param register: call ``register(name, graph_pass)``.
    :return: nothing; results are not collected.
    """


@hookspec
def register_exporters(register: Callable[[str, Callable[..., Any]], None]) -> None:
    """Register model exporters by format name (``"c99"``, ``"onnx"``).

    :param register: call ``register(format_name, exporter)``.
    :return: nothing; results are not collected.
    """


HOOK_NAMES = (
    "register_backends", "register_ops", "register_kernels", "register_rules",
    "register_graph_passes", "register_exporters",
)
