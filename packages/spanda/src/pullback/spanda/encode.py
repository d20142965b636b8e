"""Encoders: static data ``(B, ...)`` to time-major inputs ``(T, B, ...)``.

* :func:`direct`: the data itself at every step (a current; a broadcast view, no copy, which
  spiking layers recognise and compute once);
* :func:`rate`: Bernoulli (Poisson-like) spike trains with the data as per-step firing
  probability, from a seeded generator;
* :func:`latency`: one spike per feature, earlier for larger values (snnTorch's
  ``spikegen.latency``).
"""

from __future__ import annotations

from typing import Any

import pullback
from pullback.tensor import Tensor

__all__ = ["direct", "latency", "rate"]


def _steps(where: str, num_steps: Any) -> int:
    if not isinstance(num_steps, int) or isinstance(num_steps, bool) or num_steps < 1:
        raise ValueError(f"{where}: num_steps must be a positive int, got {num_steps!r}")
    return num_steps


def direct(data: Tensor, num_steps: int) -> Tensor:
    """``data`` repeated over ``num_steps`` steps, ``(T, *data.shape)`` (a view: no copy).

    Gradients flow back to ``data`` (summed over time).
    """
    steps = _steps("encode.direct", num_steps)
    return data.unsqueeze(0).broadcast_to((steps,) + tuple(data.shape))


def rate(data: Tensor, num_steps: int, *, gain: float = 1.0, offset: float = 0.0,
         generator: Any = None) -> Tensor:
    """Spike trains where each step fires with probability ``clip(gain * data + offset, 0, 1)``.

    Args:
        data: values (pixel intensities in [0, 1], say), any shape.
        num_steps: ``T``.
        gain, offset: map the values to probabilities.
        generator: an ``int`` seed (a fresh generator on ``data``'s device), a backend generator
            (NumPy's ``Generator`` API), or ``None`` (the device's global one, seeded by
            ``pullback.manual_seed``).

    Returns:
        ``(T, *data.shape)`` of 0s and 1s in ``data``'s dtype; not differentiable.
    """
    steps = _steps("encode.rate", num_steps)
    if isinstance(generator, int):
        generator = data.device.backend.xp.random.default_rng(generator)
    with pullback.no_grad():
        p = (data.detach() * gain + offset).clamp(0.0, 1.0)
        draws = pullback.rand((steps,) + tuple(data.shape), dtype=data.dtype, device=data.device,
                              generator=generator)
        return (draws < p).to(data.dtype)


def latency(data: Tensor, num_steps: int, *, tau: float = 1.0, threshold: float = 0.01,
            linear: bool = False, normalize: bool = False, clip: bool = False,
            first_spike_time: int = 0) -> Tensor:
    """One spike per feature at the time an RC circuit charged by it crosses ``threshold``:
    ``tau * log(x / (x - threshold))`` (or ``tau * (1 - x)`` with ``linear``), so larger values
    fire earlier (snnTorch's ``spikegen.latency``, same options and times).

    Args:
        data: values in [0, 1].
        num_steps: ``T``.
        tau: the time constant (steps).
        threshold: in (0, 1); values below it fire at the latest time (or never, with ``clip``).
        linear: the linear code instead of the logarithmic one.
        normalize: stretch the times so that the latest spike is at step ``T - 1``.
        clip: values below ``threshold`` do not fire.
        first_spike_time: the earliest step.

    Raises:
        ValueError: data outside [0, 1], a bad option, or spike times past step ``T - 1``
            (lower ``tau`` or pass ``normalize=True``).
    """
    steps = _steps("encode.latency", num_steps)
    where = "encode.latency"
    with pullback.no_grad():
        x = data.detach()
        low, high = x.min().item(), x.max().item()
        if low < 0 or high > 1:
            raise ValueError(f"{where}: data must lie in [0, 1], got [{low:g}, {high:g}]")
        if not 0 < threshold < 1:
            raise ValueError(f"{where}: threshold must be in (0, 1), got {threshold}")
        if not tau > 0:
            raise ValueError(f"{where}: tau must be positive, got {tau}")
        if not 0 <= first_spike_time <= steps - 1:
            raise ValueError(f"{where}: first_spike_time must be in [0, {steps - 1}], "
                             f"got {first_spike_time}")
        times = _spike_times(x, steps, tau, threshold, linear, normalize, first_spike_time)
        index = times.round()
        latest = index.max().item()
        if latest > steps - 1:
            raise ValueError(f"{where}: spike times reach step {latest:g}, past num_steps - 1 = "
                             f"{steps - 1}; lower tau or pass normalize=True")
        grid = pullback.arange(steps, dtype=data.dtype, device=data.device).reshape(
            (steps,) + (1,) * x.ndim)
        spikes = (grid == index.unsqueeze(0)).to(data.dtype)
        if clip:
            spikes = spikes * (x >= threshold).to(data.dtype)
        return spikes


def _spike_times(x: Tensor, steps: int, tau: float, threshold: float, linear: bool,
                 normalize: bool, first_spike_time: int) -> Tensor:
    if linear:
        if normalize:
            tau = steps - 1 - first_spike_time
        times = (-tau * (x - 1.0)).clamp(max=-tau * (threshold - 1.0)) + first_spike_time
        return times
    x = x.clamp(min=threshold + 1e-7)  # values below the threshold fire at the latest time
    times = tau * (x / (x - threshold)).log() + first_spike_time
    if normalize:
        span = (times - first_spike_time).max()
        if span.item() == 0:
            raise ValueError("encode.latency: normalize needs at least two distinct values")
        times = (times - first_spike_time) * ((steps - first_spike_time - 1) / span) + \
            first_spike_time
    return times
