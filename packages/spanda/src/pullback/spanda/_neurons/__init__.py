"""Spiking neuron modules: one neuron model per file over a shared base."""

from .base import SpikingNeuron
from .lif import LIF
from .rleaky import RLeaky
from .synaptic import Synaptic

__all__ = ["LIF", "RLeaky", "SpikingNeuron", "Synaptic"]
