"""The hand-written kernels on a GPU, each against a reference computed by cuBLAS/CuPy (in float64
where it matters), and each reached through its op with the switch on, and bypassed with it off."""

from __future__ import annotations

import math

import numpy as np
import pytest

import pullback as pb
from pullback.cuda import fused_adamw_, fused_adamw_supported, use_custom_kernels
from pullback.cuda._kernels import layer_norm as ln
from pullback.cuda._kernels import matmul as mm
from pullback.cuda._kernels import softmax as sm

pytestmark = pytest.mark.cuda


@pytest.fixture
def rand(cupy):
    rng = cupy.random.default_rng(0)

    def make(*shape, dtype=np.float32):
        return rng.standard_normal(shape, dtype=np.float32).astype(dtype)

    return make


def _check_matmul(cupy, a, b) -> None:
    out = mm.matmul(a, b)
    assert out is not NotImplemented
    ref = cupy.matmul(a.astype(np.float64), b.astype(np.float64))
    assert out.shape == ref.shape and out.dtype == a.dtype
    k = a.shape[-1]
    # The rounding error of a float32 dot product grows like eps * sqrt(k) * ||a_i * b_j||
    # (eps = 6e-8): allow 16 times that, far below what a wrong index would give (~1).
    scale = cupy.sqrt(cupy.matmul(a.astype(np.float64) ** 2, b.astype(np.float64) ** 2))
    err = float(cupy.max(cupy.abs(out.astype(np.float64) - ref) / (scale + 1e-30)))
    assert err < 1e-6 * max(1.0, math.sqrt(k)), (a.shape, b.shape, err)


@pytest.mark.parametrize("m, k, n", [(1, 1, 1), (128, 128, 128), (130, 7, 259), (256, 512, 384),
                                     (1000, 333, 77), (64, 4096, 64), (1024, 1024, 1024)])
def test_matmul_float32_against_cublas(cupy, rand, m, k, n):
    _check_matmul(cupy, rand(m, k), rand(k, n))


@pytest.mark.parametrize("layout", ["nt", "tn", "tt", "batched", "broadcast", "fold", "4d",
                                    "strided", "unaligned"])
def test_matmul_layouts_against_cublas(cupy, rand, layout):
    make = {
        "nt": lambda: (rand(100, 64), rand(96, 64).T),
        "tn": lambda: (rand(64, 100).T, rand(64, 96)),
        "tt": lambda: (rand(64, 100).T, rand(96, 64).T),
        "batched": lambda: (rand(5, 70, 33), rand(5, 33, 90)),
        "broadcast": lambda: (rand(70, 32), rand(3, 32, 40)),
        "fold": lambda: (rand(4, 50, 64), rand(48, 64).T),
        "4d": lambda: (rand(2, 3, 20, 16), rand(2, 3, 16, 24)),
        "strided": lambda: (rand(40, 64)[:, ::2], rand(32, 20)),
        "unaligned": lambda: (rand(1, 65 * 64).ravel()[1:].reshape(64, 65)[:, :64], rand(64, 64)),
    }[layout]
    a, b = make()
    _check_matmul(cupy, a, b)


@pytest.mark.parametrize("dtype_name", ["float16", "bfloat16"])
def test_matmul_low_precision_accumulates_in_float32(cupy, rand, dtype_name):
    dtype = pb.float16 if dtype_name == "float16" else pb.bfloat16
    try:
        a, b = rand(200, 300, dtype=dtype), rand(300, 100, dtype=dtype)
    except Exception as exc:  # CuPy without bfloat16 support
        pytest.skip(f"CuPy cannot make {dtype_name} arrays: {exc}")
    out = mm.matmul(a, b)
    ref = cupy.matmul(a.astype(np.float32), b.astype(np.float32))  # exact inputs, fp32 sums
    rounding = 2.0**-11 if dtype_name == "float16" else 2.0**-8
    err = cupy.abs(out.astype(np.float32) - ref) / (cupy.abs(ref) + 1.0)
    assert float(err.max()) <= 2 * rounding  # only the final rounding, no fp16 accumulation


def test_matmul_op_uses_the_kernel_when_on_and_cublas_when_off(cupy, rand, monkeypatch):
    a, b = rand(64, 32), rand(32, 48)
    launched = []
    real = mm.matmul

    def spy(x, y):
        launched.append(x.shape)
        return real(x, y)

    monkeypatch.setattr(pb.get_op("matmul").kernels["cuda"], "run", spy)
    pb.get_op("matmul").kernels["cuda"]._impl = None  # rebuild around the spy
    x, y = pb.Tensor._wrap(a, pb.Device("cuda")), pb.Tensor._wrap(b, pb.Device("cuda"))
    with use_custom_kernels(True, "matmul"):
        on = (x @ y).array
    with use_custom_kernels(False, "matmul"):
        off = (x @ y).array
    pb.get_op("matmul").kernels["cuda"]._impl = None
    assert launched == [(64, 32)]
    cupy.testing.assert_array_equal(off, cupy.matmul(a, b))  # cuBLAS, bit for bit
    cupy.testing.assert_allclose(on, off, rtol=1e-5, atol=1e-5)


def _softmax_ref(cupy, x):
    x = x.astype(np.float64)
    e = cupy.exp(x - x.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


@pytest.mark.parametrize("shape", [(1, 1), (7, 33), (64, 1024), (3, 50257), (2, 4, 256, 256)])
def test_softmax_forward_and_backward(cupy, rand, shape):
    x, dy = rand(*shape), rand(*shape)
    y = sm.softmax(x, axis=-1)
    ref = _softmax_ref(cupy, x)
    cupy.testing.assert_allclose(y, ref, rtol=1e-5, atol=1e-7)
    dx = sm.softmax_backward(dy, y, axis=-1)
    y64 = ref
    ref_dx = y64 * (dy - (dy * y64).sum(axis=-1, keepdims=True))
    cupy.testing.assert_allclose(dx, ref_dx, rtol=1e-4, atol=1e-6)


def test_softmax_masked_rows_match_the_generic_kernel(cupy, rand):
    x = rand(4, 300)
    x[0, 100:] = -cupy.inf  # causal-style mask
    x[1] = -cupy.inf        # fully masked row: NaN, as the generic kernel and PyTorch give
    x[2, 5] = cupy.nan
    y = sm.softmax(x, axis=-1)
    generic = pb.get_op("nn.softmax").generic(cupy)(x, axis=-1)
    cupy.testing.assert_allclose(y, generic, rtol=1e-5, atol=1e-7)  # NaNs in the same places
    assert float(y[0, 100:].max()) == 0.0 and bool(cupy.isnan(y[1]).all())


def test_softmax_declines_other_axes_and_dtypes(rand):
    assert sm.softmax(rand(4, 5), axis=0) is NotImplemented
    assert sm.softmax(rand(4, 5).astype(np.float64), axis=-1) is NotImplemented


def _layer_norm_ref(cupy, x, w, b, k, eps):
    x = x.astype(np.float64)
    axes = tuple(range(x.ndim - k, x.ndim))
    mean = x.mean(axis=axes, keepdims=True)
    var = ((x - mean) ** 2).mean(axis=axes, keepdims=True)
    xhat = (x - mean) / cupy.sqrt(var + eps)
    y = xhat * (w if w is not None else 1.0) + (b if b is not None else 0.0)
    return y, mean, 1.0 / cupy.sqrt(var + eps), xhat


@pytest.mark.parametrize("shape, k, affine", [((8, 384), 1, True), ((2, 3, 50), 1, False),
                                              ((4, 6, 10), 2, True), ((16384, 384), 1, True),
                                              ((5, 3000), 1, True)])
def test_layer_norm_forward_and_backward(cupy, rand, shape, k, affine):
    x, dy = rand(*shape) * 3 + 1, rand(*shape)
    norm_shape = shape[len(shape) - k:]
    w = rand(*norm_shape) if affine else None
    b = rand(*norm_shape) if affine else None
    y, (mean, rstd) = ln.layer_norm(x, w, b, normalized_ndim=k, eps=1e-5)
    ref_y, ref_mean, ref_rstd, xhat = _layer_norm_ref(cupy, x, w, b, k, 1e-5)
    cupy.testing.assert_allclose(y, ref_y, rtol=1e-4, atol=1e-5)
    cupy.testing.assert_allclose(mean, ref_mean, rtol=1e-5, atol=1e-6)
    cupy.testing.assert_allclose(rstd, ref_rstd, rtol=1e-4)
    dx, dw, db = ln.layer_norm_backward(dy, x, w, mean, rstd, normalized_ndim=k)
    axes = tuple(range(x.ndim - k, x.ndim))
    lead = tuple(range(x.ndim - k))
    g = dy.astype(np.float64) * (w if w is not None else 1.0)
    ref_dx = ref_rstd * (g - g.mean(axis=axes, keepdims=True)
                         - xhat * (g * xhat).mean(axis=axes, keepdims=True))
    cupy.testing.assert_allclose(dx, ref_dx, rtol=1e-3, atol=1e-4)
    cupy.testing.assert_allclose(dw, (dy * xhat).sum(axis=lead), rtol=1e-3, atol=1e-3)
    cupy.testing.assert_allclose(db, dy.astype(np.float64).sum(axis=lead), rtol=1e-3, atol=1e-3)


def test_layer_norm_op_matches_the_generic_kernel(cupy, rand):
    x, w, b = rand(6, 7, 32), rand(32), rand(32)
    y, saved = pb.get_op("nn.layer_norm").kernels["cuda"](x, w, b, normalized_ndim=1, eps=1e-5)
    gy, gsaved = pb.get_op("nn.layer_norm").generic(cupy)(x, w, b, normalized_ndim=1, eps=1e-5)
    cupy.testing.assert_allclose(y, gy, rtol=1e-5, atol=1e-5)
    for s, gs in zip(saved, gsaved):
        assert s.shape == gs.shape
        cupy.testing.assert_allclose(s, gs, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("options", [{}, {"amsgrad": True}, {"maximize": True},
                                     {"decoupled": False, "weight_decay": 0.1}])
def test_fused_adamw_matches_the_optimizer_step_on_cpu(cupy, options):
    """Ten steps of the fused kernel against pullback.optim's generic Adam(W) on the CPU."""
    optim = pytest.importorskip("pullback.optim", reason="pullback-optim is not installed")
    rng = np.random.default_rng(1)
    p0 = rng.standard_normal(1000).astype(np.float32)
    grads = [rng.standard_normal(1000).astype(np.float32) for _ in range(10)]
    decoupled = options.get("decoupled", True)
    wd = options.get("weight_decay", 0.01)
    amsgrad, maximize = options.get("amsgrad", False), options.get("maximize", False)
    hyper = dict(lr=1e-2, betas=(0.9, 0.99), eps=1e-8, weight_decay=wd, amsgrad=amsgrad,
                 maximize=maximize)
    cpu_p = pb.tensor(p0, requires_grad=True)
    opt = (optim.AdamW if decoupled else optim.Adam)([cpu_p], **hyper)
    gpu_p = pb.tensor(p0, device="cuda")
    m, v = pb.zeros(1000, device="cuda"), pb.zeros(1000, device="cuda")
    vmax = pb.zeros(1000, device="cuda") if amsgrad else None
    for step, g in enumerate(grads, start=1):
        cpu_p.grad = pb.tensor(g)
        opt.step()
        gg = cupy.asarray(g)
        assert fused_adamw_supported(gpu_p, gg, m, v, vmax)
        fused_adamw_(gpu_p, gg, m, v, lr=1e-2, beta1=0.9, beta2=0.99, eps=1e-8, weight_decay=wd,
                     step=step, maximize=maximize, max_exp_avg_sq=vmax,
                     decoupled_weight_decay=decoupled)
    np.testing.assert_allclose(gpu_p.numpy(), cpu_p.detach().numpy(), rtol=1e-5, atol=1e-6)


def test_fused_adamw_refuses_mismatched_arrays(cupy):
    p, m, v = pb.zeros(4, device="cuda"), pb.zeros(4, device="cuda"), pb.zeros(4, device="cuda")
    assert not fused_adamw_supported(p, cupy.zeros(5, np.float32), m, v)
    assert not fused_adamw_supported(p, cupy.zeros(4, np.float64), m, v)
    with use_custom_kernels(False, "adamw"):
        assert not fused_adamw_supported(p, cupy.zeros(4, np.float32), m, v)
    with pytest.raises(pb.DTypeError, match="grad has dtype float64"):
        fused_adamw_(p, cupy.zeros(4, np.float64), m, v, lr=0.1, beta1=0.9, beta2=0.99,
                     eps=1e-8, weight_decay=0.0, step=1)
