"""``pullback`` extends its ``__path__`` so that separately installed distributions contribute
``pullback.<name>`` subpackages. Check it for every way of installing core and plugins: regular
wheels and editable installs, in every combination, with two plugins installed differently."""

from __future__ import annotations

import json
from typing import Any

import pytest

pytestmark = pytest.mark.venv


@pytest.mark.parametrize("core_editable", [False, True], ids=["core-wheel", "core-editable"])
@pytest.mark.parametrize("tarka_editable", [False, True], ids=["tarka-wheel", "tarka-editable"])
def test_plugin_subpackages_import_however_they_were_installed(
        make_venv: Any, wheelhouse: Any, distribution_folders: Any, core_editable: bool,
        tarka_editable: bool) -> None:
    # sutra is always installed the other way from tarka, so two installation kinds meet too;
    # both build on nn, installed as core is.
    modes = {"pullback": core_editable, "pullback-nn": core_editable,
             "pullback-tarka": tarka_editable, "pullback-sutra": not tarka_editable}
    venv = make_venv("env")
    venv.install(*(wheelhouse.wheel(dist, editable) for dist, editable in modes.items()))
    result = venv.python_ok('''
        import json
        import pullback, pullback.sutra, pullback.tarka
        from pullback import plugins
        print(json.dumps({
            "files": {m.__name__: m.__file__ for m in (pullback, pullback.sutra, pullback.tarka)},
            "plugins": {n: r.distribution for n, r in plugins.records().items()},
            "works": (pullback.ones(2) * 3).sum().item(),
        }))
    ''')
    out = json.loads(result.stdout)
    assert out["plugins"] == {"pullback": "pullback", "nn": "pullback-nn",
                              "sutra": "pullback-sutra", "tarka": "pullback-tarka"}
    assert out["works"] == 6.0
    for module, dist in [("pullback", "pullback"), ("pullback.sutra", "pullback-sutra"),
                         ("pullback.tarka", "pullback-tarka")]:
        # Editable: the module is the source file itself; else: a copy in site-packages.
        where = distribution_folders[dist] / "src" if modes[dist] else venv.site_packages
        expected = where / module.replace(".", "/") / "__init__.py"
        assert out["files"][module] == str(expected), module


def test_core_alone_works_and_a_missing_subpackage_names_its_distribution(
        make_venv: Any, wheelhouse: Any) -> None:
    venv = make_venv("core-only")
    venv.install(wheelhouse.wheel("pullback"))
    result = venv.python_ok('''
        import pullback
        assert sorted(pullback.plugins.records()) == ["pullback"]
        assert pullback.devices() == ["cpu"]
        try:
            import pullback.tarka
        except ModuleNotFoundError as exc:  # what importorskip and optional imports catch
            print(exc)
    ''')
    # Outside a clone the hint is the index's install command (from one, the folder's path).
    assert result.stdout.strip() == ("pullback.tarka is provided by pullback-tarka, which is not "
                                     "installed: pip install pullback-tarka")
