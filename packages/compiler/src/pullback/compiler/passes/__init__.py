"""Graph passes: registered by name, each a function ``graph -> graph``.

Passes register through the plugin hook ``register_graph_passes`` (this package's own, and any
other plugin's) and are looked up in :func:`pullback.plugins.graph_passes`. A pass takes a
:class:`~pullback.compiler.Graph` and returns the optimized graph (it may change the one it got:
:func:`optimize` hands each pass a copy). :data:`DEFAULT_PIPELINE` is what ``compile`` runs.
"""

from __future__ import annotations

from typing import Any, Callable, Sequence

from pullback.plugins import graph_passes

from .._ir import Graph
from . import (  # noqa: F401  (they register themselves)
    algebraic, attention, constant_fold, cse, dce, epilogue, fold, fusion, gelu_slope, inplace,
    layer_norm, slices,
)

GraphPass = Callable[[Graph], Graph]

# pack_attention_grads reads the assembled slices once dce has dropped the sums they replace
# (its own leftovers go with the next dce)
DEFAULT_PIPELINE: tuple[str, ...] = ("algebraic", "constant_fold", "cse", "assemble_slices",
                                     "dce", "pack_attention_grads", "fuse_elementwise", "dce",
                                     "layer_norm_backward_add", "gelu_slope_in_forward",
                                     "matmul_epilogue", "write_in_place")


def get_pass(name_or_pass: str | GraphPass) -> GraphPass:
    """A pass by registered name (or the callable itself)."""
    if callable(name_or_pass):
        return name_or_pass
    table = graph_passes()
    try:
        return table[name_or_pass]
    except KeyError:
        raise KeyError(f"no graph pass named {name_or_pass!r} (registered: "
                       f"{', '.join(sorted(table))})") from None


def optimize(graph: Graph, passes: Sequence[str | GraphPass] | None = None
             ) -> tuple[Graph, list[dict[str, Any]]]:
    """Run ``passes`` (the default pipeline when ``None``) over a copy of ``graph``.

    Returns:
        The optimized graph and one record per pass: ``{"pass", "nodes_before",
        "nodes_after"}``.
    """
    pipeline = DEFAULT_PIPELINE if passes is None else passes
    report = []
    current = graph.copy()
    current.verify()
    for p in pipeline:
        fn = get_pass(p)
        before = len(current.nodes)
        current = fn(current)
        current.verify()
        report.append({"pass": p if isinstance(p, str) else getattr(fn, "__name__", repr(fn)),
                       "nodes_before": before, "nodes_after": len(current.nodes)})
    return current, report
