"""The glass box: see inside autograd.

* :func:`detect_anomaly` / :func:`set_detect_anomaly`: stop at the first op that makes a NaN or
  an Inf, forward or backward, naming the op, its inputs and the user's line that created it.
* :func:`visualize` / :func:`to_dot`: the graph behind a tensor, as an ASCII tree or Graphviz.
* :class:`profile` (and :class:`record_function`): calls, time and bytes per op, as a table or
  a Chrome trace.
* :class:`watch` / :func:`explain_gradients`: gradient and activation statistics, in sentences.

All of it is built on dispatch modes and the engine's hooks: with the debugger off it costs
nothing.
"""

from .anomaly import detect_anomaly, is_anomaly_enabled, set_detect_anomaly
from .explain import GradientReport, explain_gradients
from .graphview import to_dot, visualize
from .profiler import profile, record_function
from .watch import watch

__all__ = [
    "GradientReport", "detect_anomaly", "explain_gradients", "is_anomaly_enabled", "profile",
    "record_function", "set_detect_anomaly", "to_dot", "visualize", "watch",
]
