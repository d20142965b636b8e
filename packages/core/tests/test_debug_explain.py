"""explain_gradients and watch on planted cases: a deep sigmoid net that vanishes, a badly
scaled layer that explodes, a dead-ReLU layer, saturated tanh units, and a healthy net that
must raise nothing. Each case runs on a minimal duck-typed module kit defined here (core needs
no pullback.nn) and on pullback.nn when it is installed."""

from __future__ import annotations

import itertools
import math
from types import SimpleNamespace

import numpy as np
import pytest

import pullback as pb
from pullback.debug import explain_gradients, watch
from pullback.dispatch import state

# -- a minimal module kit: named_parameters, named_modules, forward hooks -----------------------
_keys = itertools.count()


class _Handle:
    def __init__(self, table, hook):
        self.table, self.key = table, next(_keys)
        table[self.key] = hook

    def remove(self):
        self.table.pop(self.key, None)


class KitModule:
    def __init__(self):
        self._params, self._children, self._pre, self._post = {}, {}, {}, {}

    def __call__(self, *args):
        for hook in list(self._pre.values()):
            hook(self, args)
        out = self.forward(*args)
        for hook in list(self._post.values()):
            hook(self, args, out)
        return out

    def named_modules(self, prefix=""):
        yield prefix, self
        for name, child in self._children.items():
            yield from child.named_modules(f"{prefix}.{name}" if prefix else name)

    def named_parameters(self):
        for mname, module in self.named_modules():
            for name, p in module._params.items():
                yield (f"{mname}.{name}" if mname else name), p

    def register_forward_pre_hook(self, hook):
        return _Handle(self._pre, hook)

    def register_forward_hook(self, hook):
        return _Handle(self._post, hook)


class KitLinear(KitModule):
    def __init__(self, n_in, n_out):
        super().__init__()
        self.weight = self._params["weight"] = pb.zeros(n_out, n_in, requires_grad=True)
        self.bias = self._params["bias"] = pb.zeros(n_out, requires_grad=True)

    def forward(self, x):
        return x @ self.weight.T + self.bias


class KitActivation(KitModule):
    def __init__(self, name):
        super().__init__()
        self.name = name

    def forward(self, x):
        return getattr(pb, self.name)(x)


class KitSequential(KitModule):
    def __init__(self, *modules):
        super().__init__()
        self._children = {str(i): m for i, m in enumerate(modules)}

    def forward(self, x):
        for m in self._children.values():
            x = m(x)
        return x


KIT = SimpleNamespace(Linear=KitLinear, Sequential=KitSequential,
                      ReLU=lambda: KitActivation("relu"), Tanh=lambda: KitActivation("tanh"),
                      Sigmoid=lambda: KitActivation("sigmoid"))


def _nn_kit():
    nn = pytest.importorskip("pullback.nn")
    return SimpleNamespace(Linear=nn.Linear, Sequential=nn.Sequential, ReLU=nn.ReLU,
                           Tanh=nn.Tanh, Sigmoid=nn.Sigmoid)


@pytest.fixture(params=["kit", "pullback.nn"])
def kit(request):
    return KIT if request.param == "kit" else _nn_kit()


# -- planted models ----------------------------------------------------------------------------
WIDTH = 32
_rng = np.random.default_rng(7)
X = _rng.normal(size=(64, WIDTH)).astype(np.float32)
Y = _rng.normal(size=(64, 1)).astype(np.float32)


def _linear(kit, n_in, n_out, std=None, bias=0.0, seed=0):
    layer = kit.Linear(n_in, n_out)
    rng = np.random.default_rng(seed)
    std = 1.0 / math.sqrt(n_in) if std is None else std
    layer.weight.array = rng.normal(0.0, std, (n_out, n_in)).astype(np.float32)
    layer.bias.array = np.full(n_out, bias, dtype=np.float32)
    return layer


def _train_step(model):
    with watch(model) as w:
        loss = ((model(pb.tensor(X)) - pb.tensor(Y)) ** 2).mean()
        loss.backward()
    return w


def test_deep_sigmoid_net_vanishes_at_the_first_layers(kit):
    layers = []
    for i in range(8):
        layers += [_linear(kit, WIDTH, WIDTH, seed=i), kit.Sigmoid()]
    model = kit.Sequential(*layers, _linear(kit, WIDTH, 1, seed=99))
    report = _train_step(model).explain()
    vanishing = report.flagged("vanishing")
    assert "0.weight" in vanishing and "2.weight" in vanishing
    assert "16.weight" not in vanishing and "14.weight" not in vanishing  # near the output
    assert report.layers("vanishing")[0] == "0"
    assert report.flagged("exploding") == [] and report.flagged("dead") == []
    text = str(report)
    assert "the gradient shrinks" in text and "per layer" in text
    assert "sigmoid's derivative is at most 0.25" in text
    assert "residual connections" in text  # the usual fix is named


def test_badly_scaled_layer_is_named_as_the_source_of_exploding_gradients(kit):
    model = kit.Sequential(
        _linear(kit, WIDTH, WIDTH, seed=1), kit.ReLU(),
        _linear(kit, WIDTH, WIDTH, std=3.0, seed=2), kit.ReLU(),  # PLANTED: 17x too large
        _linear(kit, WIDTH, WIDTH, seed=3), kit.ReLU(),
        _linear(kit, WIDTH, 1, seed=4))
    report = _train_step(model).explain()
    assert report.layers("amplifying") == ["2"]
    message = next(f.message for f in report.findings if f.kind == "amplifying")
    assert "2.weight has std 3" in message and "1/sqrt(fan_in) = 0.177" in message
    assert report.flagged("exploding")  # the inflated activations give oversized gradients
    assert "clip" in str(report)


def test_dead_relu_layer_is_named(kit):
    model = kit.Sequential(
        _linear(kit, WIDTH, WIDTH, seed=1), kit.ReLU(),
        _linear(kit, WIDTH, WIDTH, bias=-20.0, seed=2), kit.ReLU(),  # PLANTED: all units dead
        _linear(kit, WIDTH, 1, seed=3))
    report = _train_step(model).explain()
    (dead,) = [f for f in report.findings if f.kind == "dead"]
    assert dead.layer == "2"
    assert dead.message.startswith("relu after 2 (in 3): 100% of 32 units never activated")
    assert "input mean -20" in dead.message
    first_relu = next(a for a in report.activations if a.fed_by == "0")
    assert first_relu.dead_fraction == 0.0
    assert "2.weight" in report.flagged("vanishing")  # exactly zero gradient
    assert report.findings[0].kind == "dead"  # the cause is listed before its symptoms


def test_partially_dead_layer_fraction_is_exact(kit):
    layer = _linear(kit, WIDTH, WIDTH, seed=5)
    bias = np.zeros(WIDTH, dtype=np.float32)
    bias[:12] = -50.0  # PLANTED: 12 of 32 units can never fire
    layer.bias.array = bias
    model = kit.Sequential(layer, kit.ReLU(), _linear(kit, WIDTH, 1, seed=6))
    report = _train_step(model).explain()
    stats = next(a for a in report.activations if a.fed_by == "0")
    assert stats.dead_fraction == pytest.approx(12 / 32)
    assert report.layers("dead") == ["0"]


def test_saturated_tanh_layer_is_named(kit):
    model = kit.Sequential(
        _linear(kit, WIDTH, WIDTH, seed=1), kit.Tanh(),
        _linear(kit, WIDTH, WIDTH, std=2.0, seed=2), kit.Tanh(),  # PLANTED: pushes tanh to +-1
        _linear(kit, WIDTH, 1, seed=3))
    report = _train_step(model).explain()
    assert report.layers("saturated") == ["2"]
    assert "flat tails of tanh" in str(report)


def test_healthy_net_has_no_findings(kit):
    model = kit.Sequential(
        _linear(kit, WIDTH, WIDTH, std=math.sqrt(2 / WIDTH), seed=1), kit.ReLU(),
        _linear(kit, WIDTH, WIDTH, std=math.sqrt(2 / WIDTH), seed=2), kit.ReLU(),
        _linear(kit, WIDTH, 1, seed=3))
    report = _train_step(model).explain()
    assert report.findings == []
    assert "Findings: none" in str(report)


def test_functional_activation_is_credited_to_the_layer_feeding_it():
    class Net(KitModule):
        def __init__(self):
            super().__init__()
            self.fc1 = self._children["fc1"] = _linear(KIT, WIDTH, WIDTH, bias=-30.0, seed=1)
            self.fc2 = self._children["fc2"] = _linear(KIT, WIDTH, 1, seed=2)

        def forward(self, x):
            return self.fc2(pb.relu(self.fc1(x)))

    report = _train_step(Net()).explain()
    (dead,) = [f for f in report.findings if f.kind == "dead"]
    assert dead.layer == "fc1" and dead.subject == "relu after fc1 (in the model)"


def test_update_ratio_follows_lr_and_optimizer_groups():
    model = KIT.Sequential(_linear(KIT, WIDTH, WIDTH, seed=1), KIT.Tanh(),
                           _linear(KIT, WIDTH, 1, seed=2))
    _train_step(model)
    params = dict(model.named_parameters())
    w, g = params["0.weight"].array, params["0.weight"].grad.array
    expected = 0.01 * np.linalg.norm(g.astype(np.float64)) / np.linalg.norm(w.astype(np.float64))
    report = explain_gradients(model, lr=0.01)
    stats = {p.name: p for p in report.params}
    assert stats["0.weight"].update_ratio == pytest.approx(expected, rel=1e-6)
    assert stats["0.bias"].update_ratio is None  # zero weights: no ratio
    adam_like = SimpleNamespace(param_groups=[
        {"params": [params["0.weight"]], "lr": 0.5, "betas": (0.9, 0.999)}])
    stats = {p.name: p for p in explain_gradients(model, optimizer=adam_like).params}
    adam_update = 0.5 * math.sqrt(w.size)  # Adam moves each element by about lr
    assert stats["0.weight"].update_ratio == pytest.approx(
        adam_update / np.linalg.norm(w.astype(np.float64)), rel=1e-6)
    assert stats["0.weight"].lr == 0.5 and stats["2.weight"].lr == 1e-3  # not in the optimizer


def test_unused_and_non_finite_parameters():
    class Bag:
        def __init__(self):
            self.used = pb.ones(3, requires_grad=True)
            self.unused = pb.ones(3, requires_grad=True)

        def named_parameters(self):  # no named_modules: a duck-typed model
            return iter([("used", self.used), ("unused", self.unused)])

    bag = Bag()
    (bag.used * pb.tensor([1.0, float("inf"), 1.0])).sum().backward()
    report = explain_gradients(bag)
    assert report.flagged("no_grad") == ["unused"]
    assert report.flagged("nonfinite") == ["used"]
    assert "detect_anomaly" in str(report)


def test_watch_leaves_no_hooks_or_modes_behind():
    model = KIT.Sequential(_linear(KIT, WIDTH, WIDTH), KIT.ReLU())
    with watch(model):
        model(pb.tensor(X))
    assert state.modes == []
    assert all(not m._pre and not m._post for _, m in model.named_modules())
    with pytest.raises(TypeError, match="named_parameters"):
        watch(object())
