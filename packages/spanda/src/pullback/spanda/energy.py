"""Energy estimates from published per-operation energies.

The estimate counts arithmetic only: an accumulate (an input spike adds a weight) costs one
add, a multiply-accumulate one multiply and one add, and every neuron update one multiply and
one add (``beta * mem + input``; the threshold compare and the reset are left out). Memory
traffic, which dominates real chips, is not counted: the figures compare operation counts
weighted by their cost, nothing more.

The tables are from M. Horowitz, "Computing's energy problem (and what we can do about it)",
ISSCC 2014, for a 45 nm process at 0.9 V: 32-bit float add 0.9 pJ, multiply 3.7 pJ; 32-bit
integer add 0.1 pJ, multiply 3.1 pJ; 8-bit integer add 0.03 pJ, multiply 0.2 pJ.
"""

from __future__ import annotations

from dataclasses import dataclass

from .activity import Totals

__all__ = ["HOROWITZ_45NM", "EnergyEstimate", "OperationEnergy", "estimate"]

HOROWITZ_2014 = ("M. Horowitz, 'Computing's energy problem (and what we can do about it)', "
                 "ISSCC 2014, 45 nm, 0.9 V")


@dataclass(frozen=True)
class OperationEnergy:
    """Energy of one add and one multiply, in picojoules, and where the figures come from."""

    name: str
    add_pj: float
    mult_pj: float
    source: str = HOROWITZ_2014

    @property
    def mac_pj(self) -> float:
        """A multiply-accumulate: one multiply and one add."""
        return self.add_pj + self.mult_pj


HOROWITZ_45NM = {
    "fp32": OperationEnergy("32-bit float", add_pj=0.9, mult_pj=3.7),
    "int32": OperationEnergy("32-bit int", add_pj=0.1, mult_pj=3.1),
    "int8": OperationEnergy("8-bit int", add_pj=0.03, mult_pj=0.2),
}
"""Horowitz's 45 nm figures by arithmetic (``"fp32"`` is the one the seed's 146x used)."""


@dataclass(frozen=True)
class EnergyEstimate:
    """Arithmetic energy of an SNN's run and of the same-size ANN (picojoules).

    Attributes:
        snn_pj: accumulates + multiply-accumulates + neuron updates of the SNN, all steps.
        snn_synaptic_pj: the same without the neuron updates.
        ann_pj: the ANN's multiply-accumulates (one pass; activations not counted).
        dense_snn_pj: the SNN evaluated densely (every input multiplied, zeros included).
    """

    snn_pj: float
    snn_synaptic_pj: float
    ann_pj: float
    dense_snn_pj: float

    @property
    def ann_over_snn(self) -> float:
        """How many times less energy the SNN needs than the ANN (below 1: more)."""
        return self.ann_pj / self.snn_pj

    @property
    def dense_over_event_driven(self) -> float:
        """Dense multiply-accumulates over event-driven synaptic operations of the same SNN and
        steps (the seed's 146x is this ratio: sparsity alone, no time steps, no neurons)."""
        return self.dense_snn_pj / self.snn_synaptic_pj


def estimate(network: Totals, energy: OperationEnergy = HOROWITZ_45NM["fp32"]) -> EnergyEstimate:
    """The energy estimate of a recorded run (see :func:`pullback.spanda.activity.totals`)."""
    synaptic = network.accumulates * energy.add_pj + network.multiply_accumulates * energy.mac_pj
    return EnergyEstimate(
        snn_pj=synaptic + network.neuron_steps * energy.mac_pj,
        snn_synaptic_pj=synaptic,
        ann_pj=network.ann_macs * energy.mac_pj,
        dense_snn_pj=network.dense_ops * energy.mac_pj,
    )
