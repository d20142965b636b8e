"""PyTorch's public module paths that pullback has: each imports under the same name
(``import pullback.nn.modules.conv``, ``from pullback.utils.data.dataloader import
DataLoader``), the committed list (``torch_module_paths.txt``) is exactly what pullback has
against the installed torch, and what each exports is there in torch under the same name and
of the same kind (a class, a function, a module), except pullback's own additions, named below
with the reason."""

from __future__ import annotations

import importlib
import sys
import warnings
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))
import torch_paths  # noqa: E402

# Paths whose pullback module is another API under the same name: their exports are not
# compared.
OTHER_API = {
    "torch.compiler": "pullback.compiler is pullback's graph compiler (trace, passes, C99 and "
                      "ONNX export); torch.compile's counterpart is pullback.compile",
}
# pullback's additions at a torch path, and why they are there
EXTRAS: dict[str, tuple[set[str], str]] = {
    "torch.amp": ({"POLICIES", "Policy", "autocast_function", "get_autocast_dtype",
                   "is_autocast_enabled"}, "the autocast policies; the queries are torch.*'s"),
    "torch.amp.autocast_mode": ({"get_autocast_dtype", "is_autocast_enabled"},
                                "torch.get_autocast_dtype and is_autocast_enabled"),
    "torch.autograd": ({"FunctionCtx", "checkpoint", "is_anomaly_check_nan_enabled",
                        "is_anomaly_enabled", "is_grad_enabled", "is_inference_mode_enabled",
                        "once_differentiable", "queue_callback"},
                       "PyTorch has them in torch, torch.autograd.function, torch.utils.checkpoint"
                       " and its engine"),
    "torch.autograd.anomaly_mode": ({"is_anomaly_check_nan_enabled", "is_anomaly_enabled"},
                                    "torch.is_anomaly_enabled and friends"),
    "torch.autograd.function": ({"FunctionNode"}, "the graph node of a Function"),
    "torch.autograd.grad_mode": ({"is_grad_enabled", "is_inference_mode_enabled"},
                                 "torch.is_grad_enabled and torch.is_inference_mode_enabled"),
    "torch.backends": ({"Backend", "Device", "backends", "devices", "get_backend",
                        "is_available", "register_backend", "synchronize"},
                       "pullback's device registry lives beside torch.backends' switches"),
    "torch.cuda": ({"DeviceProperties", "KERNELS", "__version__", "custom_kernels_enabled",
                    "fused_adamw_", "fused_adamw_supported", "memory_info",
                    "unavailable_reason", "use_custom_kernels"},
                   "pullback-cuda's own kernels and diagnostics"),
    "torch.distributed": ({"DistributedDataParallel", "DistributedError", "DistributedSampler",
                           "DistributedTimeoutError", "__version__", "launched_world_size",
                           "save_checkpoint"},
                          "pullback-distributed's package (DDP and the sampler are also at "
                          "PyTorch's paths)"),
    "torch.fx": ({"TraceError", "__version__"},
                 "TraceError is torch.fx.proxy's (pullback.fx.proxy has it too); pullback-fx's "
                 "version"),
    "torch.func": ({"FuncError", "MissingRuleError", "VmapError", "VmapFallbackWarning",
                    "loop_fallback"}, "pullback-vmap-dp's errors and its loop fallback"),
    "torch.linalg": ({"EighResult", "LstsqResult", "QRResult", "SVDResult", "SlogdetResult"},
                     "the result tuples (torch.return_types in PyTorch)"),
    "torch.nn": ({"LoRALinear", "MultiHeadAttention", "TransformerBlock", "__version__",
                  "inject_lora", "lora_state_dict", "merge_lora", "unmerge_lora"},
                 "LoRA, a pre-norm transformer block, and MultiheadAttention's other spelling"),
    "torch.nn.modules": ({"MultiHeadAttention", "TransformerBlock"}, "as torch.nn"),
    "torch.nn.modules.transformer": ({"TransformerBlock", "generate_square_subsequent_mask"},
                                     "a pre-norm block; the mask function PyTorch keeps as "
                                     "a static method"),
    "torch.optim": ({"HyperparameterError", "Lion", "NonFiniteNormError", "OPTIMIZERS",
                     "OptimizerError", "OptimizerTypeError", "ParamGroupError", "__version__",
                     "clip_grad_norm_", "clip_grad_value_", "mark_modified"},
                    "pullback-optim's errors, registry, Lion and gradient clipping"),
    "torch.optim.adam": ({"AdamW"}, "defined with Adam (torch.optim.adamw too)"),
    "torch.optim.optimizer": ({"mark_modified", "require_betas", "require_non_negative"},
                              "the optimizers' shared checks"),
    "torch.optim.lr_scheduler": ({"DECAY_SHAPES", "SCHEDULERS", "WarmupCosine",
                                  "WarmupStableDecay", "warmup_cosine", "warmup_stable_decay"},
                                 "the schedulers' registry and two warmup schedules"),
    "torch.testing": ({"GradcheckError", "JacobianComparison", "compare_jacobians", "gradcheck",
                       "gradgradcheck", "vector_jacobian_product"},
                      "pullback's verification tools (gradcheck is torch.autograd's)"),
    "torch.utils.data": ({"WorkerInfo"}, "torch.utils.data._utils.worker.WorkerInfo"),
}


def _import(name: str):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return importlib.import_module(name)


@pytest.mark.parametrize("path", torch_paths.listed())
def test_a_listed_path_imports_under_pullback_s_name(path):
    name = torch_paths.pullback_path(path)
    module = _import(name)
    assert sys.modules[name] is module  # (pullback.cuda.amp may be another module's alias)


def test_the_list_is_what_pullback_has_against_the_installed_torch():
    torch = pytest.importorskip("torch", reason="the list is generated from torch's files")
    have = torch_paths.implemented(torch_paths.torch_public_paths(torch))
    assert have == torch_paths.listed(), (
        "pullback's torch paths changed: python tests-integration/torch_paths.py --write")


@pytest.mark.parametrize("path", [p for p in torch_paths.listed() if p not in OTHER_API])
def test_what_a_path_exports_is_torch_s_name_of_the_same_kind(path):
    pytest.importorskip("torch", reason="PyTorch is the oracle")
    ours, theirs = _import(torch_paths.pullback_path(path)), _import(path)
    extras, _ = EXTRAS.get(path, (set(), ""))
    names = torch_paths.exported(ours)
    missing = sorted(n for n in names - extras if not hasattr(theirs, n))
    assert not missing, f"{path}: pullback exports {missing}, which torch has not there"
    kinds = {n: (torch_paths.kind(getattr(ours, n)), torch_paths.kind(getattr(theirs, n)))
             for n in names - extras}
    assert {n: k for n, k in kinds.items() if k[0] != k[1]} == {}
    unused = sorted(n for n in extras if n not in names or hasattr(theirs, n))
    assert not unused, f"{path}: {unused} need no exception any more"
