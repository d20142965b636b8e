"""Tensor creation, dtypes, conversions, interchange, random numbers and error messages."""

from __future__ import annotations

import numpy as np
import pytest

import pullback as pb
from pullback.backends import Device
from pullback.errors import DeviceError, DTypeError, IndexOutOfRangeError, ShapeError


# -- creation and dtype inference ------------------------------------------------------------------

@pytest.mark.parametrize(
    "data, dtype",
    [([1.0, 2.0], pb.float32), ([1, 2], pb.int64), ([True, False], pb.bool_), (3.5, pb.float32),
     (np.array([1.0], dtype=np.float64), pb.float64), (np.array([1], dtype=np.int32), pb.int32)],
    ids=["py-float", "py-int", "py-bool", "scalar", "np-f64", "np-i32"],
)
def test_tensor_infers_dtype_like_pytorch(data, dtype):
    assert pb.tensor(data).dtype == dtype


def test_tensor_copies_but_as_tensor_and_from_numpy_share():
    a = np.zeros(3, dtype=np.float32)
    t, s, f = pb.tensor(a), pb.as_tensor(a), pb.from_numpy(a)
    a[0] = 7
    assert t.numpy()[0] == 0 and s.numpy()[0] == 7 and f.numpy()[0] == 7


def test_default_dtype_can_be_changed():
    try:
        pb.set_default_dtype(pb.float64)
        assert pb.tensor([1.0]).dtype == pb.float64 and pb.zeros(2).dtype == pb.float64
    finally:
        pb.set_default_dtype(pb.float32)
    with pytest.raises(DTypeError):
        pb.set_default_dtype(pb.int32)


def test_constructors():
    assert pb.zeros(2, 3).shape == (2, 3) and pb.ones((4,)).numpy().sum() == 4
    assert pb.full((2,), 7).dtype == pb.int64 and pb.full((2,), 0.5).dtype == pb.float32
    np.testing.assert_array_equal(pb.arange(5).numpy(), np.arange(5))
    assert pb.arange(0, 1, 0.25).dtype == pb.float32
    np.testing.assert_allclose(pb.linspace(0, 1, 5).numpy(), np.linspace(0, 1, 5))
    np.testing.assert_array_equal(pb.eye(3).numpy(), np.eye(3))
    x = pb.ones(2, 2, dtype=pb.float64)
    assert pb.zeros_like(x).dtype == pb.float64 and pb.full_like(x, 3.0).numpy().sum() == 12
    assert pb.empty(3).shape == (3,) and pb.empty_like(x).shape == (2, 2)


def test_requires_grad_at_creation():
    assert pb.zeros(2, requires_grad=True).requires_grad
    with pytest.raises(DTypeError):
        pb.zeros(2, dtype=pb.int32, requires_grad=True)


@pytest.mark.parametrize("dtype", [pb.float16, pb.bfloat16, pb.float32, pb.float64, pb.int32,
                                   pb.int64, pb.bool_], ids=str)
def test_to_dtype_round_trip(dtype):
    x = pb.tensor([0.0, 1.0, 2.0]).to(dtype)
    assert x.dtype == dtype
    expected = [0.0, 1.0, 1.0] if dtype == pb.bool_ else [0.0, 1.0, 2.0]
    np.testing.assert_array_equal(x.float().numpy(), expected)


def test_bfloat16_arithmetic():
    x = pb.tensor([1.5, 2.0], dtype=pb.bfloat16)
    y = (x * 2 + 1).float()
    np.testing.assert_array_equal(y.numpy(), [4.0, 5.0])


def test_float_double_half_long_shortcuts():
    x = pb.tensor([1.5])
    assert x.double().dtype == pb.float64 and x.half().dtype == pb.float16
    assert x.long().dtype == pb.int64 and x.int().dtype == pb.int32 and x.bool().dtype == pb.bool_


def test_dtype_cast_is_differentiable():
    x = pb.tensor([1.5, 2.5], requires_grad=True)
    (x.double() * 2).sum().backward()
    assert x.grad.dtype == pb.float32
    np.testing.assert_allclose(x.grad.numpy(), [2.0, 2.0])


# -- conversion and interchange ---------------------------------------------------------------------

def test_item_tolist_array():
    x = pb.tensor([[1.0, 2.0]])
    assert x.sum().item() == 3.0 and x.tolist() == [[1.0, 2.0]]
    assert np.asarray(x).shape == (1, 2)
    with pytest.raises(ValueError, match="2 elements"):
        x.item()


def test_numpy_of_grad_tensor_asks_for_detach():
    with pytest.raises(pb.AutogradError, match="detach"):
        pb.ones(2, requires_grad=True).numpy()


def test_dlpack_round_trip_with_numpy_is_zero_copy():
    a = np.arange(6.0).reshape(2, 3)
    t = pb.from_dlpack(a)
    a[0, 0] = 42
    assert t.numpy()[0, 0] == 42
    back = np.from_dlpack(t)
    assert np.shares_memory(back, a)


def test_dlpack_with_torch():
    torch = pytest.importorskip("torch")
    tt = torch.arange(4.0)
    t = pb.from_dlpack(tt)
    tt[0] = 9
    assert t.numpy()[0] == 9
    back = torch.from_dlpack(pb.arange(3.0))
    assert back.tolist() == [0.0, 1.0, 2.0]


def test_tensor_from_list_of_tensors():
    t = pb.tensor([pb.tensor(1.0), pb.tensor(2.0)])
    assert t.tolist() == [1.0, 2.0]


def test_numpy_operand_on_the_left_defers_to_tensor():
    x = pb.tensor([1.0, 2.0], requires_grad=True)
    y = np.float32(2.0) * x
    assert isinstance(y, pb.Tensor) and y.requires_grad


def test_repr_shows_dtype_and_grad_fn():
    x = pb.tensor([1.0], dtype=pb.float64, requires_grad=True)
    assert "dtype=float64" in repr(x) and "requires_grad=True" in repr(x)
    assert "grad_fn=<mul>" in repr(x * 2)


def test_tensors_are_not_picklable():
    import pickle

    with pytest.raises(TypeError, match="pullback.save"):
        pickle.dumps(pb.ones(2))


def test_len_iter_bool():
    x = pb.tensor([[1.0, 2.0], [3.0, 4.0]])
    assert len(x) == 2 and [r.tolist() for r in x] == [[1.0, 2.0], [3.0, 4.0]]
    assert bool(pb.tensor(1.0))
    with pytest.raises(ValueError, match="ambiguous"):
        bool(x)


# -- random numbers -----------------------------------------------------------------------------------

def test_manual_seed_makes_random_streams_reproducible():
    pb.manual_seed(123)
    a = (pb.rand(3).numpy(), pb.randn(2, 2).numpy(), pb.randint(0, 10, (5,)).numpy())
    pb.manual_seed(123)
    b = (pb.rand(3).numpy(), pb.randn(2, 2).numpy(), pb.randint(0, 10, (5,)).numpy())
    for u, v in zip(a, b):
        np.testing.assert_array_equal(u, v)
    assert not np.array_equal(pb.rand(3).numpy(), a[0])


def test_random_distributions_have_the_right_moments():
    pb.manual_seed(0)
    u = pb.rand(200_000, dtype=pb.float64).numpy()
    n = pb.normal(2.0, 3.0, size=200_000, dtype=pb.float64).numpy()
    assert 0 <= u.min() and u.max() < 1 and abs(u.mean() - 0.5) < 0.01
    assert abs(n.mean() - 2.0) < 0.05 and abs(n.std() - 3.0) < 0.05
    r = pb.randint(3, 7, (10_000,)).numpy()
    assert set(np.unique(r)) == {3, 4, 5, 6}
    assert sorted(pb.randperm(6).tolist()) == list(range(6))


def test_rng_state_round_trip():
    backend = Device("cpu").backend
    state = backend.get_rng_state()
    a = pb.rand(4).numpy()
    backend.set_rng_state(state)
    np.testing.assert_array_equal(pb.rand(4).numpy(), a)


# -- errors -----------------------------------------------------------------------------------------------

def test_shape_mismatch_names_op_and_both_shapes():
    with pytest.raises(ShapeError, match=r"add.*\(2, 3\).*\(4,\)"):
        pb.ones(2, 3) + pb.ones(4)
    with pytest.raises(ShapeError, match=r"matmul.*\(2, 3\).*\(2, 3\)"):
        pb.ones(2, 3) @ pb.ones(2, 3)


def test_reshape_error_names_shapes():
    with pytest.raises(ShapeError, match=r"\(2, 3\).*\(4,\)"):
        pb.ones(2, 3).reshape(4)


def test_out_of_range_index_names_index_and_size():
    with pytest.raises(IndexOutOfRangeError, match="index 5 .* size 3"):
        pb.ones(3)[5]
    with pytest.raises(IndexOutOfRangeError, match="index 7 .* size 3"):
        pb.ones(3)[pb.tensor([0, 7])]


def test_bad_index_dtype_is_a_dtype_error():
    with pytest.raises(DTypeError, match="float32"):
        pb.ones(3)[pb.tensor([0.0, 1.0])]


def test_where_needs_bool_condition():
    with pytest.raises(DTypeError, match="bool"):
        pb.where(pb.ones(2), pb.ones(2), pb.zeros(2))


def test_device_mismatch_names_both_devices():
    from pullback import plugins
    from pullback._cpu import CPUBackend
    from pullback.hookspecs import hookimpl

    class SecondCPU(CPUBackend):
        name = "second"

    class Plugin:
        pullback_hook_api = "1.0"

        @hookimpl
        def register_backends(self, register):
            register(SecondCPU())

    plugins.register_plugin(Plugin(), name="second-cpu-test")
    try:
        a = pb.ones(2)
        b = pb.ones(2, device="second")
        with pytest.raises(DeviceError, match="cpu, second"):
            a + b
        np.testing.assert_array_equal((b + b).to("cpu").numpy(), [2.0, 2.0])
        x = pb.ones(2, requires_grad=True)
        (x.to("second") * 3).sum().backward()
        assert x.grad.device.type == "cpu" and x.grad.tolist() == [3.0, 3.0]
    finally:
        plugins.unregister_plugin("second-cpu-test")
    with pytest.raises(DeviceError, match="unknown device type 'second'"):
        Device("second")


def test_missing_cuda_package_names_distribution():
    if "cuda" in pb.backends.backends():
        pytest.skip("pullback-cuda is installed here")
    with pytest.raises(pb.errors.MissingPackageError,
                       match="provided by pullback-cuda, which is not installed: pip install"):
        pb.zeros(2, device="cuda")


def test_as_tensor_of_numpy_scalar():
    t = pb.as_tensor(np.float32(2.0))
    assert t.dtype == pb.float32 and t.item() == 2.0
