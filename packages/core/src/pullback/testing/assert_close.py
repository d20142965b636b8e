"""``assert_close``: ``torch.testing.assert_close`` for pullback tensors, with PyTorch's default
tolerances by dtype and its messages.

Tensors (and NumPy arrays) are compared element by element with ``|actual - expected| <= atol
+ rtol * |expected|`` after their shapes, devices and dtypes are checked; Python numbers as 0-d
values; lists, tuples and dicts item by item (the message then says which item failed).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Callable

import numpy as np

from ..dtypes import bfloat16, float16, float32, float64
from ..tensor import Tensor

# PyTorch's defaults: (rtol, atol) by dtype; integers and bools compare exactly
_TOLERANCES = {float16: (1e-3, 1e-5), bfloat16: (1.6e-2, 1e-5), float32: (1.3e-6, 1e-5),
               float64: (1e-7, 1e-7), np.dtype(np.complex64): (1.3e-6, 1e-5),
               np.dtype(np.complex128): (1e-7, 1e-7)}


def assert_close(actual: Any, expected: Any, *, allow_subclasses: bool = True,
                 rtol: float | None = None, atol: float | None = None, equal_nan: bool = False,
                 check_device: bool = True, check_dtype: bool = True, check_layout: bool = True,
                 check_stride: bool = False, msg: str | Callable[[str], str] | None = None
                 ) -> None:
    """Raise an AssertionError unless ``actual`` and ``expected`` are close (PyTorch's
    ``torch.testing.assert_close``; ``check_layout`` and ``check_stride`` are accepted: pullback
    tensors are dense and their strides are NumPy's).

    Args:
        actual, expected: tensors, NumPy arrays, Python numbers, or sequences and mappings of
            them (compared item by item).
        rtol, atol: the tolerances; both or neither (then PyTorch's defaults for the dtypes:
            float32 1.3e-6 and 1e-5, float64 1e-7 and 1e-7, float16 1e-3 and 1e-5, bfloat16
            1.6e-2 and 1e-5, exact for integers and bools).
        equal_nan: NaN equals NaN.
        check_device, check_dtype: also require the same device and dtype (without the dtype
            check both are compared in their promoted dtype).
        msg: a message to raise instead, or a function of the generated one.

    Raises:
        AssertionError: with PyTorch's message ("Tensor-likes are not close!", the mismatched
            elements, the greatest differences and where).
        TypeError: for a pair of inputs that cannot be compared (a tensor and a number).
        ValueError: for only one of ``rtol`` and ``atol``.
    """
    if (rtol is None) != (atol is None):
        missing = "atol" if atol is None else "rtol"
        raise ValueError(f"Both 'rtol' and 'atol' must be either specified or omitted, but got "
                         f"no {missing}.")
    problem = _compare(actual, expected, rtol, atol, equal_nan, check_device, check_dtype, "")
    if problem is not None:
        raise AssertionError(msg(problem) if callable(msg) else msg if msg is not None
                             else problem)


def _compare(actual: Any, expected: Any, rtol: float | None, atol: float | None,
             equal_nan: bool, check_device: bool, check_dtype: bool, path: str) -> str | None:
    """The failure message of one pair (None when close); ``path`` locates it in containers."""
    if _is_tensor_like(actual) and _is_tensor_like(expected) and \
            isinstance(actual, Tensor) == isinstance(expected, Tensor):
        problem = _compare_tensors(actual, expected, rtol, atol, equal_nan, check_device,
                                   check_dtype, scalar=False)
    elif _is_number(actual) and _is_number(expected):
        problem = _compare_tensors(np.asarray(actual), np.asarray(expected), rtol, atol,
                                   equal_nan, False, False, scalar=True)
    elif _is_sequence(actual) and _is_sequence(expected):
        if len(actual) != len(expected):
            problem = (f"The length of the sequences mismatch: {len(actual)} != "
                       f"{len(expected)}")
        else:
            for i, (a, e) in enumerate(zip(actual, expected)):
                found = _compare(a, e, rtol, atol, equal_nan, check_device, check_dtype,
                                 f"{path}[{i}]")
                if found is not None:
                    return found
            return None
    elif isinstance(actual, Mapping) and isinstance(expected, Mapping):
        if set(actual) != set(expected):
            missing = sorted(set(expected) - set(actual), key=repr)
            extra = sorted(set(actual) - set(expected), key=repr)
            problem = (f"The keys of the mappings do not match:\nMissing keys in the actual "
                       f"mapping: {missing}\nAdditional keys in the actual mapping: {extra}")
        else:
            for key in expected:
                found = _compare(actual[key], expected[key], rtol, atol, equal_nan,
                                 check_device, check_dtype, f"{path}[{key!r}]")
                if found is not None:
                    return found
            return None
    else:
        raise TypeError(f"No comparison pair was able to handle inputs of type {type(actual)} "
                        f"and {type(expected)}.")
    if problem is not None and path:
        problem += f"\n\nThe failure occurred for item {path}"
    return problem


def _compare_tensors(actual: Any, expected: Any, rtol: float | None, atol: float | None,
                     equal_nan: bool, check_device: bool, check_dtype: bool,
                     scalar: bool) -> str | None:
    for attribute, check in (("shape", True), ("device", check_device),
                             ("dtype", check_dtype)):
        mine, theirs = getattr(actual, attribute, None), getattr(expected, attribute, None)
        if check and mine != theirs:
            return f"The values for attribute '{attribute}' do not match: {mine} != {theirs}."
    a, e = _host(actual), _host(expected)
    common = np.result_type(a.dtype, e.dtype)
    if common.kind in "biu":
        exact = True
        rtol = atol = 0.0
        compute = np.dtype(np.float32)  # PyTorch reports integer differences as floats
    else:
        exact = False
        if rtol is None:
            rtol, atol = max((_TOLERANCES.get(np.dtype(d), (0.0, 0.0)) for d in
                              (a.dtype, e.dtype)), key=lambda t: t[0])
        compute = common
    given = a, e
    a, e = a.astype(compute), e.astype(compute)
    difference = np.abs(a - e)
    with np.errstate(divide="ignore", invalid="ignore"):
        relative = difference / np.abs(e)
        close = difference <= atol + rtol * np.abs(e)  # type: ignore[operator]
    close |= a == e  # equal infinities
    if equal_nan:
        close |= np.isnan(a) & np.isnan(e)
    if close.all():
        return None
    verb = "equal" if exact else "close"
    if scalar or a.ndim == 0:  # PyTorch reports scalars' differences in Python numbers
        got, want = (v.item() for v in given)
        absolute = abs(got - want)
        relative_text = absolute / abs(want) if want else float("inf")
        lines = [f"Scalars are not {verb}!", "", f"Expected {want} but got {got}.",
                 f"Absolute difference: {absolute}" + _allowed(atol, exact),
                 f"Relative difference: {relative_text}" + _allowed(rtol, exact)]
        return "\n".join(lines)
    wrong = ~close
    count, total = int(wrong.sum()), wrong.size
    lines = [f"Tensor-likes are not {verb}!", "",
             f"Mismatched elements: {count} / {total} ({count / total:.1%})"]
    for name, values, limit in (("absolute", difference, atol), ("relative", relative, rtol)):
        flat = np.where(np.isnan(values), np.inf, values).ravel()
        at = int(np.argmax(np.where(wrong.ravel(), flat, -1)))
        index = tuple(int(i) for i in np.unravel_index(at, values.shape))
        lines.append(f"Greatest {name} difference: {_number(values.ravel()[at])} at index "
                     f"{index}" + _allowed(limit, exact))
    return "\n".join(lines)


def _allowed(limit: Any, exact: bool) -> str:
    return "" if exact else f" (up to {limit} allowed)"


def _number(value: Any) -> Any:
    value = value.item()
    return int(value) if float(value).is_integer() and abs(value) < 2**53 else value


def _host(value: Any) -> np.ndarray:
    if isinstance(value, Tensor):
        return np.asarray(value.device.backend.to_host(value.detach().array))
    return np.asarray(value)


def _is_tensor_like(value: Any) -> bool:
    return isinstance(value, (Tensor, np.ndarray))


def _is_number(value: Any) -> bool:
    return isinstance(value, (bool, int, float, complex, np.number, np.bool_))


def _is_sequence(value: Any) -> bool:
    return isinstance(value, Sequence) and not isinstance(value, (str, bytes))
