"""The cuda backend's generator, tested on the CPU: the same sampling code over a NumPy Philox
stream (the CUDA kernel's bits are compared with that stream in test_cuda_backend.py)."""

from __future__ import annotations

import json
from typing import Any

import numpy as np
import pytest
from scipy import stats

import pullback as pb
from pullback import plugins
from pullback.cuda._random import PhiloxGenerator
from pullback.backends import Backend
from pullback.hookspecs import hookimpl

from philox_reference import philox4x32_10, philox_blocks


def _gen(seed: int = 0) -> PhiloxGenerator:
    return PhiloxGenerator(np, philox_blocks, seed)


@pytest.mark.parametrize("counter, key, expected", [
    ((0, 0, 0, 0), (0, 0), (0x6627E8D5, 0xE169C58D, 0xBC57AC4C, 0x9B00DBD8)),
    ((0xFFFFFFFF,) * 4, (0xFFFFFFFF, 0xFFFFFFFF), (0x408F276D, 0x41C83B0E, 0xA20BC7C6, 0x6D5451FD)),
    ((0x243F6A88, 0x85A308D3, 0x13198A2E, 0x03707344), (0xA4093822, 0x299F31D0),
     (0xD16CFE09, 0x94FDCCEB, 0x5001E420, 0x24126EA1)),
])
def test_reference_matches_random123_known_answers(counter, key, expected):
    out = philox4x32_10(np.array([counter], dtype=np.uint32), key)
    assert tuple(int(v) for v in out[0]) == expected


def test_state_is_json_and_resumes_the_stream():
    g = _gen(1234)
    g.random((10,), dtype=np.float32)
    state = json.loads(json.dumps(g.get_state()))
    assert state == {"seed": 1234, "offset": 3}  # 10 words = 3 whole blocks
    a = g.standard_normal((7,), dtype=np.float32)
    h = _gen(99)
    h.set_state(state)
    np.testing.assert_array_equal(h.standard_normal((7,), dtype=np.float32), a)


def test_seeds_give_different_streams_and_negative_seeds_wrap():
    assert not np.array_equal(_gen(0).random(8), _gen(1).random(8))
    assert _gen(-1).seed == 2**64 - 1


@pytest.mark.parametrize("bad", [{"seed": 1}, {"seed": -1, "offset": 0}, "nope"])
def test_bad_states_are_refused(bad: Any):
    with pytest.raises(ValueError, match="seed"):
        _gen().set_state(bad)


@pytest.mark.parametrize("dtype, step", [(np.float32, 2.0**-24), (np.float64, 2.0**-53)])
def test_random_is_uniform_on_the_grid(dtype, step):
    x = _gen(3).random((200_000,), dtype=dtype)
    assert x.dtype == dtype and x.min() >= 0.0 and x.max() < 1.0
    np.testing.assert_array_equal(np.round(x / step) * step, x)  # multiples of the grid step
    assert stats.kstest(x.astype(np.float64), "uniform").pvalue > 1e-3


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_standard_normal_is_normal(dtype):
    z = _gen(5).standard_normal((100_001,), dtype=dtype)  # odd: the last pair is cut
    assert z.dtype == dtype and z.shape == (100_001,)
    assert abs(z.mean()) < 0.01 and abs(z.std() - 1.0) < 0.01
    assert stats.kstest(z.astype(np.float64), "norm").pvalue > 1e-3


def test_uniform_and_normal_take_numpy_arguments():
    u = _gen(8).uniform(-2.0, 3.0, size=(50_000,))
    assert u.dtype == np.float64 and u.min() >= -2.0 and u.max() < 3.0
    assert abs(u.mean() - 0.5) < 0.05
    z = _gen(8).normal(1.0, 0.5, size=(50_000,))
    assert abs(z.mean() - 1.0) < 0.01 and abs(z.std() - 0.5) < 0.01


def test_integers_cover_the_range_uniformly():
    v = _gen(11).integers(-3, 4, size=(70_000,), dtype=np.int64)
    assert v.dtype == np.int64 and v.min() == -3 and v.max() == 3
    counts = np.bincount(v + 3)
    assert stats.chisquare(counts).pvalue > 1e-3
    w = _gen(11).integers(5, size=(1000,), dtype=np.int32, endpoint=True)
    assert w.dtype == np.int32 and set(np.unique(w)) == {0, 1, 2, 3, 4, 5}


@pytest.mark.parametrize("args, error", [((3, 3), ValueError), ((0, 300, (2,), np.uint8), ValueError),
                                         ((0, 3, (2,), np.float32), TypeError)])
def test_integers_refuse_bad_ranges_and_dtypes(args, error):
    with pytest.raises(error):
        _gen().integers(*args)


def test_permutation_is_a_permutation_of_ints_or_rows():
    p = _gen(2).permutation(1000)
    assert p.dtype == np.int64
    np.testing.assert_array_equal(np.sort(p), np.arange(1000))
    assert not np.array_equal(p, np.arange(1000))
    rows = np.arange(12).reshape(6, 2)
    shuffled = _gen(2).permutation(rows)
    np.testing.assert_array_equal(np.sort(shuffled[:, 0]), rows[:, 0])


def test_unsupported_float_dtype_is_refused():
    with pytest.raises(TypeError, match="float16"):
        _gen().random((3,), dtype=np.float16)


class _PhiloxCPU(Backend):
    """A NumPy backend whose generator is the cuda backend's, so that pullback.creation's calls
    into it run for real."""

    name = "philox_cpu"

    def __init__(self) -> None:
        self._gen = _gen()

    @property
    def xp(self) -> Any:
        return np

    @property
    def array_type(self) -> type:
        return np.ndarray

    def generator(self, index: int = 0) -> PhiloxGenerator:
        return self._gen

    def manual_seed(self, seed: int) -> None:
        self._gen = _gen(seed)


class _Plugin:
    pullback_hook_api = "1.0"

    @staticmethod
    @hookimpl
    def register_backends(register):
        register(_PhiloxCPU())


@pytest.fixture
def philox_device():
    plugins.register_plugin(_Plugin, name="philox_cpu_test", distribution="test")
    yield "philox_cpu"
    plugins.unregister_plugin("philox_cpu_test")


def test_creation_functions_sample_through_the_generator(philox_device):
    pb.manual_seed(42)
    x = pb.randn(64, 32, device=philox_device)
    u = pb.rand(5, dtype=pb.float64, device=philox_device)
    n = pb.normal(2.0, 3.0, size=(4,), device=philox_device)
    k = pb.randint(0, 10, size=(6,), device=philox_device)
    p = pb.randperm(9, device=philox_device)
    assert (x.shape, x.dtype, u.dtype, k.dtype, p.dtype) == (
        (64, 32), np.float32, np.float64, np.int64, np.int64)
    assert sorted(p.tolist()) == list(range(9)) and all(0 <= v < 10 for v in k.tolist())
    assert n.shape == (4,)
    pb.manual_seed(42)
    np.testing.assert_array_equal(pb.randn(64, 32, device=philox_device).numpy(), x.numpy())
    w = pb.empty(3, 3, device=philox_device).normal_(0.0, 0.02)
    assert float(abs(w).max().item()) < 0.2
