"""Per-sample gradients of GradSampleModule against a loop of ordinary backward passes, one per
sample: for every layer in PER_SAMPLE_LAYERS (inputs from pullback.func's layer catalogue), for
a CNN with dropout (the replay draws the forward's masks), with tuples of inputs and outputs;
and a model that mixes the samples of a batch is refused."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import pullback as pb
from pullback import nn
from pullback.dp import PER_SAMPLE_LAYERS, GradSampleModule, ModuleValidator, PrivacyUsageError
from pullback.func._pytree import tree_flatten

from func_nn_layers import LAYERS

BATCH = 3


def floats(out: Any) -> list[pb.Tensor]:
    return [o for o in tree_flatten(out)[0] if isinstance(o, pb.Tensor) and o.dtype.kind == "f"]


def weighted_sum(out: Any, weights: list[np.ndarray | None]) -> pb.Tensor:
    """A loss that is a sum over samples: <out, w> over every float output (None: unused)."""
    return sum((o * pb.tensor(w)).sum() for o, w in zip(floats(out), weights) if w is not None)


def loop_reference(module: nn.Module, inputs: list[pb.Tensor],
                   weights: list[np.ndarray]) -> list[dict[str, np.ndarray]]:
    """Each sample's gradient by its own forward and backward pass (a batch of one)."""
    grads = []
    for i in range(inputs[0].shape[0]):
        module.zero_grad()
        out = module(*[x[i:i + 1] for x in inputs])
        weighted_sum(out, [None if w is None else w[i:i + 1] for w in weights]).backward()
        grads.append({k: p.grad.numpy().copy() for k, p in module.named_parameters()
                      if p.grad is not None})
    return grads


def taken(model: GradSampleModule) -> dict[str, np.ndarray]:
    """The per-sample gradients of the one backward pass since the last step, chunks joined."""
    passes, chunks = model.take_per_sample_gradients()
    chunks = list(chunks)
    assert passes == 1
    return {k: np.concatenate([c[k].numpy() for c in chunks]) for k in chunks[0]}


def per_sample(model: GradSampleModule, inputs: list[pb.Tensor], weights: list[np.ndarray],
               seed: int | None = None) -> dict[str, np.ndarray]:
    if seed is not None:
        pb.manual_seed(seed)
    weighted_sum(model(*inputs), weights).backward()
    return taken(model)


def assert_matches(got: dict[str, np.ndarray], want: list[dict[str, np.ndarray]],
                   where: str) -> None:
    assert set(got) == set(want[0]), where
    for i, sample in enumerate(want):
        for k, g in sample.items():
            np.testing.assert_allclose(got[k][i], g, rtol=1e-9, atol=1e-11,
                                       err_msg=f"{where}: {k}, sample {i}")


def catalogue_entries(layer: type) -> list[str]:
    return [name for name, (make, _) in LAYERS.items() if type(make()) is layer]


@pytest.mark.parametrize("name", sorted(PER_SAMPLE_LAYERS))
def test_every_registered_layer_matches_a_loop(name: str) -> None:
    entries = catalogue_entries(PER_SAMPLE_LAYERS[name])
    assert entries, f"no input for {name} in pullback.func's layer catalogue"
    rng = np.random.default_rng(0)
    checked = 0
    for entry in entries:
        make, makers = LAYERS[entry]
        pb.manual_seed(0)
        module = make().double()
        if not ModuleValidator.is_valid(module):  # a configuration pullback.dp refuses
            continue
        checked += 1
        # each maker gives one sample with a leading batch dim of its own: stack BATCH of them
        inputs = [pb.tensor(np.concatenate([m(rng) for _ in range(BATCH)])) for m in makers]
        outputs = floats(module(*inputs))
        # outputs whose dim 0 is not the batch (an RNN's final state) stay out of the loss
        weights = [rng.standard_normal(tuple(o.shape)) if o.shape[0] == inputs[0].shape[0]
                   else None for o in outputs]
        want = loop_reference(module, inputs, weights)
        got = per_sample(GradSampleModule(module, loss_reduction="sum", chunk_size=2), inputs,
                         weights)  # in chunks of two samples
        rows = inputs[0].shape[0]
        assert all(g.shape[0] == rows for g in got.values())
        assert_matches(got, want, entry)
    assert checked, f"every catalogue entry of {name} is a configuration pullback.dp refuses"


def test_a_cnn_with_dropout_replays_the_forward_masks() -> None:
    """Dropout draws masks in the forward pass; the replay restores the generator, so each
    sample's gradient is that of the forward the loss saw. The loop reference reads the masks
    of that forward (output over input at each dropout) and applies sample i's rows."""
    pb.manual_seed(0)
    module = nn.Sequential(nn.Conv2d(1, 3, 3), nn.ReLU(), nn.Dropout(0.4), nn.MaxPool2d(2),
                           nn.Flatten(), nn.Linear(3 * 3 * 3, 4), nn.Dropout(0.2),
                           nn.Linear(4, 3)).double()
    dropouts = [m for m in module if isinstance(m, nn.Dropout)]
    rng = np.random.default_rng(1)
    x = pb.tensor(rng.standard_normal((5, 1, 8, 8)))
    weights = [rng.standard_normal((5, 3))]
    masks: list[np.ndarray] = []

    def record(layer: nn.Module, args: tuple, out: pb.Tensor) -> None:
        before = args[0].detach().numpy()
        masks.append(np.divide(out.detach().numpy(), before, out=np.zeros_like(before),
                               where=before != 0))  # where the input is 0 (ReLU) no gradient

    handles = [d.register_forward_hook(record) for d in dropouts]
    pb.manual_seed(7)
    with pb.no_grad():
        module(x)
    for h in handles:
        h.remove()
    got = per_sample(GradSampleModule(module, loss_reduction="sum"), [x], weights, seed=7)
    # in chunks, each replay takes its rows of the forward pass's draws
    chunked = per_sample(GradSampleModule(module, loss_reduction="sum", chunk_size=2), [x],
                         weights, seed=7)

    def apply_mask(row: pb.Tensor):
        return lambda layer, args, out: args[0] * row

    want = []
    for i in range(5):
        handles = [d.register_forward_hook(apply_mask(pb.tensor(m[i:i + 1])))
                   for d, m in zip(dropouts, masks)]
        module.zero_grad()
        weighted_sum(module(x[i:i + 1]), [weights[0][i:i + 1]]).backward()
        want.append({k: p.grad.numpy().copy() for k, p in module.named_parameters()})
        for h in handles:
            h.remove()
    assert_matches(got, want, "cnn with dropout")
    assert_matches(chunked, want, "cnn with dropout, chunks of 2")


def test_mean_reduction_gives_each_sample_its_own_loss_gradient() -> None:
    pb.manual_seed(0)
    module = nn.Sequential(nn.Linear(4, 5), nn.Tanh(), nn.Linear(5, 3)).double()
    x, y = pb.randn(6, 4, dtype="float64"), pb.randint(0, 3, (6,))
    model = GradSampleModule(module, chunk_size=4)  # loss_reduction="mean"; chunks of 4 and 2
    nn.functional.cross_entropy(model(x), y).backward()
    got = taken(model)
    for i in range(6):
        module.zero_grad()
        nn.functional.cross_entropy(module(x[i:i + 1]), y[i:i + 1]).backward()
        for k, p in module.named_parameters():
            np.testing.assert_allclose(got[k][i], p.grad.numpy(), rtol=1e-10, atol=1e-12)


class TwoInTwoOut(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.a, self.b = nn.Linear(3, 2), nn.Linear(4, 2)

    def forward(self, x: pb.Tensor, z: pb.Tensor, scale: float = 1.0) -> tuple:
        return self.a(x) * scale, (self.b(z) * self.a(x)).tanh()


def test_several_inputs_and_outputs_and_keyword_arguments() -> None:
    pb.manual_seed(0)
    module = TwoInTwoOut().double()
    rng = np.random.default_rng(2)
    x, z = pb.tensor(rng.standard_normal((4, 3))), pb.tensor(rng.standard_normal((4, 4)))
    weights = [rng.standard_normal((4, 2)), rng.standard_normal((4, 2))]
    model = GradSampleModule(module, loss_reduction="sum")
    weighted_sum(model(x, z, scale=0.5), weights).backward()
    got = taken(model)
    for i in range(4):
        module.zero_grad()
        weighted_sum(module(x[i:i + 1], z[i:i + 1], scale=0.5),
                     [w[i:i + 1] for w in weights]).backward()
        for k, p in module.named_parameters():
            np.testing.assert_allclose(got[k][i], p.grad.numpy(), rtol=1e-10, atol=1e-12)


class CentreOverBatch(nn.Module):
    """Subtracts the batch mean: each output depends on the other samples."""

    def forward(self, x: pb.Tensor) -> pb.Tensor:
        return x - x.mean(axis=0, keepdims=True)


def test_a_model_that_mixes_samples_is_refused() -> None:
    module = nn.Sequential(nn.Linear(3, 4), CentreOverBatch(), nn.Linear(4, 2))
    model = GradSampleModule(module)
    (model(pb.randn(5, 3)) ** 2).mean().backward()
    with pytest.raises(PrivacyUsageError, match="mixes samples of a batch"):
        taken(model)


def test_a_loss_of_an_output_not_batched_along_dim_0_is_refused() -> None:
    """An LSTM's final state is (layers, batch, hidden): its dim 0 is not the sample dim."""
    model = GradSampleModule(nn.LSTM(3, 4, batch_first=True))
    out, (h, c) = model(pb.randn(5, 2, 3))
    (out.sum() + h.sum()).backward()
    with pytest.raises(PrivacyUsageError, match=r"output 1 of the model, of shape \(1, 5, 4\)"):
        taken(model)


def test_evaluation_and_no_grad_run_the_model_itself() -> None:
    module = nn.Linear(3, 2)
    model = GradSampleModule(module)
    x = pb.randn(4, 3)
    with pb.no_grad():
        model(x)
    model.eval()
    out = model(x)
    assert out.requires_grad and out.grad_fn is not None  # the model's own graph
    model.train()
    with pytest.raises(PrivacyUsageError, match="no per-sample gradients"):
        model.take_per_sample_gradients()
    assert model.state_dict().keys() == module.state_dict().keys()
    assert model.in_features == 3  # attributes of the wrapped model


class SequenceClassifier(nn.Module):
    """A batch-first LSTM read at its last step, then a linear layer: DP-SGD on sequences."""

    def __init__(self) -> None:
        super().__init__()
        self.lstm = nn.LSTM(3, 5, num_layers=2, batch_first=True)
        self.head = nn.Linear(5, 2)

    def forward(self, x: pb.Tensor) -> pb.Tensor:
        out, _ = self.lstm(x)
        return self.head(out[:, -1])


def test_a_recurrent_classifier_matches_a_loop() -> None:
    pb.manual_seed(0)
    module = SequenceClassifier().double()
    assert ModuleValidator.is_valid(module)
    rng = np.random.default_rng(3)
    x = pb.tensor(rng.standard_normal((4, 6, 3)))
    weights = [rng.standard_normal((4, 2))]
    got = per_sample(GradSampleModule(module, loss_reduction="sum", chunk_size=3), [x], weights)
    assert_matches(got, loop_reference(module, [x], weights), "SequenceClassifier")
