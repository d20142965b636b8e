"""The fused ops pullback.nn registers: gradcheck and gradgradcheck in float64 (finite
differences, pullback.testing), generated from one table that must cover every registered op,
plus the registration itself."""

from __future__ import annotations

from typing import Any, Callable

import numpy as np
import pytest

import pullback
import pullback.nn.functional as F
from pullback.dispatch import apply
from pullback.nn._ops import NN_OPS
from pullback.registry import OPS

from nn_helpers import gradchecks

gradcheck, gradgradcheck = gradchecks()


def _t(rng: np.random.Generator, *shape: int) -> pullback.Tensor:
    return pullback.tensor(rng.standard_normal(shape), dtype="float64", requires_grad=True)


def _op(name: str) -> Any:
    return OPS[name]


# (test id, ops it exercises, make(rng) -> (fn, inputs))
Maker = Callable[[np.random.Generator], tuple[Callable[..., Any], tuple[Any, ...]]]
CASES: list[tuple[str, tuple[str, ...], Maker]] = [
    ("linear", ("nn.linear",),
     lambda r: (F.linear, (_t(r, 3, 4), _t(r, 2, 4), _t(r, 2)))),
    ("linear-3d-nobias", ("nn.linear",),
     lambda r: (lambda x, w: F.linear(x, w), (_t(r, 2, 3, 4), _t(r, 2, 4)))),
    ("conv2d-pad1", ("nn.conv2d", "nn.conv2d_input_grad", "nn.conv2d_weight_grad"),
     lambda r: (lambda x, w, b: F.conv2d(x, w, b, padding=1), (_t(r, 2, 2, 4, 4), _t(r, 3, 2, 3, 3),
                                                               _t(r, 3)))),
    ("conv2d-stride2-groups-dilation", ("nn.conv2d",),
     lambda r: (lambda x, w: F.conv2d(x, w, stride=2, padding=2, dilation=2, groups=2),
                (_t(r, 1, 4, 6, 5), _t(r, 2, 2, 3, 3)))),
    ("conv2d-same-even", ("nn.conv2d",),
     lambda r: (lambda x, w: F.conv2d(x, w, padding="same"), (_t(r, 1, 2, 5, 4), _t(r, 2, 2, 2, 4)))),
    ("conv_transpose2d", ("nn.conv2d_input_grad",),
     lambda r: (lambda x, w: F.conv_transpose2d(x, w, stride=2, padding=1, output_padding=1),
                (_t(r, 1, 3, 3, 3), _t(r, 3, 2, 3, 3)))),
    ("conv2d_weight_grad-direct", ("nn.conv2d_weight_grad",),
     lambda r: (lambda x, g: apply(_op("nn.conv2d_weight_grad"), x, g, weight_shape=(2, 3, 2, 2),
                                   stride=(1, 2), padding=((1, 0), (0, 1)), dilation=(1, 1),
                                   groups=1), (_t(r, 2, 3, 4, 5), _t(r, 2, 2, 4, 3)))),
    ("max_pool2d", ("nn.max_pool2d", "nn.max_pool2d_backward", "nn.max_pool2d_select"),
     lambda r: (lambda x: F.max_pool2d(x, 2), (_t(r, 2, 2, 4, 5),))),
    ("max_pool2d-overlap-pad", ("nn.max_pool2d",),
     lambda r: (lambda x: F.max_pool2d(x, 3, 2, 1), (_t(r, 1, 2, 5, 5),))),
    ("avg_pool2d", ("nn.avg_pool2d", "nn.avg_pool2d_grad"),
     lambda r: (lambda x: F.avg_pool2d(x, 3, 2, 1, count_include_pad=False), (_t(r, 1, 2, 5, 6),))),
    # The 3-d ops at the smallest sizes that still overlap windows (gradgradcheck of the forward
    # op differentiates its input- and weight-gradient ops too).
    ("conv3d-pad-stride", ("nn.conv3d", "nn.conv3d_input_grad", "nn.conv3d_weight_grad"),
     lambda r: (lambda x, w, b: F.conv3d(x, w, b, stride=(1, 2, 1), padding=1),
                (_t(r, 1, 2, 3, 3, 2), _t(r, 2, 2, 2, 2, 2), _t(r, 2)))),
    ("conv_transpose3d", ("nn.conv3d_input_grad",),
     lambda r: (lambda x, w: F.conv_transpose3d(x, w, stride=2, output_padding=1),
                (_t(r, 1, 2, 2, 2, 1), _t(r, 2, 1, 2, 2, 2)))),
    ("max_pool3d", ("nn.max_pool3d", "nn.max_pool3d_backward", "nn.max_pool3d_select"),
     lambda r: (lambda x: F.max_pool3d(x, 2, 1), (_t(r, 1, 1, 3, 3, 2),))),
    ("avg_pool3d", ("nn.avg_pool3d", "nn.avg_pool3d_grad"),
     lambda r: (lambda x: F.avg_pool3d(x, 2, 1, 1, count_include_pad=False),
                (_t(r, 1, 1, 2, 3, 2),))),
    ("unfold", ("nn.im2col", "nn.col2im"),
     lambda r: (lambda x: F.unfold(x, (2, 3), padding=1, stride=(1, 2)), (_t(r, 1, 2, 3, 4),))),
    ("fold", ("nn.col2im", "nn.im2col"),
     lambda r: (lambda c: F.fold(c, (3, 4), (2, 2), dilation=(1, 2)), (_t(r, 1, 8, 4),))),
    ("softmax", ("nn.softmax",), lambda r: (lambda x: F.softmax(x, 1), (_t(r, 3, 4),))),
    ("log_softmax", ("nn.log_softmax",), lambda r: (lambda x: F.log_softmax(x, 0), (_t(r, 3, 4),))),
    ("layer_norm", ("nn.layer_norm",),
     lambda r: (lambda x, w, b: F.layer_norm(x, (4,), w, b), (_t(r, 3, 4), _t(r, 4), _t(r, 4)))),
    ("layer_norm-2d-no-affine", ("nn.layer_norm",),
     lambda r: (lambda x: F.layer_norm(x, (2, 3)), (_t(r, 2, 2, 3),))),
    ("sdpa", ("nn.scaled_dot_product_attention",),
     lambda r: (F.scaled_dot_product_attention, (_t(r, 2, 3, 4), _t(r, 2, 5, 4), _t(r, 2, 5, 3)))),
    ("sdpa-causal", ("nn.scaled_dot_product_attention",),
     lambda r: (lambda q, k, v: F.scaled_dot_product_attention(q, k, v, is_causal=True),
                (_t(r, 1, 4, 3), _t(r, 1, 4, 3), _t(r, 1, 4, 2)))),
    ("sdpa-float-mask-is-differentiable", ("nn.scaled_dot_product_attention",),
     lambda r: (lambda q, k, v, m: F.scaled_dot_product_attention(q, k, v, attn_mask=m),
                (_t(r, 3, 4), _t(r, 5, 4), _t(r, 5, 2), _t(r, 3, 5)))),
    ("recurrent_layer-lstm-reversed-lengths", ("nn.recurrent_layer",),
     lambda r: (lambda x, h, c, w_ih, w_hh, b: apply(
         _op("nn.recurrent_layer"), x, h, c, w_ih, w_hh, b, None, None, mode="LSTM",
         reverse=True, lengths=(3, 2)),
         (_t(r, 3, 2, 2), _t(r, 2, 2), _t(r, 2, 2), _t(r, 8, 2), _t(r, 8, 2), _t(r, 8)))),
    ("cross_entropy", ("nn.cross_entropy",),
     lambda r: (lambda x: F.cross_entropy(x, pullback.tensor([0, 3, -100, 1]), reduction="none"),
                (_t(r, 4, 4),))),
]


@pytest.mark.parametrize("name,ops,make", CASES, ids=[c[0] for c in CASES])
def test_gradcheck(name, ops, make):
    fn, inputs = make(np.random.default_rng(0))
    assert gradcheck(fn, inputs)


@pytest.mark.parametrize("name,ops,make", CASES, ids=[c[0] for c in CASES])
def test_gradgradcheck(name, ops, make):
    fn, inputs = make(np.random.default_rng(1))
    assert gradgradcheck(fn, inputs)


def test_every_registered_op_is_checked():
    covered = {op for _, ops, _ in CASES for op in ops}
    registered = {op.name for op in NN_OPS if op.differentiable}
    assert registered - covered == set(), f"fused ops without gradcheck: {registered - covered}"


def test_ops_are_in_the_registry_under_nn_names():
    from pullback.registry import OP_OWNERS

    for op in NN_OPS:
        assert op.name.startswith("nn.")
        assert OPS[op.name] is op
        assert OP_OWNERS[op.name] == "pullback-nn"


def test_registered_even_with_autoloading_disabled(tmp_path):
    """pullback.nn registers its own plugin on import when entry points are switched off."""
    import os
    import subprocess
    import sys

    code = ("import pullback, pullback.nn, pullback.plugins as p; "
            "print('nn.conv2d' in pullback.registry.OPS, 'nn' in p.records())")
    env = {**os.environ, "PULLBACK_DISABLE_PLUGINS": "all"}
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                         check=True)
    assert out.stdout.split() == ["True", "True"]


def test_first_order_and_create_graph_agree_for_saved_paths():
    """Ops with a saved first-order fast path give the same gradient as their pure-F rule."""
    rng = np.random.default_rng(3)
    cases = [
        (lambda x, w: F.conv2d(x, w, padding=1), (_t(rng, 2, 2, 5, 5), _t(rng, 3, 2, 3, 3))),
        (lambda x: F.max_pool2d(x, 2), (_t(rng, 2, 2, 4, 4),)),
        (lambda x, w, b: F.layer_norm(x, (4,), w, b), (_t(rng, 3, 4), _t(rng, 4), _t(rng, 4))),
        (F.scaled_dot_product_attention, (_t(rng, 2, 3, 4), _t(rng, 2, 5, 4), _t(rng, 2, 5, 3))),
        (lambda x: F.cross_entropy(x, pullback.tensor([1, 0, 2])), (_t(rng, 3, 4),)),
    ]
    for fn, inputs in cases:
        fast = pullback.autograd.grad(fn(*inputs).sum(), inputs)
        exact = pullback.autograd.grad(fn(*inputs).sum(), inputs, create_graph=True)
        for a, b in zip(fast, exact):
            np.testing.assert_allclose(np.asarray(a), np.asarray(b.detach()), rtol=1e-12,
                                       atol=1e-12)


@pytest.mark.parametrize("dtype", ["bfloat16", "float16"])
def test_low_precision_outputs_and_gradients_keep_their_dtype(dtype):
    """ml_dtypes' bfloat16 matmul returns float32; the fused ops must hand back the input dtype."""
    rng = np.random.default_rng(4)

    def t(*shape):
        return pullback.tensor(rng.standard_normal(shape)).to(dtype).requires_grad_()

    x, w, b = t(2, 3, 4), t(5, 4), t(5)
    img, kernel = t(1, 2, 5, 5), t(3, 2, 3, 3)
    outs = [F.linear(x, w, b), F.conv2d(img, kernel, padding=1), F.conv_transpose2d(img, t(2, 3, 3, 3)),
            F.scaled_dot_product_attention(x, x, x), F.layer_norm(x, (4,)), F.softmax(x, -1),
            F.max_pool2d(img, 2), F.avg_pool2d(img, 2)]
    for out in outs:
        assert out.dtype == pullback.dtypes.to_dtype(dtype)
        out.float().sum().backward()
    for leaf in (x, w, b, img, kernel):
        assert leaf.grad.dtype == pullback.dtypes.to_dtype(dtype)
