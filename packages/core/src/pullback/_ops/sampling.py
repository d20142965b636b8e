"""Random sampling by PyTorch's names: rand_like, randn_like, randint_like, bernoulli,
multinomial, poisson, and the in-place fills ``bernoulli_`` and ``exponential_`` (``normal_``
and ``uniform_`` are Tensor methods already).

Every draw comes from the device's generator (seeded by :func:`pullback.manual_seed`, or the
``generator`` given) through :func:`pullback.dispatch.draw_random`, so that modes (vmap's
randomness option, DP replays) see each draw. The numbers differ from PyTorch's (another
generator); the distributions are the same, which the tests check statistically. Samples carry
no gradient, as in PyTorch.
"""

from __future__ import annotations

from typing import Any, Callable

import numpy as np

from ..dispatch import draw_random, state as _dispatch_state
from ..dtypes import is_floating, to_dtype
from ..errors import ArgumentError, DTypeError, ShapeError


def _draw(device: Any, shape: tuple[int, ...], sample: Callable[[Any, tuple[int, ...]], Any],
          generator: Any = None) -> Any:
    """A tensor of ``sample(generator, shape)`` on ``device``, seen by the active modes."""
    from ..tensor import Tensor

    gen = generator if generator is not None else device.backend.generator(device.index or 0)

    def draw(size: tuple[int, ...]) -> Tensor:
        return Tensor._wrap(device.backend.asarray(np.asarray(sample(gen, size)),
                                                   index=device.index or 0), device)

    return draw_random(draw, shape) if _dispatch_state.modes else draw(shape)


def _host(t: Any) -> np.ndarray:
    return t.detach().cpu().numpy()


def rand_like(x: Any, *, dtype: Any = None, device: Any = None, requires_grad: bool = False,
              generator: Any = None) -> Any:
    """Uniform samples in [0, 1) shaped like ``x`` (its dtype and device by default)."""
    from ..creation import rand

    return rand(*x.shape, dtype=dtype or x.dtype, device=device or x.device,
                requires_grad=requires_grad, generator=generator)


def randn_like(x: Any, *, dtype: Any = None, device: Any = None, requires_grad: bool = False,
               generator: Any = None) -> Any:
    """Standard normal samples shaped like ``x``."""
    from ..creation import randn

    return randn(*x.shape, dtype=dtype or x.dtype, device=device or x.device,
                 requires_grad=requires_grad, generator=generator)


def randint_like(x: Any, low: int, high: int | None = None, *, dtype: Any = None,
                 device: Any = None, generator: Any = None) -> Any:
    """Integers in [low, high) (``randint_like(x, high)``: in [0, high)) shaped like ``x``, in
    its dtype by default (floats hold the integer values)."""
    from ..creation import randint

    if high is None:
        low, high = 0, low
    dt = to_dtype(dtype or x.dtype)
    out = randint(low, high, tuple(x.shape), device=device or x.device, generator=generator)
    return out if out.dtype == dt else out.to(dt)


def bernoulli(input: Any, p: float | None = None, *, generator: Any = None) -> Any:  # noqa: A002
    """1 with probability ``input`` (or ``p``) elementwise, else 0, in ``input``'s dtype."""
    probs = _host(input) if p is None else np.full(tuple(input.shape), p)
    if probs.size and (probs.min() < 0 or probs.max() > 1):
        raise ArgumentError(f"bernoulli: probabilities must be in [0, 1], got values in "
                            f"[{probs.min()}, {probs.max()}]")
    if not is_floating(input.dtype):
        raise DTypeError(f"bernoulli: input must be floating, got {input.dtype}")
    dt = input.dtype
    return _draw(input.device, tuple(input.shape),
                 lambda g, s: (g.random(s) < probs).astype(dt), generator)


def poisson(input: Any, generator: Any = None) -> Any:  # noqa: A002
    """Poisson samples with the rates ``input`` (non-negative floats), in its dtype."""
    rates = _host(input)
    if not is_floating(input.dtype):
        raise DTypeError(f"poisson: rates must be floating, got {input.dtype}")
    if rates.size and rates.min() < 0:
        raise ArgumentError(f"poisson: rates must be non-negative, got {rates.min()}")
    dt = input.dtype
    return _draw(input.device, tuple(input.shape),
                 lambda g, s: g.poisson(rates.astype(np.float64), size=s).astype(dt), generator)


def multinomial(input: Any, num_samples: int, replacement: bool = False, *,  # noqa: A002
                generator: Any = None) -> Any:
    """Indices drawn from the (unnormalized, non-negative) weights of each row of ``input``:
    ``num_samples`` per row, each index at most once unless ``replacement``."""
    w = _host(input).astype(np.float64)
    if w.ndim not in (1, 2):
        raise ShapeError(f"multinomial: input must be 1-D or 2-D, got shape {w.shape}")
    rows = w.reshape(-1, w.shape[-1])
    if rows.size and (rows.min() < 0 or not np.isfinite(rows).all()):
        raise ArgumentError("multinomial: weights must be finite and non-negative")
    if (rows.sum(axis=1) <= 0).any():
        raise ArgumentError("multinomial: every row needs a positive total weight")
    positive = (rows > 0).sum(axis=1)
    if not replacement and num_samples > positive.min():
        raise ArgumentError(f"multinomial: cannot draw {num_samples} samples without "
                            f"replacement from a row with {int(positive.min())} nonzero weights")
    probs = rows / rows.sum(axis=1, keepdims=True)

    def sample(g: Any, size: tuple[int, ...]) -> np.ndarray:
        if replacement:  # inverse CDF, one uniform per draw
            cdf = np.cumsum(probs, axis=1)
            u = g.random((rows.shape[0], num_samples)) * cdf[:, -1:]
            out = np.stack([np.searchsorted(c, r, side="right") for c, r in zip(cdf, u)])
            out = np.minimum(out, rows.shape[1] - 1)
        else:  # Gumbel top-k: the k largest of log p + Gumbel noise, without repeats
            with np.errstate(divide="ignore"):
                keys = np.log(probs) - np.log(-np.log(g.random(probs.shape)))
            out = np.argsort(-keys, axis=1, kind="stable")[:, :num_samples]
        return out.reshape(size).astype(np.int64)

    return _draw(input.device, w.shape[:-1] + (num_samples,), sample, generator)


def _fill(t: Any, name: str, sample: Callable[[Any, tuple[int, ...]], Any],
          generator: Any) -> Any:
    from .mutation import _check_leaf

    _check_leaf(t, name)
    if not is_floating(t.dtype):
        raise DTypeError(f"{name}: needs a floating tensor, got {t.dtype}")
    values = _draw(t.device, tuple(t.shape), lambda g, s: sample(g, s).astype(t.dtype),
                   generator)
    t.array[...] = values.array
    t._version[0] += 1
    return t


def bernoulli_(t: Any, p: float = 0.5, *, generator: Any = None) -> Any:
    """Fill ``t`` in place with 1 (probability ``p``) or 0."""
    if not 0 <= p <= 1:
        raise ArgumentError(f"bernoulli_: p must be in [0, 1], got {p}")
    return _fill(t, "bernoulli_", lambda g, s: g.random(s) < p, generator)


def exponential_(t: Any, lambd: float = 1.0, *, generator: Any = None) -> Any:
    """Fill ``t`` in place with exponential samples of rate ``lambd``."""
    if lambd <= 0:
        raise ArgumentError(f"exponential_: lambd must be positive, got {lambd}")
    return _fill(t, "exponential_", lambda g, s: g.exponential(1.0 / lambd, size=s), generator)


METHODS = ("bernoulli", "multinomial", "bernoulli_", "exponential_")
