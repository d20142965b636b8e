"""``PrivacyEngine``: makes a model, its optimizer and its data loader private in one call
(Opacus's ``PrivacyEngine``), and keeps the accountant that tracks what the training spends."""

from __future__ import annotations

import warnings
from typing import Any

from pullback import nn
from pullback.optim import Optimizer

from ._accountants import (
    Accountant, check_delta, check_noise_multiplier, check_sample_rate, create_accountant,
    get_noise_multiplier,
)
from ._data import DPDataLoader
from ._errors import PrivacyParameterError
from ._grad_sample import GradSampleModule
from ._optimizer import CLIPPING, DPOptimizer
from ._validators import ModuleValidator


class PrivacyEngine:
    """The entry point of DP-SGD training.

    Args:
        accountant: the accounting mechanism, a name in :data:`ACCOUNTANTS` (``"prv"``, the
            default as in Opacus, or ``"rdp"``).

    Attributes:
        accountant: the :class:`Accountant` every optimizer made private here reports to.

    Example:
        >>> import pullback as pb
        >>> from pullback import nn, optim
        >>> from pullback.nn.data import DataLoader, TensorDataset
        >>> from pullback.dp import PrivacyEngine
        >>> data = TensorDataset(pb.randn(256, 4), pb.randint(0, 2, (256,)))
        >>> model = nn.Linear(4, 2)
        >>> engine = PrivacyEngine(accountant="rdp")
        >>> model, opt, loader = engine.make_private(
        ...     module=model, optimizer=optim.SGD(model.parameters(), lr=0.1),
        ...     data_loader=DataLoader(data, batch_size=32), noise_multiplier=1.0,
        ...     max_grad_norm=1.0)
        >>> for x, y in loader:
        ...     opt.zero_grad()
        ...     nn.functional.cross_entropy(model(x), y).backward()
        ...     opt.step()
        >>> round(engine.get_epsilon(delta=1e-5), 2)
        3.79
    """

    def __init__(self, *, accountant: str = "prv") -> None:
        self.accountant: Accountant = create_accountant(accountant)
        self._dataset: Any = None

    def make_private(self, *, module: nn.Module, optimizer: Optimizer, data_loader: Any,
                     noise_multiplier: float, max_grad_norm: Any,
                     loss_reduction: str = "mean", poisson_sampling: bool = True,
                     clipping: str = "flat", noise_generator: Any = None
                     ) -> tuple[GradSampleModule, DPOptimizer, Any]:
        """The private versions of ``module``, ``optimizer`` and ``data_loader``.

        Args:
            module: the model (in training mode); validated by :class:`ModuleValidator`.
            optimizer: an optimizer over (some of) ``module``'s parameters.
            data_loader: a :class:`pullback.nn.data.DataLoader`; the sample rate is
                ``1 / len(data_loader)`` and the expected batch size ``len(dataset) / len``.
            noise_multiplier: the noise std over ``max_grad_norm`` (>= 0).
            max_grad_norm: the per-sample clipping bound (> 0); with ``clipping="per_layer"``
                one per parameter (or one for all).
            loss_reduction: ``"mean"`` or ``"sum"``: how the loss reduces over the batch.
            poisson_sampling: replace the loader by a :class:`DPDataLoader` (the sampling the
                accounting assumes). ``False`` keeps the loader's batches, and the accounting
                becomes an approximation, as in Opacus.
            clipping: a rule in :data:`CLIPPING` (``"flat"`` or ``"per_layer"``).
            noise_generator: the noise's source (see :class:`DPOptimizer`).

        Returns:
            ``(model, optimizer, data_loader)``: a :class:`GradSampleModule`, a
            :class:`DPOptimizer` reporting to :attr:`accountant`, and the loader.

        Raises:
            UnsupportedModuleError: a layer DP-SGD cannot train (BatchNorm, a layer without a
                per-sample rule), each named with its fix.
            PrivacyParameterError: a negative noise multiplier, a clipping norm that is not
                positive, an empty loader, parameters of the optimizer outside the module.
        """
        where = "PrivacyEngine.make_private"
        check_noise_multiplier(noise_multiplier, where)
        optimizer_class = CLIPPING[clipping]
        if isinstance(module, GradSampleModule):
            module = module._module
        if isinstance(optimizer, DPOptimizer):
            optimizer = optimizer.original_optimizer
        own = {id(p) for p in module.parameters()}
        if any(id(p) not in own for group in optimizer.param_groups for p in group["params"]):
            raise PrivacyParameterError(f"{where}: the optimizer updates tensors that are not "
                                        "parameters of the module")
        steps = len(data_loader)
        if steps == 0:
            raise PrivacyParameterError(f"{where}: the data loader has no batches")
        sample_rate = check_sample_rate(1 / steps, where)
        self._note_dataset(data_loader.dataset)
        ModuleValidator.validate(module, strict=True)
        private_module = GradSampleModule(module, loss_reduction=loss_reduction,
                                          forbid_accumulation=poisson_sampling)
        if poisson_sampling:
            data_loader = DPDataLoader.from_data_loader(data_loader)
        private_optimizer = optimizer_class(
            optimizer, module=private_module, noise_multiplier=noise_multiplier,
            max_grad_norm=max_grad_norm,
            expected_batch_size=max(1, int(len(data_loader.dataset) * sample_rate)),
            loss_reduction=loss_reduction, noise_generator=noise_generator,
            accountant=self.accountant, sample_rate=sample_rate)
        return private_module, private_optimizer, data_loader

    def make_private_with_epsilon(self, *, module: nn.Module, optimizer: Optimizer,
                                  data_loader: Any, target_epsilon: float, target_delta: float,
                                  epochs: int, max_grad_norm: Any, epsilon_tolerance: float = 0.01,
                                  **options: Any) -> tuple[GradSampleModule, DPOptimizer, Any]:
        """:meth:`make_private` with the noise multiplier that spends ``target_epsilon`` at
        ``target_delta`` in ``epochs`` epochs (``epochs * len(data_loader)`` steps), found by
        :func:`get_noise_multiplier` with this engine's accountant; it is then the optimizer's
        ``noise_multiplier``. Other arguments are :meth:`make_private`'s.

        Raises:
            BudgetError: no noise multiplier reaches ``target_epsilon``.
        """
        where = "PrivacyEngine.make_private_with_epsilon"
        check_delta(target_delta, where)
        if isinstance(epochs, bool) or not isinstance(epochs, int) or epochs < 1:
            raise PrivacyParameterError(f"{where}: epochs must be a positive int, got {epochs!r}")
        steps = len(data_loader)
        if steps == 0:
            raise PrivacyParameterError(f"{where}: the data loader has no batches")
        if len(self.accountant):
            warnings.warn(f"{where}: this engine's accountant has already recorded "
                          f"{len(self.accountant)} steps; the noise multiplier is chosen for the "
                          "new run alone, so the total spent will exceed target_epsilon",
                          stacklevel=2)
        sigma = get_noise_multiplier(target_epsilon=target_epsilon, target_delta=target_delta,
                                     sample_rate=1 / steps, steps=epochs * steps,
                                     accountant=self.accountant.mechanism,
                                     epsilon_tolerance=epsilon_tolerance)
        return self.make_private(module=module, optimizer=optimizer, data_loader=data_loader,
                                 noise_multiplier=sigma, max_grad_norm=max_grad_norm, **options)

    def get_epsilon(self, delta: float) -> float:
        """The epsilon spent so far at ``delta``, by :attr:`accountant`."""
        return self.accountant.get_epsilon(delta)

    def _note_dataset(self, dataset: Any) -> None:
        """Accounting is per dataset: warn when one engine is used with another dataset."""
        if self._dataset is None:
            self._dataset = dataset
        elif dataset is not self._dataset:
            warnings.warn("PrivacyEngine: make_private was called with another dataset than "
                          "before; its accountant adds up the spending of both as if they were "
                          "one (use one PrivacyEngine per dataset)", stacklevel=3)
