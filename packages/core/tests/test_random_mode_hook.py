"""Random draws are seen by the active dispatch modes (``DispatchMode.random``), innermost first,
so that a batching mode can give each batch element its own numbers or refuse the draw."""

from __future__ import annotations

import numpy as np
import pytest

import pullback as pb
from pullback.dispatch import DispatchMode


class _Widen(DispatchMode):
    """Draws ``extra`` more leading rows than asked, and records what it was asked for."""

    def __init__(self, extra: int) -> None:
        self.extra = extra
        self.asked: list[tuple[int, ...]] = []

    def random(self, draw, shape):
        self.asked.append(tuple(shape))
        return super().random(draw, (self.extra,) + tuple(shape))


class _Refuse(DispatchMode):
    def random(self, draw, shape):
        raise RuntimeError(f"no random numbers here (shape {shape})")


@pytest.mark.parametrize("make", [
    lambda: pb.rand(2, 3), lambda: pb.randn(2, 3), lambda: pb.normal(0.0, 1.0, (2, 3)),
    lambda: pb.uniform(0.0, 1.0, (2, 3)), lambda: pb.randint(0, 5, (2, 3)),
], ids=["rand", "randn", "normal", "uniform", "randint"])
def test_modes_see_draws_innermost_first(make) -> None:
    outer, inner = _Widen(5), _Widen(4)
    with outer, inner:
        t = make()
    assert inner.asked == [(2, 3)] and outer.asked == [(4, 2, 3)]
    assert tuple(t.shape) == (5, 4, 2, 3)


def test_draw_keeps_dtype_and_seed_stream() -> None:
    pb.manual_seed(0)
    plain = pb.rand(4, dtype="float64").numpy()
    pb.manual_seed(0)
    with DispatchMode():  # the default passes the draw on unchanged
        passed = pb.rand(4, dtype="float64")
    assert passed.dtype == np.float64
    np.testing.assert_array_equal(passed.numpy(), plain)


def test_requires_grad_applies_to_the_mode_result() -> None:
    with _Widen(3):
        t = pb.randn(2, requires_grad=True)
    assert t.requires_grad and tuple(t.shape) == (3, 2)


def test_a_mode_can_refuse() -> None:
    with _Refuse(), pytest.raises(RuntimeError, match=r"no random numbers here \(shape \(2,\)\)"):
        pb.rand(2)
