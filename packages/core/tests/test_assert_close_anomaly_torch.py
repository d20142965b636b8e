"""``pullback.testing.assert_close`` and ``pullback.autograd.detect_anomaly`` /
``set_detect_anomaly`` against PyTorch's: the same verdicts, exception classes and messages
(PyTorch's default tolerances by dtype), and anomaly mode's PyTorch semantics (gradients only,
NaN only)."""

from __future__ import annotations

import warnings
from typing import Any, Callable

import pytest

import pullback as pb

torch = pytest.importorskip("torch", reason="PyTorch, the oracle, is installed for Python 3.11 only")

PAIRS: dict[str, Callable[[Any], tuple[Any, ...]]] = {
    "one_element_off": lambda L: (L.tensor([1.0, 2.0, 3.0]), L.tensor([1.0, 2.5, 3.0])),
    "within_float32_tolerance": lambda L: (L.tensor([1.0, 2.0]), L.tensor([1.0, 2.0 + 1e-6])),
    "float64_is_stricter": lambda L: (L.tensor([1.0], dtype=L.float64),
                                      L.tensor([1.0 + 1e-6], dtype=L.float64)),
    "float16_is_looser": lambda L: (L.tensor([1.0], dtype=L.float16),
                                    L.tensor([1.0005], dtype=L.float16)),
    "zero_d": lambda L: (L.tensor(1.0), L.tensor(1.5)),
    "python_floats": lambda L: (1.0, 1.5),
    "python_ints": lambda L: (3, 4),
    "integers": lambda L: (L.tensor([1, 2]), L.tensor([1, 3])),
    "bools": lambda L: (L.tensor([True]), L.tensor([False])),
    "list_item": lambda L: ([L.tensor(1.0), L.tensor(2.0)], [L.tensor(1.0), L.tensor(2.1)]),
    "dict_item": lambda L: ({"a": L.tensor(1.0)}, {"a": L.tensor(1.2)}),
    "dict_keys": lambda L: ({"a": L.tensor(1.0)}, {"b": L.tensor(1.0)}),
    "nan": lambda L: (L.tensor([float("nan")]), L.tensor([float("nan")])),
    "nan_equal": lambda L: (L.tensor([float("nan")]), L.tensor([float("nan")]), True),
    "inf": lambda L: (L.tensor([float("inf")]), L.tensor([float("inf")])),
    "two_d": lambda L: (L.tensor([[1.0, 2.0], [3.0, 4.0]]), L.tensor([[1.0, 2.0], [3.0, 4.1]])),
    "lengths": lambda L: ([1.0], [1.0, 2.0]),
    "dtypes": lambda L: (L.tensor([1.0]), L.tensor([1.0], dtype=L.float64)),
    "shapes": lambda L: (L.tensor([1.0, 2.0]), L.tensor([1.0, 2.0, 3.0])),
    "tensor_and_number": lambda L: (L.tensor([1.0]), 1.0),
}
# PyTorch prints its shapes as torch.Size([2]), pullback as (2,): the class is compared there
_CLASS_ONLY = {"shapes", "dict_keys"}


def _verdict(lib: Any, name: str, **kwargs: Any) -> str:
    args = PAIRS[name](lib)
    if len(args) == 3:
        args, kwargs = args[:2], {**kwargs, "equal_nan": args[2]}
    try:
        lib.testing.assert_close(*args, **kwargs)
    except Exception as exc:  # noqa: BLE001 - class and message are compared
        # each library names its own dtypes and tensor class
        return f"{type(exc).__name__}: {exc}".replace("torch.", "").replace("pullback.tensor.", "")
    return "ok"


@pytest.mark.parametrize("name", sorted(PAIRS))
def test_assert_close_says_what_pytorch_s_says(name):
    ours, theirs = _verdict(pb, name), _verdict(torch, name)
    if name in _CLASS_ONLY:
        assert ours.split(":")[0] == theirs.split(":")[0]
    else:
        assert ours == theirs


@pytest.mark.parametrize("kwargs", [{"rtol": 0.0, "atol": 1e-7}, {"rtol": 0.5, "atol": 0.0},
                                    {"msg": "custom"}, {"check_dtype": False}])
def test_assert_close_options_as_pytorch_s(kwargs):
    for name in ("one_element_off", "within_float32_tolerance", "dtypes"):
        assert _verdict(pb, name, **kwargs) == _verdict(torch, name, **kwargs)


def test_only_one_tolerance_is_a_value_error_as_pytorch_s():
    for lib in (pb, torch):
        with pytest.raises(ValueError, match="Both 'rtol' and 'atol'"):
            lib.testing.assert_close(lib.tensor(1.0), lib.tensor(1.0), rtol=1e-3)


# -- anomaly mode under PyTorch's names ------------------------------------------------------------

def _anomaly_run(lib: Any) -> list[str]:
    seen = []
    x = lib.tensor([0.0], requires_grad=True)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        context = lib.autograd.detect_anomaly()
    seen.append(str([w.category.__name__ for w in caught if "Anomaly" in str(w.message)]))
    with context:
        y = x / x  # a NaN in the forward is not an anomaly for PyTorch
        seen.append("forward ran")
        try:
            y.sum().backward()
        except RuntimeError:
            seen.append("backward raised RuntimeError")
    with lib.autograd.detect_anomaly():
        z = (lib.tensor([1.0], requires_grad=True) * float("inf")).sum()
        z.backward()  # an infinity is not one either
        seen.append("inf gradient passed")
    return seen


def test_detect_anomaly_checks_gradients_for_nan_as_pytorch():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert _anomaly_run(pb) == _anomaly_run(torch)


def test_set_detect_anomaly_switches_and_restores_as_pytorch():
    seen = {}
    for lib in (pb, torch):
        states = [lib.is_anomaly_enabled()]
        lib.autograd.set_detect_anomaly(True)
        states.append(lib.is_anomaly_enabled())
        lib.autograd.set_detect_anomaly(False)
        states.append(lib.is_anomaly_enabled())
        with lib.autograd.set_detect_anomaly(True, check_nan=False):
            states += [lib.is_anomaly_enabled(), lib.is_anomaly_check_nan_enabled()]
        states.append(lib.is_anomaly_enabled())
        seen[lib.__name__] = states
    assert seen["pullback"] == seen["torch"]
