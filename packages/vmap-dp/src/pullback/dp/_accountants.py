"""Privacy accountants: thin stateful classes over the pure math of :mod:`._rdp` and
:mod:`._prv`, registered by name, and the search for the noise multiplier that meets a budget.

An accountant keeps the history of DP-SGD steps as ``(noise_multiplier, sample_rate, steps)``
triples (consecutive steps with the same parameters share one), which is all any of them needs:
its ``state_dict()`` is that history, so a resumed run accounts exactly as an uninterrupted one.
"""

from __future__ import annotations

import math
from typing import Any, ClassVar, Sequence

from pullback.optim._registry import Registry

from ._errors import BudgetError, PrivacyParameterError
from ._prv import prv_epsilon
from ._rdp import DEFAULT_ORDERS, compute_rdp, rdp_to_epsilon

ACCOUNTANTS = Registry("accountant")
"""Accountant classes by mechanism name (``ACCOUNTANTS["rdp"] is RDPAccountant``)."""


def check_noise_multiplier(value: Any, where: str) -> float:
    """``value`` as a float >= 0, else a :class:`PrivacyParameterError` naming ``where``."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not value >= 0:
        raise PrivacyParameterError(f"{where}: noise_multiplier must be a number >= 0 (0 adds "
                                    f"no noise and gives no privacy), got {value!r}")
    return float(value)


def check_sample_rate(value: Any, where: str) -> float:
    """``value`` as a float in (0, 1], else a :class:`PrivacyParameterError`."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 < value <= 1:
        raise PrivacyParameterError(f"{where}: sample_rate must be in (0, 1] (the probability "
                                    f"that an example is in a batch), got {value!r}")
    return float(value)


def check_delta(value: Any, where: str) -> float:
    """``value`` as a float in (0, 1), else a :class:`PrivacyParameterError`."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 < value < 1:
        raise PrivacyParameterError(f"{where}: delta must be in (0, 1) (typically below "
                                    f"1 / dataset size), got {value!r}")
    return float(value)


class Accountant:
    """Base class of accountants: the history, ``step``, ``state_dict``; subclasses implement
    :meth:`get_epsilon` and name their ``mechanism``.

    Attributes:
        history: ``[(noise_multiplier, sample_rate, steps), ...]`` in the order the steps ran.
    """

    mechanism: ClassVar[str]

    def __init__(self) -> None:
        self.history: list[tuple[float, float, int]] = []

    def step(self, *, noise_multiplier: float, sample_rate: float, steps: int = 1) -> None:
        """Record ``steps`` steps of DP-SGD with these parameters.

        Raises:
            PrivacyParameterError: a negative noise multiplier or a sample rate outside (0, 1].
        """
        where = f"{type(self).__name__}.step"
        sigma = check_noise_multiplier(noise_multiplier, where)
        q = check_sample_rate(sample_rate, where)
        if self.history and self.history[-1][:2] == (sigma, q):
            self.history[-1] = (sigma, q, self.history[-1][2] + steps)
        else:
            self.history.append((sigma, q, steps))

    def get_epsilon(self, delta: float, **options: Any) -> float:
        """The epsilon spent so far at ``delta`` (0 before the first step)."""
        raise NotImplementedError

    def __len__(self) -> int:
        """The number of steps recorded (not the number of history entries)."""
        return sum(n for _, _, n in self.history)

    def state_dict(self) -> dict[str, Any]:
        """``{"mechanism": name, "history": [[noise_multiplier, sample_rate, steps], ...]}``:
        plain JSON values (floats round-trip exactly), for :func:`pullback.save`."""
        return {"mechanism": self.mechanism,
                "history": [[sigma, q, n] for sigma, q, n in self.history]}

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        """Restore a :meth:`state_dict` (replacing the history).

        Raises:
            PrivacyParameterError: a state dict of another mechanism, or a malformed one.
        """
        name = type(self).__name__
        if not isinstance(state_dict, dict) or {"mechanism", "history"} - state_dict.keys():
            raise PrivacyParameterError(f"{name}.load_state_dict: expected a dict with "
                                        f"'mechanism' and 'history', got {state_dict!r:.80}")
        if state_dict["mechanism"] != self.mechanism:
            raise PrivacyParameterError(f"{name}.load_state_dict: the state is of the "
                                        f"'{state_dict['mechanism']}' accountant, this one is "
                                        f"'{self.mechanism}'")
        history = []
        for entry in state_dict["history"]:
            sigma, q, n = entry
            history.append((check_noise_multiplier(sigma, name), check_sample_rate(q, name),
                            int(n)))
        self.history = history

    def __repr__(self) -> str:
        return f"{type(self).__name__}(steps={len(self)}, history={self.history})"


@ACCOUNTANTS.register("rdp")
class RDPAccountant(Accountant):
    """Rényi DP accounting of the subsampled Gaussian mechanism (Opacus's ``RDPAccountant``:
    the same default orders and RDP-to-(epsilon, delta) conversion).

    Example:
        >>> from pullback.dp import RDPAccountant
        >>> accountant = RDPAccountant()
        >>> accountant.step(noise_multiplier=1.1, sample_rate=0.01, steps=1000)
        >>> round(accountant.get_epsilon(delta=1e-5), 3)
        1.712
    """

    mechanism = "rdp"
    DEFAULT_ORDERS = DEFAULT_ORDERS

    def get_privacy_spent(self, delta: float,
                          orders: Sequence[float] | None = None) -> tuple[float, float]:
        """``(epsilon, best order)`` at ``delta``."""
        delta = check_delta(delta, "RDPAccountant.get_privacy_spent")
        if not self.history:
            return 0.0, math.nan
        orders = DEFAULT_ORDERS if orders is None else tuple(orders)
        rdp = sum(compute_rdp(q, sigma, n, orders) for sigma, q, n in self.history)
        return rdp_to_epsilon(rdp, delta, orders)

    def get_epsilon(self, delta: float, orders: Sequence[float] | None = None,
                    **options: Any) -> float:
        """The epsilon spent so far at ``delta``, minimized over ``orders`` (default
        :data:`DEFAULT_ORDERS`)."""
        return self.get_privacy_spent(delta, orders)[0]


@ACCOUNTANTS.register("prv")
class PRVAccountant(Accountant):
    """Numerical composition of privacy loss random variables (Gopi et al., 2021; Opacus's
    ``PRVAccountant``): tighter than RDP, an upper bound within ``eps_error`` of the truth."""

    mechanism = "prv"

    def get_epsilon(self, delta: float, eps_error: float = 0.01,
                    delta_error: float | None = None, **options: Any) -> float:
        """An upper bound on the epsilon spent so far at ``delta``.

        Args:
            delta: the target delta.
            eps_error: the allowed error of the estimate (finer means slower).
            delta_error: the allowed error in delta (default ``delta / 1000``).
        """
        delta = check_delta(delta, "PRVAccountant.get_epsilon")
        return prv_epsilon(self.history, delta, eps_error, delta_error)


def create_accountant(mechanism: str) -> Accountant:
    """A new accountant of the registered ``mechanism`` (``"rdp"``, ``"prv"``)."""
    return ACCOUNTANTS[mechanism]()


# The search doubles sigma from here until the budget holds, and gives up past MAX.
_START_SIGMA, _MAX_SIGMA = 10.0, 1e6


def get_noise_multiplier(*, target_epsilon: float, target_delta: float, sample_rate: float,
                         epochs: float | None = None, steps: int | None = None,
                         accountant: str = "rdp", epsilon_tolerance: float = 0.01,
                         **options: Any) -> float:
    """The noise multiplier with which ``steps`` steps (or ``epochs`` epochs, ``epochs /
    sample_rate`` steps) at ``sample_rate`` spend at most ``target_epsilon`` at
    ``target_delta``, and at least ``target_epsilon - epsilon_tolerance``: a bisection on the
    accountant's epsilon, which decreases as the noise grows.

    Raises:
        BudgetError: no noise multiplier up to 1e6 reaches ``target_epsilon``.
        PrivacyParameterError: invalid parameters.
    """
    where = "get_noise_multiplier"
    if (steps is None) == (epochs is None):
        raise PrivacyParameterError(f"{where}: give either epochs or steps, not "
                                    f"{'both' if steps is not None else 'neither'}")
    q = check_sample_rate(sample_rate, where)
    delta = check_delta(target_delta, where)
    if steps is None:  # whole steps; the tolerance keeps 3 / (1 / 469) from being 1406
        steps = math.floor(epochs / q + 1e-9)  # type: ignore[operator]
    if steps < 1:
        raise PrivacyParameterError(f"{where}: the run must have at least one step, got "
                                    f"{steps} (epochs={epochs}, sample_rate={q})")
    if not target_epsilon > 0:
        raise BudgetError(f"{where}: target_epsilon must be > 0, got {target_epsilon!r}")
    probe = create_accountant(accountant)

    def epsilon(sigma: float) -> float:
        probe.history = [(sigma, q, steps)]
        return probe.get_epsilon(delta, **options)

    low, high = 0.0, _START_SIGMA
    eps_high = epsilon(high)
    while eps_high > target_epsilon:
        low, high = high, 2 * high
        if high > _MAX_SIGMA:
            raise BudgetError(
                f"{where}: target_epsilon={target_epsilon} cannot be reached at delta={delta} "
                f"with {steps} steps at sample rate {q}: even noise_multiplier={low:g} spends "
                f"epsilon={eps_high:.4g}; allow a larger epsilon or delta, or fewer steps")
        eps_high = epsilon(high)
    while target_epsilon - eps_high > epsilon_tolerance:
        middle = (low + high) / 2
        eps_middle = epsilon(middle)
        if eps_middle <= target_epsilon:
            high, eps_high = middle, eps_middle
        else:
            low = middle
    return high
