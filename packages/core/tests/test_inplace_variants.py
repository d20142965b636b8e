"""The in-place variants of the functions added for ported PyTorch code (``x.scatter_(...)``,
``x.addcmul_(...)``...): each returns ``x`` itself holding what PyTorch's in-place method
leaves in its tensor, and gradients flow through a recorded in-place call as through the
out-of-place function."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import pullback as pb
from pullback._ops.inplace_variants import METHODS

torch = pytest.importorskip("torch", reason="PyTorch, the oracle, is installed for Python 3.11 only")

RNG = np.random.default_rng(0)
X = RNG.uniform(0.2, 0.8, size=(3, 4))
Y = RNG.uniform(0.2, 0.8, size=(3, 4))
IDX = np.array([[0, 1, 2, 0], [2, 0, 1, 1]])

# name -> arguments after the tensor (arrays become tensors of each framework)
CASES: dict[str, tuple[tuple[Any, ...], dict[str, Any]]] = {
    "addcmul_": ((Y, Y), {"value": 0.5}), "addcdiv_": ((Y, Y + 1), {"value": -2.0}),
    "lerp_": ((Y, 0.25), {}), "nan_to_num_": ((), {"nan": 1.0}),
    "scatter_": ((0, IDX[:1], Y[:1]), {}), "scatter_add_": ((0, IDX, Y[:2]), {}),
    "scatter_reduce_": ((0, IDX, Y[:2], "amax"), {"include_self": False}),
    "index_add_": ((1, np.array([3, 0]), Y[:, :2]), {"alpha": 2.0}),
    "index_copy_": ((0, np.array([2, 0]), Y[:2]), {}),
    "index_fill_": ((1, np.array([1, 3]), -1.0), {}),
    "masked_scatter_": ((X > 0.5, Y), {}), "put_": ((np.array([0, 7, -1]), Y[0, :3]), {}),
    **{name: ((), {}) for name in ("acos_", "asin_", "atan_", "cosh_", "sinh_", "tan_",
                                   "asinh_", "atanh_", "exp2_", "log2_", "log10_", "sinc_")},
    "acosh_": ((), {}), "atan2_": ((Y,), {}), "copysign_": ((-Y,), {}), "hypot_": ((Y,), {}),
    "xlogy_": ((Y,), {}),
}


def _args(lib: Any, args: tuple[Any, ...]) -> list[Any]:
    return [lib.tensor(a) if isinstance(a, np.ndarray) else a for a in args]


def test_every_variant_has_a_case() -> None:
    assert set(METHODS) == set(CASES)


@pytest.mark.parametrize("name", sorted(CASES))
def test_the_variant_writes_what_pytorch_writes(name: str) -> None:
    args, kwargs = CASES[name]
    base = X + 1.5 if name == "acosh_" else X
    ours, theirs = pb.tensor(base.copy()), torch.tensor(base.copy())
    assert getattr(ours, name)(*_args(pb, args), **kwargs) is ours
    getattr(theirs, name)(*_args(torch, args), **kwargs)
    np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=1e-12, atol=1e-12)


def test_gradients_flow_through_a_recorded_in_place_call() -> None:
    leaf = pb.tensor(X, requires_grad=True)
    src = pb.tensor(Y, requires_grad=True)
    out = leaf * 1.0
    out.index_add_(0, pb.tensor([2, 0, 2]), src, alpha=3.0)
    out.sum().backward()
    np.testing.assert_allclose(leaf.grad.numpy(), np.ones((3, 4)))
    np.testing.assert_allclose(src.grad.numpy(), np.full((3, 4), 3.0))
