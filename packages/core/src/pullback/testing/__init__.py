"""Verification tools for pullback and for anything built on it.

* :func:`assert_close`: ``torch.testing.assert_close``, with PyTorch's tolerances and messages.
* :func:`gradcheck` / :func:`gradgradcheck`: float64 central finite differences against
  :func:`pullback.autograd.grad`, first and second order (:func:`compare_jacobians` and
  :func:`vector_jacobian_product` are the pieces, for reports that want the numbers).
* :mod:`pullback.testing.opdb`: the op database (sample inputs per op, PyTorch equivalents,
  error cases) that drives core's generated tests.
* :mod:`pullback.testing.conformance`: a pytest plugin that runs the op database on any backend
  against the CPU (``pytest -p pullback.testing.conformance --backend NAME``).
* ``python -m pullback.testing.report``: regenerates ``docs/gradcheck.md`` from a real run.
* :mod:`pullback.testing.packaging`: checks that a package is installed with its version and
  entry points and loads as a plugin (:func:`~pullback.testing.packaging.assert_empty_plugin`
  for packages that register nothing yet).

Nothing here imports torch: PyTorch, where it is the oracle, is passed in as a module.
"""

from .assert_close import assert_close
from .gradcheck import (
    GradcheckError, JacobianComparison, compare_jacobians, gradcheck, gradgradcheck,
    vector_jacobian_product,
)

__all__ = [
    "GradcheckError", "assert_close", "JacobianComparison", "compare_jacobians", "gradcheck", "gradgradcheck",
    "vector_jacobian_product",
]
