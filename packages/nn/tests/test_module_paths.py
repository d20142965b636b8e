"""Scripts import layers from torch.nn.modules' submodules (``from torch.nn.modules.activation
import MultiheadAttention``): every such path of a layer pullback.nn has exists here too, and
names the same class."""

from __future__ import annotations

import importlib
import inspect
import pkgutil

import pytest

from pullback import nn

torch = pytest.importorskip("torch", reason="PyTorch's module layout is the reference")


def _torch_paths() -> list[tuple[str, str]]:
    """(submodule, class name) for each class a torch.nn.modules submodule defines that
    pullback.nn also has."""
    import torch.nn.modules as modules

    paths = []
    for info in pkgutil.iter_modules(modules.__path__):
        module = importlib.import_module(f"torch.nn.modules.{info.name}")
        paths += [(info.name, name) for name, value in vars(module).items()
                  if inspect.isclass(value) and value.__module__ == module.__name__
                  and not name.startswith("_") and hasattr(nn, name)]
    return paths


PATHS = _torch_paths()


def test_the_reference_paths_cover_the_common_imports():
    assert {("activation", "MultiheadAttention"), ("container", "Sequential"),
            ("sparse", "Embedding"), ("rnn", "LSTM"), ("transformer", "Transformer"),
            ("linear", "Linear")} <= set(PATHS)


@pytest.mark.parametrize("submodule,name", PATHS, ids=[f"{m}.{n}" for m, n in PATHS])
def test_torch_module_path_exists(submodule, name):
    ours = importlib.import_module(f"pullback.nn.modules.{submodule}")
    assert getattr(ours, name, None) is getattr(nn, name)
