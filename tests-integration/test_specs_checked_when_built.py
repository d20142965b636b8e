"""Every constructor that takes a spec checks it when built, not at its first use (issue 39):
a typo fails on the line that made it, with the type and message the first call would give."""

from __future__ import annotations

import pytest

import pullback.nn as nn
from pullback.errors import ArgumentError

avyaya = pytest.importorskip("pullback.avyaya")
spanda = pytest.importorskip("pullback.spanda")
tarka = pytest.importorskip("pullback.tarka")

BAD = [
    (lambda: tarka.SemanticLoss("exactly_one"), TypeError, "constraint must be a Constraint"),
    (lambda: nn.GELU(approximate="bogus"), ArgumentError, "approximate must be"),
    (lambda: nn.Upsample(scale_factor=2, mode="bogus"), ArgumentError, "mode must be one of"),
    (lambda: nn.UpsamplingNearest2d(scale_factor=2), None, None),
    (lambda: nn.MSELoss(reduction="bogus"), ValueError, "MSELoss: reduction must be"),
    (lambda: nn.CrossEntropyLoss(reduction="avg"), ValueError, "CrossEntropyLoss: reduction"),
    (lambda: nn.KLDivLoss(reduction="batchsum"), ValueError, "batchmean"),
    (lambda: nn.KLDivLoss(reduction="batchmean"), None, None),
    (lambda: nn.MSELoss(size_average=False), None, None),
    (lambda: spanda.SpikingLinear(2, 3, neuron="lif"), TypeError, "neuron must be a Spiking"),
    (lambda: spanda.SpikingConv2d(1, 2, 3, neuron=0.9), TypeError, "neuron must be a Spiking"),
    (lambda: avyaya.ReversibleBlock(5, 6), TypeError, "f must be an nn.Module"),
    (lambda: avyaya.AffineCoupling(nn.Linear(2, 2), "x"), TypeError,
     "shift_net must be an nn.Module"),
]


@pytest.mark.parametrize("make, error, words", BAD, ids=[str(i) for i in range(len(BAD))])
def test_a_spec_is_checked_when_the_object_is_built(make, error, words):
    if error is None:
        make()  # a valid spec is still accepted
        return
    with pytest.raises(error, match=words):
        make()


def test_the_first_call_and_the_constructor_agree_on_the_error():
    # the constructor's error is the one the functional form raises at its call
    import pullback
    import pullback.nn.functional as F

    x = pullback.ones(1, 1, 2, 2)
    for call in (lambda: F.gelu(x, approximate="bogus"),
                 lambda: F.interpolate(x, scale_factor=2, mode="bogus")):
        with pytest.raises(ArgumentError):
            call()
    with pytest.raises(ValueError, match="reduction must be"):
        F.mse_loss(x, x, reduction="bogus")
