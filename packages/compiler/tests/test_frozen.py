"""``compile(model, freeze=True)``: inference calls run one native C function with the weights
frozen in (``_frozen.py``). Its outputs agree with eager's to float32 rounding; a frozen weight
that changes rebuilds it; calls it does not cover (gradients, training mode, an op without a C
rule) run the compiled Python program, whose results are eager's bit for bit."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import pullback as pb
import pullback.nn as nn
import pullback.optim as optim
from pullback.compiler import compile
from pullback.compiler._c99.build import compiler

pytestmark = pytest.mark.skipif(compiler() is None, reason="no C compiler (set $CC)")


def _mlp():
    return nn.Sequential(nn.Linear(20, 32), nn.ReLU(), nn.Linear(32, 5))


def _cnn():
    return nn.Sequential(nn.Conv2d(1, 4, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                         nn.Conv2d(4, 6, 3), nn.ReLU(), nn.Flatten(), nn.Linear(6 * 4 * 4, 3))


def _close(got, expected):
    np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-6)


def _eager(model, x):
    with pb.no_grad():
        return model(x).numpy()


@pytest.mark.parametrize("make, shape", [(_mlp, (1, 20)), (_mlp, (7, 20)),
                                         (_cnn, (1, 1, 12, 12)), (_cnn, (3, 1, 12, 12))])
def test_inference_runs_the_frozen_program_and_matches_eager(make, shape):
    pb.manual_seed(0)
    model = make().eval()
    fast = compile(model, freeze=True)
    x = pb.randn(*shape)
    for _ in range(3):
        with pb.no_grad():
            y = fast(x)
        assert isinstance(y, pb.Tensor) and y.dtype == pb.float32 and not y.requires_grad
        _close(y.numpy(), _eager(model, x))
    assert fast.frozen.builds == 1 and fast.traces == 0  # the Python program was never traced
    with pb.inference_mode():
        _close(fast(pb.randn(*shape) * 0 + x).numpy(), _eager(model, x))
    assert fast.frozen.builds == 1


def test_another_input_shape_gets_its_own_program():
    pb.manual_seed(1)
    model = _mlp().eval()
    fast = compile(model, freeze=True)
    with pb.no_grad():
        for rows in (1, 4, 1):
            x = pb.randn(rows, 20)
            _close(fast(x).numpy(), _eager(model, x))
    assert fast.frozen.builds == 2


def test_a_changed_weight_rebuilds_the_program():
    pb.manual_seed(2)
    model = _mlp()
    fast = compile(model.eval(), freeze=True)
    x = pb.randn(2, 20)
    with pb.no_grad():
        before = fast(x).numpy()
    # an optimizer step (in training mode, eagerly), then inference again
    opt = optim.SGD(model.parameters(), lr=0.5)
    model.train()
    (model(x) ** 2).sum().backward()
    opt.step()
    model.eval()
    with pb.no_grad():
        after = fast(x).numpy()
    assert not np.allclose(before, after)
    _close(after, _eager(model, x))
    assert fast.frozen.builds == 2
    # an in-place op, and load_state_dict
    with pb.no_grad():
        model[0].bias.mul_(0.0)
        _close(fast(x).numpy(), _eager(model, x))
        other = _mlp()
        model.load_state_dict(other.state_dict())
        _close(fast(x).numpy(), _eager(other.eval(), x))
    assert fast.frozen.builds == 4
    assert any("a frozen weight changed" in line for line in fast.trace_log)


def test_calls_it_does_not_cover_run_the_compiled_program():
    pb.manual_seed(3)
    model = _mlp()
    fast = compile(model, freeze=True)
    x = pb.randn(3, 20)
    # gradients wanted: the compiled Python program, differentiable
    y = fast(x)
    assert y.requires_grad
    y.sum().backward()
    assert model[0].weight.grad is not None
    # training mode under no_grad: not frozen either (the program is traced in eval mode)
    with pb.no_grad():
        np.testing.assert_array_equal(fast(x).numpy(), model(x).numpy())
    assert fast.frozen.builds == 0
    # keyword arguments and non-Tensors are not frozen
    plain = compile(lambda a: a * 2.0, freeze=True)
    with pb.no_grad():
        np.testing.assert_array_equal(plain(x).numpy(), x.numpy() * 2.0)
    assert plain.frozen.builds == 0


class _Cumulative(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.linear = nn.Linear(4, 4)

    def forward(self, x):
        return pb.cumsum(self.linear(x), 1)  # no C rule


def test_a_model_the_c_writer_cannot_take_warns_once_and_runs_the_program():
    model = _Cumulative().eval()
    fast = compile(model, freeze=True)
    x = pb.randn(2, 4)
    with warnings.catch_warnings(record=True) as caught, pb.no_grad():
        warnings.simplefilter("always")
        for _ in range(3):
            np.testing.assert_array_equal(fast(x).numpy(), _eager(model, x))
    said = [w for w in caught if "cannot be frozen" in str(w.message)]
    assert len(said) == 1 and "cumsum" in str(said[0].message)
    assert fast.frozen.builds == 0


def test_a_model_with_too_many_weights_is_not_frozen(monkeypatch):
    from pullback.compiler import _frozen

    monkeypatch.setattr(_frozen, "MAX_FROZEN_WEIGHT_BYTES", 1000)
    model = _mlp().eval()  # 3,365 weights
    fast = compile(model, freeze=True)
    x = pb.randn(2, 20)
    with pytest.warns(RuntimeWarning, match="MiB of weights"), pb.no_grad():
        np.testing.assert_array_equal(fast(x).numpy(), _eager(model, x))
    assert fast.frozen.builds == 0


class _TwoHeads(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.body, self.head = nn.Linear(6, 8), nn.Linear(8, 2)

    def forward(self, x):
        h = pb.relu(self.body(x))
        return {"features": h, "logits": (self.head(h), h.sum(1))}


def test_a_structured_result_keeps_its_structure():
    pb.manual_seed(4)
    model = _TwoHeads().eval()
    fast = compile(model, freeze=True)
    x = pb.randn(3, 6)
    with pb.no_grad():
        got, expected = fast(x), model(x)
    assert fast.frozen.builds == 1
    assert set(got) == {"features", "logits"} and len(got["logits"]) == 2
    _close(got["features"].numpy(), expected["features"].numpy())
    for a, b in zip(got["logits"], expected["logits"]):
        _close(a.numpy(), b.numpy())
