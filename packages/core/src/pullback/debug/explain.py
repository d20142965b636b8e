"""Gradient explanations: per-parameter statistics after a backward, and what they mean.

``explain_gradients(model)`` reads each parameter's ``.grad`` and says, in sentences, which
layers get vanishing or exploding gradients, which ReLU units are dead and which tanh/sigmoid
units are saturated (the last two need the forward: pass a :class:`~pullback.debug.watch`),
and what usually fixes each. The thresholds are the module constants below.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Sequence

import numpy as np

from .watch import DEAD_BELOW, ActivationStats, LayerScale, parameter_owners, watch as Watch

# A parameter whose gradient RMS is below this fraction of the largest one in the model learns
# that many times slower: vanishing (healthy nets stay well within a 1000x spread).
VANISHING_RATIO = 1e-3
# One step that changes a weight matrix by more than this fraction of its norm is destructive
# (healthy training moves weights by ~1e-3 of their norm per step). Not applied to vectors:
# biases start at or near zero, so their ratio says little.
EXPLODING_UPDATE_RATIO = 1e-1
# A layer whose output spreads this much wider than its input, to beyond this standard
# deviation, has weights too large for its fan-in.
LARGE_GAIN = 5.0
LARGE_ACTIVATION_STD = 10.0
# Flag activation sites where at least this fraction of units is dead / values saturated.
DEAD_FRACTION = 0.25
SATURATED_FRACTION = 0.25
# Per-layer factor of the gradient's RMS across weight matrices beyond which the depth trend
# is reported (from the output back to the input).
TREND_FACTOR = 2.0

# Findings listed per kind when printing a report (the rest are named on one line).
MAX_LISTED = 6
# Findings are shown in this order: causes before their symptoms.
KINDS = ("nonfinite", "dead", "saturated", "amplifying", "exploding", "vanishing", "no_grad")

_TITLES = {
    "nonfinite": "non-finite gradients",
    "dead": "dead units",
    "saturated": "saturated units",
    "amplifying": "layers that blow up the scale of their input",
    "exploding": "exploding gradients",
    "vanishing": "vanishing gradients",
    "no_grad": "parameters without a gradient",
}

FIXES = {
    "nonfinite": "Run the step under pullback.debug.detect_anomaly() to find the op that "
                 "made the NaN/Inf.",
    "dead": "Usual fixes: a lower learning rate, LeakyReLU/GELU, Kaiming initialization, "
            "biases that do not start negative, normalization before the activation.",
    "saturated": "Usual fixes: normalize the inputs, a smaller initialization scale, "
                 "normalization before the activation, or ReLU/GELU.",
    "amplifying": "Usual fixes: initialize weights with std 1/sqrt(fan_in) (Kaiming/Xavier), "
                  "or add normalization layers.",
    "exploding": "Usual fixes: initialization at the scale of 1/sqrt(fan_in) (Kaiming/Xavier), "
                 "gradient clipping (clip_grad_norm_), a lower learning rate, normalization "
                 "layers.",
    "vanishing": "Usual fixes: non-saturating activations (ReLU, GELU) instead of "
                 "sigmoid/tanh, residual connections, normalization layers (LayerNorm, "
                 "BatchNorm), Xavier/Kaiming initialization.",
    "no_grad": "Check that the parameter is used in the loss and not detached; freeze it "
               "(requires_grad=False) if that is intended.",
}


@dataclass
class ParamStats:
    """Gradient statistics of one parameter tensor."""

    name: str
    layer: str
    shape: tuple[int, ...]
    weight_norm: float
    weight_std: float
    grad_norm: float | None
    grad_rms: float | None
    finite: bool
    lr: float
    update_ratio: float | None  # estimated |update| / |weight| for one step at ``lr``


@dataclass
class Finding:
    """One thing that looks wrong: its kind, where, and a sentence that says it."""

    kind: str      # one of KINDS
    subject: str   # the parameter or activation site
    layer: str     # the module it points at ("" for the model itself)
    message: str

    def __str__(self) -> str:
        return f"[{self.kind}] {self.message}"


@dataclass
class GradientReport:
    """What :func:`explain_gradients` found; ``print(report)`` shows it all."""

    params: list[ParamStats]
    activations: list[ActivationStats] = field(default_factory=list)
    layer_scales: list[LayerScale] = field(default_factory=list)
    findings: list[Finding] = field(default_factory=list)
    notes: dict[str, str] = field(default_factory=dict)  # per kind, a sentence about the whole

    def flagged(self, kind: str) -> list[str]:
        """Subjects (parameter names or activation sites) of the findings of one kind."""
        return [f.subject for f in self.findings if f.kind == kind]

    def layers(self, kind: str) -> list[str]:
        """Modules named by the findings of one kind, each once, in order."""
        return list(dict.fromkeys(f.layer for f in self.findings if f.kind == kind))

    def table(self) -> str:
        """One line per parameter: norms, gradient RMS, update/weight ratio."""
        header = ("parameter", "shape", "|w|", "|grad|", "grad rms", "update/w")
        rows = [(p.name, str(p.shape), _num(p.weight_norm), _num(p.grad_norm), _num(p.grad_rms),
                 _num(p.update_ratio)) for p in self.params]
        return _columns(header, rows)

    def __str__(self) -> str:
        lines = ["Gradients per parameter (update/w: one step at the lr given):", self.table()]
        if self.activations:
            lines.append("Activations seen in the forward pass:")
            for a in self.activations:
                frac = (f"dead units {a.dead_fraction:.0%}" if a.dead_fraction is not None
                        else f"saturated values {a.saturated_fraction:.0%}")
                lines.append(f"  {a.site}: {a.units} units, input mean {a.input_mean:.3g} "
                             f"std {a.input_std:.3g}, {frac}")
        if not self.findings:
            lines.append("Findings: none; the gradients look healthy.")
        for kind in KINDS:
            group = [f for f in self.findings if f.kind == kind]
            if not group:
                continue
            layers = [name or "the model" for name in self.layers(kind)]
            lines.append(f"* {_TITLES[kind]} ({len(group)}; layers: {', '.join(layers)}):")
            lines += [f"    {f.message}" for f in group[:MAX_LISTED]]
            if len(group) > MAX_LISTED:
                rest = ", ".join(f.subject for f in group[MAX_LISTED:])
                lines.append(f"    ... and {len(group) - MAX_LISTED} more: {rest}")
            if kind in self.notes:
                lines.append(f"  {self.notes[kind]}")
            lines.append(f"  {FIXES[kind]}")
        return "\n".join(lines)


def _columns(header: tuple[str, ...], rows: Sequence[tuple[str, ...]]) -> str:
    widths = [max(len(header[k]), *(len(r[k]) for r in rows)) if rows else len(header[k])
              for k in range(len(header))]
    return "\n".join("  ".join(c.ljust(w) if k < 2 else c.rjust(w)
                               for k, (c, w) in enumerate(zip(r, widths)))
                     for r in [header, *rows])


def _num(x: float | None) -> str:
    return "-" if x is None else f"{x:.3g}"


def _lr_and_adaptive(optimizer: Any, param: Any, lr: float) -> tuple[float, bool]:
    """The learning rate of ``param``'s group, and whether its optimizer is Adam-like."""
    if optimizer is None:
        return lr, False
    for group in optimizer.param_groups:
        if any(p is param for p in group["params"]):
            return float(group["lr"]), "betas" in group
    return lr, False


def _param_stats(name: str, layer: str, p: Any, lr: float, optimizer: Any) -> ParamStats:
    to_host = p.device.backend.to_host
    w = to_host(p.array).astype(np.float64)
    w_norm = float(np.sqrt((np.abs(w) ** 2).sum()))
    w_std = float(w.std()) if w.size else 0.0
    lr_p, adaptive = _lr_and_adaptive(optimizer, p, lr)
    shape = tuple(p.shape)
    if p.grad is None:
        return ParamStats(name, layer, shape, w_norm, w_std, None, None, True, lr_p, None)
    g = to_host(p.grad.array).astype(np.float64)
    finite = bool(np.isfinite(g).all())
    g_norm = float(np.sqrt((np.abs(g) ** 2).sum())) if finite else float("nan")
    g_rms = g_norm / math.sqrt(max(g.size, 1))
    # Adam-like optimizers move every element by about lr whatever the gradient's scale;
    # SGD moves the tensor by lr * |grad|.
    update = lr_p * math.sqrt(g.size) if adaptive else lr_p * g_norm
    ratio = update / w_norm if w_norm > 0 and finite else None
    return ParamStats(name, layer, shape, w_norm, w_std, g_norm, g_rms, finite, lr_p, ratio)


def explain_gradients(model: Any, lr: float = 1e-3, optimizer: Any = None,
                      watch: Watch | None = None) -> GradientReport:
    """Explain the gradients of ``model``'s parameters after a backward, in plain sentences.

    Args:
        model: any object with ``named_parameters()`` (and ``named_modules()`` to name layers),
            such as a ``pullback.nn.Module``.
        lr: learning rate used to judge the size of one update (for parameters of
            ``optimizer``, their group's ``lr`` is used instead).
        optimizer: an optimizer with ``param_groups``; Adam-like groups (with ``betas``) are
            judged by Adam's step size (about ``lr`` per element).
        watch: a :class:`~pullback.debug.watch` that ran around the forward and backward, for
            dead, saturated and amplifying layers.

    Returns:
        a :class:`GradientReport`; ``print(report)`` shows the table and the findings.
    """
    owners = parameter_owners(model)
    params = [_param_stats(name, owners.get(name, ""), p, lr, optimizer)
              for name, p in model.named_parameters() if getattr(p, "requires_grad", True)]
    report = GradientReport(params)
    if watch is not None:
        report.activations = list(watch.activations.values())
        report.layer_scales = list(watch.layer_scales.values())
        report.findings += _activation_findings(report.activations)
        report.findings += _scale_findings(report.layer_scales, params)
    report.findings += _gradient_findings(params, report.findings)
    report.findings.sort(key=lambda f: KINDS.index(f.kind))
    trend = _depth_trend(params)
    if trend is not None:
        report.notes[trend[0]] = trend[1]
    return report


def _gradient_findings(params: list[ParamStats], causes: list[Finding]) -> list[Finding]:
    findings = []
    # Matrices are compared with matrices and vectors (biases, norms) with vectors: a weight's
    # gradient scales with the activations it multiplies, a bias's does not.
    largest: dict[bool, ParamStats] = {}
    for p in params:
        if p.grad_rms and p.finite:
            key = len(p.shape) >= 2
            if key not in largest or p.grad_rms > largest[key].grad_rms:  # type: ignore[operator]
                largest[key] = p
    dead = any(f.kind == "dead" for f in causes)
    for p in params:
        top = largest.get(len(p.shape) >= 2)
        if p.grad_norm is None:
            findings.append(Finding("no_grad", p.name, p.layer,
                                    f"{p.name} has no gradient after backward."))
        elif not p.finite:
            findings.append(Finding("nonfinite", p.name, p.layer,
                                    f"{p.name}: its gradient holds NaN or Inf."))
        elif p.grad_norm == 0:
            why = " (the dead units above let no gradient through)" if dead else ""
            findings.append(Finding("vanishing", p.name, p.layer,
                                    f"{p.name}: the gradient is exactly zero: it does not "
                                    f"learn{why}."))
        elif (len(p.shape) >= 2 and p.update_ratio is not None
              and p.update_ratio > EXPLODING_UPDATE_RATIO):
            findings.append(Finding("exploding", p.name, p.layer,
                                    f"{p.name}: |grad| = {p.grad_norm:.3g}; one step at "
                                    f"lr={p.lr:g} would change it by {p.update_ratio:.3g} x "
                                    "its norm."))
        elif top is not None and p.grad_rms is not None and top.grad_rms is not None \
                and p.grad_rms < VANISHING_RATIO * top.grad_rms:
            findings.append(Finding("vanishing", p.name, p.layer,
                                    f"{p.name}: gradient RMS {p.grad_rms:.3g}, "
                                    f"{p.grad_rms / top.grad_rms:.2g} of the largest "
                                    f"({top.name}): it learns {top.grad_rms / p.grad_rms:.3g} x "
                                    "slower."))
    return findings


def _depth_trend(params: list[ParamStats]) -> tuple[str, str] | None:
    """``(kind, sentence)`` on how the gradient RMS changes per layer from the last weight
    matrix back to the first (geometric mean), when the factor is beyond :data:`TREND_FACTOR`
    either way; ``kind`` is "vanishing" or "exploding"."""
    weights = [(p.name, p.grad_rms) for p in params
               if len(p.shape) >= 2 and p.grad_rms and p.finite]
    if len(weights) < 3:
        return None
    (first, first_rms), (last, last_rms) = weights[0], weights[-1]
    factor = (first_rms / last_rms) ** (1.0 / (len(weights) - 1))
    if factor < 1 / TREND_FACTOR:
        return "vanishing", (f"From {last} back to {first} the gradient shrinks {1 / factor:.3g} x per layer "
                f"({len(weights)} weight matrices): the signature of a deep stack of saturating "
                "activations (sigmoid's derivative is at most 0.25) or of weights too small for "
                "their fan-in.")
    if factor > TREND_FACTOR:
        return "exploding", (f"From {last} back to {first} the gradient grows {factor:.3g} x per layer "
                f"({len(weights)} weight matrices): weights too large for their fan-in "
                "compound with depth.")
    return None


def _activation_findings(activations: list[ActivationStats]) -> list[Finding]:
    findings = []
    for a in activations:
        layer = a.fed_by if a.fed_by is not None else a.module
        dead = a.dead_fraction
        if dead is not None and dead >= DEAD_FRACTION:
            findings.append(Finding(
                "dead", a.site, layer,
                f"{a.site}: {dead:.0%} of {a.units} units never activated in {a.calls} "
                f"forward call(s): their input stayed below {DEAD_BELOW[a.op]:g} for every "
                f"example (input mean {a.input_mean:.3g}, std {a.input_std:.3g}), so they pass "
                f"no gradient back to {layer or 'the layer before'}."))
        sat = a.saturated_fraction
        if sat is not None and sat >= SATURATED_FRACTION:
            findings.append(Finding(
                "saturated", a.site, layer,
                f"{a.site}: {sat:.0%} of the values sit in the flat tails of {a.op} "
                f"({a.always_saturated_fraction:.0%} of units for every example; input mean "
                f"{a.input_mean:.3g}, std {a.input_std:.3g}): their derivative is near 0, so "
                "the gradient stops there."))
    return findings


def _scale_findings(scales: list[LayerScale], params: list[ParamStats]) -> list[Finding]:
    findings = []
    gains = [s.gain for s in scales if 0 < s.gain < float("inf")]
    if len(gains) >= 3 and scales[-1].output_std > LARGE_ACTIVATION_STD:
        mean_gain = float(np.exp(np.mean(np.log(gains))))
        if mean_gain > TREND_FACTOR:
            findings.append(Finding(
                "amplifying", "", "",
                f"activations widen {mean_gain:.3g} x per layer on average over {len(gains)} "
                f"layers (output std {scales[0].output_std:.3g} after {scales[0].module}, "
                f"{scales[-1].output_std:.3g} after {scales[-1].module}): weights too large "
                "for their fan-in compound with depth."))
    for s in scales:
        if s.output_std <= LARGE_ACTIVATION_STD or s.gain <= LARGE_GAIN:
            continue
        message = (f"{s.module or 'the model'} widens its input {s.gain:.3g} x (input RMS "
                   f"{s.input_rms:.3g}, output std {s.output_std:.3g}); every layer after it "
                   "sees, and sends back, inflated values.")
        weight = next((p for p in params if p.layer == s.module and len(p.shape) >= 2), None)
        if weight is not None:
            fan_in = int(np.prod(weight.shape[1:]))
            expected = 1 / math.sqrt(fan_in)
            message += (f" {weight.name} has std {weight.weight_std:.3g}, "
                        f"{weight.weight_std / expected:.3g} x the 1/sqrt(fan_in) = "
                        f"{expected:.3g} that keeps the scale.")
        findings.append(Finding("amplifying", s.module, s.module, message))
    return findings
