"""Pooling geometries are checked once per shape and arguments (``pool_geometry``'s memo): the
cached answer is the checked one, errors are never cached, and unhashable arguments (lists) are
checked every time."""

from __future__ import annotations

import numpy as np
import pytest

import pullback as pb
import pullback.nn.functional as F
from pullback.errors import ArgumentError, ShapeError
from pullback.nn.functional import pooling


def test_the_memo_gives_the_checked_geometry_and_never_an_error(monkeypatch) -> None:
    monkeypatch.setattr(pooling, "_CHECKED", {})
    x = pb.tensor(np.random.default_rng(0).standard_normal((2, 3, 9, 9)).astype(np.float32))
    args = ("max_pool2d", 2, x, 3, 2, 1, 1, True)
    first = pooling.pool_geometry(*args)
    assert first == pooling._pool_geometry(*args, False)
    with pytest.raises(TypeError):  # the memo's mapping is shared: no caller can change it
        first["stride"] = "changed"
    assert pooling.pool_geometry(*args) == pooling._pool_geometry(*args, False)
    assert len(pooling._CHECKED) == 1
    for _ in range(2):  # still raised the second time
        with pytest.raises(ArgumentError, match="at most half the kernel"):
            pooling.pool_geometry("max_pool2d", 2, x, 3, 2, 2)
        with pytest.raises(ShapeError):
            pooling.pool_geometry("max_pool2d", 2, x[0], 3, 2, 1)
    listed = F.max_pool2d(x, [3, 3], [2, 2], [1, 1])
    np.testing.assert_array_equal(listed.numpy(), F.max_pool2d(x, 3, 2, 1).numpy())
