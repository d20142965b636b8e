"""``Embedding`` (a lookup table of vectors) and ``EmbeddingBag`` (sums, means or maxima of
bags of them), with PyTorch's constructors, ``from_pretrained`` and parameter names."""

from __future__ import annotations

from typing import Any

import pullback
from pullback.errors import ShapeError
from pullback.tensor import Tensor

from .. import functional as F
from ..functional.embedding import padding_index
from .. import init
from ..module import Module
from ..parameter import Parameter


def _given_weight(where: str, num: int, dim: int, given: Tensor | None,
                  freeze: bool) -> Parameter | None:
    """The weight Parameter from ``_weight`` (checked against the sizes), or None to make."""
    if given is None:
        return None
    if tuple(given.shape) != (num, dim):
        raise ShapeError(f"{where}: _weight of shape {tuple(given.shape)} does not match "
                         f"num_embeddings and embedding_dim ({num}, {dim})")
    return Parameter(given, requires_grad=not freeze)


def _pretrained(where: str, embeddings: Tensor) -> tuple[int, int]:
    if embeddings.ndim != 2:
        raise ShapeError(f"{where}.from_pretrained: embeddings must be 2-D, got shape "
                         f"{tuple(embeddings.shape)}")
    return embeddings.shape[0], embeddings.shape[1]


class Embedding(Module):
    """Rows of a (num_embeddings, embedding_dim) weight, N(0, 1) initialized.

    Args:
        padding_idx: that row starts at zero and receives no gradient.
        max_norm: rows looked up with a ``norm_type``-norm above it are renormalized to it,
            in the weight itself, at each forward.
        scale_grad_by_freq: each row's gradient is divided by its count in the batch.
        sparse: accepted; the gradient is dense (pullback has no sparse tensors).
        _weight, _freeze: an initial weight (and whether it is frozen), as in PyTorch.
    """

    def __init__(self, num_embeddings: int, embedding_dim: int, padding_idx: int | None = None,
                 max_norm: float | None = None, norm_type: float = 2.0,
                 scale_grad_by_freq: bool = False, sparse: bool = False,
                 _weight: Tensor | None = None, _freeze: bool = False, device: Any = None,
                 dtype: Any = None) -> None:
        super().__init__()
        padding_idx = padding_index("Embedding", padding_idx, num_embeddings)
        self.num_embeddings, self.embedding_dim = num_embeddings, embedding_dim
        self.padding_idx, self.max_norm, self.norm_type = padding_idx, max_norm, norm_type
        self.scale_grad_by_freq, self.sparse = scale_grad_by_freq, sparse
        given = _given_weight("Embedding", num_embeddings, embedding_dim, _weight, _freeze)
        if given is None:
            self.weight = Parameter(pullback.empty(num_embeddings, embedding_dim, device=device,
                                                   dtype=dtype), requires_grad=not _freeze)
            self.reset_parameters()
        else:
            self.weight = given

    def reset_parameters(self) -> None:
        """N(0, 1), with the padding row zeroed."""
        init.normal_(self.weight)
        if self.padding_idx is not None:
            with pullback.no_grad():
                self.weight[self.padding_idx] = 0.0

    def forward(self, input: Tensor) -> Tensor:
        return F.embedding(input, self.weight, self.padding_idx, self.max_norm, self.norm_type,
                           self.scale_grad_by_freq, self.sparse)

    @classmethod
    def from_pretrained(cls, embeddings: Tensor, freeze: bool = True,
                        padding_idx: int | None = None, max_norm: float | None = None,
                        norm_type: float = 2.0, scale_grad_by_freq: bool = False,
                        sparse: bool = False) -> Embedding:
        """An Embedding holding ``embeddings`` (frozen unless ``freeze=False``)."""
        num, dim = _pretrained("Embedding", embeddings)
        return cls(num, dim, padding_idx, max_norm, norm_type, scale_grad_by_freq, sparse,
                   _weight=embeddings, _freeze=freeze)

    def extra_repr(self) -> str:
        s = f"{self.num_embeddings}, {self.embedding_dim}"
        if self.padding_idx is not None:
            s += f", padding_idx={self.padding_idx}"
        if self.max_norm is not None:
            s += f", max_norm={self.max_norm}"
        return s + (", scale_grad_by_freq=True" if self.scale_grad_by_freq else "")


class EmbeddingBag(Module):
    """Sums, means or maxima of bags of embedding rows, without the intermediate rows'
    (B, bag size, dim) tensor of ``Embedding`` plus a reduction.

    Args: PyTorch's (``max_norm``, ``norm_type``, ``scale_grad_by_freq``, ``mode`` =
    ``"mean"``/``"sum"``/``"max"``, ``sparse`` (dense gradient), ``_weight``,
    ``include_last_offset``, ``padding_idx``: left out of its bag).

    ``forward(input, offsets=None, per_sample_weights=None)``: a 2-d ``input`` is a batch of
    equal bags; a 1-d one is split at ``offsets``. See :func:`pullback.nn.functional.embedding_bag`.
    """

    def __init__(self, num_embeddings: int, embedding_dim: int, max_norm: float | None = None,
                 norm_type: float = 2.0, scale_grad_by_freq: bool = False, mode: str = "mean",
                 sparse: bool = False, _weight: Tensor | None = None,
                 include_last_offset: bool = False, padding_idx: int | None = None,
                 device: Any = None, dtype: Any = None) -> None:
        super().__init__()
        padding_idx = padding_index("EmbeddingBag", padding_idx, num_embeddings)
        self.num_embeddings, self.embedding_dim = num_embeddings, embedding_dim
        self.max_norm, self.norm_type = max_norm, norm_type
        self.scale_grad_by_freq = scale_grad_by_freq
        self.mode, self.sparse, self.include_last_offset = mode, sparse, include_last_offset
        self.padding_idx = padding_idx
        given = _given_weight("EmbeddingBag", num_embeddings, embedding_dim, _weight, False)
        if given is None:
            self.weight = Parameter(pullback.empty(num_embeddings, embedding_dim, device=device,
                                                   dtype=dtype))
            self.reset_parameters()
        else:
            self.weight = given

    reset_parameters = Embedding.reset_parameters

    def forward(self, input: Tensor, offsets: Tensor | None = None,
                per_sample_weights: Tensor | None = None) -> Tensor:
        return F.embedding_bag(input, self.weight, offsets, self.max_norm, self.norm_type,
                               self.scale_grad_by_freq, self.mode, self.sparse,
                               per_sample_weights, self.include_last_offset, self.padding_idx)

    @classmethod
    def from_pretrained(cls, embeddings: Tensor, freeze: bool = True,
                        max_norm: float | None = None, norm_type: float = 2.0,
                        scale_grad_by_freq: bool = False, mode: str = "mean",
                        sparse: bool = False, include_last_offset: bool = False,
                        padding_idx: int | None = None) -> EmbeddingBag:
        """An EmbeddingBag holding ``embeddings`` (frozen unless ``freeze=False``)."""
        num, dim = _pretrained("EmbeddingBag", embeddings)
        bag = cls(num, dim, max_norm, norm_type, scale_grad_by_freq, mode, sparse, embeddings,
                  include_last_offset, padding_idx)
        bag.weight.requires_grad_(not freeze)
        return bag

    def extra_repr(self) -> str:
        s = f"{self.num_embeddings}, {self.embedding_dim}, mode={self.mode!r}"
        return s + (f", padding_idx={self.padding_idx}" if self.padding_idx is not None else "")
