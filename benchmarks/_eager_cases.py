"""The workloads of issue 41's table (eager steps, batch-1 inference, the compiled GPT step), each
buildable on one side only, so that ``eager_targets.py`` can time pullback and PyTorch in
processes of their own.

``build(name, side)`` returns a step (a callable of no argument); ``side`` is ``"pullback"``,
``"torch"`` or, for the compiled case, ``"compiled"``. Models, batches and optimizers are those
of the scripts each case names (``gpt_step.py``, ``nn_mlp.py``, ``nn_cnn.py``, ``dp_step.py``,
``core_overhead.py``) and, for the mnist net, pytorch/examples' ``mnist/main.py`` (its ``Net``,
Adadelta with lr 1.0, batch 64).
"""

from __future__ import annotations

from typing import Any, Callable, NamedTuple

import numpy as np


class Case(NamedTuple):
    target: float  # the most pullback / PyTorch may take (ratio of step times)
    what: str
    builder: Callable[[str], Callable[[], Any]]


def _modules(side: str) -> tuple[Any, Any, Any]:
    """(nn, functional, optim) of the side's framework."""
    if side == "torch":
        import torch

        return torch.nn, torch.nn.functional, torch.optim
    import pullback.nn.functional as F
    from pullback import nn, optim

    return nn, F, optim


def _tensor(side: str, array: np.ndarray) -> Any:
    if side == "torch":
        import torch

        return torch.from_numpy(array)
    import pullback

    return pullback.from_numpy(array)


def _batch(shape: tuple[int, ...], classes: int, side: str) -> tuple[Any, Any]:
    rng = np.random.default_rng(0)
    x = rng.standard_normal(shape).astype(np.float32)
    y = rng.integers(0, classes, shape[0]).astype(np.int64)
    return _tensor(side, x), _tensor(side, y)


def _training_step(model: Any, opt: Any, F: Any, x: Any, y: Any,
                   loss: str = "cross_entropy") -> Callable[[], None]:
    def step() -> None:
        opt.zero_grad()
        out = model(x)
        (F.nll_loss(out, y) if loss == "nll" else F.cross_entropy(out, y)).backward()
        opt.step()

    return step


def _mlp(nn: Any) -> Any:
    return nn.Sequential(nn.Linear(784, 256), nn.ReLU(), nn.Linear(256, 256), nn.ReLU(),
                         nn.Linear(256, 10))


def _lenet(nn: Any) -> Any:
    """benchmarks/nn_cnn.py's LeNet-like CNN (28x28 -> 26 -> 13 -> 11 -> 5)."""
    return nn.Sequential(nn.Conv2d(1, 8, 3), nn.ReLU(), nn.MaxPool2d(2),
                         nn.Conv2d(8, 16, 3), nn.ReLU(), nn.MaxPool2d(2),
                         nn.Flatten(), nn.Linear(400, 10))


def _dp_cnn(nn: Any) -> Any:
    """benchmarks/dp_step.py's CNN (examples/fashion_mnist_cnn.py's)."""
    return nn.Sequential(nn.Conv2d(1, 16, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                         nn.Conv2d(16, 32, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                         nn.Flatten(), nn.Dropout(0.25), nn.Linear(32 * 7 * 7, 128),
                         nn.ReLU(), nn.Dropout(0.25), nn.Linear(128, 10))


def _mnist_net(nn: Any, F: Any, flatten: Callable[[Any], Any]) -> Any:
    """pytorch/examples' mnist/main.py ``Net``, layer for layer."""

    class Net(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.conv1 = nn.Conv2d(1, 32, 3, 1)
            self.conv2 = nn.Conv2d(32, 64, 3, 1)
            self.dropout1 = nn.Dropout(0.25)
            self.dropout2 = nn.Dropout(0.5)
            self.fc1 = nn.Linear(9216, 128)
            self.fc2 = nn.Linear(128, 10)

        def forward(self, x: Any) -> Any:
            x = F.relu(self.conv1(x))
            x = F.relu(self.conv2(x))
            x = F.max_pool2d(x, 2)
            x = self.dropout1(x)
            x = flatten(x)
            x = F.relu(self.fc1(x))
            x = self.dropout2(x)
            return F.log_softmax(self.fc2(x), dim=1)

    return Net()


def _flatten(side: str) -> Callable[[Any], Any]:
    if side == "torch":
        import torch

        return lambda x: torch.flatten(x, 1)
    import pullback

    return lambda x: pullback.flatten(x, 1)


def _sgd_case(model_of: Callable[[Any], Any], shape: tuple[int, ...],
              lr: float = 0.01) -> Callable[[str], Callable[[], None]]:
    def build(side: str) -> Callable[[], None]:
        nn, F, optim = _modules(side)
        model = model_of(nn)
        x, y = _batch(shape, 10, side)
        return _training_step(model, optim.SGD(model.parameters(), lr=lr), F, x, y)

    return build


def _mnist_adadelta(side: str) -> Callable[[], None]:
    nn, F, optim = _modules(side)
    model = _mnist_net(nn, F, _flatten(side))
    x, y = _batch((64, 1, 28, 28), 10, side)
    return _training_step(model, optim.Adadelta(model.parameters(), lr=1.0), F, x, y,
                          loss="nll")


def _inference(model_of: Callable[[Any], Any],
               shape: tuple[int, ...]) -> Callable[[str], Callable[[], Any]]:
    def build(side: str) -> Callable[[], Any]:
        nn, _, _ = _modules(side)
        model = model_of(nn)
        model.eval()
        x, _ = _batch(shape, 10, side)
        if side == "torch":
            import torch as framework
        else:
            import pullback as framework  # type: ignore[no-redef]

        def step() -> Any:
            with framework.no_grad():
                return model(x)

        return step

    return build


def _op_chain(side: str) -> Callable[[], None]:
    from core_overhead import chain

    rng = np.random.default_rng(0)
    x0, w0 = rng.standard_normal(8).astype(np.float32), rng.standard_normal(8).astype(np.float32)
    if side == "torch":
        import torch as framework
    else:
        import pullback as framework  # type: ignore[no-redef]

    def step() -> None:
        x = framework.tensor(x0, requires_grad=True)
        w = framework.tensor(w0, requires_grad=True)
        chain(x, w).backward()

    return step


def _gpt(side: str) -> Callable[[], None]:
    """benchmarks/gpt_step.py's step (AdamW); ``compiled``: the same step through
    ``pullback.compiler.compile`` (fullgraph)."""
    import pullback as pb
    import pullback.optim as optim
    from gpt_step import BATCH, CONFIG  # also puts the GPT tests' torch_gpt on the path
    from pullback.gpt import GPT

    rng = np.random.default_rng(0)
    x = rng.integers(0, CONFIG.vocab_size, (BATCH, CONFIG.block_size))
    y = rng.integers(0, CONFIG.vocab_size, (BATCH, CONFIG.block_size))
    pb.manual_seed(0)
    model = GPT(CONFIG)
    if side == "torch":
        import torch
        from torch_gpt import torch_twin

        twin = torch_twin(model)
        opt = torch.optim.AdamW(twin.parameters(), lr=1e-3, weight_decay=0.1, foreach=True)
        tx, ty = torch.from_numpy(x), torch.from_numpy(y)

        def torch_step() -> None:
            loss = twin(tx, ty)
            opt.zero_grad()
            loss.backward()
            opt.step()

        return torch_step
    pb_opt = optim.AdamW(model.parameters(), lr=1e-3, weight_decay=0.1)
    px, py = pb.tensor(x), pb.tensor(y)

    def step(inputs: Any, targets: Any) -> Any:
        _, loss = model(inputs, targets)
        pb_opt.zero_grad()
        loss.backward()
        pb_opt.step()
        return loss

    if side == "compiled":
        import pullback.compiler as pc

        compiled = pc.compile(step, fullgraph=True)
        return lambda: compiled(px, py)
    return lambda: step(px, py)


CASES: dict[str, Case] = {
    "gpt_step": Case(1.1, "GPT training step, 4 layers, width 128, batch 32, AdamW", _gpt),
    "mlp_step": Case(1.1, "MLP 784-256-256-10, batch 128, SGD step",
                     _sgd_case(_mlp, (128, 784))),
    "lenet_step": Case(1.1, "LeNet-like CNN, batch 64, SGD step",
                       _sgd_case(_lenet, (64, 1, 28, 28))),
    "dp_cnn_step": Case(1.1, "dp_step.py's CNN, plain (non-private) SGD step, batch 64",
                        _sgd_case(_dp_cnn, (64, 1, 28, 28), lr=0.05)),
    "mnist_adadelta_step": Case(1.1, "pytorch/examples' mnist Net, Adadelta, batch 64",
                                _mnist_adadelta),
    "op_chain": Case(1.1, "1,000 ops on 8-element tensors, forward + backward", _op_chain),
    "mlp_batch1_inference": Case(1.2, "MLP 784-256-256-10, one sample, no_grad",
                                 _inference(_mlp, (1, 784))),
    "cnn_batch1_inference": Case(1.2, "LeNet-like CNN, one sample, no_grad",
                                 _inference(_lenet, (1, 1, 28, 28))),
    "gpt_step_compiled": Case(0.8, "the GPT step compiled (pullback.compiler) vs PyTorch eager",
                              _gpt),
}
