"""``Dropout``: active in training mode only."""

from __future__ import annotations

from pullback.tensor import Tensor

from .. import functional as F
from ..functional.dropout import check_p
from ..module import Module


class Dropout(Module):
    """Zero elements with probability ``p`` in training (scaling the rest by 1/(1-p));
    the identity in evaluation. Masks come from the device's seeded generator."""

    def __init__(self, p: float = 0.5) -> None:
        super().__init__()
        self.p = check_p("Dropout", p)

    def forward(self, input: Tensor) -> Tensor:
        return F.dropout(input, self.p, self.training)

    def extra_repr(self) -> str:
        return f"p={self.p}"
