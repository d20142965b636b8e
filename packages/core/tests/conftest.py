"""Fixtures for the plugin, device and CLI tests: throw-away plugins and backends registered in
this process, and throw-away *installed* distributions seen by a Python subprocess."""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any, Callable, Iterator

import numpy as np
import pytest

from pullback import plugins
from pullback.errors import PluginError
from pullback.backends import Backend


class NumpyBackend(Backend):
    """A third-party style backend on NumPy (the smallest honest backend), with knobs."""

    def __init__(self, name: str, count: int = 1, available: bool = True,
                 reason: str | None = None) -> None:
        self.name = name
        self._count = count
        self._available = available
        self._reason = reason
        self._generator = np.random.default_rng(0)

    @property
    def xp(self) -> Any:
        return np

    @property
    def array_type(self) -> type:
        return np.ndarray

    def is_available(self) -> bool:
        return self._available

    def unavailable_reason(self) -> str | None:
        return None if self._available else self._reason

    def device_count(self) -> int:
        return self._count if self._available else 0

    def generator(self, index: int = 0) -> np.random.Generator:
        return self._generator

    def manual_seed(self, seed: int) -> None:
        self._generator = np.random.default_rng(seed)


@pytest.fixture
def throwaway_plugin() -> Iterator[Callable[..., plugins.PluginRecord]]:
    """``register(obj, name, distribution=None)`` registers a plugin object for one test; every
    plugin registered this way is unregistered afterwards (with all it registered)."""
    names: list[str] = []

    def register(obj: Any, name: str, distribution: str | None = None) -> plugins.PluginRecord:
        record = plugins.register_plugin(obj, name=name, distribution=distribution or name)
        names.append(name)
        return record

    yield register
    for name in reversed(names):
        with contextlib.suppress(PluginError):  # the test may have unregistered it itself
            plugins.unregister_plugin(name)


class FakeSite:
    """A folder of installed distributions (``*.dist-info`` with entry points, plus modules),
    put first on ``PYTHONPATH`` of a fresh interpreter: importlib.metadata finds them exactly as
    it finds distributions installed by pip, without the cost of pip."""

    def __init__(self, root: Path) -> None:
        self.root = root
        root.mkdir(parents=True, exist_ok=True)

    def add_distribution(self, name: str, entry_points: dict[str, str],
                         modules: dict[str, str] | None = None, version: str = "1.0") -> None:
        info = self.root / f"{name.replace('-', '_')}-{version}.dist-info"
        info.mkdir()
        (info / "METADATA").write_text(
            f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n")
        lines = "".join(f"{ep} = {target}\n" for ep, target in entry_points.items())
        (info / "entry_points.txt").write_text("[pullback]\n" + lines)
        for module, source in (modules or {}).items():
            (self.root / f"{module}.py").write_text(textwrap.dedent(source))

    def run(self, *args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
        """Run ``python *args`` with this site first on the path; PULLBACK_* variables are
        cleared unless given in ``env``."""
        full_env = {k: v for k, v in os.environ.items() if not k.startswith("PULLBACK_")}
        full_env["PYTHONPATH"] = os.pathsep.join(
            [str(self.root)] + [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p])
        full_env.update(env or {})
        return subprocess.run([sys.executable, *args], capture_output=True, text=True,
                              env=full_env, timeout=120, cwd=self.root)

    def python(self, code: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
        """Run ``code``; fail the test with its output when it exits non-zero."""
        result = self.run("-c", textwrap.dedent(code), env=env)
        assert result.returncode == 0, f"stdout:\n{result.stdout}\nstderr:\n{result.stderr}"
        return result


@pytest.fixture
def fake_site(tmp_path: Path) -> FakeSite:
    """A :class:`FakeSite` in a temporary folder."""
    return FakeSite(tmp_path / "site")


@pytest.fixture
def numpy_backend() -> type[NumpyBackend]:
    """The :class:`NumpyBackend` class, to build throw-away backends."""
    return NumpyBackend


# Python run first in a child process so that pullback-cuda looks uninstalled there (its import
# fails as a missing distribution's does), whatever this environment has installed.
_HIDE_PULLBACK_CUDA = """
import importlib.abc, sys
from pullback import _install_hint

class HideCuda(importlib.abc.MetaPathFinder):  # as if pullback-cuda were not installed
    def find_spec(self, name, path=None, target=None):
        if name == "pullback.cuda" or name.startswith("pullback.cuda."):
            return _install_hint._MissingSubpackageFinder().find_spec(name, path, target)

sys.meta_path.insert(0, HideCuda())
real_installed = _install_hint._installed
_install_hint._installed = lambda d: d != "pullback-cuda" and real_installed(d)
for name in [m for m in sys.modules if m.startswith("pullback")]:
    if name != "pullback._install_hint":
        del sys.modules[name]
"""


@pytest.fixture
def without_pullback_cuda() -> Callable[[str], subprocess.CompletedProcess]:
    """``run(code)``: ``code`` (dedented) in a child Python where pullback-cuda looks not
    installed (and its plugin disabled); the completed process, output captured as text."""

    def run(code: str) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-c", _HIDE_PULLBACK_CUDA + textwrap.dedent(code)],
                              capture_output=True, text=True, timeout=120,
                              env={"PULLBACK_DISABLE_PLUGINS": "pullback-cuda",
                                   "PATH": "/usr/bin:/bin"})

    return run
