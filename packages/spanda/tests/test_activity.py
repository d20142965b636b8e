"""Activity counts against counts made by hand: spikes and sparsity from the model's own output,
synaptic operations from the inputs' non-zeros times the fan-out (for convolutions by an explicit
loop over windows), ANN MACs from the layer sizes; the energy estimate from its formula."""

from __future__ import annotations

import numpy as np
import pytest

import pullback
from pullback import spanda
from pullback.spanda.activity import record, totals
from pullback.spanda.energy import HOROWITZ_45NM, estimate

T, B = 6, 3


def test_linear_layers_count_spikes_events_and_macs() -> None:
    model = spanda.SpikingSequential(spanda.SpikingLinear(8, 5, spanda.LIF(0.9)),
                                     spanda.SpikingLinear(5, 4, spanda.LIF(0.9)))
    x = (pullback.rand(T, B, 8) < 0.4).to(pullback.float32) * 3.0  # real-valued: 0 or 3
    with record(model) as layers:
        out = model(x)
    model.reset_state()
    first_spikes = model[0](x).detach()  # the first layer again, outside recording
    l1, l2 = layers
    x_np = x.numpy()
    assert not l1.binary_input and l2.binary_input
    assert l1.input_events == np.count_nonzero(x_np)
    assert l1.synaptic_ops == T * B * 8 * 5  # a current: every multiply counted, as in the ANN
    assert l1.dense_ops == T * B * 8 * 5 and l1.ann_macs == B * 8 * 5
    assert l2.synaptic_ops == int(first_spikes.numpy().sum()) * 4
    assert l2.spikes == int(out.detach().numpy().sum()) and l2.neuron_steps == T * B * 4
    assert l2.sparsity == pytest.approx(1 - out.detach().numpy().mean())
    t = totals(layers)
    assert t.multiply_accumulates == l1.synaptic_ops and t.accumulates == l2.synaptic_ops
    assert t.ann_macs == B * (8 * 5 + 5 * 4)


def test_a_constant_input_is_counted_once() -> None:
    model = spanda.SpikingSequential(spanda.SpikingLinear(8, 5))
    with record(model) as layers:
        model(spanda.encode.direct(pullback.rand(B, 8), T))
    # Once for the event-driven and the dense count alike: their ratio is what sparsity saves.
    assert layers[0].synaptic_ops == layers[0].dense_ops == B * 8 * 5


def _windows_by_hand(mask: np.ndarray, k: int, stride: int, pad: int) -> int:
    """Sum over output positions of the non-zero inputs under their window."""
    n, c, h, w = mask.shape
    padded = np.zeros((n, c, h + 2 * pad, w + 2 * pad))
    padded[:, :, pad:pad + h, pad:pad + w] = mask
    total = 0
    for i in range(0, h + 2 * pad - k + 1, stride):
        for j in range(0, w + 2 * pad - k + 1, stride):
            total += int(padded[:, :, i:i + k, j:j + k].sum())
    return total


@pytest.mark.parametrize("stride, pad", [(1, 0), (1, 1), (2, 1)])
def test_convolution_operations_follow_the_windows(stride: int, pad: int) -> None:
    layer = spanda.SpikingConv2d(2, 3, 3, stride=stride, padding=pad)
    model = spanda.SpikingSequential(layer)
    x = (pullback.rand(T, B, 2, 7, 7) < 0.3).to(pullback.float32)
    with record(model) as layers:
        out = model(x)
    mask = x.numpy().reshape(T * B, 2, 7, 7)
    assert layers[0].synaptic_ops == _windows_by_hand(mask, 3, stride, pad) * 3
    h_out = (7 + 2 * pad - 3) // stride + 1
    assert layers[0].ann_macs == B * 3 * h_out * h_out * 2 * 9
    assert layers[0].dense_ops == T * layers[0].ann_macs  # spikes vary: every step counted
    assert layers[0].neurons == 3 * h_out * h_out
    assert layers[0].spikes == int(out.detach().numpy().sum())


def test_energy_estimate_formula() -> None:
    model = spanda.SpikingSequential(spanda.SpikingLinear(8, 5), spanda.SpikingLinear(5, 4))
    with record(model) as layers:
        model(pullback.rand(T, B, 8))
    t = totals(layers)
    fp32 = HOROWITZ_45NM["fp32"]
    e = estimate(t, fp32)
    assert (fp32.add_pj, fp32.mult_pj) == (0.9, 3.7)
    synaptic = t.accumulates * 0.9 + t.multiply_accumulates * 4.6
    assert e.snn_synaptic_pj == pytest.approx(synaptic)
    assert e.snn_pj == pytest.approx(synaptic + t.neuron_steps * 4.6)
    assert e.ann_pj == pytest.approx(t.ann_macs * 4.6)
    assert e.dense_over_event_driven == pytest.approx(t.dense_ops * 4.6 / synaptic)
