"""pullback.nn: modules, layers, losses, initialization, attention, LoRA and data loading,
with PyTorch's names and semantics (``torch.nn`` users know it already).

Conv, pooling, softmax, layer norm, attention, linear and cross-entropy are fused ops in core's
op registry (``"nn.conv2d"``...), registered by this package's plugin.
"""

import pullback.plugins as _plugins

_plugins.ensure_registered("pullback.nn._plugin", "nn", "pullback-nn")

from . import functional, init  # noqa: E402
from . import parallel, utils  # noqa: E402
from .__about__ import __version__  # noqa: E402
from .containers import ModuleDict, ModuleList, Sequential  # noqa: E402
from .lora import LoRALinear, inject_lora, lora_state_dict, merge_lora, unmerge_lora  # noqa: E402
from .module import Module  # noqa: E402
from .modules import *  # noqa: E402,F401,F403
from .modules import __all__ as _layers  # noqa: E402
from .parameter import Buffer, Parameter  # noqa: E402
from .parallel import DataParallel  # noqa: E402

__all__ = [
    "Buffer", "DataParallel", "LoRALinear", "Module", "ModuleDict", "ModuleList", "Parameter",
    "Sequential", "__version__", "functional", "init", "inject_lora", "lora_state_dict",
    "merge_lora", "parallel", "unmerge_lora", "utils", *_layers,
]
