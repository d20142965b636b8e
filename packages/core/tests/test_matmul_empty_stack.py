"""A stack of matrices times one matrix with a size-0 dim (the folded-rows path of matmul)."""

from __future__ import annotations

import numpy as np
import pytest

import pullback as pb


@pytest.mark.parametrize("x_shape,y_shape", [((3, 1, 0), (0, 2)), ((0, 2, 3), (3, 4)),
                                             ((2, 0, 3), (3, 4))])
def test_empty_stacks_match_numpy(x_shape, y_shape) -> None:
    x, y = np.ones(x_shape), np.ones(y_shape)
    out = pb.matmul(pb.tensor(x), pb.tensor(y))
    np.testing.assert_array_equal(out.numpy(), np.matmul(x, y))
