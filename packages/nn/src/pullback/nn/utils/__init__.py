"""``pullback.nn.utils`` (PyTorch's ``torch.nn.utils``): helpers around the layers, one
submodule per subject (``rnn``: packed and padded sequences)."""

from . import rnn

__all__ = ["rnn"]
