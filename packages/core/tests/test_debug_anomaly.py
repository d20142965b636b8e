"""Anomaly mode: planted NaN/Inf faults, forward and backward, each named with its op, its
inputs' statistics and the line of this file that created it."""

from __future__ import annotations

import inspect
import warnings
from pathlib import Path

import numpy as np
import pytest

import pullback as pb
from pullback.autograd import Function
from pullback.debug import detect_anomaly, is_anomaly_enabled, set_detect_anomaly
from pullback.debug.anomaly import META_KEY, AnomalyMode
from pullback.dispatch import state
from pullback.errors import AnomalyError, PullbackError

pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning")  # NumPy's invalid-value notes


def _line_of(marker: str) -> int:
    """Line number in this file of the source line that contains ``marker``."""
    lines = Path(__file__).read_text().splitlines()
    return next(i for i, text in enumerate(lines, 1) if marker in text and "_line_of" not in text)


def _raises(fn) -> str:
    with pytest.raises(AnomalyError) as info:
        fn()
    return str(info.value)


def test_error_type_is_pullback_and_runtime_error():
    assert issubclass(AnomalyError, PullbackError)
    assert issubclass(AnomalyError, RuntimeError)


def test_log_of_negative_is_caught_in_forward_with_stats_and_line():
    x = pb.tensor([-1.0, 2.0, 4.0], requires_grad=True)

    def run():
        with detect_anomaly():
            y = x * 2.0
            return y.log()  # PLANTED: log of a negative

    msg = _raises(run)
    assert msg.startswith("forward: op 'log' produced NaN from finite inputs")
    assert "output: shape (3,) float32, 1 NaN, 0 Inf" in msg
    assert "input 0: shape (3,) float32, min -2, max 8" in msg
    assert f"test_debug_anomaly.py:{_line_of('PLANTED: log of a negative')}" in msg
    assert "return y.log()" in msg  # the source line itself


def test_zero_over_zero_names_div():
    a = pb.tensor([0.0, 1.0])
    b = pb.tensor([0.0, 2.0])

    def run():
        with detect_anomaly():
            return a / b  # PLANTED: 0/0

    msg = _raises(run)
    assert "op 'div' produced NaN from finite inputs" in msg
    assert "input 1: shape (2,) float32, min 0, max 2" in msg
    assert f":{_line_of('PLANTED: 0/0')}" in msg


def test_overflow_in_exp_is_an_inf_from_finite_inputs():
    x = pb.tensor([1.0, 100.0], requires_grad=True)

    def run():
        with detect_anomaly():
            return x.exp()  # PLANTED: overflow

    msg = _raises(run)
    assert "op 'exp' produced Inf from finite inputs" in msg
    assert "1 Inf (+1/-0)" in msg
    assert f":{_line_of('PLANTED: overflow')}" in msg


def test_nan_gradient_of_sqrt_at_zero_is_caught_in_backward():
    x = pb.tensor([0.0, 4.0], requires_grad=True)
    mask = pb.tensor([0.0, 1.0])

    def run():
        with detect_anomaly():
            y = x.sqrt()  # PLANTED: sqrt at 0
            loss = (y * mask).sum()
            loss.backward()

    msg = _raises(run)
    first = msg.splitlines()[0]
    assert first == ("backward: the grad rule of op 'sqrt' produced NaN in the gradient of "
                     "input 0 from a finite incoming gradient")
    assert "gradient of input 0: shape (2,) float32, 1 NaN, 0 Inf" in msg
    assert "incoming gradient: shape (2,) float32, min 0, max 1" in msg
    assert "forward input 0: shape (2,) float32, min 0, max 4" in msg
    assert f"the op was created at {__file__}:{_line_of('PLANTED: sqrt at 0')}" in msg
    assert x.grad is None  # stopped before anything reached the leaf


def test_inf_gradient_of_sqrt_at_zero_is_caught_too():
    x = pb.tensor([0.0, 4.0], requires_grad=True)

    def run():
        with detect_anomaly():
            x.sqrt().sum().backward()

    msg = _raises(run)
    assert "grad rule of op 'sqrt' produced Inf in the gradient of input 0" in msg


class _BrokenSquare(Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x * x

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        return grad * 2.0 * (x - x) / (x - x)  # PLANTED: 0/0 in a Function's backward


def test_nan_from_a_user_function_backward_names_the_function():
    x = pb.tensor([1.0, 2.0], requires_grad=True)

    def run():
        with detect_anomaly():
            y = _BrokenSquare.apply(x)  # PLANTED: Function created here
            y.sum().backward()

    msg = _raises(run)
    # The first op to make the NaN is the division inside the user's backward (its ops run
    # through dispatch), so the error points into backward() itself.
    assert msg.startswith("backward, inside the backward of Function '_BrokenSquare': "
                          "op 'div' produced NaN from finite inputs")
    assert f":{_line_of('PLANTED: 0/0 in a Function')}" in msg


class _NanGradient(Function):
    """A backward that hands back a NaN it did not compute with pullback ops."""

    @staticmethod
    def forward(ctx, x):
        return x * 1.0

    @staticmethod
    def backward(ctx, grad):
        bad = grad.detach().numpy().copy()
        bad[0] = np.nan
        return pb.tensor(bad)


def test_non_finite_gradient_returned_by_a_function_names_it_and_its_creation():
    x = pb.tensor([1.0, 2.0], requires_grad=True)

    def run():
        with detect_anomaly():
            y = _NanGradient.apply(x)  # PLANTED: NaN Function
            y.sum().backward()

    msg = _raises(run)
    assert msg.startswith("backward: the backward of Function '_NanGradient' (defined at ")
    assert f"{__file__}:{inspect.getsourcelines(_NanGradient.backward)[1]}" in msg
    assert f"the op was created at {__file__}:{_line_of('PLANTED: NaN Function')}" in msg


def test_input_already_nan_is_reported_at_first_use_as_coming_from_outside():
    data = pb.tensor([1.0, float("nan"), 3.0])
    w = pb.tensor([1.0, 1.0, 1.0], requires_grad=True)

    def run():
        with detect_anomaly():
            return data * w

    msg = _raises(run)
    assert "op 'mul' produced NaN from input 0, which already held NaN" in msg
    assert "note: input 0 (a leaf tensor) was already non-finite before this op" in msg


def test_nan_made_before_the_mode_is_blamed_on_its_first_use_inside():
    x = pb.tensor([-1.0, 1.0], requires_grad=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        early = x.log()  # outside the mode: not checked

    def run():
        with detect_anomaly():
            return early + 1.0

    msg = _raises(run)
    assert "op 'add' produced NaN from input 0, which already held NaN" in msg
    assert "note: input 0 (made by op 'log')" in msg


def test_deliberate_minus_inf_mask_passes_and_masked_softmax_is_finite():
    scores = pb.randn(4, 4, requires_grad=True)
    causal = pb.tensor(np.triu(np.ones((4, 4), dtype=bool), k=1))
    with detect_anomaly():
        masked = scores.masked_fill(causal, float("-inf"))  # infinity from a Python scalar
        shifted = masked - masked.amax(axis=-1, keepdims=True)  # carries -inf on
        e = shifted.exp()
        probs = e / e.sum(axis=-1, keepdims=True)
        probs.sum().backward()
    assert np.isfinite(scores.grad.numpy()).all()
    np.testing.assert_allclose(probs.detach().numpy().sum(-1), 1.0, rtol=1e-6)


def test_inf_minus_inf_is_a_nan_made_from_inf_inputs():
    a = pb.tensor([float("inf"), 1.0])

    def run():
        with detect_anomaly():
            return a - a

    msg = _raises(run)
    assert "op 'sub' produced NaN from input 0, which already held" not in msg
    assert "produced NaN from inputs that held Inf but no NaN" in msg


def test_backward_with_non_finite_incoming_gradient_says_so():
    x = pb.tensor([1.0, 2.0], requires_grad=True)

    def run():
        with detect_anomaly():
            y = x * 3.0
            y.backward(gradient=pb.tensor([float("nan"), 1.0]))

    msg = _raises(run)
    assert "from an incoming gradient that was already non-finite" in msg


def test_nan_inside_create_graph_backward_is_labelled_backward():
    x = pb.tensor([0.0, 4.0], requires_grad=True)
    mask = pb.tensor([0.0, 1.0])

    def run():
        with detect_anomaly():
            loss = (x.sqrt() * mask).sum()
            pb.autograd.grad(loss, x, create_graph=True)

    msg = _raises(run)
    assert msg.startswith("backward (create_graph=True), inside the grad rule of op 'sqrt': "
                          "op 'div' produced NaN")


def test_results_are_unchanged_and_creation_stack_is_kept_only_in_the_mode():
    rng = np.random.default_rng(0)
    a_np = rng.normal(size=(3, 4)).astype(np.float32)
    b_np = rng.normal(size=(4, 2)).astype(np.float32)

    def step(anomaly: bool):
        a = pb.tensor(a_np, requires_grad=True)
        b = pb.tensor(b_np, requires_grad=True)
        if anomaly:
            with detect_anomaly():
                out = (a @ b).tanh()
                meta = out._node.meta
                out.sum().backward()
        else:
            out = (a @ b).tanh()
            meta = out._node.meta
            out.sum().backward()
        return out.detach().numpy(), a.grad.numpy(), b.grad.numpy(), meta

    *plain, meta_off = step(False)
    *checked, meta_on = step(True)
    for p, c in zip(plain, checked):
        np.testing.assert_array_equal(p, c)
    assert meta_off is None
    frames = meta_on[META_KEY]
    assert any(code.co_name == "step" for code, _ in frames)


def test_global_switch_and_nesting():
    assert not is_anomaly_enabled()
    set_detect_anomaly(True)
    try:
        assert is_anomaly_enabled()
        set_detect_anomaly(True)  # idempotent
        with detect_anomaly():  # nested: no second mode
            assert sum(isinstance(m, AnomalyMode) for m in state.modes) == 1
        assert is_anomaly_enabled()
        with pytest.raises(AnomalyError):
            pb.tensor([-1.0]).log()
    finally:
        set_detect_anomaly(False)
    assert not is_anomaly_enabled()
    assert state.modes == []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert np.isnan(pb.tensor([-1.0]).log().item())  # off again: no error


def test_mode_is_removed_after_an_error():
    with pytest.raises(AnomalyError):
        with detect_anomaly():
            pb.tensor([0.0]).log() * 0.0
    assert state.modes == []


def test_overflowing_sum_of_finite_values_is_not_an_anomaly():
    x = pb.tensor(np.full(8, 3e38, dtype=np.float32))
    with detect_anomaly():
        y = x * 1.0  # every value finite; their sum overflows float32
    assert np.isfinite(y.numpy()).all()


def test_float16_checks_do_not_overflow_and_still_catch_inf():
    x = pb.tensor(np.full(8, 60000.0, dtype=np.float16))
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a float16 sum would overflow and warn
        with detect_anomaly():
            x * 1.0
    with pytest.raises(AnomalyError, match="op 'mul' produced Inf from finite inputs"):
        with detect_anomaly():
            x * 2.0  # 120000 does not fit float16


def test_integer_ops_are_not_checked():
    with detect_anomaly():
        out = pb.tensor([1, 2, 3]) * 2
    assert out.tolist() == [2, 4, 6]
