"""2-d convolutions as one GEMM per image (``_native_conv``, MKL the GEMM provider) against
PyTorch: forward, input gradient and weight gradient over strides, paddings (asymmetric too),
dilations, odd sizes and batches of one, on one thread and on two; and what they leave to the
batched im2col kernel."""

from __future__ import annotations

import numpy as np
import pytest

import pullback as pb
import pullback.nn.functional as F
from pullback import _gemm, native
from pullback.errors import ShapeError
from pullback.nn._ops import _native_conv

torch = pytest.importorskip("torch")

pytestmark = pytest.mark.skipif(
    _gemm.provider() != "mkl" or not native.enabled(),
    reason="the per-image kernels need MKL as the GEMM provider and native kernels")

# (batch, channels in, size (h, w), channels out, kernel, stride, padding, dilation); every
# array of 1,024 elements or more (smaller ones keep the NumPy kernels)
GEOMETRIES = [
    (4, 3, (17, 19), 5, (3, 3), (1, 1), ((0, 0), (0, 0)), (1, 1)),
    (1, 8, (12, 12), 16, (3, 3), (1, 1), ((1, 1), (1, 1)), (1, 1)),  # batch-1 inference
    (3, 4, (20, 15), 6, (5, 3), (2, 1), ((2, 1), (0, 3)), (1, 1)),  # asymmetric padding
    (2, 6, (31, 31), 8, (3, 3), (2, 3), ((1, 1), (2, 2)), (2, 1)),  # dilation
    (5, 2, (32, 32), 3, (1, 1), (1, 1), ((0, 0), (0, 0)), (1, 1)),
]


def _case(n, c, hw, o, kernel, seed=0):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((n, c) + hw).astype(np.float32)
    w = rng.standard_normal((o, c) + kernel).astype(np.float32)
    return x, w


def _torch_conv(x, w, stride, padding, dilation):
    """PyTorch's convolution with pullback's ((top, bottom), (left, right)) padding, and its
    input and weight gradients for the output gradient g (returned as a function)."""
    tx = torch.from_numpy(x).requires_grad_()
    tw = torch.from_numpy(w).requires_grad_()
    (top, bottom), (left, right) = padding
    padded = torch.nn.functional.pad(tx, (left, right, top, bottom))
    y = torch.nn.functional.conv2d(padded, tw, stride=stride, dilation=dilation)

    def grads(g):
        gx, gw = torch.autograd.grad(y, (tx, tw), torch.from_numpy(g), retain_graph=True)
        return gx.numpy(), gw.numpy()

    return y.detach().numpy(), grads


def _assert_close(got, expected):
    scale = max(float(np.abs(expected).max()), 1.0)
    np.testing.assert_allclose(got, expected, rtol=0, atol=2e-5 * scale)


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("geometry", GEOMETRIES, ids=str)
def test_per_image_kernels_match_pytorch(geometry, threads) -> None:
    n, c, hw, o, kernel, stride, padding, dilation = geometry
    x, w = _case(n, c, hw, o, kernel)
    expected, grads = _torch_conv(x, w, stride, padding, dilation)
    before = pb.get_num_threads()
    pb.set_num_threads(threads)
    try:
        y = _native_conv.conv2d(x, w, None, stride, padding, dilation, 1)
        assert y is not NotImplemented and y.shape == expected.shape
        _assert_close(y, expected)
        g = np.random.default_rng(1).standard_normal(y.shape).astype(np.float32)
        gx, gw = grads(g)
        dx = _native_conv.conv2d_input_grad(g, w, x.shape, stride, padding, dilation, 1)
        dw = _native_conv.conv2d_weight_grad(x, g, w.shape, stride, padding, dilation, 1)
        assert dx is not NotImplemented and dw is not NotImplemented
        _assert_close(dx, gx)
        _assert_close(dw, gw)
    finally:
        pb.set_num_threads(before)


def test_the_conv_ops_run_them_with_a_bias_and_match_pytorch() -> None:
    """F.conv2d forward and backward (bias included) through the per-image kernels."""
    x0, w0 = _case(6, 8, (14, 14), 16, (3, 3), seed=2)
    b0 = np.random.default_rng(3).standard_normal(16).astype(np.float32)
    x, w, b = (pb.tensor(a, requires_grad=True) for a in (x0, w0, b0))
    y = F.conv2d(x, w, b, padding=1)
    (y * y).sum().backward()
    tx, tw, tb = (torch.from_numpy(a).requires_grad_() for a in (x0, w0, b0))
    ty = torch.nn.functional.conv2d(tx, tw, tb, padding=1)
    (ty * ty).sum().backward()
    _assert_close(y.detach().numpy(), ty.detach().numpy())
    for ours, theirs in ((x, tx), (w, tw), (b, tb)):
        _assert_close(ours.grad.numpy(), theirs.grad.numpy())


def test_what_they_do_not_cover_goes_to_the_batched_kernel() -> None:
    x, w = _case(2, 4, (16, 16), 4, (3, 3))
    geometry = dict(stride=(1, 1), padding=((0, 0), (0, 0)), dilation=(1, 1))
    assert _native_conv.conv2d(x, w, None, groups=2, **geometry) is NotImplemented
    assert _native_conv.conv2d(x.astype(np.float64), w.astype(np.float64), None, groups=1,
                               **geometry) is NotImplemented
    assert _native_conv.conv2d(x, w[:, :3], None, groups=1, **geometry) is NotImplemented
    with pytest.raises(ShapeError):  # the op's own check still names the mismatch
        F.conv2d(pb.tensor(x), pb.tensor(w[:, :3]))
