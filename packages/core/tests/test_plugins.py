"""The plugin system: registration through the hooks, the records, refusals (hook API,
duplicates, unknown hooks), undo, entry-point loading, broken plugins, the environment switches,
and the promise that no hook runs on the per-op path.

In-process tests register throw-away plugin objects; the entry-point tests install throw-away
distributions into a fake site folder and look at a fresh interpreter (see ``conftest.py``).
"""

from __future__ import annotations

import json
import subprocess
import sys
import types
from collections import Counter
from typing import Any

import numpy as np
import pytest

import pullback as pb
from pullback import backends, plugins, registry
from pullback._ops._declare import CORE_OPS
from pullback.errors import DeviceError, PluginError, RegistryError
from pullback.hookspecs import HOOK_NAMES, hookimpl
from pullback.registry import Op


def make_plugin(api: str | None = "1.0", **hooks: Any) -> types.ModuleType:
    """A throw-away plugin module implementing ``hooks`` (hook name -> function(register))."""
    module = types.ModuleType("throwaway_plugin")
    if api is not None:
        module.pullback_hook_api = api
    for hook_name, fn in hooks.items():
        setattr(module, hook_name, hookimpl(fn))
    return module


def softsign_op(name: str = "tp.softsign") -> Op:
    op = Op(name, lambda xp: lambda x: x / (1 + xp.abs(x)), doc="x / (1 + |x|)")

    @op.def_grad
    def _grad(F: Any, g: Any, out: Any, x: Any) -> tuple[Any]:
        d = 1.0 + F.abs(x)
        return (g / (d * d),)

    return op


# -- core registers like everyone else ------------------------------------------------------------

def test_core_registers_its_backend_and_ops_through_its_own_plugin() -> None:
    record = plugins.records()["pullback"]
    assert record.distribution == "pullback"
    assert record.registered["backends"] == ["cpu"]
    assert sorted(record.registered["ops"]) == sorted(op.name for op in CORE_OPS)
    assert all(registry.OP_OWNERS[op.name] == "pullback" for op in CORE_OPS)
    assert backends.BACKEND_OWNERS["cpu"] == "pullback"


def test_hook_names_match_the_hookspecs() -> None:
    specs = {name for name in dir(plugins.plugin_manager().hook) if name.startswith("register_")}
    assert specs == set(HOOK_NAMES)


# -- a throw-away plugin: everything it registers works, and goes away with it ------------------

def test_a_plugin_registers_through_every_hook_and_unregisters_cleanly(
        throwaway_plugin: Any, numpy_backend: Any) -> None:
    op = softsign_op()
    kernel_calls = Counter()

    def counted_kernel(x: np.ndarray) -> np.ndarray:
        kernel_calls["tp.softsign"] += 1
        return x / (1 + np.abs(x))

    def batch_rule(*args: Any) -> None:
        return None

    def fuse(graph: Any) -> Any:
        return graph

    def export(model: Any, path: str) -> None:
        return None

    plugin = make_plugin(
        register_backends=lambda register: register(numpy_backend("tpnp", count=2)),
        register_ops=lambda register: register(op),
        register_kernels=lambda register: register("tp.softsign", "tpnp", counted_kernel),
        register_rules=lambda register: register("tp.softsign", "batch", batch_rule),
        register_graph_passes=lambda register: register("tp.fuse", fuse),
        register_exporters=lambda register: register("tp.format", export),
    )
    record = throwaway_plugin(plugin, "tp", "tp-dist")

    assert record.distribution == "tp-dist"
    assert record.registered == {
        "backends": ["tpnp"], "ops": ["tp.softsign"], "kernels": ["tp.softsign[tpnp]"],
        "rules": ["tp.softsign:batch"], "graph_passes": ["tp.fuse"], "exporters": ["tp.format"],
    }
    assert plugins.records()["tp"] is record
    assert registry.get_op("tp.softsign") is op and registry.OP_OWNERS["tp.softsign"] == "tp-dist"
    assert op.rule("batch") is batch_rule
    assert plugins.graph_passes()["tp.fuse"] is fuse
    assert plugins.exporters()["tp.format"] is export
    assert backends.BACKEND_OWNERS["tpnp"] == "tp-dist"

    # The op runs on the new backend through the plugin's kernel; the gradient is analytic.
    values = np.array([-2.0, -0.5, 0.0, 1.5])
    x = pb.tensor(values, device="tpnp:1", requires_grad=True)
    y = pb.apply(op, x)
    assert y.device == pb.Device("tpnp", 1)
    np.testing.assert_allclose(y.detach().numpy(), values / (1 + np.abs(values)))
    y.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), 1 / (1 + np.abs(values)) ** 2)
    assert kernel_calls["tp.softsign"] == 1

    plugins.unregister_plugin("tp")
    assert "tp" not in plugins.records()
    assert "tp.softsign" not in registry.OPS
    assert "tpnp" not in backends.backends()
    assert "tp.fuse" not in plugins.graph_passes()
    assert "tp.format" not in plugins.exporters()
    with pytest.raises(DeviceError, match="unknown device type 'tpnp'"):
        pb.Device("tpnp:1")
    assert plugins.plugin_manager().get_plugin("tp") is None


def test_registering_the_same_object_twice_is_a_no_op(throwaway_plugin: Any) -> None:
    plugin = make_plugin(register_ops=lambda register: register(softsign_op()))
    first = throwaway_plugin(plugin, "tp")
    assert plugins.register_plugin(plugin, name="tp-again") is first
    assert "tp-again" not in plugins.records()


def test_another_plugin_under_a_taken_name_is_refused(throwaway_plugin: Any) -> None:
    throwaway_plugin(make_plugin(), "tp")
    with pytest.raises(PluginError, match="already registered as 'tp'"):
        plugins.register_plugin(make_plugin(), name="tp")


def test_unregistering_an_unknown_plugin_is_an_error() -> None:
    with pytest.raises(PluginError, match="no plugin registered as 'never-registered'"):
        plugins.unregister_plugin("never-registered")


# -- refusals ------------------------------------------------------------------------------------

@pytest.mark.parametrize(("api", "message"), [
    (None, r"'tp' \(tp-dist\) does not declare pullback_hook_api; this core speaks hook API 1\.0"),
    ("2.0", r"'tp' \(tp-dist\) was built for pullback hook API 2\.0, but this core provides 1\.0"),
    ("1.9", r"built for pullback hook API 1\.9, but this core provides 1\.0"),
    ("0.9", r"built for pullback hook API 0\.9"),
    ("one", r"'tp' \(tp-dist\) declares a malformed pullback_hook_api 'one'"),
])
def test_a_plugin_for_another_hook_api_is_refused(api: str | None, message: str) -> None:
    plugin = make_plugin(api, register_ops=lambda register: register(softsign_op()))
    with pytest.raises(PluginError, match=message):
        plugins.register_plugin(plugin, name="tp", distribution="tp-dist")
    assert "tp" not in plugins.records()
    assert "tp.softsign" not in registry.OPS
    assert plugins.plugin_manager().get_plugin("tp") is None


def test_a_hook_with_a_misspelt_name_is_refused() -> None:
    plugin = make_plugin(register_backend=lambda register: None)
    with pytest.raises(PluginError, match="implements unknown hooks register_backend; the hooks "
                                          "are register_backends, register_ops"):
        plugins.register_plugin(plugin, name="tp", distribution="tp-dist")
    assert plugins.plugin_manager().get_plugin("tp") is None


def test_a_hook_with_a_wrong_argument_name_is_refused() -> None:
    plugin = make_plugin(register_ops=lambda callback: None)
    with pytest.raises(PluginError, match=r"(?s)'tp' \(tp-dist\) is invalid: .*'callback'"
                                          r".*not be found in the hookspec"):
        plugins.register_plugin(plugin, name="tp", distribution="tp-dist")


def test_a_second_cpu_backend_is_an_error_naming_both_distributions(numpy_backend: Any) -> None:
    cpu = backends.backends()["cpu"]
    plugin = make_plugin(register_backends=lambda register: register(numpy_backend("cpu")))
    with pytest.raises(PluginError,
                       match="backend 'cpu' registered twice: by pullback and by tp-dist"):
        plugins.register_plugin(plugin, name="tp", distribution="tp-dist")
    assert backends.backends()["cpu"] is cpu
    assert "tp" not in plugins.records()


def test_a_failed_registration_undoes_what_the_plugin_had_registered(numpy_backend: Any) -> None:
    # register_backends runs before register_ops: the backend is in, then the op collides.
    plugin = make_plugin(
        register_backends=lambda register: register(numpy_backend("tpnp")),
        register_ops=lambda register: register(Op("add")),
    )
    with pytest.raises(RegistryError, match="op 'add' registered twice: by pullback and by tp-dist"):
        plugins.register_plugin(plugin, name="tp", distribution="tp-dist")
    assert "tpnp" not in backends.backends()
    assert registry.OP_OWNERS["add"] == "pullback"
    np.testing.assert_allclose((pb.tensor([1.0]) + pb.tensor([2.0])).numpy(), [3.0])


def test_two_kernels_for_one_op_and_backend_are_an_error_naming_both(
        throwaway_plugin: Any) -> None:
    def exp_kernel(x: np.ndarray) -> np.ndarray:
        return np.exp(x)

    throwaway_plugin(make_plugin(
        register_kernels=lambda register: register("tp.late", "cpu", exp_kernel)), "a", "dist-a")
    second = make_plugin(register_kernels=lambda register: register("tp.late", "cpu", np.exp))
    throwaway_plugin(make_plugin(register_ops=lambda register: register(Op("tp.late"))), "op")
    with pytest.raises(RegistryError, match="kernel for op 'tp.late' on backend 'cpu' registered "
                                            "twice: by dist-a and by dist-b"):
        plugins.register_plugin(second, name="b", distribution="dist-b")


def test_a_plugin_cannot_replace_a_gradient_core_declared() -> None:
    plugin = make_plugin(register_rules=lambda register: register("mul", "grad", lambda *a: a))
    with pytest.raises(RegistryError,
                       match="rule 'grad' for op 'mul' registered twice: by pullback and by tp-dist"):
        plugins.register_plugin(plugin, name="tp", distribution="tp-dist")
    x, y = pb.tensor([2.0, 3.0], requires_grad=True), pb.tensor([5.0, 7.0])
    (x * y).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), [5.0, 7.0])


# -- kernels and rules for ops that arrive later ------------------------------------------------

def test_a_kernel_waits_for_its_op_and_is_attached_when_the_op_arrives(
        throwaway_plugin: Any) -> None:
    def triple(x: np.ndarray) -> np.ndarray:
        return 3 * x

    throwaway_plugin(make_plugin(
        register_kernels=lambda register: register("tp.late", "cpu", triple)), "kern", "dist-k")
    op = Op("tp.late")  # no generic kernel: only the waiting one can run it
    throwaway_plugin(make_plugin(register_ops=lambda register: register(op)), "op", "dist-o")
    assert op.kernels["cpu"] is triple
    np.testing.assert_allclose(pb.apply(op, pb.tensor([1.0, 2.0])).numpy(), [3.0, 6.0])


def test_a_waiting_kernel_leaves_with_its_plugin(throwaway_plugin: Any) -> None:
    def triple(x: np.ndarray) -> np.ndarray:
        return 3 * x

    throwaway_plugin(make_plugin(
        register_kernels=lambda register: register("tp.late", "cpu", triple),
        register_rules=lambda register: register("tp.late", "batch", triple)), "kern", "dist-k")
    plugins.unregister_plugin("kern")
    op = Op("tp.late")
    throwaway_plugin(make_plugin(register_ops=lambda register: register(op)), "op", "dist-o")
    assert "cpu" not in op.kernels and "batch" not in op.rules
    with pytest.raises(RegistryError, match="op 'tp.late' has no kernel for backend 'cpu'"):
        pb.apply(op, pb.tensor([1.0]))


def test_a_new_backend_under_an_old_name_does_not_inherit_cached_kernels(
        throwaway_plugin: Any, numpy_backend: Any) -> None:
    throwaway_plugin(make_plugin(
        register_backends=lambda register: register(numpy_backend("tpnp"))), "first")
    np.testing.assert_allclose(pb.tensor([0.0], device="tpnp").exp().numpy(), [1.0])
    plugins.unregister_plugin("first")

    looked_up = Counter()

    class CountingNumpy:
        """NumPy, counting the names a kernel looks up when it is built or run."""

        def __getattr__(self, name: str) -> Any:
            looked_up[name] += 1
            return getattr(np, name)

    class CountingBackend(numpy_backend):
        @property
        def xp(self) -> Any:
            return CountingNumpy()

    throwaway_plugin(make_plugin(
        register_backends=lambda register: register(CountingBackend("tpnp"))), "second")
    np.testing.assert_allclose(pb.tensor([0.0], device="tpnp").exp().numpy(), [1.0])
    assert looked_up["exp"] >= 1


# -- the hot path --------------------------------------------------------------------------------

class _Tripwire:
    def __getattr__(self, name: str) -> Any:
        raise AssertionError(f"plugin hook '{name}' consulted on the per-op path")


def test_no_hook_and_no_plugin_loading_on_the_per_op_path(
        monkeypatch: pytest.MonkeyPatch, throwaway_plugin: Any, numpy_backend: Any) -> None:
    calls = Counter()

    def register_backends(register: Any) -> None:
        calls["register_backends"] += 1
        register(numpy_backend("tpnp"))

    throwaway_plugin(make_plugin(register_backends=register_backends), "tp")
    tpnp = pb.Device("tpnp")  # looked up once, before the tripwires

    def no_loading() -> None:
        raise AssertionError("plugins loaded on the per-op path")

    monkeypatch.setattr(plugins, "load_plugins", no_loading)
    monkeypatch.setattr(plugins.plugin_manager(), "hook", _Tripwire())
    for dev in ("cpu", tpnp):
        x = pb.tensor([[0.5, -1.0], [2.0, 0.25]], device=dev, requires_grad=True)
        loss = ((x @ x).tanh() * x.exp()).sum()
        loss.backward()
        assert x.grad is not None and x.grad.device == pb.Device(dev)
    assert calls["register_backends"] == 1


# -- entry points, in a fresh interpreter --------------------------------------------------------

TOY_PLUGIN = '''
    import numpy as np
    from pullback.backends import Backend
    from pullback.hookspecs import hookimpl

    pullback_hook_api = "1.0"
    CALLS = []

    class ToyBackend(Backend):
        name = "toy"
        xp = np
        array_type = np.ndarray

    @hookimpl
    def register_backends(register):
        CALLS.append("register_backends")
        register(ToyBackend())
'''

BROKEN_PLUGIN = '''
    raise RuntimeError("boom at import")
'''

REPORT = '''
    import json, warnings
    warnings.simplefilter("always")
    with warnings.catch_warnings(record=True) as caught:
        import pullback
        from pullback import plugins
        records = plugins.records()  # the first need: every entry-point plugin loads now
    print(json.dumps({
        "loaded": {n: [r.distribution, r.version, r.registered] for n, r in records.items()},
        "failed": {n: [r.distribution, r.error] for n, r in plugins.failed().items()},
        "warnings": [f"{w.category.__name__}: {w.message}" for w in caught],
        "backends": sorted(pullback.backends.backends()),
        "sum": (pullback.ones(3) * 2).sum().item(),
    }))
'''


def report(fake_site: Any, env: dict[str, str] | None = None) -> dict[str, Any]:
    return json.loads(fake_site.python(REPORT, env=env).stdout)


def test_an_entry_point_plugin_loads_on_first_need_with_its_distribution(fake_site: Any) -> None:
    fake_site.add_distribution("pullback-toy", {"toy": "toy_plugin"}, {"toy_plugin": TOY_PLUGIN},
                               version="2.3")
    result = fake_site.python('''
        import pullback, numpy as np
        x = pullback.tensor([1.0, -2.0], device="toy", requires_grad=True)
        (x * x).sum().backward()
        rec = pullback.plugins.records()["toy"]
        print(rec.distribution, rec.version, rec.registered, x.grad.device, x.grad.tolist())
    ''')
    assert result.stdout.split(" ", 2)[:2] == ["pullback-toy", "2.3"]
    assert "{'backends': ['toy']} toy:0 [2.0, -4.0]" in result.stdout


def test_plugins_load_once(fake_site: Any) -> None:
    fake_site.add_distribution("pullback-toy", {"toy": "toy_plugin"}, {"toy_plugin": TOY_PLUGIN})
    result = fake_site.python('''
        import pullback, toy_plugin
        pullback.plugins.load_plugins()
        pullback.backends.backends(); pullback.Device("toy"); pullback.is_available("toy")
        pullback.plugins.ensure_registered("toy_plugin", "toy", "pullback-toy")
        print(toy_plugin.CALLS)
    ''')
    assert result.stdout.strip() == "['register_backends']"


def test_a_plugin_that_fails_to_import_is_reported_and_the_rest_works(fake_site: Any) -> None:
    fake_site.add_distribution("pullback-broken", {"broken": "broken_plugin"},
                               {"broken_plugin": BROKEN_PLUGIN}, version="0.3")
    fake_site.add_distribution("pullback-toy", {"toy": "toy_plugin"}, {"toy_plugin": TOY_PLUGIN})
    out = report(fake_site)
    assert out["failed"] == {"broken": ["pullback-broken", "RuntimeError: boom at import"]}
    assert out["warnings"] == [
        "PluginWarning: pullback: plugin 'broken' from pullback-broken 0.3 failed to load and was "
        "skipped: RuntimeError: boom at import"]
    assert "toy" in out["loaded"] and "toy" in out["backends"]
    assert out["sum"] == 6.0


def test_a_plugin_that_fails_while_registering_leaves_nothing_behind(fake_site: Any) -> None:
    half = TOY_PLUGIN + '''
    @hookimpl
    def register_ops(register):
        raise ValueError("no ops today")
    '''
    fake_site.add_distribution("pullback-half", {"half": "half_plugin"}, {"half_plugin": half})
    out = report(fake_site)
    assert out["failed"] == {"half": ["pullback-half", "ValueError: no ops today"]}
    assert "toy" not in out["backends"]


def test_an_incompatible_plugin_is_refused_with_a_clear_message(fake_site: Any) -> None:
    future = TOY_PLUGIN.replace('pullback_hook_api = "1.0"', 'pullback_hook_api = "2.1"')
    fake_site.add_distribution("pullback-future", {"future": "future_plugin"},
                               {"future_plugin": future}, version="9.0")
    out = report(fake_site)
    assert out["failed"]["future"] == [
        "pullback-future",
        "PluginError: plugin 'future' (pullback-future) was built for pullback hook API 2.1, but "
        "this core provides 1.0; install a version of pullback-future built for this pullback"]
    assert "toy" not in out["backends"]


def test_two_backends_with_one_name_are_an_error_naming_both_distributions(
        fake_site: Any) -> None:
    # (A name no real package uses, so that installed plugins cannot get in the way.)
    twin = TOY_PLUGIN.replace('name = "toy"', 'name = "twin"')
    fake_site.add_distribution("pullback-gpu-a", {"gpu_a": "gpu_a"}, {"gpu_a": twin})
    fake_site.add_distribution("pullback-gpu-b", {"gpu_b": "gpu_b"}, {"gpu_b": twin})
    out = report(fake_site)
    assert out["loaded"]["gpu_a"][2] == {"backends": ["twin"]}
    assert out["failed"]["gpu_b"] == [
        "pullback-gpu-b",
        "PluginError: backend 'twin' registered twice: by pullback-gpu-a and by pullback-gpu-b"]


@pytest.mark.parametrize(("env", "loaded"), [
    ({}, {"one", "two"}),
    ({"PULLBACK_DISABLE_PLUGINS": ""}, {"one", "two"}),
    ({"PULLBACK_DISABLE_PLUGINS": "1"}, set()),
    ({"PULLBACK_DISABLE_PLUGINS": "all"}, set()),
    ({"PULLBACK_DISABLE_PLUGINS": "one"}, {"two"}),
    ({"PULLBACK_DISABLE_PLUGINS": "pullback-two, one"}, set()),
    ({"PULLBACK_PLUGINS": "two"}, {"two"}),
    ({"PULLBACK_PLUGINS": "pullback-one"}, {"one"}),
    ({"PULLBACK_PLUGINS": "one,two", "PULLBACK_DISABLE_PLUGINS": "two"}, {"one"}),
])
def test_environment_variables_choose_which_plugins_load(
        fake_site: Any, env: dict[str, str], loaded: set[str]) -> None:
    for name in ("one", "two"):
        source = TOY_PLUGIN.replace('name = "toy"', f'name = "{name}"')
        fake_site.add_distribution(f"pullback-{name}", {name: f"plugin_{name}"},
                                   {f"plugin_{name}": source})
    out = report(fake_site, env=env)
    assert set(out["loaded"]) & {"one", "two"} == loaded
    assert "pullback" in out["loaded"] and out["sum"] == 6.0
    if env.get("PULLBACK_DISABLE_PLUGINS") in ("1", "all"):
        assert set(out["loaded"]) == {"pullback"}  # no entry-point plugin at all


def test_a_package_registers_its_own_plugin_when_autoloading_is_off(fake_site: Any) -> None:
    fake_site.add_distribution("pullback-toy", {"toy": "toy_plugin"}, {"toy_plugin": TOY_PLUGIN},
                               version="2.3")
    result = fake_site.python('''
        import pullback
        from pullback import plugins
        assert "toy" not in plugins.records()
        plugins.ensure_registered("toy_plugin", "toy", "pullback-toy")
        plugins.ensure_registered("toy_plugin", "toy", "pullback-toy")
        print(plugins.records()["toy"].version, pullback.Device("toy"))
    ''', env={"PULLBACK_DISABLE_PLUGINS": "1"})
    assert result.stdout.strip() == "2.3 toy:0"


def test_a_thread_asking_for_backends_during_loading_waits_for_all_of_them(
        fake_site: Any) -> None:
    # The plugin starts a thread while it is being loaded, then takes its time to register: the
    # thread must see the finished registry, not the half-loaded one.
    slow = TOY_PLUGIN.replace('''    CALLS.append("register_backends")''', '''    import threading, time
        import pullback.backends
        global SEEN
        def ask():
            SEEN.extend(pullback.backends.backends())
        THREAD.append(threading.Thread(target=ask))
        THREAD[0].start()
        time.sleep(0.3)''').replace("CALLS = []", "SEEN, THREAD = [], []")
    fake_site.add_distribution("pullback-slow", {"slow": "slow_plugin"}, {"slow_plugin": slow})
    result = fake_site.python('''
        import pullback
        pullback.plugins.load_plugins()
        import slow_plugin
        slow_plugin.THREAD[0].join()
        print(sorted(slow_plugin.SEEN))
    ''')
    assert "'toy'" in result.stdout and "'cpu'" in result.stdout


# -- start-up cost -------------------------------------------------------------------------------

IMPORTED_BY_IMPORT_PULLBACK = '''
import json, os, sys
import pullback
core = os.path.dirname(pullback.__file__)
print(json.dumps({
    "not_core": sorted(name for name, module in sys.modules.items()
                       if name.startswith("pullback.") and getattr(module, "__file__", None)
                       and not module.__file__.startswith(core + os.sep)),
    "heavy": sorted(name for name in ("scipy", "ml_dtypes", "matplotlib") if name in sys.modules),
    "loaded": pullback.plugins.plugins_loaded(),
}))
'''


def test_import_pullback_imports_core_alone_and_plugins_load_on_first_need() -> None:
    # Every installed distribution registers an entry point; `import pullback` must not import
    # them (nor SciPy, nor ml_dtypes: 0.5 s in version 0.7), which made it take seconds.
    result = subprocess.run([sys.executable, "-c", IMPORTED_BY_IMPORT_PULLBACK],
                            capture_output=True, text=True, check=True)
    imported = json.loads(result.stdout)
    assert imported == {"not_core": [], "heavy": [], "loaded": False}


def test_bfloat16_imports_ml_dtypes_on_first_use() -> None:
    result = subprocess.run([sys.executable, "-c", (
        "import sys, pullback as pb\n"
        "before = 'ml_dtypes' in sys.modules\n"
        "x = pb.ones(2, dtype=pb.bfloat16) * 0.5\n"
        "print(before, x.dtype, x.tolist(), pb.finfo(pb.bfloat16).eps)\n")],
        capture_output=True, text=True, check=True)
    assert result.stdout.split() == ["False", "bfloat16", "[0.5,", "0.5]", "0.0078125"]
