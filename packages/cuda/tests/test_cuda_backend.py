"""The cuda backend on a GPU: arrays, transfers, DLPack with PyTorch and JAX, the generator."""

from __future__ import annotations

import json

import numpy as np
import pytest

import pullback as pb
import pullback.cuda
from pullback.cuda._kernels.philox import philox_blocks
from pullback.errors import DeviceError

from philox_reference import philox_blocks as philox_reference

pytestmark = pytest.mark.cuda


def test_creation_lands_on_the_gpu(cupy):
    for t in (pb.zeros(2, 3, device="cuda"), pb.ones(4, device="cuda:0"),
              pb.arange(5, device="cuda"), pb.eye(3, device="cuda"),
              pb.full((2,), 1.5, device="cuda"), pb.randn(3, device="cuda"),
              pb.tensor([[1.0, 2.0]], device="cuda")):
        assert isinstance(t.array, cupy.ndarray) and t.array.device.id == 0
        assert t.device == pb.Device("cuda:0")
    np.testing.assert_array_equal(pb.arange(5, device="cuda").numpy(), np.arange(5))


def test_to_and_back_with_gradient():
    x = pb.tensor([1.0, -2.0, 3.0], requires_grad=True)
    y = x.to("cuda")
    assert y.device.type == "cuda"
    (y * y).sum().backward()
    assert x.grad.device.type == "cpu"
    np.testing.assert_allclose(x.grad.numpy(), [2.0, -4.0, 6.0])
    np.testing.assert_array_equal(y.cpu().numpy(), x.detach().numpy())


def test_mixing_devices_is_a_device_error():
    with pytest.raises(DeviceError, match="cpu.*cuda:0|cuda:0.*cpu"):
        pb.ones(2) + pb.ones(2, device="cuda")


def test_bad_index_is_a_device_error():
    with pytest.raises(DeviceError, match="does not exist"):
        pb.zeros(2, device=f"cuda:{pullback.cuda.device_count()}")


def test_synchronize_and_memory_info():
    x = pb.randn(1024, 1024, device="cuda")
    (x @ x).sum()
    pullback.cuda.synchronize()
    pb.synchronize("cuda:0")
    info = pullback.cuda.memory_info(0)
    assert set(info) == {"free", "total", "used_by_pool", "held_by_pool"}
    assert info["total"] > info["free"] > 0 and info["used_by_pool"] >= 4 * 1024 * 1024


@pytest.mark.parametrize("seed, offset, blocks", [(0, 0, 1), (1234, 7, 1000),
                                                  (2**64 - 1, 2**32 - 3, 10)])
def test_philox_kernel_matches_the_numpy_reference(seed, offset, blocks):
    gpu = philox_blocks(blocks, seed, offset).get()
    np.testing.assert_array_equal(gpu, philox_reference(blocks, seed, offset))


def test_seeded_sampling_is_reproducible_and_state_resumes():
    pb.manual_seed(3)
    a = pb.randn(1000, device="cuda").numpy()
    state = json.loads(json.dumps(pb.backends.get_backend("cuda").get_rng_state()))
    b = pb.rand(17, device="cuda").numpy()
    pb.manual_seed(3)
    np.testing.assert_array_equal(pb.randn(1000, device="cuda").numpy(), a)
    pb.backends.get_backend("cuda").set_rng_state(state)
    np.testing.assert_array_equal(pb.rand(17, device="cuda").numpy(), b)
    assert abs(a.mean()) < 0.1 and abs(a.std() - 1.0) < 0.1
    p = pb.randperm(50, device="cuda").numpy()
    np.testing.assert_array_equal(np.sort(p), np.arange(50))
    k = pb.randint(0, 7, size=(100,), device="cuda").numpy()
    assert k.min() >= 0 and k.max() < 7


def test_dlpack_with_torch_shares_memory():
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("this PyTorch build has no CUDA")
    x = pb.arange(6, dtype=pb.float32, device="cuda")
    t = torch.from_dlpack(x)
    assert t.is_cuda and t.data_ptr() == x.array.data.ptr
    t[0] = 42.0
    assert float(x[0].item()) == 42.0
    back = pb.from_dlpack(torch.ones(3, device="cuda") * 2)
    assert back.device.type == "cuda"
    np.testing.assert_array_equal(back.numpy(), [2.0, 2.0, 2.0])
    src = torch.arange(4.0, device="cuda")
    shared = pb.from_dlpack(src)
    assert shared.array.data.ptr == src.data_ptr()


def test_dlpack_with_jax(monkeypatch):
    # JAX would otherwise take 75% of the GPU on first use, from CuPy and PyTorch.
    monkeypatch.setenv("XLA_PYTHON_CLIENT_PREALLOCATE", "false")
    jax = pytest.importorskip("jax")
    jnp = pytest.importorskip("jax.numpy")
    gpus = [d for d in jax.devices() if d.platform == "gpu"]
    if not gpus:
        pytest.skip("JAX sees no GPU")
    arr = jax.device_put(jnp.arange(5.0, dtype=jnp.float32), gpus[0])
    x = pb.from_dlpack(arr)
    assert x.device.type == "cuda"
    np.testing.assert_array_equal(x.numpy(), np.arange(5.0, dtype=np.float32))
    back = jnp.from_dlpack(pb.ones(3, device="cuda") * 3)
    np.testing.assert_array_equal(np.asarray(back), [3.0, 3.0, 3.0])
