"""pullback.nn's records in the op database (:mod:`pullback.testing.opdb`).

The plugin attaches them to their ops under the rule key ``"opdb"``, and
:func:`pullback.testing.opdb.extension_records` collects them, so that nn's functions get the
same generated checks as core's (PyTorch parity, gradcheck, the dtype of incoming gradients) and
their error cases appear in ``docs/errors.md``. The samples cover edge shapes (0-d, empty axes,
zero queries, zero keys, a zero embedding size); the error cases the arguments that crashed the
process or gave unclear errors before (issue 14: zero strides, negative dilations...).
"""

from __future__ import annotations

from typing import Any, Callable

import numpy as np

from pullback.errors import ArgumentError, DTypeError, ShapeError
from pullback.testing.opdb import Arg, ErrorCase, OpRecord, Sample

from . import functional as F

FLOATS = ("float32", "float64")


def _arrays(dtype: np.dtype, rng: np.random.Generator) -> Callable[..., Arg]:
    def a(*shape: int, layout: str = "contiguous") -> Arg:
        return Arg(rng.standard_normal(shape).astype(dtype), layout)

    return a


def _f64(rng: np.random.Generator) -> Callable[..., Arg]:
    return _arrays(np.dtype(np.float64), rng)


def _torch_functional(name: str) -> Callable[[Any], Any]:
    return lambda torch: getattr(torch.nn.functional, name)


# -- softmax and log_softmax -------------------------------------------------------------------

def _softmax_samples(dtype: np.dtype, rng: np.random.Generator) -> list[Sample]:
    a = _arrays(dtype, rng)
    return [Sample((a(3, 4), 1)), Sample((a(3, 4), 0)), Sample((a(2, 3, 5), -1)),
            Sample((a(4, 3, layout="transposed"), -1)), Sample((a(3), 0)),
            Sample((a(), 0), label="0-d"), Sample((a(), -1), label="0-d"),
            Sample((a(2, 0), 1), label="empty-axis"), Sample((a(0, 3), 0), label="empty-axis"),
            Sample((a(0, 3), 1), label="empty")]


def _softmax_errors(name: str) -> Callable[[np.random.Generator], list[ErrorCase]]:
    def errors(rng: np.random.Generator) -> list[ErrorCase]:
        a = _f64(rng)
        return [ErrorCase((a(2, 3), 2), ShapeError, rf"{name}: dim 2 is out of range.*\(2, 3\)"),
                ErrorCase((a(), 1), ShapeError, rf"{name}: dim 1 is out of range for shape \(\)")]

    return errors


# -- layer_norm --------------------------------------------------------------------------------

def _layer_norm_samples(dtype: np.dtype, rng: np.random.Generator) -> list[Sample]:
    a = _arrays(dtype, rng)
    return [Sample((a(3, 4), (4,), a(4), a(4))), Sample((a(2, 2, 3), (2, 3))),
            Sample((a(4, 5, layout="transposed"), (5,), a(5), None)),
            Sample((a(0, 4), (4,), a(4), a(4)), label="empty")]


def _layer_norm_errors(rng: np.random.Generator) -> list[ErrorCase]:
    a = _f64(rng)
    return [ErrorCase((a(3, 4), (5,)), ShapeError,
                      r"layer_norm: input of shape \(3, 4\) does not end with the normalized "
                      r"shape \(5,\)")]


# -- convolutions and pooling ------------------------------------------------------------------

def _conv_samples(dtype: np.dtype, rng: np.random.Generator) -> list[Sample]:
    a = _arrays(dtype, rng)
    return [Sample((a(2, 2, 5, 5), a(3, 2, 3, 3), a(3)), {"padding": 1}),
            Sample((a(1, 4, 6, 5), a(2, 2, 3, 3)),
                   {"stride": 2, "padding": 2, "dilation": 2, "groups": 2}),
            Sample((a(1, 2, 5, 4), a(2, 2, 2, 3)), {"padding": "same"}),
            Sample((a(1, 2, 4, 4), a(1, 2, 4, 4)), label="one-window"),
            Sample((a(0, 2, 4, 4), a(3, 2, 3, 3)), label="empty-batch")]


def _window_errors(call: str) -> Callable[[Callable[..., Arg]], list[ErrorCase]]:
    """The geometry mistakes every window op refuses (PyTorch's messages in comments)."""

    def cases(x: Arg, *rest: Any) -> list[ErrorCase]:
        def case(error: type, match: str, label: str, **kwargs: Any) -> ErrorCase:
            return ErrorCase((x, *rest), error, match, kwargs, label)

        return [
            # "non-positive stride is not supported"; a SIGFPE in C for float32 input before
            case(ArgumentError, rf"{call}: stride must be positive, got \(0, 0\)", "", stride=0),
            case(ArgumentError, rf"{call}: stride must be positive, got \(-1, 2\)", "",
                 stride=(-1, 2)),
            # "dilation should be greater than zero"; a SIGSEGV (as_strided) before
            case(ArgumentError, rf"{call}: dilation must be positive, got \(-1000000, 1\)", "",
                 dilation=(-1000000, 1)),
            case(ArgumentError, rf"{call}: dilation must be positive, got \(0, 0\)", "",
                 dilation=0),
            case(ArgumentError, rf"{call}: padding must be non-negative", "", padding=-1),
            case(ArgumentError, rf"{call}: stride must be an int or a pair of ints, got 1\.5",
                 "", stride=1.5),
        ]

    return cases


def _conv_errors(rng: np.random.Generator) -> list[ErrorCase]:
    a = _f64(rng)
    x, w = a(1, 2, 6, 6), a(3, 2, 3, 3)
    w32 = Arg(w.value.astype(np.float32))
    return _window_errors("conv2d")(x, w) + [
        ErrorCase((a(1, 2, 2, 2), w), ShapeError,
                  r"conv2d: input of shape \(1, 2, 2, 2\) is smaller than the kernel \(3, 3\)"),
        ErrorCase((a(1, 1, 2, 6, 6), w), ShapeError, r"conv2d: expected a 4-d input.*\(1, 1, 2, 6, 6\)"),
        ErrorCase((x, w32), DTypeError, r"conv2d: input has dtype float64 but weight has dtype float32"),
        ErrorCase((x, w), ArgumentError, "conv2d: groups must be a positive int, got 0",
                  {"groups": 0}),
        ErrorCase((Arg(np.ones((1, 2, 6, 6), dtype=bool)), Arg(np.ones((3, 2, 3, 3), dtype=bool))),
                  DTypeError, r"conv2d: input must be numeric \(not bool\), got dtype bool"),
    ]


def _conv_transpose_samples(dtype: np.dtype, rng: np.random.Generator) -> list[Sample]:
    a = _arrays(dtype, rng)
    return [Sample((a(1, 3, 3, 3), a(3, 2, 3, 3)), {"stride": 2, "padding": 1, "output_padding": 1}),
            Sample((a(2, 2, 4, 3), a(2, 3, 2, 2), a(3)), {"dilation": 2}),
            Sample((a(1, 4, 3, 3), a(4, 1, 3, 3)), {"groups": 2, "stride": (1, 2)})]


def _conv_transpose_errors(rng: np.random.Generator) -> list[ErrorCase]:
    a = _f64(rng)
    x, w = a(1, 2, 4, 4), a(2, 3, 3, 3)
    x32, w32 = (Arg(v.value.astype(np.float32)) for v in (x, w))
    return _window_errors("conv_transpose2d")(x32, w32) + [
        ErrorCase((x, w), ArgumentError,
                  r"conv_transpose2d: output_padding \(2, 2\) must be non-negative and smaller "
                  r"than stride \(2, 2\)", {"stride": 2, "output_padding": 2}),
        ErrorCase((a(1, 2, 1, 1), w), ShapeError,
                  r"conv_transpose2d: output size \(-3, -3\) is not positive", {"padding": 3}),
    ]


def _pool_samples(dtype: np.dtype, rng: np.random.Generator) -> list[Sample]:
    a = _arrays(dtype, rng)
    return [Sample((a(2, 2, 4, 5), 2)), Sample((a(1, 2, 5, 5), 3, 2, 1)),
            Sample((a(1, 1, 6, 7), (2, 3), (1, 2))), Sample((a(0, 2, 4, 4), 2), label="empty")]


def _pool_errors(call: str) -> Callable[[np.random.Generator], list[ErrorCase]]:
    def errors(rng: np.random.Generator) -> list[ErrorCase]:
        a = _f64(rng)
        x = a(1, 2, 6, 6)
        return _window_errors(call)(x, 2) + [
            ErrorCase((x, 0), ArgumentError, rf"{call}: kernel_size must be positive, got \(0, 0\)"),
            ErrorCase((x, 2, 2, 2), ArgumentError,
                      rf"{call}: padding \(2, 2\) must be at most half the kernel size \(2, 2\)"),
            ErrorCase((a(1, 2, 1, 1), 2), ShapeError,
                      rf"{call}: input of shape \(1, 2, 1, 1\) is smaller than the kernel"),
        ]

    return errors


def _avg_pool_errors(rng: np.random.Generator) -> list[ErrorCase]:
    cases = [c for c in _pool_errors("avg_pool2d")(rng) if "dilation" not in c.kwargs]
    ints = Arg(np.ones((1, 1, 4, 4), dtype=np.int32))
    return cases + [ErrorCase((ints, 2), DTypeError,
                              r"avg_pool2d: input must be floating point, got dtype int32")]


def _torch_max_pool(torch: Any) -> Any:
    return lambda x, k, stride=None, padding=0, dilation=1: torch.nn.functional.max_pool2d(
        x, k, stride, padding, dilation)


def _conv3d_samples(dtype: np.dtype, rng: np.random.Generator) -> list[Sample]:
    a = _arrays(dtype, rng)
    return [Sample((a(1, 2, 3, 4, 3), a(2, 2, 2, 2, 2), a(2)), {"padding": (1, 0, 1)}),
            Sample((a(1, 2, 4, 3, 4), a(2, 1, 2, 1, 2)),
                   {"stride": (2, 1, 2), "dilation": (1, 2, 1), "groups": 2}),
            Sample((a(0, 2, 3, 3, 3), a(2, 2, 2, 2, 2)), label="empty-batch")]


def _conv3d_errors(rng: np.random.Generator) -> list[ErrorCase]:
    a = _f64(rng)
    x, w = a(1, 2, 4, 4, 4), a(2, 2, 3, 3, 3)
    return [
        ErrorCase((x, w), ArgumentError, r"conv3d: stride must be positive, got \(0, 0, 0\)",
                  {"stride": 0}),
        ErrorCase((x, w), ArgumentError, r"conv3d: dilation must be positive", {"dilation": -1}),
        ErrorCase((x, w), ArgumentError, r"conv3d: stride must be an int or 3 ints, got 1\.5",
                  {"stride": 1.5}),
        ErrorCase((a(1, 2, 2, 4, 4), w), ShapeError,
                  r"conv3d: input of shape \(1, 2, 2, 4, 4\) is smaller than the kernel"),
        ErrorCase((a(1, 2, 4, 4), a(2, 2, 3, 3)), ShapeError, r"conv3d: expected a 5-d weight"),
    ]


def _conv_transpose3d_samples(dtype: np.dtype, rng: np.random.Generator) -> list[Sample]:
    a = _arrays(dtype, rng)
    return [Sample((a(1, 2, 2, 3, 2), a(2, 2, 2, 2, 2), a(2)),
                   {"stride": (2, 1, 2), "padding": (0, 1, 0), "output_padding": (1, 0, 0)}),
            Sample((a(1, 2, 2, 2, 2), a(2, 1, 2, 2, 2)), {"groups": 2, "dilation": 2})]


def _conv_transpose3d_errors(rng: np.random.Generator) -> list[ErrorCase]:
    a = _f64(rng)
    x, w = a(1, 2, 3, 3, 3), a(2, 2, 2, 2, 2)
    return [ErrorCase((x, w), ArgumentError,
                      r"conv_transpose3d: output_padding \(2, 2, 2\) must be non-negative",
                      {"stride": 2, "output_padding": 2}),
            ErrorCase((x, w), ArgumentError, r"conv_transpose3d: stride must be positive",
                      {"stride": 0})]


def _pool3d_samples(dtype: np.dtype, rng: np.random.Generator) -> list[Sample]:
    a = _arrays(dtype, rng)
    return [Sample((a(1, 2, 4, 4, 5), 2)), Sample((a(1, 1, 5, 4, 5), 3, 2, 1)),
            Sample((a(1, 1, 5, 4, 5), (3, 2, 2), (2, 1, 2)), {"ceil_mode": True}, label="ceil"),
            Sample((a(0, 2, 4, 4, 4), 2), label="empty")]


def _pool3d_errors(call: str) -> Callable[[np.random.Generator], list[ErrorCase]]:
    def errors(rng: np.random.Generator) -> list[ErrorCase]:
        a = _f64(rng)
        x = a(1, 2, 4, 4, 4)
        return [
            ErrorCase((x, 0), ArgumentError, rf"{call}: kernel_size must be positive"),
            ErrorCase((x, 2, 0), ArgumentError, rf"{call}: stride must be positive"),
            ErrorCase((x, 2, 2, 2), ArgumentError,
                      rf"{call}: padding \(2, 2, 2\) must be at most half the kernel size"),
            ErrorCase((a(1, 2, 1, 4, 4), 2), ShapeError,
                      rf"{call}: input of shape \(1, 2, 1, 4, 4\) is smaller than the kernel"),
            ErrorCase((a(2, 4, 4), 2), ShapeError, rf"{call}: expected a 5-d input"),
        ]

    return errors


def _torch_max_pool3d(torch: Any) -> Any:
    return lambda x, k, stride=None, padding=0, ceil_mode=False: \
        torch.nn.functional.max_pool3d(x, k, stride, padding, ceil_mode=ceil_mode)


def _max_pool3d(x: Any, k: Any, stride: Any = None, padding: Any = 0,
                ceil_mode: bool = False) -> Any:
    return F.max_pool3d(x, k, stride, padding, ceil_mode=ceil_mode)


def _unfold_samples(dtype: np.dtype, rng: np.random.Generator) -> list[Sample]:
    a = _arrays(dtype, rng)
    return [Sample((a(2, 2, 4, 5), 3), {"padding": 1}),
            Sample((a(1, 2, 5, 5), (2, 3)), {"dilation": (2, 1), "stride": (1, 2)}),
            Sample((a(0, 2, 4, 4), 2), label="empty-batch")]


def _fold_samples(dtype: np.dtype, rng: np.random.Generator) -> list[Sample]:
    a = _arrays(dtype, rng)
    return [Sample((a(2, 18, 20), (4, 5), 3), {"padding": 1}),
            Sample((a(1, 12, 6), (5, 5), (2, 3)), {"dilation": (2, 1), "stride": (1, 2)})]


def _fold_errors(rng: np.random.Generator) -> list[ErrorCase]:
    a = _f64(rng)
    return [ErrorCase((a(1, 18, 20), (4, 5), 3), ArgumentError,
                      r"fold: stride must be positive", {"stride": 0, "padding": 1}),
            ErrorCase((a(1, 18, 7), (4, 5), 3), ShapeError,
                      r"fold: an output of size \(4, 5\) has 6 windows", {}),
            ErrorCase((a(1, 17, 6), (4, 5), 3), ShapeError, r"fold: input of shape \(1, 17, 6\)")]


def _unfold_errors(rng: np.random.Generator) -> list[ErrorCase]:
    a = _f64(rng)
    return [ErrorCase((a(1, 2, 4, 4), 3), ArgumentError, r"unfold: dilation must be positive",
                      {"dilation": 0}),
            ErrorCase((a(1, 2, 2, 2), 3), ShapeError,
                      r"unfold: input of shape \(1, 2, 2, 2\) is smaller than the kernel"),
            ErrorCase((a(2, 2, 4, 4, 4), 2), ShapeError, r"unfold: expected a 4-d input")]


# -- attention ---------------------------------------------------------------------------------

def _sdpa_samples(dtype: np.dtype, rng: np.random.Generator) -> list[Sample]:
    a = _arrays(dtype, rng)
    return [Sample((a(2, 3, 4), a(2, 5, 4), a(2, 5, 3))),
            Sample((a(1, 4, 3), a(1, 4, 3), a(1, 4, 2)), {"is_causal": True}),
            Sample((a(2, 0, 4), a(2, 5, 4), a(2, 5, 3)), label="zero-queries"),
            Sample((a(2, 3, 4), a(2, 0, 4), a(2, 0, 3)), label="zero-keys"),
            Sample((a(2, 3, 0), a(2, 5, 0), a(2, 5, 3)), label="zero-embedding")]


def _sdpa_errors(rng: np.random.Generator) -> list[ErrorCase]:
    a = _f64(rng)
    return [ErrorCase((a(2, 3, 4), a(2, 5, 3), a(2, 5, 3)), ShapeError,
                      r"scaled_dot_product_attention: query \(2, 3, 4\), key \(2, 5, 3\)")]


RECORDS = (
    OpRecord(name="nn.functional.softmax", fn=F.softmax, torch=_torch_functional("softmax"),
             ops=("nn.softmax",), dtypes=FLOATS, samples=_softmax_samples,
             errors=_softmax_errors("softmax")),
    OpRecord(name="nn.functional.log_softmax", fn=F.log_softmax,
             torch=_torch_functional("log_softmax"), ops=("nn.log_softmax",), dtypes=FLOATS,
             samples=_softmax_samples, errors=_softmax_errors("log_softmax")),
    OpRecord(name="nn.functional.layer_norm", fn=F.layer_norm,
             torch=_torch_functional("layer_norm"), ops=("nn.layer_norm",), dtypes=FLOATS,
             samples=_layer_norm_samples, errors=_layer_norm_errors),
    OpRecord(name="nn.functional.conv2d", fn=F.conv2d, torch=_torch_functional("conv2d"),
             ops=("nn.conv2d",), dtypes=FLOATS, samples=_conv_samples, errors=_conv_errors),
    OpRecord(name="nn.functional.conv_transpose2d", fn=F.conv_transpose2d,
             torch=_torch_functional("conv_transpose2d"), ops=("nn.conv2d_input_grad",),
             dtypes=FLOATS, samples=_conv_transpose_samples, errors=_conv_transpose_errors),
    OpRecord(name="nn.functional.max_pool2d", fn=F.max_pool2d, torch=_torch_max_pool,
             ops=("nn.max_pool2d",), dtypes=FLOATS, samples=_pool_samples,
             errors=_pool_errors("max_pool2d")),
    OpRecord(name="nn.functional.avg_pool2d", fn=F.avg_pool2d,
             torch=_torch_functional("avg_pool2d"), ops=("nn.avg_pool2d",), dtypes=FLOATS,
             samples=_pool_samples, errors=_avg_pool_errors),
    OpRecord(name="nn.functional.conv3d", fn=F.conv3d, torch=_torch_functional("conv3d"),
             ops=("nn.conv3d",), dtypes=FLOATS, samples=_conv3d_samples, errors=_conv3d_errors),
    OpRecord(name="nn.functional.conv_transpose3d", fn=F.conv_transpose3d,
             torch=_torch_functional("conv_transpose3d"), ops=("nn.conv3d_input_grad",),
             dtypes=FLOATS, samples=_conv_transpose3d_samples,
             errors=_conv_transpose3d_errors),
    OpRecord(name="nn.functional.max_pool3d", fn=_max_pool3d, torch=_torch_max_pool3d,
             ops=("nn.max_pool3d",), dtypes=FLOATS, samples=_pool3d_samples,
             errors=_pool3d_errors("max_pool3d")),
    OpRecord(name="nn.functional.avg_pool3d", fn=F.avg_pool3d,
             torch=_torch_functional("avg_pool3d"), ops=("nn.avg_pool3d",), dtypes=FLOATS,
             samples=_pool3d_samples, errors=_pool3d_errors("avg_pool3d")),
    OpRecord(name="nn.functional.unfold", fn=F.unfold, torch=_torch_functional("unfold"),
             ops=("nn.im2col",), dtypes=FLOATS, samples=_unfold_samples, errors=_unfold_errors),
    OpRecord(name="nn.functional.fold", fn=F.fold, torch=_torch_functional("fold"),
             ops=("nn.col2im",), dtypes=FLOATS, samples=_fold_samples, errors=_fold_errors),
    OpRecord(name="nn.functional.scaled_dot_product_attention",
             fn=F.scaled_dot_product_attention,
             torch=_torch_functional("scaled_dot_product_attention"),
             ops=("nn.scaled_dot_product_attention",), dtypes=FLOATS, samples=_sdpa_samples,
             errors=_sdpa_errors),
)
