"""Bad input gets a typed error that names the block, the shapes and what to do."""

from __future__ import annotations

import numpy as np
import pytest

import pullback as pb
from pullback import nn
from pullback.avyaya import (
    AffineCoupling, ReconstructionError, ReversibleBlock, ReversibleSequential,
)
from pullback.errors import AutogradError, ShapeError

from avyaya_helpers import make_stack


class Scaled(nn.Module):
    """``factor * net(x)``: a branch whose output can swamp the half it is added to."""

    def __init__(self, net: nn.Module, factor: float) -> None:
        super().__init__()
        self.net, self.factor = net, factor

    def forward(self, x):
        return self.net(x) * self.factor


def test_odd_split_size():
    block = ReversibleBlock(nn.Linear(3, 3), nn.Linear(3, 3))
    with pytest.raises(ShapeError, match=r"ReversibleBlock: split_dim -1 .*\(2, 7\).* odd size 7"):
        block(pb.randn(2, 7))
    stack = ReversibleSequential([block])
    with pytest.raises(ShapeError, match="odd size 7"):
        stack(pb.randn(2, 7, requires_grad=True))


def test_split_dim_out_of_range():
    block = ReversibleBlock(nn.Linear(2, 2), nn.Linear(2, 2), split_dim=2)
    with pytest.raises(ShapeError, match=r"split_dim 2 is out of range .* \(2, 4\)"):
        block(pb.randn(2, 4))


def test_branch_that_changes_shape():
    block = ReversibleBlock(nn.Linear(3, 5), nn.Linear(3, 3))
    with pytest.raises(ShapeError, match=r"f maps its half of shape \(2, 3\) to \(2, 5\)"):
        block(pb.randn(2, 6))
    affine = AffineCoupling(nn.Linear(3, 3), nn.Linear(3, 4))
    with pytest.raises(ShapeError, match=r"shift_net maps its half of shape \(2, 3\) to \(2, 4\)"):
        affine(pb.randn(2, 6))


def test_affine_coupling_needs_a_sample_axis_and_a_known_condition():
    with pytest.raises(ShapeError, match="sample axis"):
        AffineCoupling(nn.Identity(), nn.Identity(), split_dim=0)(pb.randn(4, 3))
    with pytest.raises(ValueError, match="condition_on must be one of"):
        AffineCoupling(nn.Identity(), nn.Identity(), condition_on="left")


def test_a_block_that_is_not_a_coupling():
    with pytest.raises(TypeError, match="block 1 is a Linear, not a coupling"):
        ReversibleSequential([ReversibleBlock(nn.Identity(), nn.Identity()), nn.Linear(2, 2)])


def test_debug_mode_reports_a_block_not_invertible_in_float32():
    # f's output is 1000 times larger than the half it is added to, and f amplifies what the
    # inverse feeds it as much: float32 (24 bits) loses a percent of the half in the sum,
    # float64 (53 bits) 1e-11.
    pb.manual_seed(0)
    block = ReversibleBlock(Scaled(nn.Linear(4, 4), 1000.0), nn.Linear(4, 4))
    stack = ReversibleSequential([ReversibleBlock(nn.Linear(4, 4), nn.Linear(4, 4)), block],
                                 debug=True)
    x = pb.randn(3, 8, requires_grad=True)
    with pytest.raises(ReconstructionError,
                       match=r"input of block 1 \(ReversibleBlock\).* over the tolerance 0.001 "
                             r"for float32"):
        stack(x).sum().backward()
    assert stack.reconstruction_error(x) > 1e-3  # the same failure, measured

    stack.double()
    x64 = pb.tensor(x.detach().numpy().astype(np.float64), requires_grad=True)
    stack(x64).sum().backward()  # invertible enough in float64: no error
    assert stack.reconstruction_error(x64) < 1e-10


def test_without_debug_mode_nothing_is_checked():
    pb.manual_seed(0)
    stack = ReversibleSequential([ReversibleBlock(Scaled(nn.Linear(4, 4), 1e8), nn.Linear(4, 4))])
    stack(pb.randn(3, 8, requires_grad=True)).sum().backward()


def test_create_graph_is_refused():
    stack = make_stack("additive", 2, features=4)
    x = pb.tensor(np.ones((2, 4)), requires_grad=True)
    with pytest.raises(AutogradError, match=r"ReversibleSequential: backward\(create_graph=True\)"):
        pb.autograd.grad(stack(x).sum(), [x], create_graph=True)
