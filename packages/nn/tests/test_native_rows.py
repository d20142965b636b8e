"""nn's C kernels (softmax with attention's scale and causal mask, its backward, layer norm and
its backward, convolution's im2col and col2im) against float64 or NumPy references, their
fallbacks, and the float32 ops that use them against PyTorch."""

from __future__ import annotations

import numpy as np
import pytest

import pullback
import pullback.nn.functional as F
from pullback import _cpu_parallel
from pullback.nn._ops import _native, conv, geometry
from pullback.registry import OPS

from nn_helpers import assert_close


@pytest.fixture(scope="module")
def rows():
    if _native._function("softmax_f32", 2, 3, 1) is None:
        pytest.skip(f"native kernels unavailable here: {pullback.native.status().get('nn_rows')}")


def _softmax64(x, scale=1.0, causal=False):
    s = x.astype(np.float64) * scale
    if causal:
        s = np.where(np.tril(np.ones(s.shape[-2:], dtype=bool)), s, -np.inf)
    e = np.exp(s - s.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


# (shape): a vector remainder (1,031 columns), attention-like rows, one column, 2^19 elements
SHAPES = [(3, 1031), (2, 3, 17, 33), (4, 64, 64), (2048, 1), (128, 64, 64)]


@pytest.mark.parametrize("shape", SHAPES, ids=str)
@pytest.mark.parametrize("causal", [False, True])
def test_softmax_matches_float64(rows, shape, causal):
    x = (np.random.default_rng(0).standard_normal(shape) * 3).astype(np.float32)
    got = _native.softmax(x, axis=-1, scale=0.37, causal=causal)
    np.testing.assert_allclose(got, _softmax64(x, 0.37, causal), rtol=2e-6, atol=1e-8)
    if causal:
        assert (got[..., np.triu(np.ones(shape[-2:], dtype=bool), 1)] == 0).all()


def test_softmax_in_place_negative_scale_and_special_rows(rows):
    x = np.random.default_rng(1).standard_normal((40, 50)).astype(np.float32)
    x[1, 3] = np.nan  # a NaN makes its row NaN, as in NumPy
    x[2, :] = -np.inf
    x[2, 7] = 0.0  # one finite entry takes all the weight
    x[3, ::2] = -np.inf
    with np.errstate(invalid="ignore"):
        expected = _softmax64(np.where(np.isnan(x), 0, x), -1.5)
    ours = x.copy()
    out = _native.softmax(ours, axis=-1, scale=-1.5, out=ours)
    assert out is ours
    assert np.isnan(out[1]).all()
    keep = np.ones(40, dtype=bool)
    keep[[1, 2, 3]] = False
    np.testing.assert_allclose(out[keep], expected[keep], rtol=2e-6, atol=1e-8)
    x3 = _native.softmax(np.tile(x[[2, 3]], (16, 1)), axis=-1)  # -inf entries give 0
    assert x3[0, 7] == 1 and (np.delete(x3[0], 7) == 0).all()
    assert (x3[1, ::2] == 0).all()
    np.testing.assert_allclose(x3[1, 1::2].sum(), 1, rtol=1e-6)


def test_softmax_backward_matches_float64(rows):
    rng = np.random.default_rng(2)
    y = _softmax64(rng.standard_normal((300, 77))).astype(np.float32)
    g = rng.standard_normal((300, 77)).astype(np.float32)
    y64, g64 = y.astype(np.float64), g.astype(np.float64)
    expected = y64 * (g64 - (g64 * y64).sum(axis=-1, keepdims=True))
    np.testing.assert_allclose(_native.softmax_backward(g, y, axis=-1), expected, rtol=1e-5,
                               atol=1e-7)


def test_inputs_not_covered_return_not_implemented(rows):
    x = np.ones((64, 64), dtype=np.float32)
    assert _native.softmax(x, axis=0) is NotImplemented
    assert _native.softmax(x.astype(np.float64), axis=-1) is NotImplemented
    assert _native.softmax(x[:, ::2], axis=-1, out=x[:, ::2]) is NotImplemented  # in place
    np.testing.assert_array_equal(_native.softmax(x[:, ::2], axis=-1),  # copied, then native
                                  _native.softmax(x[:, ::2].copy(), axis=-1))
    assert _native.softmax(x[:8, :8].copy(), axis=-1) is NotImplemented  # small: NumPy's
    w = np.ones(32, dtype=np.float32)
    assert _native.layer_norm(x, w, None, normalized_ndim=1, eps=1e-5) is NotImplemented


def _layer_norm64(x, w, b, normalized_ndim, eps):
    axes = tuple(range(x.ndim - normalized_ndim, x.ndim))
    x = x.astype(np.float64)
    mean = x.mean(axis=axes, keepdims=True)
    rstd = 1 / np.sqrt(((x - mean) ** 2).mean(axis=axes, keepdims=True) + eps)
    y = (x - mean) * rstd
    if w is not None:
        y = y * w
    if b is not None:
        y = y + b
    return y, mean, rstd


LN_CASES = [((7, 300), 1, True, True), ((2048, 128), 1, True, False), ((64, 5, 6), 2, False, True),
            ((4096, 33), 1, False, False), ((8192, 128), 1, True, True),
            ((1000, 96), 1, True, True)]  # 15 blocks of 64 rows and one of 40


@pytest.mark.parametrize("shape,nd,has_w,has_b", LN_CASES, ids=str)
def test_layer_norm_forward_and_backward_match_float64(rows, shape, nd, has_w, has_b):
    rng = np.random.default_rng(3)
    x = (rng.standard_normal(shape) * 2 + 5).astype(np.float32)  # an offset, as activations have
    normalized = shape[len(shape) - nd:]
    w = rng.standard_normal(normalized).astype(np.float32) if has_w else None
    b = rng.standard_normal(normalized).astype(np.float32) if has_b else None
    y, (mean, rstd) = _native.layer_norm(x, w, b, normalized_ndim=nd, eps=1e-5)
    y64, mean64, rstd64 = _layer_norm64(x, w, b, nd, 1e-5)
    assert mean.shape == mean64.shape and rstd.shape == rstd64.shape
    np.testing.assert_allclose(y, y64, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(mean, mean64, rtol=1e-6)
    np.testing.assert_allclose(rstd, rstd64, rtol=1e-5)

    g = rng.standard_normal(shape).astype(np.float32)
    reference = OPS["nn.layer_norm_backward"].generic(np)  # the NumPy formula, in float64
    gx64, gw64, gb64 = reference(g.astype(np.float64), x.astype(np.float64),
                                 None if w is None else w.astype(np.float64), mean64, rstd64,
                                 normalized_ndim=nd)
    gx, gw, gb = _native.layer_norm_backward(g, x, w, mean, rstd, normalized_ndim=nd)
    scale = np.abs(gx64).max()
    np.testing.assert_allclose(gx, gx64, rtol=1e-4, atol=1e-5 * scale)
    rows_count = x.size // np.prod(normalized)
    np.testing.assert_allclose(gw, gw64, rtol=1e-4, atol=1e-5 * np.sqrt(rows_count))
    np.testing.assert_allclose(gb, gb64, rtol=1e-4, atol=1e-5 * np.sqrt(rows_count))
    gx_only = _native.layer_norm_backward(g, x, w, mean, rstd, normalized_ndim=nd,
                                          param_grads=False)
    assert gx_only[1] is None and gx_only[2] is None
    np.testing.assert_array_equal(gx_only[0], gx)


@pytest.mark.parametrize("shape,nd,has_w,has_b", LN_CASES, ids=str)
def test_layer_norm_backward_adds_a_residual_gradient_in_its_last_pass(rows, shape, nd, has_w,
                                                                        has_b):
    """``add=``: the C kernel returns ``add + gx`` (what a separate add of its ``gx`` gives, bit
    for bit), and so does the NumPy composition; the parameter gradients are unchanged."""
    rng = np.random.default_rng(5)
    x = rng.standard_normal(shape).astype(np.float32)
    normalized = shape[len(shape) - nd:]
    w = rng.standard_normal(normalized).astype(np.float32) if has_w else None
    _, (mean, rstd) = _native.layer_norm(x, w, None, normalized_ndim=nd, eps=1e-5)
    g, residual = (rng.standard_normal(shape).astype(np.float32) for _ in range(2))
    gx, gw, gb = _native.layer_norm_backward(g, x, w, mean, rstd, normalized_ndim=nd)
    summed = _native.layer_norm_backward(g, x, w, mean, rstd, normalized_ndim=nd, add=residual)
    np.testing.assert_array_equal(summed[0], residual + gx)
    np.testing.assert_array_equal(summed[1], gw)
    np.testing.assert_array_equal(summed[2], gb)
    composition = OPS["nn.layer_norm_backward"].generic(np).__wrapped__
    plain = composition(g, x, w, mean, rstd, normalized_ndim=nd)
    np.testing.assert_array_equal(
        composition(g, x, w, mean, rstd, normalized_ndim=nd, add=residual)[0],
        residual + plain[0])


def test_threaded_and_single_thread_row_kernels_agree_exactly(rows):
    rng = np.random.default_rng(4)
    x = rng.standard_normal((8192, 128)).astype(np.float32)
    w = rng.standard_normal(128).astype(np.float32)
    before = _cpu_parallel.get_num_threads()
    results = []
    try:
        for threads in (2, 1):
            _cpu_parallel.set_num_threads(threads)
            y, (mean, rstd) = _native.layer_norm(x, w, None, normalized_ndim=1, eps=1e-5)
            grads = _native.layer_norm_backward(x, x, w, mean, rstd, normalized_ndim=1)
            results.append((y, _native.softmax(x, axis=-1, scale=0.5, causal=True), *grads))
    finally:
        _cpu_parallel.set_num_threads(before)
    for threaded, single in zip(*results):
        np.testing.assert_array_equal(threaded, single)


# (input shape, kernel, stride, padding ((top, bottom), (left, right)), dilation)
CONV_GEOMETRIES = [
    ((64, 8, 13, 13), (3, 3), (1, 1), ((0, 0), (0, 0)), (1, 1)),
    ((8, 3, 9, 11), (3, 2), (2, 3), ((1, 2), (0, 1)), (1, 2)),
    ((30, 2, 5, 5), (3, 3), (1, 1), ((2, 2), (2, 2)), (1, 1)),
    ((16, 4, 10, 10), (2, 2), (3, 3), ((0, 0), (0, 0)), (1, 1)),  # windows skip pixels
]


@pytest.mark.parametrize("shape,kernel,stride,padding,dilation", CONV_GEOMETRIES, ids=str)
def test_im2col_and_col2im_match_the_strided_views(rows, shape, kernel, stride, padding,
                                                   dilation):
    rng = np.random.default_rng(10)
    x = rng.standard_normal(shape).astype(np.float32)
    out_hw = tuple(geometry.out_size(shape[2 + a], kernel[a], stride[a], padding[a], dilation[a])
                   for a in range(2))
    cols = _native.im2col(x, kernel, out_hw, stride, padding, dilation)
    expected = conv.windows(np, conv.pad_input(np, x, padding), kernel, stride, dilation, out_hw)
    np.testing.assert_array_equal(cols, expected)

    h = rng.standard_normal(cols.shape).astype(np.float32)
    (top, bottom), (left, right) = padding
    padded = np.zeros(shape[:2] + (shape[2] + top + bottom, shape[3] + left + right), np.float32)
    conv.add_windows(np, padded, h, stride, dilation)
    np.testing.assert_allclose(_native.col2im(h, shape[2:], stride, padding, dilation),
                               conv.crop(np, padded, padding, shape[2:]), rtol=1e-6, atol=1e-6)


torch = pytest.importorskip("torch", reason="PyTorch is the numerical oracle of the tests below")


@pytest.mark.parametrize("shape,weight,padding", [
    ((64, 1, 28, 28), (8, 1, 3, 3), 0), ((64, 8, 13, 13), (16, 8, 3, 3), 0),
    ((8, 16, 12, 12), (16, 16, 3, 3), 1), ((8, 4, 15, 15), (6, 4, 3, 3), 2)], ids=str)
def test_float32_conv2d_through_the_op_matches_torch(rows, shape, weight, padding):
    """LeNet's two layers (the widening one takes the col2im input gradient) and padded ones."""
    rng = np.random.default_rng(11)
    x, w = rng.standard_normal(shape).astype(np.float32), rng.standard_normal(weight).astype(
        np.float32) * 0.2
    b = rng.standard_normal(weight[0]).astype(np.float32)
    (ox, tx), (ow, tw), (ob, tb) = _pair(x), _pair(w), _pair(b)
    out = F.conv2d(ox, ow, ob, padding=padding)
    t_out = torch.nn.functional.conv2d(tx, tw, tb, padding=padding)
    assert_close(out, t_out, "float32", "forward")
    g = rng.standard_normal(tuple(t_out.shape)).astype(np.float32)
    out.backward(pullback.tensor(g))
    t_out.backward(torch.tensor(g))
    assert_close(ox.grad, tx.grad, "float32", "grad x")
    assert_close(ow.grad, tw.grad, "float32", "grad w", scale=10)  # sums over the batch
    assert_close(ob.grad, tb.grad, "float32", "grad b", scale=10)


def _pair(a):
    return (pullback.tensor(a, requires_grad=True),
            torch.tensor(a, requires_grad=True))


def test_float32_layer_norm_through_the_op_matches_torch(rows):
    rng = np.random.default_rng(5)
    x = (rng.standard_normal((32, 64, 128)) + 3).astype(np.float32)
    w, b = rng.standard_normal(128).astype(np.float32), rng.standard_normal(128).astype(np.float32)
    (ox, tx), (ow, tw), (ob, tb) = _pair(x), _pair(w), _pair(b)
    out = F.layer_norm(ox, (128,), ow, ob)
    t_out = torch.nn.functional.layer_norm(tx, (128,), tw, tb)
    assert_close(out, t_out, "float32", "forward")
    g = rng.standard_normal(x.shape).astype(np.float32)
    out.backward(pullback.tensor(g))
    t_out.backward(torch.tensor(g))
    assert_close(ox.grad, tx.grad, "float32", "grad x")
    assert_close(ow.grad, tw.grad, "float32", "grad w", scale=10)  # sums over 2,048 rows
    assert_close(ob.grad, tb.grad, "float32", "grad b", scale=10)


@pytest.mark.parametrize("causal", [False, True])
def test_float32_attention_through_the_op_matches_torch(rows, causal):
    rng = np.random.default_rng(6)
    q, k, v = (rng.standard_normal((8, 4, 64, 32)).astype(np.float32) for _ in range(3))
    (oq, tq), (ok, tk), (ov, tv) = _pair(q), _pair(k), _pair(v)
    out = F.scaled_dot_product_attention(oq, ok, ov, is_causal=causal)
    t_out = torch.nn.functional.scaled_dot_product_attention(tq, tk, tv, is_causal=causal)
    assert_close(out, t_out, "float32", "forward")
    g = rng.standard_normal(out.shape).astype(np.float32)
    out.backward(pullback.tensor(g))
    t_out.backward(torch.tensor(g))
    for ours, theirs, name in ((oq, tq, "q"), (ok, tk, "k"), (ov, tv, "v")):
        assert_close(ours.grad, theirs.grad, "float32", f"grad {name}")


def test_float32_softmax_through_the_op_matches_torch(rows):
    x = np.random.default_rng(7).standard_normal((256, 300)).astype(np.float32)
    ox, tx = _pair(x)
    out, t_out = F.softmax(ox, -1), torch.softmax(tx, -1)
    assert_close(out, t_out, "float32", "forward")
    g = np.random.default_rng(8).standard_normal(x.shape).astype(np.float32)
    out.backward(pullback.tensor(g))
    t_out.backward(torch.tensor(g))
    assert_close(ox.grad, tx.grad, "float32", "grad")


@pytest.mark.parametrize("cols", [4, 1031], ids=["numpy-kernel", "native-kernel"])
@pytest.mark.parametrize("dtype", ["float32", "float16"])
def test_layer_norm_of_rows_whose_squares_overflow_is_not_zeros(cols, dtype):
    # float32 rows holding 1e38 (float16: 300) overflowed the variance and came out as exact
    # zeros. PyTorch returns NaN there; pullback returns the exact value (float64 statistics),
    # compared with PyTorch in float64. A row with an inf still gives NaN, as in PyTorch.
    big = 1e38 if dtype == "float32" else 300.0
    rng = np.random.default_rng(3)
    x = rng.standard_normal((4, cols)).astype(dtype)
    x[0, 0] = big
    x[1, :2] = (big, -big)
    x[2, 1] = np.inf
    w = rng.standard_normal(cols).astype(dtype)
    if dtype == "float32" and cols > 4:
        assert _native.layer_norm(x, w, None, normalized_ndim=1, eps=1e-5) is not NotImplemented
    ours = F.layer_norm(pullback.tensor(x), (cols,), pullback.tensor(w)).numpy()
    theirs = torch.nn.functional.layer_norm(torch.tensor(x, dtype=torch.float64), (cols,),
                                            torch.tensor(w, dtype=torch.float64)).numpy()
    finite = [0, 1, 3]
    tol = 2e-6 if dtype == "float32" else 2e-3
    np.testing.assert_allclose(ours[finite].astype(np.float64), theirs[finite], rtol=tol,
                               atol=tol * np.abs(w).max())
    assert np.isnan(ours[2]).all()
