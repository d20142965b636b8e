"""Model validation for DP-SGD: small registered checks, each returning the issues of one layer
with its dotted name and the fix (Opacus's ``ModuleValidator``).

Two things make a layer unusable. Its output for one sample may depend on the other samples of
the batch (BatchNorm in training mode normalizes with batch statistics), so that no per-sample
gradient exists and one example's influence is not bounded by clipping. Or pullback.dp may not
know how to get its per-sample gradients: they come from ``pullback.func.vmap(grad(...))``
through :func:`pullback.func.functional_call`, which works for a layer whose ops all have
``"batch"`` rules; :data:`PER_SAMPLE_LAYERS` lists the layers known (and tested) to, and a
layer with trainable parameters of its own that is not listed is refused by name.
"""

from __future__ import annotations

import math
from typing import Callable

from pullback import nn
from pullback.nn.modules.linear import NonDynamicallyQuantizableLinear
from pullback.optim._registry import Registry

from ._errors import ModuleIssue, UnsupportedModuleError

Check = Callable[[str, nn.Module], list[ModuleIssue]]

PER_SAMPLE_LAYERS = Registry("per-sample layer")
"""Layer classes (by class name) whose per-sample gradients pullback.dp computes through
``vmap(grad)``; the tests run every one of them against a per-sample loop."""

VALIDATORS: dict[type, Check] = {}
"""The check of each layer class that has one of its own (exact classes); every other layer gets
:func:`check_per_sample_rule`."""

FIXERS: dict[type, Callable[[nn.Module], nn.Module]] = {}
"""A replacement for each layer class that :meth:`ModuleValidator.fix` can swap in."""


def register_per_sample_layer(layer: type) -> type:
    """Declare that ``layer``'s per-sample gradients can be computed with ``vmap(grad)`` (its
    forward uses only ops with ``"batch"`` rules and treats each sample on its own). Usable as a
    class decorator.

    Check it first: ``vmap(grad(f), in_dims=(None, 0))(params, x)`` with
    ``f = lambda p, x: functional_call(layer, p, (x[None],)).sum()`` must equal a loop of
    ordinary backward passes.
    """
    return PER_SAMPLE_LAYERS.register(layer.__name__)(layer)


def register_validator(*layers: type) -> Callable[[Check], Check]:
    """Decorator: ``check(path, module)`` replaces the default check for these exact classes."""

    def add(check: Check) -> Check:
        for layer in layers:
            VALIDATORS[layer] = check
        return check

    return add


def _own_trainable(module: nn.Module) -> list[str]:
    return [name for name, p in module._parameters.items() if p is not None and p.requires_grad]


def check_per_sample_rule(path: str, module: nn.Module) -> list[ModuleIssue]:
    """A layer with trainable parameters of its own must be in :data:`PER_SAMPLE_LAYERS`
    (layers without parameters need no per-sample rule: their ops' batch rules are checked when
    vmap runs them, and a missing one is a ``MissingRuleError`` naming the op)."""
    own = _own_trainable(module)
    layer = type(module)
    if not own or PER_SAMPLE_LAYERS.get(layer.__name__) is layer:
        return []
    return [ModuleIssue(
        path, layer.__name__,
        f"it holds trainable parameters ({', '.join(own)}) and has no per-sample gradient "
        "rule in pullback.dp.",
        f"if its forward treats each sample on its own with ops that pullback.func.vmap "
        f"batches, register it: pullback.dp.register_per_sample_layer({layer.__name__}); "
        f"otherwise freeze its parameters (requires_grad_(False)) or replace it.")]


_BATCH_NORMS = (nn.BatchNorm1d, nn.BatchNorm2d, nn.BatchNorm3d)


@register_validator(*_BATCH_NORMS)
def check_batch_norm(path: str, module: nn.Module) -> list[ModuleIssue]:
    """BatchNorm in training mode normalizes each sample with statistics of the whole batch."""
    if not module.training:  # frozen running statistics: each sample on its own
        return []
    channels = module.num_features
    return [ModuleIssue(
        path, type(module).__name__,
        "BatchNorm normalizes each sample with the mean and variance of its batch, so one "
        "sample's output depends on the others: per-sample gradients are not defined and "
        "clipping does not bound an example's influence.",
        f"use GroupNorm, which normalizes each sample on its own: "
        f"nn.GroupNorm({math.gcd(32, channels)}, {channels}) "
        f"(ModuleValidator.fix(model) swaps it in), or freeze it with .eval().")]


def _batch_norm_to_group_norm(module: nn.Module) -> nn.Module:
    channels = module.num_features
    return nn.GroupNorm(math.gcd(32, channels), channels, affine=module.affine)


for _norm in _BATCH_NORMS:
    FIXERS[_norm] = _batch_norm_to_group_norm

_RECURRENT = (nn.RNNBase, nn.RNN, nn.LSTM, nn.GRU)


@register_validator(*_RECURRENT)
def check_recurrent(path: str, module: nn.Module) -> list[ModuleIssue]:
    """pullback.dp takes dim 0 of every input as the sample dim; a recurrent layer reads
    (T, N, features) unless it is batch-first."""
    if module.batch_first:
        return []
    return [ModuleIssue(
        path, type(module).__name__,
        "it reads its input as (time, batch, features), but per-sample gradients are taken "
        "along dim 0 of every input.",
        "construct it with batch_first=True (inputs of shape (batch, time, features)).")]


_INSTANCE_NORMS = (nn.InstanceNorm1d, nn.InstanceNorm2d, nn.InstanceNorm3d)


@register_validator(*_INSTANCE_NORMS)
def check_instance_norm(path: str, module: nn.Module) -> list[ModuleIssue]:
    """InstanceNorm normalizes each sample on its own; tracked running statistics, though, are
    updated with the whole batch in the forward pass and then not replayed per sample."""
    if not module.track_running_stats or not module.training:
        return []
    return [ModuleIssue(
        path, type(module).__name__,
        "it updates running statistics from the whole batch in training mode.",
        "construct it with track_running_stats=False (the default), or use GroupNorm.")]


# NonDynamicallyQuantizableLinear: MultiheadAttention's out_proj, a Linear by another name (as
# in PyTorch).
for _layer in (nn.Linear, NonDynamicallyQuantizableLinear, nn.Bilinear, nn.LoRALinear,
               nn.Conv1d, nn.Conv2d, nn.Conv3d, nn.ConvTranspose1d, nn.ConvTranspose2d,
               nn.ConvTranspose3d, nn.Embedding, nn.EmbeddingBag, nn.LayerNorm, nn.RMSNorm,
               nn.GroupNorm, nn.MultiheadAttention, nn.PReLU, nn.RNNCell, nn.LSTMCell,
               nn.GRUCell, *_RECURRENT, *_INSTANCE_NORMS):
    register_per_sample_layer(_layer)


class ModuleValidator:
    """Runs the registered checks over a model."""

    @staticmethod
    def validate(module: nn.Module, *, strict: bool = False) -> list[ModuleIssue]:
        """Every issue of ``module`` and its layers (training mode, then each layer's check).

        Raises:
            UnsupportedModuleError: with ``strict``, when there is any issue.
        """
        issues = []
        if not module.training:
            issues.append(ModuleIssue("", type(module).__name__, "it is in evaluation mode.",
                                      "call model.train() before make_private."))
        for path, sub in module.named_modules():
            issues += VALIDATORS.get(type(sub), check_per_sample_rule)(path, sub)
        if strict and issues:
            raise UnsupportedModuleError(issues)
        return issues

    @staticmethod
    def is_valid(module: nn.Module) -> bool:
        """Whether :meth:`validate` finds nothing."""
        return not ModuleValidator.validate(module)

    @staticmethod
    def fix(module: nn.Module) -> nn.Module:
        """Replace, in place, every layer that has a registered fixer (BatchNorm -> GroupNorm);
        returns ``module`` (or its replacement, when the model itself is such a layer).
        The replacements start from fresh parameters, as in Opacus."""
        fixer = FIXERS.get(type(module))
        if fixer is not None:
            return fixer(module)
        for name, child in list(module.named_children()):
            setattr(module, name, ModuleValidator.fix(child))
        return module
