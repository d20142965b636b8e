"""PyTorch's public module paths and the ones pullback has under the same names.

A module path of PyTorch is public when none of its parts starts with an underscore (PyTorch's
own rule, ``test/test_public_bindings.py``); they are read from the installed torch's files,
without importing them. Two private paths that ported programs import are added
(``torch.utils.data._utils.collate``). pullback has a path when ``pullback.<rest>`` is found by
the import system.

    python tests-integration/torch_paths.py            # print the counts
    python tests-integration/torch_paths.py --write    # rewrite torch_module_paths.txt
"""

from __future__ import annotations

import argparse
import importlib
import importlib.util
import inspect
import pkgutil
import types
import warnings
from pathlib import Path
from typing import Any

LIST = Path(__file__).with_name("torch_module_paths.txt")
# private paths that ported programs import all the same
ALSO_IMPORTED = ("torch.utils.data._utils", "torch.utils.data._utils.collate")


def torch_public_paths(torch: types.ModuleType) -> list[str]:
    """Every public module path of the installed torch, sorted."""
    paths = ["torch"]

    def walk(folder: str, prefix: str) -> None:
        for info in pkgutil.iter_modules([folder]):
            if info.name.startswith("_"):
                continue
            paths.append(f"{prefix}.{info.name}")
            if info.ispkg:
                walk(str(Path(folder) / info.name), f"{prefix}.{info.name}")

    walk(str(Path(torch.__file__).parent), "torch")
    return sorted(set(paths) | set(ALSO_IMPORTED))


def pullback_path(torch_path: str) -> str:
    """``torch.nn.modules.conv`` -> ``pullback.nn.modules.conv``."""
    return "pullback" + torch_path[len("torch"):]


def has(torch_path: str) -> bool:
    """Whether pullback has the module path (its parents are imported to look)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            return importlib.util.find_spec(pullback_path(torch_path)) is not None
        except ImportError:  # a parent that is missing, or a distribution not installed
            return False


def implemented(paths: list[str]) -> list[str]:
    """The paths of ``paths`` that pullback has."""
    return [p for p in paths if has(p)]


def listed() -> list[str]:
    """The committed list of the torch paths pullback has."""
    return [line.strip() for line in LIST.read_text().splitlines()
            if line.strip() and not line.startswith("#")]


def exported(module: types.ModuleType) -> set[str]:
    """The names a pullback module exports: its ``__all__``, else the public names it defines
    itself (not those it imports)."""
    names = getattr(module, "__all__", None)
    if names is not None:
        return set(names)
    return {n for n in dir(module) if not n.startswith("_")
            and getattr(getattr(module, n), "__module__", None) == module.__name__}


def kind(value: Any) -> str:
    """What a name is, as far as porting code cares: a module, a class, a callable, a value."""
    if isinstance(value, types.ModuleType):
        return "module"
    if inspect.isclass(value):
        return "class"
    return "callable" if callable(value) else "value"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--write", action="store_true", help="rewrite torch_module_paths.txt")
    args = parser.parse_args()
    import torch

    paths = torch_public_paths(torch)
    ours = implemented(paths)
    print(f"PyTorch {torch.__version__}: {len(paths)} public module paths "
          f"({len(ALSO_IMPORTED)} private ones ported code imports included); pullback has "
          f"{len(ours)}")
    if args.write:
        LIST.write_text("# The torch module paths pullback has under the same names (pullback."
                        "<rest>), from\n# `python tests-integration/torch_paths.py --write` "
                        f"against PyTorch {torch.__version__}.\n" + "\n".join(ours) + "\n")


if __name__ == "__main__":
    main()
