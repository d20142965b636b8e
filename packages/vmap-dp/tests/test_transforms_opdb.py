"""Generated from the op database, for every differentiable op:

* vjp (pullback.func's tape) equals pullback's own autograd;
* vmap(vjp) over a batch of inputs and cotangents equals a loop of autograd calls (the backward
  ops are batched too);
* jvp equals central finite differences (float64), and satisfies the transpose identity
  ``<J t, c> = <t, J^T c>`` with vjp, at every sample (kinks included).
"""

from __future__ import annotations

import numpy as np
import pytest
from func_helpers import BATCH, caller, case_id, leaves, opdb_cases, sample_values, tensor_args

from pullback.func._pytree import tree_flatten, tree_unflatten

import pullback as pb
from pullback.func import jvp, vjp, vmap

CASES = [c for c in opdb_cases(differentiable_only=True)
         if any(a.differentiable for a in tensor_args(c[1]))]


def _split(args, values):
    """Differentiable tensors (what is differentiated) and the rest (constants)."""
    diff = [pb.tensor(v) for a, v in zip(args, values) if a.differentiable]
    const = [pb.tensor(v) for a, v in zip(args, values) if not a.differentiable]
    return diff, const


def _merged(fn, args):
    """``fn`` as a function of the differentiable tensors, constants passed after them."""

    def call(*tensors):
        n = sum(a.differentiable for a in args)
        diff, const = iter(tensors[:n]), iter(tensors[n:])
        return fn(*[next(diff) if a.differentiable else next(const) for a in args])

    return call, sum(a.differentiable for a in args)


def _like(out, cts):
    """Cotangents in the output's structure."""
    return tree_unflatten(list(cts), tree_flatten(out)[1])


def _prepare(case):
    """The record, its tensor arguments, the call over (differentiable, constant) tensors and
    the sample's own values split that way."""
    record, sample = case
    args = tensor_args(sample)
    call, n = _merged(caller(record, sample), args)
    diff, const = _split(args, [a.value for a in args])
    return record, sample, args, call, n, diff, const


def _float_outputs(out):
    return [o for o in leaves(out) if o.dtype.kind == "f"]


@pytest.mark.parametrize("case", CASES, ids=[case_id(c) for c in CASES])
def test_vjp_and_vmap_vjp_match_autograd(case) -> None:
    record, sample, args, call, n, diff, const = _prepare(case)
    rng = np.random.default_rng(2)
    out, vjp_fn = vjp(lambda *d: call(*d, *const), *diff)
    outs = _float_outputs(out)
    if not outs:
        pytest.skip("no floating output")
    cts = [pb.tensor(rng.standard_normal(o.shape)) for o in leaves(out)]
    got = vjp_fn(_like(out, cts))
    leaves_ = [d.detach().requires_grad_() for d in diff]
    ref_out = call(*leaves_, *const)
    pairs = [(o, c) for o, c in zip(leaves(ref_out), cts) if o.requires_grad]
    ref = pb.autograd.grad([o for o, _ in pairs], leaves_, [c for _, c in pairs],
                           allow_unused=True) if pairs else [None] * n
    for k, (g, r) in enumerate(zip(got, ref)):
        want = np.zeros(diff[k].shape) if r is None else r.numpy()
        np.testing.assert_allclose(g.numpy(), want, rtol=1e-10, atol=1e-12,
                                   err_msg=f"{record.name} input {k}")
    # Per-sample: every input and cotangent batched, compared with a loop.
    per_sample = [sample_values(a, BATCH, rng) for a in args]
    ct_batch = [rng.standard_normal((BATCH,) + tuple(o.shape)) for o in leaves(out)]

    def one(*tensors_and_cts):
        tensors, c = tensors_and_cts[:len(args)], tensors_and_cts[len(args):]
        d = [t for t, a in zip(tensors, args) if a.differentiable]
        k = [t for t, a in zip(tensors, args) if not a.differentiable]
        o, fn = vjp(lambda *dd: call(*dd, *k), *d)
        return fn(_like(o, c))

    inputs = [pb.tensor(np.stack(v)) for v in per_sample] + [pb.tensor(c) for c in ct_batch]
    try:
        batched = vmap(one)(*inputs)
    except pb.func.VmapError:
        return  # shapes that depend on values (checked by the vmap tests)
    for b in range(BATCH):
        diff_b, const_b = _split(args, [v[b] for v in per_sample])
        _, fn_b = vjp(lambda *d, k=const_b: call(*d, *k), *diff_b)
        c_b = [pb.tensor(c[b]) for c in ct_batch]
        want_b = fn_b(_like(out, c_b))
        for k, (g, w) in enumerate(zip(batched, want_b)):
            np.testing.assert_allclose(g.numpy()[b], w.numpy(), rtol=1e-10, atol=1e-12,
                                       err_msg=f"{record.name} sample {b} input {k}")


def _dot(xs, ys) -> float:
    return float(sum(np.vdot(x.numpy(), y.numpy()) for x, y in zip(xs, ys)))


@pytest.mark.parametrize("case", CASES, ids=[case_id(c) for c in CASES])
def test_jvp_matches_finite_differences_and_transposes_vjp(case) -> None:
    record, sample, args, call, n, diff, const = _prepare(case)
    rng = np.random.default_rng(3)
    tangents = tuple(pb.tensor(rng.standard_normal(d.shape)) for d in diff)
    out, t_out = jvp(lambda *d: call(*d, *const), tuple(diff), tangents)
    outs, t_outs = leaves(out), leaves(t_out)
    floats = [k for k, o in enumerate(outs) if o.dtype.kind == "f"]
    if not floats:
        pytest.skip("no floating output")
    # <J t, c> = <t, J^T c>
    cts = [pb.tensor(rng.standard_normal(o.shape)) for o in outs]
    _, vjp_fn = vjp(lambda *d: call(*d, *const), *diff)
    pulled = vjp_fn(_like(out, cts))
    lhs = _dot([t_outs[k] for k in floats], [cts[k] for k in floats])
    rhs = _dot(tangents, pulled)
    eps_out = float(max(np.finfo(outs[k].dtype).eps for k in floats))
    if not (np.isnan(lhs) and np.isnan(rhs)):  # NaN both ways (logsumexp of all -inf)
        assert lhs == pytest.approx(rhs, rel=max(1e-9, 100 * eps_out), abs=1e-10), record.name
    if not sample.gradcheck:
        return  # a kink: finite differences are not the derivative there
    eps = 1e-6
    plus = leaves(call(*[d + eps * t for d, t in zip(diff, tangents)], *const))
    minus = leaves(call(*[d - eps * t for d, t in zip(diff, tangents)], *const))
    for k in floats:
        if outs[k].dtype != np.float64:
            continue  # a cast to a narrower dtype: finite differences drown in its rounding
        fd = (plus[k].numpy() - minus[k].numpy()) / (2 * eps)
        finite = np.isfinite(fd)  # at infinite outputs (logsumexp of nothing) there is no slope
        np.testing.assert_allclose(t_outs[k].numpy()[finite], fd[finite], rtol=1e-5, atol=1e-6,
                                   err_msg=f"{record.name} output {k}")
