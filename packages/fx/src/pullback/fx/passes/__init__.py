"""Passes over fx graphs: :mod:`~pullback.fx.passes.shape_prop` records each node's shape and
dtype."""

from . import shape_prop

__all__ = ["shape_prop"]
