"""What scripts ported from PyTorch by changing ``import torch`` rely on, checked against torch:
formatting 0-d tensors, ``copy.deepcopy``, ``range``/NumPy indices, silent NumPy warnings,
``randint``'s signatures, the legacy constructors, ``pullback.accelerator``, ``pullback.cuda``
without pullback-cuda, subpackages as attributes, and save/load with file objects."""

from __future__ import annotations

import copy
import io
import subprocess
import sys
import types
from typing import Any

import numpy as np
import pytest

import pullback as pb
from pullback.errors import AutogradError, CheckpointError
from pullback.hookspecs import hookimpl

torch = pytest.importorskip("torch", reason="PyTorch is the oracle of the porting behaviours")


# -- format ---------------------------------------------------------------------------------------

@pytest.mark.parametrize("value, spec", [
    (3.14159, ".2f"), (3.14159, ".3e"), (2.5, ""), (-1.0, "+.1f"), (7, "d"), (7, ">5"),
    (True, ""), (1e-8, "g"), (0.25, ".1%"),
])
def test_a_0d_tensor_formats_as_its_number(value: Any, spec: str) -> None:
    ours, theirs = pb.tensor(value), torch.tensor(value)
    assert format(ours, spec) == format(theirs, spec)
    assert f"{ours:{spec}}" == f"{theirs:{spec}}"


def test_other_tensors_take_only_the_empty_spec_as_torch() -> None:
    assert format(pb.tensor([1.0, 2.0]), "") == str(pb.tensor([1.0, 2.0]))
    with pytest.raises(TypeError):
        format(torch.tensor([1.0, 2.0]), ".2f")
    with pytest.raises(TypeError):
        format(pb.tensor([1.0, 2.0]), ".2f")


# -- deepcopy -------------------------------------------------------------------------------------

def test_deepcopy_of_a_leaf_copies_memory_requires_grad_and_grad() -> None:
    for lib in (pb, torch):
        x = lib.tensor([1.0, 2.0, 3.0], requires_grad=True)
        (x * x).sum().backward()
        y = copy.deepcopy(x)
        assert y is not x and y.requires_grad and y.is_leaf
        np.testing.assert_array_equal(np.asarray(y.detach()), [1.0, 2.0, 3.0])
        np.testing.assert_array_equal(np.asarray(y.grad), [2.0, 4.0, 6.0])
        assert y.grad is not x.grad
        with lib.no_grad():
            y.mul_(0)
        assert float(x.detach().sum()) == 6.0  # the memory is the copy's own


def test_deepcopy_keeps_tensors_shared_inside_a_structure() -> None:
    for lib in (pb, torch):
        x = lib.ones(2)
        copied = copy.deepcopy({"a": x, "b": [x, lib.zeros(1)]})
        assert copied["a"] is copied["b"][0] and copied["a"] is not x


def test_deepcopy_refuses_a_non_leaf_as_torch() -> None:
    with pytest.raises(RuntimeError):
        copy.deepcopy(torch.ones(2, requires_grad=True) * 2)
    with pytest.raises(AutogradError, match="leaf"):
        copy.deepcopy(pb.ones(2, requires_grad=True) * 2)


# -- indices --------------------------------------------------------------------------------------

@pytest.mark.parametrize("key", [
    range(1, 4), range(0), (range(2), slice(None)), (slice(None), range(3, 0, -1)),
    np.array([2, 0]), np.array([[0, 1], [1, 0]]), np.arange(5) % 2 == 0, (0, np.array([1, 2])),
], ids=repr)
def test_ranges_and_numpy_arrays_index_as_in_torch(key: Any) -> None:
    values = np.arange(20.0).reshape(5, 4)
    torch_key = tuple(torch.as_tensor(k) if isinstance(k, np.ndarray) else k
                      for k in (key if isinstance(key, tuple) else (key,)))
    expected = torch.tensor(values)[torch_key].numpy()
    np.testing.assert_array_equal(pb.tensor(values)[key].numpy(), expected)


def test_range_assignment() -> None:
    ours, theirs = pb.zeros(5), torch.zeros(5)
    ours[range(1, 3)] = 1.0
    theirs[range(1, 3)] = 1.0
    np.testing.assert_array_equal(ours.numpy(), theirs.numpy())


# -- NumPy's warnings -----------------------------------------------------------------------------

_WARNINGS_SCRIPT = """
import warnings
import numpy as np
import pullback as pb
import torch
with warnings.catch_warnings(record=True) as got:
    ours = [pb.log(pb.tensor([0.0])), pb.tensor([1.0]) / 0.0, pb.tensor([0.0]) / 0.0,
            pb.exp(pb.tensor([1000.0])), pb.sqrt(pb.tensor([-1.0]))]
    theirs = [torch.log(torch.tensor([0.0])), torch.tensor([1.0]) / 0.0,
              torch.tensor([0.0]) / 0.0, torch.exp(torch.tensor([1000.0])),
              torch.sqrt(torch.tensor([-1.0]))]
    print(len(got))
    np.log(np.zeros(1))  # NumPy called by the user is not pullback's to silence
    print(len(got), got[-1].message)
for a, b in zip(ours, theirs):
    np.testing.assert_array_equal(a.numpy(), b.numpy())
"""


def test_kernels_stay_silent_where_torch_is_and_user_numpy_still_warns() -> None:
    # In a fresh interpreter, as a script imports pullback: pytest imports it while collecting,
    # inside a warnings context that drops filters added meanwhile.
    result = subprocess.run([sys.executable, "-c", _WARNINGS_SCRIPT], capture_output=True,
                            text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == ["0", "1 divide by zero encountered in log"]


# -- randint --------------------------------------------------------------------------------------

@pytest.mark.parametrize("args, kwargs", [
    ((10, (3,)), {}), ((10, (2, 3)), {}), ((10,), {"size": (4,)}), ((2, 10, (3,)), {}),
    ((2, 10), {"size": (5, 1)}), ((5, 6, (4,)), {}), ((10, [2, 2]), {}),
], ids=repr)
def test_randint_takes_torchs_signatures(args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
    theirs = torch.randint(*args, **kwargs)
    ours = pb.randint(*args, **kwargs)
    assert tuple(ours.shape) == tuple(theirs.shape) and ours.dtype == np.int64
    low, high = (0, args[0]) if len(args) == 1 or not isinstance(args[1], int) else args[:2]
    assert ours.numpy().min() >= low and ours.numpy().max() < high


def test_randint_high_and_size_draws_the_whole_range() -> None:
    pb.manual_seed(0)
    assert set(pb.randint(3, (200,)).numpy().tolist()) == {0, 1, 2}


# -- Generator ------------------------------------------------------------------------------------

def test_generator_seeds_as_torchs() -> None:
    for lib in (pb, torch):
        g = lib.Generator()
        assert g.manual_seed(5) is g and g.initial_seed() == 5
        assert lib.Generator().initial_seed() == torch.Generator().initial_seed()
        first = lib.randperm(8, generator=g).tolist()
        state = g.get_state()
        second = lib.randperm(8, generator=g).tolist()
        g.set_state(state)
        assert lib.randperm(8, generator=g).tolist() == second
        assert lib.randperm(8, generator=g.manual_seed(5)).tolist() == first
        seed = g.seed()
        assert g.initial_seed() == seed
    with pytest.raises(ValueError):
        pb.Generator("cuda")


# -- legacy constructors --------------------------------------------------------------------------

@pytest.mark.parametrize("name", ["FloatTensor", "DoubleTensor", "LongTensor", "IntTensor",
                                  "BoolTensor", "ByteTensor"])
def test_legacy_constructors_make_torchs_dtypes(name: str) -> None:
    ours_cls, theirs_cls = getattr(pb, name), getattr(torch, name)
    for args in (([1, 0, 2],), ([[1.0, 0.0]],), (2, 3), ()):
        ours, theirs = ours_cls(*args), theirs_cls(*args)
        assert tuple(ours.shape) == tuple(theirs.shape)
        assert str(ours.dtype) == str(theirs.dtype).removeprefix("torch.")
        if args and not isinstance(args[0], int):
            np.testing.assert_array_equal(ours.numpy(), theirs.numpy())
        assert isinstance(ours, ours_cls) and isinstance(theirs, theirs_cls)
    other = "LongTensor" if name != "LongTensor" else "FloatTensor"
    assert not isinstance(ours_cls([1]), getattr(pb, other))
    assert not isinstance(theirs_cls([1]), getattr(torch, other))


# -- accelerator and cuda -------------------------------------------------------------------------

def test_accelerator_with_only_the_cpu() -> None:
    if pb.accelerator.is_available():
        pytest.skip("an accelerator is usable on this machine")
    assert pb.accelerator.current_accelerator(check_available=True) is None
    assert pb.accelerator.device_count() == 0
    pb.accelerator.synchronize()  # a no-op, not an error


def test_accelerator_reports_a_plugins_backend(throwaway_plugin: Any,
                                               numpy_backend: Any) -> None:
    backend = numpy_backend("accelnp", count=3)
    plugin = types.ModuleType("accelnp_plugin")
    plugin.pullback_hook_api = "1.0"  # type: ignore[attr-defined]
    plugin.register_backends = hookimpl(lambda register: register(backend))  # type: ignore
    throwaway_plugin(plugin, "accelnp", "pullback-accelnp")
    if pb.is_available("cuda"):
        pytest.skip("a real accelerator comes first on this machine")
    assert pb.accelerator.is_available()
    assert pb.accelerator.current_accelerator(check_available=True) == pb.device("accelnp")
    assert pb.accelerator.device_count() == 3


_WITHOUT_PULLBACK_CUDA = """
    import pullback as torch
    assert torch.cuda.is_available() is False and torch.cuda.device_count() == 0
    torch.cuda.manual_seed(0)
    torch.cuda.manual_seed_all(0)
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    print(device, "|", torch.cuda.unavailable_reason())
    try:
        torch.cuda.synchronize()
    except AssertionError as exc:  # PyTorch's class without CUDA (and a RuntimeError)
        print(exc)
"""


def test_pullback_cuda_answers_false_without_pullback_cuda(without_pullback_cuda) -> None:
    result = without_pullback_cuda(_WITHOUT_PULLBACK_CUDA)
    assert result.returncode == 0, result.stderr
    first, second = result.stdout.strip().splitlines()
    assert first.startswith("cpu | pullback.cuda is provided by pullback-cuda, which is not "
                            "installed: pip install")
    assert second.startswith("pullback.cuda.synchronize needs a CUDA device, and none is "
                             "available: pullback.cuda is provided by pullback-cuda")


def test_subpackages_are_attributes_of_pullback() -> None:
    pytest.importorskip("pullback.optim")
    code = "import pullback as torch\nprint(torch.optim.SGD.__module__, hasattr(torch, 'nope'))"
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                            timeout=120)
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["pullback.optim.sgd", "False"]


# -- save and load with file objects --------------------------------------------------------------

def test_save_and_load_through_file_objects(tmp_path: Any) -> None:
    state = {"w": pb.randn(3, 2), "step": 4, "nested": [pb.arange(3), (1.5, None)]}
    buffer = io.BytesIO()
    pb.save(state, buffer)
    buffer.seek(0)
    back = pb.load(buffer)
    np.testing.assert_array_equal(back["w"].numpy(), state["w"].numpy())
    assert back["step"] == 4 and back["nested"][1] == (1.5, None)
    with open(tmp_path / "ckpt.safetensors", "wb") as f:
        pb.save(state, f)
    with open(tmp_path / "ckpt.safetensors", "rb") as f:
        np.testing.assert_array_equal(pb.load(f)["nested"][0].numpy(), [0, 1, 2])
    assert pb.load(tmp_path / "ckpt.safetensors")["step"] == 4  # the same bytes as a path


def test_a_damaged_file_object_is_a_checkpoint_error() -> None:
    with pytest.raises(CheckpointError, match="BytesIO.*truncated"):
        pb.load(io.BytesIO(b"abc"))


def test_a_whole_pullback_layer_round_trips_through_a_file_object() -> None:
    nn = pytest.importorskip("pullback.nn")
    layer, buffer = nn.Linear(2, 3), io.BytesIO()
    pb.save(layer, buffer)
    buffer.seek(0)
    back = pb.load(buffer)  # weights_only by default: pullback.nn's layers are allowed
    assert type(back) is nn.Linear and back is not layer
    np.testing.assert_array_equal(back.weight.detach().numpy(), layer.weight.detach().numpy())


# -- what device-selection and seeding boilerplate asks -------------------------------------------

def test_backend_switches_and_queries_as_torch() -> None:
    for lib in (pb, torch):
        lib.backends.cudnn.benchmark = True
        lib.backends.cudnn.deterministic = True
        assert lib.backends.cudnn.benchmark and lib.backends.cudnn.deterministic
        lib.backends.cudnn.benchmark = False
        lib.backends.cudnn.deterministic = False
    assert pb.backends.mps.is_available() is torch.backends.mps.is_available() is False
    assert pb.backends.mps.is_built() is False
    assert pb.backends.cudnn.is_available() is False


def test_thread_count_and_cuda_seeding_calls_run() -> None:
    previous = pb.get_num_threads()
    pb.set_num_threads(1)
    assert pb.get_num_threads() == 1
    pb.set_num_threads(previous)
    assert pb.get_num_threads() == previous
    pb.cuda.manual_seed(0)  # a no-op without a GPU, as torch.cuda.manual_seed
    pb.cuda.manual_seed_all(0)


def test_load_takes_weights_only(tmp_path: Any) -> None:
    pb.save({"w": pb.ones(2)}, tmp_path / "w.safetensors")
    for flag in (True, False, None):
        loaded = pb.load(tmp_path / "w.safetensors", map_location="cpu", weights_only=flag)
        np.testing.assert_array_equal(loaded["w"].numpy(), [1.0, 1.0])


# -- questions about tensors and dtypes -------------------------------------------------------------

@pytest.mark.parametrize("name", ["float32", "float64", "float16", "bfloat16"])
def test_finfo_matches_torch(name: str) -> None:
    ours, theirs = pb.finfo(getattr(pb, name)), torch.finfo(getattr(torch, name))
    for field in ("bits", "eps", "max", "min", "tiny", "resolution"):
        assert float(getattr(ours, field)) == float(getattr(theirs, field)), field
    assert float(pb.finfo().eps) == torch.finfo().eps


@pytest.mark.parametrize("name", ["int8", "int16", "int32", "int64", "uint8"])
def test_iinfo_matches_torch(name: str) -> None:
    ours, theirs = pb.iinfo(getattr(pb, name)), torch.iinfo(getattr(torch, name))
    assert (ours.bits, ours.min, ours.max) == (theirs.bits, theirs.min, theirs.max)


def test_is_tensor_numel_size_and_dtype_as_torch() -> None:
    for lib in (pb, torch):
        x = lib.zeros(2, 3)
        assert lib.is_tensor(x) and not lib.is_tensor([1.0]) and not lib.is_tensor(np.ones(2))
        assert lib.numel(x) == 6
        assert lib.Size((2, 3)) == (2, 3) and lib.Size((2, 3)).numel() == 6
        assert isinstance(x.dtype, lib.dtype)


def test_rng_state_round_trip_as_torch() -> None:
    for lib in (pb, torch):
        lib.manual_seed(3)
        state = lib.get_rng_state()
        first = lib.rand(4).tolist()
        lib.set_rng_state(state)
        assert lib.rand(4).tolist() == first


LEGACY_TENSOR_CALLS = ["()", "(3, 4)", "(5,)", "([1, 2])", "([[1, 2], [3, 4]])",
                       "(np.array([1, 2]))", "(np.array([1.5, 2.0]))", "(M.Size([2, 3]))",
                       "(M.tensor([1, 2]))", "(M.tensor([1.0, 2.0], dtype=M.float64))"]


@pytest.mark.parametrize("call", LEGACY_TENSOR_CALLS)
def test_the_tensor_class_as_a_constructor_matches_torch(call: str) -> None:
    ours = eval(f"M.Tensor{call}", {"M": pb, "np": np})
    theirs = eval(f"M.Tensor{call}", {"M": torch, "np": np})
    assert ours.shape == tuple(theirs.shape)
    assert str(ours.dtype) == str(theirs.dtype).removeprefix("torch.")
    if call not in ("(3, 4)", "(5,)", "(M.Size([2, 3]))"):  # torch leaves those uninitialized
        np.testing.assert_array_equal(ours.numpy(), theirs.numpy())


def test_the_tensor_class_refuses_a_bare_number_as_torch_does() -> None:
    with pytest.raises(TypeError, match="data must be a sequence"):
        pb.Tensor(3.5)
    with pytest.raises(TypeError, match="data must be a sequence"):
        torch.Tensor(3.5)


def test_the_tensor_class_takes_pullbacks_keywords_and_refuses_others() -> None:
    assert pb.Tensor([1, 2], dtype=pb.float64, requires_grad=True).dtype == pb.float64
    with pytest.raises(TypeError, match="unexpected keyword"):
        pb.Tensor([1], colour="red")


@pytest.mark.parametrize("program", ["t = M.zeros(3); t[1].add_(5)",
                                     "t = M.zeros(2, 3); t[1, 2].fill_(7)",
                                     "t = M.zeros(2, 3); t[0][1].copy_(M.tensor(4.0))",
                                     "t = M.zeros(2, 2); v = t[1, 1]; t.add_(1); v.mul_(10)"])
def test_an_element_picked_by_integers_is_a_view_as_in_torch(program: str) -> None:
    ours, theirs = {"M": pb}, {"M": torch}
    exec(program, ours)
    exec(program, theirs)
    np.testing.assert_array_equal(ours["t"].numpy(), theirs["t"].numpy())
