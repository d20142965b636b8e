"""Surrogate gradients: the derivative that stands in for the Heaviside step's in backward.

A spike is ``H(u - threshold)``: its true derivative is zero almost everywhere, so nothing would
learn. Each surrogate below is a small object holding its own parameters; its
:meth:`~Surrogate.derivative` is what the ``spanda.spike`` op uses in backward (the forward stays
the exact step). Choose one per neuron, as snnTorch's ``spike_grad``::

    from pullback import spanda
    lif = spanda.LIF(beta=0.9, surrogate=spanda.surrogate.fast_sigmoid(slope=25))

Families are a name-to-class registry (:data:`SURROGATES`); :func:`get` turns a name, an object
or ``None`` (the default, snnTorch's arctan with ``alpha=2``) into a surrogate. Third parties add
their own with :func:`register`.

Where snnTorch has the same surrogate, ours has its formula and scale (fast sigmoid peaks at
1; arctan, sigmoid and straight-through are derivatives of steps from 0 to 1). ``gaussian`` and
``triangle`` have unit area too; snnTorch has no Gaussian, and its ``triangular`` is a
different function (a constant ``±threshold``, not a tent).
"""

from __future__ import annotations

import math
from typing import Any, Callable, ClassVar, TypeVar

__all__ = [
    "SURROGATES", "ArcTan", "FastSigmoid", "Gaussian", "Sigmoid", "StraightThrough", "Surrogate",
    "Triangle", "arctan", "fast_sigmoid", "gaussian", "get", "register", "sigmoid",
    "straight_through", "triangle",
]

SURROGATES: dict[str, type[Surrogate]] = {}
"""Every registered surrogate class by name (what ``surrogate="fast_sigmoid"`` looks up)."""

S = TypeVar("S", bound="type[Surrogate]")


def register(name: str) -> Callable[[S], S]:
    """Class decorator adding a :class:`Surrogate` subclass to :data:`SURROGATES` as ``name``.

    Raises:
        ValueError: when ``name`` is taken by another class.
    """
    def add(cls: S) -> S:
        if name in SURROGATES and SURROGATES[name] is not cls:
            raise ValueError(f"surrogate '{name}' is already registered ({SURROGATES[name]!r})")
        cls.name = name
        SURROGATES[name] = cls
        return cls

    return add


def _positive(cls: str, name: str, value: Any) -> float:
    value = float(value)
    if not value > 0 or not math.isfinite(value):
        raise ValueError(f"{cls}: {name} must be a positive finite number, got {value}")
    return value


class Surrogate:
    """Base class: a surrogate is its parameters plus :meth:`derivative`.

    Subclasses set their parameters in ``__init__`` (each listed in ``params``) and implement
    :meth:`derivative`. Two surrogates are equal when their class and parameters are.
    """

    name: ClassVar[str] = ""
    params: ClassVar[tuple[str, ...]] = ()

    def derivative(self, F: Any, x: Any) -> Any:
        """``dS/dx`` of the smoothed step at ``x = u - threshold``.

        Args:
            F: the op namespace of grad rules (raw arrays in first-order backward, Tensors under
                ``create_graph=True``); Python operators work on both.
            x: the membrane minus the threshold.

        Returns:
            An array or Tensor broadcastable to ``x`` (or a Python number).
        """
        raise NotImplementedError(f"{type(self).__name__} has no derivative()")

    def __call__(self, x: Any) -> Any:
        """Spikes ``H(x)`` with this surrogate's gradient: snnTorch's ``spike_grad(mem - thr)``."""
        from .functional import spike

        return spike(x, 0.0, surrogate=self)

    def _key(self) -> tuple[Any, ...]:
        return (type(self),) + tuple(getattr(self, p) for p in self.params)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Surrogate) and self._key() == other._key()

    def __hash__(self) -> int:
        return hash(self._key())

    def __repr__(self) -> str:
        args = ", ".join(f"{p}={getattr(self, p)!r}" for p in self.params)
        return f"{type(self).__name__}({args})"


@register("fast_sigmoid")
class FastSigmoid(Surrogate):
    """``1 / (slope * |x| + 1)^2`` (Zenke and Ganguli's SuperSpike; snnTorch's ``fast_sigmoid``).

    Args:
        slope: sharpness; larger is closer to the step (default 25, as snnTorch).
    """

    params = ("slope",)

    def __init__(self, slope: float = 25.0) -> None:
        self.slope = _positive("FastSigmoid", "slope", slope)

    def derivative(self, F: Any, x: Any) -> Any:
        d = self.slope * abs(x) + 1.0
        return 1.0 / (d * d)


@register("arctan")
class ArcTan(Surrogate):
    """``(alpha / 2) / (1 + (pi/2 * alpha * x)^2)``, the derivative of
    ``arctan(pi/2 alpha x) / pi + 1/2`` (snnTorch's ``atan``, its default surrogate; Fang et
    al. 2021).

    Args:
        alpha: sharpness; the peak is ``alpha / 2`` (default 2, as snnTorch).
    """

    params = ("alpha",)

    def __init__(self, alpha: float = 2.0) -> None:
        self.alpha = _positive("ArcTan", "alpha", alpha)

    def derivative(self, F: Any, x: Any) -> Any:
        z = (math.pi / 2 * self.alpha) * x
        return (self.alpha / 2) / (1.0 + z * z)


@register("sigmoid")
class Sigmoid(Surrogate):
    """``slope * s * (1 - s)`` with ``s = sigmoid(slope * x)`` (snnTorch's ``sigmoid``).

    snnTorch evaluates it as ``slope * exp(-slope x) / (exp(-slope x) + 1)^2``, which overflows
    to NaN for ``slope * x`` below about -88 in float32; this form stays finite.

    Args:
        slope: sharpness (default 25, as snnTorch).
    """

    params = ("slope",)

    def __init__(self, slope: float = 25.0) -> None:
        self.slope = _positive("Sigmoid", "slope", slope)

    def derivative(self, F: Any, x: Any) -> Any:
        s = F.sigmoid(self.slope * x)
        return self.slope * s * (1.0 - s)


@register("gaussian")
class Gaussian(Surrogate):
    """``exp(-x^2 / (2 sigma^2)) / (sigma sqrt(2 pi))``: the normal density, unit area.

    Args:
        sigma: the width (default 0.5, as in Yin et al. 2021's adaptive SRNNs).
    """

    params = ("sigma",)

    def __init__(self, sigma: float = 0.5) -> None:
        self.sigma = _positive("Gaussian", "sigma", sigma)

    def derivative(self, F: Any, x: Any) -> Any:
        return F.exp((-0.5 / (self.sigma * self.sigma)) * (x * x)) * (
            1.0 / (self.sigma * math.sqrt(2.0 * math.pi)))


@register("triangle")
class Triangle(Surrogate):
    """``max(0, 1 - |x| / width) / width``: a tent of unit area (Esser et al. 2016; Bellec et
    al. 2018 use the same shape).

    Args:
        width: half the support (default 1).
    """

    params = ("width",)

    def __init__(self, width: float = 1.0) -> None:
        self.width = _positive("Triangle", "width", width)

    def derivative(self, F: Any, x: Any) -> Any:
        return F.maximum(1.0 - abs(x) * (1.0 / self.width), 0.0) * (1.0 / self.width)


@register("straight_through")
class StraightThrough(Surrogate):
    """``1``: the gradient passes through the step unchanged (Bengio et al. 2013's estimator;
    snnTorch's ``straight_through_estimator``)."""

    def derivative(self, F: Any, x: Any) -> Any:
        return 1.0


# snnTorch's spelling: lower-case factories with the surrogate's parameters.
fast_sigmoid = FastSigmoid
arctan = ArcTan
sigmoid = Sigmoid
gaussian = Gaussian
triangle = Triangle
straight_through = StraightThrough

DEFAULT: Surrogate = ArcTan()


def get(spec: str | Surrogate | None = None) -> Surrogate:
    """The surrogate ``spec`` names.

    Args:
        spec: a :class:`Surrogate` (returned as is), a registered name (built with its default
            parameters) or ``None`` (arctan with ``alpha=2``, snnTorch's default).

    Raises:
        ValueError: an unknown name (the message lists the registered ones).
        TypeError: anything else.
    """
    if spec is None:
        return DEFAULT
    if isinstance(spec, Surrogate):
        return spec
    if isinstance(spec, str):
        cls = SURROGATES.get(spec)
        if cls is None:
            raise ValueError(f"unknown surrogate '{spec}'; registered: {', '.join(sorted(SURROGATES))}")
        return cls()
    raise TypeError(f"surrogate must be a name, a spanda.surrogate.Surrogate or None, "
                    f"got {type(spec).__name__}")
