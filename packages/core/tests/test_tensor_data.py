"""``Tensor.data`` and ``pullback.device`` with PyTorch's meaning, checked against torch."""

from __future__ import annotations

import numpy as np
import pytest

import pullback as pb
from pullback.errors import AutogradError


def _torch():
    return pytest.importorskip("torch")


def test_data_is_a_detached_tensor_sharing_memory():
    w = pb.tensor([1.0, 2.0, 3.0], requires_grad=True)
    d = w.data
    assert isinstance(d, pb.Tensor) and not d.requires_grad and d.is_leaf
    assert np.shares_memory(d.array, w.array)
    d.add_(1.0)
    np.testing.assert_array_equal(w.detach().numpy(), [2.0, 3.0, 4.0])


def test_update_through_data_is_invisible_to_autograd_like_torch():
    torch = _torch()
    for lib in (pb, torch):
        w = lib.tensor([1.0, 2.0], requires_grad=True)
        y = (w * w).sum()  # saves w for backward
        w.data.mul_(10.0)  # PyTorch does not count this as an in-place change of w
        y.backward()
        if lib is pb:
            ours = w.grad.numpy()
        else:
            theirs = w.grad.numpy()
    # Both compute the gradient from the modified values (2 * w), without an error.
    np.testing.assert_array_equal(ours, theirs)


def test_detach_in_place_change_is_still_caught():
    w = pb.tensor([1.0, 2.0], requires_grad=True)
    y = (w * w).sum()
    w.detach().mul_(10.0)  # shares the version counter: backward must refuse
    with pytest.raises(AutogradError):
        y.backward()


def test_data_assignment_replaces_the_array_and_keeps_identity():
    w = pb.zeros(2, 3, requires_grad=True)
    w.data = pb.ones(4)
    assert w.shape == (4,) and w.requires_grad
    np.testing.assert_array_equal(w.detach().numpy(), np.ones(4))


def test_data_arithmetic_in_place_as_ported_sgd():
    torch = _torch()
    rng = np.random.default_rng(0)
    x0, g0 = rng.normal(size=5), rng.normal(size=5)
    p, tp = pb.tensor(x0, requires_grad=True), torch.tensor(x0, requires_grad=True)
    p.grad, tp.grad = pb.tensor(g0), torch.tensor(g0)
    p.data -= 0.1 * p.grad
    tp.data -= 0.1 * tp.grad
    p.data.copy_(p.data * 2.0)
    tp.data.copy_(tp.data * 2.0)
    np.testing.assert_allclose(p.detach().numpy(), tp.detach().numpy(), rtol=0, atol=0)


def test_data_must_be_set_to_a_tensor():
    w = pb.zeros(2)
    with pytest.raises(TypeError, match="Tensor.data must be set to a Tensor"):
        w.data = np.ones(2)


def test_device_is_callable_like_torch_device():
    assert pb.device("cpu") == pb.Device("cpu")
    assert isinstance(pb.device("cpu"), pb.Device)
    assert pb.zeros(2, device=pb.device("cpu")).device.type == "cpu"
