"""DPOptimizer: clipped and noised gradients against a per-sample loop reference (seeded noise)
and against Opacus's DPOptimizer on the same model, batch and noise (for every clipping rule in
CLIPPING); virtual steps equal one step over the logical batch and account once; a run resumed
from a checkpoint accounts exactly; misuse is refused."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest

import pullback as pb
from pullback import nn, optim
from pullback.dp import (
    CLIPPING, BatchMemoryManager, DPOptimizer, GradSampleModule, PrivacyEngine,
    PrivacyParameterError, PrivacyUsageError, RDPAccountant,
)
from pullback.nn.data import DataLoader, TensorDataset

SIGMA, BATCH = 1.3, 6


def cnn() -> nn.Module:
    return nn.Sequential(nn.Conv2d(1, 4, 3), nn.ReLU(), nn.MaxPool2d(2), nn.Flatten(),
                         nn.Linear(4 * 3 * 3, 3))


def batch(seed: int = 0) -> tuple[pb.Tensor, pb.Tensor]:
    rng = np.random.default_rng(seed)
    return pb.tensor(rng.standard_normal((BATCH, 1, 8, 8))), pb.tensor(rng.integers(0, 3, BATCH))


def norms_for(clipping: str, n_params: int) -> list[float] | float:
    """Small bounds, so that most samples are clipped. Per layer, one per parameter, chosen
    with an exact float32 norm (1.25): Opacus computes the noise's norm of the bounds in
    float32."""
    if clipping == "flat":
        return 0.5
    assert n_params == 4
    return [0.25, 0.5, 0.5, 1.0]


def make(clipping: str, noise_multiplier: float = SIGMA, seed: int = 11):
    pb.manual_seed(0)
    module = cnn().double()
    model = GradSampleModule(module)
    n = len(list(module.parameters()))
    opt = CLIPPING[clipping](optim.SGD(model.parameters(), lr=0.1), module=model,
                             noise_multiplier=noise_multiplier,
                             max_grad_norm=norms_for(clipping, n), expected_batch_size=BATCH,
                             noise_generator=np.random.default_rng(seed))
    return module, model, opt


def loop_reference(module: nn.Module, clipping: str, x: pb.Tensor, y: pb.Tensor,
                   noise: np.random.Generator) -> list[np.ndarray]:
    """DP-SGD's gradient written out: per-sample backward passes, clipping, the sum, noise
    (drawn parameter by parameter, in order), divided by the batch size."""
    params = list(module.parameters())
    bounds = norms_for(clipping, len(params))
    per_sample = []
    for i in range(BATCH):
        module.zero_grad()
        nn.functional.cross_entropy(module(x[i:i + 1]), y[i:i + 1]).backward()
        per_sample.append([p.grad.numpy().copy() for p in params])
    sums = [np.zeros(p.shape) for p in params]
    for grads in per_sample:
        if clipping == "flat":
            total = math.sqrt(sum(float((g ** 2).sum()) for g in grads))
            factors = [min(1.0, bounds / (total + 1e-6))] * len(grads)
        else:
            factors = [min(1.0, c / (math.sqrt(float((g ** 2).sum())) + 1e-6))
                       for g, c in zip(grads, bounds)]
        for s, g, f in zip(sums, grads, factors):
            s += f * g
    std = SIGMA * (bounds if clipping == "flat" else math.sqrt(sum(c * c for c in bounds)))
    return [(s + std * noise.standard_normal(s.shape)) / BATCH for s in sums]


@pytest.mark.parametrize("clipping", sorted(CLIPPING))
def test_noised_gradients_equal_a_per_sample_loop(clipping: str) -> None:
    module, model, opt = make(clipping)
    x, y = batch()
    want = loop_reference(module, clipping, x, y, np.random.default_rng(11))
    opt.zero_grad()
    nn.functional.cross_entropy(model(x), y).backward()
    assert opt.pre_step()
    for p, w in zip(module.parameters(), want):
        np.testing.assert_allclose(p.grad.numpy(), w, rtol=1e-10, atol=1e-13)


class TorchNormal:
    """The noise Opacus draws: torch.normal from a seeded torch.Generator, parameter by
    parameter (Opacus scales N(0, 1) draws by the std exactly as we do)."""

    def __init__(self, torch, seed: int) -> None:
        self.torch, self.generator = torch, torch.Generator().manual_seed(seed)

    def standard_normal(self, shape: tuple[int, ...], dtype) -> np.ndarray:
        return self.torch.normal(0.0, 1.0, size=shape, generator=self.generator,
                                 dtype=self.torch.float64).numpy()


@pytest.mark.filterwarnings("ignore:Full backward hook is firing")  # torch, on Opacus's hooks
@pytest.mark.parametrize("noise_multiplier", [0.0, SIGMA])
@pytest.mark.parametrize("clipping", sorted(CLIPPING))
def test_noised_gradients_equal_opacus(clipping: str, noise_multiplier: float) -> None:
    torch = pytest.importorskip("torch")
    opacus = pytest.importorskip("opacus")
    from opacus.optimizers import DPOptimizer as OpacusDP, DPPerLayerOptimizer as OpacusPerLayer

    module, model, opt = make(clipping, noise_multiplier)
    tnn = torch.nn
    theirs = tnn.Sequential(tnn.Conv2d(1, 4, 3), tnn.ReLU(), tnn.MaxPool2d(2), tnn.Flatten(),
                            tnn.Linear(4 * 3 * 3, 3)).double()
    with torch.no_grad():
        for q, p in zip(theirs.parameters(), module.parameters()):
            q.copy_(torch.from_numpy(p.detach().numpy()))
    opt.noise_generator = TorchNormal(torch, seed=5)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # Opacus's notes on its hooks
        wrapped = opacus.GradSampleModule(theirs)
    opacus_class = OpacusDP if clipping == "flat" else OpacusPerLayer
    their_opt = opacus_class(torch.optim.SGD(wrapped.parameters(), lr=0.1),
                             noise_multiplier=noise_multiplier,
                             max_grad_norm=norms_for(clipping, len(list(theirs.parameters()))),
                             expected_batch_size=BATCH, generator=torch.Generator().manual_seed(5))
    x, y = batch()
    tnn.functional.cross_entropy(wrapped(torch.from_numpy(x.numpy())),
                                 torch.from_numpy(y.numpy())).backward()
    their_opt.pre_step()
    nn.functional.cross_entropy(model(x), y).backward()
    opt.pre_step()
    for p, q in zip(module.parameters(), theirs.parameters()):
        np.testing.assert_allclose(p.grad.numpy(), q.grad.numpy(), rtol=1e-9, atol=1e-13)


def test_virtual_steps_equal_one_step_over_the_logical_batch() -> None:
    rng = np.random.default_rng(3)
    x, y = pb.tensor(rng.standard_normal((12, 1, 8, 8))), pb.tensor(rng.integers(0, 3, 12))
    results = []
    for limit in (None, 5):
        pb.manual_seed(0)
        module = cnn().double()
        model = GradSampleModule(module)
        opt = DPOptimizer(optim.SGD(model.parameters(), lr=0.1), module=model,
                          noise_multiplier=SIGMA, max_grad_norm=0.5, expected_batch_size=12,
                          noise_generator=4, accountant=RDPAccountant(), sample_rate=0.02)
        loader = [(x, y)]
        batches = loader if limit is None else BatchMemoryManager(
            data_loader=loader, max_physical_batch_size=limit, optimizer=opt).__enter__()
        sizes = []
        for xb, yb in batches:
            sizes.append(xb.shape[0])
            opt.zero_grad()
            nn.functional.cross_entropy(model(xb), yb).backward()  # a mean over the chunk
            opt.step()
        results.append(([p.detach().numpy().copy() for p in module.parameters()], opt.accountant.history,
                        sizes))
    (whole, history, _), (split, split_history, sizes) = results
    assert sizes == [4, 4, 4] and split_history == history == [(SIGMA, 0.02, 1)]
    for a, b in zip(whole, split):
        np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-13)


def tiny_training(steps: int, engine: PrivacyEngine, state: dict | None = None):
    pb.manual_seed(1)
    data = TensorDataset(pb.randn(64, 4), pb.randint(0, 2, (64,)))
    model = nn.Linear(4, 2)
    model, opt, loader = engine.make_private(
        module=model, optimizer=optim.Adam(model.parameters(), lr=0.01),
        data_loader=DataLoader(data, batch_size=8), noise_multiplier=0.9, max_grad_norm=1.0)
    if state is not None:
        opt.load_state_dict(state)
    for _, (x, y) in zip(range(steps), loader):
        opt.zero_grad()
        nn.functional.cross_entropy(model(x), y).backward()
        opt.step()
    return opt


@pytest.mark.parametrize("accountant", ["rdp", "prv"])
def test_a_resumed_run_accounts_exactly(accountant: str, tmp_path) -> None:
    whole = PrivacyEngine(accountant=accountant)
    tiny_training(5, whole)
    first = tiny_training(3, PrivacyEngine(accountant=accountant))
    pb.save(first.state_dict(), tmp_path / "optimizer.safetensors")
    resumed = PrivacyEngine(accountant=accountant)
    tiny_training(2, resumed, pb.load(tmp_path / "optimizer.safetensors"))
    assert resumed.accountant.history == whole.accountant.history == [(0.9, 1 / 8, 5)]
    assert resumed.get_epsilon(1e-5) == whole.get_epsilon(1e-5)


def test_zero_grad_between_forward_and_backward_keeps_the_batch() -> None:
    _, model, opt = make("flat")
    x, y = batch()
    loss = nn.functional.cross_entropy(model(x), y)
    opt.zero_grad()  # the order of many PyTorch loops: the batch's forward pass survives
    loss.backward()
    opt.step()


def test_misuse_is_refused() -> None:
    _, model, opt = make("flat")
    x, y = batch()
    with pytest.raises(PrivacyUsageError, match="no per-sample gradients"):
        opt.step()
    nn.functional.cross_entropy(model(x), y).backward()
    opt.step()
    with pytest.raises(PrivacyUsageError, match="already used by an optimizer step"):
        opt.step()
    opt.zero_grad()
    model.forbid_accumulation = True
    for _ in range(2):
        nn.functional.cross_entropy(model(x), y).backward()
    with pytest.raises(PrivacyUsageError, match="2 backward passes since the last optimizer step"):
        opt.step()


@pytest.mark.parametrize("kwargs,message", [
    (dict(noise_multiplier=-1.0), "noise_multiplier must be a number >= 0.*got -1.0"),
    (dict(max_grad_norm=0.0), "max_grad_norm must be a number > 0.*got 0.0"),
    (dict(max_grad_norm=-2), "max_grad_norm must be a number > 0.*got -2"),
    (dict(clipping="per_layer", max_grad_norm=[1.0, 2.0]), "2 entries for 4 parameters"),
    (dict(loss_reduction="max"), "loss_reduction must be one of"),
])
def test_bad_parameters_are_named(kwargs, message: str) -> None:
    model = cnn()
    data = DataLoader(TensorDataset(pb.randn(16, 1, 8, 8), pb.randint(0, 3, (16,))), batch_size=4)
    args = dict(module=model, optimizer=optim.SGD(model.parameters(), lr=0.1), data_loader=data,
                noise_multiplier=1.0, max_grad_norm=1.0) | kwargs
    with pytest.raises(PrivacyParameterError, match=message):
        PrivacyEngine().make_private(**args)


def test_only_the_optimized_parameters_are_clipped_and_released() -> None:
    """With an optimizer over part of the model, each sample's norm is over that part."""
    pb.manual_seed(0)
    module = nn.Sequential(nn.Linear(3, 4), nn.Tanh(), nn.Linear(4, 2)).double()
    head = list(module[2].parameters())
    model = GradSampleModule(module)
    opt = DPOptimizer(optim.SGD(head, lr=0.1), module=model, noise_multiplier=0.0,
                      max_grad_norm=0.1, expected_batch_size=BATCH)
    x, y = pb.randn(BATCH, 3, dtype="float64"), pb.randint(0, 2, (BATCH,))
    nn.functional.cross_entropy(model(x), y).backward()
    opt.pre_step()
    got = [p.grad.numpy().copy() for p in head]
    assert module[0].weight.grad is None  # the body's gradient is not released
    want = [np.zeros(p.shape) for p in head]
    for i in range(BATCH):
        module.zero_grad()
        nn.functional.cross_entropy(module(x[i:i + 1]), y[i:i + 1]).backward()
        grads = [p.grad.numpy() for p in head]
        factor = min(1.0, 0.1 / (math.sqrt(sum(float((g ** 2).sum()) for g in grads)) + 1e-6))
        for w, g in zip(want, grads):
            w += factor * g / BATCH
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=1e-10, atol=1e-13)
