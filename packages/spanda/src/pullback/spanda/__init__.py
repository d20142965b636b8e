"""pullback.spanda: spiking neural networks trained by surrogate-gradient BPTT.

Neurons (:class:`LIF`, :class:`Synaptic`, :class:`RLeaky`) exchange binary spikes; the spike is
the op ``spanda.spike`` (Heaviside forward, a :mod:`~pullback.spanda.surrogate` derivative
backward) and the membrane over time the op ``spanda.leaky``, both registered by this package's
plugin.
"""

import pullback.plugins as _plugins

_plugins.ensure_registered("pullback.spanda._plugin", "spanda", "pullback-spanda")

from . import functional, surrogate  # noqa: E402
from .__about__ import __version__  # noqa: E402
from ._neurons import LIF, RLeaky, SpikingNeuron, Synaptic  # noqa: E402

__all__ = ["LIF", "RLeaky", "SpikingNeuron", "Synaptic", "__version__", "functional",
           "surrogate"]
