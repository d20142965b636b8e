"""nn's C log-softmax and softmax cross-entropy kernels (rows.c, float32 and float64): against
PyTorch through the ops and directly, on wide rows (a language model's 10,000 words), rows with
NaN and infinities, subnormal exponentials, targets the kernels must survive, and the inputs
they leave to NumPy."""

from __future__ import annotations

import numpy as np
import pytest

import pullback
import pullback.nn.functional as F
from pullback import _cpu_parallel
from pullback.nn._ops import _native

from nn_helpers import assert_close

torch = pytest.importorskip("torch", reason="PyTorch is the numerical oracle of these tests")

DTYPES = ["float32", "float64"]
# (rows, cols): a vector remainder, a vocabulary-wide row, one column, a 3-d batch
SHAPES = [(3, 1031), (40, 10000), (2048, 1), (4, 6, 300)]


@pytest.fixture(scope="module")
def rows():
    if _native._function("log_softmax_f64", 2, 1) is None:
        pytest.skip(f"native kernels unavailable here: {pullback.native.status().get('nn_rows')}")


def _pair(a):
    return pullback.tensor(a, requires_grad=True), torch.tensor(a, requires_grad=True)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", SHAPES, ids=str)
def test_log_softmax_through_the_op_matches_torch(rows, dtype, shape):
    rng = np.random.default_rng(0)
    x = (rng.standard_normal(shape) * 4 + 30).astype(dtype)  # an offset the max must remove
    assert _native.log_softmax(x, axis=-1) is not NotImplemented
    ox, tx = _pair(x)
    out, t_out = F.log_softmax(ox, dim=-1), torch.log_softmax(tx, -1)
    assert_close(out, t_out, dtype, "forward")
    g = rng.standard_normal(shape).astype(dtype)
    out.backward(pullback.tensor(g))
    t_out.backward(torch.tensor(g))
    assert_close(ox.grad, tx.grad, dtype, "grad", scale=10 if dtype == "float32" else 1)


def _special_rows(dtype):
    x = np.random.default_rng(1).standard_normal((9, 1100)).astype(dtype)
    x[0, 5] = np.nan
    x[1, 7] = np.inf
    x[2, :] = -np.inf
    x[3, ::3] = -np.inf
    x[4, :] = -np.inf
    x[4, 9] = 2.0  # one finite entry: log-probability 0
    x[5, 0], x[5, 1] = 1e38 if dtype == "float32" else 1e300, -1e38 if dtype == "float32" else -1e300
    x[6, :] = np.nan
    x[7, 3] = -np.inf
    x[7, 4] = np.inf
    return x


@pytest.mark.parametrize("dtype", DTYPES)
def test_nan_and_infinities_give_torchs_values(rows, dtype):
    x = _special_rows(dtype)
    ours = _native.log_softmax(x, axis=-1)
    theirs = torch.log_softmax(torch.tensor(x), -1).numpy()
    np.testing.assert_array_equal(np.isnan(ours), np.isnan(theirs))
    np.testing.assert_allclose(ours, theirs, rtol=1e-6, atol=1e-6)  # -inf entries equal too
    g = np.random.default_rng(2).standard_normal(x.shape).astype(dtype)
    tx = torch.tensor(x, requires_grad=True)
    torch.log_softmax(tx, -1).backward(torch.tensor(g))
    gx = _native.log_softmax_backward(g, ours, axis=-1)
    np.testing.assert_array_equal(np.isnan(gx), np.isnan(tx.grad.numpy()))
    np.testing.assert_allclose(gx, tx.grad.numpy(), rtol=1e-5, atol=1e-5)


def test_float64_exponentials_are_within_an_ulp_down_to_subnormals(rows):
    """log_softmax_backward with g = (1, 0, 0, ...) in each row returns -exp(y) off the first
    column: the float64 exp of rows.c against NumPy's over its whole range (overflow to inf
    above 709.78, subnormals below -708, 0 below -745.2)."""
    y = np.concatenate([np.linspace(-760, 720, 20_001), [-np.inf, np.inf, np.nan, 0.0, -0.0]])
    y = np.concatenate([[0.0], y]).reshape(1, -1)
    g = np.zeros_like(y)
    g[0, 0] = 1.0
    got = -_native.log_softmax_backward(g, y, axis=-1)[0, 1:]
    with np.errstate(over="ignore"):
        want = np.exp(y[0, 1:])
    normal = np.abs(want) >= np.finfo(np.float64).tiny
    np.testing.assert_allclose(got[normal], want[normal], rtol=4e-16, atol=0)
    np.testing.assert_allclose(got[~normal], want[~normal], rtol=0, atol=1e-323)
    np.testing.assert_array_equal(np.isinf(got), np.isinf(want))
    np.testing.assert_array_equal(np.isnan(got), np.isnan(want))


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_cross_entropy_through_the_op_matches_torch(rows, dtype, reduction):
    rng = np.random.default_rng(3)
    x = (rng.standard_normal((64, 5000)) * 3 - 20).astype(dtype)
    target = rng.integers(0, 5000, 64)
    target[::7] = -100
    assert _native.cross_entropy(x, target, ignore_index=-100) is not NotImplemented
    ox, tx = _pair(x)
    loss = F.cross_entropy(ox, pullback.tensor(target), reduction=reduction)
    t_loss = torch.nn.functional.cross_entropy(tx, torch.tensor(target), reduction=reduction)
    assert_close(loss.detach(), t_loss.detach(), dtype, "loss")
    g = rng.standard_normal(tuple(t_loss.shape)).astype(dtype)
    loss.backward(pullback.tensor(g))
    t_loss.backward(torch.tensor(g))
    assert_close(ox.grad, tx.grad, dtype, "grad")
    assert not ox.grad.numpy()[::7].any()  # ignored rows


@pytest.mark.parametrize("dtype", DTYPES)
def test_cross_entropy_rows_with_nan_and_infinities_match_torch(rows, dtype):
    x = _special_rows(dtype)
    target = np.arange(len(x)) * 3
    target[4] = 9  # the one finite entry: loss 0
    ours, (stats,) = _native.cross_entropy(x, target, ignore_index=-100)
    tx = torch.tensor(x, requires_grad=True)
    theirs = torch.nn.functional.cross_entropy(tx, torch.tensor(target), reduction="none")
    np.testing.assert_array_equal(np.isnan(ours), np.isnan(theirs.detach().numpy()))
    np.testing.assert_allclose(ours, theirs.detach().numpy(), rtol=1e-6, atol=1e-6)
    g = np.ones(len(x), dtype=dtype)
    theirs.backward(torch.tensor(g))
    gx = _native.cross_entropy_backward(g, x, target, stats, ignore_index=-100)
    np.testing.assert_array_equal(np.isnan(gx), np.isnan(tx.grad.numpy()))
    np.testing.assert_allclose(gx, tx.grad.numpy(), rtol=1e-5, atol=1e-6)


def test_targets_out_of_range_give_nan_losses_without_a_one_hot(rows):
    """The functional layer refuses such targets (IndexOutOfRangeError); the kernels, called
    directly, read and write inside their rows only."""
    x = np.zeros((4, 1000), dtype=np.float32)
    target = np.array([-1, 1000, 2 ** 62, 5])
    loss, (stats,) = _native.cross_entropy(x, target, ignore_index=-100)
    assert np.isnan(loss[:3]).all() and np.isclose(loss[3], np.log(1000))
    gx = _native.cross_entropy_backward(np.ones(4, np.float32), x, target, stats,
                                        ignore_index=-100)
    np.testing.assert_allclose(gx[:3], 1e-3, rtol=1e-6)
    assert np.isclose(gx[3, 5], 1e-3 - 1) and np.isclose(np.delete(gx[3], 5), 1e-3).all()
    with pytest.raises(pullback.errors.IndexOutOfRangeError, match="1000 is out of range"):
        F.cross_entropy(pullback.tensor(x[:1]), pullback.tensor(target[1:2]))


def test_inputs_not_covered_return_not_implemented(rows):
    x = np.ones((64, 64), dtype=np.float32)
    t = np.zeros(64, dtype=np.int64)
    assert _native.log_softmax(x, axis=0) is NotImplemented
    assert _native.log_softmax(x.astype(np.float16), axis=-1) is NotImplemented
    assert _native.log_softmax(x[:8, :8].copy(), axis=-1) is NotImplemented  # small: NumPy's
    assert _native.log_softmax_backward(x, x.astype(np.float64), axis=-1) is NotImplemented
    assert _native.log_softmax_backward(x[:, :32], x, axis=-1) is NotImplemented
    assert _native.cross_entropy(x, t.astype(np.float32), ignore_index=-100) is NotImplemented
    assert _native.cross_entropy(x, t[:10], ignore_index=-100) is NotImplemented
    assert _native.cross_entropy(x[None], t, ignore_index=-100) is NotImplemented
    assert _native.cross_entropy(x, t, ignore_index=2 ** 70) is NotImplemented
    big = np.full(64, 2 ** 63, dtype=np.uint64)  # would wrap to negative int64
    assert _native.cross_entropy(x, big, ignore_index=-100) is NotImplemented
    np.testing.assert_array_equal(_native.log_softmax(x[:, ::-1], axis=-1),  # copied first
                                  _native.log_softmax(x[:, ::-1].copy(), axis=-1))


def test_threaded_and_single_thread_kernels_agree_exactly(rows):
    rng = np.random.default_rng(4)
    x = rng.standard_normal((2000, 700)).astype(np.float32)
    target = rng.integers(0, 700, 2000)
    before = _cpu_parallel.get_num_threads()
    results = []
    try:
        for threads in (2, 1):
            _cpu_parallel.set_num_threads(threads)
            y = _native.log_softmax(x, axis=-1)
            loss, (stats,) = _native.cross_entropy(x, target, ignore_index=-100)
            results.append((y, _native.log_softmax_backward(x, y, axis=-1), loss, stats,
                            _native.cross_entropy_backward(loss, x, target, stats,
                                                           ignore_index=-100)))
    finally:
        _cpu_parallel.set_num_threads(before)
    for threaded, single in zip(*results):
        np.testing.assert_array_equal(threaded, single)
