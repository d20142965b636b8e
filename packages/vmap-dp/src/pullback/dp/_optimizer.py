"""``DPOptimizer``: wraps any pullback optimizer to clip per-sample gradients, add Gaussian
noise, average, and account for the step (Opacus's ``DPOptimizer``), one class per clipping
rule in :data:`CLIPPING`.

A step: take the per-sample gradients of the batch from the :class:`GradSampleModule`, scale
each sample's so that its norm is at most ``max_grad_norm`` (factor
``min(1, C / (norm + 1e-6))``, Opacus's), sum them, add ``N(0, (noise_multiplier * C)^2)``
noise to every coordinate, divide by the expected batch size (Poisson batches vary in size; the
expected size keeps the average unbiased and the sensitivity fixed), and run the wrapped
optimizer. A step signalled as skipped (virtual steps of :class:`BatchMemoryManager`) only
clips and sums, so the logical batch's noise is added once.

The arithmetic runs on the backend arrays (no graph): a per-sample norm is one dot product
per sample, the clipped sum one ``tensordot`` of the clip factors with the per-sample gradients.
"""

from __future__ import annotations

import math
from typing import Any, Callable

import numpy as np

from pullback import Tensor, enable_grad
from pullback.optim import Optimizer
from pullback.optim._registry import Registry

from ._accountants import Accountant, check_noise_multiplier, check_sample_rate
from ._errors import PrivacyParameterError
from ._grad_sample import GradSampleModule, check_loss_reduction

CLIPPING = Registry("clipping")
"""DP optimizer classes by clipping rule (``CLIPPING["flat"] is DPOptimizer``)."""

# Opacus's guard against dividing by a zero norm (it also decides the factor for tiny norms).
_NORM_EPS = 1e-6
ACCOUNTANT_KEY = "privacy_accountant"


def check_max_grad_norm(value: Any, where: str) -> float:
    """``value`` as a float > 0, else a :class:`PrivacyParameterError`."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not value > 0:
        raise PrivacyParameterError(f"{where}: max_grad_norm must be a number > 0 (the bound "
                                    f"on each sample's gradient norm), got {value!r}")
    return float(value)


@CLIPPING.register("flat")
class DPOptimizer(Optimizer):
    """An optimizer that takes DP-SGD steps: clipped per-sample gradients, noise, average.

    Args:
        optimizer: the wrapped optimizer (any :class:`pullback.optim.Optimizer`); its
            parameter groups, state and hyper-parameters are this one's.
        module: the :class:`GradSampleModule` that computes the per-sample gradients.
        noise_multiplier: the noise std over ``max_grad_norm`` (>= 0).
        max_grad_norm: ``C``, the bound on each sample's gradient norm over all parameters.
        expected_batch_size: the divisor of the noised sum with ``loss_reduction="mean"``.
        loss_reduction: ``"mean"`` or ``"sum"``, as the loss reduces over the batch.
        noise_generator: where the noise comes from: ``None`` (the parameters' device
            generator, seeded by ``pullback.manual_seed``), an int seed, or a NumPy-like
            ``Generator`` (anything with ``standard_normal(shape, dtype=...)``).
        accountant: records each step (``noise_multiplier``, ``sample_rate``); its history is
            part of :meth:`state_dict`.
        sample_rate: the probability that an example is in a batch (needed with
            ``accountant``).

    Example:
        >>> import pullback as pb
        >>> from pullback import nn, optim
        >>> from pullback.dp import DPOptimizer, GradSampleModule, RDPAccountant
        >>> model = GradSampleModule(nn.Linear(4, 2))
        >>> opt = DPOptimizer(optim.SGD(model.parameters(), lr=0.1), module=model,
        ...                   noise_multiplier=1.0, max_grad_norm=1.0, expected_batch_size=8,
        ...                   accountant=RDPAccountant(), sample_rate=0.01)
        >>> nn.functional.cross_entropy(model(pb.randn(8, 4)), pb.randint(0, 2, (8,))).backward()
        >>> opt.step(); opt.zero_grad()
        >>> len(opt.accountant)
        1
    """

    def __init__(self, optimizer: Optimizer, *, module: GradSampleModule,
                 noise_multiplier: float, max_grad_norm: Any, expected_batch_size: int | None,
                 loss_reduction: str = "mean", noise_generator: Any = None,
                 accountant: Accountant | None = None, sample_rate: float | None = None) -> None:
        # The wrapped optimizer owns the parameter groups and state (properties below), so the
        # base class's constructor is not run.
        where = type(self).__name__
        if isinstance(optimizer, DPOptimizer):
            optimizer = optimizer.original_optimizer
        if not isinstance(module, GradSampleModule):
            raise PrivacyParameterError(f"{where}: module must be a GradSampleModule (the model "
                                        f"make_private returns), got {type(module).__name__}")
        check_loss_reduction(loss_reduction, where)
        if loss_reduction == "mean" and (not isinstance(expected_batch_size, int)
                                         or expected_batch_size < 1):
            raise PrivacyParameterError(f"{where}: expected_batch_size must be a positive int "
                                        f"with loss_reduction='mean', got {expected_batch_size!r}")
        if (accountant is None) != (sample_rate is None):
            raise PrivacyParameterError(f"{where}: give accountant and sample_rate together")
        self.original_optimizer = optimizer
        self.module = module
        self.noise_multiplier = check_noise_multiplier(noise_multiplier, where)
        self.max_grad_norm = self._check_norms(max_grad_norm)
        self.expected_batch_size = expected_batch_size
        self.loss_reduction = loss_reduction
        self.noise_generator = np.random.default_rng(noise_generator) \
            if isinstance(noise_generator, int) else noise_generator
        self.accountant = accountant
        self.sample_rate = None if sample_rate is None else check_sample_rate(sample_rate, where)
        self._summed: dict[int, Any] = {}  # clipped sums of the logical batch, by id(param)
        self._skip_signals: list[bool] = []
        self._last_step_skipped = False
        names = {id(p): name for name, p in module.trainable_parameters().items()}
        stray = [i for i, p in enumerate(self.params) if id(p) not in names]
        if stray:
            raise PrivacyParameterError(f"{where}: parameters {stray} of the optimizer are not "
                                        "trainable parameters of the module")
        # the released gradient is the optimizer's parameters': their norm is the one clipped
        self._names = {id(p): names[id(p)] for p in self.params}

    # -- what the clipping rules differ in ------------------------------------------------------
    def _check_norms(self, max_grad_norm: Any) -> Any:
        return check_max_grad_norm(max_grad_norm, type(self).__name__)

    @property
    def noise_std(self) -> float:
        """The noise std per coordinate: ``noise_multiplier * max_grad_norm``."""
        return self.noise_multiplier * self.max_grad_norm

    def _clip_factors(self, grads: dict[int, Any], xp: Any, size: int) -> dict[int, Any]:
        """``min(1, C / (norm + eps))`` per sample, with the norm over every parameter."""
        squares = sum(_squared_norms(g, xp, size) for g in grads.values())
        factor = xp.minimum(self.max_grad_norm / (xp.sqrt(squares) + _NORM_EPS), 1.0)
        return {pid: factor for pid in grads}

    # -- the parameter groups and state of the wrapped optimizer --------------------------------
    @property
    def param_groups(self) -> list[dict[str, Any]]:  # type: ignore[override]
        return self.original_optimizer.param_groups

    @param_groups.setter
    def param_groups(self, groups: list[dict[str, Any]]) -> None:
        self.original_optimizer.param_groups = groups

    @property
    def state(self) -> dict[Tensor, dict[str, Any]]:  # type: ignore[override]
        return self.original_optimizer.state

    @state.setter
    def state(self, state: dict[Tensor, dict[str, Any]]) -> None:
        self.original_optimizer.state = state

    @property
    def defaults(self) -> dict[str, Any]:  # type: ignore[override]
        return self.original_optimizer.defaults

    @defaults.setter
    def defaults(self, defaults: dict[str, Any]) -> None:
        self.original_optimizer.defaults = defaults

    @property
    def params(self) -> list[Tensor]:
        """Every parameter of the wrapped optimizer, in group order."""
        return [p for group in self.param_groups for p in group["params"]]

    # -- the step ---------------------------------------------------------------------------------
    def signal_skip_step(self, do_skip: bool = True) -> None:
        """Queue whether the next ``step`` only clips and sums (``True``: a physical batch that
        is not the last of its logical batch) or completes the logical batch."""
        self._skip_signals.append(do_skip)

    def clip_and_accumulate(self) -> int:
        """Clip this batch's per-sample gradients and add them to the logical batch's sums;
        returns how many forward/backward passes they came from."""
        passes, chunks = self.module.take_per_sample_gradients()
        for chunk in chunks:  # each sample's gradient is whole within one chunk
            grads = {pid: chunk[name].array for pid, name in self._names.items()}
            first = next(iter(chunk.values()))
            xp, size = first.device.backend.xp, first.shape[0]
            factors = self._clip_factors(grads, xp, size)
            for pid, g in grads.items():
                clipped = xp.tensordot(factors[pid].astype(g.dtype), g, axes=(0, 0))
                if pid in self._summed:
                    self._summed[pid] += clipped
                else:
                    self._summed[pid] = clipped
        return passes

    def add_noise_and_average(self, accumulated: int) -> None:
        """``p.grad = (sum + N(0, std^2)) / (expected_batch_size * accumulated)`` (no division
        with ``loss_reduction="sum"``)."""
        divisor = self.expected_batch_size * accumulated if self.loss_reduction == "mean" else 1
        std = self.noise_std
        for p in self.params:
            total = self._summed.get(id(p))
            if total is None:
                continue
            noise = self._standard_normal(p, total.shape, total.dtype) * std if std > 0 else 0.0
            p.grad = Tensor._wrap(((total + noise) / divisor).astype(total.dtype, copy=False),
                                  p.device)

    def _standard_normal(self, p: Tensor, shape: tuple[int, ...], dtype: Any) -> Any:
        """Standard normal numbers shaped like ``p``, on its device."""
        generator = self.noise_generator
        if generator is None:  # fetched each time: pullback.manual_seed replaces it
            generator = p.device.backend.generator()
        return p.device.backend.xp.asarray(generator.standard_normal(shape, dtype=dtype))

    def pre_step(self) -> bool:
        """Clip, sum and (at the end of a logical batch) noise, average and account; returns
        whether the wrapped optimizer should step."""
        accumulated = self.clip_and_accumulate()
        if self._skip_signals and self._skip_signals.pop(0):
            self._last_step_skipped = True
            return False
        self.add_noise_and_average(accumulated)
        if self.accountant is not None:
            self.accountant.step(noise_multiplier=self.noise_multiplier,
                                 sample_rate=self.sample_rate * accumulated)
        self._last_step_skipped = False
        return True

    def step(self, closure: Callable[[], Any] | None = None) -> Any:
        """One DP-SGD step (or, for a skipped physical batch, only the clipping); returns
        ``closure()``'s loss when given."""
        loss = None
        if closure is not None:
            with enable_grad():
                loss = closure()
        if self.pre_step():
            self.original_optimizer.step()
        return loss

    def zero_grad(self, set_to_none: bool = True) -> None:
        """Clear the gradients and the per-sample gradients; the clipped sums survive a skipped
        step (they are the logical batch's so far)."""
        self.module.clear()
        if not self._last_step_skipped:
            self._summed = {}
        self.original_optimizer.zero_grad(set_to_none)

    # -- checkpoints ------------------------------------------------------------------------------
    def state_dict(self) -> dict[str, Any]:
        """The wrapped optimizer's state dict and, under ``"privacy_accountant"``, the
        accountant's history: a resumed run accounts exactly as an uninterrupted one."""
        out = self.original_optimizer.state_dict()
        if self.accountant is not None:
            out[ACCOUNTANT_KEY] = self.accountant.state_dict()
        return out

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        """Restore a :meth:`state_dict` (the accountant's history too, when it has one)."""
        state_dict = dict(state_dict)
        accounting = state_dict.pop(ACCOUNTANT_KEY, None)
        if accounting is not None:
            if self.accountant is None:
                raise PrivacyParameterError(f"{type(self).__name__}.load_state_dict: the state "
                                            "has an accountant's history, this optimizer has "
                                            "no accountant")
            self.accountant.load_state_dict(accounting)
        self.original_optimizer.load_state_dict(state_dict)

    def __repr__(self) -> str:
        return (f"{type(self).__name__}(noise_multiplier={self.noise_multiplier}, "
                f"max_grad_norm={self.max_grad_norm}, {self.original_optimizer!r})")


@CLIPPING.register("per_layer")
class DPPerLayerOptimizer(DPOptimizer):
    """Per-layer clipping: parameter ``k``'s per-sample gradients are clipped to norm
    ``max_grad_norm[k]`` on their own (one entry per parameter of the optimizer, in group
    order); the noise std is ``noise_multiplier * ||max_grad_norm||_2``, the sensitivity of the
    whole gradient."""

    def _check_norms(self, max_grad_norm: Any) -> Any:
        where = type(self).__name__
        norms = [max_grad_norm] * len(self.params) if isinstance(max_grad_norm, (int, float)) \
            else list(max_grad_norm)
        if len(norms) != len(self.params):
            raise PrivacyParameterError(f"{where}: max_grad_norm has {len(norms)} entries for "
                                        f"{len(self.params)} parameters")
        return [check_max_grad_norm(c, where) for c in norms]

    @property
    def noise_std(self) -> float:
        return self.noise_multiplier * math.sqrt(sum(c * c for c in self.max_grad_norm))

    def _clip_factors(self, grads: dict[int, Any], xp: Any, size: int) -> dict[int, Any]:
        bound = {id(p): c for p, c in zip(self.params, self.max_grad_norm)}
        return {pid: xp.minimum(bound[pid] / (xp.sqrt(_squared_norms(g, xp, size)) + _NORM_EPS),
                                1.0)
                for pid, g in grads.items()}


def _squared_norms(g: Any, xp: Any, size: int) -> Any:
    """Each sample's squared norm of a per-sample gradient ``(batch, ...)``."""
    flat = g.reshape(size, math.prod(g.shape[1:]))  # not -1: an empty batch has size 0
    return xp.einsum("ij,ij->i", flat, flat)

