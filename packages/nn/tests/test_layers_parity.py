"""Every layer against PyTorch with identical weights: forward, input gradients and parameter
gradients, in float64 (to 1e-10) and float32 (to its rounding), train and eval modes.

The cases are one table: each builds the layer from ``torch.nn`` and from ``pullback.nn`` with
the same call (the APIs match), copies PyTorch's weights in through ``load_state_dict`` and
compares. A case's test id names the layer, its options and the dtype.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np
import pytest

import pullback
from pullback import nn

from nn_helpers import assert_close, assert_parameter_grads_and_buffers_close, copy_torch_weights

torch = pytest.importorskip("torch", reason="PyTorch is the numerical oracle of these tests")


@dataclass
class Case:
    """One layer configuration: ``make(nn)`` builds it, ``inputs(rng)`` makes NumPy inputs."""

    id: str
    make: Callable[[Any], Any]
    inputs: Callable[[np.random.Generator], list[np.ndarray]]
    modes: tuple[str, ...] = ("train",)
    output: Callable[[Any], Any] = field(default=lambda out: out)


def normal(*shape):
    return lambda rng: [rng.standard_normal(shape)]


def ints(high, *shape):
    return lambda rng: [rng.integers(0, high, shape)]


CASES = [
    Case("Linear", lambda m: m.Linear(5, 3), normal(4, 5)),
    Case("Linear-nobias-3d", lambda m: m.Linear(5, 3, bias=False), normal(2, 4, 5)),
    Case("Linear-1d-input", lambda m: m.Linear(5, 3), normal(5)),
    Case("Bilinear", lambda m: m.Bilinear(3, 4, 2), lambda r: [r.standard_normal((5, 3)),
                                                              r.standard_normal((5, 4))]),
    Case("Bilinear-nobias", lambda m: m.Bilinear(3, 4, 2, bias=False),
         lambda r: [r.standard_normal((5, 3)), r.standard_normal((5, 4))]),
    Case("Conv1d", lambda m: m.Conv1d(3, 4, 3), normal(2, 3, 9)),
    Case("Conv1d-stride2-pad1-dil2", lambda m: m.Conv1d(4, 6, 3, stride=2, padding=1,
                                                        dilation=2, groups=2), normal(2, 4, 11)),
    Case("Conv1d-same", lambda m: m.Conv1d(3, 2, 4, padding="same"), normal(2, 3, 8)),
    Case("Conv2d", lambda m: m.Conv2d(3, 4, 3), normal(2, 3, 7, 6)),
    Case("Conv2d-stride2-pad1", lambda m: m.Conv2d(3, 4, 3, stride=2, padding=1), normal(2, 3, 8, 7)),
    Case("Conv2d-rect-kernel-stride-pad", lambda m: m.Conv2d(2, 3, (3, 2), stride=(2, 1),
                                                              padding=(1, 0)), normal(2, 2, 7, 6)),
    Case("Conv2d-dilation2", lambda m: m.Conv2d(3, 2, 3, dilation=2, padding=2), normal(1, 3, 9, 9)),
    Case("Conv2d-groups2", lambda m: m.Conv2d(4, 6, 3, groups=2, padding=1), normal(2, 4, 5, 5)),
    Case("Conv2d-depthwise", lambda m: m.Conv2d(4, 4, 3, groups=4), normal(2, 4, 6, 6)),
    Case("Conv2d-nobias", lambda m: m.Conv2d(3, 4, 3, bias=False), normal(2, 3, 5, 5)),
    Case("Conv2d-same-odd", lambda m: m.Conv2d(3, 4, 3, padding="same"), normal(2, 3, 6, 5)),
    Case("Conv2d-same-even-kernel", lambda m: m.Conv2d(2, 3, (4, 2), padding="same"),
         normal(2, 2, 7, 6)),
    Case("Conv2d-same-dilation", lambda m: m.Conv2d(2, 3, 3, padding="same", dilation=2),
         normal(1, 2, 8, 8)),
    Case("Conv2d-valid", lambda m: m.Conv2d(2, 3, 3, padding="valid"), normal(1, 2, 5, 5)),
    Case("Conv2d-unbatched", lambda m: m.Conv2d(2, 3, 3), normal(2, 5, 5)),
    Case("ConvTranspose2d", lambda m: m.ConvTranspose2d(3, 4, 3), normal(2, 3, 4, 5)),
    Case("ConvTranspose2d-stride2-pad1-outpad1",
         lambda m: m.ConvTranspose2d(3, 2, 3, stride=2, padding=1, output_padding=1),
         normal(2, 3, 4, 4)),
    Case("ConvTranspose2d-groups-dilation",
         lambda m: m.ConvTranspose2d(4, 6, 3, groups=2, dilation=2), normal(1, 4, 3, 4)),
    Case("ConvTranspose2d-nobias-stride3",
         lambda m: m.ConvTranspose2d(2, 3, 2, stride=3, bias=False), normal(2, 2, 3, 3)),
    Case("MaxPool2d", lambda m: m.MaxPool2d(2), normal(2, 3, 6, 6)),
    Case("MaxPool2d-k3-s2-p1", lambda m: m.MaxPool2d(3, stride=2, padding=1), normal(2, 2, 7, 7)),
    Case("MaxPool2d-overlap-dilation", lambda m: m.MaxPool2d(2, stride=1, dilation=2),
         normal(1, 2, 6, 5)),
    Case("MaxPool2d-odd-size", lambda m: m.MaxPool2d(2), normal(2, 2, 7, 5)),
    Case("AvgPool2d", lambda m: m.AvgPool2d(2), normal(2, 3, 6, 6)),
    Case("AvgPool2d-k3-s2-p1", lambda m: m.AvgPool2d(3, stride=2, padding=1), normal(2, 2, 7, 6)),
    Case("AvgPool2d-exclude-pad", lambda m: m.AvgPool2d(3, stride=2, padding=1,
                                                        count_include_pad=False), normal(2, 2, 7, 6)),
    Case("AdaptiveAvgPool2d-divides", lambda m: m.AdaptiveAvgPool2d(3), normal(2, 3, 6, 6)),
    Case("AdaptiveAvgPool2d-uneven", lambda m: m.AdaptiveAvgPool2d((3, 4)), normal(2, 2, 7, 5)),
    Case("AdaptiveAvgPool2d-1", lambda m: m.AdaptiveAvgPool2d(1), normal(2, 3, 5, 4)),
    Case("BatchNorm1d-2d-input", lambda m: m.BatchNorm1d(4), normal(6, 4), ("train", "eval")),
    Case("BatchNorm1d-3d-input", lambda m: m.BatchNorm1d(3, momentum=0.3), normal(4, 3, 5),
         ("train", "eval")),
    Case("BatchNorm1d-no-affine", lambda m: m.BatchNorm1d(4, affine=False), normal(5, 4),
         ("train", "eval")),
    Case("BatchNorm1d-cumulative", lambda m: m.BatchNorm1d(4, momentum=None), normal(5, 4),
         ("train", "eval")),
    Case("BatchNorm2d", lambda m: m.BatchNorm2d(3), normal(2, 3, 4, 5), ("train", "eval")),
    Case("BatchNorm2d-no-running-stats", lambda m: m.BatchNorm2d(3, track_running_stats=False),
         normal(2, 3, 4, 4), ("train", "eval")),
    Case("LayerNorm", lambda m: m.LayerNorm(6), normal(3, 6)),
    Case("LayerNorm-2d-shape", lambda m: m.LayerNorm((4, 5), eps=1e-3), normal(2, 3, 4, 5)),
    Case("LayerNorm-no-affine", lambda m: m.LayerNorm(6, elementwise_affine=False), normal(3, 6)),
    Case("LayerNorm-no-bias", lambda m: m.LayerNorm(6, bias=False), normal(2, 3, 6)),
    Case("RMSNorm", lambda m: m.RMSNorm(6), normal(3, 6)),
    Case("RMSNorm-eps-2d", lambda m: m.RMSNorm((2, 3), eps=1e-4), normal(4, 2, 3)),
    Case("RMSNorm-no-affine", lambda m: m.RMSNorm(5, elementwise_affine=False), normal(3, 5)),
    Case("GroupNorm", lambda m: m.GroupNorm(2, 4), normal(3, 4, 5)),
    Case("GroupNorm-2d", lambda m: m.GroupNorm(3, 6, eps=1e-3), normal(2, 6, 3, 4)),
    Case("GroupNorm-no-affine", lambda m: m.GroupNorm(1, 4, affine=False), normal(2, 4, 3, 3)),
    Case("Dropout-eval", lambda m: m.Dropout(0.4), normal(4, 5), ("eval",)),
    Case("Dropout-p0", lambda m: m.Dropout(0.0), normal(4, 5)),
    Case("Embedding", lambda m: m.Embedding(7, 4), ints(7, 3, 5)),
    Case("Embedding-padding_idx", lambda m: m.Embedding(7, 4, padding_idx=2),
         lambda r: [np.array([[2, 1, 2], [0, 6, 2]])]),
    Case("Embedding-negative-padding_idx", lambda m: m.Embedding(5, 3, padding_idx=-1),
         lambda r: [np.array([4, 1, 4, 0])]),
    Case("ReLU", lambda m: m.ReLU(), normal(4, 5)),
    Case("LeakyReLU", lambda m: m.LeakyReLU(0.2), normal(4, 5)),
    Case("GELU", lambda m: m.GELU(), normal(4, 5)),
    Case("GELU-tanh", lambda m: m.GELU(approximate="tanh"), normal(4, 5)),
    Case("SiLU", lambda m: m.SiLU(), normal(4, 5)),
    Case("Tanh", lambda m: m.Tanh(), normal(4, 5)),
    Case("Sigmoid", lambda m: m.Sigmoid(), lambda r: [r.standard_normal((4, 5)) * 10]),
    Case("Softplus", lambda m: m.Softplus(), lambda r: [r.standard_normal((4, 5)) * 5]),
    Case("Softplus-beta-threshold", lambda m: m.Softplus(beta=2.0, threshold=3.0),
         lambda r: [r.standard_normal((4, 5)) * 3]),
    Case("ELU", lambda m: m.ELU(), normal(4, 5)),
    Case("ELU-alpha", lambda m: m.ELU(alpha=0.5), lambda r: [r.standard_normal((4, 5)) * 30]),
    Case("Softmax-dim1", lambda m: m.Softmax(dim=1), normal(3, 4, 5)),
    Case("Softmax-dim-1-large", lambda m: m.Softmax(dim=-1), lambda r: [r.standard_normal((3, 5)) * 100]),
    Case("LogSoftmax-dim0", lambda m: m.LogSoftmax(dim=0), normal(3, 4)),
    Case("LogSoftmax-dim-1-large", lambda m: m.LogSoftmax(dim=-1),
         lambda r: [r.standard_normal((3, 5)) * 100]),
    Case("Identity", lambda m: m.Identity(3, key="ignored"), normal(2, 3)),
    Case("Flatten", lambda m: m.Flatten(), normal(2, 3, 4)),
    Case("Flatten-range", lambda m: m.Flatten(0, 1), normal(2, 3, 4)),
    Case("Unflatten", lambda m: m.Unflatten(1, (2, 3)), normal(4, 6)),
    Case("Sequential-mlp", lambda m: m.Sequential(m.Linear(4, 6), m.Tanh(), m.Linear(6, 2)),
         normal(3, 4)),
    Case("Sequential-cnn",
         lambda m: m.Sequential(m.Conv2d(1, 3, 3), m.ReLU(), m.MaxPool2d(2), m.Flatten(),
                                m.Linear(12, 2)), normal(2, 1, 6, 6)),
    Case("MultiheadAttention-self", lambda m: m.MultiheadAttention(8, 2),
         lambda r: [r.standard_normal((5, 3, 8))] * 3, ("eval",)),
    Case("MultiheadAttention-batch_first-cross", lambda m: m.MultiheadAttention(8, 4, batch_first=True),
         lambda r: [r.standard_normal((2, 5, 8)), r.standard_normal((2, 6, 8)),
                    r.standard_normal((2, 6, 8))], ("eval",)),
    Case("MultiheadAttention-kdim-vdim-nobias",
         lambda m: m.MultiheadAttention(6, 3, bias=False, kdim=4, vdim=5),
         lambda r: [r.standard_normal((3, 2, 6)), r.standard_normal((4, 2, 4)),
                    r.standard_normal((4, 2, 5))], ("eval",)),
    Case("MultiheadAttention-unbatched", lambda m: m.MultiheadAttention(4, 2),
         lambda r: [r.standard_normal((3, 4))] * 3, ("eval",)),
]


def _run(module, arrays, framework, dtype):
    """Forward with fresh inputs (floating ones require grad); returns (output, inputs)."""
    inputs = []
    for a in arrays:
        floating = a.dtype.kind == "f"
        if framework == "torch":
            t = torch.tensor(a, dtype=getattr(torch, dtype) if floating else torch.int64)
            t.requires_grad_(floating)
        else:
            t = pullback.tensor(a, dtype=dtype if floating else "int64", requires_grad=floating)
        inputs.append(t)
    if len(arrays) == 3 and arrays[0] is arrays[1] is arrays[2]:
        inputs = [inputs[0]] * 3  # self-attention: one tensor passed three times
    out = module(*inputs)
    return out, inputs


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_layer_matches_torch(case, dtype):
    for mode in case.modes:
        rng = np.random.default_rng(0)
        ours, theirs = case.make(nn), case.make(torch.nn)
        theirs = theirs.to(getattr(torch, dtype))
        ours.to(dtype)
        copy_torch_weights(ours, theirs)
        arrays = case.inputs(rng)
        if mode == "eval":
            # Give batch norm non-trivial running statistics first.
            for _ in range(2):
                _run(ours, arrays, "pullback", dtype)
                _run(theirs, arrays, "torch", dtype)
            ours.eval()
            theirs.eval()
        out, ins = _run(ours, arrays, "pullback", dtype)
        t_out, t_ins = _run(theirs, arrays, "torch", dtype)
        if isinstance(t_out, tuple):  # MultiheadAttention: (output, weights)
            assert_close(out[1], t_out[1], dtype, f"{case.id} attention weights ({mode})")
            out, t_out = out[0], t_out[0]
        assert tuple(out.shape) == tuple(t_out.shape)
        assert_close(out, t_out, dtype, f"{case.id} forward ({mode})")
        weights = rng.standard_normal(tuple(t_out.shape))
        (out * pullback.tensor(weights, dtype=dtype)).sum().backward()
        (t_out * torch.tensor(weights, dtype=getattr(torch, dtype))).sum().backward()
        seen = set()
        for x, tx in zip(ins, t_ins):
            if id(x) in seen or not tx.requires_grad:
                continue
            seen.add(id(x))
            assert_close(x.grad, tx.grad, dtype, f"{case.id} input gradient ({mode})")
        assert_parameter_grads_and_buffers_close(ours, theirs, dtype, f"{case.id}", mode)


def test_every_layer_class_is_in_the_table():
    """A layer added to pullback.nn without a parity case fails here."""
    from nn_cases_layers import CASES as LAYER_CASES
    from nn_cases_windows import CASES as WINDOW_CASES

    tested = {type(c.make(nn)).__name__ for c in CASES + WINDOW_CASES + LAYER_CASES}
    from pullback.nn import modules
    from pullback.nn.modules import transformer

    losses = {n for n in modules.__all__ if n.endswith("Loss")}
    not_compared_here = {"Dropout", "TransformerBlock", "MultiHeadAttention"} | losses
    # compared with every mask and option in test_transformer.py
    not_compared_here |= set(transformer.__all__)
    # compared with their states and packed sequences in test_recurrent.py
    from pullback.nn.modules import rnn

    not_compared_here |= set(rnn.__all__)
    missing = set(modules.__all__) - tested - not_compared_here
    assert not missing, f"layers without a parity case: {sorted(missing)}"
