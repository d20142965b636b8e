"""Mixed precision on a GPU: autocast's dtypes on cuda tensors, and a short training run whose
loss under float16 autocast + GradScaler (and bfloat16 autocast) tracks the float32 run."""

from __future__ import annotations

import numpy as np
import pytest

import pullback as pb
from pullback.cuda import use_custom_kernels
from pullback.amp import GradScaler, autocast

pytestmark = pytest.mark.cuda


def _bfloat16_supported(cupy) -> bool:
    try:
        cupy.zeros(2, dtype=pb.bfloat16)
    except Exception:
        return False
    return True


def _model(nn, seed: int):
    pb.manual_seed(seed)
    return nn.Sequential(nn.Linear(32, 64), nn.LayerNorm(64), nn.GELU(), nn.Linear(64, 64),
                         nn.GELU(), nn.Linear(64, 10)).to("cuda")


def _train(dtype, scaled: bool, steps: int = 150) -> list[float]:
    nn = pytest.importorskip("pullback.nn", reason="pullback-nn is not installed")
    optim = pytest.importorskip("pullback.optim", reason="pullback-optim is not installed")
    rng = np.random.default_rng(0)
    x = pb.tensor(rng.standard_normal((256, 32)).astype(np.float32), device="cuda")
    y = pb.tensor((rng.standard_normal((256, 32)) @ rng.standard_normal((32, 10))).argmax(1),
                  device="cuda")
    model = _model(nn, 0)
    opt = optim.AdamW(model.parameters(), lr=3e-3)
    scaler = GradScaler("cuda", init_scale=2.0**12, enabled=scaled)
    losses = []
    for _ in range(steps):
        opt.zero_grad()
        with autocast("cuda", dtype if dtype is not None else pb.float16,
                      enabled=dtype is not None):
            loss = nn.functional.cross_entropy(model(x), y)
        assert loss.dtype == pb.float32
        scaler.scale(loss).backward()
        scaler.step(opt)
        scaler.update()
        losses.append(float(loss.item()))
    assert all(p.dtype == pb.float32 and p.grad.dtype == pb.float32 for p in model.parameters())
    return losses


def test_autocast_dtypes_on_cuda():
    x, w = pb.randn(8, 16, device="cuda"), pb.randn(16, 4, device="cuda", requires_grad=True)
    with autocast("cuda", pb.float16):
        y = x @ w
        s = y.sum()
    assert (y.dtype, s.dtype) == (pb.float16, pb.float32)
    s.backward()
    assert w.grad.dtype == pb.float32


@pytest.mark.parametrize("custom", [True, False], ids=["custom-matmul", "cublas"])
def test_float16_training_tracks_float32(custom):
    with use_custom_kernels(custom, "matmul"):
        full = _train(None, scaled=False)
        half = _train(pb.float16, scaled=True)
    assert full[-1] < 0.5 * full[0]  # it learns
    assert abs(half[0] - full[0]) < 1e-2 * full[0]
    assert abs(half[-1] - full[-1]) < 0.05 * full[0]


def test_bfloat16_training_tracks_float32(cupy):
    if not _bfloat16_supported(cupy):
        pytest.skip(f"CuPy {cupy.__version__} has no bfloat16 arrays")
    full = _train(None, scaled=False)
    bf16 = _train(pb.bfloat16, scaled=False)  # bfloat16 keeps float32's range: no scaling
    assert abs(bf16[-1] - full[-1]) < 0.05 * full[0]
