"""pullback.optim: optimizers, learning-rate schedulers and gradient clipping.

The optimizers follow PyTorch's update rules, hyper-parameters and defaults (Lion follows its
paper); each step is one pass of in-place NumPy (or CuPy) ufuncs per parameter, with no graph
and no temporaries. Optimizers and schedulers are registered by name in :data:`OPTIMIZERS` and
:data:`lr_scheduler.SCHEDULERS`, and their ``state_dict()`` is a nested dict of Tensors and
JSON values for :func:`pullback.save`.

``clip_grad_norm_`` and ``clip_grad_value_`` live here (PyTorch has them in
``torch.nn.utils``) because pullback.nn is a separate distribution.

Example:
    >>> import pullback, pullback.optim
    >>> w = pullback.tensor([1.0, 2.0], requires_grad=True)
    >>> opt = pullback.optim.AdamW([w], lr=0.1)
    >>> loss = (w * w).sum()
    >>> loss.backward()
    >>> opt.step()
    >>> opt.zero_grad()
"""

from pullback.plugins import ensure_registered as _ensure_registered

from . import lr_scheduler
from .__about__ import __version__
from .adadelta import Adadelta
from .adagrad import Adagrad
from .adam import Adam, AdamW
from .adamax import Adamax
from .asgd import ASGD
from .clip import clip_grad_norm_, clip_grad_value_
from .errors import (
    HyperparameterError, NonFiniteNormError, OptimizerError, OptimizerTypeError, ParamGroupError,
)
from .lbfgs import LBFGS
from .lion import Lion
from .nadam import NAdam
from .optimizer import OPTIMIZERS, Optimizer, mark_modified
from .radam import RAdam
from .rmsprop import RMSprop
from .rprop import Rprop
from .sgd import SGD
from .sparse_adam import SparseAdam

__all__ = [
    "ASGD", "OPTIMIZERS", "SGD", "Adadelta", "Adagrad", "Adam", "AdamW", "Adamax",
    "HyperparameterError", "LBFGS", "Lion", "NAdam", "NonFiniteNormError", "Optimizer", "OptimizerError",
    "OptimizerTypeError", "ParamGroupError", "RAdam", "RMSprop", "Rprop", "SparseAdam",
    "__version__", "clip_grad_norm_", "clip_grad_value_", "lr_scheduler", "mark_modified",
]

_ensure_registered("pullback.optim._plugin", "optim", "pullback-optim")
