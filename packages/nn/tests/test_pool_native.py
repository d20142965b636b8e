"""The C forward and backward of max pooling (``_csrc/pool.c`` through
``pool.native_max_pool2d`` and ``pool.native_max_pool2d_backward``): the NumPy kernel's values
(bit for bit) and gradients on geometries with padding, dilation, overlapping windows, ties,
NaN and -inf; PyTorch's gradients in float32; typed refusals of bad arguments; and fuzzing of
the entry points in a worker process, plain and under ASan+UBSan (``nn_pool_fuzz_cases.py``),
as ``test_native_fuzz.py`` does for the other native kernels."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import pullback as pb
import pullback.nn.functional as F
from pullback import native
from pullback.errors import PullbackError
from pullback.nn._ops import pool

CASES_FILE = Path(__file__).with_name("nn_pool_fuzz_cases.py")
ENTRIES = {"max_pool2d_backward": 1200, "max_pool2d": 600}  # cases each
SANITIZED_CASES_PER_ENTRY = 150

numpy_forward = pool._max_pool_kernel("nn.max_pool2d")(np).__wrapped__
numpy_backward = pool._max_pool_backward_kernel("nn.max_pool2d_backward")(np).__wrapped__

GEOMETRIES = [  # kernel, stride, padding, dilation
    ((2, 2), (2, 2), ((0, 0), (0, 0)), (1, 1)),
    ((3, 3), (1, 1), ((1, 1), (1, 1)), (1, 1)),  # overlapping windows, padding
    ((3, 2), (2, 1), ((1, 1), (0, 0)), (2, 1)),  # dilation
    ((2, 2), (2, 2), ((0, 1), (0, 1)), (1, 1)),  # ceil_mode's extra room
    ((5, 1), (3, 4), ((2, 2), (0, 0)), (1, 3)),
]


def _geometry(kernel, stride, padding, dilation):
    return dict(kernel_size=kernel, stride=stride, padding=padding, dilation=dilation)


def _hard_input(rng, shape=(3, 5, 17, 19)):
    """Values with ties (a block of zeros, repeated integers), NaN and -inf."""
    x = rng.integers(-3, 4, shape).astype(np.float32)
    x[0, 0, :6, :6] = 0.0
    x[1, 1, 4, 4] = np.nan
    x[2, 2, :7, :7] = -np.inf
    x[0, 1] = rng.standard_normal(shape[2:])
    return x


@pytest.fixture(scope="module")
def compiled():
    x = np.zeros((1, 1, 64, 64), np.float32)
    pooled = np.zeros((1, 1, 32, 32), np.float32)
    probe = pool.native_max_pool2d_backward(pooled, x, pooled, **_geometry(*GEOMETRIES[0]))
    if probe is NotImplemented:
        pytest.skip(f"no native pooling kernel here: {native.status().get('nn_pool')}")


@pytest.mark.parametrize("geometry", GEOMETRIES, ids=str)
def test_native_equals_numpy(compiled, rng, geometry):
    geo = _geometry(*geometry)
    x = _hard_input(rng)
    y0 = numpy_forward(x, **geo)
    g = rng.standard_normal(y0.shape).astype(np.float32)
    dx = pool.native_max_pool2d_backward(g, x, y0, **geo)
    np.testing.assert_allclose(dx, numpy_backward(g, x, y0, **geo), rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("geometry", GEOMETRIES, ids=str)
def test_native_forward_gives_the_numpy_values_bit_for_bit(compiled, rng, geometry):
    geo = _geometry(*geometry)
    for x in (_hard_input(rng), _hard_input(rng, (3, 5, 7, 6))):  # and windows mostly padding
        y = pool.native_max_pool2d(x, **geo)
        expected = numpy_forward(x, **geo)
        assert y is not NotImplemented and y.dtype == np.float32
        assert y.shape == expected.shape and y.tobytes() == expected.tobytes()


def test_native_forward_reads_strided_inputs_and_refuses_what_it_does_not_cover(compiled, rng):
    from pullback.testing.layouts import laid_out

    geo = _geometry(*GEOMETRIES[1])
    for layout in ("transposed", "strided"):
        x = laid_out(rng.standard_normal((2, 3, 20, 21)).astype(np.float32), layout)
        np.testing.assert_array_equal(pool.native_max_pool2d(x, **geo), numpy_forward(x, **geo))
    assert pool.native_max_pool2d(np.zeros((1, 1, 8, 8)), **geo) is NotImplemented  # float64
    big = np.zeros((4, 8, 128, 128), np.float32)  # (NumPy's strided loops are as fast there)
    assert pool.native_max_pool2d(big, **geo) is NotImplemented
    assert pool.native_max_pool2d(np.zeros((1, 1, 8, 8, 8), np.float32),
                                  **{**geo, "kernel_size": (2, 2, 2)}) is NotImplemented
    with pytest.raises(PullbackError):
        pool.native_max_pool2d(np.zeros((1, 1, 8, 8), np.float32), **{**geo, "stride": (0, 1)})


@pytest.mark.parametrize("layout", ["transposed", "strided"])
def test_native_copies_strided_inputs(compiled, rng, layout):
    from pullback.testing.layouts import laid_out

    geo = _geometry(*GEOMETRIES[1])
    x = laid_out(rng.standard_normal((2, 3, 20, 21)).astype(np.float32), layout)
    y = numpy_forward(x, **geo)
    g = laid_out(rng.standard_normal(y.shape).astype(np.float32), layout)
    np.testing.assert_allclose(pool.native_max_pool2d_backward(g, x, y, **geo),
                               numpy_backward(g, x, y, **geo), rtol=1e-6, atol=1e-6)


def test_other_dtypes_and_small_inputs_are_left_to_numpy(compiled):
    geo = _geometry(*GEOMETRIES[0])
    for x in (np.zeros((1, 1, 64, 64)), np.zeros((1, 1, 4, 4), np.float32)):
        pooled = numpy_forward(x, **geo)
        assert pool.native_max_pool2d_backward(pooled, x, pooled, **geo) is NotImplemented


@pytest.mark.parametrize("bad", [
    dict(stride=(0, 2)), dict(dilation=(-1, 1)), dict(padding=((-1, 0), (0, 0))),
    dict(kernel_size=(40, 2)), dict(kernel_size=(2, 2, 2)),
])
def test_bad_geometry_is_refused_with_a_typed_error(bad):
    geo = {**_geometry(*GEOMETRIES[0]), **bad}
    x = np.zeros((2, 2, 32, 32), np.float32)
    pooled = np.zeros((2, 2, 16, 16), np.float32)
    if len(geo["kernel_size"]) != 2:  # 3-d: the NumPy kernel's
        assert pool.native_max_pool2d_backward(pooled, x, pooled, **geo) is NotImplemented
        return
    with pytest.raises(PullbackError):
        pool.native_max_pool2d_backward(pooled, x, pooled, **geo)


def test_backward_refuses_pooled_arrays_of_the_wrong_shape(rng):
    geo = _geometry(*GEOMETRIES[0])
    x = rng.standard_normal((2, 2, 32, 32)).astype(np.float32)
    wrong = np.zeros((2, 2, 15, 16), np.float32)
    with pytest.raises(PullbackError):
        pool.native_max_pool2d_backward(wrong, x, wrong, **geo)


@pytest.mark.parametrize("geometry", GEOMETRIES[:3], ids=str)
def test_float32_values_and_gradients_match_torch(compiled, rng, geometry):
    torch = pytest.importorskip("torch")
    kernel, stride, padding, dilation = geometry
    x_np = rng.standard_normal((4, 6, 23, 25)).astype(np.float32)
    x_np[0, 0, :5, :5] = 1.0  # ties
    x = pb.tensor(x_np, requires_grad=True)
    pads = tuple(p[0] for p in padding)
    y = F.max_pool2d(x, kernel, stride, pads, dilation)
    tx = torch.from_numpy(x_np).requires_grad_(True)
    ty = torch.nn.functional.max_pool2d(tx, kernel, stride, pads, dilation)
    np.testing.assert_array_equal(y.detach().numpy(), ty.detach().numpy())
    g = rng.standard_normal(tuple(y.shape)).astype(np.float32)
    y.backward(pb.tensor(g))
    ty.backward(torch.from_numpy(g))
    np.testing.assert_allclose(x.grad.numpy(), tx.grad.numpy(), rtol=1e-6, atol=1e-6)


# -- fuzzing in a worker process ----------------------------------------------------------------

hypothesis = pytest.importorskip("hypothesis")

from pullback.testing.isolation import Workers, fuzz_in_isolation  # noqa: E402
from test_native_fuzz import window_case  # noqa: E402 - the same cases as im2col's


@pytest.fixture(scope="module")
def workers():
    pool_of_workers = Workers(CASES_FILE, "run_case")
    yield pool_of_workers
    pool_of_workers.close()


@pytest.mark.parametrize("entry", sorted(ENTRIES))
def test_entry_point_never_crashes_and_agrees_with_numpy(workers, entry):
    ran = fuzz_in_isolation(workers.get("plain"), window_case(entry), ENTRIES[entry])
    assert ran >= ENTRIES[entry]


@pytest.mark.parametrize("entry", sorted(ENTRIES))
def test_entry_point_under_address_and_undefined_behaviour_sanitizers(workers, entry):
    ran = fuzz_in_isolation(workers.get("sanitized", pytest.skip), window_case(entry),
                            SANITIZED_CASES_PER_ENTRY)
    assert ran >= SANITIZED_CASES_PER_ENTRY
