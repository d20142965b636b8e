"""Bad input gets a clear error naming the class or function and the value: decays outside
[0, 1], non-positive thresholds, unknown resets and surrogates, state shapes, RLeaky's feedback
options."""

from __future__ import annotations

import numpy as np
import pytest

import pullback
from pullback import spanda
from pullback.errors import ShapeError


@pytest.mark.parametrize("make, message", [
    (lambda: spanda.LIF(beta=1.5), r"LIF: beta must be in \[0, 1\], got 1.5"),
    (lambda: spanda.LIF(beta=np.array([0.5, -0.1])),
     r"LIF: beta must be in \[0, 1\], got values in \[-0.1, 0.5\]"),
    (lambda: spanda.Synaptic(alpha=1.2, beta=0.5), r"Synaptic: alpha must be in \[0, 1\], got 1.2"),
    (lambda: spanda.RLeaky(beta=2.0, linear_features=3), r"RLeaky: beta must be in \[0, 1\]"),
    (lambda: spanda.LIF(0.9, threshold=0.0),
     r"LIF: threshold must be positive and finite, got 0.0"),
    (lambda: spanda.LIF(0.9, threshold=pullback.tensor([1.0, -1.0])),
     r"LIF: threshold must be positive and finite, got values in \[-1, 1\]"),
    (lambda: spanda.LIF(0.9, reset_mechanism="subtraction"),
     r"LIF: reset_mechanism must be one of 'subtract', 'zero', 'none', got 'subtraction'"),
    (lambda: spanda.LIF(0.9, surrogate="atan"), r"unknown surrogate 'atan'; registered: arctan"),
    (lambda: spanda.RLeaky(0.9), r"RLeaky: all_to_all=True needs linear_features"),
    (lambda: spanda.RLeaky(0.9, linear_features=3, kernel_size=3), r"not both"),
    (lambda: spanda.RLeaky(0.9, all_to_all=False, linear_features=3), r"do not apply"),
    (lambda: spanda.functional.lif(pullback.rand(2, 3), beta=-0.5),
     r"lif: beta must be in \[0, 1\], got -0.5"),
    (lambda: spanda.functional.lif_sequence(pullback.rand(4, 2, 3), beta=0.5, threshold=-1),
     r"lif_sequence: threshold must be positive"),
    (lambda: spanda.functional.synaptic(pullback.rand(2, 3), alpha=0.5, beta=0.5,
                                        reset_mechanism="reset"), r"synaptic: reset_mechanism"),
])
def test_bad_options_are_value_errors(make, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        make()


def test_state_shapes_are_checked() -> None:
    lif = spanda.LIF(0.9)
    with pytest.raises(ShapeError, match=r"LIF: mem of shape \(3, 3\) does not match the input's "
                                         r"step shape \(2, 3\)"):
        lif(pullback.rand(2, 3), pullback.rand(3, 3))
    with pytest.raises(ShapeError, match=r"Synaptic.run: syn of shape \(5,\) does not match"):
        spanda.Synaptic(0.5, 0.9).run(pullback.rand(4, 2, 3), pullback.rand(5))
    with pytest.raises(TypeError, match=r"LIF: takes the input and at most 1 state tensors "
                                        r"\(mem\), got 2"):
        lif(pullback.rand(2, 3), None, None)
    with pytest.raises(ShapeError, match="need a leading time axis"):
        lif.run(pullback.tensor(1.0))


def test_kept_state_restarts_on_a_new_batch_shape_like_snntorch() -> None:
    lif = spanda.LIF(0.5)
    lif(pullback.ones(4, 3))
    spk, mem = lif(pullback.ones(2, 3))  # a smaller last batch: starts from zeros
    assert mem.tolist() == [[1.0] * 3] * 2
    spk, mem = lif(pullback.ones(2, 3))
    assert mem.tolist() == [[1.5] * 3] * 2
    lif.reset_state()
    assert lif(pullback.ones(2, 3))[1].tolist() == [[1.0] * 3] * 2
