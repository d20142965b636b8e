"""What a compiled function works on: the modules and optimizers it can reach.

torch.compile finds them by reading bytecode; here it is enough to look where Python keeps what a
function refers to: a bound method's ``self``, the closure's cells, the globals its code names
(also in nested code objects: a training step's inner functions) and its defaults. Modules give
parameter and buffer names (and ``training`` flags for the guards); optimizers give their
parameters and the state structure the guards check.
"""

from __future__ import annotations

import types
from dataclasses import dataclass, field
from typing import Any, Iterator

from pullback.tensor import Tensor


def _is_module(x: Any) -> bool:
    return hasattr(x, "named_parameters") and hasattr(x, "named_buffers") and hasattr(x, "training")


def _is_optimizer(x: Any) -> bool:
    return hasattr(x, "param_groups") and hasattr(x, "state") and hasattr(x, "step")


@dataclass
class Discovered:
    """Modules and optimizers by first appearance, and each tensor's (kind, name, tensor)."""

    modules: list[Any] = field(default_factory=list)
    optimizers: list[Any] = field(default_factory=list)
    tensors: dict[int, tuple[str, str, Tensor]] = field(default_factory=dict)
    # every module's submodules, listed once: their training flags are guards read at every
    # call (walking the module tree each time cost a microsecond per call for a small model)
    submodules: list[Any] = field(default_factory=list)

    def add(self, obj: Any, name: str) -> None:
        if _is_module(obj) and all(m is not obj for m in self.modules):
            self.modules.append(obj)
            self.submodules.extend(obj.modules())
            prefix = "" if not self.modules[:-1] else f"{name}."
            for pname, p in obj.named_parameters():
                self.tensors.setdefault(id(p), ("param", prefix + pname, p))
            for bname, b in obj.named_buffers():
                self.tensors.setdefault(id(b), ("buffer", prefix + bname, b))
        elif _is_optimizer(obj) and all(o is not obj for o in self.optimizers):
            self.optimizers.append(obj)
            for g, group in enumerate(obj.param_groups):
                for i, p in enumerate(group["params"]):
                    self.tensors.setdefault(id(p), ("param", f"{name}.param_groups[{g}][{i}]", p))

    def training_flags(self) -> tuple[bool, ...]:
        return tuple([m.training for m in self.submodules])

    def optimizer_structure(self) -> tuple[Any, ...]:
        """Per optimizer, the keys of each parameter's state (an update's path depends on them:
        SGD's first step makes its momentum buffer)."""
        return tuple(tuple(tuple(s) for s in opt.state.values()) for opt in self.optimizers)


def _code_names(code: types.CodeType) -> Iterator[str]:
    yield from code.co_names
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            yield from _code_names(const)


def discover(fn: Any) -> Discovered:
    """The modules and optimizers ``fn`` can reach (a Module itself, when ``fn`` is one)."""
    found = Discovered()
    if _is_module(fn):
        found.add(fn, type(fn).__name__)
        return found
    owner = getattr(fn, "__self__", None)
    if owner is not None:
        found.add(owner, "self")
    func = getattr(fn, "__func__", fn)
    code = getattr(func, "__code__", None)
    if code is None:
        return found
    for name, cell in zip(code.co_freevars, func.__closure__ or ()):
        try:
            found.add(cell.cell_contents, name)
        except ValueError:  # an empty cell
            continue
    names = func.__globals__
    for name in dict.fromkeys(_code_names(code)):
        if name in names:
            found.add(names[name], name)
    for value in func.__defaults__ or ():
        found.add(value, "default")
    return found
