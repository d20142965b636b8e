"""The package itself: its plugin registers nothing (optimizers are not ops), it works with
plugin autoloading disabled, its source imports neither torch nor pickle, and the docs list
everything its registries hold."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

from pullback import plugins
from pullback.optim import OPTIMIZERS, _plugin
from pullback.optim.lr_scheduler import SCHEDULERS

SOURCE = Path(_plugin.__file__).parent
DOCS = Path(__file__).resolve().parents[3] / "docs" / "optim.md"


def test_plugin_declares_the_hook_api_and_registers_nothing():
    assert _plugin.pullback_hook_api == "1.0"
    record = plugins.records()["optim"]
    assert record.distribution == "pullback-optim"
    assert record.registered == {}


def test_works_with_plugin_autoloading_disabled():
    code = ("import pullback, pullback.optim as o\n"
            "from pullback import plugins\n"
            "w = pullback.tensor([1.0], requires_grad=True)\n"
            "(w * w).sum().backward(); o.SGD([w], lr=0.5).step()\n"
            "print(sorted(plugins.records()), w.tolist())\n")
    env = {**os.environ, "PULLBACK_DISABLE_PLUGINS": "1"}
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                         check=True, timeout=120).stdout
    assert out.strip() == "['optim', 'pullback'] [0.0]"


def test_source_imports_neither_torch_nor_pickle():
    pattern = re.compile(r"^\s*(import|from)\s+(torch|pickle|cPickle|dill)\b", re.MULTILINE)
    offenders = [str(p) for p in SOURCE.rglob("*.py") if pattern.search(p.read_text())]
    assert not offenders


def test_docs_cover_every_registered_optimizer_and_scheduler():
    text = DOCS.read_text()
    for name, cls in [*OPTIMIZERS.items(), *SCHEDULERS.items()]:
        assert f"`{name}`" in text and cls.__name__ in text, f"docs/optim.md misses {name}"
