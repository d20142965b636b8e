"""Any f and g: convolutions (channels split), self-attention (features split), and branches
with dropout, whose masks the backward replays by restoring the generator's state."""

from __future__ import annotations

import numpy as np

import pullback as pb
from pullback import nn
from pullback.avyaya import AffineCoupling, ReversibleBlock, ReversibleSequential

from avyaya_helpers import grads, ordinary, worst_relative


class SelfAttention(nn.Module):
    """Causal multi-head self-attention over (batch, time, features), with dropout."""

    def __init__(self, features: int, dropout: float = 0.0) -> None:
        super().__init__()
        self.norm = nn.LayerNorm(features)
        self.attn = nn.MultiheadAttention(features, 2, dropout=dropout, batch_first=True)

    def forward(self, x):
        h = self.norm(x)
        return self.attn(h, h, h, need_weights=False, is_causal=True,
                         attn_mask=pb.ones(x.shape[1], x.shape[1]).triu(1).bool())[0]


def conv(channels: int) -> nn.Module:
    return nn.Sequential(nn.Conv2d(channels, channels, 3, padding=1), nn.Tanh(),
                         nn.Conv2d(channels, channels, 3, padding=1))


def mlp(features: int, dropout: float) -> nn.Module:
    return nn.Sequential(nn.Linear(features, 2 * features), nn.GELU(), nn.Dropout(dropout),
                         nn.Linear(2 * features, features))


def _compare(stack: ReversibleSequential, x_np: np.ndarray, seed: int = 0) -> float:
    """Worst relative gradient difference, reversible against ordinary, from one seed."""
    pb.manual_seed(seed)
    x = pb.tensor(x_np, requires_grad=True)
    y, log_det = stack.forward_with_log_det(x)
    ((y * y).sum() - log_det.sum()).backward()
    after_reversible = pb.rand(4).numpy()
    reversible = grads(stack, x)
    stack.zero_grad()
    pb.manual_seed(seed)
    x = pb.tensor(x_np, requires_grad=True)
    y, log_det = ordinary(stack, x)
    ((y * y).sum() - log_det.sum()).backward()
    # Backward replays the forward's random numbers, then puts the stream back where it was.
    np.testing.assert_array_equal(after_reversible, pb.rand(4).numpy())
    return worst_relative(reversible, grads(stack, x))


def test_convolutions_split_along_channels():
    pb.manual_seed(0)
    stack = ReversibleSequential(
        [ReversibleBlock(conv(2), conv(2), split_dim=1),
         AffineCoupling(nn.Sequential(conv(2), nn.Tanh()), conv(2), split_dim=1),
         ReversibleBlock(conv(2), conv(2), split_dim=1)]).double()
    x_np = np.random.default_rng(1).standard_normal((2, 4, 5, 5))
    assert _compare(stack, x_np) <= 1e-10
    assert stack.reconstruction_error(pb.tensor(x_np)) <= 1e-14


def test_self_attention_as_f_and_an_mlp_as_g():
    pb.manual_seed(0)
    stack = ReversibleSequential(
        [ReversibleBlock(SelfAttention(8), mlp(8, 0.0)) for _ in range(3)]).double()
    x_np = np.random.default_rng(2).standard_normal((2, 5, 16))
    assert _compare(stack, x_np) <= 1e-10


def test_dropout_masks_are_replayed_when_blocks_are_rebuilt():
    pb.manual_seed(0)
    blocks = [ReversibleBlock(SelfAttention(8, dropout=0.2), mlp(8, 0.3)) for _ in range(3)]
    blocks.append(AffineCoupling(nn.Sequential(mlp(8, 0.25), nn.Tanh()), mlp(8, 0.25)))
    # Debug mode checks every rebuilt input against the stored one; the masks must match for
    # the reconstruction to be exact.
    stack = ReversibleSequential(blocks, debug=True, tolerance=1e-13).double()
    x_np = np.random.default_rng(3).standard_normal((2, 5, 16))
    assert _compare(stack, x_np, seed=11) <= 1e-10


def test_dropout_really_draws_different_masks_per_block_and_step():
    # The replay test above would pass trivially if dropout drew nothing: check that it does.
    pb.manual_seed(0)
    stack = ReversibleSequential([ReversibleBlock(mlp(4, 0.5), mlp(4, 0.5))]).double()
    x = pb.tensor(np.random.default_rng(4).standard_normal((3, 8)))
    with pb.no_grad():
        assert not np.array_equal(stack(x).numpy(), stack(x).numpy())
        stack.eval()
        np.testing.assert_array_equal(stack(x).numpy(), stack(x).numpy())
