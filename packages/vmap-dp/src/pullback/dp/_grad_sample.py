"""``GradSampleModule``: a model whose backward pass gives one gradient per sample, computed
with ``pullback.func.vmap(grad(...))`` through ``functional_call`` (Opacus's ``GradSampleModule``,
which gets them from per-layer hooks instead).

The training loop stays the ordinary one (``loss = criterion(model(x), y); loss.backward();
optimizer.step()``), in two phases:

1. ``forward`` runs the model on the batch without recording a graph and returns its outputs
   as fresh leaves that require grad, so ``loss.backward()`` stops there: it only computes
   ``c = d loss / d outputs``, one row per sample.
2. When the optimizer asks (:meth:`GradSampleModule.take_per_sample_gradients`), each sample's
   gradient is that of ``<f(params, x_i), c_i>``, all of them in one batched pass:
   ``vmap(grad(...))`` replays the forward per sample and backpropagates ``c_i``. For a loss
   that is a mean (or sum) of per-sample losses, this is each sample's own loss gradient,
   divided by the batch size (scaled back up for ``loss_reduction="mean"``, as Opacus does).

The replay restores the random generator's state of the forward pass, so dropout draws the
same masks: ``vmap(..., randomness="different")`` draws ``(batch, *sample shape)`` at once, the
numbers the batched forward drew for ``(batch, ...)``. The replayed outputs are compared with
the forward's: a model that mixes samples (statistics over the batch) or draws random numbers
some other way is refused, since its per-sample gradients would be wrong.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pullback
from pullback import nn
from pullback.func import functional_call, grad_and_value, vmap
from pullback.func._pytree import tree_flatten, tree_unflatten
from pullback.tensor import Tensor

from ._errors import PrivacyParameterError, PrivacyUsageError

LOSS_REDUCTIONS = ("mean", "sum")
# Replayed and forward outputs may differ by rounding (one GEMM over the batch against one per
# sample); a model that mixes samples differs by the size of the outputs.
_REPLAY_RTOL = 1e-3


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

    ``state_dict`` and ``load_state_dict`` are the wrapped model's, without a prefix.
    """

    def __init__(self, module: nn.Module, *, loss_reduction: str = "mean",
                 forbid_accumulation: bool = False) -> None:
        super().__init__()
        self._module = module
        self.loss_reduction = check_loss_reduction(loss_reduction, "GradSampleModule")
        self.forbid_accumulation = forbid_accumulation
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

    def take_per_sample_gradients(self) -> list[dict[str, Tensor]]:
        """The per-sample gradients of every forward pass backpropagated since the last
        :meth:`clear` (one dict per pass: parameter name -> ``(batch, *shape)``), marked as
        used. Forward passes without a backward are dropped.

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
        return [self._per_sample(r) for r in live]

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

    def _per_sample(self, record: _Record) -> dict[str, Tensor]:
        params = {name: p.detach() for name, p in self.trainable_parameters().items()}
        size = _batch_size(record.args)
        if size == 0:  # an empty Poisson batch: no sample, no gradient
            return {name: pullback.zeros((0,) + tuple(p.shape), dtype=p.dtype, device=p.device)
                    for name, p in params.items()}
        cotangents = [o.grad if isinstance(o, Tensor) else None for o in record.outputs]
        if self.loss_reduction == "mean":
            # undo the loss's 1 / batch (as Opacus does) on the cotangents, which are one row
            # per sample, rather than on the per-sample gradients, which are a model per sample
            cotangents = [None if c is None else c * size for c in cotangents]
        arg_leaves, arg_spec = tree_flatten(record.args)
        arg_dims = tree_unflatten([0 if isinstance(a, Tensor) else None for a in arg_leaves],
                                  arg_spec)
        ct_dims = [None if c is None else 0 for c in cotangents]
        module, kwargs = self._module, record.kwargs

        def sample_value(p: dict[str, Tensor], args: Any, cts: list[Any]) -> Tensor:
            """<f(p, x_i), c_i> for one sample, run as a batch of one."""
            batch_of_one = tuple(a.unsqueeze(0) if isinstance(a, Tensor) else a
                                 for a in tree_flatten(args)[0])
            out = functional_call(module, p, tree_unflatten(list(batch_of_one), arg_spec), kwargs)
            total = None
            for leaf, ct in zip(tree_flatten(out)[0], cts):
                if ct is not None:
                    term = (leaf[0] * ct).sum()
                    total = term if total is None else total + term
            return total

        backend = self._backend()
        resume = backend.get_rng_state()
        backend.set_rng_state(record.rng_state)  # the forward pass's random numbers again
        try:
            grads, values = vmap(grad_and_value(sample_value), in_dims=(None, arg_dims, ct_dims),
                                 randomness="different")(params, record.args, cotangents)
        finally:
            backend.set_rng_state(resume)
        _check_replay(values, record.outputs, cotangents)
        return grads


def _is_float_tensor(x: Any) -> bool:
    return isinstance(x, Tensor) and x.dtype.kind == "f"


def _check_replay(values: Tensor, outputs: list[Any], cotangents: list[Any]) -> None:
    """Each sample's replayed ``<f(x_i), c_i>`` must be the forward pass's."""
    expected, scale = 0.0, 0.0
    for out, ct in zip(outputs, cotangents):
        if ct is None:
            continue
        o, c = out.detach().array, ct.array
        expected = expected + (o * c).reshape(o.shape[0], -1).sum(axis=1)
        scale = scale + abs(o * c).reshape(o.shape[0], -1).sum(axis=1)
    error = abs(values.array - expected)
    bound = _REPLAY_RTOL * (scale + scale.max() * 1e-3)
    bad = (error > bound).nonzero()[0]
    if bad.size:
        i = int(bad[0])
        raise PrivacyUsageError(
            f"the per-sample replay of the forward pass does not reproduce it ({bad.size} of "
            f"{error.shape[0]} samples differ, sample {i} by {float(error[i]):.3g}): the model "
            "mixes samples of a batch (BatchNorm in training mode, statistics over dim 0) or "
            "draws random numbers that are not one draw of (batch, ...) per call, so its "
            "per-sample gradients are not defined")
