"""The fused C attention kernels (``_csrc/attention.c``) behind nn.scaled_dot_product_attention
and nn.scaled_dot_product_attention_backward, against PyTorch's scaled_dot_product_attention:
shapes (batch axes 0 to 2, odd and unequal lengths, head dims 1 to 64), causal or not, float32
and float64, strided views of a packed QKV array; finite differences in float64; and the
compiled backward, which must run the same fused op as eager, bit for bit."""

from __future__ import annotations

import numpy as np
import pytest

import pullback
import pullback.nn.functional as F
from pullback.nn._ops import _native, attention

from nn_helpers import gradchecks

torch = pytest.importorskip("torch", reason="PyTorch is the numerical oracle of these tests")

TOL = {"float32": {"rtol": 2e-5, "atol": 2e-6}, "float64": {"rtol": 1e-12, "atol": 1e-12}}
# (q shape, k shape, v shape): batch axes 0 to 2, S != L, odd lengths, head dims 1, 7, 32, 64
SHAPES = [
    ((9, 7), (9, 7), (9, 7)),
    ((3, 17, 1), (3, 11, 1), (3, 11, 5)),
    ((2, 3, 33, 32), (2, 3, 40, 32), (2, 3, 40, 32)),
    ((1, 2, 64, 64), (1, 2, 64, 64), (1, 2, 64, 7)),
    ((2, 1, 13, 8), (1, 3, 13, 8), (2, 3, 13, 8)),  # batch axes broadcast
]


@pytest.fixture(scope="module")
def kernels():
    if _native._function("sdpa_forward_f32", 6, 21, source="attention") is None:
        pytest.skip(f"native kernels unavailable: {pullback.native.status().get('nn_attention')}")


def _close(ours, theirs, dtype, what):
    tol = TOL[dtype]
    np.testing.assert_allclose(ours, theirs, rtol=tol["rtol"], atol=tol["atol"], err_msg=what)


def _torch_reference(q, k, v, g, causal):
    tq, tk, tv = (torch.tensor(a, requires_grad=True) for a in (q, k, v))
    out = torch.nn.functional.scaled_dot_product_attention(tq, tk, tv, is_causal=causal)
    out.backward(torch.tensor(g))
    return out.detach().numpy(), tq.grad.numpy(), tk.grad.numpy(), tv.grad.numpy()


def _through_the_op(q, k, v, g, causal):
    oq, ok, ov = (pullback.tensor(a, requires_grad=True) for a in (q, k, v))
    out = F.scaled_dot_product_attention(oq, ok, ov, is_causal=causal)
    out.backward(pullback.tensor(g))
    return out.detach(), oq.grad.numpy(), ok.grad.numpy(), ov.grad.numpy()


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("shapes", SHAPES, ids=lambda s: "x".join(map(str, s[0])))
def test_forward_and_backward_match_torch(kernels, shapes, causal, dtype):
    rng = np.random.default_rng(0)
    q, k, v = (rng.standard_normal(s).astype(dtype) for s in shapes)
    batch = np.broadcast_shapes(q.shape[:-2], k.shape[:-2])
    g = rng.standard_normal(batch + (q.shape[-2], v.shape[-1])).astype(dtype)
    out, gq, gk, gv = _through_the_op(q, k, v, g, causal)
    t_out, t_gq, t_gk, t_gv = _torch_reference(q, k, v, g, causal)
    _close(out.numpy(), t_out, dtype, "forward")
    for ours, theirs, name in ((gq, t_gq, "q"), (gk, t_gk, "k"), (gv, t_gv, "v")):
        _close(ours, theirs, dtype, f"gradient of {name}")


def _packed_heads(rng, batch, length, heads, dim, dtype="float32"):
    """q, k, v as the GPT makes them: head views of one (B, T, 3 * H * D) projection."""
    qkv = rng.standard_normal((batch, length, 3 * heads * dim)).astype(dtype)
    width = heads * dim
    return qkv, [qkv[..., i * width:(i + 1) * width].reshape(batch, length, heads, dim)
                 .transpose(0, 2, 1, 3) for i in range(3)]


@pytest.mark.parametrize("causal", [False, True])
def test_strided_heads_of_a_packed_projection_are_read_in_place(kernels, causal):
    rng = np.random.default_rng(1)
    qkv, (q, k, v) = _packed_heads(rng, 3, 19, 4, 8)
    out, (weights,) = attention._sdpa_kernel(np)(q, k, v, None, None, scale=0.3, causal=causal)
    g = rng.standard_normal(out.shape).astype(np.float32)
    gq, gk, gv = attention._sdpa_backward_kernel(np)(g, q, k, v, weights, scale=0.3,
                                                     causal=causal)
    tq, tk, tv = (torch.tensor(np.ascontiguousarray(a), requires_grad=True) for a in (q, k, v))
    t_out = torch.nn.functional.scaled_dot_product_attention(tq, tk, tv, is_causal=causal,
                                                             scale=0.3)
    t_out.backward(torch.tensor(g))
    _close(out, t_out.detach().numpy(), "float32", "forward")
    for ours, theirs, name in ((gq, tq.grad, "q"), (gk, tk.grad, "k"), (gv, tv.grad, "v")):
        _close(ours, theirs.numpy(), "float32", f"gradient of {name}")
    # the results are (B, H, T, D) views of (B, T, H, D) arrays: merging the heads is a view
    for result in (out, gq, gk, gv):
        merged = result.transpose(0, 2, 1, 3).reshape(3, 19, 32)
        assert np.shares_memory(merged, result)


def test_merging_the_heads_of_the_output_is_a_view_through_tensors(kernels):
    rng = np.random.default_rng(2)
    _, (q, k, v) = _packed_heads(rng, 2, 16, 4, 8)
    y = F.scaled_dot_product_attention(*(pullback.tensor(a) for a in (q, k, v)), is_causal=True)
    merged = y.transpose(1, 2).reshape(2, 16, 32)
    assert np.shares_memory(merged.array, y.array)


def _laid_out(a, layout):
    """``a`` with the same values in another memory layout: ``contiguous``; ``transposed``
    (its last two axes stored the other way round: unit stride along the rows); or
    ``strided`` (every other element of a larger array: no unit stride)."""
    if layout == "contiguous":
        return np.ascontiguousarray(a)
    if layout == "transposed":
        return np.ascontiguousarray(np.swapaxes(a, -1, -2)).swapaxes(-1, -2)
    big = np.zeros(a.shape[:-2] + (2 * a.shape[-2], 2 * a.shape[-1]), a.dtype)
    big[..., ::2, ::2] = a
    return big[..., ::2, ::2]


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("layout", ["transposed", "strided"])
def test_every_layout_of_the_inputs_gives_the_same_bits(kernels, layout, dtype):
    """The kernels copy q, k, v and g into local buffers: rows of contiguous elements as vector
    copies, transposes by tiles (whole 16 x 16 tiles and the ragged ones of 40 keys and 33
    queries), anything else element by element. Each layout's results are those of contiguous
    inputs, bit for bit, forward and backward, causal or not."""
    rng = np.random.default_rng(9)
    arrays = [rng.standard_normal(s).astype(dtype)
              for s in ((2, 3, 33, 32), (2, 3, 40, 32), (2, 3, 40, 32), (2, 3, 33, 32))]
    forward, backward = attention._sdpa_kernel(np), attention._sdpa_backward_kernel(np)
    for causal in (False, True):
        results = []
        for how in ("contiguous", layout):
            q, k, v, g = (_laid_out(a, how) for a in arrays)
            assert how == "contiguous" or not q.flags.c_contiguous
            out, (weights,) = forward(q, k, v, None, None, scale=0.3, causal=causal)
            results.append((out, weights, *backward(g, q, k, v, weights, scale=0.3,
                                                    causal=causal)))
        for ours, want in zip(*results):
            np.testing.assert_array_equal(ours, want)


@pytest.mark.parametrize("causal", [False, True])
def test_backward_op_matches_its_numpy_composition(kernels, causal):
    """The op's two kernels (fused C, and the composition it falls back to) agree."""
    rng = np.random.default_rng(3)
    _, (q, k, v) = _packed_heads(rng, 2, 23, 3, 7, "float64")
    g = rng.standard_normal((2, 3, 23, 7))
    forward = attention._sdpa_kernel(np)
    _, (weights,) = forward(q, k, v, None, None, scale=0.5, causal=causal)
    backward = attention._sdpa_backward_kernel(np)
    fused = backward(g, q, k, v, weights, scale=0.5, causal=causal)
    composed = backward.__wrapped__(g, q, k, v, weights, scale=0.5, causal=causal)
    for ours, theirs, name in zip(fused, composed, "qkv"):
        _close(ours, theirs, "float64", f"gradient of {name}")


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("causal", [False, True])
def test_backward_writes_into_the_column_blocks_of_one_packed_gradient(kernels, causal, dtype):
    """``out``: the three gradients go into views of one (B, T, 3 * H * D) buffer (the packed QKV
    gradient), the values of the unpacked call with -0.0 written as 0.0, from the fused kernel
    and from the composition alike."""
    rng = np.random.default_rng(7)
    _, (q, k, v) = _packed_heads(rng, 2, 21, 3, 8, dtype)
    g = rng.standard_normal((2, 3, 21, 8)).astype(dtype)
    _, (weights,) = attention._sdpa_kernel(np)(q, k, v, None, None, scale=0.4, causal=causal)
    backward = attention._sdpa_backward_kernel(np)
    unpacked = backward(g, q, k, v, weights, scale=0.4, causal=causal)
    for kernel in (backward, backward.__wrapped__):
        packed = np.full((2, 21, 72), np.nan, dtype)
        views = tuple(packed[..., s:s + 24].reshape(2, 21, 3, 8).transpose(0, 2, 1, 3)
                      for s in (48, 0, 24))  # any order of the blocks
        got = kernel(g, q, k, v, weights, scale=0.4, causal=causal, out=views)
        assert all(a is b for a, b in zip(got, views))
        for start, want in zip((48, 0, 24), unpacked if kernel is backward else
                               backward.__wrapped__(g, q, k, v, weights, scale=0.4,
                                                    causal=causal)):
            block = packed[..., start:start + 24].reshape(2, 21, 3, 8).transpose(0, 2, 1, 3)
            np.testing.assert_array_equal(block, want + 0.0)
            assert not np.signbit(block[block == 0]).any()


def test_backward_into_arrays_it_cannot_write_says_not_implemented(kernels):
    rng = np.random.default_rng(8)
    _, (q, k, v) = _packed_heads(rng, 2, 9, 2, 4)
    g = rng.standard_normal((2, 2, 9, 4)).astype(np.float32)
    _, (weights,) = attention._sdpa_kernel(np)(q, k, v, None, None, scale=0.5, causal=True)
    fresh = [np.empty((2, 2, 9, 4), np.float32) for _ in range(3)]
    shared = np.empty((2, 2, 9, 4), np.float32)
    for out in [(fresh[0], fresh[1]), (fresh[0], fresh[1], fresh[2].astype(np.float64)),
                (fresh[0], fresh[1], np.empty((2, 2, 9, 5), np.float32)),
                (fresh[0], fresh[1], np.empty((2, 2, 9, 8), np.float32)[..., ::2]),
                (shared, fresh[1], shared)]:
        assert attention._native_attention.attention_backward(
            g, q, k, v, weights, scale=0.5, causal=True, out=out) is NotImplemented


@pytest.mark.parametrize("causal", [False, True])
def test_gradcheck_float64(kernels, causal):
    gradcheck, _ = gradchecks()
    rng = np.random.default_rng(4)
    q, k, v = (pullback.tensor(rng.standard_normal(s), requires_grad=True)
               for s in ((2, 5, 3), (2, 6, 3), (2, 6, 4)))
    assert gradcheck(lambda q, k, v: F.scaled_dot_product_attention(q, k, v, is_causal=causal),
                     (q, k, v))


def test_uncovered_inputs_keep_the_composition(kernels):
    """Three batch axes and a mask fall back to the op composition, which still matches."""
    rng = np.random.default_rng(5)
    q, k, v = (rng.standard_normal((2, 2, 2, 5, 4)) for _ in range(3))
    assert attention._native_attention.attention(q, k, v, scale=0.5, causal=True) \
        is NotImplemented
    g = rng.standard_normal(q.shape)
    out, gq, gk, gv = _through_the_op(q, k, v, g, True)
    for ours, theirs, name in zip((out.numpy(), gq, gk, gv), _torch_reference(q, k, v, g, True),
                                  ("forward", "q", "k", "v")):
        _close(ours, theirs, "float64", name)


def test_the_compiled_backward_runs_the_fused_op_and_matches_eager_bitwise(kernels):
    compiler = pytest.importorskip("pullback.compiler")
    rng = np.random.default_rng(6)
    qkv = pullback.tensor(rng.standard_normal((2, 16, 3 * 32)).astype(np.float32),
                          requires_grad=True)
    g = pullback.tensor(rng.standard_normal((2, 16, 32)).astype(np.float32))

    def heads_and_backward(qkv, g):
        # no reduction after the attention: the compiler's fused loops may sum in another order
        q, k, v = (t.reshape(2, 16, 4, 8).transpose(1, 2) for t in qkv.split(32, axis=2))
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        merged = y.transpose(1, 2).reshape(2, 16, 32)
        merged.backward(g)
        return merged

    ops = [n.op for n in compiler.trace(heads_and_backward, qkv, g).nodes]
    assert "nn.scaled_dot_product_attention_backward" in ops
    assert "nn.softmax_backward" not in ops  # the composition's softmax backward is not used
    qkv.grad = None
    eager = heads_and_backward(qkv, g).detach().numpy()
    eager_grad = qkv.grad.numpy().copy()
    compiled = compiler.compile(heads_and_backward)
    for _ in range(2):  # the first call traces, the second replays
        qkv.grad = None
        np.testing.assert_array_equal(compiled(qkv, g).detach().numpy(), eager)
        np.testing.assert_array_equal(qkv.grad.numpy(), eager_grad)
