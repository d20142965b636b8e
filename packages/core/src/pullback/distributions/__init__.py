"""``pullback.distributions``: probability distributions under PyTorch's names
(``torch.distributions``), for the policies, VAEs and likelihoods ported programs build.

``Categorical``, ``Bernoulli`` and ``Normal``, each with ``sample``, ``log_prob`` and
``entropy`` (and ``rsample`` for the Normal), batch shapes as in PyTorch, and gradients of
``log_prob`` and ``entropy`` with respect to their parameters. Samples come from pullback's
generator (``pullback.manual_seed``): the same distributions as PyTorch's, not the same
numbers.

Example:
    >>> import pullback
    >>> from pullback.distributions import Categorical
    >>> m = Categorical(probs=pullback.tensor([0.25, 0.75]))
    >>> round(m.log_prob(pullback.tensor(1)).item(), 4)
    -0.2877
"""

from .bernoulli import Bernoulli
from .categorical import Categorical
from .distribution import Distribution
from .normal import Normal

__all__ = ["Bernoulli", "Categorical", "Distribution", "Normal"]
