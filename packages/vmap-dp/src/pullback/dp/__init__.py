"""pullback.dp: differentially private training (DP-SGD) with privacy accounting, after Opacus.

``PrivacyEngine().make_private(module, optimizer, data_loader, noise_multiplier, max_grad_norm)``
returns a model whose per-sample gradients come from ``pullback.func.vmap(grad(...))``, an
optimizer that clips them, adds Gaussian noise and averages, and a Poisson-sampling loader;
the engine's accountant (RDP or PRV) says what the training has spent. The privacy math is in
pure functions (:func:`compute_rdp`, :func:`rdp_to_epsilon`, :func:`prv_epsilon`).
"""

from __future__ import annotations

from pullback import plugins as _plugins

_plugins.ensure_registered("pullback.dp._plugin", "dp", "pullback-vmap-dp")

from ._accountants import (  # noqa: E402
    ACCOUNTANTS, Accountant, PRVAccountant, RDPAccountant, create_accountant,
    get_noise_multiplier,
)
from ._batch_memory import BatchMemoryManager  # noqa: E402
from ._data import DPDataLoader  # noqa: E402
from ._engine import PrivacyEngine  # noqa: E402
from ._errors import (  # noqa: E402
    BudgetError, ModuleIssue, PrivacyParameterError, PrivacyUsageError, UnsupportedModuleError,
)
from ._grad_sample import GradSampleModule  # noqa: E402
from ._optimizer import CLIPPING, DPOptimizer, DPPerLayerOptimizer  # noqa: E402
from ._prv import prv_epsilon  # noqa: E402
from ._rdp import DEFAULT_ORDERS, compute_rdp, rdp_to_epsilon  # noqa: E402
from ._validators import (  # noqa: E402
    PER_SAMPLE_LAYERS, VALIDATORS, ModuleValidator, register_per_sample_layer, register_validator,
)

__all__ = [
    "ACCOUNTANTS", "Accountant", "BatchMemoryManager", "BudgetError", "CLIPPING", "DEFAULT_ORDERS",
    "DPDataLoader", "DPOptimizer", "DPPerLayerOptimizer", "GradSampleModule", "ModuleIssue",
    "ModuleValidator", "PER_SAMPLE_LAYERS", "PRVAccountant", "PrivacyEngine",
    "PrivacyParameterError", "PrivacyUsageError", "RDPAccountant", "UnsupportedModuleError",
    "VALIDATORS", "compute_rdp", "create_accountant", "get_noise_multiplier", "prv_epsilon",
    "rdp_to_epsilon", "register_per_sample_layer", "register_validator",
]
