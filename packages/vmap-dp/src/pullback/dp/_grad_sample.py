"""``GradSampleModule``: a model whose backward pass gives one gradient per sample, computed
with ``pullback.func.vmap(grad(...))`` through ``functional_call`` (Opacus's ``GradSampleModule``,
which gets them from per-layer hooks instead).

The training loop stays the ordinary one (``loss = criterion(model(x), y); loss.backward();
optimizer.step()``), in two phases:

1. ``forward`` runs the model on the batch without recording a graph and returns its outputs
   as fresh leaves that require grad, so ``loss.backward()`` stops there: it only computes
   ``c = d loss / d outputs``, one row per sample.
2. When the optimizer asks (:meth:`GradSampleModule.take_per_sample_gradients`), each sample's
   gradient is that of ``<f(params, x_i), c_i>``, in batched passes over chunks of samples
   that replay the forward pass (:mod:`._replay`). For a loss that is a mean (or sum) of
   per-sample losses, this is each sample's own loss gradient, divided by the batch size
   (scaled back up for ``loss_reduction="mean"``, as Opacus does).

The replayed outputs are compared with the forward pass's: a model that mixes samples
(statistics over the batch) or draws random numbers some other way is refused, since its
per-sample gradients would be wrong.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Iterator

import pullback
from pullback import nn
from pullback.func._pytree import tree_flatten, tree_unflatten
from pullback.tensor import Tensor

from ._errors import PrivacyParameterError, PrivacyUsageError
from ._replay import per_sample_chunks

LOSS_REDUCTIONS = ("mean", "sum")


@dataclass
class _Record:
    """One forward pass in training mode, kept until its per-sample gradients are taken."""

    args: tuple[Any, ...]
    kwargs: dict[str, Any]
    rng_state: Any
    outputs: list[Any]  # the leaves returned to the caller (tensors that require grad)
    consumed: bool = False

    @property
    def backpropagated(self) -> bool:
        return any(isinstance(o, Tensor) and o.grad is not None for o in self.outputs)


def check_loss_reduction(value: Any, where: str) -> str:
    """``value`` if it is one of :data:`LOSS_REDUCTIONS`, else a :class:`PrivacyParameterError`."""
    if value not in LOSS_REDUCTIONS:
        raise PrivacyParameterError(f"{where}: loss_reduction must be one of {LOSS_REDUCTIONS} "
                                    f"(how the loss reduces over the batch), got {value!r}")
    return value


def _batch_size(args: tuple[Any, ...]) -> int:
    for leaf in tree_flatten(args)[0]:
        if isinstance(leaf, Tensor) and leaf.ndim > 0:
            return leaf.shape[0]
    raise PrivacyUsageError("GradSampleModule: no tensor argument with a batch dimension "
                            "(every positional tensor argument is batched along dim 0)")


class GradSampleModule(nn.Module):
    """Wraps ``module`` so that its per-sample gradients can be taken after ``backward``.

    Every positional tensor argument is batched along its first dimension (keyword arguments
    are passed to every sample unchanged); outputs are batched along their first dimension.
    In evaluation mode, or under ``pullback.no_grad()``, it is ``module`` itself.

    Args:
        module: the model (validated by the caller: see :class:`ModuleValidator`).
        loss_reduction: ``"mean"`` if the loss averages over the batch, ``"sum"`` if it sums.
        forbid_accumulation: refuse more than one backward pass per optimizer step (Poisson
            sampling: each sampled batch is one step of the mechanism).
        chunk_size: samples per batched replay (default: as many as fit 32 MiB of per-sample
            gradients, see :mod:`pullback.dp._replay`).

    ``state_dict`` and ``load_state_dict`` are the wrapped model's, without a prefix.
    """

    def __init__(self, module: nn.Module, *, loss_reduction: str = "mean",
                 forbid_accumulation: bool = False, chunk_size: int | None = None) -> None:
        super().__init__()
        if chunk_size is not None and (not isinstance(chunk_size, int) or chunk_size < 1):
            raise PrivacyParameterError(f"GradSampleModule: chunk_size must be a positive int "
                                        f"or None, got {chunk_size!r}")
        self._module = module
        self.loss_reduction = check_loss_reduction(loss_reduction, "GradSampleModule")
        self.forbid_accumulation = forbid_accumulation
        self.chunk_size = chunk_size
        self._records: list[_Record] = []

    def __getattr__(self, name: str) -> Any:
        try:
            return super().__getattr__(name)
        except AttributeError:
            return getattr(self.__dict__["_modules"]["_module"], name)

    def forward(self, *args: Any, **kwargs: Any) -> Any:
        if not (self.training and pullback.is_grad_enabled()):
            return self._module(*args, **kwargs)
        rng_state = self._backend().get_rng_state()
        with pullback.no_grad():
            out = self._module(*args, **kwargs)
        leaves, spec = tree_flatten(out)
        tracked = [leaf.detach().requires_grad_() if _is_float_tensor(leaf) else leaf
                   for leaf in leaves]
        self._records.append(_Record(args, dict(kwargs), rng_state, tracked))
        return tree_unflatten(tracked, spec)

    def trainable_parameters(self) -> dict[str, Tensor]:
        """The wrapped model's parameters that require grad, by name."""
        return {name: p for name, p in self._module.named_parameters() if p.requires_grad}

    def take_per_sample_gradients(self) -> tuple[int, Iterator[dict[str, Tensor]]]:
        """The per-sample gradients of every forward pass backpropagated since the last
        :meth:`clear`, marked as used: ``(passes, chunks)``, where ``chunks`` yields
        ``{parameter name: (samples, *shape)}`` for consecutive groups of samples, computed as
        they are taken (memory holds one chunk). Forward passes without a backward are dropped.

        Raises:
            PrivacyUsageError: no backward pass since the last step, gradients already used by
                a step (``zero_grad`` was not called), more than one backward pass with
                ``forbid_accumulation``, or a model whose per-sample replay differs from its
                forward pass.
        """
        if any(r.consumed for r in self._records):
            raise PrivacyUsageError(
                "the per-sample gradients of this batch were already used by an optimizer step; "
                "call optimizer.zero_grad() after each step (reusing them would spend privacy "
                "that is not accounted for)")
        live = [r for r in self._records if r.backpropagated]
        if not live:
            raise PrivacyUsageError(
                "no per-sample gradients: run the forward pass through the module that "
                "make_private returned (in training mode, with grad enabled) and backward() "
                "before optimizer.step()")
        if self.forbid_accumulation and len(live) > 1:
            raise PrivacyUsageError(
                f"{len(live)} backward passes since the last optimizer step: with Poisson "
                "sampling every sampled batch must be one step. Call optimizer.step() and "
                "zero_grad() after each batch (BatchMemoryManager splits large batches), or "
                "make_private(..., poisson_sampling=False) to accumulate")
        for r in live:
            r.consumed = True
        self._records = live
        return len(live), (chunk for r in live for chunk in self._per_sample(r))

    def clear(self) -> None:
        """Forget the per-sample gradients of past backward passes (``zero_grad``); a forward
        pass whose backward has not run yet is kept."""
        self._records = [r for r in self._records if not (r.consumed or r.backpropagated)]

    def state_dict(self, destination: dict[str, Any] | None = None, prefix: str = "",
                   keep_vars: bool = False) -> dict[str, Tensor]:
        return self._module.state_dict(destination, prefix, keep_vars)

    def load_state_dict(self, state_dict: dict[str, Any], strict: bool = True) -> Any:
        return self._module.load_state_dict(state_dict, strict)

    # -- the batched replay ---------------------------------------------------------------------
    def _backend(self) -> Any:
        first = next(iter(self._module.parameters()), None)
        return (first.device if first is not None else pullback.Device("cpu")).backend

    def _per_sample(self, record: _Record) -> Iterator[dict[str, Tensor]]:
        params = {name: p.detach() for name, p in self.trainable_parameters().items()}
        cotangents = [o.grad if isinstance(o, Tensor) else None for o in record.outputs]
        if self.loss_reduction == "mean":
            # undo the loss's 1 / batch (as Opacus does) on the cotangents, which are one row
            # per sample, rather than on the per-sample gradients, which are a model per sample
            size = _batch_size(record.args)
            cotangents = [None if c is None else c * size for c in cotangents]
        return per_sample_chunks(self._module, params, record.args, record.kwargs,
                                 record.outputs, cotangents, record.rng_state, self._backend(),
                                 self.chunk_size)


def _is_float_tensor(x: Any) -> bool:
    return isinstance(x, Tensor) and x.dtype.kind == "f"
