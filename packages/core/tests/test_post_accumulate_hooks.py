"""register_post_accumulate_grad_hook: fires once per backward with the whole gradient in
.grad, as soon as the leaf's last contribution arrives (before the rest of the graph is done),
as PyTorch's hook of this name."""

from __future__ import annotations

import numpy as np
import pytest

import pullback as pb
from pullback.errors import AutogradError


def test_fires_when_the_leaf_is_done_not_at_the_end():
    w1 = pb.randn(3, 4, requires_grad=True)
    w2 = pb.randn(4, 2, requires_grad=True)
    seen = []
    # w2 is used last in forward, so its gradient is complete before w1's is even computed.
    w2.register_post_accumulate_grad_hook(lambda t: seen.append(("w2", w1.grad is None)))
    w1.register_post_accumulate_grad_hook(lambda t: seen.append(("w1", t.grad is not None)))
    x = pb.randn(5, 3)
    ((x @ w1).tanh() @ w2).sum().backward()
    assert seen == [("w2", True), ("w1", True)]


def test_a_shared_leaf_fires_once_with_the_summed_gradient_like_torch():
    torch = pytest.importorskip("torch")
    values = np.random.default_rng(0).normal(size=(3,))
    for lib in (pb, torch):
        w = lib.tensor(values, requires_grad=True)
        calls = []
        w.register_post_accumulate_grad_hook(lambda t, calls=calls: calls.append(t.grad.numpy().copy()))
        ((w * w).sum() + (w.exp() * 2).sum()).backward()
        if lib is pb:
            ours = calls
        else:
            theirs = calls
    assert len(ours) == len(theirs) == 1
    np.testing.assert_allclose(ours[0], theirs[0], rtol=1e-12)


def test_accumulates_across_backwards_and_fires_each_time():
    w = pb.tensor([1.0, 2.0], requires_grad=True)
    grads = []
    w.register_post_accumulate_grad_hook(lambda t: grads.append(t.grad.numpy().copy()))
    y = (w * w).sum()
    y.backward(retain_graph=True)
    y.backward()
    np.testing.assert_allclose(grads, [[2.0, 4.0], [4.0, 8.0]])


def test_pre_hooks_still_transform_the_gradient_first():
    w = pb.tensor([1.0, 2.0], requires_grad=True)
    w.register_hook(lambda g: g * 10.0)
    seen = []
    w.register_post_accumulate_grad_hook(lambda t: seen.append(t.grad.numpy().copy()))
    (w * 3.0).sum().backward()
    np.testing.assert_allclose(seen, [[30.0, 30.0]])
    np.testing.assert_allclose(w.grad.numpy(), [30.0, 30.0])


def test_autograd_grad_does_not_fire_and_remove_works():
    w = pb.tensor([1.0], requires_grad=True)
    calls = []
    handle = w.register_post_accumulate_grad_hook(lambda t: calls.append(1))
    pb.autograd.grad((w * 2).sum(), [w])
    assert calls == []
    handle.remove()
    (w * 2).sum().backward()
    assert calls == [] and w.grad.item() == 2.0


def test_only_leaves_that_require_grad():
    with pytest.raises(AutogradError, match="leaf"):
        (pb.ones(2, requires_grad=True) * 2).register_post_accumulate_grad_hook(lambda t: None)
    with pytest.raises(AutogradError, match="require grad"):
        pb.ones(2).register_post_accumulate_grad_hook(lambda t: None)


def test_queued_callbacks_run_once_backward_has_finished():
    w1 = pb.randn(3, 4, requires_grad=True)
    w2 = pb.randn(4, 2, requires_grad=True)
    events = []

    def on_w2(t):
        events.append("w2 done")
        pb.autograd.queue_callback(lambda: events.append(("end", w1.grad is not None)))

    w2.register_post_accumulate_grad_hook(on_w2)
    ((pb.randn(5, 3) @ w1).relu() @ w2).sum().backward()
    assert events == ["w2 done", ("end", True)]
    with pytest.raises(AutogradError, match="while a backward is running"):
        pb.autograd.queue_callback(lambda: None)


def test_a_failing_backward_leaves_no_queue_behind():
    x = pb.tensor([1.0], requires_grad=True)
    y = x * 2
    y.backward(retain_graph=False)
    with pytest.raises(AutogradError):
        y.backward()  # the graph is freed
    with pytest.raises(AutogradError, match="while a backward is running"):
        pb.autograd.queue_callback(lambda: None)
