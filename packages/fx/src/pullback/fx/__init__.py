"""pullback.fx: capture a Module's ``forward`` as a Graph of its calls, edit it, and run it
again as a Module (torch.fx's API, names and semantics).

* :func:`symbolic_trace` runs ``forward`` on :class:`Proxy` values and returns a
  :class:`GraphModule`: its :class:`Graph` of :class:`Node` objects (``placeholder``,
  ``get_attr``, ``call_function``, ``call_method``, ``call_module``, ``output``) and the Python
  source generated from it (``.code``).
* :class:`Tracer` is what symbolic_trace uses: subclass it to choose the leaf modules or tag
  nodes; :func:`wrap` keeps a free function as a call.
* :class:`Interpreter` runs a graph node by node, :class:`Transformer` rewrites one;
  :mod:`pullback.fx.passes.shape_prop` records shapes; :func:`replace_pattern` rewrites
  subgraphs.

pullback.compiler works one level down (every op, with the backward and optimizer step, for
execution); fx works on the user's modules and functions, for editing programs. See docs/fx.md.
"""

from pullback.plugins import ensure_registered as _ensure_registered

from . import passes, proxy, subgraph_rewriter
from .__about__ import __version__
from ._symbolic_trace import Tracer, symbolic_trace, wrap
from .graph import Graph
from .graph_module import GraphModule
from .interpreter import Interpreter, Transformer
from .node import Node, has_side_effect, map_arg
from .proxy import Proxy, TraceError
from .subgraph_rewriter import replace_pattern

_ensure_registered("pullback.fx._plugin", "fx", "pullback-fx")

__all__ = [
    "Graph", "GraphModule", "Interpreter", "Node", "Proxy", "TraceError", "Tracer",
    "Transformer", "__version__", "has_side_effect", "map_arg", "passes", "proxy",
    "replace_pattern", "subgraph_rewriter", "symbolic_trace", "wrap",
]
