"""Code for test_symbolic_trace.py's wrap and autowrap tests: wrap() must be called at the top
of the module that calls the functions, and autowrap looks at that module's globals."""

from __future__ import annotations

from math import sqrt

import pullback
import pullback.fx
from pullback import nn, relu


def normalize(x):
    return x / x.norm()


pullback.fx.wrap("normalize")
pullback.fx.wrap("len")


class UsesWrapped(nn.Module):
    def forward(self, x):
        return normalize(x) * len(x)


def uses_sqrt(x):
    return sqrt(x)


def uses_imported_relu(x):
    return relu(x)
