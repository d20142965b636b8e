"""Where PyTorch warns and goes on, pullback warns and goes on: the same warning class and
message opening, and a result of the same shape (and, for channel dropout, the same
structure of the mask). (PyTorch warns about ``x.T`` once per process, from C++: one case
here.)"""

from __future__ import annotations

import warnings
from typing import Any, Callable

import numpy as np
import pytest

import pullback
import pullback.nn  # noqa: F401 - pullback.nn as an attribute
import pullback.optim  # noqa: F401

torch = pytest.importorskip("torch", reason="PyTorch, the oracle, is installed for Python 3.11 only")


def _scheduler_first(lib: Any, F: Any) -> Any:
    p = lib.nn.Parameter(lib.ones(1))
    optimizer = lib.optim.SGD([p], lr=0.1)
    scheduler = lib.optim.lr_scheduler.StepLR(optimizer, 1)
    scheduler.step()
    return optimizer.param_groups[0]["lr"]


CASES: dict[str, Callable[[Any, Any], Any]] = {
    "dropout2d_on_2d": lambda L, F: L.nn.Dropout2d(0.5)(L.ones(3, 4)),
    "dropout2d_on_3d": lambda L, F: L.nn.Dropout2d(0.5)(L.ones(2, 3, 4)),
    "dropout2d_on_5d": lambda L, F: F.dropout2d(L.ones(1, 2, 2, 2, 2), 0.5),
    "dropout3d_on_3d": lambda L, F: L.nn.Dropout3d(0.5)(L.ones(2, 3, 4)),
    "softmax_without_dim": lambda L, F: F.softmax(L.ones(2, 3)),
    "softmax_without_dim_3d": lambda L, F: F.softmax(L.ones(2, 3, 4)),
    "log_softmax_without_dim": lambda L, F: F.log_softmax(L.ones(2, 3)),
    "softmin_without_dim": lambda L, F: F.softmin(L.ones(4)),
    "Softmax_without_dim": lambda L, F: L.nn.Softmax()(L.ones(2, 3)),
    "size_average": lambda L, F: L.nn.MSELoss(size_average=False)(L.ones(2), L.ones(2)),
    "reduce_false": lambda L, F: F.l1_loss(L.ones(2), L.zeros(2), reduce=False),
    "kl_div_mean": lambda L, F: F.kl_div(L.zeros(2, 3), L.ones(2, 3) / 3),
    "upsample": lambda L, F: F.upsample(L.ones(1, 1, 4), scale_factor=2),
    "upsample_nearest": lambda L, F: F.upsample_nearest(L.ones(1, 1, 4), scale_factor=2),
    "upsample_bilinear": lambda L, F: F.upsample_bilinear(L.ones(1, 1, 4, 4), scale_factor=2),
    "T_of_1d": lambda L, F: L.ones(3).T,
    "tensor_of_a_tensor": lambda L, F: L.tensor(L.ones(2)),
    "scheduler_before_optimizer": _scheduler_first,
    "mse_broadcast": lambda L, F: F.mse_loss(L.ones(2, 1), L.ones(2)),
    "l1_broadcast": lambda L, F: F.l1_loss(L.ones(2, 1), L.ones(2)),
}


def _run(lib: Any, name: str) -> tuple[Any, list[tuple[str, str]]]:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        lib.manual_seed(0)
        result = CASES[name](lib, lib.nn.functional)
    seen = sorted({(w.category.__name__, str(w.message)[:20]) for w in caught})
    return result, seen


@pytest.mark.parametrize("name", sorted(CASES))
def test_pytorch_s_warning_and_pullback_goes_on(name):
    ours, our_warnings = _run(pullback, name)
    theirs, their_warnings = _run(torch, name)
    assert our_warnings == their_warnings
    assert np.shape(ours) == tuple(getattr(theirs, "shape", np.shape(theirs)))


@pytest.mark.parametrize("shape, shared", [((40, 50), ()), ((30, 40, 50), (2,)),
                                           ((3, 40, 5, 5), (2, 3))])
def test_dropout2d_draws_one_mask_entry_per_leading_pair_as_pytorch(shape, shared):
    """PyTorch's feature dropout: the mask varies along the first two axes only."""
    for lib in (torch, pullback):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            out = lib.nn.functional.dropout2d(lib.ones(*shape), 0.5).numpy()
        assert set(np.unique(out)) <= {0.0, 2.0}
        for axis in shared:
            assert (np.diff(out, axis=axis) == 0).all(), lib.__name__
        assert 0.3 < (out == 0).mean() < 0.7
