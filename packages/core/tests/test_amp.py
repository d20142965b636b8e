"""Mixed precision logic on the CPU: autocast's casting (CUDA's policy tried on CPU tensors with
float16 NumPy arithmetic, through the ``cuda_policy_on_cpu`` fixture), its refusals, nesting
and queries against PyTorch's, and every path of GradScaler with float16 gradients. The CPU
policy itself is compared with torch's op by op in pullback-nn's ``test_autocast_torch.py``."""

from __future__ import annotations

import json

import numpy as np
import pytest

import pullback as pb
from pullback.amp import POLICIES, GradScaler, autocast


@pytest.fixture
def cuda_policy_on_cpu(monkeypatch):
    """CPU tensors cast by CUDA's policy (its float32 list is longer than the CPU's)."""
    monkeypatch.setitem(POLICIES, "cpu", POLICIES["cuda"])


def _leaf(*shape: int, dtype=pb.float32, seed: int = 0) -> pb.Tensor:
    rng = np.random.default_rng(seed)
    return pb.tensor(rng.standard_normal(shape).astype(dtype), requires_grad=True)


def test_matmul_runs_in_float16_and_reductions_in_float32(cuda_policy_on_cpu):
    x, w = _leaf(4, 8), _leaf(8, 3, seed=1)
    with autocast("cpu", dtype=pb.float16):
        y = x @ w
        s = y.sum()
        e = pb.exp(y)
    assert (y.dtype, s.dtype, e.dtype) == (pb.float16, pb.float32, pb.float32)
    np.testing.assert_allclose(y.detach().numpy().astype(np.float32),
                               x.detach().numpy() @ w.detach().numpy(),
                               rtol=1e-2, atol=1e-2)


def test_gradients_reach_float32_master_weights_in_float32():
    x, w = _leaf(16, 8), _leaf(8, 4, seed=1)
    with autocast("cpu", dtype=pb.float16):
        loss = ((x @ w) * 0.5).sum()
    loss.backward()
    assert w.grad.dtype == pb.float32 and x.grad.dtype == pb.float32
    ref = x.detach().numpy().T @ np.full((16, 4), 0.5, np.float32)
    np.testing.assert_allclose(w.grad.numpy(), ref, rtol=1e-2, atol=1e-2)


def test_nn_ops_follow_the_policy(cuda_policy_on_cpu):
    nn = pytest.importorskip("pullback.nn", reason="pullback-nn is not installed")
    F = nn.functional
    x, w, b = _leaf(2, 5, 8), _leaf(6, 8, seed=1), _leaf(6, seed=2)
    g, beta = pb.ones(6, requires_grad=True), pb.zeros(6, requires_grad=True)
    with autocast("cpu", dtype=pb.float16):
        h = F.linear(x, w, b)
        n = F.layer_norm(h, (6,), g, beta)
        p = F.softmax(h, dim=-1)
    assert (h.dtype, n.dtype, p.dtype) == (pb.float16, pb.float32, pb.float32)
    (n.sum() + p.sum()).backward()
    assert {t.grad.dtype for t in (x, w, b, g, beta)} == {pb.float32}


def test_inner_block_decides_and_other_devices_and_float64_are_left_alone():
    x, w = _leaf(3, 3), _leaf(3, 3, seed=1)
    d = _leaf(3, 3, dtype=np.float64)
    with autocast("cpu", dtype=pb.float16):
        with autocast("cpu", enabled=False):
            assert (x @ w).dtype == pb.float32
        assert (x @ w).dtype == pb.float16
        assert (d @ d).dtype == pb.float64
    with pytest.warns(UserWarning, match="CUDA is not available"):
        block = autocast("cuda", dtype=pb.float16)
    with block:  # disabled, and it would not cast CPU tensors anyway
        assert (x @ w).dtype == pb.float32
    assert (x @ w).dtype == pb.float32


def test_autocast_as_decorator_and_bad_dtype():
    @autocast("cpu", dtype=pb.float16)
    def product(a, b):
        return a @ b

    assert product(_leaf(2, 2), _leaf(2, 2)).dtype == pb.float16
    with pytest.warns(UserWarning, match="target dtype is not supported"):
        refused = autocast("cpu", dtype=pb.float32)
    with refused:
        assert not refused.enabled and (_leaf(2, 2) @ _leaf(2, 2)).dtype == pb.float32


class _SGD:
    """The two things GradScaler needs from an optimizer: param_groups and step()."""

    def __init__(self, params, lr: float) -> None:
        self.param_groups = [{"params": list(params)}]
        self.lr = lr
        self.steps = 0

    def step(self) -> str:
        self.steps += 1
        with pb.no_grad():
            for p in self.param_groups[0]["params"]:
                p.array -= self.lr * p.grad.array
        return "stepped"


def _half_param(value: float) -> pb.Tensor:
    return pb.tensor([value, -value], dtype=pb.float16, requires_grad=True)


def test_scale_unscale_and_step():
    p = _half_param(1.0)
    opt = _SGD([p], lr=0.5)
    scaler = GradScaler("cpu", init_scale=1024.0)
    loss = (p * p).sum()
    scaled = scaler.scale(loss)
    assert float(scaled.item()) == pytest.approx(2048.0)
    scaled.backward()
    np.testing.assert_array_equal(p.grad.numpy(), np.array([2048.0, -2048.0], np.float16))
    assert scaler.step(opt) == "stepped"
    np.testing.assert_array_equal(p.grad.numpy(), np.array([2.0, -2.0], np.float16))
    np.testing.assert_array_equal(p.detach().numpy(), np.array([0.0, 0.0], np.float16))
    scaler.update()
    assert scaler.get_scale() == 1024.0


@pytest.mark.filterwarnings("ignore:overflow encountered:RuntimeWarning")  # the point of the test
def test_overflow_skips_the_step_and_backs_off():
    p = _half_param(200.0)
    opt = _SGD([p], lr=0.1)
    scaler = GradScaler("cpu", init_scale=2.0**16)
    scaler.scale((p * p).sum()).backward()  # 400 * 65536 overflows float16
    assert not np.isfinite(p.grad.numpy()).all()
    assert scaler.step(opt) is None and opt.steps == 0
    scaler.update()
    assert scaler.get_scale() == 2.0**15
    np.testing.assert_array_equal(p.detach().numpy(), np.array([200.0, -200.0], np.float16))


def test_growth_after_interval_of_clean_steps():
    p = _half_param(0.01)
    opt = _SGD([p], lr=0.0)
    scaler = GradScaler("cpu", init_scale=8.0, growth_factor=2.0, growth_interval=3)
    scales = []
    for _ in range(7):
        p.grad = None
        scaler.scale((p * p).sum()).backward()
        scaler.step(opt)
        scaler.update()
        scales.append(scaler.get_scale())
    assert scales == [8.0, 8.0, 16.0, 16.0, 16.0, 32.0, 32.0]
    assert opt.steps == 7


def test_unscale_before_clipping_then_step_does_not_unscale_twice():
    p = _half_param(1.0)
    opt = _SGD([p], lr=0.0)
    scaler = GradScaler("cpu", init_scale=256.0)
    scaler.scale((p * p).sum()).backward()
    scaler.unscale_(opt)
    np.testing.assert_array_equal(p.grad.numpy(), np.array([2.0, -2.0], np.float16))
    with pytest.raises(RuntimeError, match="already been called"):
        scaler.unscale_(opt)
    scaler.step(opt)
    np.testing.assert_array_equal(p.grad.numpy(), np.array([2.0, -2.0], np.float16))
    with pytest.raises(RuntimeError, match="step\\(\\) has already"):
        scaler.step(opt)
    scaler.update()
    with pytest.raises(RuntimeError, match="no step"):
        scaler.update()


def test_state_dict_is_json_and_restores_progress():
    scaler = GradScaler("cpu", init_scale=64.0, growth_interval=5)
    p = _half_param(0.5)
    opt = _SGD([p], lr=0.0)
    for _ in range(2):
        p.grad = None
        scaler.scale((p * p).sum()).backward()
        scaler.step(opt)
        scaler.update()
    state = json.loads(json.dumps(scaler.state_dict()))
    assert state["_growth_tracker"] == 2 and state["scale"] == 64.0
    other = GradScaler("cpu")
    other.load_state_dict(state)
    assert other.state_dict() == state
    with pytest.raises(KeyError, match="scale"):
        GradScaler("cpu").load_state_dict({"growth_factor": 2.0})


def test_disabled_scaler_passes_through():
    p = _half_param(1.0)
    opt = _SGD([p], lr=0.5)
    scaler = GradScaler("cpu", enabled=False)
    loss = (p * p).sum()
    assert scaler.scale(loss) is loss
    loss.backward()
    assert scaler.step(opt) == "stepped"
    scaler.update()
    assert scaler.get_scale() == 1.0 and scaler.state_dict() == {}


@pytest.mark.parametrize("kwargs", [{"init_scale": 0.0}, {"growth_factor": 1.0},
                                    {"backoff_factor": 1.0}, {"growth_interval": 0}])
def test_bad_settings_are_refused(kwargs):
    with pytest.raises(ValueError):
        GradScaler("cpu", **kwargs)


def test_mixed_precision_training_matches_float32_on_cpu():
    """A least-squares fit under autocast + GradScaler lands where the float32 fit lands."""
    rng = np.random.default_rng(0)
    X = rng.standard_normal((64, 8)).astype(np.float32)
    y = X @ rng.standard_normal((8, 1)).astype(np.float32)

    def train(mixed: bool) -> float:
        w = pb.zeros(8, 1, requires_grad=True)
        opt = _SGD([w], lr=0.05)
        scaler = GradScaler("cpu", init_scale=2.0**10, enabled=mixed)
        for _ in range(60):
            w.grad = None
            with autocast("cpu", dtype=pb.float16, enabled=mixed):
                loss = ((pb.tensor(X) @ w - pb.tensor(y)) ** 2).mean()
            scaler.scale(loss).backward()
            scaler.step(opt)
            scaler.update()
        return float(((X @ w.detach().numpy() - y) ** 2).mean())

    full, mixed = train(False), train(True)
    assert full < 0.05
    assert mixed == pytest.approx(full, rel=0.1, abs=5e-3)


# -- against PyTorch: what is refused with a warning, nesting, queries ---------------------------

def _outcome(make):
    """(warning classes, enabled) of a scaler or autocast block made by ``make``."""
    import warnings

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        made = make()
    enabled = made.is_enabled() if hasattr(made, "is_enabled") else made._enabled
    return sorted({w.category.__name__ for w in caught}), enabled


@pytest.mark.parametrize("make", [
    lambda lib: lib.amp.GradScaler(),
    lambda lib: lib.amp.GradScaler("cuda", enabled=True),
    lambda lib: lib.amp.GradScaler("cpu"),
    lambda lib: lib.amp.GradScaler("cuda", enabled=False),
    lambda lib: lib.cuda.amp.GradScaler(),
    lambda lib: lib.cuda.amp.GradScaler(enabled=False),
    lambda lib: lib.autocast("cuda"),
    lambda lib: lib.amp.autocast("cpu", dtype=lib.float64),
    lambda lib: lib.cuda.amp.autocast(),
], ids=["scaler", "scaler_cuda", "scaler_cpu", "scaler_cuda_off", "cuda_amp_scaler",
        "cuda_amp_scaler_off", "autocast_cuda", "autocast_cpu_float64", "cuda_amp_autocast"])
def test_without_a_gpu_amp_warns_and_disables_itself_as_pytorch(make):
    torch = pytest.importorskip("torch", reason="PyTorch is the oracle")
    assert _outcome(lambda: make(pb)) == _outcome(lambda: make(torch))


def test_an_unknown_device_type_is_refused_as_pytorch():
    torch = pytest.importorskip("torch", reason="PyTorch is the oracle")
    for lib in (torch, pb):
        with pytest.raises(RuntimeError):
            lib.autocast("nonsense")


def test_blocks_of_one_device_type_nest_and_leave_others_alone():
    torch = pytest.importorskip("torch", reason="PyTorch is the oracle")
    seen = {}
    for lib in (torch, pb):
        states = []
        with lib.autocast("cpu", dtype=lib.float16):
            states.append((lib.is_autocast_enabled("cpu"), str(lib.get_autocast_dtype("cpu"))))
            with lib.autocast("cpu", enabled=False):
                states.append((lib.is_autocast_enabled("cpu"),))
            states.append((lib.is_autocast_enabled("cpu"), lib.is_autocast_enabled()))
        states.append((lib.is_autocast_enabled("cpu"), str(lib.get_autocast_dtype("cpu"))))
        seen[lib.__name__] = [tuple(str(v).replace("torch.", "") for v in s) for s in states]
    assert seen["pullback"] == seen["torch"]
