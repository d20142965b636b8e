"""Native C kernels (pullback.native): building, caching and falling back, and the float32 GELU
kernels of the CPU backend against exact float64 values."""

from __future__ import annotations

import os
import subprocess
import sys
import warnings

import numpy as np
import pytest
import scipy.special

import pullback as pb
from pullback import _cpu_native, _cpu_parallel, native


@pytest.fixture(scope="module")
def activations():
    if _cpu_native._function("gelu_f32", 2) is None:
        pytest.skip(f"native kernels unavailable here: {native.status().get('activations')}")


def _gelu64(x: np.ndarray) -> np.ndarray:
    x = x.astype(np.float64)
    return x * scipy.special.ndtr(x)


def _gelu_slope64(x: np.ndarray) -> np.ndarray:
    x = x.astype(np.float64)
    return scipy.special.ndtr(x) + x * np.exp(-0.5 * x * x) / np.sqrt(2.0 * np.pi)


# 1,031 and 4,099 leave vector remainders; 2^20 + 3 is split over the threads
SIZES = [1024, 1031, 4099, (1 << 20) + 3]


@pytest.mark.parametrize("n", SIZES)
def test_gelu_matches_exact_float64(activations, n):
    x = (np.random.default_rng(n).standard_normal(n) * 4).astype(np.float32)
    out = _cpu_native.gelu(x)
    assert out.dtype == np.float32 and out.shape == x.shape
    # relative, but absolute (scaled by |x|) in the negative tail, where 1 + erf cancels
    assert (np.abs(out - _gelu64(x)) / (1 + np.abs(x))).max() <= 3e-7


@pytest.mark.parametrize("n", SIZES)
def test_gelu_backward_matches_exact_float64(activations, n):
    rng = np.random.default_rng(n + 1)
    x = (rng.standard_normal(n) * 4).astype(np.float32)
    g = rng.standard_normal(n).astype(np.float32)
    out = _cpu_native.gelu_backward(g, x)
    np.testing.assert_allclose(out, g * _gelu_slope64(x), rtol=3e-6, atol=2e-6 * np.abs(g).max())


def test_gelu_special_values_agree_with_the_numpy_kernel(activations):
    special = np.array([np.nan, np.inf, -np.inf, 0.0, -0.0, 1e-30, -1e-30, 30.0, -30.0, 3.9, -3.9,
                        88.0, -88.0, 1e30, -1e30], dtype=np.float32)
    x = np.resize(special, 2048)  # large enough for the native path
    numpy_gelu = pb.get_op("gelu").generic(np)
    numpy_slope = pb.get_op("gelu_backward").generic(np)
    with np.errstate(all="ignore"):
        g = np.ones_like(x)
        pairs = [(_cpu_native.gelu(x), numpy_gelu(x)), (_cpu_native.gelu_backward(g, x),
                                                        numpy_slope(g, x))]
    for got, want in pairs:
        # C rounds erf32's Horner steps once (fused multiply-adds), NumPy twice: they agree to
        # erf32's absolute error (a few 1e-7), times |x| where GELU's tail cancels
        assert ((np.isnan(got) == np.isnan(want)).all() and (got[np.isinf(want)]
                                                             == want[np.isinf(want)]).all())
        finite = np.isfinite(want)
        error = np.abs(got[finite].astype(np.float64) - want[finite])
        assert (error <= 1e-6 * np.abs(want[finite]) + 5e-7 * (1 + np.abs(x[finite]))).all()
        tiny = finite & (np.abs(x) < 1e-20)
        assert (got[tiny] == want[tiny]).all()  # 0, -0 and +-1e-30 exactly: x / 2


def test_threaded_and_single_thread_results_are_identical(activations):
    x = np.random.default_rng(5).standard_normal(1 << 20).astype(np.float32)
    before = _cpu_parallel.get_num_threads()
    try:
        _cpu_parallel.set_num_threads(2)
        threaded = _cpu_native.gelu(x)
        _cpu_parallel.set_num_threads(1)
        single = _cpu_native.gelu(x)
    finally:
        _cpu_parallel.set_num_threads(before)
    np.testing.assert_array_equal(threaded, single)


def test_the_op_runs_the_native_kernel_and_its_gradient(activations):
    rng = np.random.default_rng(7)
    a = rng.standard_normal((64, 300)).astype(np.float32)
    g = rng.standard_normal((64, 300)).astype(np.float32)
    x = pb.tensor(a, requires_grad=True)
    y = pb.gelu(x)
    y.backward(pb.tensor(g))
    np.testing.assert_array_equal(y.detach().numpy(), _cpu_native.gelu(a))
    np.testing.assert_array_equal(x.grad.numpy(), _cpu_native.gelu_backward(g, a))


def test_inputs_the_native_kernel_does_not_cover_take_the_numpy_kernel(activations):
    rng = np.random.default_rng(8)
    a64 = rng.standard_normal(4096)
    assert _cpu_native.gelu(a64) is NotImplemented
    np.testing.assert_allclose(pb.gelu(pb.tensor(a64)).numpy(), _gelu64(a64), rtol=1e-12)
    strided = rng.standard_normal((4096, 2)).astype(np.float32)[:, 0]
    # strided (and broadcast) inputs are copied once and run natively
    np.testing.assert_array_equal(_cpu_native.gelu(strided), _cpu_native.gelu(strided.copy()))
    g = np.broadcast_to(np.float32(2.0), strided.shape)  # sum's gradient is a broadcast
    np.testing.assert_array_equal(_cpu_native.gelu_backward(g, strided),
                                  _cpu_native.gelu_backward(g.copy(), strided.copy()))
    assert _cpu_native.gelu(strided[:100].copy()) is NotImplemented  # small: NumPy's
    assert _cpu_native.gelu(strided.copy(), approximate="tanh") is NotImplemented
    np.testing.assert_allclose(pb.gelu(pb.tensor(strided)).numpy(), _gelu64(strided), rtol=3e-6,
                               atol=1e-6)


def _run(code: str, **env: str) -> str:
    done = subprocess.run([sys.executable, "-c", code], env={**os.environ, **env},
                          capture_output=True, text=True, check=True)
    return done.stdout


def test_pullback_native_0_turns_native_kernels_off(tmp_path):
    code = ("import numpy as np, pullback as pb, pullback.native as n\n"
            "x = np.linspace(-5, 5, 4096, dtype=np.float32)\n"
            "y = pb.gelu(pb.tensor(x)).numpy()\n"
            "print(n.status()['activations']); print(float(y[0]), float(y[-1]))")
    out = _run(code, PULLBACK_NATIVE="0", PULLBACK_CACHE_DIR=str(tmp_path))
    status, values = out.splitlines()
    assert status == "off (PULLBACK_NATIVE=0)"
    assert not (tmp_path / "native").exists()
    first, last = map(float, values.split())
    assert first == pytest.approx(_gelu64(np.float32([-5.0]))[0], abs=1e-6)
    assert last == pytest.approx(5.0, rel=1e-6)


def test_without_a_compiler_the_numpy_kernels_run(monkeypatch, tmp_path):
    source = tmp_path / "k.c"
    source.write_text("void f(void) {}\n")
    monkeypatch.setenv("CC", str(tmp_path / "no-such-compiler"))
    assert native.load("test_no_compiler", source) is None
    assert "no C compiler" in native.status()["test_no_compiler"]


def test_a_failed_build_warns_once_and_names_the_error(monkeypatch, tmp_path):
    if native._compiler_version(os.environ.get("CC", "cc")) is None:
        pytest.skip("no C compiler here")
    monkeypatch.setenv("PULLBACK_CACHE_DIR", str(tmp_path / "cache"))
    source = tmp_path / "broken.c"
    source.write_text("void f(void) { this is not C }\n")
    with pytest.warns(RuntimeWarning, match="'test_broken' did not build"):
        assert native.load("test_broken", source) is None
    assert native.status()["test_broken"].startswith("build failed")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert native.load("test_broken", source) is None  # remembered: no second warning
    assert list((tmp_path / "cache" / "native").iterdir()) == []  # no partial file left


def test_builds_are_cached_across_processes_and_keyed_by_source(tmp_path):
    if native._compiler_version(os.environ.get("CC", "cc")) is None:
        pytest.skip("no C compiler here")
    source = tmp_path / "k.c"
    source.write_text("#include <stdint.h>\n"
                      "void twice(int64_t lo, int64_t hi, const float *x, float *y) {\n"
                      "    for (int64_t i = lo; i < hi; i++) y[i] = 2 * x[i];\n}\n")
    code = ("import numpy as np, pullback.native as n, sys\n"
            f"lib = n.load('k', {str(source)!r})\n"
            "f = n.declare(lib, 'twice', 2)\n"
            "x = np.arange(5, dtype=np.float32); y = np.empty_like(x)\n"
            "f(0, 5, x.ctypes.data, y.ctypes.data)\n"
            "print(n.status()['k']); print(y.tolist())")
    env = {"PULLBACK_CACHE_DIR": str(tmp_path / "cache")}
    first = _run(code, **env).splitlines()
    assert first[1] == "[0.0, 2.0, 4.0, 6.0, 8.0]"
    built = list((tmp_path / "cache" / "native").glob("k-*.so"))
    assert len(built) == 1 and first[0] == f"built {built[0]}"
    stamp = built[0].stat().st_mtime_ns
    assert _run(code, **env).splitlines() == first  # the same file, not rebuilt
    assert built[0].stat().st_mtime_ns == stamp
    source.write_text(source.read_text().replace("2 * x[i]", "3 * x[i]"))
    third = _run(code, **env).splitlines()
    assert third[1] == "[0.0, 3.0, 6.0, 9.0, 12.0]"
    assert len(list((tmp_path / "cache" / "native").glob("k-*.so"))) == 2


def test_relu_backward_native_matches_where(activations):
    rng = np.random.default_rng(9)
    y = np.maximum(rng.standard_normal((64, 8, 26, 26)).astype(np.float32), 0)
    y[0, 0, 0, :4] = [np.nan, -0.0, 1e-45, -np.inf]
    g = rng.standard_normal(y.shape).astype(np.float32)
    g[0, 0, 1, :2] = [np.inf, np.nan]  # where y is 0: the result is 0, not inf * 0
    with np.errstate(invalid="ignore"):
        expected = np.where(y > 0, g, np.float32(0))
    np.testing.assert_array_equal(_cpu_native.relu_backward(g, y), expected)
    x = pb.tensor(rng.standard_normal(y.shape).astype(np.float32), requires_grad=True)
    pb.relu(x).backward(pb.tensor(g))
    np.testing.assert_array_equal(x.grad.numpy(), np.where(x.detach().numpy() > 0, g, 0))


def test_an_unwritable_cache_folder_means_numpy_kernels_not_an_error(monkeypatch, tmp_path):
    if native._compiler_version(os.environ.get("CC", "cc")) is None:
        pytest.skip("no C compiler here")
    blocker = tmp_path / "not-a-folder"
    blocker.write_text("a file where the cache folder should be")
    monkeypatch.setenv("PULLBACK_CACHE_DIR", str(blocker))
    source = tmp_path / "k.c"
    source.write_text("void f(void) {}\n")
    with pytest.warns(RuntimeWarning, match="'test_unwritable' did not build"):
        assert native.load("test_unwritable", source) is None
    assert native.status()["test_unwritable"].startswith("build failed")


@pytest.fixture(scope="module")
def reductions():
    if _cpu_native._function("column_sums_f32", 2, "reductions", 1) is None:
        pytest.skip(f"native kernels unavailable here: {native.status().get('reductions')}")


@pytest.mark.parametrize("shape", [(65536, 16), (4096, 2), (1031, 3), (2, 4099), (600, 4, 3),
                                   (70000, 7), (64, 1000)])
def test_leading_axis_sum_is_bitwise_numpys(reductions, shape):
    rng = np.random.default_rng(sum(shape))
    x = (rng.standard_normal(shape) * rng.exponential(10.0, shape)).astype(np.float32)
    x.reshape(-1)[:6] = [np.nan, np.inf, -np.inf, -0.0, 3e38, 3e38]  # NaN, overflow, signed 0
    with np.errstate(all="ignore"):
        want = x.sum(axis=0)
        for axis in (0, -len(shape), (0,)):
            np.testing.assert_array_equal(_cpu_native.sum_leading_axis(x, axis=axis), want)
        np.testing.assert_array_equal(_cpu_native.sum_leading_axis(x, axis=0, keepdims=True),
                                      x.sum(axis=0, keepdims=True))
    zeros = -np.zeros((2048, 2), np.float32)
    assert np.signbit(_cpu_native.sum_leading_axis(zeros, axis=0)).all()  # -0 + -0 is -0


def test_leading_axis_sum_covers_only_what_it_computes_in_numpys_order(reductions):
    rng = np.random.default_rng(3)
    x = rng.standard_normal((4096, 8)).astype(np.float32)
    for args, attrs in [((x,), {}), ((x,), {"axis": 1}), ((x,), {"axis": (0, 1)}),
                        ((x.astype(np.float64),), {"axis": 0}), ((x[:, :1].copy(),), {"axis": 0}),
                        ((x.T,), {"axis": 0}), ((x[:100],), {"axis": 0}), ((x[:1],), {"axis": 0}),
                        ((x[::2],), {"axis": 0}), ((x.reshape(-1),), {"axis": 0})]:
        assert _cpu_native.sum_leading_axis(*args, **attrs) is NotImplemented
    # through the op, with the gradient a bias gets
    t = pb.tensor(x, requires_grad=True)
    s = t.sum(0)
    np.testing.assert_array_equal(s.detach().numpy(), x.sum(0))
    s.backward(pb.tensor(np.arange(8, dtype=np.float32)))
    np.testing.assert_array_equal(t.grad.numpy(), np.broadcast_to(np.arange(8), x.shape))


def _sorted_row_sums(g, idx, shape):
    """The NumPy kernel the native one replaces (stable sort, add.reduceat)."""
    return pb.get_op("take_scatter_add").generic(np)(g, idx, axis=0, shape=shape)


@pytest.mark.parametrize("idx_shape,rows,trailing", [((2048,), 65, (128,)), ((32, 64), 65, (128,)),
                                                     ((1031,), 7, (3, 2)), ((4, 300), 1000, (1,)),
                                                     ((20000,), 2, (1,))],
                         ids=str)
def test_embedding_gradient_sums_rows_as_accurately_as_numpys_kernel(reductions, idx_shape, rows,
                                                                   trailing):
    """Pairwise sums, as NumPy's: within float32 rounding of the exact (float64) sums, and no
    further from them than NumPy's kernel by more than that; a lone -0.0 stays -0.0, NaN and
    infinity land in their rows, rows no index names are +0.0."""
    rng = np.random.default_rng(rows)
    idx = rng.integers(-rows, rows, idx_shape)  # repeats; -1 and rows - 1 name one row
    g = rng.standard_normal(idx_shape + trailing).astype(np.float32)
    shape = (rows,) + trailing
    exact = np.zeros(shape)
    np.add.at(exact, (idx,), g.astype(np.float64))
    magnitude = np.zeros(shape)
    np.add.at(magnitude, (idx,), np.abs(g.astype(np.float64)))
    got = _cpu_native.take_scatter_add(g, idx, axis=0, shape=shape)
    strided = _cpu_native.take_scatter_add(np.asfortranarray(g), idx, axis=0, shape=shape)
    numpys = np.abs(_sorted_row_sums(g, idx, shape) - exact)
    assert got.dtype == np.float32 and got.shape == shape
    np.testing.assert_array_equal(strided, got)
    assert (np.abs(got - exact) <= numpys + 2e-7 * magnitude).all()
    assert (np.abs(got - exact) <= 1e-6 * magnitude).all()
    unseen = np.setdiff1d(np.arange(rows), np.where(idx < 0, idx + rows, idx))
    assert (got[unseen] == 0).all() and not np.signbit(got[unseen]).any()
    special = g.copy()
    flat_idx = np.where(idx < 0, idx + rows, idx).reshape(-1)
    lone = np.flatnonzero(np.bincount(flat_idx, minlength=rows) == 1)
    with np.errstate(all="ignore"):
        special.reshape(flat_idx.size, -1)[0] = np.nan
        special.reshape(flat_idx.size, -1)[1] = np.inf
        out = _cpu_native.take_scatter_add(special, idx, axis=0, shape=shape)
    assert np.isnan(out[flat_idx[0]]).all()
    if flat_idx[1] != flat_idx[0]:
        assert (out[flat_idx[1]] == np.inf).all()
    if lone.size:  # the one row of a bucket is copied, not added to 0
        special = g.copy()
        special.reshape(flat_idx.size, -1)[np.flatnonzero(flat_idx == lone[0])[0]] = -0.0
        out = _cpu_native.take_scatter_add(special, idx, axis=0, shape=shape)
        assert np.signbit(out[lone[0]]).all()


def test_embedding_gradient_kernel_covers_only_what_it_computes(reductions):
    rng = np.random.default_rng(5)
    g = rng.standard_normal((2048, 16)).astype(np.float32)
    idx = rng.integers(0, 65, 2048)
    for args, attrs in [((g.astype(np.float64), idx), {"axis": 0, "shape": (65, 16)}),
                        ((g, idx), {"axis": 1, "shape": (2048, 65)}),
                        ((g, idx.astype(np.float32)), {"axis": 0, "shape": (65, 16)}),
                        ((g, idx[:100]), {"axis": 0, "shape": (65, 16)}),
                        ((g, idx), {"axis": 0, "shape": (65, 8)}),
                        ((g[:10], idx[:10]), {"axis": 0, "shape": (65, 16)}),  # small: NumPy's
                        ((g, idx + 65), {"axis": 0, "shape": (65, 16)}),  # out of range
                        ((g, idx - 130), {"axis": 0, "shape": (65, 16)})]:
        assert _cpu_native.take_scatter_add(*args, **attrs) is NotImplemented
    # out of range through the op: NumPy's kernel raises and names it
    with pytest.raises(IndexError):
        pb.get_op("take_scatter_add").kernel_for("cpu")(g, idx + 65, axis=0, shape=(65, 16))


def _layouts() -> list[np.ndarray]:
    base = np.arange(60, dtype=np.float32).reshape(3, 4, 5)
    return [base, base[1:], base[:, ::2, 1:], base.T, np.empty(0), np.float64(2.0) * np.ones(1),
            np.broadcast_to(np.ones(3), (4, 3)), np.ascontiguousarray(base)[..., 3:]]


@pytest.mark.parametrize("array", _layouts(), ids=lambda a: f"{a.shape}-{a.strides}")
def test_address_is_the_arrays_data_address(array):
    """native.address reads the data address from the array object: for arrays, views at an
    offset, transposes, broadcasts and empty arrays it is what ctypes says."""
    assert native.address(array) == array.ctypes.data


def test_address_of_a_subclass_asks_ctypes():
    class Tagged(np.ndarray):
        pass

    tagged = np.arange(6.0).view(Tagged)[2:]
    assert native.address(tagged) == tagged.ctypes.data


def test_address_reads_the_field_where_numpy_keeps_it():
    """The probe found the field (CPython with NumPy); if it had not, address would still
    answer through ctypes, only slower."""
    assert native._DATA_FIELD is not None
    a = np.zeros(4)
    assert native._read_address(id(a) + native._DATA_FIELD).value == a.ctypes.data


# -- a cache folder other users can write to (docs/security.md) ------------------------------

_TWICE = ("#include <stdint.h>\n"
          "void twice(int64_t lo, int64_t hi, const float *x, float *y) {\n"
          "    for (int64_t i = lo; i < hi; i++) y[i] = 2 * x[i];\n}\n")
_LOAD_TWICE = ("import numpy as np, pullback.native as n\n"
               "lib = n.load('k', {source!r})\n"
               "f = n.declare(lib, 'twice', 2)\n"
               "x = np.arange(5, dtype=np.float32); y = np.empty_like(x)\n"
               "f(0, 5, x.ctypes.data, y.ctypes.data)\n"
               "print(n.status()['k']); print(y.tolist())")


def _planted_library(tmp_path, marker):
    """A library that records it was loaded (a constructor writes ``marker``)."""
    evil = tmp_path / "evil.c"
    evil.write_text("#include <stdio.h>\n#include <stdint.h>\n"
                    "__attribute__((constructor)) static void planted(void) {\n"
                    f"    FILE *f = fopen(\"{marker}\", \"w\"); if (f) {{ fputs(\"ran\", f); "
                    "fclose(f); }\n}\n"
                    "void twice(int64_t lo, int64_t hi, const float *x, float *y) {\n"
                    "    for (int64_t i = lo; i < hi; i++) y[i] = 666;\n}\n")
    out = tmp_path / "evil.so"
    subprocess.run([os.environ.get("CC", "cc"), "-shared", "-fPIC", "-o", str(out), str(evil)],
                   check=True)
    return out


@pytest.mark.parametrize("how", ["writable by others", "owned by another user"])
def test_a_library_planted_in_a_shared_cache_is_never_loaded(tmp_path, how):
    if native._compiler_version(os.environ.get("CC", "cc")) is None:
        pytest.skip("no C compiler here")
    if how == "owned by another user" and os.geteuid() != 0:
        pytest.skip("making a folder of another user needs root")
    source = tmp_path / "k.c"
    source.write_text(_TWICE)
    code = _LOAD_TWICE.format(source=str(source))
    # The name pullback computes for this build, from a build in a cache of our own.
    mine = _run(code, PULLBACK_CACHE_DIR=str(tmp_path / "mine")).splitlines()[0]
    name = os.path.basename(mine.split()[1])
    # Another user made the shared cache's native/ first and put a library under that name.
    shared = tmp_path / "shared"
    (shared / "native").mkdir(parents=True)
    marker = tmp_path / "planted-code-ran"
    planted = shared / "native" / name
    planted.write_bytes(_planted_library(tmp_path, marker).read_bytes())
    if how == "writable by others":
        os.chmod(shared, 0o777)
        os.chmod(shared / "native", 0o777)
    else:
        os.chown(planted, 65534, 65534)
        os.chown(shared / "native", 65534, 65534)
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          env={**os.environ, "PULLBACK_CACHE_DIR": str(shared)}, timeout=300)
    assert done.returncode == 0, done.stderr
    assert not marker.exists(), "the planted library was loaded"
    status, values = done.stdout.splitlines()
    assert values == "[0.0, 2.0, 4.0, 6.0, 8.0]"  # built privately, and it works
    assert "(privately:" in status and str(shared / "native") in status, status
    assert "not safe to load libraries from" in done.stderr
    if how == "writable by others":
        assert "drwxrwxrwx" in status, status
    else:
        assert "uid 65534" in status, status


def test_a_library_others_can_write_in_our_own_cache_is_rebuilt_privately(tmp_path):
    if native._compiler_version(os.environ.get("CC", "cc")) is None:
        pytest.skip("no C compiler here")
    source = tmp_path / "k.c"
    source.write_text(_TWICE)
    code = _LOAD_TWICE.format(source=str(source))
    env = {"PULLBACK_CACHE_DIR": str(tmp_path / "cache")}
    built = _run(code, **env).splitlines()[0].split()[1]
    marker = tmp_path / "planted-code-ran"
    os.chmod(built, 0o666)
    with open(built, "wb") as f:  # what someone else could then have written
        f.write(_planted_library(tmp_path, marker).read_bytes())
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          env={**os.environ, **env}, timeout=300)
    assert done.returncode == 0, done.stderr
    assert not marker.exists()
    status, values = done.stdout.splitlines()
    assert values == "[0.0, 2.0, 4.0, 6.0, 8.0]" and "(privately:" in status, status


def test_the_default_cache_is_used_as_it_is(tmp_path):
    # a cache folder of this user, mode 0755 (not writable by others), holds
    if native._compiler_version(os.environ.get("CC", "cc")) is None:
        pytest.skip("no C compiler here")
    source = tmp_path / "k.c"
    source.write_text(_TWICE)
    cache = tmp_path / "home" / ".cache" / "pullback"
    (cache / "native").mkdir(parents=True, mode=0o755)
    done = subprocess.run([sys.executable, "-c", _LOAD_TWICE.format(source=str(source))],
                          capture_output=True, text=True, timeout=300,
                          env={**os.environ, "XDG_CACHE_HOME": str(cache.parent),
                               "PULLBACK_CACHE_DIR": ""})
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[0].startswith(f"built {cache / 'native'}/k-")
    assert "privately" not in done.stdout and "not safe" not in done.stderr
