"""compile(): compiled calls give what eager calls give (inference, loss + backward, training
steps with every optimizer), and the guards, re-tracing and graph breaks behave as documented."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import pullback as pb
import pullback.nn as nn
from compiler_battery import (OPTIMIZERS, gpt, gpt_batch, loss_and_backward, mlp, mlp_batch,
                              training_step)
from pullback.compiler import (DataDependentError, GraphBreakWarning, RecompileWarning,
                               TraceError, compile)


def _twins(make, dtype):
    return make(dtype), make(dtype)


@pytest.mark.parametrize("passes", [[], None], ids=["no-passes", "default-passes"])
def test_compiled_inference_matches_eager(passes):
    model = mlp()
    compiled = compile(model, passes=passes)
    with pb.no_grad():
        for seed in range(3):
            x, _ = mlp_batch(seed=seed)
            np.testing.assert_allclose(compiled(x).array, model(x).array, rtol=1e-6, atol=1e-7)
    assert compiled.traces == 1


@pytest.mark.parametrize("optimizer", sorted(OPTIMIZERS))
@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_compiled_training_steps_match_eager_step_for_step(optimizer, dtype):
    eager_model, compiled_model = _twins(mlp, dtype)
    eager_step = training_step(eager_model, OPTIMIZERS[optimizer](eager_model.parameters()))
    step = compile(training_step(compiled_model,
                                 OPTIMIZERS[optimizer](compiled_model.parameters())),
                   fullgraph=True)
    rtol = 1e-12 if dtype == "float64" else 1e-5
    for i in range(8):
        x, y = mlp_batch(dtype, seed=i)
        np.testing.assert_allclose(step(x, y).item(), eager_step(x, y).item(), rtol=rtol)
    for (name, p), q in zip(eager_model.named_parameters(), compiled_model.parameters()):
        np.testing.assert_allclose(q.array, p.array, rtol=rtol, atol=rtol, err_msg=name)
        np.testing.assert_allclose(q.grad.array, p.grad.array, rtol=rtol, atol=rtol, err_msg=name)
    assert step.traces <= 3  # first call, then grads and optimizer state exist (SGD: momentum)


def test_compiled_gpt_training_matches_eager():
    import pullback.optim as optim

    eager_model, compiled_model = gpt("float64"), gpt("float64")
    eager_step = training_step(eager_model, optim.AdamW(eager_model.parameters(), lr=1e-2))
    step = compile(training_step(compiled_model, optim.AdamW(compiled_model.parameters(),
                                                             lr=1e-2)), fullgraph=True)
    for i in range(5):
        x, y = gpt_batch(seed=i)
        np.testing.assert_allclose(step(x, y).item(), eager_step(x, y).item(), rtol=1e-12)


def test_loss_and_backward_compiled_puts_gradients_in_grad():
    eager_model, compiled_model = _twins(mlp, "float64")
    x, y = mlp_batch("float64")

    compiled = compile(loss_and_backward(compiled_model))
    for _ in range(3):  # gradients accumulate across calls, as in eager
        eager = loss_and_backward(eager_model)(x, y)
        got = compiled(x, y)
        np.testing.assert_allclose(got.item(), eager.item(), rtol=1e-13)
    for p, q in zip(eager_model.parameters(), compiled_model.parameters()):
        np.testing.assert_allclose(q.grad.array, p.grad.array, rtol=1e-12)


def test_each_compiled_run_advises_the_heaps_growth(monkeypatch):
    # a heap that the last run grew gets huge pages (pullback._host_memory) at the next run's start
    from pullback.compiler import _executor

    calls = []
    monkeypatch.setattr(_executor, "advise_heap_growth", lambda: calls.append(None))
    _, model = _twins(mlp, "float64")
    x, y = mlp_batch("float64")
    compiled = compile(lambda a: model(a).sum())
    for _ in range(3):  # traced and built
        compiled(x)
    before = len(calls)
    compiled(x)
    compiled(x)
    assert len(calls) - before == 2


def test_a_new_shape_retraces_and_says_why():
    messages = []
    f = compile(lambda x: pb.tanh(x) * 2.0, log=messages.append)
    f(pb.randn(3))
    f(pb.randn(3))
    assert f.traces == 1
    f(pb.randn(4))
    assert f.traces == 2
    assert "argument tensors" in messages[-1] and len(f.trace_log) == 2
    f(pb.randn(3, dtype="float64"))
    assert f.traces == 3


def test_grad_mode_is_guarded():
    model = mlp()
    x, _ = mlp_batch()
    f = compile(lambda x: model(x).sum())
    with pb.no_grad():
        f(x)
    out = f(x)  # grad enabled: a new trace, whose output stays differentiable
    assert f.traces == 2 and out.requires_grad
    assert f.entries[0].aot is None and f.entries[1].aot is not None


def test_the_cache_limit_runs_new_kinds_eagerly_with_one_warning():
    f = compile(lambda x: x + 1.0, cache_limit=2)
    f(pb.zeros(1))
    f(pb.zeros(2))
    with pytest.warns(RecompileWarning, match="cache limit of 2"):
        out = f(pb.zeros(3))
    np.testing.assert_array_equal(out.array, np.ones(3))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        f(pb.zeros(4))  # said once
    assert f.traces == 2


def _data_dependent(x):
    if (x.sum() > 0):  # the line the error must name
        return x * 2.0
    return x


def test_data_dependent_control_flow_names_the_users_line():
    f = compile(_data_dependent, fullgraph=True)
    with pytest.raises(DataDependentError) as info:
        f(pb.ones(3))
    message = str(info.value)
    assert "bool()" in message and "test_compile.py" in message
    assert "if (x.sum() > 0):" in message


@pytest.mark.parametrize("read", [lambda t: t.item(), lambda t: t.tolist(),
                                  lambda t: t.numpy(), lambda t: float(t.sum())])
def test_every_host_read_of_a_traced_value_is_refused(read):
    def f(x):
        read(x * 1.0)
        return x

    with pytest.raises(DataDependentError):
        compile(f, fullgraph=True)(pb.ones(1))


def test_without_fullgraph_a_data_dependent_call_runs_eagerly_with_one_warning():
    f = compile(_data_dependent)
    with pytest.warns(GraphBreakWarning, match="reads the value of a traced tensor"):
        np.testing.assert_array_equal(f(pb.ones(2)).array, [2.0, 2.0])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        np.testing.assert_array_equal(f(-pb.ones(2)).array, [-1.0, -1.0])  # eager: right path


def test_random_numbers_inside_are_refused():
    model = nn.Dropout(0.5)
    with pytest.raises(TraceError, match="random numbers"):
        compile(model, fullgraph=True)(pb.ones(8))


def test_an_in_place_write_the_tracer_cannot_see_is_an_error_not_a_stale_value():
    def f(x):
        y = x * 2.0
        y.array[0] = 5.0  # behind pullback's back, but the version counter tells
        y._version[0] += 1
        return y + 1.0

    with pytest.raises(TraceError, match="modified in place"):
        compile(f, fullgraph=True)(pb.ones(2))


@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_a_compiled_module_trains_in_an_eager_loop(dtype):
    """compile(model), with the loss and backward outside: AOT's forward/backward partition."""
    import pullback.optim as optim

    eager_model, compiled_model = _twins(mlp, dtype)
    compiled = compile(compiled_model, fullgraph=True)
    opts = [optim.Adam(m.parameters(), lr=1e-2) for m in (eager_model, compiled_model)]
    rtol = 1e-12 if dtype == "float64" else 1e-5
    for i in range(6):
        x, y = mlp_batch(dtype, seed=i)
        losses = []
        for forward, opt in ((eager_model, opts[0]), (compiled, opts[1])):
            loss = nn.functional.cross_entropy(forward(x), y)
            opt.zero_grad()
            loss.backward()
            opt.step()
            losses.append(loss.item())
        np.testing.assert_allclose(losses[1], losses[0], rtol=rtol)
    assert all(e.aot is not None for e in compiled.entries)
    for p, q in zip(eager_model.parameters(), compiled_model.parameters()):
        np.testing.assert_allclose(q.array, p.array, rtol=rtol, atol=rtol)


def test_a_compiled_forward_accumulates_gradients_and_into_inputs_too():
    model = mlp("float64")
    x = pb.randn(4, 6, dtype="float64", requires_grad=True)
    compiled = compile(model)
    reference = model(x).square().sum()
    reference.backward()
    expected_x, expected_w = x.grad.array.copy(), model[0].weight.grad.array.copy()
    for p in model.parameters():
        p.grad = None
    x.grad = None
    compiled(x)  # the traced call
    for _ in range(2):
        compiled(x).square().sum().backward()
    np.testing.assert_allclose(x.grad.array, 2 * expected_x, rtol=1e-12)
    np.testing.assert_allclose(model[0].weight.grad.array, 2 * expected_w, rtol=1e-12)


def test_a_compiled_forward_refuses_a_second_backward_and_stale_weights():
    from pullback.errors import AutogradError

    model = mlp("float64")
    compiled = compile(model)
    x, _ = mlp_batch("float64")
    compiled(x)
    compiled(x)
    loss = compiled(x).sum()
    loss.backward()
    with pytest.raises(AutogradError, match="second time"):
        loss.backward()
    loss = compiled(x).sum()
    with pb.no_grad():
        model[0].weight.mul_(2.0)  # changed between forward and backward
    with pytest.raises(AutogradError, match="modified in place"):
        loss.backward()


def test_a_module_compiles_and_keeps_reading_its_current_parameters():
    model = mlp()
    compiled = compile(model)
    x, _ = mlp_batch()
    with pb.no_grad():
        compiled(x)
        for p in model.parameters():
            p.array *= 0.5  # a change made outside: read at the next call
        # the fused loops' tanh and GELU are the C library's: within an ulp or two of NumPy's
        np.testing.assert_allclose(compiled(x).array, model(x).array, rtol=2e-6, atol=1e-7)


def test_a_compiled_module_still_answers_for_its_module():
    model = mlp()
    compiled = compile(model)
    assert list(compiled.parameters()) == list(model.parameters())
    compiled.eval()
    assert not model.training
    with pytest.raises(AttributeError):
        compiled.no_such_attribute  # noqa: B018
