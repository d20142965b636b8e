"""``pullback.compile``: ``torch.compile``'s name and arguments over
:func:`pullback.compiler.compile`, which pullback-compiler provides (a one-line error naming it
when it is missing)."""

from __future__ import annotations

from typing import Any, Callable

# torch.compile arguments that choose among torch's own backends and tuning modes: pullback has
# one compiler, so they are accepted and change nothing.
_IGNORED = ("dynamic", "backend", "mode", "options")


def compile(model: Callable[..., Any] | None = None, *, fullgraph: bool = False,  # noqa: A001
            disable: bool = False, **options: Any) -> Any:
    """Compile a function or Module on its first call, as ``torch.compile``.

    Also a decorator (``@pullback.compile`` or ``@pullback.compile(fullgraph=True)``).

    Args:
        model: the function or Module.
        fullgraph: raise on anything that cannot be captured instead of running it eagerly.
        disable: return ``model`` itself (``torch.compile(model, disable=True)``).
        options: ``dynamic``, ``backend``, ``mode``, ``options``: accepted, without effect
            (pullback has one compiler).

    Raises:
        MissingPackageError: pullback-compiler is not installed.
        TypeError: an argument ``torch.compile`` does not have.
    """
    unknown = sorted(set(options) - set(_IGNORED))
    if unknown:
        raise TypeError(f"pullback.compile: unexpected argument(s) {', '.join(unknown)}")
    if model is None:
        return lambda fn: compile(fn, fullgraph=fullgraph, disable=disable, **options)
    if disable:
        return model
    from ._install_hint import require_distribution

    require_distribution("pullback-compiler", "pullback.compile")
    from pullback.compiler import compile as compile_with_pullback  # type: ignore[import-untyped,import-not-found,unused-ignore]

    return compile_with_pullback(model, fullgraph=fullgraph)
