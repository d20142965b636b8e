"""nn's functions keep their argument checks per shape (convolution, pooling, flatten): under
vmap the shape they read must be the logical one the user sees, not the batched array's. An
unbatched sample inside vmap takes the unbatched path, and a geometry checked under vmap is never
handed to an eager call whose array has the same physical shape."""

from __future__ import annotations

import numpy as np
import pytest

import pullback as pb
import pullback.nn.functional as F
from pullback.errors import ShapeError
from pullback.func import vmap


def _tensor(*shape: int, seed: int = 0) -> pb.Tensor:
    return pb.tensor(np.random.default_rng(seed).standard_normal(shape).astype(np.float32))


def test_unbatched_samples_inside_vmap_match_a_loop() -> None:
    x = _tensor(5, 3, 8, 8)
    w, b = _tensor(4, 3, 3, 3, seed=1), _tensor(4, seed=2)
    conv = vmap(lambda xi: F.conv2d(xi, w, b))(x)  # each xi is one (C, H, W) image
    pooled = vmap(lambda xi: F.max_pool2d(xi, 2))(x)
    for i in range(5):
        np.testing.assert_allclose(conv.numpy()[i], F.conv2d(x[i], w, b).numpy(), rtol=1e-5,
                                   atol=1e-5)
        np.testing.assert_array_equal(pooled.numpy()[i], F.max_pool2d(x[i], 2).numpy())


@pytest.mark.parametrize("call", [
    lambda t, w: F.max_pool2d(t, 2),
    lambda t, w: F.conv2d(t, w),
], ids=["max_pool2d", "conv2d"])
def test_a_geometry_checked_under_vmap_is_not_reused_for_another_shape(call) -> None:
    w = _tensor(4, 3, 3, 3, seed=1)
    batched = _tensor(5, 1, 3, 8, 8)
    vmap(lambda xi: call(xi, w))(batched)  # logical (1, 3, 8, 8): valid
    with pytest.raises(ShapeError):
        call(batched, w)  # eager, the same array shape (5, 1, 3, 8, 8): a 5-d input


def test_flatten_inside_vmap_uses_the_logical_shape() -> None:
    x = _tensor(5, 2, 3, 4)
    out = vmap(lambda xi: pb.flatten(xi, 0))(x)
    assert out.shape == (5, 24)
    np.testing.assert_array_equal(out.numpy(), x.numpy().reshape(5, 24))
