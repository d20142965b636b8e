"""``func.outer``, the stacked outer products vmap's matmul rule turns a batch of rank-1
products into (a per-sample weight gradient): values against NumPy's broadcast multiply (the C
loop for float32, the NumPy path otherwise), gradients by finite differences (gradcheck,
gradgradcheck), its jvp by finite differences, nested vmap against a loop, shape errors, and
that the per-sample gradient of a linear layer really takes it."""

from __future__ import annotations

import numpy as np
import pytest

import pullback as pb
from pullback.dispatch import apply
from pullback.errors import ShapeError
from pullback.func import grad, jvp, vmap
from pullback.func._outer import OUTER, _native_outer
from pullback.testing import gradcheck, gradgradcheck


@pytest.fixture
def rng() -> np.random.Generator:
    return np.random.default_rng(0)


def outer(a, c):
    return apply(OUTER, a, c)


def reference(a, c):
    return a[..., :, None] * c[..., None, :]


@pytest.mark.parametrize("shape_a,shape_c", [((7,), (5,)), ((4, 33), (4, 65)),
                                             ((2, 3, 40), (2, 3, 50)), ((64, 256), (64, 784)),
                                             ((3, 0), (3, 4)), ((0, 5), (0, 6))])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_values_match_numpy(rng, shape_a, shape_c, dtype) -> None:
    a = rng.standard_normal(shape_a).astype(dtype)
    c = rng.standard_normal(shape_c).astype(dtype)
    out = outer(pb.tensor(a), pb.tensor(c)).numpy()
    assert out.dtype == np.dtype(dtype)
    np.testing.assert_array_equal(out, reference(a, c))  # one product per entry: exact


def test_c_loop_is_exact_on_special_and_strided_values(rng) -> None:
    a = rng.standard_normal((8, 200)).astype(np.float32)
    a[0, :4] = [np.nan, np.inf, -np.inf, 0.0]
    c = rng.standard_normal((300, 8)).astype(np.float32).T  # transposed: copied once
    c[1, :3] = [np.inf, 0.0, -0.0]
    out = _native_outer(a, c)
    if out is NotImplemented:
        pytest.skip("no C compiler: the NumPy path runs (tested above)")
    with np.errstate(invalid="ignore"):
        want = reference(a, c)
    np.testing.assert_array_equal(out, want)
    assert np.array_equal(np.signbit(out), np.signbit(want))


def test_mismatched_stacks_are_a_shape_error() -> None:
    with pytest.raises(ShapeError, match="func.outer"):
        outer(pb.zeros((3, 4)), pb.zeros((2, 5)))
    with pytest.raises(ShapeError, match="func.outer"):
        outer(pb.zeros(()), pb.zeros(()))


def test_gradients_match_finite_differences(rng) -> None:
    a = pb.tensor(rng.standard_normal((3, 4)), requires_grad=True)
    c = pb.tensor(rng.standard_normal((3, 5)), requires_grad=True)
    assert gradcheck(outer, (a, c))
    assert gradgradcheck(outer, (a, c))


def test_jvp_matches_finite_differences(rng) -> None:
    a, c = rng.standard_normal((2, 3, 4)), rng.standard_normal((2, 3, 5))
    ta, tc = rng.standard_normal(a.shape), rng.standard_normal(c.shape)
    _, tangent = jvp(outer, (pb.tensor(a), pb.tensor(c)), (pb.tensor(ta), pb.tensor(tc)))
    eps = 1e-6
    numeric = (reference(a + eps * ta, c + eps * tc) - reference(a - eps * ta, c - eps * tc)) / (
        2 * eps)
    np.testing.assert_allclose(tangent.numpy(), numeric, rtol=1e-7, atol=1e-9)


@pytest.mark.parametrize("in_dims", [(0, 0), (1, 0), (None, 0), (0, None)])
def test_vmap_matches_a_loop(rng, in_dims) -> None:
    a = rng.standard_normal((4, 3, 6))
    c = rng.standard_normal((4, 3, 7))
    a_in = np.moveaxis(a, 0, 1) if in_dims[0] == 1 else (a[0] if in_dims[0] is None else a)
    c_in = c[0] if in_dims[1] is None else c
    out = vmap(outer, in_dims=in_dims)(pb.tensor(a_in), pb.tensor(c_in)).numpy()
    a_at = (lambda i: a[0]) if in_dims[0] is None else (lambda i: a[i])
    c_at = (lambda i: c[0]) if in_dims[1] is None else (lambda i: c[i])
    want = np.stack([reference(a_at(i), c_at(i)) for i in range(4)])
    np.testing.assert_array_equal(out, want)


def test_per_sample_linear_weight_gradient_is_one_outer_product(rng, monkeypatch) -> None:
    """vmap(grad) of a linear layer's loss: the weight gradient comes from func.outer and
    equals each sample's g x^T."""
    import pullback.nn.functional as F

    calls = []
    kernel = OUTER.kernels["cpu"] if "cpu" in OUTER.kernels else OUTER.kernel_for("cpu")
    monkeypatch.setitem(OUTER.kernels, "cpu", lambda *a: calls.append(a[0].shape) or kernel(*a))
    w = pb.tensor(rng.standard_normal((5, 8)).astype(np.float32))
    x = rng.standard_normal((6, 8)).astype(np.float32)

    def loss(w, x):
        y = F.linear(x.unsqueeze(0), w)
        return (y * y).sum() / 2  # its output gradient is y, one per sample

    per_sample = vmap(grad(loss), in_dims=(None, 0))(w, pb.tensor(x)).numpy()
    assert calls == [(6, 5)]  # one call for the whole batch
    y = x @ w.numpy().T
    np.testing.assert_allclose(per_sample, y[:, :, None] * x[:, None, :], rtol=1e-5, atol=1e-6)
