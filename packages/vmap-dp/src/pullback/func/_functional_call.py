"""``functional_call``: run a Module with parameters and buffers given by name (PyTorch's
``torch.func.functional_call``), so that transforms can differentiate or batch them."""

from __future__ import annotations

from typing import Any, Mapping, Sequence

from ._errors import FuncError


def functional_call(module: Any, parameters_and_buffers: Mapping[str, Any] | Sequence[Mapping[str, Any]],
                    args: Any = (), kwargs: Mapping[str, Any] | None = None, *,
                    tie_weights: bool = True, strict: bool = False) -> Any:
    """``module(*args, **kwargs)`` with some parameters and buffers replaced by given tensors.

    Args:
        module: a ``pullback.nn.Module``.
        parameters_and_buffers: ``{dotted name: tensor}`` (or a sequence of such dicts), as
            ``dict(module.named_parameters())`` names them.
        args: the positional arguments (a tuple, or a single argument).
        kwargs: keyword arguments.
        tie_weights: a tensor given for a parameter shared by several modules (a GPT's tied
            embedding and head) replaces it everywhere, as in PyTorch.
        strict: every parameter and buffer must be given.

    The module's own tensors are put back afterwards, whatever happens.

    Example:
        >>> import pullback as pb, pullback.nn as nn
        >>> from pullback.func import functional_call, grad
        >>> model = nn.Linear(3, 1)
        >>> params = {k: v.detach() for k, v in model.named_parameters()}
        >>> loss = lambda p, x: functional_call(model, p, (x,)).sum()
        >>> sorted(grad(loss)(params, pb.ones(2, 3)))
        ['bias', 'weight']
    """
    given: dict[str, Any] = {}
    tables = [parameters_and_buffers] if isinstance(parameters_and_buffers, Mapping) \
        else list(parameters_and_buffers)
    for table in tables:
        for name, value in table.items():
            if name in given:
                raise FuncError(f"functional_call: '{name}' is given twice")
            given[name] = value
    # (submodule, table name, entry name) of every registered tensor, shared ones included
    slots: dict[str, list[tuple[Any, str, str]]] = {}
    originals: dict[int, str] = {}
    for prefix, sub in module.named_modules(remove_duplicate=False):
        for table in ("_parameters", "_buffers"):
            for leaf, tensor in sub.__dict__[table].items():
                name = f"{prefix}.{leaf}" if prefix else leaf
                slots.setdefault(name, []).append((sub, table, leaf))
                if tensor is not None:
                    originals.setdefault(id(tensor), name)
    unknown = sorted(set(given) - set(slots))
    if unknown:
        raise FuncError(f"functional_call: {type(module).__name__} has no parameter or buffer "
                        f"named {', '.join(unknown)}")
    if strict:
        missing = sorted(set(slots) - set(given))
        if missing:
            raise FuncError(f"functional_call: strict=True and no tensor given for "
                            f"{', '.join(missing)}")
    replaced: dict[int, Any] = {}
    swaps: list[tuple[Any, str, str, Any]] = []
    for name, value in given.items():
        for sub, table, leaf in slots[name]:
            old = sub.__dict__[table][leaf]
            if tie_weights and old is not None:
                replaced[id(old)] = value
            swaps.append((sub, table, leaf, value))
    if tie_weights:  # other names of a shared tensor follow it
        for name, entries in slots.items():
            if name in given:
                continue
            for sub, table, leaf in entries:
                old = sub.__dict__[table][leaf]
                if old is not None and id(old) in replaced:
                    swaps.append((sub, table, leaf, replaced[id(old)]))
    saved = [(sub, table, leaf, sub.__dict__[table][leaf]) for sub, table, leaf, _ in swaps]
    try:
        for sub, table, leaf, value in swaps:
            sub.__dict__[table][leaf] = value
        call_args = args if isinstance(args, tuple) else (args,)
        return module(*call_args, **dict(kwargs or {}))
    finally:
        for sub, table, leaf, old in reversed(saved):
            sub.__dict__[table][leaf] = old

