"""pullback.spanda: spiking neural networks trained by surrogate-gradient BPTT.

Neurons (:class:`LIF`, :class:`Synaptic`, :class:`RLeaky`) exchange binary spikes; the spike is
the op ``spanda.spike`` (Heaviside forward, a :mod:`~pullback.spanda.surrogate` derivative
backward) and the membrane over time the op ``spanda.leaky``, both registered by this package's
plugin.
"""

import pullback.plugins as _plugins

_plugins.ensure_registered("pullback.spanda._plugin", "spanda", "pullback-spanda")

from . import activity, decode, encode, energy, functional, loss, surrogate  # noqa: E402
from .__about__ import __version__  # noqa: E402
from ._neurons import LIF, RLeaky, SpikingNeuron, Synaptic  # noqa: E402
from .decode import FirstSpikeDecoder, RateDecoder  # noqa: E402
from .layers import (  # noqa: E402
    SpikingConv2d, SpikingLinear, SpikingSequential, detach_states, reset_states,
)

__all__ = [
    "FirstSpikeDecoder", "LIF", "RLeaky", "RateDecoder", "SpikingConv2d", "SpikingLinear",
    "SpikingNeuron", "SpikingSequential", "Synaptic", "__version__", "activity", "decode",
    "detach_states", "encode", "energy", "functional", "loss", "reset_states", "surrogate",
]
