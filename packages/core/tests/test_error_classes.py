"""pullback's errors are instances of the built-in class PyTorch raises in the same situation,
so ``except RuntimeError:``/``except IndexError:`` in ported code still works; and the argument
checks where pullback used to differ from PyTorch.

The first test runs every error case of the op database in PyTorch too; the cases PyTorch
accepts (pullback is stricter there, or the record's PyTorch spelling checks first) have no
PyTorch error to compare with and are left out.
"""

# ruff: noqa: B023 - the lambdas made in loops here are called at once, inside the loop

from __future__ import annotations

from typing import Any, Callable

import numpy as np
import pytest

import pullback as pb
from pullback.errors import PullbackError
from pullback.testing.opdb import ErrorCase, OpRecord, PullbackFactory, Sample, error_cases
from pullback.testing.oracle import TorchFactory

torch = pytest.importorskip("torch", reason="PyTorch, the oracle, is installed for Python 3.11 only")


def _raised(factory: Any, fn: Callable[..., Any], case: ErrorCase) -> BaseException | None:
    try:
        Sample(case.args, case.kwargs).bind(factory, differentiable=False).call(fn)
    except Exception as exc:  # noqa: BLE001 - the class is what is compared
        return exc
    return None


def _torch_errors() -> list[tuple[OpRecord, ErrorCase, BaseException]]:
    out = []
    for record, case in error_cases():
        if record.torch is None:
            continue
        with np.errstate(all="ignore"):
            theirs = _raised(TorchFactory(torch), record.torch(torch), case)
        if theirs is not None and not isinstance(theirs, PullbackError):
            out.append((record, case, theirs))
    return out


TORCH_ERRORS = _torch_errors()
# Known differences, each to be decided (strict: the mark goes once the classes agree).
_OPEN: dict[str, str] = {}


@pytest.mark.parametrize("record, case, theirs", [
    pytest.param(r, c, e, id=f"{r.name}-{c.id}", marks=[pytest.mark.xfail(
        strict=True, reason=_OPEN[f"{r.name}-{c.id}"])] if f"{r.name}-{c.id}" in _OPEN else [])
    for r, c, e in TORCH_ERRORS])
def test_errors_are_instances_of_the_class_pytorch_raises(record: OpRecord, case: ErrorCase,
                                                          theirs: BaseException) -> None:
    with np.errstate(all="ignore"):
        ours = _raised(PullbackFactory(), record.fn, case)
    assert isinstance(ours, type(theirs)), (
        f"{record.name} {case.id}: PyTorch raises {type(theirs).__name__} ({theirs}), pullback "
        f"{type(ours).__name__} ({ours}) with bases {type(ours).__mro__[1:]}")


def test_most_error_cases_are_compared_with_pytorch() -> None:
    assert len(TORCH_ERRORS) >= 0.8 * sum(1 for r, _ in error_cases() if r.torch is not None)


def test_the_classes_derive_from_the_builtins() -> None:
    assert issubclass(pb.ShapeError, ValueError) and issubclass(pb.ShapeError, RuntimeError)
    assert issubclass(pb.AxisError, IndexError) and issubclass(pb.AxisError, pb.ShapeError)
    assert issubclass(pb.DTypeError, TypeError) and issubclass(pb.DTypeError, RuntimeError)
    assert issubclass(pb.UnsupportedDTypeError, NotImplementedError)
    assert issubclass(pb.UnsupportedError, NotImplementedError)
    assert issubclass(pb.ArgumentError, RuntimeError) and issubclass(pb.ArgumentError, ValueError)
    assert issubclass(pb.IndexOutOfRangeError, IndexError)


# -- argument checks, each against PyTorch ----------------------------------------------------

def _both(fn: Callable[[Any], Any]) -> tuple[Any, Any]:
    """``fn(pb)`` and ``fn(torch)``, each the result or the exception raised."""
    out = []
    for module in (pb, torch):
        try:
            out.append(fn(module))
        except Exception as exc:  # noqa: BLE001
            out.append(exc)
    return out[0], out[1]


def _agree(fn: Callable[[Any], Any]) -> None:
    ours, theirs = _both(fn)
    if isinstance(theirs, Exception):
        assert isinstance(ours, type(theirs)), (ours, theirs)
        return
    assert not isinstance(ours, Exception), ours
    a = ours.tolist() if hasattr(ours, "tolist") else ours
    e = theirs.tolist() if hasattr(theirs, "tolist") else theirs
    assert a == e, (a, e)
    if hasattr(theirs, "dtype"):
        assert str(ours.dtype) == str(theirs.dtype).removeprefix("torch.")


def _x(m: Any, shape: tuple[int, ...] = (2, 3)) -> Any:
    return m.arange(int(np.prod(shape)), dtype=m.float64).reshape(shape)


@pytest.mark.parametrize("dim", [77, -4, 3, 2, -3])
def test_dims_out_of_range_are_index_errors(dim: int) -> None:
    _agree(lambda m: m.stack([_x(m), _x(m)], dim))
    _agree(lambda m: m.cat([_x(m), _x(m)], dim))
    _agree(lambda m: _x(m).unsqueeze(dim))
    _agree(lambda m: _x(m).transpose(0, dim))
    _agree(lambda m: _x(m).sum(dim))
    _agree(lambda m: m.softmax(_x(m), dim) if m is torch else pb.nn.functional.softmax(_x(m), dim))


def test_roll_needs_as_many_shifts_as_dims() -> None:
    _agree(lambda m: m.roll(_x(m), (1, 2), (0,)))
    _agree(lambda m: m.roll(_x(m), (1, 2), (0, 1)))
    _agree(lambda m: m.roll(_x(m), 1))


@pytest.mark.parametrize("width", [2, 3, 4])
def test_circular_padding_wraps_around_at_most_once(width: int) -> None:
    def pad(m: Any) -> Any:
        f = torch.nn.functional.pad if m is torch else pb.pad
        return f(_x(m, (1, 1, 3)), (width, 0), mode="circular")

    _agree(pad)


def test_an_unknown_padding_mode_is_not_implemented() -> None:
    _agree(lambda m: (torch.nn.functional.pad if m is torch else pb.pad)(_x(m, (1, 1, 3)), (1, 0),
                                                                         mode="wrap"))


@pytest.mark.parametrize("dtype", ["int64", "int32", "int8"])
def test_integer_linspace_truncates_toward_zero(dtype: str) -> None:
    for start, end, steps in ((-5, 5, 4), (-7, 3, 6), (10, -10, 7)):
        _agree(lambda m: m.linspace(start, end, steps, dtype=getattr(m, dtype)))


def test_reductions_take_tuple_dims_on_0d_tensors() -> None:
    for dims in ((0,), (-1,), 0, -1):
        _agree(lambda m: m.tensor(3.0).sum(dims))
        _agree(lambda m: m.tensor(3.0).mean(dims))
        _agree(lambda m: m.tensor(3.0).amax(dims))
    _agree(lambda m: m.tensor(3.0).sum(1))


@pytest.mark.parametrize("dtype", ["float64", "float16", "int8", "int64"])
def test_sum_mean_prod_cumsum_take_dtype(dtype: str) -> None:
    def x(m: Any) -> Any:
        return m.tensor([[1, 2, 3], [4, 5, 120]], dtype=m.int32)

    _agree(lambda m: x(m).sum(dtype=getattr(m, dtype)))
    _agree(lambda m: x(m).prod(1, dtype=getattr(m, dtype)))
    _agree(lambda m: x(m).cumsum(1, dtype=getattr(m, dtype)))
    if dtype.startswith("float"):
        _agree(lambda m: x(m).mean(dtype=getattr(m, dtype)))
    _agree(lambda m: x(m).sum())  # integers accumulate in int64
    _agree(lambda m: m.tensor([200, 100], dtype=m.uint8).sum())


def test_div_rounding_modes() -> None:
    for mode in ("trunc", "floor", None):
        _agree(lambda m: m.div(m.tensor([-7, 7, -8, 9]), m.tensor([2, -2, 3, 4]),
                               rounding_mode=mode))
        _agree(lambda m: m.div(m.tensor([-7.5, 7.0, -8.25]), 2.0, rounding_mode=mode))
        _agree(lambda m: m.div(m.tensor([-7, 7], dtype=m.int8), 2, rounding_mode=mode))
    _agree(lambda m: m.div(m.tensor([1.0]), 2.0, rounding_mode="ceil"))


def test_shifts() -> None:
    for dtype in ("int8", "int32", "int64", "uint8"):
        def x(m: Any) -> Any:
            return m.tensor([5, 3, 100], dtype=getattr(m, dtype))

        for s in (0, 1, 3, 7, 8, 40):
            _agree(lambda m: x(m) << s)
            _agree(lambda m: x(m) >> s)
        _agree(lambda m: x(m) << x(m))
        _agree(lambda m: 2 << x(m))
    _agree(lambda m: m.tensor([True, False]) << 1)
    _agree(lambda m: m.tensor([1.5]) << 1)


def test_bitwise_ops_wrap_python_ints_as_pytorch() -> None:
    for dtype in ("int8", "uint8", "int16"):
        for number in (1000, -129, 256, -1, 2**40):
            for op in ("__and__", "__or__", "__xor__"):
                _agree(lambda m: getattr(m.tensor([1, 2, 100], dtype=getattr(m, dtype)), op)(number))
    _agree(lambda m: m.tensor([True, False]) & 3)
    _agree(lambda m: m.tensor([1.5]) & 1)
