"""pullback.func: composable function transforms (``torch.func``, JAX).

``vmap`` batches a function without a loop; ``grad``, ``vjp`` and ``jacrev`` differentiate it in
reverse mode; ``jvp``, ``linearize`` and ``jacfwd`` in forward mode; ``hessian`` composes both;
``functional_call`` runs a Module with given parameters. Every transform composes with the
others: ``vmap(grad(f))`` gives per-sample gradients, ``jacfwd(jacrev(f))`` a Hessian.
"""

from __future__ import annotations

from pullback import plugins as _plugins

_plugins.ensure_registered("pullback.func._plugin", "func", "pullback-vmap-dp")

from ._batch_rules import VmapFallbackWarning, loop_fallback  # noqa: E402
from ._errors import FuncError, MissingRuleError, VmapError  # noqa: E402
from ._functional_call import functional_call  # noqa: E402
from ._jvp import jvp, linearize  # noqa: E402
from ._transforms import grad, grad_and_value, hessian, jacfwd, jacrev  # noqa: E402
from ._vjp import vjp  # noqa: E402
from ._vmap import vmap  # noqa: E402

__all__ = [
    "FuncError", "MissingRuleError", "VmapError", "VmapFallbackWarning", "functional_call",
    "grad", "grad_and_value", "hessian", "jacfwd", "jacrev", "jvp", "linearize", "loop_fallback",
    "vjp", "vmap",
]
