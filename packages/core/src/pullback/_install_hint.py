"""How to install a missing pullback distribution, said in one line.

From a clone of the monorepo (pullback installed from it, or the current directory inside it) the
hint is the folder to install from, ``pip install /path/to/clone/packages/nn`` (``-e`` when core
itself is an editable install), since the distributions are not on a package index; elsewhere it
is the distribution's name.

``import pullback.nn`` without pullback-nn installed fails with a :class:`MissingSubpackageError`
that names the distribution and that command (the finder below), instead of "No module named".
``pullback.cuda`` is the exception: without pullback-cuda it is a small module whose
``is_available()`` says False (:mod:`pullback._cuda_absent`), as ported scripts ask that first.
"""

from __future__ import annotations

import re
import shlex
import sys
from functools import lru_cache
from importlib import metadata
from importlib.abc import MetaPathFinder
from importlib.util import spec_from_file_location
from pathlib import Path
from typing import Any

from .errors import MissingPackageError

# pullback.<name> subpackages and the distribution that provides each (DESIGN.md's table).
SUBPACKAGES = {
    "cuda": "pullback-cuda", "nn": "pullback-nn", "optim": "pullback-optim",
    "gpt": "pullback-gpt", "sutra": "pullback-sutra", "avyaya": "pullback-avyaya",
    "pramana": "pullback-pramana", "tarka": "pullback-tarka", "spanda": "pullback-spanda",
    "compiler": "pullback-compiler", "func": "pullback-vmap-dp", "dp": "pullback-vmap-dp",
    "distributed": "pullback-distributed", "fx": "pullback-fx",
}

class MissingSubpackageError(MissingPackageError, ModuleNotFoundError):
    """A ``pullback.<name>`` subpackage whose distribution is not installed: a
    ModuleNotFoundError too, so that code probing for optional parts (``pytest.importorskip``)
    treats it as absent."""


_CORE = Path(__file__).resolve().parent  # <clone>/packages/core/src/pullback in a clone


def clone_root() -> Path | None:
    """The monorepo clone pullback runs from: the one core is installed from (editable), else
    the one holding the current directory; ``None`` when neither is in a clone."""
    starts = [_CORE, Path.cwd().resolve()]
    for start in starts:
        for folder in (start, *start.parents):
            if (folder / "packages" / "core" / "pyproject.toml").is_file():
                return folder
    return None


@lru_cache(maxsize=None)
def _project_folders(root: Path) -> dict[str, Path]:
    """Distribution name -> its folder under ``root/packages``."""
    folders = {}
    for pyproject in sorted(root.glob("packages/*/pyproject.toml")):
        found = re.search(r'^name\s*=\s*"([^"]+)"', pyproject.read_text(), re.MULTILINE)
        if found:
            folders[found.group(1)] = pyproject.parent
    return folders


def install_command(distribution: str, extra: str = "") -> str:
    """The pip command that installs ``distribution`` (with ``extra``, e.g. ``"[cuda12]"``)."""
    root = clone_root()
    folder = _project_folders(root).get(distribution) if root is not None else None
    if folder is None or root is None:
        return f"pip install {shlex.quote(distribution + extra)}"
    editable = "-e " if _CORE.is_relative_to(root) else ""
    return f"pip install {editable}{shlex.quote(str(folder) + extra)}"


def missing_distribution_message(what: str, distribution: str) -> str:
    """``what is provided by distribution, which is not installed: pip install ...``."""
    return f"{what} is provided by {distribution}, which is not installed: " \
           f"{install_command(distribution)}"


class _MissingSubpackageFinder(MetaPathFinder):
    """Last on ``sys.meta_path``: reached only when no other finder found a ``pullback.<name>``
    subpackage; for one that a known distribution provides and that is not installed, raise the
    error that says how to install it."""

    def find_spec(self, fullname: str, path: Any = None, target: Any = None) -> Any:
        parent, _, name = fullname.partition(".")
        distribution = SUBPACKAGES.get(name) if parent == "pullback" else None
        if distribution is None or _installed(distribution):
            return None
        if fullname == "pullback.cuda":
            # ``torch.cuda.is_available()`` must answer False, not fail, in ported scripts.
            return spec_from_file_location(fullname, _CORE / "_cuda_absent.py")
        # No ``name=``: ``from pullback import nn`` would swallow a ModuleNotFoundError whose
        # name is the subpackage, and say "cannot import name 'nn'" instead of this message.
        raise MissingSubpackageError(missing_distribution_message(fullname, distribution))


def require_distribution(distribution: str, what: str) -> None:
    """Raise the one-line :class:`MissingSubpackageError` for ``what`` unless ``distribution`` is
    installed (for core functions that delegate to another distribution, as
    ``pullback.onnx.export`` to pullback-compiler)."""
    if not _installed(distribution):
        raise MissingSubpackageError(missing_distribution_message(what, distribution))


def _installed(distribution: str) -> bool:
    try:
        metadata.distribution(distribution)
    except metadata.PackageNotFoundError:
        return False
    return True


def install_missing_subpackage_finder() -> None:
    """Put the finder at the end of ``sys.meta_path`` (once)."""
    if not any(isinstance(f, _MissingSubpackageFinder) for f in sys.meta_path):
        sys.meta_path.append(_MissingSubpackageFinder())
